//! Damaged indexes: bytes flipped in, and truncations of, every file the reader uses in
//! several real indexes. With checksum verification every damage is an error naming the
//! damaged file; without it, small files still always fail (their CRC is always checked)
//! and nothing ever panics.

mod common;

use std::collections::{BTreeMap, BTreeSet};
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

/// Opens and reads every live document.
fn read_all(dir: Arc<dyn Directory>, opts: &OpenOptions) -> lucene::Result<u64> {
    let reader = IndexReader::open(dir, opts)?;
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
    let opts = fx.options();
    let verify = OpenOptions {
        verify_checksums: true,
        ..opts.clone()
    };
    let recording = Arc::new(Recording {
        inner: common::memory_dir(&files),
        opened: Mutex::new(BTreeSet::new()),
    });
    let live = read_all(recording.clone(), &verify).unwrap();
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
        let mut variants: Vec<(String, Vec<u8>)> = Vec::new();
        // Flips: the header, the footer and positions spread over the file.
        let mut positions: BTreeSet<usize> = (0..len.min(40)).collect();
        positions.extend(len.saturating_sub(16)..len);
        for _ in 0..flips_per_file {
            positions.insert((rng.next() % len as u64) as usize);
        }
        for &p in &positions {
            let mut b = original.clone();
            b[p] ^= 1 << (rng.next() % 8);
            variants.push((format!("bit flip at {p}"), b));
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
            variants.push((format!("truncated to {c}"), original[..c].to_vec()));
        }

        for (what, bytes) in variants {
            let mut damaged: BTreeMap<String, Vec<u8>> = files.clone();
            damaged.insert(name.clone(), bytes);
            let dir = common::memory_dir(&damaged);
            match read_all(dir.clone(), &verify) {
                Ok(_) => panic!(
                    "{} {name}: {what}: no error with checksum verification",
                    fx.name
                ),
                Err(e) => assert!(
                    e.to_string().contains(name.as_str()),
                    "{} {name}: {what}: the error does not name the file: {e}",
                    fx.name
                ),
            }
            let plain = read_all(dir, &opts);
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
