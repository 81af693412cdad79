//! `rfs transform test`, which shows what each document of a JSON-lines input becomes
//! under a document program (the flags: [`crate::args::TransformArgs`]).

use std::io::{BufRead, Write};
use std::sync::Arc;

use anyhow::Context;
use engine::transform::{Shaped, Transform, Unroutable};
use engine::{Document, Op};

use crate::args::TransformArgs;

/// `rfs transform …`.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Read documents as JSON lines from stdin (each `{"_index","_id","_source",…}` like
    /// `rfs export` writes, or a bare `_source` object), apply the program, and print what
    /// each becomes: one JSON line per output, `# filtered: REASON` or `# error: …`.
    Test(TestArgs),
}

#[derive(Debug, clap::Args)]
pub struct TestArgs {
    #[command(flatten)]
    pub transform: TransformArgs,
    /// The index of documents given as a bare `_source`.
    #[arg(long, env = "RFS_TRANSFORM_TEST_INDEX", default_value = "index")]
    pub index: String,
}

pub fn run(cmd: Command) -> anyhow::Result<u8> {
    match cmd {
        Command::Test(a) => test(a),
    }
}

/// Passes documents on unchanged (the program alone is shown).
struct Identity;
impl Transform for Identity {
    fn apply(&self, _: &mut Document) -> Result<(), Unroutable> {
        Ok(())
    }
}

fn test(args: TestArgs) -> anyhow::Result<u8> {
    if !args.transform.is_set() {
        anyhow::bail!(
            "give the program with --transform, --transform-file or --doc-transformer-config"
        );
    }
    let t = args.transform.wrap(Arc::new(Identity))?;
    let stdin = std::io::stdin().lock();
    let mut out = std::io::stdout().lock();
    let mut failed = false;
    let mut outputs = Vec::new();
    for (n, line) in stdin.lines().enumerate() {
        let line = line.context("reading stdin")?;
        if line.trim().is_empty() {
            continue;
        }
        let doc = match input_document(&line, &args.index, n as u64) {
            Ok(d) => d,
            Err(e) => {
                writeln!(out, "# error: line {}: {e}", n + 1)?;
                failed = true;
                continue;
            }
        };
        match t.apply_all(doc, &mut outputs) {
            Ok(Shaped::Docs) => {
                for d in outputs.drain(..) {
                    writeln!(out, "{}", output_line(&d))?;
                }
            }
            Ok(Shaped::Filtered(r)) => writeln!(out, "# filtered: {r}")?,
            Err(s) => {
                writeln!(out, "# error: line {}: {}: {}", n + 1, s.reason, s.detail)?;
                failed = true;
            }
        }
    }
    Ok(if failed {
        crate::exit::NOT_DELIVERED
    } else {
        0
    })
}

/// One input line as a document.
fn input_document(line: &str, index: &str, n: u64) -> anyhow::Result<Document> {
    let v: serde_json::Value = serde_json::from_str(line).context("not JSON")?;
    let obj = v.as_object().context("not a JSON object")?;
    let text = |k: &str| obj.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let (index, id, routing, doc_type, source, op) = if obj.contains_key("_source") {
        let op = match obj.get("op").and_then(|v| v.as_str()) {
            None | Some("index") => Op::Index,
            Some("create") => Op::Create,
            Some("delete") => Op::Delete,
            Some(other) => anyhow::bail!("op {other:?} is not index, create or delete"),
        };
        (
            text("_index").unwrap_or_else(|| index.to_string()),
            text("_id").unwrap_or_else(|| (n + 1).to_string()),
            text("_routing"),
            text("_type"),
            obj["_source"].to_string(),
            op,
        )
    } else {
        (
            index.to_string(),
            (n + 1).to_string(),
            None,
            None,
            line.to_string(),
            Op::Index,
        )
    };
    Ok(Document {
        position: coordination::Position::Doc(n),
        op,
        index: Arc::from(index),
        id,
        doc_type: doc_type.map(Arc::from),
        routing,
        source: bytes::Bytes::from(if op == Op::Delete {
            String::new()
        } else {
            source
        }),
    })
}

/// A transformed document as one JSON line, in the shape the program sees.
fn output_line(d: &Document) -> String {
    let mut m = serde_json::Map::new();
    m.insert("_index".into(), d.index.to_string().into());
    m.insert("_id".into(), d.id.clone().into());
    if let Some(t) = &d.doc_type {
        m.insert("_type".into(), t.to_string().into());
    }
    if let Some(r) = &d.routing {
        m.insert("_routing".into(), r.clone().into());
    }
    m.insert(
        "op".into(),
        programs::reshape::op_name(d.op).to_string().into(),
    );
    // The source as the program wrote it (numbers keep every digit).
    let mut line = serde_json::Value::Object(m).to_string();
    line.pop();
    line.push_str(",\"_source\":");
    if d.source.is_empty() {
        line.push_str("null");
    } else {
        line.push_str(&String::from_utf8_lossy(&d.source));
    }
    line.push('}');
    line
}
