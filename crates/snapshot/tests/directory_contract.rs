//! A snapshot shard as a Lucene directory ([`snapshot::ShardDirectory`]) keeps the
//! `Directory` contract ([`lucene::contract`]): a file in one blob, a file cut into
//! `.partN` blobs read as one (ranges across the parts, past the end an error naming the
//! file, never an allocation sized by a bad range) and a virtual `v__` file held in the
//! metadata — over a local repository and over one on GCS (fake-gcs-server), whose blobs
//! are read through the read-ahead handles of the object store.

use std::sync::Arc;

use lucene::codec_util::FOOTER_MAGIC;
use lucene::contract::{self, pattern};
use lucene::names::base36;
use snapshot::xcontent::Binary;
use snapshot::{BlobStore, FileInfo, ShardDirectory};

/// `body` with a Lucene footer (magic, algorithm 0, CRC-32 of everything before it).
fn lucene_file(body: &[u8]) -> Vec<u8> {
    let mut f = body.to_vec();
    f.extend_from_slice(&FOOTER_MAGIC.to_be_bytes());
    f.extend_from_slice(&[0; 4]);
    let crc = crc32fast::hash(&f);
    f.extend_from_slice(&u64::from(crc).to_be_bytes());
    f
}

fn crc_of(file: &[u8]) -> String {
    base36(u64::from_be_bytes(
        file[file.len() - 8..].try_into().unwrap(),
    ))
}

const PART: u64 = 100_000;

/// One Lucene file of the shard and how the snapshot stores it.
struct File {
    physical: &'static str,
    bytes: Vec<u8>,
    blob: &'static str,
    part_size: Option<u64>,
    /// Kept in the shard metadata (`meta_hash`), not as a blob.
    is_virtual: bool,
}

/// The shard's Lucene files.
fn files() -> Vec<File> {
    let file = |physical, bytes, blob, part_size, is_virtual| File {
        physical,
        bytes,
        blob,
        part_size,
        is_virtual,
    };
    vec![
        file(
            "_0.fdt",
            lucene_file(&pattern(350_000)),
            "__fdt",
            Some(PART),
            false,
        ),
        file("_0.fdx", lucene_file(&pattern(300)), "__fdx", None, false),
        file("_0.si", lucene_file(&pattern(40)), "v__si", None, true),
    ]
}

/// The blobs to store (name in the shard directory, bytes) and the shard metadata.
fn shard() -> (Vec<(String, Vec<u8>)>, Vec<FileInfo>) {
    let mut blobs = Vec::new();
    let mut infos = Vec::new();
    for f in files() {
        if !f.is_virtual {
            match f.part_size {
                Some(p) => {
                    for (i, chunk) in f.bytes.chunks(p as usize).enumerate() {
                        blobs.push((format!("{}.part{i}", f.blob), chunk.to_vec()));
                    }
                }
                None => blobs.push((f.blob.to_string(), f.bytes.clone())),
            }
        }
        infos.push(FileInfo {
            name: f.blob.into(),
            physical_name: f.physical.into(),
            length: f.bytes.len() as u64,
            checksum: Some(crc_of(&f.bytes)),
            part_size: f.part_size,
            written_by: Some("9.7.0".into()),
            meta_hash: f.is_virtual.then(|| Binary(f.bytes.clone())),
            writer_uuid: None,
        });
    }
    (blobs, infos)
}

fn run(what: &str, store: Arc<dyn BlobStore>, dir: &str) {
    let (_, infos) = shard();
    let d = ShardDirectory::new(store, dir, &infos);
    let files = files();
    let expected: Vec<(&str, &[u8])> = files.iter().map(|f| (f.physical, &f.bytes[..])).collect();
    contract::directory(what, &d, &expected);
    d.verify_all().unwrap();
}

#[test]
fn local_shard_directory_keeps_the_contract() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("indices/i/0");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in shard().0 {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    let store =
        snapshot::open_blob_store(&root.path().display().to_string(), &Default::default()).unwrap();
    run("local shard", store, "indices/i/0");
}

#[test]
fn gcs_shard_directory_keeps_the_contract() {
    let Some(gcs) = testkit::services::FakeGcs::start("gcs_shard_directory_keeps_the_contract")
    else {
        return;
    };
    gcs.create_bucket("repo");
    for (name, bytes) in shard().0 {
        gcs.put_object("repo", &format!("base/indices/i/0/{name}"), &bytes);
    }
    let opts = snapshot::BlobStoreOptions {
        gcs_endpoint: Some(gcs.endpoint()),
        ..Default::default()
    };
    let store = snapshot::open_blob_store("gs://repo/base", &opts).unwrap();
    run("gcs shard", store, "indices/i/0");
}
