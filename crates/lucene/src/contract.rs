//! The contract of the storage ports, [`FileHandle`] and [`Directory`], as one suite each
//! that every implementation runs (in the manner of tantivy's `src/directory/tests.rs`: one
//! suite over the trait object, each implementation a small test that calls it). Built with
//! the `test-util` feature, so that crates with implementations of their own (blob stores,
//! snapshot shards) run the same checks.
//!
//! What holds for every handle: its length; the bytes of every range (empty ones, the
//! first and the last byte, the whole, ranges of odd sizes) through `read_bytes` and
//! `read_into`; a range past the end, a reversed range and an offset near `u64::MAX` are
//! errors naming the file — never a panic, never an allocation sized by the bad range; two
//! threads reading at once both read the right bytes. For a directory: its listing, each
//! file as above, and a missing file is [`DirectoryError::NotFound`] naming it.
//!
//! The suites panic with a message naming the implementation and the case that failed.

use std::ops::Range;

use bytes::Bytes;

use crate::directory::{Directory, DirectoryError, FileHandle, FileSlice};

/// The ranges every suite reads from a file of `len` bytes.
fn ranges(len: u64) -> Vec<Range<u64>> {
    let mut out = vec![0..0, 0..len, len..len];
    if len > 0 {
        out.extend([0..1, len - 1..len, len / 2..len / 2, len / 2..len]);
    }
    // Odd sizes from odd places, clipped to the file.
    for (start, size) in [(1, 2), (3, 7), (13, 1), (len / 3, 4_099), (len / 5, 65_537)] {
        if start < len {
            out.push(start..(start + size).min(len));
        }
    }
    out
}

/// `read_bytes` of one file: a range's bytes.
type ReadBytes<'a> = &'a (dyn Fn(Range<u64>) -> Result<Bytes, DirectoryError> + Sync);
/// `read_into` of one file: bytes from an offset into a buffer.
type ReadInto<'a> = &'a (dyn Fn(u64, &mut [u8]) -> Result<(), DirectoryError> + Sync);

/// The reads each suite makes: `read_bytes` and `read_into` of one file.
struct Reads<'a> {
    what: &'a str,
    name: String,
    len: u64,
    read_bytes: ReadBytes<'a>,
    read_into: ReadInto<'a>,
}

impl Reads<'_> {
    fn check(&self, expected: &[u8]) {
        let what = self.what;
        let len = expected.len() as u64;
        assert_eq!(self.len, len, "{what}: length");

        // Every range reads the bytes at its offsets, through both calls.
        for r in ranges(len) {
            let want = &expected[r.start as usize..r.end as usize];
            let got = (self.read_bytes)(r.clone())
                .unwrap_or_else(|e| panic!("{what}: read_bytes {r:?}: {e}"));
            assert!(&got[..] == want, "{what}: read_bytes {r:?} differs");
            let mut buf = vec![0xA5; want.len()];
            (self.read_into)(r.start, &mut buf)
                .unwrap_or_else(|e| panic!("{what}: read_into {r:?}: {e}"));
            assert!(buf == want, "{what}: read_into {r:?} differs");
        }
        // The whole file in pieces equals the whole.
        let mut whole = Vec::with_capacity(expected.len());
        let mut at = 0;
        while at < len {
            let end = (at + 7_919).min(len);
            whole.extend_from_slice(&(self.read_bytes)(at..end).unwrap());
            at = end;
        }
        assert!(whole == expected, "{what}: pieces differ from the whole");

        // Out of range: an error naming the file, whatever the range.
        let (hi, lo) = (len.min(5), len.min(5) / 2);
        let bad = [
            len..len + 1,
            0..len + 1,
            len.saturating_sub(1)..len + 5,
            len + 10..len + 20,
            hi..lo.min(hi.saturating_sub(1)),
            u64::MAX - 1..u64::MAX,
            0..u64::MAX,
            u64::MAX..u64::MAX,
        ];
        for r in bad {
            if r.start == r.end && r.start <= len {
                continue; // an empty range inside the file (e.g. `0..0` of an empty file)
            }
            match (self.read_bytes)(r.clone()) {
                Ok(b) => panic!(
                    "{what}: read_bytes {r:?} of {len} bytes gave {} bytes",
                    b.len()
                ),
                Err(e) => self.names_file(&e, &format!("read_bytes {r:?}")),
            }
        }
        let mut four = [0u8; 4];
        for start in [len, len.saturating_sub(3), u64::MAX - 1, u64::MAX] {
            if start.checked_add(4).is_some_and(|end| end <= len) {
                continue;
            }
            match (self.read_into)(start, &mut four) {
                Ok(()) => panic!("{what}: read_into 4 bytes at {start} of {len} succeeded"),
                Err(e) => self.names_file(&e, &format!("read_into at {start}")),
            }
        }

        // Two threads at once, each over every range.
        std::thread::scope(|s| {
            for t in 0..2 {
                s.spawn(move || {
                    for _ in 0..3 {
                        for r in ranges(len).into_iter().rev().skip(t) {
                            let got = (self.read_bytes)(r.clone()).unwrap_or_else(|e| {
                                panic!("{what}: thread {t}: read_bytes {r:?}: {e}")
                            });
                            assert!(
                                got[..] == expected[r.start as usize..r.end as usize],
                                "{what}: thread {t}: read_bytes {r:?} differs"
                            );
                        }
                    }
                });
            }
        });
    }

    fn names_file(&self, e: &DirectoryError, call: &str) {
        let what = self.what;
        assert!(
            e.to_string().contains(&self.name),
            "{what}: {call}: the error does not name {:?}: {e} ({e:?})",
            self.name
        );
    }
}

/// Checks [`FileHandle`]'s contract over `handle`, which holds `expected`. `what` names
/// the implementation in failures.
pub fn file_handle(what: &str, handle: &dyn FileHandle, expected: &[u8]) {
    assert_eq!(handle.is_empty(), expected.is_empty(), "{what}: is_empty");
    let read_bytes = |r: Range<u64>| handle.read_bytes(r);
    let read_into = |start: u64, buf: &mut [u8]| handle.read_into(start, buf);
    Reads {
        what,
        name: handle.name().to_string(),
        len: handle.len(),
        read_bytes: &read_bytes,
        read_into: &read_into,
    }
    .check(expected);
}

/// Checks a [`FileSlice`] (what [`Directory::open_file`] gives) the same way, and a
/// sub-slice of it.
pub fn file_slice(what: &str, slice: &FileSlice, expected: &[u8]) {
    let read_bytes = |r: Range<u64>| slice.read_bytes(r);
    let read_into = |start: u64, buf: &mut [u8]| slice.read_into(start, buf);
    Reads {
        what,
        name: slice.name().to_string(),
        len: slice.len(),
        read_bytes: &read_bytes,
        read_into: &read_into,
    }
    .check(expected);
    assert_eq!(slice.is_empty(), expected.is_empty(), "{what}: is_empty");
    assert!(
        &slice.read_all().unwrap()[..] == expected,
        "{what}: read_all"
    );
    if expected.len() >= 3 {
        let inner = slice.slice(1..expected.len() as u64 - 1).unwrap();
        let want = &expected[1..expected.len() - 1];
        assert!(&inner.read_all().unwrap()[..] == want, "{what}: sub-slice");
        assert!(
            inner.read_bytes(0..want.len() as u64 + 1).is_err(),
            "{what}: a sub-slice reads past its end"
        );
    }
}

/// Checks [`Directory`]'s contract over `dir`, which holds exactly `files` (name, bytes):
/// its listing, each file as [`file_slice`] checks it, `exists`, a missing file
/// (`NotFound` naming it), and two threads opening and reading files at once.
pub fn directory(what: &str, dir: &dyn Directory, files: &[(&str, &[u8])]) {
    let mut listed = dir
        .list_files()
        .unwrap_or_else(|e| panic!("{what}: list_files: {e}"));
    listed.sort();
    let mut names: Vec<String> = files.iter().map(|(n, _)| n.to_string()).collect();
    names.sort();
    assert_eq!(listed, names, "{what}: list_files");
    for (name, bytes) in files {
        let slice = dir
            .open_file(name)
            .unwrap_or_else(|e| panic!("{what}: open_file {name}: {e}"));
        assert!(
            slice.name().contains(name),
            "{what}: the slice of {name} is named {:?}",
            slice.name()
        );
        file_slice(&format!("{what} {name}"), &slice, bytes);
        assert!(dir.exists(name).unwrap(), "{what}: exists {name}");
    }
    let missing = "_missing_9.fdt";
    match dir.open_file(missing) {
        Ok(s) => panic!("{what}: opening {missing} gave {s:?}"),
        Err(e) => assert!(
            matches!(e, DirectoryError::NotFound { .. }) && e.to_string().contains(missing),
            "{what}: opening {missing}: {e:?}"
        ),
    }
    assert!(!dir.exists(missing).unwrap(), "{what}: exists {missing}");
    std::thread::scope(|s| {
        for t in 0..2usize {
            s.spawn(move || {
                for (name, bytes) in files.iter().cycle().skip(t).take(files.len() * 3) {
                    let got = dir.open_file(name).and_then(|f| f.read_all());
                    match got {
                        Ok(b) => assert!(&b[..] == *bytes, "{what}: thread {t}: {name} differs"),
                        Err(e) => panic!("{what}: thread {t}: {name}: {e}"),
                    }
                }
            });
        }
    });
}

/// Bytes for a test file of `len` bytes: not periodic over short spans, so that a read
/// at a wrong offset is seen.
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect()
}
