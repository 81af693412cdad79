//! `rfs verify`: compare the target with the snapshot — per index, the documents the
//! snapshot delivers (read through the same source and transform as the migration) against
//! the target's `_count` after a refresh, and sampled documents (or all) fetched by id and
//! compared JSON-equal. Every live document must be accounted for: on the target, refused
//! (in a failure log given with --failure-log) or skipped (listed with the reason). Exit
//! code 6 on any mismatch. With `--store`, the migration the store holds is shown and must
//! be the one verified (exit 2 otherwise). A target index whose mapping disables `_source`
//! returns no documents: its count, sampled ids and (where the mapping allows) doc values
//! are compared, and the report says so. With `--to URL` instead of `--target`, the target
//! is whatever sink the URL names (as `rfs copy --to` names it: a cluster, files, DynamoDB),
//! looked up through the same port (`migrate::lookup`).

use std::collections::HashSet;

use anyhow::Context;

use migrate::connectors::{open_lookup, Settings, SourceShape};
use migrate::lookup::{mget::MgetLookup, Lookup};
use migrate::verify::{verify, Options, Sample};

use super::common::{runtime, usize_in, FilterArgs, SourceArgs, TargetArgs};
use super::engine::open_snapshot;
use crate::exit;

#[derive(Debug, clap::Args)]
#[command(mut_arg("target", |a| a.required(false).default_value("").hide_default_value(true)))]
pub struct Args {
    #[command(flatten)]
    pub source: SourceArgs,
    #[command(flatten)]
    pub target: TargetArgs,
    /// The sink the migration wrote to, instead of --target: as `rfs copy --to` names it —
    /// a cluster (`http(s)://[user:pw@]host:9200`), files (`file:///DIR`, a directory: the
    /// JSON-lines or `_bulk` files `rfs export` and file sinks write) or DynamoDB
    /// (`dynamodb://TABLE?region=R[&endpoint=URL]`: items compared as the sink converts
    /// documents, `_id` and `_index` included).
    #[arg(
        long,
        env = "RFS_VERIFY_TO",
        value_name = "URL",
        hide_env_values = true,
        conflicts_with = "target"
    )]
    pub to: Option<String>,
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
    /// Failure logs of the migration (every worker's): the documents they say the target
    /// refused are not expected on it, and the skipped documents they record must be the
    /// ones the snapshot has (repeatable or comma-separated).
    #[arg(
        long = "failure-log",
        env = "RFS_FAILURE_LOG",
        value_delimiter = ',',
        value_name = "FILE"
    )]
    pub failure_log: Vec<std::path::PathBuf>,
    /// Print the report as JSON.
    #[arg(long, env = "RFS_JSON")]
    pub json: bool,
    /// The migration's coordination store (read only): the migration it holds is shown,
    /// and must be the one verified (same repository, snapshot and target), else exit 2.
    #[arg(long, env = "RFS_STORE", value_name = "URL", hide_env_values = true)]
    pub store: Option<String>,
}

/// Shows the migration `store` holds and checks that it is the one being verified.
async fn check_store(
    store: &str,
    source: &migrate::sources::snapshot::SnapshotSource,
    target: &str,
    program: Option<String>,
) -> anyhow::Result<()> {
    use migrate::Source;
    let shown = redact::url(store);
    let opened = migrate::worker::with_store_retries(|| coordination::open_existing_store(store))
        .await
        .with_context(|| format!("opening the coordination store {shown}"))?;
    let coord = coordination::Coordinator::new(opened, coordination::Config::default());
    let Some(stored) = coord.identity().await? else {
        crate::say!("store {shown}: no migration recorded yet");
        return Ok(());
    };
    crate::say!(
        "store {shown} holds migration {}",
        coordination::identity_display(&stored)
    );
    if stored.contains_key("migration") {
        // A named migration: its parts are not recorded, nothing to compare.
        return Ok(());
    }
    let ours = migrate::job::with_program(
        migrate::job::identity_from(
            source.identity(),
            migrate::job::identity_location(target),
            None,
        ),
        program.as_deref(),
    );
    if stored != ours {
        return Err(coordination::Error::OtherMigration {
            stored: coordination::identity_display(&stored),
            ours: coordination::identity_display(&ours),
        }
        .into());
    }
    Ok(())
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    runtime()?.block_on(async move {
        let m = open_snapshot(&args.source, &args.filter, None, None).await?;
        if let Some(store) = &args.store {
            let program = m.transform.program_identity();
            let target = args.to.as_deref().unwrap_or(&args.target.target);
            check_store(store, &m.source, target, program).await?;
        }
        let mut refused = HashSet::new();
        // Skipped documents the logs record, once each (a retried item logs its skips
        // again): by source index, shard or slot, position and id.
        let mut skipped = HashSet::new();
        for path in &args.failure_log {
            for r in migrate::FailureLog::read(path)? {
                if r.stage == migrate::Stage::Target {
                    refused.insert((r.index, r.id));
                } else {
                    let at = r.position.as_ref().map(|p| format!("{p:?}"));
                    skipped.insert((r.index, r.part, at, r.id));
                }
            }
        }
        let mut recorded_skips = std::collections::BTreeMap::<String, u64>::new();
        for (index, ..) in skipped {
            *recorded_skips.entry(index).or_default() += 1;
        }
        let lookup: Box<dyn Lookup> = match (&args.to, args.target.target.is_empty()) {
            (Some(to), _) => {
                let opened = open_lookup(to, &Settings::default(), &SourceShape::default())
                    .await
                    .context("opening the target")?;
                if let Some(index) = &opened.index {
                    anyhow::bail!(
                        "--to {}: verify takes the sink without an index ({index}): documents are looked up in the indices the snapshot routes them to",
                        redact::url(to)
                    );
                }
                opened.lookup
            }
            (None, false) => Box::new(MgetLookup::new(args.target.connect().await?)),
            (None, true) => anyhow::bail!(
                "name the target: --target URL (a cluster) or --to URL (any sink, as rfs copy --to names it)"
            ),
        };
        let sample = if args.all {
            Sample::All
        } else {
            Sample::PerIndex(args.sample)
        };
        let options = Options {
            refused,
            ..Options::new(sample)
        };
        let mut report = verify(m.source, m.transform, lookup.as_ref(), options).await?;
        if !args.failure_log.is_empty() {
            report.check_recorded_skips(&recorded_skips);
        }
        if args.json {
            println!(
                "{}",
                serde_json::json!({
                    "ok": report.ok(),
                    "live": report.live,
                    "skipped": report.skipped,
                    "skipped_listed": report.skipped_listed,
                    "filtered": report.filtered,
                    "snapshot_live": report.snapshot_live,
                    "sources": report.sources,
                    "unrecorded_skips": report.unrecorded,
                    "indices": report.indices,
                    "without_source": report.without_source(),
                })
            );
        } else {
            print!("{}", report.to_table());
        }
        let only = report.without_source();
        if report.ok() && !only.is_empty() {
            crate::say!(
                "verify: every index matches ({} live documents, {} skipped and listed); not compared whole, the target keeps no _source: {}",
                report.live,
                report.skipped_total(),
                only.join(", ")
            );
            Ok(exit::OK)
        } else if report.ok() {
            crate::say!(
                "verify: every index matches ({} live documents, {} skipped and listed)",
                report.live,
                report.skipped_total()
            );
            Ok(exit::OK)
        } else {
            crate::say!("verify: MISMATCH");
            Ok(exit::VERIFY_MISMATCH)
        }
    })
}
