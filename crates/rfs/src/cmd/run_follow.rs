//! `rfs run --follow`: after the migration, the deltas of every newer snapshot of the
//! repository, until `rfs stop`. The loop is `engine::generations::follow`; this builds
//! what it asks for from the flags (the repository's listing, the store of a delta, the
//! delta's job) and renders how it ended.

use std::sync::Arc;
use std::time::Duration;

use connectors::Generations;
use engine::generations::{
    Applied, BoxFuture, CallerError, Counts, FollowEnd, Follower, Listed, Step, StepEnd,
};
use engine::JobEnd;
use tokio::sync::watch;

use super::engine::{finish, repository_context, Role};
use super::run::{migrate, Args};
use crate::args::StoreArgs;
use crate::exit;
use crate::hiargs::Parts;

/// The deltas of `args`' repository, in `base`'s fleet.
struct Deltas<'a> {
    args: &'a Args,
    lister: Box<dyn Generations>,
    shutdown: watch::Receiver<bool>,
}

impl Follower for Deltas<'_> {
    fn list(&self) -> BoxFuture<'_, Result<Vec<Listed>, CallerError>> {
        Box::pin(async move { Ok(self.lister.list().await?) })
    }

    fn store<'a>(
        &'a self,
        tag: &'a str,
    ) -> BoxFuture<'a, Result<Arc<dyn coordination::Store>, CallerError>> {
        Box::pin(async move {
            let store = StoreArgs {
                store: coordination::generation_url(&self.args.store.store, tag)?,
            };
            Ok(store.open_beside(&self.args.target).await?)
        })
    }

    fn apply<'a>(
        &'a self,
        step: &'a Step,
        store: Arc<dyn coordination::Store>,
    ) -> BoxFuture<'a, Result<StepEnd, CallerError>> {
        Box::pin(async move {
            crate::say!(
                "applying snapshot {} as a delta since {} (generation {})",
                step.snapshot.name,
                step.since,
                step.generation
            );
            let report = migrate(
                self.args,
                &step.snapshot.name,
                Some(&step.since),
                store,
                self.shutdown.clone(),
            )
            .await?;
            match report.end {
                JobEnd::Stopped => return Ok(StepEnd::Stopped),
                JobEnd::Finished => {}
                other => {
                    return Err(anyhow::anyhow!(
                        "the delta's migration ended before it was finished ({other:?})"
                    )
                    .into())
                }
            }
            // FAILED items or counts that do not add up end the follow with an error.
            finish(&report, Role::Run)?;
            let counts = report
                .status
                .as_ref()
                .map_or_else(Counts::default, |s| Counts {
                    delivered: s.docs_done,
                    refused: s.docs_refused,
                    skipped: s.docs_skipped,
                });
            Ok(StepEnd::Finished(counts))
        })
    }
}

/// Follows the repository after the migration of `--snapshot` finished; ends on `rfs
/// stop` or a signal (exit 5) or on an error.
pub async fn follow_repository(
    args: &Args,
    base: Arc<dyn coordination::Store>,
    shutdown: watch::Receiver<bool>,
) -> anyhow::Result<u8> {
    let lister = Parts::new(repository_context(&args.source.repository))
        .generations_as("snapshot", args.source.repository.location()?)?;
    let first = match engine::generations::load(base.as_ref()).await? {
        Some((state, _)) => state.applied,
        None => {
            let listed = lister.list().await?;
            let first = listed
                .iter()
                .find(|l| l.name == args.source.snapshot)
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "snapshot {} is no longer in the repository: there is nothing to \
                         follow from",
                        args.source.snapshot
                    )
                })?;
            Applied {
                name: first.name.clone(),
                uuid: first.uuid.clone(),
                start_ms: first.start_ms,
                applied_at: base.now().await?,
            }
        }
    };
    let every = Duration::from_secs_f64(args.follow_every);
    crate::say!(
        "following the repository from snapshot {} (listed every {:?}); `rfs stop` ends it",
        first.name,
        every
    );
    let deltas = Deltas {
        args,
        lister,
        shutdown: shutdown.clone(),
    };
    let end = engine::generations::follow(
        base,
        args.worker.coordination_config(),
        first,
        &deltas,
        every,
        shutdown,
    )
    .await?;
    match end {
        FollowEnd::Stopped(state) => {
            crate::say!(
                "stopped following: snapshot {} applied; {}",
                state.applied.name,
                if state.pending.is_empty() {
                    "nothing pending".to_string()
                } else {
                    format!("pending: {}", state.pending.join(", "))
                }
            );
            Ok(exit::STOPPED)
        }
    }
}
