//! `_seq_no` doc values and selected-document walks against indexes written by real Lucene
//! 8, 9 and 10 (the delta histories, `crates/snapshot/tests/data/delta`): every value
//! Lucene read back (deleted documents included) must be read the same, and a walk over a
//! selection must visit exactly the selected documents, live or not.

use std::collections::BTreeMap;
use std::sync::Arc;

use lucene::{
    read_numeric_values, Directory, DocSet, FsDirectory, IndexReader, OpenOptions, Selection,
    StoredValue,
};

#[test]
fn seq_no_values_match_lucene_for_every_commit() {
    let histories = testkit::fixtures::delta_histories();
    assert!(histories.len() >= 12, "{histories:?}");
    let mut checked = 0;
    for (name, dir) in histories {
        for commit in ["A", "B", "C"] {
            let golden =
                std::fs::read_to_string(dir.join(format!("{commit}.seq_no.jsonl"))).unwrap();
            let mut want: BTreeMap<(String, u32), i64> = BTreeMap::new();
            for line in golden.lines() {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                want.insert(
                    (
                        v["seg"].as_str().unwrap().to_string(),
                        v["doc"].as_u64().unwrap() as u32,
                    ),
                    v["value"].as_i64().unwrap(),
                );
            }
            let fs: Arc<dyn Directory> = Arc::new(FsDirectory::open(dir.join(commit)).unwrap());
            let reader = IndexReader::open(fs.clone(), &OpenOptions::elasticsearch()).unwrap();
            let mut got = BTreeMap::new();
            for seg in reader.segments() {
                match read_numeric_values(seg, "_seq_no").unwrap() {
                    Some(values) => {
                        for (doc, v) in values.iter() {
                            got.insert((seg.name().to_string(), doc), v);
                        }
                    }
                    None => assert!(
                        name.contains("noseq"),
                        "{name}/{commit}: no _seq_no in {}",
                        seg.name()
                    ),
                }
                // A field without doc values, and a missing field.
                assert_eq!(read_numeric_values(seg, "_source").unwrap(), None);
                assert_eq!(read_numeric_values(seg, "nope").unwrap(), None);
            }
            assert_eq!(got, want, "{name}/{commit}");
            checked += want.len();
        }
    }
    assert!(checked > 5000, "only {checked} values checked");
}

#[test]
fn a_selected_walk_visits_exactly_the_selected_documents() {
    let (_, dir) = testkit::fixtures::delta_histories()
        .into_iter()
        .find(|(n, _)| n == "l9-soft")
        .unwrap();
    let fs: Arc<dyn Directory> = Arc::new(FsDirectory::open(dir.join("B")).unwrap());
    let reader = IndexReader::open(fs, &OpenOptions::elasticsearch()).unwrap();
    // Every third document of every segment, deleted ones included.
    let sets: Vec<DocSet> = reader
        .segments()
        .iter()
        .map(|s| {
            let mut set = DocSet::empty(s.max_doc());
            (0..s.max_doc()).step_by(3).for_each(|d| {
                set.insert(d);
            });
            set
        })
        .collect();
    let selection = Selection::new(sets);
    let mut want = Vec::new();
    let mut deleted = 0;
    for s in reader.segments() {
        for d in (0..s.max_doc()).step_by(3) {
            want.push(s.doc_base() + u64::from(d));
            deleted += u64::from(!s.is_live(d));
        }
    }
    assert!(deleted > 0, "the selection should hold deleted documents");
    let mut docs = reader.selected(&selection);
    let mut got = Vec::new();
    let mut ids = 0;
    while let Some(d) = docs
        .next(&mut |f: &lucene::FieldInfo, v: StoredValue<'_>| {
            if f.name == "_id" && matches!(v, StoredValue::Binary(_)) {
                ids += 1;
            }
            Ok(())
        })
        .unwrap()
    {
        got.push(d);
    }
    assert_eq!(got, want);
    assert_eq!(
        ids,
        want.len(),
        "every document (tombstones too) has an _id"
    );
    assert_eq!(selection.len(), want.len() as u64);
}

/// A field's value for a doc id, `None` when the doc has none.
type Formula = fn(i64) -> Option<i64>;

/// Every NUMERIC encoding Lucene 8, 9 and 10 write (per-block widths, a value table,
/// min + gcd, sparse, one value for all, wide negative values), against the formula the
/// writer used (crates/lucene/tests/java/MakeNumeric.java).
#[test]
fn every_numeric_encoding_of_lucene_8_9_10() {
    let root = testkit::fixtures::workspace_root().join("crates/lucene/tests/data/numeric");
    let expect: [(&str, Formula); 6] = [
        ("blocks", |d| {
            Some((d / 16384) * 1_000_000_000_000 + (d * 7919) % 1000)
        }),
        ("table", |d| Some(((d * 31) % 7) * 1_000_003 - 5)),
        ("gcd", |d| Some(1000 * ((d * 13) % 500) + 42)),
        ("sparse", |d| (d % 3 == 0).then_some(d * 3 - 1000)),
        ("same", |_| Some(77)),
        ("wide", |d| Some(-d * 1_000_000_007)),
    ];
    for version in ["l8", "l9", "l10"] {
        let fs: Arc<dyn Directory> = Arc::new(FsDirectory::open(root.join(version)).unwrap());
        let reader = IndexReader::open(fs.clone(), &OpenOptions::default()).unwrap();
        assert_eq!(reader.segments().len(), 1, "{version}");
        let seg = &reader.segments()[0];
        assert_eq!(seg.max_doc(), 20000);
        for (field, f) in expect {
            let values = read_numeric_values(seg, field)
                .unwrap()
                .unwrap_or_else(|| panic!("{version}: no {field}"));
            for d in 0..seg.max_doc() {
                assert_eq!(values.get(d), f(i64::from(d)), "{version} {field} doc {d}");
            }
        }
    }
}
