//! Vectors put back into `_source` (src/vectors.rs): shards written by real Lucene 10.5.0
//! the way Elasticsearch 9.2 (`dense_vector` left out of `_source`, cosine vectors stored
//! normalised with `<field>._magnitude`) and OpenSearch 3 (`knn_vector` replaced by the mask
//! `1`) write them (tests/data/vectors, made by scripts/make-vector-fixtures with
//! crates/lucene/tests/java/MakeVectors.java). Every document read must equal the one sent,
//! vectors included (floats compared by their bits); a field in a vector format the reader
//! does not know makes the documents that lack it `vector_unreadable`, never silently
//! incomplete.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};
use snapshot::write::{write_repository, IndexSpec, ShardSource, SnapshotSpec, WriteOptions};
use snapshot::{ReadOptions, Repository, ShardReader, ShardStats, SkipReason, TypeMapping};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/vectors")
}

fn es_mapping() -> Value {
    json!({"properties": {
        "title": {"type": "text"},
        "emb": {"type": "dense_vector", "dims": 4, "similarity": "cosine", "index": true},
        "obj": {"properties": {"k": {"type": "long"},
            "bv": {"type": "dense_vector", "dims": 3, "element_type": "byte", "similarity": "l2_norm"},
            "links": {"type": "nested", "properties": {"j": {"type": "long"},
                "lv": {"type": "dense_vector", "dims": 2, "similarity": "l2_norm"}}}}},
        "parts": {"type": "nested", "properties": {"n": {"type": "long"},
            "pv": {"type": "dense_vector", "dims": 2, "similarity": "l2_norm"},
            "sub": {"type": "nested", "properties": {"m": {"type": "long"},
                "sv": {"type": "dense_vector", "dims": 3, "similarity": "l2_norm"}}}}},
        "tags": {"type": "nested", "properties": {"t": {"type": "long"},
            "tv": {"type": "dense_vector", "dims": 3, "element_type": "byte", "similarity": "l2_norm"}}}
    }})
}

fn os_mapping() -> Value {
    json!({"properties": {
        "title": {"type": "text"},
        "emb": {"type": "knn_vector", "dimension": 4},
        "obj": {"properties": {"k": {"type": "long"},
            "bv": {"type": "knn_vector", "dimension": 3, "data_type": "byte"},
            "links": {"type": "nested", "properties": {"j": {"type": "long"},
                "lv": {"type": "knn_vector", "dimension": 2}}}}},
        "parts": {"type": "nested", "properties": {"n": {"type": "long"},
            "pv": {"type": "knn_vector", "dimension": 2},
            "sub": {"type": "nested", "properties": {"m": {"type": "long"},
                "sv": {"type": "knn_vector", "dimension": 3}}}}},
        "tags": {"type": "nested", "properties": {"t": {"type": "long"},
            "tv": {"type": "knn_vector", "dimension": 3, "data_type": "byte"}}}
    }})
}

/// OpenSearch 3.0.0's version id (bit 27 marks OpenSearch).
const OS_3_0: u64 = 3_00_00_99 | 0x0800_0000;

/// An index of the test repository: name, fixture folder, mapping, settings.
type IndexDef<'a> = (&'a str, &'a str, Value, Vec<(&'a str, &'a str)>);

fn repository(tmp: &Path, indices: &[IndexDef<'_>]) -> Repository {
    let mut spec = SnapshotSpec::new("snap");
    for (name, dir, mapping, settings) in indices {
        let lucene = lucene::FsDirectory::open(data().join(dir)).unwrap();
        spec.indices.push(IndexSpec {
            name: name.to_string(),
            settings: settings
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect(),
            mappings: vec![TypeMapping {
                doc_type: "_doc".into(),
                mapping: mapping.clone(),
            }],
            aliases: serde_json::Map::new(),
            shards: vec![ShardSource::Lucene(Arc::new(lucene))],
            extra: serde_json::Map::new(),
        });
    }
    write_repository(tmp, &[spec], &WriteOptions::default()).unwrap();
    Repository::open(snapshot::open_blob_store(tmp.to_str().unwrap(), &Default::default()).unwrap())
        .unwrap()
}

/// Documents read from `index`: sources by id, the skipped ones, the counts.
fn read(
    repo: &Repository,
    index: &str,
) -> (
    BTreeMap<String, Value>,
    Vec<snapshot::SkippedDocument>,
    ShardStats,
) {
    let snap = repo.snapshot("snap").unwrap();
    let shard = snap.index(index).unwrap().open_shard(0).unwrap();
    let reader = ShardReader::open_with(&shard, &ReadOptions::default()).unwrap();
    let mut docs = reader.documents(0..reader.max_doc()).unwrap();
    let mut out = BTreeMap::new();
    let mut skipped = Vec::new();
    while let Some(d) = docs.next() {
        let d = d.unwrap();
        let src: Value = serde_json::from_slice(&d.source)
            .unwrap_or_else(|e| panic!("{index} {}: {e}: {:?}", d.id, d.source));
        assert!(out.insert(d.id, src).is_none());
        skipped.extend(docs.take_skipped());
    }
    skipped.extend(docs.take_skipped());
    (out, skipped, docs.stats().clone())
}

fn sent(kind: &str) -> BTreeMap<String, Value> {
    std::fs::read_to_string(data().join(format!("{kind}.sent.jsonl")))
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["_id"].as_str().unwrap().to_string(), v["_source"].clone())
        })
        .collect()
}

/// Numbers replaced by the bits of the float they denote (vectors are float32).
fn bits(v: &Value) -> Value {
    match v {
        Value::Number(n) => json!((n.as_f64().unwrap() as f32).to_bits()),
        Value::Array(a) => Value::Array(a.iter().map(bits).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), bits(v))).collect()),
        other => other.clone(),
    }
}

fn assert_same(index: &str, got: &BTreeMap<String, Value>, want: &BTreeMap<String, Value>) {
    for (id, w) in want {
        let g = got
            .get(id)
            .unwrap_or_else(|| panic!("{index}: {id} missing"));
        assert_eq!(bits(g), bits(w), "{index} {id}:\n got {g}\nwant {w}");
    }
    assert_eq!(got.len(), want.len(), "{index}: documents");
}

#[test]
fn elasticsearch_92_vectors_come_back_into_source() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = repository(
        tmp.path(),
        &[(
            "es92",
            "es",
            es_mapping(),
            vec![("index.version.created", "9039000")],
        )],
    );
    let (got, skipped, stats) = read(&repo, "es92");
    assert!(skipped.is_empty(), "{skipped:?}");
    assert_same("es92", &got, &sent("es"));
    // doc 7 kept its own (different) vector in _source: that one is sent, not the files'
    assert_eq!(got["v007"]["emb"], json!([9.0, 9.0, 9.0, 9.0]));
    assert_eq!(stats.vectors_restored, stats.documents);
    assert_eq!(stats.vector_unreadable, 0);
}

#[test]
fn opensearch_3_derived_source_mask_is_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let os = OS_3_0.to_string();
    let repo = repository(
        tmp.path(),
        &[(
            "os3",
            "os",
            os_mapping(),
            vec![
                ("index.version.created", os.as_str()),
                ("index.knn", "true"),
            ],
        )],
    );
    let (got, skipped, _) = read(&repo, "os3");
    assert!(skipped.is_empty(), "{skipped:?}");
    assert_same("os3", &got, &sent("os"));
    let text = got.values().map(Value::to_string).collect::<String>();
    for mask in [
        "\"emb\":1",
        "\"bv\":1",
        "\"pv\":1",
        "\"sv\":1",
        "\"lv\":1",
        "\"tv\":1",
    ] {
        assert!(!text.contains(mask), "a mask was passed on: {mask}");
    }
}

#[test]
fn unknown_vector_format_is_never_silent() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = repository(
        tmp.path(),
        &[
            (
                "excluded",
                "es-opaque",
                es_mapping(),
                vec![("index.version.created", "9039000")],
            ),
            // vectors kept in _source by setting: a document without one is sent as stored
            (
                "kept",
                "es-opaque",
                es_mapping(),
                vec![
                    ("index.version.created", "9039000"),
                    ("index.mapping.exclude_source_vectors", "false"),
                ],
            ),
        ],
    );
    let all = sent("es-opaque");
    let (got, skipped, stats) = read(&repo, "excluded");
    // only doc 7 has "emb" in _source; every other document lacks it and cannot be completed
    assert_eq!(got.len(), 1, "{:?}", got.keys());
    assert_same(
        "excluded",
        &got,
        &all.iter()
            .filter(|(k, _)| *k == "v007")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    );
    assert_eq!(skipped.len(), all.len() - 1);
    assert_eq!(stats.vector_unreadable, skipped.len() as u64);
    for s in &skipped {
        assert_eq!(s.reason, SkipReason::VectorUnreadable);
        assert_eq!(s.reason.as_str(), "vector_unreadable");
        for part in [
            "index excluded",
            "\"emb\"",
            "RfsOpaqueVectorsFormat",
            "_RfsOpaqueVectorsFormat_0.vec",
        ] {
            assert!(s.detail.contains(part), "{} lacks {part}", s.detail);
        }
    }
    // delivered + skipped = every live document
    assert_eq!(got.len() + skipped.len(), all.len());

    let (got, skipped, _) = read(&repo, "kept");
    assert!(skipped.is_empty());
    assert_eq!(got.len(), all.len());
    for (id, g) in &got {
        // the readable vectors (obj.bv, parts.pv) are put back; "emb" only where stored
        let mut want = all[id].clone();
        if id != "v007" {
            want.as_object_mut().unwrap().remove("emb");
        }
        assert_eq!(bits(g), bits(&want), "kept {id}");
    }
}

#[test]
fn segments_list_vector_fields_and_where_they_are_read_from() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = repository(
        tmp.path(),
        &[
            (
                "es92",
                "es",
                es_mapping(),
                vec![("index.version.created", "9039000")],
            ),
            (
                "opaque",
                "es-opaque",
                es_mapping(),
                vec![("index.version.created", "9039000")],
            ),
        ],
    );
    let snap = repo.snapshot("snap").unwrap();
    for (index, emb_format) in [
        ("es92", "Lucene99HnswVectorsFormat"),
        ("opaque", "RfsOpaqueVectorsFormat"),
    ] {
        let shard = snap.index(index).unwrap().open_shard(0).unwrap();
        let reader = ShardReader::open(&shard).unwrap();
        for seg in reader.segments() {
            let mut names: Vec<&str> = seg.vector_fields.iter().map(|f| f.field.as_str()).collect();
            names.sort();
            assert_eq!(
                names,
                [
                    "emb",
                    "obj.bv",
                    "obj.links.lv",
                    "parts.pv",
                    "parts.sub.sv",
                    "tags.tv"
                ],
                "{index} {}",
                seg.name
            );
            let field = |n: &str| seg.vector_fields.iter().find(|f| f.field == n).unwrap();
            let emb = field("emb");
            assert_eq!(
                (emb.format.as_str(), emb.encoding, emb.dimension),
                (emb_format, "float32", 4)
            );
            assert!(
                emb.file.contains(&format!("_{emb_format}_0.vec")),
                "{}",
                emb.file
            );
            assert_eq!(emb.unreadable.is_some(), index == "opaque");
            assert_eq!(emb.vectors.is_some(), index == "es92");
            let bv = field("obj.bv");
            assert_eq!(
                (bv.encoding, bv.dimension, bv.unreadable.as_deref()),
                ("byte", 3, None)
            );
            assert!(bv.vectors.unwrap() > 0);
        }
    }
}

/// Nested vectors at every depth: two levels (`parts.sub.sv` inside `parts`), nested under
/// a plain object (`obj.links.lv`), and two nested fields side by side (`parts`, `tags`).
/// Each child document's vector lands in its own object: the k-th nested object of
/// `_source` in the order Elasticsearch indexes them (an object's nested objects first).
#[test]
fn nested_vectors_at_any_depth_land_at_their_path_and_position() {
    let tmp = tempfile::tempdir().unwrap();
    let os = OS_3_0.to_string();
    let repo = repository(
        tmp.path(),
        &[
            (
                "es92",
                "es",
                es_mapping(),
                vec![("index.version.created", "9039000")],
            ),
            (
                "os3",
                "os",
                os_mapping(),
                vec![
                    ("index.version.created", os.as_str()),
                    ("index.knn", "true"),
                ],
            ),
        ],
    );
    for (index, kind) in [("es92", "es"), ("os3", "os")] {
        let (got, skipped, _) = read(&repo, index);
        assert!(skipped.is_empty(), "{index}: {skipped:?}");
        let want = sent(kind);
        let mut deep = 0;
        for (id, w) in &want {
            let g = &got[id];
            for (path, n) in [("/parts", 2), ("/obj/links", 2), ("/tags", 2)] {
                let Some(items) = w.pointer(path).and_then(Value::as_array) else {
                    assert!(g.pointer(path).is_none(), "{index} {id} {path}");
                    continue;
                };
                assert!(items.len() <= n);
                for (k, item) in items.iter().enumerate() {
                    let at = format!("{path}/{k}");
                    assert_eq!(
                        bits(&g.pointer(&at).cloned().unwrap()),
                        bits(item),
                        "{index} {id} {at}"
                    );
                    for (j, sub) in item["sub"].as_array().into_iter().flatten().enumerate() {
                        let at = format!("{path}/{k}/sub/{j}/sv");
                        assert_eq!(
                            bits(g.pointer(&at).unwrap()),
                            bits(&sub["sv"]),
                            "{index} {id} {at}"
                        );
                        deep += 1;
                    }
                }
            }
        }
        assert!(deep >= 10, "{index}: {deep} two-level vectors compared");
        assert_same(index, &got, &want);
    }
}
