//! `rfs verify`: compare the target with the snapshot — per index, the snapshot's document
//! count against the target's `_count` after a refresh, and sampled documents (or all)
//! fetched by id and compared JSON-equal to the snapshot's `_source`. Exit code 6 on any
//! mismatch.

use anyhow::Context;
use migrate::verify::{verify, Sample};

use super::common::{runtime, usize_in, FilterArgs, SourceArgs, TargetArgs};
use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Documents compared per index (a uniform random sample; 0–100000, 0: counts only;
    /// --all for every document).
    #[arg(
        long,
        env = "RFS_VERIFY_SAMPLE",
        default_value_t = 100,
        value_name = "N",
        value_parser = usize_in(0, 100_000)
    )]
    pub sample: usize,
    /// Compare every document instead of a sample.
    #[arg(long, env = "RFS_VERIFY_ALL")]
    pub all: bool,
    /// Print the report as JSON.
    #[arg(long, env = "RFS_JSON")]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    runtime()?.block_on(async move {
        let (snap, routing) = {
            let (source, filter) = (args.source.clone(), args.filter.clone());
            tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
                let snap = source.open()?;
                let (_, routing) = filter.routing(&snap)?;
                Ok((snap, routing))
            })
            .await
            .context("opening the snapshot")??
        };
        let client = args.target.connect().await?;
        let sample = if args.all {
            Sample::All
        } else {
            Sample::PerIndex(args.sample)
        };
        let report = verify(&snap, &routing, &client, sample).await?;
        if args.json {
            println!(
                "{}",
                serde_json::json!({ "ok": report.ok(), "indices": report.indices })
            );
        } else {
            print!("{}", report.to_table());
        }
        if report.ok() {
            crate::say!("verify: every index matches");
            Ok(exit::OK)
        } else {
            crate::say!("verify: MISMATCH");
            Ok(exit::VERIFY_MISMATCH)
        }
    })
}
