//! The storage ports' contract ([`lucene::contract`]) run over every implementation in
//! this crate: [`MemoryFile`], [`LocalFile`], a renamed slice (a file inside a compound
//! file), [`FsDirectory`], [`SliceDirectory`] (whole files and slices of a container, as a
//! compound file's directory holds them) and an `Arc` of a directory. The blob stores'
//! handles and the snapshot shard directory run the same suites in their crates.

use std::sync::Arc;

use lucene::contract::{self, pattern};
use lucene::{
    Directory, FileHandle, FileSlice, FsDirectory, LocalFile, MemoryFile, SliceDirectory,
};

/// The files every directory holds: empty, one byte, small, and larger than the read
/// sizes of the suite.
fn files() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("_0.si", Vec::new()),
        ("_0.fnm", vec![42]),
        ("_0.fdx", pattern(100)),
        ("_0.fdt", pattern(300_007)),
    ]
}

fn borrowed<'a>(files: &'a [(&'static str, Vec<u8>)]) -> Vec<(&'static str, &'a [u8])> {
    files.iter().map(|(n, b)| (*n, &b[..])).collect()
}

#[test]
fn memory_file_keeps_the_contract() {
    for (name, bytes) in files() {
        let h = MemoryFile::new(name, bytes.clone());
        contract::file_handle(&format!("memory {name}"), &h, &bytes);
    }
}

#[test]
fn local_file_keeps_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in files() {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        let h = LocalFile::open(&path, path.display().to_string()).unwrap();
        contract::file_handle(&format!("local {name}"), &h, &bytes);
    }
    // Opening a missing file: NotFound naming it.
    let path = dir.path().join("_9.cfs");
    let e = LocalFile::open(&path, path.display().to_string()).unwrap_err();
    assert!(
        matches!(e, lucene::DirectoryError::NotFound { .. }) && e.to_string().contains("_9.cfs"),
        "{e:?}"
    );
}

#[test]
fn renamed_slice_keeps_the_contract() {
    let container = pattern(400_000);
    let outer = FileSlice::from_bytes("_0.cfs", container.clone());
    let inner = outer
        .slice(1_000..301_007)
        .unwrap()
        .renamed("_0.cfs[_0.fdt]");
    contract::file_slice("renamed", &inner, &container[1_000..301_007]);
}

#[test]
fn fs_directory_keeps_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let files = files();
    for (name, bytes) in &files {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    let fs = FsDirectory::open(dir.path()).unwrap();
    contract::directory("fs", &fs, &borrowed(&files));
    let shared: Arc<dyn Directory> = Arc::new(fs);
    contract::directory("Arc<fs>", &shared, &borrowed(&files));
}

#[test]
fn slice_directory_keeps_the_contract() {
    let files = files();
    // Whole files, each its own memory file.
    let mut whole = SliceDirectory::new();
    for (name, bytes) in &files {
        whole.insert(*name, FileSlice::from_bytes(*name, bytes.clone()));
    }
    contract::directory("slices", &whole, &borrowed(&files));

    // Slices of one container, named as a compound file's directory names them.
    let mut container = Vec::new();
    let mut packed = SliceDirectory::new();
    let mut at = Vec::new();
    for (_, bytes) in &files {
        container.extend_from_slice(&pattern(17));
        at.push(container.len() as u64);
        container.extend_from_slice(bytes);
    }
    let cfs = FileSlice::from_bytes("_0.cfs", container);
    for ((name, bytes), start) in files.iter().zip(at) {
        let slice = cfs.slice(start..start + bytes.len() as u64).unwrap();
        packed.insert(*name, slice.renamed(format!("_0.cfs[{name}]")));
    }
    contract::directory("compound slices", &packed, &borrowed(&files));
}

/// The suite itself fails on a handle that breaks the contract: one that reads past its
/// end without an error.
#[test]
#[should_panic(expected = "gave")]
fn the_suite_catches_a_read_past_the_end() {
    #[derive(Debug)]
    struct Lenient(Vec<u8>);
    impl FileHandle for Lenient {
        fn name(&self) -> &str {
            "lenient"
        }
        fn len(&self) -> u64 {
            self.0.len() as u64
        }
        fn read_bytes(
            &self,
            r: std::ops::Range<u64>,
        ) -> Result<bytes::Bytes, lucene::DirectoryError> {
            let end = (r.end as usize).min(self.0.len());
            let start = (r.start as usize).min(end);
            Ok(bytes::Bytes::copy_from_slice(&self.0[start..end]))
        }
    }
    let bytes = pattern(10);
    contract::file_handle("lenient", &Lenient(bytes.clone()), &bytes);
}
