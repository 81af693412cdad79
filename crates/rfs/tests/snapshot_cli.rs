//! `rfs inspect` and `rfs export` against every fixture repository (local and through a
//! real S3 server), compared with `<repo>.expected.json`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

fn rfs() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rfs"));
    c.env_remove("RFS_REPO")
        .env_remove("RFS_SNAPSHOT")
        .env("RFS_LOG", "warn");
    c
}

fn fixtures(test: &str) -> Vec<(String, PathBuf, Value)> {
    let Some(root) = testkit::fixtures::require_fixtures(test) else {
        return Vec::new();
    };
    let dir = root.join("snapshots");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if let Some(name) = p
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .strip_suffix(".expected.json")
        {
            let v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
            out.push((name.to_string(), dir.join(name), v));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// jsonl lines → index → documents as in the expected file (`_source` parsed).
fn group_lines(text: &str) -> BTreeMap<String, Vec<Value>> {
    let mut by_index: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let obj = v.as_object().unwrap();
        let mut doc = json!({
            "_id": obj["_id"],
            "_routing": obj.get("_routing").cloned().unwrap_or(Value::Null),
            "_source": obj["_source"],
        });
        if let Some(t) = obj.get("_type") {
            doc["_type"] = t.clone();
        }
        by_index
            .entry(obj["_index"].as_str().unwrap().to_string())
            .or_default()
            .push(doc);
    }
    for docs in by_index.values_mut() {
        sort(docs);
    }
    by_index
}

fn sort(docs: &mut [Value]) {
    docs.sort_by_key(|d| {
        (
            d["_id"].as_str().unwrap().to_string(),
            d["_type"].as_str().unwrap_or("").to_string(),
        )
    });
}

fn expected_docs(index: &Value) -> Vec<Value> {
    let mut docs: Vec<Value> = index["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let mut d = d.clone();
            d["_source"] = serde_json::from_str(d["_source"].as_str().unwrap()).unwrap();
            d
        })
        .collect();
    sort(&mut docs);
    docs
}

fn check_export(name: &str, snap: &str, expected: &Value, got: &BTreeMap<String, Vec<Value>>) {
    for (index, iexp) in expected.as_object().unwrap() {
        let want = expected_docs(iexp);
        let have = got.get(index).cloned().unwrap_or_default();
        assert_eq!(have, want, "{name}/{snap}/{index}");
    }
    for index in got.keys() {
        assert!(
            expected.get(index).is_some(),
            "{name}/{snap}: unexpected index {index}"
        );
    }
}

#[test]
fn export_jsonl_yields_the_expected_documents() {
    for (name, dir, expected) in fixtures("export_jsonl_local") {
        for (snap, sexp) in expected["snapshots"].as_object().unwrap() {
            let out = run_ok(rfs().args(["export", dir.to_str().unwrap(), "--snapshot", snap]));
            check_export(&name, snap, &sexp["indices"], &group_lines(&out));
        }
    }
}

#[test]
fn export_bulk_pairs_actions_with_sources() {
    for (name, dir, expected) in fixtures("export_bulk_local") {
        for (snap, sexp) in expected["snapshots"].as_object().unwrap() {
            let out = tempfile::tempdir().unwrap();
            run_ok(rfs().args([
                "export",
                dir.to_str().unwrap(),
                "--snapshot",
                snap,
                "--format",
                "bulk",
                "--out",
                out.path().to_str().unwrap(),
            ]));
            for (index, iexp) in sexp["indices"].as_object().unwrap() {
                let text =
                    std::fs::read_to_string(out.path().join(format!("{index}.bulk"))).unwrap();
                let lines: Vec<&str> = text.lines().collect();
                assert_eq!(lines.len() % 2, 0);
                let mut ids = Vec::new();
                for pair in lines.chunks(2) {
                    let action: Value = serde_json::from_str(pair[0]).unwrap();
                    assert_eq!(action["index"]["_index"], json!(index));
                    let _: Value = serde_json::from_str(pair[1]).unwrap();
                    ids.push(action["index"]["_id"].as_str().unwrap().to_string());
                }
                ids.sort();
                let mut want: Vec<String> = iexp["documents"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d["_id"].as_str().unwrap().to_string())
                    .collect();
                want.sort();
                assert_eq!(ids, want, "{name}/{index}");
            }
        }
    }
}

#[test]
fn inspect_json_reports_indices_counts_types_aliases_and_templates() {
    for (name, dir, expected) in fixtures("inspect_json_local") {
        let out = run_ok(rfs().args(["inspect", dir.to_str().unwrap(), "--json"]));
        let report: Value = serde_json::from_str(&out).unwrap();
        let snaps = report["snapshots"].as_array().unwrap();
        assert_eq!(
            snaps.len(),
            expected["snapshots"].as_object().unwrap().len(),
            "{name}"
        );
        for s in snaps {
            let sname = s["name"].as_str().unwrap();
            let sexp = &expected["snapshots"][sname];
            assert!(sexp.is_object(), "{name}: unexpected snapshot {sname}");
            assert_eq!(s["state"], "SUCCESS");
            assert_eq!(s["version"], expected["elasticsearch_version"], "{name}");
            for kind in ["legacy", "component", "index"] {
                assert_eq!(
                    s["templates"][kind], sexp["templates"][kind],
                    "{name} {kind}"
                );
            }
            let indices = s["indices"].as_array().unwrap();
            assert_eq!(indices.len(), sexp["indices"].as_object().unwrap().len());
            for i in indices {
                let iname = i["name"].as_str().unwrap();
                let iexp = &sexp["indices"][iname];
                assert_eq!(
                    i["number_of_shards"], iexp["number_of_shards"],
                    "{name}/{iname}"
                );
                assert_eq!(i["live_docs"], iexp["live_docs"], "{name}/{iname}");
                assert_eq!(i["mapping_types"], iexp["mapping_types"], "{name}/{iname}");
                assert_eq!(i["aliases"], iexp["aliases"], "{name}/{iname}");
                assert!(i.get("error").is_none(), "{i}");
            }
        }
        // The text form runs too.
        let text = run_ok(rfs().args(["inspect", dir.to_str().unwrap()]));
        assert!(text.contains("snapshot "), "{text}");
    }
}

fn list_all(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(dir).unwrap().display().to_string());
            if p.is_dir() {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn export_from_s3_matches_and_writes_no_shard_file_to_local_disk() {
    let fx = fixtures("export_s3");
    if fx.is_empty() {
        return;
    }
    let Some(s3) = testkit::services::S3rver::start("export_s3") else {
        return;
    };
    s3.create_bucket("snapshots");
    for (name, dir, expected) in fx {
        upload(&s3, "snapshots", &format!("repos/{name}"), &dir);
        let tmp = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let uri = format!("s3://snapshots/repos/{name}");
        let mut cmd = rfs();
        cmd.current_dir(cwd.path())
            .env("TMPDIR", tmp.path())
            .env("AWS_ACCESS_KEY_ID", s3.access_key())
            .env("AWS_SECRET_ACCESS_KEY", s3.secret_key())
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_PROFILE");
        let report: Value = serde_json::from_str(&run_ok(
            rfs()
                .args(["inspect", &uri, "--json", "--s3-endpoint", &s3.endpoint()])
                .args(["--s3-region", s3.region()])
                .env("AWS_ACCESS_KEY_ID", s3.access_key())
                .env("AWS_SECRET_ACCESS_KEY", s3.secret_key()),
        ))
        .unwrap();
        assert_eq!(
            report["snapshots"].as_array().unwrap().len(),
            expected["snapshots"].as_object().unwrap().len()
        );
        for (snap, sexp) in expected["snapshots"].as_object().unwrap() {
            let snap_out = out.path().join(snap);
            run_ok(
                cmd.args([
                    "export",
                    &uri,
                    "--snapshot",
                    snap,
                    "--s3-endpoint",
                    &s3.endpoint(),
                ])
                .args(["--out", snap_out.to_str().unwrap()]),
            );
            cmd = rfs();
            cmd.current_dir(cwd.path())
                .env("TMPDIR", tmp.path())
                .env("AWS_ACCESS_KEY_ID", s3.access_key())
                .env("AWS_SECRET_ACCESS_KEY", s3.secret_key());
            let mut text = String::new();
            let mut produced = list_all(&snap_out);
            for f in &produced {
                assert!(
                    f.ends_with(".jsonl"),
                    "{name}: unexpected file {f} in the output dir"
                );
                text.push_str(&std::fs::read_to_string(snap_out.join(f)).unwrap());
            }
            produced.sort();
            let mut want: Vec<String> = sexp["indices"]
                .as_object()
                .unwrap()
                .keys()
                .map(|k| format!("{k}.jsonl"))
                .collect();
            want.sort();
            assert_eq!(
                produced, want,
                "{name}/{snap}: one file per index, nothing else"
            );
            check_export(&name, snap, &sexp["indices"], &group_lines(&text));
        }
        assert_eq!(
            list_all(tmp.path()),
            Vec::<String>::new(),
            "{name}: files left in TMPDIR"
        );
        assert_eq!(
            list_all(cwd.path()),
            Vec::<String>::new(),
            "{name}: files left in the working dir"
        );
    }
}

fn upload(s3: &testkit::services::S3rver, bucket: &str, prefix: &str, dir: &Path) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                s3.put_object(
                    bucket,
                    &format!("{prefix}/{rel}"),
                    &std::fs::read(&p).unwrap(),
                );
            }
        }
    }
}

#[test]
fn export_errors_are_clear() {
    for (_, dir, _) in fixtures("export_errors").into_iter().take(1) {
        let out = rfs()
            .args([
                "export",
                dir.to_str().unwrap(),
                "--snapshot",
                "no-such-snapshot",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("no-such-snapshot"), "{err}");
        let out = rfs()
            .args(["inspect", "/definitely/not/a/repository"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
    }
}
