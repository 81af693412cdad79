//! The JSON-lines source proves what it read (issue #36): an item's byte range comes from
//! the plan (`WorkItem::extent`), never from a worker's own `--item-bytes`; a file that
//! changed after the plan fails its items instead of finishing them; files beside
//! `*.jsonl` (`.ndjson`, any case, `.jsonl.gz`, `.jsonl.zst`, sub-directories) are read,
//! never passed over without a word. Every test compares the documents one by one.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use connectors::jsonl::{JsonlOptions, JsonlSource};
use coordination::{Cursor, Position, WorkItem};
use engine::{Read, Source, SourceError};

fn source(dir: &Path, item_bytes: u64) -> JsonlSource {
    let store = snapshot::open_blob_store(&dir.display().to_string(), &Default::default()).unwrap();
    JsonlSource::open(
        store,
        JsonlOptions {
            chunk_bytes: item_bytes,
            read_bytes: 1000,
            ..JsonlOptions::default()
        },
    )
    .unwrap()
}

fn read(s: &JsonlSource, item: &WorkItem, after: &Cursor) -> Result<Vec<Read>, SourceError> {
    let mut out = Vec::new();
    s.read(item, after, &mut |r| {
        out.push(r);
        true
    })?;
    Ok(out)
}

/// (index, id) → `_source` text of the documents read.
fn docs(reads: &[Read]) -> Vec<((String, String), String)> {
    reads
        .iter()
        .map(|r| match r {
            Read::Doc(d) => (
                (d.index.to_string(), d.id.clone()),
                String::from_utf8(d.source.to_vec()).unwrap(),
            ),
            Read::Skip(s) => panic!("unexpected skip {}: {}", s.reason, s.detail),
        })
        .collect()
}

/// `n` documents of `index`, ids `from..from + n`, as lines; and what each holds.
fn lines(index: &str, from: usize, n: usize) -> (String, BTreeMap<(String, String), String>) {
    let mut text = String::new();
    let mut want = BTreeMap::new();
    for i in from..from + n {
        let source = format!("{{\"n\":{i},\"pad\":\"{}\"}}", "p".repeat(i % 37));
        text.push_str(&format!(
            "{{\"_index\":\"{index}\",\"_id\":\"{i}\",\"_source\":{source}}}\n"
        ));
        want.insert((index.to_string(), i.to_string()), source);
    }
    (text, want)
}

fn check(got: Vec<((String, String), String)>, want: &BTreeMap<(String, String), String>) {
    let mut held = BTreeMap::new();
    for (k, v) in got {
        assert!(held.insert(k.clone(), v).is_none(), "{k:?} read twice");
    }
    assert_eq!(held.len(), want.len());
    for (k, v) in want {
        assert_eq!(held.get(k), Some(v), "{k:?}");
    }
}

/// The case: a plan made with 4096 bytes per item, half its items read by that
/// worker and the rest by one restarted without `--item-bytes` (64 MiB). Before the
/// extent, the second worker turned part numbers into ranges past the file's end and
/// read nothing (824 of 2,000 documents, exit 0); now every document is read once.
#[test]
fn a_worker_reads_the_plans_byte_ranges_whatever_its_own_item_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let (text, want) = lines("books", 0, 2000);
    std::fs::write(dir.path().join("books.jsonl"), &text).unwrap();
    let planner = source(dir.path(), 4096);
    let plan = planner.plan().unwrap();
    assert_eq!(plan.items.len(), text.len().div_ceil(4096));
    assert!(plan.items.iter().all(|i| i.extent.is_some()));
    let restarted = source(dir.path(), 64 << 20);
    let half = plan.items.len() / 2;
    let mut got = Vec::new();
    for (n, item) in plan.items.iter().enumerate() {
        let worker = if n < half { &planner } else { &restarted };
        got.extend(docs(&read(worker, item, &None).unwrap()));
    }
    check(got, &want);

    // A resumed item (after a cursor in its range) of the restarted worker: the rest of
    // the range recorded in the plan, not of one recomputed.
    let item = &plan.items[half + 1];
    let all = read(&planner, item, &None).unwrap();
    let mid = all[all.len() / 2].position().clone();
    let rest = read(&restarted, item, &Some(mid)).unwrap();
    assert_eq!(docs(&rest), docs(&all[all.len() / 2 + 1..]));

    // An item written by an older rfs (no extent) still resumes the old way: its range
    // from the worker's flags (the plan's value, as that rfs required).
    let old: Vec<WorkItem> = plan
        .items
        .iter()
        .map(|i| WorkItem {
            extent: None,
            ..i.clone()
        })
        .collect();
    let got: Vec<_> = old
        .iter()
        .flat_map(|i| docs(&read(&planner, i, &None).unwrap()))
        .collect();
    check(got, &want);
}

/// A file that grew, shrank or changed its last bytes after the plan was made: each of
/// its items fails (coverage, naming the file) when it reaches its end, never finishes.
#[test]
fn a_file_changed_after_the_plan_fails_its_items() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.jsonl");
    let (text, _) = lines("a", 0, 300);
    std::fs::write(&path, &text).unwrap();
    let plan = source(dir.path(), 4096).plan().unwrap();
    let fails = |what: &str| {
        let s = source(dir.path(), 4096);
        for item in &plan.items {
            let e = read(&s, item, &None).unwrap_err();
            assert!(e.coverage, "{what}: {e}");
            assert!(
                e.message.contains("a.jsonl") && e.message.contains("changed since the plan"),
                "{what}: {e}"
            );
        }
    };
    // Appended to.
    let (more, _) = lines("a", 300, 5);
    std::fs::write(&path, format!("{text}{more}")).unwrap();
    fails("appended");
    // Cut short.
    std::fs::write(&path, &text[..text.len() - 100]).unwrap();
    fails("truncated");
    // The same length, its last line changed.
    let mut changed = text.clone().into_bytes();
    let at = changed.len() - 5;
    changed[at] = b'9';
    std::fs::write(&path, &changed).unwrap();
    fails("rewritten");
    // Restored: every item reads again.
    std::fs::write(&path, &text).unwrap();
    let s = source(dir.path(), 4096);
    for item in &plan.items {
        read(&s, item, &None).unwrap();
    }
}

fn gzip(text: &str) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(text.as_bytes()).unwrap();
    e.finish().unwrap()
}

/// The files `rfs export` and others write beside `*.jsonl`: `.ndjson`, upper case,
/// `.jsonl.gz` (two gzip members, as concatenated exports are), `.jsonl.zst`, and files in
/// sub-directories. Before, only `a.jsonl` was read (10 of 50 documents). A compressed
/// file is one item (it cannot be cut into byte ranges), resumable after any line.
#[test]
fn files_beside_jsonl_are_read_compressed_ones_as_one_item_each() {
    let dir = tempfile::tempdir().unwrap();
    let mut want = BTreeMap::new();
    let mut put = |name: &str, index: &str, from: usize, bytes: &dyn Fn(&str) -> Vec<u8>| {
        let (text, w) = lines(index, from, 10);
        want.extend(w);
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes(&text)).unwrap();
    };
    let plain = |t: &str| t.as_bytes().to_vec();
    put("a.jsonl", "a", 0, &plain);
    put("B.JSONL", "b", 100, &plain);
    put("c.ndjson", "c", 200, &plain);
    put("d.jsonl.gz", "d", 300, &|t: &str| {
        // Two members: the halves of the file.
        let cut = t.len() / 2;
        let cut = t[..cut].rfind('\n').unwrap() + 1;
        [gzip(&t[..cut]), gzip(&t[cut..])].concat()
    });
    put("e.jsonl.zst", "e", 400, &|t: &str| {
        zstd::encode_all(t.as_bytes(), 3).unwrap()
    });
    put("sub/f.jsonl", "f", 500, &plain);
    put("sub/deeper/g.Jsonl.GZ", "g", 600, &|t: &str| gzip(t));
    std::fs::write(dir.path().join("notes.txt"), "not lines").unwrap();
    let s = source(dir.path(), 4096);
    let files: Vec<&str> = s.files().iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        files,
        [
            "B.JSONL",
            "a.jsonl",
            "c.ndjson",
            "d.jsonl.gz",
            "e.jsonl.zst",
            "sub/deeper/g.Jsonl.GZ",
            "sub/f.jsonl"
        ]
    );
    let plan = s.plan().unwrap();
    let mut got = Vec::new();
    for item in &plan.items {
        let reads = read(&s, item, &None).unwrap();
        // Resuming after any line gives exactly the rest.
        for cut in 0..reads.len() {
            let rest = read(&s, item, &Some(reads[cut].position().clone())).unwrap();
            assert_eq!(docs(&rest), docs(&reads[cut + 1..]), "{}", item.id());
        }
        got.extend(docs(&reads));
    }
    check(got, &want);
    // One item per compressed file.
    let per_file = |name: &str| plan.items.iter().filter(|i| i.group == name).count();
    assert_eq!(per_file("d.jsonl.gz"), 1);
    assert_eq!(per_file("e.jsonl.zst"), 1);

    // A compressed file cut short: its item fails naming it, never ends as done.
    let whole = std::fs::read(dir.path().join("d.jsonl.gz")).unwrap();
    std::fs::write(dir.path().join("d.jsonl.gz"), &whole[..whole.len() - 30]).unwrap();
    let s = source(dir.path(), 4096);
    let item = plan.items.iter().find(|i| i.group == "d.jsonl.gz").unwrap();
    let e = read(&s, item, &None).unwrap_err();
    assert!(e.message.contains("d.jsonl.gz"), "{e}");
    // Not a gzip stream at all, under the plan's length: failed too.
    std::fs::write(dir.path().join("d.jsonl.gz"), vec![b'x'; whole.len()]).unwrap();
    let s = source(dir.path(), 4096);
    let e = read(&s, item, &None).unwrap_err();
    assert!(e.message.contains("d.jsonl.gz"), "{e}");
}

/// A position is a byte offset; a `Position::Key` is refused naming the file.
#[test]
fn a_key_position_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let (text, _) = lines("a", 0, 3);
    std::fs::write(dir.path().join("a.jsonl"), &text).unwrap();
    let s = source(dir.path(), 4096);
    let item = s.plan().unwrap().items.remove(0);
    let e = read(&s, &item, &Some(Position::Key("k".into()))).unwrap_err();
    assert!(e.message.contains("a.jsonl"), "{e}");
}
