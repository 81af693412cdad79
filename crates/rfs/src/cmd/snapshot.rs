//! `rfs snapshot create`: take a snapshot on a source cluster under a chosen name and wait
//! for it. Idempotent: an existing snapshot of that name is waited for, not re-created.

use anyhow::Context;

use super::common::runtime;
use crate::exit;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Create snapshot NAME in a repository of the source cluster and wait until it is done.
    Create(CreateArgs),
}

#[derive(Debug, clap::Args)]
pub struct CreateArgs {
    /// Source cluster URL.
    #[arg(long, env = "RFS_SOURCE_CLUSTER", value_name = "URL")]
    pub source_cluster: String,
    /// Repository registered on the source cluster.
    #[arg(long, env = "RFS_SOURCE_REPOSITORY", value_name = "NAME")]
    pub source_repository: String,
    /// Register the repository first as a shared-filesystem (`fs`) repository at this
    /// location (must be listed in the cluster's `path.repo`).
    #[arg(long, value_name = "PATH")]
    pub register_fs: Option<String>,
    /// Snapshot name (the same on every worker, so they share one snapshot).
    #[arg(long, env = "RFS_SNAPSHOT", value_name = "NAME")]
    pub snapshot: String,
}

pub fn run(cmd: Command) -> anyhow::Result<u8> {
    let Command::Create(args) = cmd;
    runtime()?.block_on(async move {
        let client =
            cluster::Client::connect(cluster::ClientConfig::new(args.source_cluster.clone()))
                .await
                .with_context(|| format!("connecting to {}", args.source_cluster))?;
        if let Some(location) = &args.register_fs {
            client
                .register_fs_repository(&args.source_repository, location)
                .await?;
        }
        let result =
            migrate::phases::create_snapshot(&client, &args.source_repository, &args.snapshot)
                .await?;
        println!("{result}");
        Ok(exit::OK)
    })
}
