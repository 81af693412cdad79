//! The chaos test: 4 `rfs run` processes migrate a multi-index snapshot (several shards,
//! hard and soft deletes, a shard split into doc-id ranges) into the test server while it
//! injects 429s, 5xx and dropped connections. A driver SIGKILLs random workers at random
//! moments and restarts them, sends SIGTERM to some instead (each must exit 5 within a
//! bounded time, its items released: no lease of it is left for the next worker to wait
//! out), pauses and resumes the fleet once and restarts the store once. At the end: `rfs verify --all` passes (every live document present with an
//! identical `_source`, counts equal so nothing extra), every work item is complete, the
//! failure logs are empty, and each index holds the live count its Lucene writer recorded.
//!
//! Store: `RFS_CHAOS_STORE=postgres` (default), `sqlite` or `redis` — see `scripts/chaos`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;
use serde_json::Value;
use snapshot::write::{write_repository, IndexSpec, ShardSource, SnapshotSpec, WriteOptions};
use testkit::server::{Faults, ServerConfig, TestServer};

mod common;
use common::{expected_live, log_tails as tail, rfs_at as rfs, status_at as status};

const WORKERS: usize = 4;
const SNAPSHOT: &str = "chaos";

enum Store {
    Sqlite(tempfile::TempDir),
    Postgres(testkit::services::Postgres),
    Redis(testkit::services::Redis),
}

impl Store {
    fn start(kind: &str) -> Option<Store> {
        match kind {
            "sqlite" => Some(Store::Sqlite(tempfile::tempdir().unwrap())),
            "postgres" => testkit::services::Postgres::start("chaos").map(Store::Postgres),
            "redis" => testkit::services::Redis::start("chaos").map(Store::Redis),
            other => panic!("RFS_CHAOS_STORE={other}: expected sqlite, postgres or redis"),
        }
    }

    fn url(&self) -> String {
        match self {
            Store::Sqlite(d) => format!("sqlite://{}", d.path().join("state.db").display()),
            Store::Postgres(p) => p.url(),
            Store::Redis(r) => r.url(),
        }
    }

    /// Stops the store for a moment and starts it again with its data.
    fn restart(&mut self) {
        match self {
            // An embedded file: nothing to restart; the workers reopen it on every call.
            Store::Sqlite(_) => {}
            Store::Postgres(p) => {
                p.stop();
                std::thread::sleep(Duration::from_millis(1500));
                p.start_again();
            }
            Store::Redis(r) => {
                r.stop();
                std::thread::sleep(Duration::from_millis(1500));
                r.start_again();
            }
        }
    }
}

/// The Lucene fixture indexes used, with the index name each becomes.
/// (name, shards as fixture directory names)
const INDICES: &[(&str, &[&str])] = &[
    // Soft updates, soft-deleted tombstones and hard deletes. Every fixture index uses the
    // same ids, so each goes to its own index: as shards of one index they would collide.
    ("soft", &["l9-best_speed-cfs-soft"]),
    ("soft2", &["l10-best_compression-nocfs-soft"]),
    // Hard deletes only, Lucene 8.
    ("hard", &["l8-best_speed-nocfs-nosoft"]),
    // The shard that is split into doc-id ranges (--split-docs).
    ("big", &["l10-best_speed-nocfs-soft"]),
];

/// Writes the snapshot repository; returns the expected live documents per index.
fn build_repository(fixtures: &Path, repo: &Path) -> BTreeMap<String, u64> {
    let mut spec = SnapshotSpec::new(SNAPSHOT);
    let mut expected = BTreeMap::new();
    for (name, shards) in INDICES {
        let mut sources = Vec::new();
        let mut live = 0;
        for s in *shards {
            let dir = fixtures.join("lucene/generated").join(s);
            live += expected_live(&dir);
            sources.push(ShardSource::Lucene(Arc::new(
                lucene::FsDirectory::open(&dir).unwrap(),
            )));
        }
        let mut ix =
            IndexSpec::from_lucene_dir(name, &fixtures.join("lucene/generated").join(shards[0]))
                .unwrap();
        ix.settings.insert(
            "index.soft_deletes.enabled".into(),
            Value::String("true".into()),
        );
        ix.shards = sources;
        spec.indices.push(ix);
        expected.insert(name.to_string(), live);
    }
    // A real Elasticsearch 7.10 index with soft-deleted updates and deletes.
    let es = fixtures.join("snapshots/ES_7_10_Updates_Deletes_w_Soft");
    let es_repo = snapshot::Repository::open(
        snapshot::open_blob_store(es.to_str().unwrap(), &Default::default()).unwrap(),
    )
    .unwrap();
    let es_spec = SnapshotSpec::from_snapshot(&es_repo.snapshot("rfs_snapshot").unwrap()).unwrap();
    for ix in es_spec.indices {
        expected.insert(ix.name.clone(), 3);
        spec.indices.push(ix);
    }
    write_repository(repo, &[spec], &WriteOptions::default()).unwrap();
    expected
}

struct Fleet {
    bin: PathBuf,
    args: Vec<String>,
    dir: PathBuf,
    workers: Vec<Option<Child>>,
    /// When each worker was started.
    started: Vec<Instant>,
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
        self.started[slot] = Instant::now();
    }

    /// Exit codes of workers that ended since the last call (their slots are emptied).
    fn reap(&mut self) -> Vec<(usize, Option<i32>)> {
        let mut out = Vec::new();
        for (i, w) in self.workers.iter_mut().enumerate() {
            if let Some(c) = w {
                if let Some(st) = c.try_wait().unwrap() {
                    out.push((i, st.code()));
                    *w = None;
                }
            }
        }
        out
    }
}

/// Sends SIGTERM to `child` (an `rfs run` worker) and checks the graceful stop: exit 5
/// within a bound (in-flight batches finish or are abandoned after 20 s, then the items
/// are checkpointed and released), and no lease of that process is left in the store, so
/// a worker started next takes its items at once instead of after the lease. A worker
/// whose SIGTERM came as the migration finished may exit 0 instead, but only if no item
/// is left open; that returns false (not a graceful stop).
fn sigterm_and_check(bin: &Path, store: &str, mut child: Child, dir: &Path) -> bool {
    let pid = child.id();
    let signalled = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code();
        }
        if signalled.elapsed() > Duration::from_secs(45) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "worker {pid} still running 45 s after SIGTERM\n{}",
                tail(dir)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let st = status(bin, store);
    if code == Some(0) {
        let items = &st["items"];
        assert!(
            items["waiting"] == 0 && items["leased"] == 0,
            "worker {pid} exited 0 after SIGTERM with items open: {items}\n{}",
            tail(dir)
        );
        eprintln!("chaos: worker {pid} had finished the migration when SIGTERM came");
        return false;
    }
    assert_eq!(code, Some(5), "worker {pid} after SIGTERM\n{}", tail(dir));
    let mark = format!("-{pid}-");
    let held: Vec<&Value> = st["leases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["holder"].as_str().is_some_and(|h| h.contains(&mark)))
        .collect();
    assert!(
        held.is_empty(),
        "worker {pid} left leases after SIGTERM: {held:?}"
    );
    eprintln!(
        "chaos: worker {pid} stopped by SIGTERM in {:?}",
        signalled.elapsed()
    );
    true
}

#[test]
fn chaos_fleet_migrates_every_document_exactly_once() {
    let Some(fixtures) = testkit::fixtures::require_fixtures("chaos") else {
        return;
    };
    let kind = std::env::var("RFS_CHAOS_STORE").unwrap_or_else(|_| "postgres".into());
    let Some(mut store) = Store::start(&kind) else {
        return;
    };
    let store_url = store.url();
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("repo");
    let expected = build_repository(&fixtures, &repo);

    let server = TestServer::start(ServerConfig {
        seed: Some(7),
        ..ServerConfig::opensearch("2.11.0")
    });
    server.set_faults(Faults {
        reject_429: 0.08,
        retry_after_secs: 0,
        error_500: 0.03,
        error_503: 0.03,
        drop_connection: 0.03,
        latency_ms: 5,
        latency_jitter_ms: 20,
        bulk_only: true,
        ..Faults::default()
    });

    let bin = PathBuf::from(env!("CARGO_BIN_EXE_rfs"));
    let args: Vec<String> = [
        "--repo",
        repo.to_str().unwrap(),
        "--snapshot",
        SNAPSHOT,
        "--target",
        &server.url(),
        "--store",
        &store_url,
        "--lease-seconds",
        "4",
        "--max-attempts",
        "40",
        "--split-docs",
        "700",
        "--checkpoint-seconds",
        "0.3",
        "--control-seconds",
        "0.2",
        "--max-batch-docs",
        "40",
        "--concurrency",
        "2",
        "--max-docs-per-sec",
        "120",
        "--no-progress",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut fleet = Fleet {
        bin: bin.clone(),
        args,
        dir: work.path().to_path_buf(),
        workers: (0..WORKERS).map(|_| None).collect(),
        started: vec![Instant::now(); WORKERS],
        starts: 0,
    };
    for slot in 0..WORKERS {
        fleet.spawn(slot);
    }

    let started = Instant::now();
    let deadline = started + Duration::from_secs(170);
    let mut rng = rand::thread_rng();
    let mut kills = 0;
    let mut sigterms = 0;
    let mut paused = false;
    let mut paused_for = Duration::ZERO;
    let mut store_restarted = false;
    let mut next_kill = started + Duration::from_millis(rng.gen_range(1500..3000));
    let mut finished_codes = Vec::new();
    loop {
        assert!(
            Instant::now() < deadline,
            "the fleet did not finish in time\n{}",
            tail(work.path())
        );
        for (slot, code) in fleet.reap() {
            match code {
                Some(0) => finished_codes.push(slot),
                other => panic!("worker {slot} exited with {other:?}\n{}", tail(work.path())),
            }
        }
        if finished_codes.len() == WORKERS
            || (fleet.workers.iter().all(Option::is_none) && !finished_codes.is_empty())
        {
            break;
        }
        let t = started.elapsed();
        // Kill random workers at random moments during the first 25 seconds of chaos (the
        // pause below does not count), and in any case until the driver has killed three
        // and stopped two gracefully; restart them.
        let chaos_time = t.saturating_sub(paused_for);
        let quota_met = kills >= 3 && sigterms >= 2;
        if (chaos_time < Duration::from_secs(25) || !quota_met) && Instant::now() >= next_kill {
            let live: Vec<usize> = (0..WORKERS)
                .filter(|&i| fleet.workers[i].is_some())
                .collect();
            if !live.is_empty() {
                // After each kill, a graceful stop (SIGTERM) for a worker that had
                // time to set up its signal handling.
                let settled: Vec<usize> = live
                    .iter()
                    .copied()
                    .filter(|&i| fleet.started[i].elapsed() > Duration::from_millis(1500))
                    .collect();
                let graceful = kills > sigterms && !settled.is_empty();
                let pool = if graceful { &settled } else { &live };
                let slot = pool[rng.gen_range(0..pool.len())];
                let mut c = fleet.workers[slot].take().unwrap();
                if graceful {
                    if !sigterm_and_check(&bin, &store_url, c, work.path()) {
                        // It had finished with the migration: nothing to restart.
                        finished_codes.push(slot);
                        continue;
                    }
                    sigterms += 1;
                } else {
                    c.kill().unwrap(); // SIGKILL
                    let _ = c.wait();
                    kills += 1;
                }
                std::thread::sleep(Duration::from_millis(rng.gen_range(0..400)));
                fleet.spawn(slot);
            }
            next_kill = Instant::now() + Duration::from_millis(rng.gen_range(1000..3500));
        }
        // Pause the fleet once, check that it stops sending, then resume.
        if !paused && t > Duration::from_secs(8) {
            paused = true;
            let pause_started = Instant::now();
            let out = rfs(&bin, &["pause", "--store", &store_url]);
            assert!(
                out.status.success(),
                "pause: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            // Paused workers finish their in-flight batches (which may be retrying through
            // injected faults), checkpoint and release; once no lease is held, nothing may
            // be written any more.
            let pause_deadline = Instant::now() + Duration::from_secs(45);
            let leased_while_paused = loop {
                std::thread::sleep(Duration::from_millis(500));
                let leased = status(&bin, &store_url)["items"]["leased"]
                    .as_u64()
                    .unwrap();
                if leased == 0 || Instant::now() > pause_deadline {
                    break leased;
                }
            };
            let before = server.total_doc_count();
            std::thread::sleep(Duration::from_secs(2));
            let after = server.total_doc_count();
            assert_eq!(
                before, after,
                "documents were written while the fleet was paused"
            );
            assert_eq!(
                leased_while_paused, 0,
                "paused workers must release their leases"
            );
            let out = rfs(&bin, &["resume", "--store", &store_url]);
            assert!(
                out.status.success(),
                "resume: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            paused_for = pause_started.elapsed();
            // The first event after a pause comes soon: the paused time gave no chances.
            next_kill = Instant::now() + Duration::from_millis(rng.gen_range(300..1000));
        }
        // Restart the store once.
        if !store_restarted && t > Duration::from_secs(16) {
            store_restarted = true;
            store.restart();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "chaos: {kills} workers killed, {sigterms} stopped by SIGTERM, {} starts, finished in {:?}",
        fleet.starts,
        started.elapsed()
    );
    assert!(kills >= 3, "the driver killed only {kills} workers");
    assert!(
        sigterms >= 2,
        "the driver stopped only {sigterms} workers by SIGTERM"
    );
    assert!(paused && store_restarted);

    // Every work item complete, nothing FAILED.
    let st = status(&bin, &store_url);
    assert_eq!(st["finished"], Value::Bool(true), "{st:#}");
    let items = &st["items"];
    assert_eq!(items["failed"].as_u64(), Some(0), "{st:#}");
    assert_eq!(items["done"].as_u64(), items["total"].as_u64(), "{st:#}");
    assert!(
        items["total"].as_u64().unwrap() > 6,
        "the big shard should have been split: {st:#}"
    );

    // The failure logs are empty (or absent).
    for slot in 0..WORKERS {
        let p = work.path().join(format!("failures-{slot}.jsonl"));
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        assert!(
            text.trim().is_empty(),
            "failure log {} is not empty:\n{text}",
            p.display()
        );
    }

    // Each index holds exactly the live documents its writer recorded.
    for (index, want) in &expected {
        assert_eq!(server.doc_count(index), *want, "documents in {index}");
    }

    // verify: counts and every document's _source, against the snapshot.
    server.set_faults(Faults::default());
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
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "verify failed:\n{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for index in expected.keys() {
        assert!(
            report
                .lines()
                .any(|l| l.starts_with(index.as_str()) && l.trim_end().ends_with("ok")),
            "{index} not verified:\n{report}"
        );
    }
}
