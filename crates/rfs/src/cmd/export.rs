//! `rfs export`: every live document of a snapshot as JSON lines or `_bulk` bodies, to a
//! directory (one file per index) or stdout. No cluster needed; shard files are read in
//! place from the repository, never copied to local disk.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::Context;
use snapshot::{EsDocument, ShardReader, ShardStats};

use super::common::RepositoryArgs;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub repo: RepositoryArgs,
    /// The snapshot to export.
    #[arg(long, env = "RFS_SNAPSHOT")]
    pub snapshot: String,
    /// Only indices matching this pattern (`*` and `?` wildcards); repeatable or
    /// comma-separated. Default: all.
    #[arg(
        long = "index",
        env = "RFS_INDEX",
        value_delimiter = ',',
        value_name = "PATTERN"
    )]
    pub index: Vec<String>,
    /// `jsonl`: one `{"_index","_id","_type"?,"_routing"?,"_source"}` object per line;
    /// `bulk`: action and source lines for `curl --data-binary @FILE …/_bulk` (no `_type`).
    #[arg(long, env = "RFS_FORMAT", value_enum, default_value_t = Format::Jsonl)]
    pub format: Format,
    /// A directory (one `<index>.jsonl` / `<index>.bulk` file per index; an index name that
    /// is not a safe file name is cleaned and given a hash suffix) or `-` for stdout.
    #[arg(long, env = "RFS_OUT", default_value = "-", value_name = "DIR|-")]
    pub out: String,
    /// Recompute every shard file's CRC-32 before reading it (reads each shard twice).
    #[arg(long, env = "RFS_VERIFY_CHECKSUMS")]
    pub verify_checksums: bool,
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One JSON object per document.
    Jsonl,
    /// `_bulk` request bodies.
    Bulk,
}

/// `*`/`?` wildcard match.
fn matches(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut pi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

fn json_str(out: &mut Vec<u8>, s: &str) {
    serde_json::to_writer(&mut *out, s).expect("writing a string to a Vec");
}

/// Appends one document in `format` to `out`.
pub fn render(out: &mut Vec<u8>, doc: &EsDocument, bulk: bool) {
    if bulk {
        out.extend_from_slice(b"{\"index\":{\"_index\":");
        json_str(out, &doc.index);
        out.extend_from_slice(b",\"_id\":");
        json_str(out, &doc.id);
        if let Some(r) = &doc.routing {
            out.extend_from_slice(b",\"routing\":");
            json_str(out, r);
        }
        out.extend_from_slice(b"}}\n");
        out.extend_from_slice(&doc.source);
        out.push(b'\n');
    } else {
        out.extend_from_slice(b"{\"_index\":");
        json_str(out, &doc.index);
        out.extend_from_slice(b",\"_id\":");
        json_str(out, &doc.id);
        if let Some(t) = &doc.doc_type {
            out.extend_from_slice(b",\"_type\":");
            json_str(out, t);
        }
        if let Some(r) = &doc.routing {
            out.extend_from_slice(b",\"_routing\":");
            json_str(out, r);
        }
        out.extend_from_slice(b",\"_source\":");
        out.extend_from_slice(&doc.source);
        out.extend_from_slice(b"}\n");
    }
}

#[derive(Default)]
struct IndexSummary {
    stats: ShardStats,
    failed_shards: Vec<(u32, String)>,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let repo = args.repo.open()?;
    let snap = repo
        .snapshot(&args.snapshot)
        .with_context(|| format!("snapshot {}", args.snapshot))?;
    if let Some(state) = snap.state() {
        if !state.is_restorable() {
            anyhow::bail!(
                "snapshot {} is {state}: it holds no readable data",
                snap.name()
            );
        }
    }
    let names: Vec<String> = snap
        .index_names()
        .into_iter()
        .filter(|n| args.index.is_empty() || args.index.iter().any(|p| matches(p, n)))
        .collect();
    if names.is_empty() && !args.index.is_empty() {
        anyhow::bail!(
            "no index of snapshot {} matches {:?}",
            snap.name(),
            args.index
        );
    }
    let bulk = args.format == Format::Bulk;
    let to_stdout = args.out == "-";
    let out_dir = PathBuf::from(&args.out);
    if !to_stdout {
        std::fs::create_dir_all(&out_dir)
            .with_context(|| format!("creating {}", out_dir.display()))?;
    }
    let mut indices = Vec::new();
    let mut total_docs = 0u64;
    for name in &names {
        let index = snap.index(name).with_context(|| format!("index {name}"))?;
        indices.push(index);
    }
    // Progress: documents over the sum of max_doc, known once shards are opened.
    let progress = std::io::stderr().is_terminal().then(|| {
        let pb = indicatif::ProgressBar::new(0);
        pb.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {msg} [{bar:30}] {pos}/{len} docs ({per_sec}, eta {eta})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        pb
    });
    let stdout = std::io::stdout();
    let mut stdout_lock =
        to_stdout.then(|| std::io::BufWriter::with_capacity(1 << 20, stdout.lock()));
    let mut summaries: BTreeMap<String, IndexSummary> = BTreeMap::new();
    let mut buf = Vec::with_capacity(1 << 20);
    let started = std::time::Instant::now();
    for index in &indices {
        let summary = summaries.entry(index.name().to_string()).or_default();
        let mut file_out = if to_stdout {
            None
        } else {
            let ext = if bulk { "bulk" } else { "jsonl" };
            // Index names come from the repository: never a path of their own.
            let file = migrate::naming::file_name_for(index.name());
            let path = out_dir.join(format!("{file}.{ext}"));
            let f = std::fs::File::create(&path)
                .with_context(|| format!("creating {}", path.display()))?;
            Some(std::io::BufWriter::with_capacity(1 << 20, f))
        };
        for s in 0..index.number_of_shards() {
            if let Some(reason) = index.shard_failure(s) {
                tracing::warn!(
                    index = index.name(),
                    shard = s,
                    "shard failed in the snapshot: {reason}"
                );
                summary.failed_shards.push((s, reason));
                continue;
            }
            let shard = index
                .open_shard(s)
                .with_context(|| format!("index {} shard {s}", index.name()))?;
            let reader = ShardReader::open_with(&shard, args.verify_checksums)
                .with_context(|| format!("index {} shard {s}", index.name()))?;
            if let Some(pb) = &progress {
                pb.inc_length(reader.max_doc());
                pb.set_message(format!("{}[{s}]", index.name()));
            }
            let mut docs = reader.documents(0..reader.max_doc())?;
            let mut last = 0u64;
            for doc in docs.by_ref() {
                let doc = doc.with_context(|| format!("index {} shard {s}", index.name()))?;
                render(&mut buf, &doc, bulk);
                if buf.len() >= 1 << 20 {
                    match (&mut stdout_lock, &mut file_out) {
                        (Some(w), _) => w.write_all(&buf)?,
                        (_, Some(w)) => w.write_all(&buf)?,
                        _ => {}
                    }
                    buf.clear();
                }
                if let Some(pb) = &progress {
                    pb.inc(doc.global_doc_id + 1 - last);
                }
                last = doc.global_doc_id + 1;
            }
            if let Some(pb) = &progress {
                pb.inc(reader.max_doc().saturating_sub(last));
            }
            summary.stats.add(docs.stats());
            total_docs += docs.stats().documents;
        }
        match (&mut stdout_lock, &mut file_out) {
            (Some(w), _) => w.write_all(&buf)?,
            (_, Some(w)) => {
                w.write_all(&buf)?;
                w.flush()?;
            }
            _ => {}
        }
        buf.clear();
    }
    if let Some(w) = &mut stdout_lock {
        w.flush()?;
    }
    if let Some(pb) = &progress {
        pb.finish_and_clear();
    }
    let secs = started.elapsed().as_secs_f64();
    let source_bytes: u64 = summaries.values().map(|s| s.stats.source_bytes).sum();
    crate::say!(
        "exported {total_docs} documents ({:.1} MB of _source) from snapshot {} in {secs:.1}s",
        source_bytes as f64 / 1e6,
        snap.name()
    );
    for (name, s) in &summaries {
        let st = &s.stats;
        let mut line = format!("  {name}: {} documents", st.documents);
        for (n, what) in [
            (st.without_source, "skipped: no _source"),
            (st.bad_source, "skipped: undecodable _source"),
            (st.bad_id, "skipped: bad _id"),
            (st.nested_skipped, "nested children skipped"),
        ] {
            if n > 0 {
                line.push_str(&format!(", {n} {what}"));
            }
        }
        for (shard, reason) in &s.failed_shards {
            line.push_str(&format!(", shard {shard} FAILED in snapshot ({reason})"));
        }
        crate::say!("{line}");
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards() {
        assert!(matches("*", "abc"));
        assert!(matches("posts_*", "posts_2024_01_01"));
        assert!(matches("p?sts*", "posts"));
        assert!(!matches("posts_*", "bwc_index_1"));
        assert!(matches("*_1", "bwc_index_1"));
        assert!(!matches("a", "ab"));
    }

    #[test]
    fn renders_lines() {
        let doc = EsDocument {
            index: "i".into(),
            id: "a\"b".into(),
            doc_type: Some("t".into()),
            routing: Some("r".into()),
            source: br#"{"x":1}"#.as_slice().into(),
            global_doc_id: 0,
        };
        let mut out = Vec::new();
        render(&mut out, &doc, false);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"_index\":\"i\",\"_id\":\"a\\\"b\",\"_type\":\"t\",\"_routing\":\"r\",\"_source\":{\"x\":1}}\n"
        );
        let mut out = Vec::new();
        render(&mut out, &doc, true);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"index\":{\"_index\":\"i\",\"_id\":\"a\\\"b\",\"routing\":\"r\"}}\n{\"x\":1}\n"
        );
    }
}
