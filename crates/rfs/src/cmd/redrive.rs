//! `rfs redrive`: send the documents a failure log says the target refused once more, after
//! the cause is fixed (a mapping corrected, a cluster block lifted). What is refused again
//! goes to a new failure log; documents the source could not produce (skipped) cannot be
//! re-driven from a log and are counted.

use std::path::PathBuf;

use anyhow::Context;
use cluster::{BulkAction, BulkBody, DocMeta};
use migrate::failure_log::{now_rfc3339, FailureRecord};
use migrate::{FailureLog, Stage};

use super::common::{runtime, usize_in, TargetArgs};
use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub target: TargetArgs,
    /// The failure log to re-drive (written by `rfs run`/`rfs documents`).
    #[arg(long = "failure-log", env = "RFS_FAILURE_LOG", value_name = "FILE")]
    pub failure_log: PathBuf,
    /// Where documents refused again are recorded (default: FILE with `.remaining` added).
    #[arg(long, env = "RFS_REMAINING_LOG", value_name = "FILE")]
    pub remaining: Option<PathBuf>,
    /// Documents per bulk request (1–100000).
    #[arg(
        long,
        env = "RFS_MAX_BATCH_DOCS",
        default_value_t = 500,
        value_name = "N",
        value_parser = usize_in(1, 100_000)
    )]
    pub max_batch_docs: usize,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    runtime()?.block_on(async move {
        let records = FailureLog::read(&args.failure_log)?;
        let remaining_path = args.remaining.clone().unwrap_or_else(|| {
            let mut p = args.failure_log.clone().into_os_string();
            p.push(".remaining");
            PathBuf::from(p)
        });
        let mut skipped = 0u64;
        let mut no_source = Vec::new();
        let mut todo: Vec<FailureRecord> = Vec::new();
        for r in records {
            match r.stage {
                Stage::Source | Stage::Transform => skipped += 1,
                Stage::Target if r.delete || r.source.is_some() => todo.push(r),
                Stage::Target => no_source.push(r),
            }
        }
        // The same document refused twice (a re-sent batch) is sent once.
        let mut seen = std::collections::HashSet::new();
        todo.retain(|r| seen.insert((r.index.clone(), r.id.clone())));
        let client = args.target.connect().await?;
        let sender = cluster::BulkSender::new(
            client,
            cluster::BulkOptions {
                refuse_exhausted_items: true,
                ..cluster::BulkOptions::default()
            },
        )?;
        let remaining = FailureLog::open(&remaining_path)?.with_sources(true);
        let (mut delivered, mut refused) = (0u64, 0u64);
        for chunk in todo.chunks(args.max_batch_docs) {
            let mut body = BulkBody::default();
            let mut local = Vec::new();
            for r in chunk {
                let meta = DocMeta {
                    index: r.index.as_str().into(),
                    id: r.id.clone(),
                    doc_type: r.doc_type.as_deref().map(Into::into),
                    routing: r.routing.clone(),
                };
                let (action, source) = if r.delete {
                    (BulkAction::Delete, Vec::new())
                } else {
                    let src = r.source.as_ref().map(|s| s.get().as_bytes().to_vec());
                    (BulkAction::Write, src.unwrap_or_default())
                };
                if let Err(u) = sender.encoder().push(&mut body, action, meta, None, &source) {
                    local.push(again(r, &u.meta, &u.error.error_type, &u.error.reason, 0, 0));
                }
            }
            let result = sender
                .send_body(body)
                .await
                .with_context(|| format!("re-driving {}", args.failure_log.display()))?;
            delivered += result.acknowledged();
            refused += (result.refused.len() + local.len()) as u64;
            for x in &result.refused {
                let r = chunk
                    .iter()
                    .find(|r| r.id == x.meta.id && r.index == *x.meta.index)
                    .expect("every refused document came from this chunk");
                local.push(again(
                    r,
                    &x.meta,
                    &x.error.error_type,
                    &x.error.reason,
                    x.error.status,
                    x.attempts,
                ));
            }
            remaining.append(&local)?;
        }
        remaining.append(&no_source)?;
        crate::say!(
            "re-driven: {delivered} documents delivered, {refused} refused again, {} could not be sent (no source in the log), {skipped} skipped by the source (cannot be re-driven from a log)",
            no_source.len()
        );
        if refused + no_source.len() as u64 > 0 {
            crate::say!("documents still not delivered are in {}", remaining_path.display());
            return Ok(exit::NOT_DELIVERED);
        }
        Ok(exit::OK)
    })
}

/// The record of a document refused again.
fn again(
    r: &FailureRecord,
    meta: &DocMeta,
    error_type: &str,
    reason: &str,
    status: u16,
    attempts: u32,
) -> FailureRecord {
    FailureRecord {
        time: now_rfc3339(),
        index: meta.index.to_string(),
        id: meta.id.clone(),
        error_type: error_type.to_string(),
        reason: reason.to_string(),
        status,
        attempts,
        ..r.clone()
    }
}
