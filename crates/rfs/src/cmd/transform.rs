//! `--transform` / `--transform-file` (a jq program over each document) for every command
//! that moves or verifies documents, and `rfs transform test`, which shows what each
//! document of a JSON-lines input becomes.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use engine::transform::{Shaped, Transform, Unroutable};
use engine::{Document, Op};
use programs::field_edits::FieldEdits;
use programs::program::JqProgram;
use programs::reshape::{DocumentProgram, Reshape};
use programs::transformer_config;

/// The document program of a migration.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TransformArgs {
    /// A jq program applied to every document, seen as
    /// `{"_index","_id","_type"?,"_routing","op","_source"}` with the source index name.
    /// It may change any field, `_index`, `_id` or `_routing`; yield nothing to filter the
    /// document out (counted as `filtered:program`, or `filtered:REASON` for an output
    /// `{"_filtered":"REASON"}`), or several documents (each with its own `_id`). An error
    /// is a `transform_error` in the failure log. Renames, prefixes and type routes apply
    /// to documents whose `_index` the program leaves alone. Try it with `rfs transform
    /// test`. Example: `._source.title |= ascii_downcase | del(._source.tmp)`.
    #[arg(
        long,
        env = "RFS_TRANSFORM",
        value_name = "PROGRAM",
        conflicts_with = "transform_file"
    )]
    pub transform: Option<String>,
    /// The --transform program read from a file.
    #[arg(long, env = "RFS_TRANSFORM_FILE", value_name = "FILE.jq")]
    pub transform_file: Option<PathBuf>,
    /// The reference tool's transformer configuration (JSON), so its transforms move over
    /// unchanged: `[{"JsonJSTransformerProvider": {"initializationScript": "…",
    /// "bindingsObject": "{}"}}]` (or `initializationScriptFile`). The script evaluates to
    /// `main(bindings)`, which returns a function from a list of documents
    /// `{operation_type, operation: {_index, _id, routing}, document}` (as Maps) to a list.
    /// Or JMESPath: `[{"JsonJMESPathTransformerProvider": {"script": "[?document.n > `1`]"}}]`
    /// (a list of `{"script"}` runs them in a row), applied to that list of documents; the
    /// result must be a list. Other providers are refused by name.
    #[arg(
        long,
        env = "RFS_DOC_TRANSFORMER_CONFIG",
        value_name = "JSON",
        conflicts_with_all = ["transform", "transform_file", "doc_transformer_config_file"]
    )]
    pub doc_transformer_config: Option<String>,
    /// --doc-transformer-config read from a file (script files in it are found relative
    /// to the file).
    #[arg(
        long,
        env = "RFS_DOC_TRANSFORMER_CONFIG_FILE",
        value_name = "FILE.json",
        conflicts_with_all = ["transform", "transform_file"]
    )]
    pub doc_transformer_config_file: Option<PathBuf>,
}

impl TransformArgs {
    /// `true` when a program is given.
    pub fn is_set(&self) -> bool {
        self.transform.is_some()
            || self.transform_file.is_some()
            || self.doc_transformer_config.is_some()
            || self.doc_transformer_config_file.is_some()
    }

    /// The compiled program, if any.
    pub fn program(&self) -> anyhow::Result<Option<Arc<dyn DocumentProgram>>> {
        if let Some(text) = &self.doc_transformer_config {
            let base = std::env::current_dir().unwrap_or_default();
            return Ok(Some(transformer_config::parse(
                text,
                "--doc-transformer-config",
                &base,
            )?));
        }
        if let Some(f) = &self.doc_transformer_config_file {
            let text = std::fs::read_to_string(f)
                .with_context(|| format!("--doc-transformer-config-file {}", f.display()))?;
            let base = f.parent().map(PathBuf::from).unwrap_or_default();
            let origin = format!("--doc-transformer-config-file {}", f.display());
            return Ok(Some(transformer_config::parse(&text, &origin, &base)?));
        }
        let (text, origin) = match (&self.transform, &self.transform_file) {
            (Some(t), _) => (t.clone(), "--transform".to_string()),
            (None, Some(f)) => (
                std::fs::read_to_string(f)
                    .with_context(|| format!("--transform-file {}", f.display()))?,
                format!("--transform-file {}", f.display()),
            ),
            (None, None) => return Ok(None),
        };
        let p = Arc::new(JqProgram::compile(&text).with_context(|| origin.clone())?);
        // the common edits (rename, copy, set, delete top-level fields; set _index) run
        // on the raw `_source` without building the document
        Ok(Some(match FieldEdits::recognise(p.clone()) {
            Some(fast) => {
                tracing::debug!(?fast, "the program runs on raw sources");
                Arc::new(fast)
            }
            None => p,
        }))
    }

    /// The program's digest for the migration's identity (its text as given: a config
    /// file's text, not the scripts it names), or `None` without a program.
    pub fn identity(&self) -> anyhow::Result<Option<String>> {
        let read = |f: &PathBuf, flag: &str| {
            std::fs::read_to_string(f).with_context(|| format!("{flag} {}", f.display()))
        };
        let (kind, text) = if let Some(t) = &self.doc_transformer_config {
            ("doc-transformer-config", t.clone())
        } else if let Some(f) = &self.doc_transformer_config_file {
            (
                "doc-transformer-config",
                read(f, "--doc-transformer-config-file")?,
            )
        } else if let Some(t) = &self.transform {
            ("jq", t.clone())
        } else if let Some(f) = &self.transform_file {
            ("jq", read(f, "--transform-file")?)
        } else {
            return Ok(None);
        };
        Ok(Some(engine::job::program_digest(kind, &text)))
    }

    /// `then` with the program in front of it (or `then` alone without a program: the
    /// pipeline's fast path stays as it is).
    pub fn wrap(&self, then: Arc<dyn Transform>) -> anyhow::Result<Arc<dyn Transform>> {
        Ok(match self.program()? {
            Some(p) => Arc::new(Reshape::new(p, then).with_identity(self.identity()?)),
            None => then,
        })
    }
}

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
