//! Phase records ("snapshot", "metadata", "indices", "documents"): one worker does the
//! phase under a lease, the others wait until it is done; a dead holder's lease expires
//! and someone else takes over.

use std::time::Duration;

use serde_json::Value;

use crate::coordinator::{cas, retry, Coordinator};
use crate::record::{Record, RecordKind, RecordState};
use crate::Error;

/// Result of [`Coordinator::try_claim_phase`].
#[derive(Debug, Clone, PartialEq)]
pub enum PhaseClaim {
    /// This worker holds the phase: do it, then [`Coordinator::complete_phase`].
    Claimed,
    /// Some worker completed the phase; its result.
    Done(Value),
    /// Another worker holds it until `expiry` (store ms).
    Busy { holder: String, expiry: i64 },
}

pub(crate) fn phase_id(name: &str) -> String {
    format!("phase:{name}")
}

impl Coordinator {
    /// Claim phase `name` unless it is done or leased elsewhere. A phase whose attempts are
    /// used up becomes FAILED and gives [`Error::PhaseFailed`].
    pub async fn try_claim_phase(&self, name: &str) -> Result<PhaseClaim, Error> {
        let store = self.inner.store.as_ref();
        let cfg = &self.inner.config;
        let id = phase_id(name);
        loop {
            let now = self.checked_now().await?;
            let Some((rec, ver)) = retry(|| store.get(&id)).await? else {
                let mut rec = Record::new(&id, RecordKind::Phase, self.me());
                rec.holder = Some(self.me().to_string());
                rec.expiry = now + cfg.phase_lease.as_millis() as i64;
                rec.exponent = 1;
                rec.attempts = 1;
                if retry(|| store.create(&rec)).await?.is_some() {
                    return Ok(PhaseClaim::Claimed);
                }
                continue;
            };
            match rec.state {
                RecordState::Done => return Ok(PhaseClaim::Done(rec.data)),
                RecordState::Failed => {
                    return Err(Error::PhaseFailed {
                        name: name.to_string(),
                        reason: rec.last_error.unwrap_or_default(),
                    })
                }
                RecordState::Open => {}
            }
            let mine = rec.holder.as_deref() == Some(self.me());
            if rec.expiry > now {
                if mine {
                    return Ok(PhaseClaim::Claimed);
                }
                return Ok(PhaseClaim::Busy {
                    holder: rec.holder.unwrap_or_default(),
                    expiry: rec.expiry,
                });
            }
            let mut new = rec.clone();
            if rec.attempts >= cfg.max_attempts {
                new.state = RecordState::Failed;
                new.holder = None;
                new.last_error = Some(format!(
                    "gave up after {} attempts; last error: {}",
                    rec.attempts,
                    rec.last_error.as_deref().unwrap_or("lease expired")
                ));
                cas(store, &new, ver).await?;
                continue;
            }
            if let (Some(h), false) = (&rec.holder, mine) {
                new.last_error = Some(format!("lease of {h} expired before the phase was done"));
            }
            let len = cfg
                .phase_lease
                .saturating_mul(1 << rec.exponent.min(20))
                .min(cfg.max_lease.max(cfg.phase_lease));
            new.holder = Some(self.me().to_string());
            new.expiry = now + len.as_millis() as i64;
            new.exponent = rec.exponent.saturating_add(1);
            new.attempts = rec.attempts.saturating_add(1);
            if cas(store, &new, ver).await?.is_some() {
                return Ok(PhaseClaim::Claimed);
            }
        }
    }

    /// Wait until phase `name` is done (`Done`) or this worker claimed it (`Claimed`).
    pub async fn wait_phase(&self, name: &str) -> Result<PhaseClaim, Error> {
        loop {
            match self.try_claim_phase(name).await? {
                PhaseClaim::Busy { expiry, .. } => {
                    let now = self.inner.store.now().await?;
                    let until = Duration::from_millis((expiry - now).max(1) as u64);
                    tokio::time::sleep(until.min(self.inner.config.poll_interval)).await;
                }
                other => return Ok(other),
            }
        }
    }

    /// Extend this worker's lease on phase `name` by a fresh phase lease.
    pub async fn renew_phase(&self, name: &str) -> Result<(), Error> {
        let now = self.checked_now().await?;
        let len = self.inner.config.phase_lease.as_millis() as i64;
        self.guarded_phase(name, |r| r.expiry = r.expiry.max(now + len))
            .await
    }

    /// Mark phase `name`, held by this worker, done with `result`.
    pub async fn complete_phase(&self, name: &str, result: Value) -> Result<(), Error> {
        let now = self.inner.store.now().await?;
        self.guarded_phase(name, |r| {
            r.state = RecordState::Done;
            r.data = result.clone();
            r.completed_at = Some(now);
        })
        .await
    }

    /// Give phase `name` back with an error; the next claim retries it (up to max attempts).
    pub async fn fail_phase(&self, name: &str, reason: &str) -> Result<(), Error> {
        self.guarded_phase(name, |r| {
            r.holder = None;
            r.expiry = 0;
            r.last_error = Some(reason.to_string());
        })
        .await
    }

    /// Replaces the data of phase `name` while this worker holds it (a long phase's
    /// progress: where a follower got to), so that its successor continues from there.
    pub async fn save_phase_data(&self, name: &str, data: Value) -> Result<(), Error> {
        self.guarded_phase(name, |r| r.data = data.clone()).await
    }

    /// The data phase `name` holds now (`Null` when it has none or does not exist).
    pub async fn phase_data(&self, name: &str) -> Result<Value, Error> {
        let store = self.inner.store.as_ref();
        let id = phase_id(name);
        Ok(retry(|| store.get(&id))
            .await?
            .map(|(r, _)| r.data)
            .unwrap_or(Value::Null))
    }

    /// Gives phase `name` back without counting an attempt (the holder was asked to stop,
    /// it did not fail): any worker may claim it now.
    pub async fn release_phase(&self, name: &str) -> Result<(), Error> {
        self.guarded_phase(name, |r| {
            r.holder = None;
            r.expiry = 0;
            r.attempts = r.attempts.saturating_sub(1);
            r.exponent = r.exponent.saturating_sub(1);
        })
        .await
    }

    /// Marks phase `name`, held by this worker, FAILED: a retry cannot succeed (every
    /// worker gets [`Error::PhaseFailed`] with `reason` from now on).
    pub async fn fail_phase_permanently(&self, name: &str, reason: &str) -> Result<(), Error> {
        self.guarded_phase(name, |r| {
            r.state = RecordState::Failed;
            r.holder = None;
            r.expiry = 0;
            r.last_error = Some(reason.to_string());
        })
        .await
    }

    /// Apply `f` to the phase record while this worker holds it (re-read and re-applied
    /// when the version moved).
    async fn guarded_phase(&self, name: &str, f: impl Fn(&mut Record)) -> Result<(), Error> {
        let store = self.inner.store.as_ref();
        let id = phase_id(name);
        for _ in 0..5 {
            let Some((rec, ver)) = retry(|| store.get(&id)).await? else {
                break;
            };
            if rec.holder.as_deref() != Some(self.me()) || rec.state != RecordState::Open {
                break;
            }
            let mut new = rec;
            f(&mut new);
            if cas(store, &new, ver).await?.is_some() {
                return Ok(());
            }
        }
        Err(Error::LeaseLost { id })
    }
}
