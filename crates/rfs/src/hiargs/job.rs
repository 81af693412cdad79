//! Worker flags turned into the job's options, the lease protocol's settings, the batch
//! limits and what the sinks are told.

use std::sync::Arc;
use std::time::Duration;

use crate::args::{ServerGeneratedIds, WorkerArgs};

/// `secs` as a Duration within `min..=max` seconds, whatever `secs` is (NaN: `min`).
fn seconds(secs: f64, min: f64, max: f64) -> Duration {
    let s = if secs.is_nan() {
        min
    } else {
        secs.clamp(min, max)
    };
    Duration::try_from_secs_f64(s).unwrap_or(Duration::from_secs_f64(min))
}

impl WorkerArgs {
    pub fn coordination_config(&self) -> coordination::Config {
        // The parser bounds --lease-seconds; the arithmetic saturates anyway.
        let lease = Duration::from_secs(self.lease_seconds.clamp(1, 86_400));
        coordination::Config {
            initial_lease: lease,
            renew_every: if self.renew_seconds > 0.0 {
                seconds(self.renew_seconds, 0.05, 3600.0)
            } else {
                Duration::ZERO
            },
            max_attempts: self.max_attempts.max(1),
            phase_lease: lease.max(Duration::from_secs(5)),
            keeper_lease: Duration::from_secs(30)
                .min(lease.saturating_mul(3))
                .max(Duration::from_secs(3)),
            ..coordination::Config::default()
        }
    }

    /// Item workers in this process.
    pub fn parallel(&self) -> usize {
        self.parallel
            .unwrap_or_else(engine::JobOptions::default_parallel)
    }

    /// How the job runs: N item workers, batch limits, checkpoints, the memory budget.
    pub fn job_options(&self, wait_for_leases: bool) -> engine::JobOptions {
        let parallel = self.parallel();
        let pipeline = engine::PipelineOptions {
            in_flight: self.concurrency.max(1),
            checkpoint_every: seconds(self.checkpoint_seconds, 0.05, 3600.0),
            control_every: seconds(self.control_seconds, 0.05, 60.0),
            ..engine::PipelineOptions::default()
        };
        engine::JobOptions {
            parallel,
            worker: engine::WorkerOptions {
                pipeline,
                wait_for_leases,
                poll: seconds(self.control_seconds, 0.05, 5.0),
                max_items: None,
                failed_item_pause: Duration::from_millis(500),
            },
            coordination: self.coordination_config(),
            memory_budget: engine::JobOptions::memory_budget_for(
                self.memory_budget,
                self.max_batch_bytes,
                parallel,
            ),
            migration: self.migration.clone(),
            fleet_limits: engine::FleetLimits {
                docs_per_sec: self
                    .fleet_max_docs_per_sec
                    .filter(|r| r.is_finite() && *r > 0.0),
                bytes_per_sec: self
                    .fleet_max_bytes_per_sec
                    .filter(|r| r.is_finite() && *r > 0.0),
            },
        }
    }

    /// The batch limits every sink uses.
    pub fn batch_limits(&self) -> engine::BatchLimits {
        engine::BatchLimits {
            max_docs: self.max_batch_docs.max(1),
            max_bytes: self.max_batch_bytes.max(1),
        }
    }

    /// The failure log, opened for appending (with each document's source, so it can be
    /// re-driven): a file, or this process's parts under an object-store prefix.
    pub fn failure_log(&self) -> anyhow::Result<Arc<engine::FailureLog>> {
        let log = connectors::failure_log::FailureLogAt::parse(&self.failure_log)
            .open_writer(&process_tag())?
            .with_sources(true);
        Ok(Arc::new(log))
    }

    /// What these flags say to every connector the registry opens (batches, `_bulk`
    /// options, parallelism, requests in flight, rates, the throttle budget, this
    /// process's tag); the command adds how its ends are reached.
    pub fn context(&self) -> connectors::Context {
        let rate = |r: Option<f64>| r.filter(|r| r.is_finite() && *r > 0.0);
        connectors::Context {
            batch: self.batch_limits(),
            bulk: self.bulk_options(),
            parallel: self.parallel(),
            max_in_flight: self.concurrency.max(1).saturating_mul(self.parallel()),
            rates: connectors::Rates {
                docs_per_sec: rate(self.max_docs_per_sec),
                bytes_per_sec: rate(self.max_bytes_per_sec),
            },
            throttle_budget: Some(throttle_budget(self.lease_seconds)),
            process_tag: Some(process_tag()),
            ..connectors::Context::default()
        }
    }

    /// The snapshot-reading parameters these flags give (`--split-docs`,
    /// `--no-verify-checksums`), for whichever source takes them.
    pub fn snapshot_params(&self, params: &mut connectors::Params) {
        use crate::args::params::put;
        put(params, "--split-docs", self.split_docs);
        put(params, "--no-verify-checksums", !self.no_verify_checksums);
    }

    /// `--server-generated-ids` as the bulk sender takes it.
    pub fn server_ids(&self) -> cluster::ServerGeneratedIds {
        match self.server_generated_ids {
            ServerGeneratedIds::Auto => cluster::ServerGeneratedIds::Auto,
            ServerGeneratedIds::Always => cluster::ServerGeneratedIds::Always,
            ServerGeneratedIds::Never => cluster::ServerGeneratedIds::Never,
        }
    }

    /// How `_bulk` requests are sent: requests in flight, rates, the retry budget,
    /// `--create-only`.
    pub fn bulk_options(&self) -> cluster::BulkOptions {
        let mut o = cluster::BulkOptions {
            max_in_flight: self.concurrency.max(1).saturating_mul(self.parallel()),
            max_docs_per_sec: self.max_docs_per_sec.filter(|r| r.is_finite() && *r > 0.0),
            max_bytes_per_sec: self.max_bytes_per_sec.filter(|r| r.is_finite() && *r > 0.0),
            retry_budget: Some(Duration::from_secs(
                self.bulk_retry_seconds.clamp(10, 86_400),
            )),
            server_generated_ids: self.server_ids(),
            ..cluster::BulkOptions::default()
        };
        if self.create_only {
            o.op_type = cluster::OpType::Create;
            o.accept_error_types
                .push("version_conflict_engine_exception".into());
        }
        o
    }
}

/// A tag unique to this process, for its files in a shared directory.
/// This process's name among a fleet's writers (file sink names, failure-log parts):
/// host, process id and a random tag.
pub(crate) fn process_tag() -> String {
    let host = gethostname();
    format!(
        "{host}-{}-{:08x}",
        std::process::id(),
        rand::random::<u32>()
    )
}

fn gethostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".into())
}

/// How long a DynamoDB batch is retried while throttled: what the first lease allows, less
/// a tenth (at least 5 s) for the batch to fail and the item to be released in time.
fn throttle_budget(lease_seconds: u64) -> Duration {
    let lease = lease_seconds.max(1);
    Duration::from_secs(lease.saturating_sub((lease / 10).max(5)).max(1))
}
