//! `rfs lucene dump` and `rfs lucene info` run as a user would, on a real Lucene index.

use std::process::Command;

fn fixture(name: &str, test: &str) -> Option<std::path::PathBuf> {
    let root = testkit::fixtures::require_fixtures(test)?;
    Some(root.join("lucene").join("generated").join(name))
}

/// A JSON line with float/double `value` strings removed (the goldens' JDK may print some
/// values differently; `bits` is what is compared).
fn without_float_text(line: &str) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
    for f in v["fields"].as_array_mut().unwrap() {
        if matches!(f["type"].as_str(), Some("float" | "double")) {
            f.as_object_mut().unwrap().remove("value");
        }
    }
    v
}

#[test]
fn dump_prints_the_golden_documents() {
    for (name, soft) in [
        ("l10-best_speed-cfs-types", None),
        ("l9-best_speed-cfs-soft", Some("__soft_deletes")),
    ] {
        let Some(dir) = fixture(name, "dump_prints_the_golden_documents") else {
            return;
        };
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rfs"));
        cmd.args(["lucene", "dump"]).arg(&dir);
        if let Some(f) = soft {
            cmd.args(["--soft-deletes-field", f]);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = String::from_utf8(out.stdout).unwrap();
        let golden =
            std::fs::read_to_string(dir.with_file_name(format!("{name}.golden.jsonl"))).unwrap();
        let want: Vec<&str> = golden.lines().skip(1).collect();
        let got: Vec<&str> = got.lines().collect();
        assert_eq!(got.len(), want.len(), "{name}: number of documents");
        for (g, w) in got.iter().zip(&want) {
            // Segments of these indexes are in commit order = generation order.
            assert_eq!(without_float_text(g), without_float_text(w), "{name}");
            if name.starts_with("l10") {
                // Written by JDK 25, whose shortest-digit printing is the same as ours.
                assert_eq!(g, w, "{name}: exact line");
            }
        }
    }
}

#[test]
fn info_reports_segments_and_live_counts() {
    let Some(dir) = fixture(
        "l8-best_compression-nocfs-soft",
        "info_reports_segments_and_live_counts",
    ) else {
        return;
    };
    let out = Command::new(env!("CARGO_BIN_EXE_rfs"))
        .args([
            "lucene",
            "info",
            "--json",
            "--soft-deletes-field",
            "__soft_deletes",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let golden =
        std::fs::read_to_string(dir.with_file_name("l8-best_compression-nocfs-soft.golden.jsonl"))
            .unwrap();
    let header: serde_json::Value = serde_json::from_str(golden.lines().next().unwrap()).unwrap();
    assert_eq!(v["maxDoc"], header["maxDoc"]);
    assert_eq!(v["liveDocs"], header["numDocs"]);
    let segs = v["segments"].as_array().unwrap();
    assert_eq!(segs.len(), header["segments"].as_array().unwrap().len());
    for (s, h) in segs.iter().zip(header["segments"].as_array().unwrap()) {
        assert_eq!(s["name"], h["name"]);
        assert_eq!(s["liveDocs"], h["numDocs"]);
        assert_eq!(s["version"], h["version"]);
        assert_eq!(s["storedFieldsMode"], "BEST_COMPRESSION");
    }

    let table = Command::new(env!("CARGO_BIN_EXE_rfs"))
        .args(["lucene", "info"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(table.status.success());
    let text = String::from_utf8(table.stdout).unwrap();
    assert!(
        text.contains("Lucene50StoredFieldsHighData")
            || text.contains("Lucene87StoredFieldsHighData"),
        "{text}"
    );
}

#[test]
fn dump_of_a_missing_directory_fails_with_its_name() {
    let out = Command::new(env!("CARGO_BIN_EXE_rfs"))
        .args(["lucene", "dump", "/nonexistent/lucene-index"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    // One line: where, then the cause, each said once (the directory error leaves the I/O
    // error to its source instead of printing it too).
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "error: /nonexistent/lucene-index: No such file or directory (os error 2)"
    );
}

#[test]
fn dump_doc_values_prints_what_lucene_reads() {
    let data =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../lucene/tests/data/doc_values");
    let golden = std::fs::read_to_string(data.join("best_compression.golden.jsonl")).unwrap();
    let want: std::collections::BTreeMap<(String, u64), serde_json::Value> = golden
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v.get("doc").is_some())
        .map(|v| {
            (
                (
                    v["seg"].as_str().unwrap().to_string(),
                    v["doc"].as_u64().unwrap(),
                ),
                v["values"].clone(),
            )
        })
        .collect();
    for index in ["l8-best_compression", "l10-best_compression"] {
        let out = Command::new(env!("CARGO_BIN_EXE_rfs"))
            .args(["lucene", "dump", "--doc-values"])
            .arg(data.join(index))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let mut n = 0;
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let key = (
                v["seg"].as_str().unwrap().to_string(),
                v["doc"].as_u64().unwrap(),
            );
            assert_eq!(&v["values"], &want[&key], "{index} {key:?}");
            n += 1;
        }
        assert_eq!(n, want.len(), "{index}: documents");
    }
}
