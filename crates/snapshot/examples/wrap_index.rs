//! Wraps Lucene index directories as a snapshot repository (Elasticsearch 7.10 layout by
//! default).
//!
//! ```text
//! cargo run -p snapshot --example wrap_index -- OUT_REPO SNAPSHOT INDEX=LUCENE_DIR[,LUCENE_DIR…]… \
//!     [--part-size BYTES] [--compression none|dfl|zstd] [--mapping FILE.json]
//!     [--version-id ID] [--index-version ID] [--shard-path-type fixed|hashed_prefix|hashed_infix]
//!     [--base-path PATH]
//! ```
//! Each `INDEX=DIR,DIR` becomes an index with one shard per directory. `--mapping` gives
//! the (type-less) mapping of every index; default: an empty `_doc` mapping.
//! `--version-id` is the numeric id of the version that "took" the snapshot (8150099 for
//! Elasticsearch 8.15.0; OpenSearch ids have bit 0x08000000 set, e.g. 136447043 for 2.17.0),
//! `--index-version` the Elasticsearch 8.11+ IndexVersion written beside it. The OpenSearch
//! layouts: `--shard-path-type` hashes shard directories, `--base-path` writes OUT_REPO as
//! a bucket root with the repository under PATH.
//! `--setting KEY=VALUE` adds an index setting (repeatable). When OUT_REPO already holds a
//! repository, SNAPSHOT is added to it and only the Lucene files it does not hold yet
//! (same name, length and checksum) are stored, as Elasticsearch does.

use std::path::PathBuf;
use std::sync::Arc;

use snapshot::append::append_snapshot;
use snapshot::envelope::EnvelopeCompression;
use snapshot::shard_paths::ShardPathType;
use snapshot::write::{write_repository, IndexSpec, ShardSource, SnapshotSpec, WriteOptions};
use snapshot::TypeMapping;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut positional = Vec::new();
    let mut opts = WriteOptions::default();
    let mut mapping = serde_json::json!({});
    let mut version_id: Option<u32> = None;
    let mut index_version: Option<u32> = None;
    let mut settings = serde_json::Map::new();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--part-size" => {
                opts.part_size = Some(args.next().ok_or("--part-size BYTES")?.parse()?)
            }
            "--compression" => {
                opts.compression = match args.next().as_deref() {
                    Some("none") => EnvelopeCompression::None,
                    Some("dfl") => EnvelopeCompression::Deflate,
                    Some("zstd") => EnvelopeCompression::Zstd,
                    _ => return Err("--compression none|dfl|zstd".into()),
                }
            }
            "--setting" => {
                let kv = args.next().ok_or("--setting KEY=VALUE")?;
                let (k, v) = kv.split_once('=').ok_or("--setting KEY=VALUE")?;
                settings.insert(k.to_string(), serde_json::Value::String(v.to_string()));
            }
            "--mapping" => {
                let path = args.next().ok_or("--mapping FILE")?;
                mapping = serde_json::from_slice(&std::fs::read(path)?)?;
            }
            "--version-id" => version_id = Some(args.next().ok_or("--version-id ID")?.parse()?),
            "--index-version" => {
                index_version = Some(args.next().ok_or("--index-version ID")?.parse()?)
            }
            "--shard-path-type" => {
                opts.shard_path_type = match args.next().as_deref() {
                    Some("fixed") => ShardPathType::Fixed,
                    Some("hashed_prefix") => ShardPathType::HashedPrefix,
                    Some("hashed_infix") => ShardPathType::HashedInfix,
                    _ => return Err("--shard-path-type fixed|hashed_prefix|hashed_infix".into()),
                }
            }
            "--base-path" => opts.base_path = args.next().ok_or("--base-path PATH")?,
            _ => positional.push(a),
        }
    }
    if positional.len() < 3 {
        return Err("usage: wrap_index OUT_REPO SNAPSHOT INDEX=LUCENE_DIR[,LUCENE_DIR…]… [--part-size N] [--compression none|dfl|zstd] [--mapping FILE] [--setting KEY=VALUE]… [--version-id ID] [--index-version ID] [--shard-path-type fixed|hashed_prefix|hashed_infix] [--base-path PATH]".into());
    }
    let out = PathBuf::from(&positional[0]);
    let mut spec = SnapshotSpec::new(&positional[1]);
    if let Some(v) = version_id {
        spec.version_id = v;
    }
    spec.index_version = index_version;
    for arg in &positional[2..] {
        let (name, dirs) = arg.split_once('=').ok_or("expected INDEX=LUCENE_DIR")?;
        let mut shards = Vec::new();
        for d in dirs.split(',') {
            shards.push(ShardSource::Lucene(Arc::new(lucene::FsDirectory::open(d)?)));
        }
        spec.indices.push(IndexSpec {
            name: name.to_string(),
            settings: settings.clone(),
            mappings: vec![TypeMapping {
                doc_type: "_doc".into(),
                mapping: mapping.clone(),
            }],
            aliases: serde_json::Map::new(),
            shards,
            extra: serde_json::Map::new(),
        });
    }
    if out.join("index.latest").exists() {
        let a = append_snapshot(&out, &spec, &opts)?;
        println!(
            "added snapshot {} to {} (generation {}): {} files written ({} bytes), {} held already ({} bytes)",
            spec.name,
            out.display(),
            a.generation,
            a.files_written,
            a.bytes_written,
            a.files_reused,
            a.bytes_reused
        );
    } else {
        write_repository(&out, &[spec], &opts)?;
        println!("wrote {}", out.display());
    }
    Ok(())
}
