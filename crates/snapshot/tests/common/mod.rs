//! Shared checks: a repository read by this crate against a fixture's `<repo>.expected.json`.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use snapshot::{Repository, ShardReader, TemplateKind};

/// Fixture repositories: (name, directory, expected JSON).
pub fn fixture_repositories(test: &str) -> Vec<(String, PathBuf, Value)> {
    let Some(root) = testkit::fixtures::require_fixtures(test) else {
        return Vec::new();
    };
    let dir = root.join("snapshots");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let Some(name) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".expected.json"))
        else {
            continue;
        };
        let expected: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        out.push((name.to_string(), dir.join(name), expected));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(
        !out.is_empty(),
        "no fixture repositories in {}",
        dir.display()
    );
    out
}

/// Every live document of an index as expected-file entries, sorted by (_id, _type).
pub fn read_documents(index: &snapshot::SnapshotIndex) -> Vec<Value> {
    let mut docs = Vec::new();
    for s in 0..index.number_of_shards() {
        if index.shard_failure(s).is_some() {
            continue;
        }
        let shard = index.open_shard(s).unwrap();
        let reader = ShardReader::open(&shard).unwrap();
        let mut it = reader.documents(0..reader.max_doc()).unwrap();
        for d in it.by_ref() {
            let d = d.unwrap();
            assert!(
                !d.source.contains(&b'\n'),
                "source of {} is not one line",
                d.id
            );
            let mut v = json!({
                "_id": d.id,
                "_routing": d.routing,
                "_source": serde_json::from_slice::<Value>(&d.source).unwrap(),
            });
            if let Some(t) = d.doc_type {
                v["_type"] = json!(t);
            }
            docs.push(v);
        }
        assert_eq!(it.stats().skipped_not_nested(), 0, "{:?}", it.stats());
    }
    sort_docs(&mut docs);
    docs
}

pub fn sort_docs(docs: &mut [Value]) {
    docs.sort_by_key(|d| {
        (
            d["_id"].as_str().unwrap_or("").to_string(),
            d["_type"].as_str().unwrap_or("").to_string(),
        )
    });
}

/// Expected documents with `_source` parsed (compared as JSON values).
pub fn expected_documents(index: &Value) -> Vec<Value> {
    let mut docs: Vec<Value> = index["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let mut d = d.clone();
            let src: Value = serde_json::from_str(d["_source"].as_str().unwrap()).unwrap();
            d["_source"] = src;
            d
        })
        .collect();
    sort_docs(&mut docs);
    docs
}

fn sorted_keys(v: &BTreeMap<String, Value>) -> Vec<String> {
    v.keys().cloned().collect()
}

/// Checks everything the expected file says about `repo`. `skip_failed` names
/// (index, shard) pairs made to fail on purpose: their documents are not expected.
pub fn check_repository(repo: &Repository, expected: &Value, failed: &[(&str, u32)]) {
    let want: Vec<&String> = expected["snapshots"].as_object().unwrap().keys().collect();
    let mut got: Vec<&String> = repo.snapshots().iter().map(|s| &s.name).collect();
    got.sort();
    assert_eq!(got, want, "snapshots of {}", repo.location());
    for (snap_name, snap_exp) in expected["snapshots"].as_object().unwrap() {
        let snap = repo.snapshot(snap_name).unwrap();
        let g = snap.global_metadata().unwrap();
        for (kind, key) in [
            (TemplateKind::Legacy, "legacy"),
            (TemplateKind::Component, "component"),
            (TemplateKind::Index, "index"),
        ] {
            let want: Vec<String> =
                serde_json::from_value(snap_exp["templates"][key].clone()).unwrap();
            assert_eq!(
                sorted_keys(g.templates(kind)),
                want,
                "{snap_name} {key} templates"
            );
        }
        let want_indices: Vec<&String> = snap_exp["indices"].as_object().unwrap().keys().collect();
        let got_indices = snap.index_names();
        assert_eq!(
            got_indices.iter().collect::<Vec<_>>(),
            want_indices,
            "{snap_name} indices"
        );
        for (name, iexp) in snap_exp["indices"].as_object().unwrap() {
            let index = snap.index(name).unwrap();
            let md = index.metadata();
            assert_eq!(
                u64::from(index.number_of_shards()),
                iexp["number_of_shards"].as_u64().unwrap()
            );
            let mut types: Vec<&str> = md.mapping_types();
            types.sort();
            assert_eq!(json!(types), iexp["mapping_types"], "{name} mapping types");
            let mut aliases: Vec<&String> = md.aliases.keys().collect();
            aliases.sort();
            assert_eq!(json!(aliases), iexp["aliases"], "{name} aliases");
            for (k, v) in iexp["settings_subset"].as_object().unwrap() {
                assert_eq!(md.settings.get(k), Some(v), "{name} setting {k}");
            }
            let docs = read_documents(&index);
            let mut want = expected_documents(iexp);
            if failed.iter().any(|(i, _)| i == name) {
                want.clear();
            }
            assert_eq!(docs.len(), want.len(), "{snap_name}/{name}: {docs:#?}");
            for (d, w) in docs.iter().zip(&want) {
                assert_eq!(d, w, "{snap_name}/{name}");
            }
        }
    }
}

/// Uploads every file under `dir` to `bucket` at `prefix/…` of an s3rver.
pub fn upload_dir(s3: &testkit::services::S3rver, bucket: &str, prefix: &str, dir: &Path) {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<(String, PathBuf)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_str().unwrap().to_string();
            let r = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            if e.file_type().unwrap().is_dir() {
                walk(&e.path(), &r, out);
            } else {
                out.push((r, e.path()));
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, "", &mut files);
    for (rel, path) in files {
        s3.put_object(
            bucket,
            &format!("{prefix}/{rel}"),
            &std::fs::read(path).unwrap(),
        );
    }
}
