//! `rfs bench fleet`: a simulated fleet against a real coordination store. N workers (async
//! tasks in this process, each with its own worker id) lease M work items, "work" on each
//! for a random time while renewing the lease (heartbeat) and checkpointing, and complete
//! it; some are killed mid-item (the lease is dropped unreleased and the worker restarts
//! under a new id) and some pause longer than their lease (a stalled process). Prints
//! throughput, store latencies, the drain time against the ideal, the time from a kill to
//! the item being leased again, the double grants found by the lease oracle (must be 0),
//! and the latency of `rfs status` over the store at that size.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use coordination::contention::{contention_items, double_grants, Interval};
use coordination::{
    open_existing_store, open_store, Acquired, Config, Coordinator, Error, Position, Progress,
    RecordKind, Store,
};
use rand::Rng;

use crate::args::{float_in, usize_in};

#[derive(clap::Args)]
pub struct Args {
    /// Coordination store URL (sqlite://FILE, postgres://…, redis://…, http(s)://host:port/index).
    /// Use a namespace of its own: the benchmark writes work items there.
    #[arg(long, env = "RFS_STORE", value_name = "URL", hide_env_values = true)]
    store: String,
    /// Simulated workers (async tasks in this process; 1–100000).
    #[arg(
        long,
        env = "RFS_BENCH_WORKERS",
        default_value_t = 1000,
        value_parser = usize_in(1, 100_000)
    )]
    workers: usize,
    /// Work items to create and drain (1–10000000).
    #[arg(
        long,
        env = "RFS_BENCH_ITEMS",
        default_value_t = 200_000,
        value_parser = usize_in(1, 10_000_000)
    )]
    items: usize,
    /// Mean simulated work per item, in milliseconds (0–3600000).
    #[arg(
        long,
        env = "RFS_BENCH_WORK_MS",
        default_value_t = 100.0,
        value_parser = float_in(0.0, 3_600_000.0)
    )]
    work_ms: f64,
    /// Spread of the work time: uniform in mean × (1 ± this) (0–1).
    #[arg(
        long,
        env = "RFS_BENCH_WORK_SPREAD",
        default_value_t = 0.5,
        value_parser = float_in(0.0, 1.0)
    )]
    work_spread: f64,
    /// Chance per item that its worker is killed mid-item (0–1).
    #[arg(
        long,
        env = "RFS_BENCH_KILL_RATE",
        default_value_t = 0.001,
        value_parser = float_in(0.0, 1.0)
    )]
    kill_rate: f64,
    /// Chance per item that its worker stalls mid-item for --pause-ms without renewing (0–1).
    #[arg(
        long,
        env = "RFS_BENCH_PAUSE_RATE",
        default_value_t = 0.001,
        value_parser = float_in(0.0, 1.0)
    )]
    pause_rate: f64,
    /// How long a stalled worker stalls, in milliseconds (0–3600000; default: 1.5 × the
    /// store lease, so that it loses its item).
    #[arg(long, env = "RFS_BENCH_PAUSE_MS", value_parser = float_in(0.0, 3_600_000.0))]
    pause_ms: Option<f64>,
    /// Heartbeat interval in seconds (0.05–3600); the store lease is 3 × this.
    #[arg(
        long,
        env = "RFS_RENEW_SECONDS",
        default_value_t = 1.0,
        value_parser = float_in(0.05, 3600.0)
    )]
    renew_seconds: f64,
    /// Seconds between checkpoints of an item (0.05–3600).
    #[arg(
        long,
        env = "RFS_CHECKPOINT_SECONDS",
        default_value_t = 1.0,
        value_parser = float_in(0.05, 3600.0)
    )]
    checkpoint_seconds: f64,
    /// Delete every record in the store's namespace first (required when it is not empty).
    #[arg(long, env = "RFS_BENCH_CLEAR")]
    clear: bool,
    /// Store clients the simulated workers are spread over (1–1000), as the processes of a
    /// fleet each hold their own connection (Redis) or pool (PostgreSQL: mind `pool=N` ×
    /// this against the server's connection limit). `rfs status` is measured from a client
    /// of its own, as it runs in its own process.
    #[arg(
        long,
        env = "RFS_BENCH_PROCESSES",
        default_value_t = 1,
        value_parser = usize_in(1, 1000)
    )]
    processes: usize,
}

impl std::fmt::Debug for Args {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Args")
            .field("store", &redact::url(&self.store))
            .field("workers", &self.workers)
            .field("items", &self.items)
            .field("work_ms", &self.work_ms)
            .field("kill_rate", &self.kill_rate)
            .field("pause_rate", &self.pause_rate)
            .field("renew_seconds", &self.renew_seconds)
            .field("clear", &self.clear)
            .field("processes", &self.processes)
            .finish()
    }
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(bench(args))
}

/// What the simulated workers record.
#[derive(Default)]
struct Tally {
    acquire: Vec<Duration>,
    /// Renewals, checkpoints and completions: one guarded write each.
    writes: Vec<Duration>,
    renewals: u64,
    checkpoints: u64,
    completions: u64,
    kills: u64,
    pauses: u64,
    leases_lost: u64,
    /// Store calls that failed after the protocol's own retries (timeouts under load).
    store_errors: u64,
    retake: Vec<Duration>,
    intervals: Vec<Interval>,
}

struct Sim {
    /// One store client per simulated process; worker `i` uses `stores[i % len]`.
    stores: Vec<Arc<dyn Store>>,
    protocol: Config,
    work: (Duration, Duration),
    kill_rate: f64,
    pause_rate: f64,
    pause: Duration,
    checkpoint: Duration,
    tally: Mutex<Tally>,
    /// Items whose holder was killed, and when.
    killed: Mutex<HashMap<String, Instant>>,
}

impl Sim {
    fn tally(&self) -> std::sync::MutexGuard<'_, Tally> {
        self.tally.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn quantile(v: &mut [Duration], q: f64) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    v.sort_unstable();
    v[(((v.len() - 1) as f64) * q).round() as usize]
}

/// The store clock now, as this machine sees it (the stores run on this host in the
/// benchmark, so the clocks are one).
fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

async fn bench(args: Args) -> anyhow::Result<u8> {
    let store = open_store(&args.store).await?;
    if args.clear {
        store.clear().await?;
    } else if store.earliest_open_expiry().await?.is_some()
        || !store.list(RecordKind::Phase).await?.is_empty()
    {
        anyhow::bail!(
            "the store already holds work items; pass --clear to delete them (use a namespace of its own)"
        );
    }
    let renew = Duration::from_secs_f64(args.renew_seconds);
    let protocol = Config {
        // A long work period: items are finished, not handed off.
        initial_lease: Duration::from_secs(3600),
        renew_every: renew,
        max_attempts: 100,
        keeper_lease: Duration::from_secs(10),
        poll_interval: Duration::from_millis(100),
        ..Config::default()
    };
    let store_lease = renew.saturating_mul(3);
    let mean = Duration::from_secs_f64(args.work_ms / 1000.0);
    let spread = mean.mul_f64(args.work_spread);
    let pause = args.pause_ms.map_or(store_lease.mul_f64(1.5), |p| {
        Duration::from_secs_f64(p / 1000.0)
    });
    let setup = Instant::now();
    Coordinator::new(store.clone(), protocol.clone())
        .setup(&contention_items(args.items, 1000))
        .await?;
    let setup = setup.elapsed();
    println!("store: {}", store.backend());
    println!("workers: {}", args.workers);
    println!("processes: {}", args.processes);
    println!("items: {}", args.items);
    println!("work_ms_mean: {:.1}", ms(mean));
    println!("store_lease_ms: {:.0}", ms(store_lease));
    println!("renew_ms: {:.0}", ms(renew));
    println!("setup_ms: {:.1}", ms(setup));

    let mut stores = vec![store.clone()];
    for _ in 1..args.processes {
        stores.push(open_store(&args.store).await?);
    }
    let sim = Arc::new(Sim {
        stores,
        protocol: protocol.clone(),
        work: (mean.saturating_sub(spread), mean + spread),
        kill_rate: args.kill_rate,
        pause_rate: args.pause_rate,
        pause,
        checkpoint: Duration::from_secs_f64(args.checkpoint_seconds),
        tally: Mutex::default(),
        killed: Mutex::default(),
    });
    let done = Arc::new(AtomicBool::new(false));
    // A few keeper candidates, as a fleet's processes run them: they write the summary
    // that `rfs status` reads at this size.
    let keepers: Vec<_> = (0..4)
        .map(|_| {
            let coord = Coordinator::new(store.clone(), protocol.clone());
            let done = done.clone();
            tokio::spawn(async move {
                while !done.load(Ordering::Relaxed) {
                    if let Err(e) = coord.keeper_step().await {
                        tracing::warn!("keeper: {e}");
                    }
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
            })
        })
        .collect();
    // `rfs status` while the fleet works (what an operator sees), every few seconds, from
    // a client of its own as the command has.
    let status_probe = {
        let coord = Coordinator::new(open_existing_store(&args.store).await?, protocol.clone());
        let done = done.clone();
        tokio::spawn(async move {
            let mut lat = Vec::new();
            while !done.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_secs(3)).await;
                let t = Instant::now();
                if coord.status_summary(Duration::from_secs(60)).await.is_ok() {
                    lat.push(t.elapsed());
                }
            }
            lat
        })
    };

    let started = Instant::now();
    let tasks: Vec<_> = (0..args.workers)
        .map(|i| {
            let sim = sim.clone();
            tokio::spawn(async move { worker(&sim, i).await })
        })
        .collect();
    for t in tasks {
        t.await.context("a simulated worker panicked")??;
    }
    let drain = started.elapsed();
    done.store(true, Ordering::Relaxed);
    for k in keepers {
        let _ = k.await;
    }
    let mut status_during = status_probe.await.unwrap_or_default();
    let coord = Coordinator::new(store.clone(), protocol.clone());
    // The keeper's last summary may be older than the end: one more step.
    let _ = coord.keeper_step().await;
    let t = Instant::now();
    let summary = coord.status_summary(Duration::from_secs(60)).await?;
    let status_summary = t.elapsed();
    let t = Instant::now();
    let full = coord.status().await?;
    let status_full = t.elapsed();

    let mut tally = std::mem::take(&mut *sim.tally());
    let secs = drain.as_secs_f64().max(1e-9);
    let ideal = mean.as_secs_f64() * args.items as f64 / args.workers as f64;
    let doubles = double_grants(&tally.intervals).len();
    let acquisitions = tally.acquire.len();
    println!("drain_s: {secs:.2}");
    println!("ideal_s: {ideal:.2}");
    println!(
        "drain_over_ideal_pct: {:.1}",
        (secs / ideal.max(1e-9) - 1.0) * 100.0
    );
    println!("acquisitions: {acquisitions}");
    println!("acquisitions_per_s: {:.0}", acquisitions as f64 / secs);
    println!(
        "acquire_p50_ms: {:.2}",
        ms(quantile(&mut tally.acquire, 0.5))
    );
    println!(
        "acquire_p99_ms: {:.2}",
        ms(quantile(&mut tally.acquire, 0.99))
    );
    println!("renewals_per_s: {:.0}", tally.renewals as f64 / secs);
    println!("checkpoints_per_s: {:.0}", tally.checkpoints as f64 / secs);
    println!("completions: {}", tally.completions);
    println!("write_p50_ms: {:.2}", ms(quantile(&mut tally.writes, 0.5)));
    println!("write_p99_ms: {:.2}", ms(quantile(&mut tally.writes, 0.99)));
    println!("kills: {}", tally.kills);
    println!("pauses: {}", tally.pauses);
    println!("leases_lost: {}", tally.leases_lost);
    println!("store_errors: {}", tally.store_errors);
    println!("retakes: {}", tally.retake.len());
    println!(
        "kill_to_retake_p50_ms: {:.0}",
        ms(quantile(&mut tally.retake, 0.5))
    );
    println!(
        "kill_to_retake_max_ms: {:.0}",
        ms(quantile(&mut tally.retake, 1.0))
    );
    println!("kill_to_retake_limit_ms: {:.0}", ms(store_lease * 2));
    println!("double_grants: {doubles}");
    println!(
        "status_during_run_max_ms: {:.1}",
        ms(quantile(&mut status_during, 1.0))
    );
    println!("status_summary_ms: {:.1}", ms(status_summary));
    // `rfs status` over every item: the store's aggregates (or a scan where it has none).
    println!("status_ms: {:.1}", ms(status_full));
    match store.pool_stats() {
        Some(p) => {
            // Waiting for a pooled connection is queueing in this process (the pool of
            // the first simulated process), not the store's work: printed apart.
            println!("pool_size: {} (per process)", p.size);
            println!("pool_wait_p50_ms: {:.2}", ms(p.wait.p50));
            println!("pool_wait_p99_ms: {:.2}", ms(p.wait.p99));
            println!("store_call_p50_ms: {:.2}", ms(p.call.p50));
            println!("store_call_p99_ms: {:.2}", ms(p.call.p99));
            println!("store_call_max_ms: {:.2}", ms(p.call.max));
            println!("store_calls: {}", p.call.count);
        }
        None => println!("pool_size: none (one multiplexed connection or in-process)"),
    }
    // What the server measured itself (Redis): its work per command, without the queue
    // on the connection.
    let sent = ["evalsha", "time", "hmget"];
    for (cmd, l) in store.server_latencies().await.unwrap_or_default() {
        // The commands the store sends (the scripts' own calls are inside `evalsha`).
        if !sent.contains(&cmd.as_str()) {
            continue;
        }
        println!(
            "server_{cmd}_p50_ms: {:.3}\nserver_{cmd}_p99_ms: {:.3}\nserver_{cmd}_p999_ms: {:.3}",
            ms(l.p50),
            ms(l.p99),
            ms(l.max)
        );
    }
    // The keeper's summary may lag the end by a step; the full scan is the truth.
    println!("status_items_done: {}", summary.items.done);
    if full.items.done != args.items {
        anyhow::bail!(
            "{} of {} items complete after the run",
            full.items.done,
            args.items
        );
    }
    let unretaken = sim.killed.lock().map_or(0, |k| k.len());
    if unretaken > 0 {
        anyhow::bail!("{unretaken} killed items were never leased again");
    }
    Ok(if doubles == 0 { 0 } else { crate::exit::FATAL })
}

/// One simulated worker: lease, work (renewing and checkpointing), complete; sometimes
/// killed or stalled.
async fn worker(sim: &Sim, i: usize) -> Result<(), Error> {
    let store = &sim.stores[i % sim.stores.len()];
    let mut coord = Coordinator::new(store.clone(), sim.protocol.clone());
    loop {
        let t = Instant::now();
        let acquired = match coord.acquire().await {
            Err(e) if e.is_transient() => {
                sim.tally().store_errors += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            other => other?,
        };
        let mut lease = match acquired {
            Acquired::Lease(l) => l,
            Acquired::NoWorkLeft => return Ok(()),
            Acquired::AllLeasedElsewhere { wait, .. } => {
                tokio::time::sleep(
                    wait.clamp(Duration::from_millis(10), Duration::from_millis(250)),
                )
                .await;
                continue;
            }
        };
        let acquired = t.elapsed();
        let retake = sim
            .killed
            .lock()
            .ok()
            .and_then(|mut k| k.remove(lease.id()))
            .map(|at| at.elapsed());
        let mut iv = Interval {
            item: lease.id().to_string(),
            worker: coord.worker_id().to_string(),
            start: lease.expires_at_ms() - lease.store_lease().as_millis() as i64,
            end: lease.expires_at_ms(),
        };
        let (work, roll, at): (Duration, f64, f64) = {
            let mut rng = rand::thread_rng();
            let (lo, hi) = sim.work;
            let w = if hi > lo { rng.gen_range(lo..=hi) } else { lo };
            (w, rng.gen(), rng.gen())
        };
        let kill = roll < sim.kill_rate;
        let pause = !kill && roll < sim.kill_rate + sim.pause_rate;
        let begin = Instant::now();
        let end = begin + work;
        let event_at = begin + work.mul_f64(at);
        let renew_every = lease.renew_every().unwrap_or(Duration::from_secs(3600));
        let mut next_renew = begin + renew_every;
        let mut next_checkpoint = begin + sim.checkpoint;
        let mut event_pending = kill || pause;
        let (mut writes, mut renewals, mut checkpoints) = (Vec::new(), 0u64, 0u64);
        let (mut lost, mut completed, mut killed, mut paused) = (false, false, false, false);
        let mut store_errors = 0u64;
        loop {
            let next = [
                Some(end),
                Some(next_renew),
                Some(next_checkpoint),
                event_pending.then_some(event_at),
            ]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(end);
            tokio::time::sleep_until(next.into()).await;
            let now = Instant::now();
            if event_pending && now >= event_at {
                event_pending = false;
                if kill {
                    // SIGKILL: the lease stays as the store last saw it.
                    iv.end = lease.expires_at_ms();
                    killed = true;
                    break;
                }
                paused = true;
                tokio::time::sleep(sim.pause).await;
                continue;
            }
            if now >= end {
                let t = Instant::now();
                iv.end = iv.end.min(wall_ms());
                let r = lease
                    .complete(&Progress {
                        cursor: Some(Position::Doc(999)),
                        docs: 1000,
                        covered: 1000,
                        bytes: 100_000,
                        ..Progress::default()
                    })
                    .await;
                match r {
                    Ok(()) => {
                        writes.push(t.elapsed());
                        completed = true;
                    }
                    Err(Error::LeaseLost { .. }) => lost = true,
                    // The lease stays until it expires; the item is taken again then.
                    Err(e) if e.is_transient() => store_errors += 1,
                    Err(e) => return Err(e),
                }
                break;
            }
            let result = if now >= next_renew {
                let t = Instant::now();
                let r = lease.renew().await;
                next_renew = Instant::now() + renew_every;
                if r.is_ok() {
                    writes.push(t.elapsed());
                    renewals += 1;
                    iv.end = lease.expires_at_ms();
                }
                r
            } else if now >= next_checkpoint {
                let t = Instant::now();
                let frac = (now - begin).as_secs_f64() / work.as_secs_f64().max(1e-9);
                let docs = ((frac * 1000.0) as u64).clamp(1, 999);
                let r = lease
                    .checkpoint(&Progress {
                        cursor: Some(Position::Doc(docs - 1)),
                        docs,
                        covered: docs,
                        bytes: docs * 100,
                        ..Progress::default()
                    })
                    .await;
                next_checkpoint = Instant::now() + sim.checkpoint;
                if r.is_ok() {
                    writes.push(t.elapsed());
                    checkpoints += 1;
                    iv.end = lease.expires_at_ms();
                }
                r
            } else {
                Ok(())
            };
            match result {
                Ok(()) => {}
                Err(Error::LeaseLost { .. }) => {
                    lost = true;
                    break;
                }
                Err(e) if e.is_transient() => store_errors += 1,
                Err(e) => return Err(e),
            }
        }
        if killed {
            if let Ok(mut k) = sim.killed.lock() {
                k.insert(iv.item.clone(), Instant::now());
            }
            // A restarted process is a new worker.
            coord = Coordinator::new(store.clone(), sim.protocol.clone());
        }
        let mut t = sim.tally();
        t.acquire.push(acquired);
        t.writes.extend(writes);
        t.renewals += renewals;
        t.checkpoints += checkpoints;
        t.completions += completed as u64;
        t.kills += killed as u64;
        t.pauses += paused as u64;
        t.leases_lost += lost as u64;
        t.store_errors += store_errors;
        t.retake.extend(retake);
        t.intervals.push(iv);
    }
}
