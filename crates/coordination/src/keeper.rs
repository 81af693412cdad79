//! The keeper: one worker at a time (by lease) writes a progress summary into the store and,
//! once setup is done and no item is open, marks the migration finished. When the keeper
//! dies its lease expires and the next worker to call [`Coordinator::keeper_step`] takes over.

use crate::coordinator::{cas, retry, Coordinator};
use crate::record::{Record, RecordKind, RecordState};
use crate::status::Status;
use crate::Error;

pub(crate) const KEEPER_ID: &str = "keeper";

/// Result of one [`Coordinator::keeper_step`].
#[derive(Debug, Clone)]
pub enum KeeperStep {
    /// Another worker is the keeper (until `expiry`, store ms).
    NotKeeper { holder: String, expiry: i64 },
    /// This worker is the keeper and wrote the summary; work remains.
    Keeping(Box<Status>),
    /// The migration is finished (by this step or earlier).
    Finished(Box<Status>),
}

impl Coordinator {
    /// Take or renew the keeper lease; as keeper, write the summary and mark the migration
    /// finished when setup is done and every item is complete or FAILED. Call it every few
    /// seconds from every worker.
    pub async fn keeper_step(&self) -> Result<KeeperStep, Error> {
        let store = self.inner.store.as_ref();
        let lease = self.inner.config.keeper_lease.as_millis() as i64;
        loop {
            let now = self.checked_now().await?;
            let (rec, ver) = match retry(|| store.get(KEEPER_ID)).await? {
                Some(x) => x,
                None => {
                    let rec = Record::new(KEEPER_ID, RecordKind::Keeper, self.me());
                    retry(|| store.create(&rec)).await?;
                    continue;
                }
            };
            if rec.state == RecordState::Done {
                return Ok(KeeperStep::Finished(Box::new(self.status().await?)));
            }
            let mine = rec.holder.as_deref() == Some(self.me());
            if !mine && rec.expiry > now {
                return Ok(KeeperStep::NotKeeper {
                    holder: rec.holder.unwrap_or_default(),
                    expiry: rec.expiry,
                });
            }
            let mut status = self.status().await?;
            let finished = status.setup_done && status.items.open() == 0;
            if finished {
                // The migration's invariant, once, over every item (one read of them).
                let items = retry(|| store.list(RecordKind::Item)).await?;
                status.accounting = crate::accounting::check(&items);
                if let Some(m) = &status.accounting {
                    tracing::error!("{}", m.message());
                }
            }
            let mut new = rec.clone();
            if !mine {
                if let Some(h) = &rec.holder {
                    tracing::info!(previous = %h, "taking over as keeper");
                }
                new.attempts = rec.attempts.saturating_add(1);
            }
            new.holder = Some(self.me().to_string());
            new.expiry = now + lease;
            new.data = serde_json::to_value(&status).unwrap_or_default();
            if finished {
                new.state = RecordState::Done;
                new.completed_at = Some(now);
            }
            if cas(store, &new, ver).await?.is_none() {
                continue;
            }
            if finished {
                status.finished = true;
                tracing::info!(
                    done = status.items.done,
                    failed = status.items.failed,
                    docs = status.docs_done,
                    "migration finished"
                );
                return Ok(KeeperStep::Finished(Box::new(status)));
            }
            tracing::info!(
                done = status.items.done,
                open = status.items.open(),
                failed = status.items.failed,
                docs = status.docs_done,
                "progress"
            );
            return Ok(KeeperStep::Keeping(Box::new(status)));
        }
    }

    /// Give up the keeper role (e.g. on shutdown) so another worker takes it at once.
    pub async fn resign_keeper(&self) -> Result<(), Error> {
        let store = self.inner.store.as_ref();
        if let Some((mut rec, ver)) = retry(|| store.get(KEEPER_ID)).await? {
            if rec.holder.as_deref() == Some(self.me()) && rec.state == RecordState::Open {
                rec.holder = None;
                rec.expiry = 0;
                cas(store, &rec, ver).await?;
            }
        }
        Ok(())
    }
}
