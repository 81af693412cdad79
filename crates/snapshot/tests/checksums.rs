//! Checksums on the reading path: the demo repository (real Lucene 8.8 segments wrapped as
//! an Elasticsearch 7.10 snapshot) with one bit flipped in one blob. Every damage to a file
//! the reader depends on fails the read with an error naming the blob, the Lucene file and
//! the shard — including the flipped bit inside a compound file's stored fields that
//! once migrated silently (issue 15, finding 1).

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use snapshot::{FileInfo, ReadOptions, Repository, ShardReader};

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../demo/repository")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// Reads every document of shard 0 of `index` in `repo`; the number read, or the error.
fn read_shard(repo: &Path, index: &str, options: &ReadOptions) -> Result<usize, String> {
    let store = Arc::new(snapshot::LocalStore::open(repo).unwrap());
    let repo = Repository::open(store).map_err(|e| redact::chain(&e))?;
    let snap = repo.snapshot("demo").map_err(|e| redact::chain(&e))?;
    let index = snap.index(index).map_err(|e| redact::chain(&e))?;
    let shard = index.open_shard(0).map_err(|e| redact::chain(&e))?;
    let reader = ShardReader::open_with(&shard, options).map_err(|e| redact::chain(&e))?;
    let mut n = 0;
    for d in reader
        .documents(0..reader.max_doc())
        .map_err(|e| redact::chain(&e))?
    {
        d.map_err(|e| redact::chain(&e))?;
        n += 1;
    }
    Ok(n)
}

/// The files of shard 0 of `index` and the directory holding their blobs.
fn shard_files(repo: &Path, index: &str) -> (PathBuf, Vec<FileInfo>) {
    let store = Arc::new(snapshot::LocalStore::open(repo).unwrap());
    let repo_h = Repository::open(store).unwrap();
    let snap = repo_h.snapshot("demo").unwrap();
    let ix = snap.index(index).unwrap();
    let shard = ix.open_shard(0).unwrap();
    let files = shard.directory().file_infos().cloned().collect();
    (repo.join(ix.shard_dir(0)), files)
}

/// Where the stored-fields files (`.fdt`, `.fdx`, `.fdm`) lie in a `.cfs` blob, read
/// from its `.cfe` (the Lucene 8 entry table: big-endian offset and length per name).
fn stored_fields_ranges(cfe: &[u8]) -> Vec<(String, Range<usize>)> {
    let body = &cfe[..cfe.len() - 16];
    // Header: magic, codec name, version, 16-byte id, suffix length + suffix.
    let name_len = body[4] as usize;
    let mut p = 4 + 1 + name_len + 4 + 16;
    p += 1 + body[p] as usize;
    let count = body[p] as usize; // vInt, fewer than 128 entries here
    p += 1;
    let mut out = Vec::new();
    for _ in 0..count {
        let n = body[p] as usize;
        let name = String::from_utf8(body[p + 1..p + 1 + n].to_vec()).unwrap();
        p += 1 + n;
        let off = u64::from_be_bytes(body[p..p + 8].try_into().unwrap()) as usize;
        let len = u64::from_be_bytes(body[p + 8..p + 16].try_into().unwrap()) as usize;
        p += 16;
        if [".fdt", ".fdx", ".fdm"].contains(&name.as_str()) {
            out.push((name, off..off + len));
        }
    }
    out
}

fn blob_of<'a>(files: &'a [FileInfo], physical: &str) -> &'a FileInfo {
    files
        .iter()
        .find(|f| f.physical_name == physical)
        .unwrap_or_else(|| panic!("{physical} not in the shard"))
}

/// Issue 15, finding 1: byte 20000 of a `reviews` compound blob lies in the stored fields;
/// some flips there change a word of a document without breaking its decoding, so an
/// unchecked read succeeds with changed text. Every such flip now fails the read with a
/// checksum error naming the blob, the file inside the compound file and the shard; every
/// other flip fails too, naming them.
#[test]
fn flipped_bit_in_compound_stored_fields_is_an_error_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    copy_dir(&demo(), &repo);
    let clean = read_shard(&repo, "reviews", &ReadOptions::default()).unwrap();
    assert!(clean > 0);
    let unchecked = ReadOptions {
        verify_checksums: false,
        ..Default::default()
    };

    let (dir, files) = shard_files(&repo, "reviews");
    let (mut silent, mut flips) = (0, 0);
    for cfs in files.iter().filter(|f| f.physical_name.ends_with(".cfs")) {
        let cfe = blob_of(&files, &cfs.physical_name.replace(".cfs", ".cfe"));
        let cfe_bytes = match &cfe.meta_hash {
            Some(inline) if cfe.is_virtual() => inline.0.clone(),
            _ => std::fs::read(dir.join(&cfe.name)).unwrap(),
        };
        let ranges = stored_fields_ranges(&cfe_bytes);
        let Some((inner, _)) = ranges.iter().find(|(_, r)| r.contains(&20_000)).cloned() else {
            continue;
        };
        let path = dir.join(&cfs.name);
        let original = std::fs::read(&path).unwrap();
        let segment = cfs.physical_name.trim_end_matches(".cfs");
        for bit in 0..8 {
            let mut bad = original.clone();
            bad[20_000] ^= 1 << bit;
            std::fs::write(&path, &bad).unwrap();
            flips += 1;

            let err = read_shard(&repo, "reviews", &ReadOptions::default()).unwrap_err();
            for part in [
                cfs.name.as_str(),
                &format!("[{segment}{inner}]"),
                "reviews shard 0",
            ] {
                assert!(err.contains(part), "bit {bit}: {part:?} not in: {err}");
            }
            // The silent case: without checks the damaged documents read as valid ones
            // (or, where the damage breaks their JSON, are skipped as bad sources).
            if let Ok(n) = read_shard(&repo, "reviews", &unchecked) {
                assert!(n <= clean, "{n} of {clean}");
                assert!(err.contains("checksum mismatch"), "bit {bit}: {err}");
                silent += 1;
            }
        }
        std::fs::write(&path, &original).unwrap();
    }
    assert!(
        flips > 0,
        "byte 20000 of no reviews compound blob lies in stored fields"
    );
    assert!(
        silent > 0,
        "no flip at byte 20000 reads silently without checks"
    );
    eprintln!("{flips} flips at byte 20000, {silent} silent without checks, all detected");
}

/// A flipped bit in the middle of every file the reader reads whole (segments_N, .si,
/// .fnm, .liv, soft-deletes doc values, .cfe) and in the stored fields inside every
/// compound file fails the read, naming the blob; each repaired copy reads again.
#[test]
fn flipped_bit_in_every_file_read_is_an_error_naming_the_blob() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    copy_dir(&demo(), &repo);
    for index in ["reviews", "books"] {
        let clean = read_shard(&repo, index, &ReadOptions::default()).unwrap();
        let (dir, files) = shard_files(&repo, index);
        let mut kinds = std::collections::BTreeSet::new();
        for f in &files {
            if f.is_virtual() {
                // Inline in the shard metadata (no blob to damage).
                continue;
            }
            let name = f.physical_name.as_str();
            let ext = name.rsplit('.').next().unwrap();
            let path = dir.join(&f.name);
            let original = std::fs::read(&path).unwrap();
            let positions: Vec<usize> = match ext {
                "si" | "fnm" | "liv" | "cfe" | "dvm" | "dvd" | "fdt" | "fdx" | "fdm" => {
                    // Doc values files of a segment's own (non-update) doc values are not
                    // read unless they hold soft deletes: only update files here.
                    if matches!(ext, "dvm" | "dvd") && name.matches('_').count() < 3 {
                        continue;
                    }
                    vec![original.len() / 2]
                }
                _ if name.starts_with("segments_") => vec![original.len() / 2],
                "cfs" => {
                    let cfe = blob_of(&files, &name.replace(".cfs", ".cfe"));
                    let cfe_bytes = match &cfe.meta_hash {
                        Some(inline) if cfe.is_virtual() => inline.0.clone(),
                        _ => std::fs::read(dir.join(&cfe.name)).unwrap(),
                    };
                    stored_fields_ranges(&cfe_bytes)
                        .into_iter()
                        .map(|(_, r)| (r.start + r.end) / 2)
                        .collect()
                }
                _ => continue,
            };
            for p in positions {
                let mut bad = original.clone();
                bad[p] ^= 0x04;
                std::fs::write(&path, &bad).unwrap();
                let err = read_shard(&repo, index, &ReadOptions::default())
                    .expect_err(&format!("{index} {name}: byte {p} flipped, read succeeded"));
                assert!(err.contains(&f.name), "{index} {name}: {err}");
                assert!(err.contains(name), "{index} {name}: {err}");
                kinds.insert(if name.starts_with("segments_") {
                    "segments"
                } else {
                    ext
                });
            }
            std::fs::write(&path, &original).unwrap();
        }
        assert_eq!(read_shard(&repo, index, &ReadOptions::default()), Ok(clean));
        eprintln!("{index}: damage detected in {kinds:?}");
        for kind in ["cfe", "cfs"] {
            assert!(kinds.contains(kind), "{index}: no {kind} file damaged");
        }
    }
}

/// Issue 25, point 1: a walk over part of a segment (an item of a split shard, a resumed
/// or successor item, a delta's selection) once checked nothing there and gave the
/// damaged documents. Every walk that reaches a segment whose stored fields fail their
/// checksum now fails before it gives the first document of that segment, naming the
/// file; documents of other segments before it come out unchanged.
#[test]
fn partial_walks_fail_before_the_first_document_of_a_damaged_segment() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    copy_dir(&demo(), &repo);
    let (dir, files) = shard_files(&repo, "reviews");
    // the compound blob whose stored fields hold byte 20000
    let (cfs, inner) = files
        .iter()
        .filter(|f| f.physical_name.ends_with(".cfs"))
        .find_map(|cfs| {
            let cfe = blob_of(&files, &cfs.physical_name.replace(".cfs", ".cfe"));
            let cfe_bytes = match &cfe.meta_hash {
                Some(inline) if cfe.is_virtual() => inline.0.clone(),
                _ => std::fs::read(dir.join(&cfe.name)).unwrap(),
            };
            stored_fields_ranges(&cfe_bytes)
                .into_iter()
                .find(|(n, r)| n == ".fdt" && r.contains(&20_000))
                .map(|(n, _)| (cfs.clone(), n))
        })
        .expect("a reviews compound blob with its .fdt at byte 20000");
    let segment = cfs.physical_name.trim_end_matches(".cfs").to_string();
    let path = dir.join(&cfs.name);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[20_000] ^= 0x04;
    std::fs::write(&path, &bytes).unwrap();

    let store = Arc::new(snapshot::LocalStore::open(&repo).unwrap());
    let repository = Repository::open(store).unwrap();
    let ix = repository
        .snapshot("demo")
        .unwrap()
        .index("reviews")
        .unwrap();
    let shard = ix.open_shard(0).unwrap();
    let reader = ShardReader::open_with(&shard, &ReadOptions::default()).unwrap();
    let seg = reader
        .lucene()
        .segments()
        .iter()
        .find(|s| s.name() == segment)
        .unwrap();
    let (base, len) = (seg.doc_base(), u64::from(seg.max_doc()));
    assert!(len > 4, "segment {segment} has {len} documents");
    let damaged = base..base + len;
    let expect_failure =
        |what: &str, docs: &mut dyn Iterator<Item = snapshot::Result<snapshot::EsDocument>>| {
            for d in docs {
                match d {
                    Ok(d) => assert!(
                        !damaged.contains(&d.global_doc_id),
                        "{what}: document {} of the damaged segment came out",
                        d.global_doc_id
                    ),
                    Err(e) => {
                        let e = redact::chain(&e);
                        assert!(e.contains("checksum mismatch"), "{what}: {e}");
                        assert!(e.contains(&cfs.name), "{what}: {e}");
                        assert!(e.contains(&format!("[{segment}{inner}]")), "{what}: {e}");
                        return;
                    }
                }
            }
            panic!("{what}: the walk ended without an error");
        };
    let mid = base + len / 2;
    for range in [
        base + 1..base + len,
        base..mid,
        mid..mid + 1,
        0..mid,
        mid..reader.max_doc(),
    ] {
        let what = format!("range {range:?}");
        expect_failure(&what, &mut reader.documents(range).unwrap());
    }
    // a selection (what a delta reads): one document of the segment
    let sets = reader
        .lucene()
        .segments()
        .iter()
        .map(|s| {
            let mut set = lucene::DocSet::empty(s.max_doc());
            if s.name() == segment {
                set.insert(s.max_doc() / 2);
            }
            set
        })
        .collect();
    let selection = lucene::Selection::new(sets);
    expect_failure("selection", &mut reader.selected_documents(&selection));
}
