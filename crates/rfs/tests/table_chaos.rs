//! The table chaos test: 4 `rfs table run` processes copy a PostgreSQL table (ULID keys,
//! hourly slots) into the test server's `_bulk` while it injects 429s, 5xx and dropped
//! connections; the coordination store is Redis. A driver SIGKILLs random workers at random
//! moments and restarts them, and restarts Redis once. At the end every row is in the index
//! exactly once (`_id` = key, document count = row count) with the attributes PostgreSQL
//! holds (queried here independently), every slot is complete, the failure logs are empty,
//! and `rfs table verify --all` agrees.
//!
//! The same fleet into DynamoDB: `dynalite` behind testkit's DynamoDB fault proxy (throttling
//! errors of both kinds, 500s, partial `UnprocessedItems` answers, connections dropped before
//! and after the write), SIGKILLs and a Redis restart; every row read back with the official
//! AWS SDK for Rust from dynalite directly, exactly once, attribute by attribute.

mod common;
mod dynamo;
mod table;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rand::Rng;
use serde_json::Value;
use table::{micros, ulid, Pg};
use testkit::server::{Faults, ServerConfig, TestServer};

use common::log_tails as tail;

const WORKERS: usize = 4;
const ROWS: u64 = 8000;

struct Fleet {
    args: Vec<String>,
    /// AWS credentials for a DynamoDB sink.
    aws: bool,
    dir: PathBuf,
    workers: Vec<Option<Child>>,
    starts: usize,
}

/// The flags every chaos worker shares: short leases and checkpoints, small throttled
/// batches, two slots at once.
fn worker_flags(max_batch_docs: u32, max_docs_per_sec: u32) -> Vec<String> {
    let mut flags: Vec<String> = [
        "--lease-seconds",
        "4",
        "--max-attempts",
        "40",
        "--checkpoint-seconds",
        "0.3",
        "--control-seconds",
        "0.2",
        "--concurrency",
        "2",
        "--page-rows",
        "100",
        "--parallel",
        "2",
        "--no-progress",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    flags.extend([
        "--max-batch-docs".to_string(),
        max_batch_docs.to_string(),
        "--max-docs-per-sec".to_string(),
        max_docs_per_sec.to_string(),
    ]);
    flags
}

impl Fleet {
    /// `WORKERS` workers with `args`, all started.
    fn start(args: Vec<String>, aws: bool, dir: &std::path::Path) -> Fleet {
        let mut fleet = Fleet {
            args,
            aws,
            dir: dir.to_path_buf(),
            workers: (0..WORKERS).map(|_| None).collect(),
            starts: 0,
        };
        for slot in 0..WORKERS {
            fleet.spawn(slot);
        }
        fleet
    }

    fn spawn(&mut self, slot: usize) {
        self.starts += 1;
        let log =
            std::fs::File::create(self.dir.join(format!("worker-{slot}-{}.log", self.starts)))
                .unwrap();
        let mut c = Command::new(env!("CARGO_BIN_EXE_rfs"));
        if self.aws {
            dynamo::aws_env(&mut c);
        }
        let child = c
            .args(["table", "run"])
            .args(&self.args)
            .arg("--failure-log")
            .arg(self.dir.join(format!("failures-{slot}.jsonl")))
            .env("RFS_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("spawn rfs table run");
        self.workers[slot] = Some(child);
    }

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

/// Runs the fleet to its end: SIGKILLs a random worker every 1–3 s (restarting it) in the
/// first 20 s and restarts Redis once; every worker must end with exit 0. The kills.
fn chaos(fleet: &mut Fleet, redis: &mut testkit::services::Redis) -> usize {
    let started = Instant::now();
    let deadline = started + Duration::from_secs(180);
    let mut rng = rand::thread_rng();
    let mut kills = 0;
    let mut restarted = false;
    let mut next_kill = started + Duration::from_millis(rng.gen_range(1500..3000));
    let mut finished = 0;
    loop {
        assert!(
            Instant::now() < deadline,
            "the fleet did not finish in time\n{}",
            tail(&fleet.dir)
        );
        for (slot, code) in fleet.reap() {
            match code {
                // 0: this worker saw the end; 4 is not possible (workers wait for leases
                // only with --wait), 3 is not used by `table run`.
                Some(0) => finished += 1,
                other => panic!("worker {slot} exited with {other:?}\n{}", tail(&fleet.dir)),
            }
        }
        if fleet.workers.iter().all(Option::is_none) && finished > 0 {
            break;
        }
        let t = started.elapsed();
        if t < Duration::from_secs(20) && Instant::now() >= next_kill {
            let live: Vec<usize> = (0..WORKERS)
                .filter(|&i| fleet.workers[i].is_some())
                .collect();
            if !live.is_empty() {
                let slot = live[rng.gen_range(0..live.len())];
                let mut c = fleet.workers[slot].take().unwrap();
                c.kill().unwrap(); // SIGKILL
                let _ = c.wait();
                kills += 1;
                std::thread::sleep(Duration::from_millis(rng.gen_range(0..400)));
                fleet.spawn(slot);
            }
            next_kill = Instant::now() + Duration::from_millis(rng.gen_range(1000..3000));
        }
        if !restarted && t > Duration::from_secs(7) {
            restarted = true;
            redis.stop();
            std::thread::sleep(Duration::from_millis(1500));
            redis.start_again();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "table chaos: {kills} kills, {} starts, {:?}",
        fleet.starts,
        started.elapsed()
    );
    kills
}

#[test]
fn table_fleet_on_redis_copies_every_row_exactly_once() {
    let Some(pg) = Pg::start("table_fleet_on_redis_copies_every_row_exactly_once") else {
        return;
    };
    let Some(mut redis) = testkit::services::Redis::start("table_chaos") else {
        return;
    };
    let ids: Vec<String> = (0..ROWS)
        .map(|i| {
            ulid(
                1_714_521_600_000 + i * 5_000,
                u128::from(i) * 0x5bd1_e995_1234_5678,
            )
        })
        .collect();
    pg.exec(
        "CREATE TABLE room_events (id text PRIMARY KEY, room_id uuid NOT NULL, at timestamptz NOT NULL,
                                   amount numeric, payload jsonb, body text, blob bytea);",
    );
    pg.query(
        "INSERT INTO room_events
         SELECT id, md5(i::text)::uuid, timestamptz '2024-05-01' + i * interval '5 s', i / 8.0,
                jsonb_build_object('i', i, 'even', i % 2 = 0), repeat('b', (i % 50)::int), int8send(i)
         FROM unnest($1::text[]) WITH ORDINALITY AS u(id, i)",
        &[&ids],
    );
    let server = TestServer::start(ServerConfig {
        seed: Some(11),
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
    let work = tempfile::tempdir().unwrap();
    let store = redis.url();
    let sink = format!("{}/room_events", server.url());
    let common: Vec<String> = [
        "--source",
        &pg.url(),
        "--table",
        "room_events",
        "--key",
        "id",
        "--slot-by",
        "time:1h",
        "--sink",
        &sink,
        "--store",
        &store,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut args = common.clone();
    args.extend(worker_flags(40, 150));
    let mut fleet = Fleet::start(args, false, work.path());
    let kills = chaos(&mut fleet, &mut redis);
    assert!(kills >= 3, "only {kills} kills");

    let st = table::run_ok({
        let mut c = table::rfs();
        c.args(["status", "--json", "--store", &store]);
        c
    });
    let st: Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!(st["finished"], Value::Bool(true), "{st:#}");
    assert_eq!(st["items"]["failed"].as_u64(), Some(0), "{st:#}");
    assert_eq!(st["items"]["done"], st["items"]["total"], "{st:#}");
    for slot in 0..WORKERS {
        let p = work.path().join(format!("failures-{slot}.jsonl"));
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        assert!(text.trim().is_empty(), "{}: {text}", p.display());
    }

    // Exactly once, attributes equal: compare with PostgreSQL, queried independently.
    server.set_faults(Faults::default());
    let docs = server.documents("room_events");
    assert_eq!(docs.len() as u64, ROWS);
    assert_eq!(server.doc_count("room_events"), ROWS);
    let rows = pg.query(
        "SELECT id, room_id::text, (extract(epoch FROM at) * 1000000)::int8, amount::text,
                payload::text, body, encode(blob, 'base64')
         FROM room_events",
        &[],
    );
    assert_eq!(rows.len() as u64, ROWS);
    for r in &rows {
        let id: String = r.get(0);
        let d = docs.get(&id).unwrap_or_else(|| panic!("{id} missing"));
        assert_eq!(d["id"], Value::from(id.clone()));
        assert_eq!(d["room_id"], Value::from(r.get::<_, String>(1)), "{id}");
        assert_eq!(
            micros(d["at"].as_str().unwrap()),
            r.get::<_, i64>(2),
            "{id}"
        );
        let amount: f64 = r.get::<_, String>(3).parse().unwrap();
        assert_eq!(d["amount"].as_f64(), Some(amount), "{id}");
        let payload: Value = serde_json::from_str(&r.get::<_, String>(4)).unwrap();
        assert_eq!(d["payload"], payload, "{id}");
        assert_eq!(d["body"], Value::from(r.get::<_, String>(5)), "{id}");
        assert_eq!(d["blob"], Value::from(r.get::<_, String>(6)), "{id}");
        assert_eq!(d.as_object().unwrap().len(), 7, "{id}: {d}");
    }

    let mut v = table::rfs();
    v.args(["table", "verify", "--all"]).args(&common);
    table::run_ok(v);
}

#[test]
fn table_fleet_into_dynamodb_through_faults_writes_every_row_exactly_once() {
    use dynamo::{assert_item, b, json_av, n, s, Av, Sdk, SdkItem};
    use testkit::dynamo_proxy::{DynamoFaultProxy, DynamoFaults};

    const ROWS: u64 = 4000;
    let test = "table_fleet_into_dynamodb_through_faults_writes_every_row_exactly_once";
    let Some(pg) = Pg::start(test) else {
        return;
    };
    let Some(mut redis) = testkit::services::Redis::start(test) else {
        return;
    };
    let Some(dynalite) = testkit::services::Dynalite::start(test) else {
        return;
    };
    let ids: Vec<String> = (0..ROWS)
        .map(|i| {
            ulid(
                1_714_521_600_000 + i * 10_000,
                u128::from(i) * 0x9e37_79b9_7f4a_7c15,
            )
        })
        .collect();
    pg.exec(
        "CREATE TABLE room_events (id text PRIMARY KEY, room_id uuid NOT NULL, at timestamptz NOT NULL,
                                   amount numeric, payload jsonb, body text, blob bytea);",
    );
    pg.query(
        "INSERT INTO room_events
         SELECT id, md5(i::text)::uuid, timestamptz '2024-05-01' + i * interval '10 s',
                i * 1000000000000.001 / 8,
                jsonb_build_object('i', i, 'even', i % 2 = 0, 'list', jsonb_build_array(i, 'x', NULL)),
                repeat('b', 1 + (i % 50)::int), int8send(i)
         FROM unnest($1::text[]) WITH ORDINALITY AS u(id, i)",
        &[&ids],
    );
    // About one request in twenty of each kind fails (the rates are tried in order, each
    // on what the ones before left), control calls included: over the few hundred requests
    // of the run every kind happens.
    let proxy = DynamoFaultProxy::start(
        dynalite.port(),
        DynamoFaults {
            drop_before: 0.05,
            throttling: 0.053,
            provisioned: 0.056,
            server_error: 0.06,
            unprocessed: 0.064,
            drop_after: 0.07,
            ..DynamoFaults::default()
        },
        11,
    );
    let work = tempfile::tempdir().unwrap();
    let store = redis.url();
    let table_flags = |endpoint: &str| -> Vec<String> {
        [
            "--source",
            &pg.url(),
            "--table",
            "room_events",
            "--key",
            "id",
            "--slot-by",
            "time:1h",
            "--sink",
            &format!("dynamodb://room_events?region=us-east-1&endpoint={endpoint}"),
            "--store",
            &store,
            // The fleet writes through the fault proxy and `table verify` reads dynalite
            // directly: two endpoints of one table, so the migration is named (as the
            // store's identity check asks) instead of identified by its sink URL.
            "--migration",
            "room-events-chaos",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let mut args = table_flags(&proxy.endpoint());
    args.push("--create-table".to_string());
    args.extend(worker_flags(50, 60));
    let mut fleet = Fleet::start(args, true, work.path());
    let kills = chaos(&mut fleet, &mut redis);
    assert!(kills >= 3, "only {kills} kills");
    let counts = proxy.counts();
    eprintln!("dynamodb faults: {counts:?}");
    for (kind, n) in [
        ("dropped before", counts.dropped_before),
        ("ThrottlingException", counts.throttling),
        ("ProvisionedThroughputExceededException", counts.provisioned),
        ("500", counts.server_error),
        ("partial UnprocessedItems", counts.unprocessed_answers),
        ("dropped after the write", counts.dropped_after),
    ] {
        assert!(n > 0, "no {kind} injected: {counts:?}");
    }

    let st = table::run_ok({
        let mut c = table::rfs();
        c.args(["status", "--json", "--store", &store]);
        c
    });
    let st: Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!(st["finished"], Value::Bool(true), "{st:#}");
    assert_eq!(st["items"]["failed"].as_u64(), Some(0), "{st:#}");
    assert_eq!(st["items"]["done"], st["items"]["total"], "{st:#}");
    for slot in 0..WORKERS {
        let p = work.path().join(format!("failures-{slot}.jsonl"));
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        assert!(text.trim().is_empty(), "{}: {text}", p.display());
    }

    // Exactly once, attributes equal: read from dynalite directly with the AWS SDK,
    // compared with PostgreSQL's own text of each value.
    let sdk = Sdk::new(&dynalite.endpoint());
    let mut items: std::collections::BTreeMap<String, SdkItem> = Default::default();
    for item in sdk.scan("room_events") {
        let id = item["id"].as_s().unwrap().clone();
        assert!(items.insert(id.clone(), item).is_none(), "{id} twice");
    }
    assert_eq!(items.len() as u64, ROWS);
    let rows = pg.query(
        "SELECT id, room_id::text, (extract(epoch FROM at) * 1000000)::int8, amount::text,
                payload::text, body, blob
         FROM room_events",
        &[],
    );
    assert_eq!(rows.len() as u64, ROWS);
    for r in &rows {
        let id: String = r.get(0);
        let mut got = items.remove(&id).unwrap_or_else(|| panic!("{id} missing"));
        let at = got["at"].as_s().unwrap().clone();
        got.insert("at".into(), n(micros(&at).to_string()));
        let want: SdkItem = [
            ("id", s(id.clone())),
            ("room_id", s(r.get::<_, String>(1))),
            ("at", n(r.get::<_, i64>(2).to_string())),
            ("amount", n(r.get::<_, String>(3))),
            (
                "payload",
                json_av(&serde_json::from_str(r.get::<_, &str>(4)).unwrap()),
            ),
            ("body", s(r.get::<_, String>(5))),
            ("blob", b(&r.get::<_, Vec<u8>>(6))),
        ]
        .into_iter()
        .map(|(k, v): (&str, Av)| (k.to_string(), v))
        .collect();
        assert_item(&id, &got, &want);
    }

    let mut v = table::rfs();
    dynamo::aws_env(&mut v);
    v.args(["table", "verify", "--all"])
        .args(table_flags(&dynalite.endpoint()));
    table::run_ok(v);
}
