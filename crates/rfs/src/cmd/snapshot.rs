//! `rfs snapshot create`: take a snapshot on a source cluster under a chosen name and wait
//! for it. Idempotent: an existing snapshot of that name is waited for, not re-created.

use crate::args::SourceClusterArgs;
use crate::exit;
use crate::runtime::runtime;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Create snapshot NAME in a repository of the source cluster and wait until it is done.
    Create(CreateArgs),
}

#[derive(Debug, clap::Args)]
#[command(
    mut_arg("source_cluster", |a| a.required(true)),
    mut_arg("source_repository", |a| a.required(true))
)]
pub struct CreateArgs {
    #[command(flatten)]
    pub source: SourceClusterArgs,
    /// Snapshot name (the same on every worker, so they share one snapshot).
    #[arg(long, env = "RFS_SNAPSHOT", value_name = "NAME")]
    pub snapshot: String,
}

pub fn run(cmd: Command) -> anyhow::Result<u8> {
    let Command::Create(args) = cmd;
    runtime()?.block_on(async move {
        let result = args.source.take_snapshot(&args.snapshot).await?;
        println!("{result}");
        Ok(exit::OK)
    })
}
