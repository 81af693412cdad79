//! `rfs metadata evaluate|migrate`: templates and indices from a snapshot onto a target.
//! `evaluate` only reads the target (GET/HEAD) and prints what `migrate` would do;
//! `migrate` creates what is missing and never modifies what exists.

use anyhow::Context;
use migrate::metadata::{Report, SourceMetadata};

use super::common::{FilterArgs, SourceArgs, TargetArgs};

use crate::exit;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Show what would be created, skipped or changed and why; writes nothing.
    Evaluate(Args),
    /// Create the missing templates and indices; print the same report with outcomes.
    Migrate(Args),
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
    options: &migrate::metadata::Options,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let snap = args.source.open()?;
    let mode = match args.source.rebuild.rebuild_source {
        super::common::RebuildSource::Auto => "auto",
        super::common::RebuildSource::Off => "off",
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

pub fn run(cmd: Command) -> anyhow::Result<u8> {
    let (args, write) = match cmd {
        Command::Evaluate(a) => (a, false),
        Command::Migrate(a) => (a, true),
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
            migrate::metadata::migrate(&source, &client, &options).await
        } else {
            migrate::metadata::evaluate(&source, &client, &options).await
        };
        r.context("metadata migration")
    })?;
    let sourceless = sourceless_indices(&args, &options)?;
    if args.json {
        let mut v = report.to_json();
        if let Some(o) = v.as_object_mut() {
            o.insert("sourceless".into(), serde_json::Value::Array(sourceless));
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", report.to_table());
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
