//! Shared helpers of the table tests: a PostgreSQL server from testkit, an independent
//! client (tokio-postgres, queried here, never through rfs), row generators, and readers of
//! what the sinks wrote.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

pub fn rfs() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rfs"));
    c.env("RFS_LOG", "warn").env("RFS_NO_PROGRESS", "true");
    c
}

/// What a finished `rfs` printed, stdout then stderr, for assertions and their messages.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A SQLite store file `name` in `dir`, as a store URL.
pub fn sqlite(dir: &Path, name: &str) -> String {
    format!("sqlite://{}", dir.join(name).display())
}

pub fn run_ok(mut c: Command) -> Output {
    let out = c.output().expect("run rfs");
    assert!(
        out.status.success(),
        "rfs failed ({:?}):\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// PostgreSQL and dynalite started for `test`; `None` (the test skips, or fails under
/// `CI=true`) when either is not installed.
pub fn pg_and_dynalite(test: &str) -> Option<(Pg, testkit::services::Dynalite)> {
    let pg = Pg::start(test)?;
    let dynalite = testkit::services::Dynalite::start(test)?;
    Some((pg, dynalite))
}

/// A PostgreSQL server and a client of our own on it.
pub struct Pg {
    pub server: testkit::services::Postgres,
    pub rt: tokio::runtime::Runtime,
    pub client: tokio_postgres::Client,
}

impl Pg {
    pub fn start(test: &str) -> Option<Pg> {
        let server = testkit::services::Postgres::start(test)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = rt.block_on(async {
            let (client, conn) = tokio_postgres::connect(&server.url(), tokio_postgres::NoTls)
                .await
                .expect("connect to the test PostgreSQL");
            tokio::spawn(conn);
            client
        });
        Some(Pg { server, rt, client })
    }

    pub fn url(&self) -> String {
        self.server.url()
    }

    pub fn exec(&self, sql: &str) {
        self.rt
            .block_on(self.client.batch_execute(sql))
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }

    pub fn query(
        &self,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Vec<tokio_postgres::Row> {
        self.rt
            .block_on(self.client.query(sql, params))
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
    }
}

const CROCKFORD: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// A ULID of millisecond `ms` with 80 random bits from `r`.
pub fn ulid(ms: u64, r: u128) -> String {
    let v: u128 = (u128::from(ms) << 80) | (r & ((1u128 << 80) - 1));
    (0..26)
        .rev()
        .map(|i| CROCKFORD[((v >> (5 * i)) & 31) as usize] as char)
        .collect()
}

/// A UUIDv7 text of millisecond `ms`.
pub fn uuid_v7(ms: u64, r: u128) -> String {
    let v: u128 =
        (u128::from(ms) << 80) | (0x7u128 << 76) | (r & ((1u128 << 62) - 1)) | (0b10u128 << 62);
    let h = format!("{v:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// Every line `{"_index","_id","_source"}` of the table's files in `dir`: id → source,
/// and the number of lines (rows written again after a restart count twice).
pub fn read_files(dir: &Path, table: &str) -> (BTreeMap<String, Value>, usize) {
    let mut rows = BTreeMap::new();
    let mut lines = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if !name.starts_with(&format!("{table}.")) || !name.ends_with(".jsonl") {
            continue;
        }
        for line in std::fs::read_to_string(&p).unwrap().lines() {
            lines += 1;
            let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
            assert_eq!(v["_index"], table, "{line}");
            let id = v["_id"].as_str().unwrap().to_string();
            rows.insert(id, v["_source"].clone());
        }
    }
    (rows, lines)
}

/// Raw `_source` texts by id (numbers exactly as written).
pub fn read_raw_sources(dir: &Path, table: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut rows = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if !name.starts_with(&format!("{table}.")) || !name.ends_with(".jsonl") {
            continue;
        }
        for line in std::fs::read_to_string(&p).unwrap().lines() {
            #[derive(serde::Deserialize)]
            struct Line<'a> {
                _id: String,
                #[serde(borrow)]
                _source: BTreeMap<String, &'a serde_json::value::RawValue>,
            }
            let l: Line = serde_json::from_str(line).unwrap();
            rows.insert(
                l._id,
                l._source
                    .into_iter()
                    .map(|(k, v)| (k, v.get().to_string()))
                    .collect(),
            );
        }
    }
    rows
}

/// RFC 3339 text as Unix microseconds.
pub fn micros(s: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(s)
        .unwrap_or_else(|e| panic!("{s}: {e}"))
        .timestamp_micros()
}
