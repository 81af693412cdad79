//! Locating `shared/fixtures`: `$RFS_FIXTURES`, else `<workspace root>/../shared/fixtures`.
//! Outside CI a test may skip when fixtures are missing; under `CI=true` it must fail.

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

/// The fixtures directory, or `None` after printing why the caller should skip.
/// Panics under CI, where a missing fixture is a failure.
pub fn require_fixtures(test: &str) -> Option<PathBuf> {
    match fixtures_dir() {
        Some(p) => Some(p),
        None if in_ci() => panic!(
            "{test}: fixtures not found (set RFS_FIXTURES or place shared/fixtures beside the repository); CI=true makes this a failure"
        ),
        None => {
            eprintln!("{test}: SKIPPED — fixtures not found (set RFS_FIXTURES)");
            None
        }
    }
}
