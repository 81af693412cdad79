//! `rfs metadata evaluate|migrate|convert`: templates and indices from a snapshot onto a
//! target. `evaluate` only reads the target (GET/HEAD) and prints what `migrate` would do;
//! `migrate` creates what is missing and never modifies what exists; `convert` converts
//! one mapping for a target version with no snapshot and no cluster.

use std::path::PathBuf;

use anyhow::Context;
use metadata::{ConversionSeverity, ProductVersion, Report, SourceMetadata};
use serde_json::json;

use crate::args::{FilterArgs, KnnEngineArg, SourceArgs, TargetArgs, TargetSource};

use crate::exit;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Show what would be created, skipped or changed and why; writes nothing.
    Evaluate(Args),
    /// Create the missing templates and indices; print the same report with outcomes.
    Migrate(Args),
    /// Convert one mapping (or index body) for a target version and print it with every
    /// conversion, before and after, and what blocks it; no snapshot or cluster needed.
    ///
    /// Example: rfs metadata convert --mapping logs.json --from es-8.15 --to os-2.19
    Convert(ConvertArgs),
}

#[derive(Debug, clap::Args)]
pub struct ConvertArgs {
    /// The mapping to convert: `{"properties": …}` (typed or not), an index body
    /// (`{"settings", "mappings", "aliases"}`), or what `GET <index>` answers for one index.
    #[arg(long, env = "RFS_MAPPING", value_name = "FILE.json")]
    pub mapping: PathBuf,
    /// The version the mapping comes from: `es-MAJOR.MINOR` or `os-MAJOR.MINOR`.
    #[arg(long, env = "RFS_FROM", value_name = "VERSION", value_parser = parse_version)]
    pub from: ProductVersion,
    /// The version to convert for: `es-MAJOR.MINOR` or `os-MAJOR.MINOR` (e.g. os-2.19).
    #[arg(long, env = "RFS_TO", value_name = "VERSION", value_parser = parse_version)]
    pub to: ProductVersion,
    /// The k-NN engine of converted vector fields (default: by target version).
    #[arg(long, env = "RFS_KNN_ENGINE", value_enum, value_name = "ENGINE")]
    pub knn_engine: Option<KnnEngineArg>,
    /// `enable`: store `_source` on the target for a mapping that disables it.
    #[arg(long, env = "RFS_TARGET_SOURCE", value_enum, default_value_t = TargetSource::Keep, value_name = "MODE")]
    pub target_source: TargetSource,
    /// Print one JSON document (`body`, `conversions`, `warnings`, `blockers`) instead of
    /// text.
    #[arg(long, env = "RFS_JSON")]
    pub json: bool,
}

fn parse_version(s: &str) -> Result<ProductVersion, product::LabelError> {
    ProductVersion::parse_labeled(s)
}

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Print the report as one JSON document instead of a table.
    #[arg(long, env = "RFS_JSON")]
    pub json: bool,
}

impl Args {
    /// Reads the snapshot's templates and index metadata.
    pub fn source(&self) -> anyhow::Result<SourceMetadata> {
        let snap = self.source.open()?;
        SourceMetadata::from_snapshot(&snap)
            .with_context(|| format!("metadata of snapshot {}", self.source.snapshot))
    }
}

/// Indices whose documents have no stored `_source`: what a rebuild cannot hold.
fn sourceless_indices(
    args: &Args,
    options: &metadata::Options,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let snap = args.source.open()?;
    let mode = match args.source.rebuild.rebuild_source {
        crate::args::RebuildSource::Auto => "auto",
        crate::args::RebuildSource::Off => "off",
    };
    let mut out = Vec::new();
    for name in snap.index_names() {
        let listed = if options.indices.is_empty() {
            !name.starts_with('.')
        } else {
            options.indices.matches(&name)
        };
        if !listed {
            continue;
        }
        let index = snap.index(&name)?;
        let md = index.metadata();
        if !md.source_not_stored() {
            continue;
        }
        let plan = md.source_plan();
        out.push(serde_json::json!({
            "index": name,
            "mode": mode,
            "fields": plan.fields.iter().map(|f| f.path.clone()).collect::<Vec<_>>(),
            "lost": plan.lost,
        }));
    }
    Ok(out)
}

/// With a document program: where the documents of each index go, found by running the
/// program on a probe document of that index (`{"_id": "probe", "_source": {}}`). Exact
/// when the program maps `_index` from the index name alone; otherwise it says so.
fn transform_targets(
    args: &Args,
    source: &metadata::SourceMetadata,
    options: &metadata::Options,
) -> anyhow::Result<Option<Vec<serde_json::Value>>> {
    let Some(program) = args.filter.transform.program()? else {
        return Ok(None);
    };
    let routing = metadata::DocumentRouting::new(source, options);
    let mut out = Vec::new();
    for index in source.indices.iter().map(|i| &i.name) {
        if !routing.includes(index) {
            continue;
        }
        let probe = engine::Document {
            position: coordination::Position::Doc(0),
            op: engine::Op::Index,
            index: index.as_str().into(),
            id: "probe".into(),
            doc_type: None,
            routing: None,
            source: bytes::Bytes::from_static(b"{}"),
        };
        let mut docs = Vec::new();
        let goes_to = match program.reshape(&probe, &mut docs) {
            Err(e) => format!("depends on the document (the probe document fails: {e})"),
            Ok(_) if docs.is_empty() => {
                "depends on the document (the probe document is filtered)".to_string()
            }
            Ok(_) => {
                let mut targets: Vec<String> = docs
                    .iter()
                    .map(|d| {
                        if *d.index == **index {
                            format!(
                                "{} (unchanged by the program)",
                                naming_target(options, index)
                            )
                        } else {
                            d.index.to_string()
                        }
                    })
                    .collect();
                targets.dedup();
                targets.join(", ")
            }
        };
        out.push(json!({"index": index, "documents_go_to": goes_to}));
    }
    Ok(Some(out))
}

/// The target name `--rename`/prefix/suffix give `index`.
fn naming_target(options: &metadata::Options, index: &str) -> String {
    options.naming.target(index)
}

pub fn run(cmd: Command) -> anyhow::Result<u8> {
    let (args, write) = match cmd {
        Command::Evaluate(a) => (a, false),
        Command::Migrate(a) => (a, true),
        Command::Convert(a) => return convert(a),
    };
    let options = args.filter.options()?;
    let source = args.source()?;
    let config = args.target.config()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let report: Report = rt.block_on(async {
        let client = cluster::Client::new(config).context("target client")?;
        let r = if write {
            metadata::migrate(&source, &client, &options).await
        } else {
            metadata::evaluate(&source, &client, &options).await
        };
        r.context("metadata migration")
    })?;
    let sourceless = sourceless_indices(&args, &options)?;
    let renamed = transform_targets(&args, &source, &options)?;
    if args.json {
        let mut v = report.to_json();
        if let Some(o) = v.as_object_mut() {
            o.insert("sourceless".into(), serde_json::Value::Array(sourceless));
            if let Some(r) = &renamed {
                o.insert("transform".into(), serde_json::Value::Array(r.clone()));
            }
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", report.to_table());
        for r in renamed.iter().flatten() {
            println!(
                "transform: index {} → {}",
                r["index"].as_str().unwrap_or(""),
                r["documents_go_to"].as_str().unwrap_or("")
            );
        }
        for s in &sourceless {
            println!(
                "index {}: _source not stored; documents rebuilt from doc values and stored fields (--rebuild-source {})",
                s["index"].as_str().unwrap_or(""),
                s["mode"].as_str().unwrap_or("")
            );
            for l in s["lost"].as_array().into_iter().flatten() {
                println!(
                    "  cannot rebuild {}: {}",
                    l["path"].as_str().unwrap_or(""),
                    l["reason"].as_str().unwrap_or("")
                );
            }
        }
    }
    Ok(if report.has_errors() { exit::FATAL } else { 0 })
}

/// `rfs metadata convert`: exit 0 when the mapping converts, 1 when something blocks it.
fn convert(args: ConvertArgs) -> anyhow::Result<u8> {
    let text = std::fs::read(&args.mapping)
        .with_context(|| format!("reading {}", args.mapping.display()))?;
    let body: serde_json::Value = serde_json::from_slice(&text)
        .with_context(|| format!("{}: not JSON", args.mapping.display()))?;
    let options = metadata::Options {
        convert: metadata::ConvertOptions {
            knn_engine: args.knn_engine.map(Into::into),
            enable_source: args.target_source == TargetSource::Enable,
        },
        ..Default::default()
    };
    let (converted, notes) =
        metadata::convert_definition(&body, Some(args.from), args.to, &options)
            .with_context(|| args.mapping.display().to_string())?;
    let blocked = notes.blocked();
    if args.json {
        let out = json!({
            "from": args.from,
            "to": args.to,
            "blocked": blocked,
            "body": converted,
            "conversions": notes.conversions,
            "transformations": notes.transformations,
            "warnings": notes.warnings,
            "blockers": notes.blockers,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        let mut out = format!("convert: {} → {}\n", args.from, args.to);
        let count =
            |s: ConversionSeverity| notes.conversions.iter().filter(|c| c.severity == s).count();
        out.push_str(&format!(
            "{} conversions ({} changes, {} with warnings, {} BLOCKING)\n",
            notes.conversions.len(),
            count(ConversionSeverity::Change),
            count(ConversionSeverity::Warning),
            count(ConversionSeverity::Blocking)
        ));
        metadata::plan::write_conversions(&mut out, &notes.conversions);
        for t in &notes.transformations {
            out.push_str(&format!("change: {t}\n"));
        }
        for w in &notes.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        for b in &notes.blockers {
            out.push_str(&format!("BLOCKING: {b}\n"));
        }
        out.push_str(&format!(
            "converted:\n{}\n",
            serde_json::to_string_pretty(&converted)?
        ));
        if blocked {
            out.push_str(
                "BLOCKED: the target cannot hold this mapping as it is; nothing would be created\n",
            );
        }
        print!("{out}");
    }
    Ok(if blocked { exit::FATAL } else { 0 })
}
