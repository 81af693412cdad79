//! The fleet: heartbeat leases under SIGKILL, and the fleet-wide rate limit.
//!
//! - `heartbeat_*`: 4 `rfs run` workers (short heartbeat leases, a long work period) move
//!   three indices into the test server; the driver SIGKILLs (never SIGTERMs) workers
//!   while they hold an item and restarts them. Every killed worker's item is leased
//!   again by another worker within 2× the store lease (seen through `rfs status`), and
//!   at the end every document is in the target once (counts per index equal the live
//!   documents, `rfs verify --all` passes) and every item is complete. One test per store:
//!   SQLite, PostgreSQL, Redis.
//! - `fleet_rate_limit_holds_across_workers`: 3 workers with `--parallel 2` and a fleet
//!   limit of 150 documents per second; the `_bulk` items the server received over a
//!   window of seconds stay within the limit.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use testkit::server::{ServerConfig, TestServer};

mod common;
use common::{log_tails as tail, lucene_repository, rfs_at as rfs, status_at as status};

const SNAPSHOT: &str = "fleet";
/// `--renew-seconds` of the heartbeat tests: the store lease is 3 × this.
const RENEW_SECONDS: f64 = 1.0;

enum Store {
    Sqlite(tempfile::TempDir),
    Postgres(testkit::services::Postgres),
    Redis(testkit::services::Redis),
}

impl Store {
    fn start(kind: &str, test: &str) -> Option<Store> {
        match kind {
            "sqlite" => Some(Store::Sqlite(tempfile::tempdir().unwrap())),
            "postgres" => testkit::services::Postgres::start(test).map(Store::Postgres),
            "redis" => testkit::services::Redis::start(test).map(Store::Redis),
            other => panic!("unknown store {other}"),
        }
    }

    fn url(&self) -> String {
        match self {
            Store::Sqlite(d) => format!("sqlite://{}", d.path().join("state.db").display()),
            Store::Postgres(p) => p.url(),
            Store::Redis(r) => r.url(),
        }
    }
}

/// A snapshot with one single-shard index per fixture; returns the live count per index.
fn build_repository(
    fixtures: &Path,
    repo: &Path,
    shards: &[(&str, &str)],
) -> BTreeMap<String, u64> {
    lucene_repository(fixtures, repo, SNAPSHOT, shards)
}

/// Item id → (holder, attempts) of every lease in the status.
fn leases(st: &Value) -> HashMap<String, (String, u32)> {
    st["leases"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|l| {
                    let holder = l["holder"].as_str()?.to_string();
                    let attempts = l["attempts"].as_u64()? as u32;
                    Some((l["id"].as_str()?.to_string(), (holder, attempts)))
                })
                .collect()
        })
        .unwrap_or_default()
}

struct Fleet {
    bin: PathBuf,
    args: Vec<String>,
    dir: PathBuf,
    workers: Vec<Option<Child>>,
    starts: usize,
}

impl Fleet {
    fn spawn(&mut self, slot: usize) {
        self.starts += 1;
        let log =
            std::fs::File::create(self.dir.join(format!("worker-{slot}-{}.log", self.starts)))
                .unwrap();
        let child = Command::new(&self.bin)
            .arg("run")
            .args(&self.args)
            .arg("--failure-log")
            .arg(self.dir.join(format!("failures-{slot}.jsonl")))
            .env("RFS_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("spawn rfs run");
        self.workers[slot] = Some(child);
    }

    /// Waits for every worker to exit; each must exit 0.
    fn wait_all(&mut self, deadline: Instant) {
        for (slot, w) in self.workers.iter_mut().enumerate() {
            let Some(c) = w else { continue };
            loop {
                if let Some(st) = c.try_wait().unwrap() {
                    assert_eq!(st.code(), Some(0), "worker {slot}\n{}", tail(&self.dir));
                    break;
                }
                if Instant::now() > deadline {
                    let _ = c.kill();
                    panic!("worker {slot} did not finish in time\n{}", tail(&self.dir));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            *w = None;
        }
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for c in self.workers.iter_mut().flatten() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Three items (one per index, ~1,800 documents each at 100 documents per second per
/// worker) and four workers: one is always idle, waiting to take a killed worker's item.
fn heartbeat_chaos(kind: &str) {
    let test = format!("heartbeat_{kind}");
    let Some(fixtures) = testkit::fixtures::require_fixtures(&test) else {
        return;
    };
    let Some(store) = Store::start(kind, &test) else {
        return;
    };
    let store_url = store.url();
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("repo");
    let expected = build_repository(
        &fixtures,
        &repo,
        &[
            ("a", "l10-best_speed-nocfs-soft"),
            ("b", "l8-best_speed-nocfs-nosoft"),
            ("c", "l10-best_compression-cfs-nosoft"),
        ],
    );
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_rfs"));
    let renew = RENEW_SECONDS.to_string();
    let mut args = strings(&[
        "--repo",
        repo.to_str().unwrap(),
        "--snapshot",
        SNAPSHOT,
        "--target",
        &server.url(),
        "--store",
        &store_url,
        // The work period: long, so that items are not handed to successors here.
        "--lease-seconds",
        "600",
        "--renew-seconds",
        &renew,
        "--checkpoint-seconds",
        "0.3",
        "--control-seconds",
        "0.2",
        "--max-batch-docs",
        "25",
        "--max-docs-per-sec",
        "100",
        "--parallel",
        "1",
        "--no-progress",
    ]);
    args.push("--max-attempts".into());
    args.push("20".into());
    const WORKERS: usize = 4;
    let mut fleet = Fleet {
        bin: bin.clone(),
        args,
        dir: work.path().to_path_buf(),
        workers: (0..WORKERS).map(|_| None).collect(),
        starts: 0,
    };
    for slot in 0..WORKERS {
        fleet.spawn(slot);
    }
    let store_lease = Duration::from_secs_f64(3.0 * RENEW_SECONDS);
    let started = Instant::now();
    let mut kills = 0;
    let mut retakes: Vec<Duration> = Vec::new();
    let mut next_kill = started + Duration::from_secs(3);
    while kills < 3 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "three kills did not happen in time\n{}",
            tail(work.path())
        );
        std::thread::sleep(Duration::from_millis(100));
        if Instant::now() < next_kill {
            continue;
        }
        // A worker that holds an item now.
        let held = leases(&status(&bin, &store_url));
        let victim = (0..WORKERS).find_map(|slot| {
            let pid = fleet.workers[slot].as_ref()?.id();
            let mark = format!("-{pid}-");
            let items: Vec<(String, u32)> = held
                .iter()
                .filter(|(_, (h, _))| h.contains(&mark))
                .map(|(id, (_, attempts))| (id.clone(), *attempts))
                .collect();
            (!items.is_empty()).then_some((slot, pid, mark, items))
        });
        let Some((slot, pid, mark, items)) = victim else {
            continue;
        };
        let mut child = fleet.workers[slot].take().unwrap();
        child.kill().unwrap(); // SIGKILL
        let killed_at = Instant::now();
        let _ = child.wait();
        kills += 1;
        eprintln!("heartbeat: killed worker {pid} holding {items:?}");
        std::thread::sleep(Duration::from_millis(300));
        fleet.spawn(slot);
        // Each of its items is leased by someone else within 2× its store lease (the base
        // lease doubled for each earlier attempt of the item).
        for (item, attempts) in items {
            let limit = store_lease * 2 * (1u32 << attempts.saturating_sub(1).min(4));
            loop {
                let st = status(&bin, &store_url);
                let taken = leases(&st)
                    .get(&item)
                    .is_some_and(|(h, _)| !h.contains(&mark));
                if taken {
                    retakes.push(killed_at.elapsed());
                    break;
                }
                assert!(
                    killed_at.elapsed() <= limit,
                    "item {item} of killed worker {pid} not leased again within {limit:?}\n{st:#}\n{}",
                    tail(work.path())
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        next_kill = Instant::now() + Duration::from_secs(2);
    }
    eprintln!("heartbeat ({kind}): {kills} kills, retaken after {retakes:?}");
    fleet.wait_all(Instant::now() + Duration::from_secs(90));

    let st = status(&bin, &store_url);
    assert_eq!(st["finished"], Value::Bool(true), "{st:#}");
    assert_eq!(st["items"]["failed"].as_u64(), Some(0), "{st:#}");
    assert_eq!(st["items"]["done"], st["items"]["total"], "{st:#}");
    for slot in 0..WORKERS {
        let p = work.path().join(format!("failures-{slot}.jsonl"));
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        assert!(text.trim().is_empty(), "{}: {text}", p.display());
    }
    for (index, want) in &expected {
        assert_eq!(server.doc_count(index), *want, "documents in {index}");
    }
    let out = rfs(
        &bin,
        &[
            "verify",
            "--all",
            "--repo",
            repo.to_str().unwrap(),
            "--snapshot",
            SNAPSHOT,
            "--target",
            &server.url(),
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "verify:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn heartbeat_sqlite_sigkilled_items_are_retaken() {
    heartbeat_chaos("sqlite");
}

#[test]
fn heartbeat_postgres_sigkilled_items_are_retaken() {
    heartbeat_chaos("postgres");
}

#[test]
fn heartbeat_redis_sigkilled_items_are_retaken() {
    heartbeat_chaos("redis");
}

#[test]
fn fleet_rate_limit_holds_across_workers() {
    let test = "fleet_rate_limit";
    let Some(fixtures) = testkit::fixtures::require_fixtures(test) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let store_url = format!("sqlite://{}", work.path().join("state.db").display());
    let repo = work.path().join("repo");
    let expected = build_repository(
        &fixtures,
        &repo,
        &[
            ("a", "l10-best_speed-nocfs-soft"),
            ("b", "l8-best_speed-nocfs-nosoft"),
        ],
    );
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_rfs"));
    const LIMIT: f64 = 150.0;
    let limit = LIMIT.to_string();
    const WORKERS: usize = 3;
    let mut fleet = Fleet {
        bin: bin.clone(),
        args: strings(&[
            "--repo",
            repo.to_str().unwrap(),
            "--snapshot",
            SNAPSHOT,
            "--target",
            &server.url(),
            "--store",
            &store_url,
            "--split-docs",
            "600",
            "--max-batch-docs",
            "20",
            "--parallel",
            "2",
            "--fleet-max-docs-per-sec",
            &limit,
            "--no-progress",
        ]),
        dir: work.path().to_path_buf(),
        workers: (0..WORKERS).map(|_| None).collect(),
        starts: 0,
    };
    for slot in 0..WORKERS {
        fleet.spawn(slot);
    }
    // Count from the server's side over a window once the workers are under way.
    let items = || server.stats().bulk_items;
    let started = Instant::now();
    while items() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "nothing sent\n{}",
            tail(work.path())
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(2));
    let (n0, t0) = (items(), Instant::now());
    std::thread::sleep(Duration::from_secs(10));
    let (n1, t1) = (items(), Instant::now());
    let secs = (t1 - t0).as_secs_f64();
    let rate = (n1 - n0) as f64 / secs;
    eprintln!(
        "fleet limit {LIMIT}/s: the server received {} items in {secs:.1} s = {rate:.0}/s",
        n1 - n0
    );
    // Within the limit, with room for one window's budget spent at the window's edge and
    // for batches in flight at both ends of the count.
    assert!(
        (n1 - n0) as f64 <= LIMIT * (secs + 1.0) + 2.0 * 20.0 * (WORKERS * 2) as f64,
        "{rate:.0} documents per second over a fleet limit of {LIMIT}"
    );
    // And the limit is what holds the fleet back, not something else.
    assert!(rate >= LIMIT * 0.5, "only {rate:.0} documents per second");
    fleet.wait_all(Instant::now() + Duration::from_secs(90));
    for (index, want) in &expected {
        assert_eq!(server.doc_count(index), *want, "documents in {index}");
    }
}
