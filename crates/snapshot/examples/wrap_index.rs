//! Wraps Lucene index directories as a snapshot repository (Elasticsearch 7.10 layout).
//!
//! ```text
//! cargo run -p snapshot --example wrap_index -- OUT_REPO SNAPSHOT INDEX=LUCENE_DIR[,LUCENE_DIR…]… \
//!     [--part-size BYTES] [--compression none|dfl|zstd] [--mapping FILE.json]
//! ```
//! Each `INDEX=DIR,DIR` becomes an index with one shard per directory. `--mapping` gives
//! the (type-less) mapping of every index; default: an empty `_doc` mapping;
//! `--setting KEY=VALUE` adds an index setting (repeatable). When OUT_REPO already holds a
//! repository, SNAPSHOT is added to it and only the Lucene files it does not hold yet
//! (same name, length and checksum) are stored, as Elasticsearch does.

use std::path::PathBuf;
use std::sync::Arc;

use snapshot::append::append_snapshot;
use snapshot::envelope::Compression;
use snapshot::write::{write_repository, IndexSpec, ShardSource, SnapshotSpec, WriteOptions};
use snapshot::TypeMapping;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut positional = Vec::new();
    let mut opts = WriteOptions::default();
    let mut mapping = serde_json::json!({});
    let mut settings = serde_json::Map::new();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--part-size" => {
                opts.part_size = Some(args.next().ok_or("--part-size BYTES")?.parse()?)
            }
            "--compression" => {
                opts.compression = match args.next().as_deref() {
                    Some("none") => Compression::None,
                    Some("dfl") => Compression::Deflate,
                    Some("zstd") => Compression::Zstd,
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
            _ => positional.push(a),
        }
    }
    if positional.len() < 3 {
        return Err("usage: wrap_index OUT_REPO SNAPSHOT INDEX=LUCENE_DIR[,LUCENE_DIR…]… [--part-size N] [--compression none|dfl|zstd] [--mapping FILE] [--setting KEY=VALUE]…".into());
    }
    let out = PathBuf::from(&positional[0]);
    let mut spec = SnapshotSpec::new(&positional[1]);
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
