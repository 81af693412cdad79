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
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report.to_json())?);
    } else {
        print!("{}", report.to_table());
    }
    Ok(if report.has_errors() { exit::FATAL } else { 0 })
}
