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
//! looked up through the same port (`connectors::lookup`). With `--from URL` instead of a
//! repository, the source is whatever `rfs copy --from` names (a repository, JSON lines, a
//! live cluster, a table), opened the same way ([`crate::hiargs::Parts::source`] with [`super::copy::FromSpec`]), so verify
//! reads the documents copy read.

use std::collections::HashSet;
use std::sync::Arc;

use anyhow::Context;

use ::verify::{verify, Options, Sample};
use connectors::lookup::Lookup;
use connectors::SourceShape;
use engine::transform::Transform;
use engine::Source;

use super::copy::FromSpec;
use super::engine::{open_snapshot, repository_context};
use crate::args::{usize_in, FilterArgs, RebuildArgs, RebuildSource, SourceArgs, TargetArgs};
use crate::exit;
use crate::hiargs::Parts;
use crate::runtime::runtime;

#[derive(Debug, clap::Args)]
#[command(mut_arg("target", |a| a.required(false).default_value("").hide_default_value(true)))]
#[command(mut_arg("snapshot", |a| a.required(false).default_value("").hide_default_value(true)))]
#[command(mut_arg("repo", |a| a.required_unless_present_any(["repo_arg", "from"]).conflicts_with("from")))]
#[command(mut_arg("repo_arg", |a| a.conflicts_with("from")))]
pub struct Args {
    #[command(flatten)]
    pub source: SourceArgs,
    /// The source the migration read, instead of a repository: as `rfs copy --from` names
    /// it — a snapshot repository (with --snapshot or `#snapshot=NAME`), a directory or
    /// prefix of `*.jsonl` files (`file:///DIR`, `s3://…`), a live cluster
    /// (`http(s)://[user:pw@]host:9200/INDEX-PATTERN`) or a table
    /// (`postgres://user:pw@host/db?table=T&key=COLUMN`). Read as copy reads it (no
    /// routing, --index or --transform): each document is looked up in its own index, or
    /// in the index the --to URL names. Where the source keeps no exact live count of its
    /// own (all but a repository) the report says so and compares the target's counts
    /// with what was read.
    #[arg(
        long,
        env = "RFS_VERIFY_FROM",
        value_name = "URL",
        hide_env_values = true
    )]
    pub from: Option<String>,
    #[command(flatten)]
    pub from_conn: crate::args::FromConnectionArgs,
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
    /// `all`: list every id of each target index (ids only: a scroll with `_source`
    /// off, the files' ids, a DynamoDB projecting Scan) and hold it against every id the
    /// source delivers there; every missing and every extra document is counted (the
    /// first --max-listed named), whatever the sample.
    #[arg(
        long,
        env = "RFS_VERIFY_IDS",
        value_name = "WHICH",
        value_parser = clap::builder::PossibleValuesParser::new(["all"])
    )]
    pub ids: Option<String>,
    /// Whether the migration sent documents without their `_id`, the target generating
    /// them (as `rfs run --server-generated-ids`; auto: when the target is OpenSearch
    /// Serverless, --target-sigv4 aoss). Then nothing can be looked up by id: every
    /// document is read on both sides and each index compared as a multiset of content
    /// digests (missing documents, and extra ones: duplicates of a re-sent batch);
    /// --sample, --all and --ids are moot.
    #[arg(
        long,
        env = "RFS_SERVER_GENERATED_IDS",
        value_enum,
        default_value = "auto",
        value_name = "WHEN"
    )]
    pub server_generated_ids: crate::args::ServerGeneratedIds,
    /// Ids named per index and kind of mismatch (1–100000; the rest are counted).
    #[arg(
        long,
        env = "RFS_MAX_LISTED",
        default_value_t = 100,
        value_name = "N",
        value_parser = usize_in(1, 100_000)
    )]
    pub max_listed: usize,
    /// Failure logs of the migration (every worker's): the documents they say the target
    /// refused are not expected on it, and the skipped documents they record must be the
    /// ones the snapshot has (repeatable or comma-separated; a file, or an object-store
    /// prefix whose every part is read).
    #[arg(
        long = "failure-log",
        env = "RFS_FAILURE_LOG",
        value_delimiter = ',',
        value_name = "FILE|URL"
    )]
    pub failure_log: Vec<std::path::PathBuf>,
    /// Print the report as JSON.
    #[arg(long, env = "RFS_JSON")]
    pub json: bool,
    /// The migration's coordination store (read only): the migration it holds is shown,
    /// and must be the one verified (same source — repository and snapshot, or the
    /// --from source — and target, as `rfs copy` or `rfs run` recorded it), else exit 2.
    #[arg(long, env = "RFS_STORE", value_name = "URL", hide_env_values = true)]
    pub store: Option<String>,
}

/// Shows the migration `store` holds and checks that it is the one being verified: the
/// identity `source` and `target` make, built as the job that ran recorded it
/// ([`engine::job::identity_from`] and [`engine::job::with_program`]).
async fn check_store(
    store: &str,
    source: coordination::Identity,
    target: String,
    program: Option<String>,
) -> anyhow::Result<()> {
    let shown = redact::url(store);
    let opened = engine::worker::with_store_retries(|| coordination::open_existing_store(store))
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
    let ours = engine::job::with_program(
        engine::job::identity_from(source, target, None),
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

/// Where to look documents up: the lookup, the transform between the source and it (all
/// into the `--to` URL's index when it names one), and its name in a migration's identity.
async fn open_target(
    args: &Args,
    shape: &SourceShape,
    index_allowed: bool,
) -> anyhow::Result<(Box<dyn Lookup>, Arc<dyn Transform>, String)> {
    match (&args.to, args.target.target.is_empty()) {
        (Some(to), _) => {
            let parts = Parts::default();
            let identity = parts.sink_identity(to)?;
            let opened = parts
                .lookup(to, shape)
                .await
                .context("opening the target")?;
            if let (Some(index), false) = (&opened.index, index_allowed) {
                anyhow::bail!(
                    "--to {}: verify takes the sink without an index ({index}): documents are looked up in the indices the snapshot routes them to",
                    redact::url(to)
                );
            }
            let transform = opened.transform();
            Ok((opened.lookup, transform, identity))
        }
        (None, false) => {
            // A cluster, reached as `rfs run` writes it.
            let target = &args.target.target;
            let opened = args
                .target
                .reached_by(connectors::Context::default())?
                .lookup(target, &SourceShape::default())
                .await
                .with_context(|| args.target.connecting())?;
            Ok((
                opened.lookup,
                programs::routes::into_index(None),
                engine::job::identity_location(target),
            ))
        }
        (None, true) => anyhow::bail!(
            "name the target: --target URL (a cluster) or --to URL (any sink, as rfs copy --to names it)"
        ),
    }
}

/// `--from` reads as `rfs copy` does: the flags that route or transform a snapshot's
/// documents, or rebuild a missing `_source` otherwise than copy's defaults, do not apply.
fn refuse_routing(filter: &FilterArgs, rebuild: &RebuildArgs) -> anyhow::Result<()> {
    let given = [
        (
            "--rebuild-source",
            rebuild.rebuild_source != RebuildSource::Auto,
        ),
        ("--allow-partial-source", rebuild.allow_partial_source),
        ("--prefer-recovery-source", rebuild.prefer_recovery_source),
        ("--index", !filter.index.is_empty()),
        ("--rename", !filter.rename.is_empty()),
        ("--type-route", !filter.type_route.is_empty()),
        (
            "--multi-type",
            matches!(filter.multi_type, crate::args::MultiType::Split),
        ),
        ("--index-prefix", !filter.index_prefix.is_empty()),
        ("--index-suffix", !filter.index_suffix.is_empty()),
        ("--transform", filter.transform.identity()?.is_some()),
    ];
    if let Some((flag, _)) = given.iter().find(|(_, set)| *set) {
        anyhow::bail!(
            "{flag} does not apply with --from: verify reads the source as rfs copy does (each document into its own index, or the index the --to URL names); use --repo for a migration made by rfs run or rfs documents"
        );
    }
    Ok(())
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    runtime()?.block_on(async move {
        let mut refused = HashSet::new();
        // Skipped documents the logs record, once each (a retried item logs its skips
        // again): by source index, shard or slot, position and id.
        let mut skipped = HashSet::new();
        for path in &args.failure_log {
            for r in connectors::failure_log::FailureLogAt::parse(path).read()? {
                if r.stage == engine::Stage::Target {
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
        let mut left_out = Vec::new();
        let (source, transform, lookup, target_identity, program) = match &args.from {
            Some(from) => {
                refuse_routing(&args.filter, &args.source.rebuild)?;
                let http = matches!(
                    connectors::scheme(from).as_str(),
                    "http" | "https"
                );
                if args.from_conn.is_set() && !http {
                    anyhow::bail!(
                        "--from-* connection flags apply to a cluster source (http(s)://), not to {}",
                        redact::url(from)
                    );
                }
                let snapshot = &args.source.snapshot;
                let params = FromSpec {
                    snapshot: (!snapshot.is_empty()).then(|| snapshot.clone()),
                    // As copy reads by default: shard files checked, `_source` rebuilt.
                    split_docs: None,
                    verify_checksums: true,
                    item_bytes: None,
                    slices: 1,
                }
                .params();
                let mut ctx = repository_context(&args.source.repository);
                // As copy sets it up: the client of the flags (with their defaults), the
                // URL's base and, unless a flag authenticates, its userinfo.
                ctx.from.client = Some(args.from_conn.client_config()?);
                let parts = Parts::new(ctx).from(params);
                let opened = parts.source(from).await?;
                // The indices a live cluster's pattern matches, by a request of the
                // connector's own (not the source's listing): any the copy's source left
                // out is named.
                if let Some(matched) = parts.matched_groups(opened.kind, from).await? {
                    left_out = ::verify::left_out(&matched, &opened.groups);
                }
                let (lookup, transform, identity) =
                    open_target(&args, &opened.shape(), true).await?;
                (opened.source, transform, lookup, identity, None)
            }
            None => {
                if args.source.snapshot.is_empty() {
                    anyhow::bail!("name the snapshot: --snapshot NAME (or RFS_SNAPSHOT)");
                }
                let m = open_snapshot(&args.source, &args.filter, None, None).await?;
                let (lookup, _, identity) =
                    open_target(&args, &SourceShape::default(), false).await?;
                let program = m.transform.program_identity();
                (
                    m.source,
                    m.transform,
                    lookup,
                    identity,
                    program,
                )
            }
        };
        if let Some(store) = &args.store {
            check_store(store, source.identity(), target_identity, program).await?;
        }
        if !source.exact_totals() {
            crate::say!(
                "note: the source keeps no exact live count of its own: the target's counts are compared with the documents read"
            );
        }
        let sample = if args.all {
            Sample::All
        } else {
            Sample::PerIndex(args.sample)
        };
        let by_content = match args.server_generated_ids {
            crate::args::ServerGeneratedIds::Always => true,
            crate::args::ServerGeneratedIds::Never => false,
            crate::args::ServerGeneratedIds::Auto => {
                args.to.is_none()
                    && args.target.target_sigv4 == Some(crate::args::SigV4Service::Aoss)
            }
        };
        if by_content {
            crate::say!(
                "note: the target generated the document ids: every document is compared by content (a multiset of digests per index)"
            );
        }
        let options = Options {
            refused,
            max_listed: args.max_listed,
            all_ids: args.ids.is_some(),
            by_content,
            ..Options::new(sample)
        };
        let mut report = verify(Arc::new(source), transform, lookup.as_ref(), options).await?;
        report.left_out = left_out;
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
                    "exact_totals": report.exact_totals,
                    "sources": report.sources,
                    "unrecorded_skips": report.unrecorded,
                    "indices": report.indices,
                    "without_source": report.without_source(),
                    "left_out": report.left_out,
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
