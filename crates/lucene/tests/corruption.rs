//! Damaged indexes: bytes flipped in, and truncations of, every file the reader uses in
//! several real indexes. With full verification ([`IndexReader::verify_checksums`]) every
//! damage is an error naming the damaged file. With the default checks made as the files
//! are read, a full walk fails on every damage to a byte it depends on (any file outside
//! a compound file; inside one, the stored-fields files and the header), naming the file.
//! Without checks, small files still always fail (their CRC is always checked), and
//! nothing ever panics.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::{Arc, Mutex};

use lucene::{Directory, DirectoryError, FileSlice, IndexReader, OpenOptions};

/// A directory that records which files were opened.
#[derive(Debug)]
struct Recording {
    inner: Arc<dyn Directory>,
    opened: Mutex<BTreeSet<String>>,
}

impl Directory for Recording {
    fn list_files(&self) -> Result<Vec<String>, DirectoryError> {
        self.inner.list_files()
    }
    fn open_file(&self, name: &str) -> Result<FileSlice, DirectoryError> {
        self.opened.lock().unwrap().insert(name.to_string());
        self.inner.open_file(name)
    }
}

/// Opens and reads every live document; with `full`, verifies every file first.
fn read_all(dir: Arc<dyn Directory>, opts: &OpenOptions, full: bool) -> lucene::Result<u64> {
    let reader = IndexReader::open(dir, opts)?;
    if full {
        reader.verify_checksums()?;
    }
    let mut docs = reader.documents(0..u64::MAX)?;
    let mut n = 0;
    while docs
        .next(&mut |_: &lucene::FieldInfo, _: lucene::StoredValue<'_>| Ok(()))?
        .is_some()
    {
        n += 1;
    }
    Ok(n)
}

/// Files whose CRC is checked on every open.
fn always_verified(name: &str) -> bool {
    name.starts_with("segments")
        || [".si", ".fnm", ".liv", ".cfe", ".dvm"]
            .iter()
            .any(|e| name.ends_with(e))
}

/// Byte ranges of a `.cfs` whose damage a checked walk must detect: its header and the
/// stored-fields files inside it.
fn checked_cfs_ranges(files: &BTreeMap<String, Vec<u8>>, cfs: &str) -> Vec<Range<usize>> {
    let segment = cfs.trim_end_matches(".cfs");
    let dir = common::memory_dir(files);
    let commit = lucene::commit::read_latest_commit(dir.as_ref()).unwrap();
    let id = commit
        .segments
        .iter()
        .find(|s| s.name == segment)
        .unwrap()
        .id;
    let cfe = &files[&format!("{segment}.cfe")];
    let entries = lucene::compound::parse_entries("cfe", cfe, &id).unwrap();
    let data_codec = match entries.codec {
        "Lucene50CompoundEntries" => "Lucene50CompoundData",
        _ => "Lucene90CompoundData",
    };
    let mut ranges = Vec::new();
    ranges.push(0..lucene::codec_util::index_header_len(data_codec, ""));
    for (name, offset, len) in &entries.entries {
        if [".fdt", ".fdx", ".fdm"].contains(&name.as_str()) {
            ranges.push(*offset as usize..(*offset + *len) as usize);
        }
    }
    ranges
}

/// Small deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn damage_every_file(fx: &common::Fixture, flips_per_file: usize) -> usize {
    let files = common::load_files(&fx.dir);
    let checked = OpenOptions {
        verify_checksums: true,
        ..fx.options()
    };
    let unchecked = OpenOptions {
        verify_checksums: false,
        ..fx.options()
    };
    let recording = Arc::new(Recording {
        inner: common::memory_dir(&files),
        opened: Mutex::new(BTreeSet::new()),
    });
    let live = read_all(recording.clone(), &checked, true).unwrap();
    assert_eq!(
        read_all(common::memory_dir(&files), &checked, false).unwrap(),
        live
    );
    assert!(live > 0, "{}", fx.name);
    let used: Vec<String> = recording.opened.lock().unwrap().iter().cloned().collect();
    assert!(
        used.iter().any(|f| f.starts_with("segments")),
        "{}",
        fx.name
    );

    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut mutations = 0;
    for name in &used {
        let original = &files[name];
        let len = original.len();
        // Positions a checked walk must notice when damaged.
        let walk_checks: Vec<Range<usize>> = if name.ends_with(".cfs") {
            checked_cfs_ranges(&files, name)
        } else {
            std::iter::once(0..len).collect()
        };
        // (what, damaged bytes, whether a checked walk must fail)
        let mut variants: Vec<(String, Vec<u8>, bool)> = Vec::new();
        // Flips: the header, the footer and positions spread over the file.
        let mut positions: BTreeSet<usize> = (0..len.min(40)).collect();
        positions.extend(len.saturating_sub(16)..len);
        for _ in 0..flips_per_file {
            positions.insert((rng.next() % len as u64) as usize);
        }
        for &p in &positions {
            let mut b = original.clone();
            b[p] ^= 1 << (rng.next() % 8);
            let must = walk_checks.iter().any(|r| r.contains(&p));
            variants.push((format!("bit flip at {p}"), b, must));
        }
        // Truncations.
        let mut cuts: BTreeSet<usize> = [
            0,
            1,
            len / 2,
            len.saturating_sub(1),
            len.saturating_sub(8),
            len.saturating_sub(16),
        ]
        .into_iter()
        .collect();
        for _ in 0..16 {
            cuts.insert((rng.next() % len as u64) as usize);
        }
        cuts.remove(&len);
        for &c in &cuts {
            variants.push((format!("truncated to {c}"), original[..c].to_vec(), true));
        }

        for (what, bytes, walk_must_fail) in variants {
            let mut damaged: BTreeMap<String, Vec<u8>> = files.clone();
            damaged.insert(name.clone(), bytes);
            let dir = common::memory_dir(&damaged);
            match read_all(dir.clone(), &checked, true) {
                Ok(_) => panic!(
                    "{} {name}: {what}: no error with full checksum verification",
                    fx.name
                ),
                Err(e) => assert!(
                    e.to_string().contains(name.as_str()),
                    "{} {name}: {what}: the error does not name the file: {e}",
                    fx.name
                ),
            }
            match read_all(dir.clone(), &checked, false) {
                Err(e) => assert!(
                    e.to_string().contains(name.as_str()),
                    "{} {name}: {what}: the error of a checked walk does not name the file: {e}",
                    fx.name
                ),
                Ok(_) => assert!(
                    !walk_must_fail,
                    "{} {name}: {what}: a checked walk read the damage without error",
                    fx.name
                ),
            }
            let plain = read_all(dir, &unchecked, false);
            if always_verified(name) {
                let e = plain.expect_err(&format!(
                    "{} {name}: {what}: small file damage accepted",
                    fx.name
                ));
                assert!(
                    e.to_string().contains(name.as_str()),
                    "{} {name}: {what}: the error does not name the file: {e}",
                    fx.name
                );
            } else if let Err(e) = plain {
                assert!(!e.to_string().is_empty());
            }
            mutations += 1;
        }
    }
    mutations
}

#[test]
fn damaged_files_are_errors_naming_the_file() {
    let Some(fixtures) =
        testkit::fixtures::require_fixtures("damaged_files_are_errors_naming_the_file")
    else {
        return;
    };
    let generated = common::generated(&fixtures);
    let bwc = common::bwc(&fixtures);
    let pick = |all: &[common::Fixture], name: &str| -> usize {
        all.iter()
            .position(|f| f.name == name)
            .unwrap_or_else(|| panic!("{name} missing"))
    };
    let mut total = 0;
    for name in [
        "l10-best_speed-cfs-soft",
        "l8-best_compression-nocfs-soft",
        "l9-best_compression-cfs-nested",
    ] {
        total += damage_every_file(&generated[pick(&generated, name)], 60);
    }
    for name in [
        "unsupported.5.5.5-nocfs",
        "index.8.6.0-nocfs",
        "dvupdates.10.0.0",
    ] {
        total += damage_every_file(&bwc[pick(&bwc, name)], 30);
    }
    eprintln!("{total} damaged variants, each rejected");
}
