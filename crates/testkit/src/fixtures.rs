//! Locating `shared/fixtures`: `$RFS_FIXTURES`, else `<workspace root>/../shared/fixtures`.
//! Outside CI a test may skip when fixtures are missing; under `CI=true` it must fail.
//! Every skip goes through [`skip`], so it is counted as skipped, not passed.

use std::path::PathBuf;

/// The fixtures directory, if it exists.
pub fn fixtures_dir() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RFS_FIXTURES") {
        let p = PathBuf::from(p);
        return p.is_dir().then_some(p);
    }
    let root = workspace_root();
    let p = root.join("..").join("shared").join("fixtures");
    p.is_dir().then_some(p)
}

/// The workspace root (the directory holding the top-level `Cargo.toml`).
pub fn workspace_root() -> PathBuf {
    // crates/testkit → ../..
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("..")
}

/// Whether this run is CI (`CI=true`), where missing fixtures are failures.
pub fn in_ci() -> bool {
    matches!(std::env::var("CI").as_deref(), Ok("true") | Ok("1"))
}

/// The fixtures directory, or `None` after [`skip`] (the caller returns at once).
/// Panics under CI, where a missing fixture is a failure.
pub fn require_fixtures(test: &str) -> Option<PathBuf> {
    match fixtures_dir() {
        Some(p) => Some(p),
        None => {
            skip(
                test,
                "fixtures not found (set RFS_FIXTURES or place shared/fixtures beside the repository)",
            );
            None
        }
    }
}

/// The variable naming the file where [`skip`] records skipped tests (`scripts/test` sets
/// it and counts the lines).
pub const SKIP_LOG_VAR: &str = "TESTKIT_SKIP_LOG";

/// The one way a test skips: outside CI prints the marker line `SKIPPED: <test>: <reason>`
/// on stderr and appends it to the file named by [`SKIP_LOG_VAR`], so the run's summary
/// counts the test as skipped rather than passed; the caller then returns. Under
/// `CI=true` it panics instead: there a missing fixture or server is a failure.
pub fn skip(test: &str, reason: &str) {
    let line = format!("SKIPPED: {test}: {reason}");
    if in_ci() {
        panic!("{line}; CI=true makes this a failure");
    }
    eprintln!("{line}");
    if let Some(path) = std::env::var_os(SKIP_LOG_VAR) {
        use std::io::Write;
        // One short append per line: concurrent tests do not interleave within it.
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
        if let Err(e) = appended {
            eprintln!(
                "cannot record the skip in {}: {e}",
                PathBuf::from(path).display()
            );
        }
    }
}

/// The mapping of the [`vector_shards`] as an Elasticsearch 8 cluster would hold it
/// (`dense_vector` float and byte, `flattened`, `match_only_text`, `unsigned_long`,
/// `version`): `crates/snapshot/tests/data/es8-vectors/mapping.json`.
pub fn vector_mapping() -> serde_json::Value {
    let path = workspace_root().join("crates/snapshot/tests/data/es8-vectors/mapping.json");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The Elasticsearch-8-like shards written by real Lucene 9 that the repository tests
/// wrap in every layout (committed with the snapshot crate's tests:
/// `crates/snapshot/tests/data/es8-vectors/shard-N`, and beside each
/// `shard-N.expected.jsonl`, the live documents `{"_id", "_source"}` in id order).
pub fn vector_shards() -> Vec<(PathBuf, PathBuf)> {
    let dir = workspace_root()
        .join("crates")
        .join("snapshot")
        .join("tests")
        .join("data")
        .join("es8-vectors");
    (0..2)
        .map(|n| {
            (
                dir.join(format!("shard-{n}")),
                dir.join(format!("shard-{n}.expected.jsonl")),
            )
        })
        .collect()
}
