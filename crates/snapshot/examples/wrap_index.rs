//! Wraps Lucene index directories as a snapshot repository (Elasticsearch 7.10 layout).
//!
//! ```text
//! cargo run -p snapshot --example wrap_index -- OUT_REPO SNAPSHOT INDEX=LUCENE_DIR[,LUCENE_DIR…]… \
//!     [--part-size BYTES] [--compression none|dfl|zstd] [--mapping FILE.json]
//! ```
//! Each `INDEX=DIR,DIR` becomes an index with one shard per directory. `--mapping` gives
//! the (type-less) mapping of every index; default: an empty `_doc` mapping.

use std::path::PathBuf;
use std::sync::Arc;

use snapshot::envelope::Compression;
use snapshot::write::{write_repository, IndexSpec, ShardSource, SnapshotSpec, WriteOptions};
use snapshot::TypeMapping;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut positional = Vec::new();
    let mut opts = WriteOptions::default();
    let mut mapping = serde_json::json!({});
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
            "--mapping" => {
                let path = args.next().ok_or("--mapping FILE")?;
                mapping = serde_json::from_slice(&std::fs::read(path)?)?;
            }
            _ => positional.push(a),
        }
    }
    if positional.len() < 3 {
        return Err("usage: wrap_index OUT_REPO SNAPSHOT INDEX=LUCENE_DIR[,LUCENE_DIR…]… [--part-size N] [--compression none|dfl|zstd] [--mapping FILE]".into());
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
            settings: serde_json::Map::new(),
            mappings: vec![TypeMapping {
                doc_type: "_doc".into(),
                mapping: mapping.clone(),
            }],
            aliases: serde_json::Map::new(),
            shards,
        });
    }
    write_repository(&out, &[spec], &opts)?;
    println!("wrote {}", out.display());
    Ok(())
}
