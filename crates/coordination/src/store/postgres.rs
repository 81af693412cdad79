//! PostgreSQL backend: one table, compare-and-set by a version column, the server's
//! `clock_timestamp()` as the clock. Connections come from a small pool (`pool=N`, default
//! 16, per process); `sslmode=require`
//! (with `sslrootcert=CA.pem` for a private CA) makes them TLS with a verified certificate.
//! No call waits forever (`timeout=SECONDS`, default 30): the server cancels a statement
//! that runs longer (`statement_timeout`, lock waits included), the kernel drops a
//! connection whose peer stopped answering (`tcp_user_timeout`, keepalives), and waiting for
//! a pooled connection or a new one ends too; each is a transient error the caller retries.

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use std::time::Instant;

use rand::Rng;

use super::{check_name, is_certificate_error, redact, take_query_param, Store};
use crate::latency::{Histogram, PoolStats};
use crate::record::{Record, RecordKind, RecordState, Revision};
use crate::summary::{is_listed, ItemSummary, StateTotals};
use crate::Error;

const BACKEND: &str = "postgres";
/// Connections per process unless the URL says `pool=N`.
const POOL_SIZE: usize = 16;
/// Longest store call, seconds, unless the URL says `timeout=N`.
const CALL_TIMEOUT_SECS: u64 = 30;

/// Coordination records in one PostgreSQL table.
pub struct PostgresStore {
    pool: Pool,
    pool_size: usize,
    wait: Histogram,
    call: Histogram,
    sql: Sql,
    /// The table has the status columns (false only for a table of an earlier version
    /// opened read-only).
    aggregates: bool,
}

struct Sql {
    insert_many: String,
    get: String,
    update: String,
    totals: String,
    notable: String,
    candidates: String,
    earliest: String,
    list: String,
    clear: String,
}

fn err(e: impl std::fmt::Display) -> Error {
    Error::store(BACKEND, e)
}

/// A pool error; a connection refused by the server carries the server's message.
fn pool_err(e: deadpool_postgres::PoolError) -> Error {
    match e {
        deadpool_postgres::PoolError::Backend(e) => {
            classify(&e, format!("connecting: {}", describe(&e)))
        }
        other => err(format!("waiting for a connection: {other}")),
    }
}

/// The number `?NAME=N` of `rest` (what is left of `url` so far), taken out of it; out of
/// `range`, or not a number, is a bad URL saying what it should be.
fn number_param(
    url: &str,
    rest: &str,
    name: &str,
    range: std::ops::RangeInclusive<u64>,
    what: &str,
) -> Result<(String, Option<u64>), Error> {
    let (rest, value) = take_query_param(rest, name)?;
    let Some(v) = value else {
        return Ok((rest, None));
    };
    let n = v
        .parse::<u64>()
        .ok()
        .filter(|n| range.contains(n))
        .ok_or_else(|| Error::BadUrl {
            url: redact(url),
            reason: format!(
                "{name}={v}: expected {what}, {}–{}",
                range.start(),
                range.end()
            ),
        })?;
    Ok((rest, Some(n)))
}

/// Bound every call of a connection made from `config` by `timeout`, keeping what the URL
/// set itself: the server cancels longer statements (`statement_timeout`, lock waits
/// included; its error is transient), connecting gives up, and a peer that stops answering
/// is noticed by the kernel (`tcp_user_timeout`, keepalives after 15 s idle) instead of
/// after the system's two hours.
fn bound_calls(config: &mut tokio_postgres::Config, timeout: std::time::Duration) {
    let ms = timeout.as_millis();
    let options = match config.get_options() {
        Some(o) if o.contains("statement_timeout") => o.to_string(),
        Some(o) if !o.trim().is_empty() => format!("{o} -c statement_timeout={ms}"),
        _ => format!("-c statement_timeout={ms}"),
    };
    config.options(options);
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(timeout.min(std::time::Duration::from_secs(10)));
    }
    if config.get_tcp_user_timeout().is_none() {
        config.tcp_user_timeout(timeout);
    }
    if config.get_keepalives_idle() == std::time::Duration::from_secs(2 * 60 * 60) {
        config.keepalives_idle(std::time::Duration::from_secs(15));
    }
}

/// The database error's own message (tokio-postgres' Display hides it behind "db error").
fn db_err(e: tokio_postgres::Error) -> Error {
    classify(&e, describe(&e))
}

/// A refusal no retry cures (credentials, a missing database or table, no privilege, a
/// read-only standby, an untrusted certificate) is [`Error::Refused`]; the rest (the
/// server restarting, a dropped connection, a busy server) is worth a retry.
fn classify(e: &tokio_postgres::Error, message: String) -> Error {
    let permanent = match e.code() {
        Some(code) => permanent_sqlstate(code.code()),
        None => is_certificate_error(&message),
    };
    if permanent {
        Error::refused(BACKEND, message)
    } else {
        err(message)
    }
}

/// SQLSTATEs that mean "fix the configuration": class 28 (wrong password, no such role,
/// refused by pg_hba.conf), 3D000 (no such database), 3F000 (no such schema), 42501 (no
/// privilege), 42P01 (no such table), 25006 (a read-only standby).
fn permanent_sqlstate(code: &str) -> bool {
    code.starts_with("28") || matches!(code, "3D000" | "3F000" | "42501" | "42P01" | "25006")
}

/// The server's code and message for a database error; otherwise the error with its causes.
fn describe(e: &tokio_postgres::Error) -> String {
    pgconn::describe(e)
}

impl PostgresStore {
    /// Connect to `url`; `?table=NAME` picks the table (default `rfs_coordination`),
    /// created if missing.
    pub async fn open(url: &str) -> Result<Self, Error> {
        Self::open_with(url, true).await
    }

    /// Connect to `url` only if its table exists: nothing is created.
    pub async fn open_existing(url: &str) -> Result<Self, Error> {
        Self::open_with(url, false).await
    }

    async fn open_with(url: &str, create: bool) -> Result<Self, Error> {
        let (conn_url, table) = take_query_param(url, "table")?;
        let (conn_url, root_cert) = take_query_param(&conn_url, "sslrootcert")?;
        let (conn_url, pool_size) =
            number_param(url, &conn_url, "pool", 1..=1000, "connections per process")?;
        let pool_size = pool_size.map_or(POOL_SIZE, |n| n as usize);
        let (conn_url, timeout) = number_param(
            url,
            &conn_url,
            "timeout",
            1..=3600,
            "the longest store call in seconds",
        )?;
        let timeout = timeout.unwrap_or(CALL_TIMEOUT_SECS);
        let timeout = std::time::Duration::from_secs(timeout);
        let table = table.unwrap_or_else(|| "rfs_coordination".to_string());
        check_name(url, &table)?;
        let mut config: tokio_postgres::Config = conn_url.parse().map_err(|e| Error::BadUrl {
            url: redact(url),
            reason: format!("{e}"),
        })?;
        bound_calls(&mut config, timeout);
        let manager_config = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        // `sslmode=require` means TLS with a verified server certificate (public roots and
        // the CA file of `sslrootcert=`); otherwise the connection is plain, as libpq's
        // default `prefer` would be against a server without TLS.
        let connector =
            pgconn::Connector::for_config(&config, root_cert.as_deref()).map_err(|e| {
                Error::BadUrl {
                    url: redact(url),
                    reason: e.0,
                }
            })?;
        let mgr = match connector {
            pgconn::Connector::Tls(tls) => Manager::from_config(config, tls, manager_config),
            pgconn::Connector::Plain(plain) => Manager::from_config(config, plain, manager_config),
        };
        let pool = Pool::builder(mgr)
            .max_size(pool_size)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(timeout))
            .create_timeout(Some(timeout))
            .build()
            .map_err(err)?;
        let t = &table;
        let cols = "id, doc, version";
        let mut store = PostgresStore {
            pool,
            pool_size,
            wait: Histogram::default(),
            call: Histogram::default(),
            aggregates: true,
            sql: Sql {
                insert_many: format!(
                    "INSERT INTO {t} (id, kind, state, expiry, rnd, version, doc,
                                      grp, docs, bytes, refused, skipped, held, listed)
                     SELECT id, kind, state, expiry, rnd, 1, doc,
                            grp, docs, bytes, refused, skipped, held, listed FROM
                     UNNEST($1::text[], $2::text[], $3::text[], $4::bigint[], $5::float8[], $6::text[],
                            $7::text[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[],
                            $12::bool[], $13::bool[])
                     AS u(id, kind, state, expiry, rnd, doc,
                          grp, docs, bytes, refused, skipped, held, listed)
                     ON CONFLICT (id) DO NOTHING"
                ),
                get: format!("SELECT {cols} FROM {t} WHERE id = $1"),
                update: format!(
                    "UPDATE {t} SET kind = $1, state = $2, expiry = $3, rnd = $4,
                     version = version + 1, doc = $5, grp = $8, docs = $9, bytes = $10,
                     refused = $11, skipped = $12, held = $13, listed = $14
                     WHERE id = $6 AND version = $7"
                ),
                totals: format!(
                    "SELECT grp, state, (state = 'open' AND held AND expiry > $1), COUNT(*),
                            SUM(docs)::bigint, SUM(bytes)::bigint, SUM(refused)::bigint,
                            SUM(skipped)::bigint
                     FROM {t} WHERE kind = 'item' GROUP BY 1, 2, 3"
                ),
                // Two index ranges (the `_listed` partial index, the `_open` index); an
                // item in both comes twice and is dropped once in `item_summary`.
                notable: format!(
                    "SELECT {cols} FROM {t} WHERE kind = 'item' AND listed
                     UNION ALL
                     SELECT {cols} FROM {t} WHERE kind = 'item' AND state = 'open'
                     AND expiry > $1 AND held"
                ),
                // Expired leases first, then fresh items from a random point of the `rnd`
                // order: three ranges of the `_open` index (kind, state, expiry, rnd), no
                // sort, one round trip (Append runs its branches in order and stops at the
                // limit).
                candidates: format!(
                    "(SELECT {cols} FROM {t} WHERE kind = 'item' AND state = 'open'
                      AND expiry > 0 AND expiry <= $1 ORDER BY expiry LIMIT $3)
                     UNION ALL
                     (SELECT {cols} FROM {t} WHERE kind = 'item' AND state = 'open'
                      AND expiry = 0 AND rnd >= $2 ORDER BY rnd LIMIT $3)
                     UNION ALL
                     (SELECT {cols} FROM {t} WHERE kind = 'item' AND state = 'open'
                      AND expiry = 0 AND rnd < $2 ORDER BY rnd LIMIT $3)
                     LIMIT $3"
                ),
                earliest: format!(
                    "SELECT MIN(expiry) FROM {t} WHERE kind = 'item' AND state = 'open'"
                ),
                list: format!("SELECT {cols} FROM {t} WHERE kind = $1"),
                clear: format!("DELETE FROM {t}"),
            },
        };
        // The status aggregates (GROUP BY) read these copies of the record's fields; a
        // table made by an earlier version gets them once, filled from the documents.
        let migrate = format!(
            "ALTER TABLE {t} ADD COLUMN IF NOT EXISTS grp TEXT NOT NULL DEFAULT '',
                ADD COLUMN IF NOT EXISTS docs BIGINT NOT NULL DEFAULT 0,
                ADD COLUMN IF NOT EXISTS bytes BIGINT NOT NULL DEFAULT 0,
                ADD COLUMN IF NOT EXISTS refused BIGINT NOT NULL DEFAULT 0,
                ADD COLUMN IF NOT EXISTS skipped BIGINT NOT NULL DEFAULT 0,
                ADD COLUMN IF NOT EXISTS held BOOLEAN NOT NULL DEFAULT false,
                ADD COLUMN IF NOT EXISTS listed BOOLEAN NOT NULL DEFAULT false;
            UPDATE {t} SET grp = COALESCE(doc::jsonb->>'group', ''),
                docs = COALESCE((doc::jsonb->>'docs_done')::bigint, 0),
                bytes = COALESCE((doc::jsonb->>'bytes_done')::bigint, 0),
                refused = COALESCE((doc::jsonb->>'docs_refused')::bigint, 0),
                skipped = COALESCE((doc::jsonb->>'docs_skipped')::bigint, 0),
                held = COALESCE(jsonb_typeof(doc::jsonb->'holder') = 'string', false),
                listed = COALESCE(doc::jsonb->>'state' = 'failed'
                    OR (doc::jsonb->'reasons') <> '{{}}'::jsonb, false)
             WHERE kind = 'item';"
        );
        let has_columns = "SELECT EXISTS (SELECT 1 FROM pg_attribute
             WHERE attrelid = to_regclass($1) AND attname = 'listed' AND NOT attisdropped)";
        let ddl = format!(
            "CREATE TABLE IF NOT EXISTS {t} (
                id TEXT PRIMARY KEY,
                kind TEXT NOT NULL,
                state TEXT NOT NULL,
                expiry BIGINT NOT NULL,
                rnd DOUBLE PRECISION NOT NULL,
                version BIGINT NOT NULL,
                doc TEXT NOT NULL,
                grp TEXT NOT NULL DEFAULT '',
                docs BIGINT NOT NULL DEFAULT 0,
                bytes BIGINT NOT NULL DEFAULT 0,
                refused BIGINT NOT NULL DEFAULT 0,
                skipped BIGINT NOT NULL DEFAULT 0,
                held BOOLEAN NOT NULL DEFAULT false,
                listed BOOLEAN NOT NULL DEFAULT false
            )"
        );
        // `_open` serves the candidate ranges (expired, then fresh by `rnd`) and the
        // earliest expiry; `_listed` the items status lists one by one. The index of
        // earlier versions (kind, state, rnd) is replaced (without a notice per worker).
        let indexes = format!(
            "SET client_min_messages TO warning;
            DROP INDEX IF EXISTS {t}_candidates;
            CREATE INDEX IF NOT EXISTS {t}_open ON {t} (kind, state, expiry, rnd);
            CREATE INDEX IF NOT EXISTS {t}_listed ON {t} (kind) WHERE listed;"
        );
        if !create {
            let client = store.pool.get().await.map_err(pool_err)?;
            let row = client
                .query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])
                .await
                .map_err(db_err)?;
            if !row.get::<_, bool>(0) {
                return Err(Error::refused(
                    BACKEND,
                    format!(
                        "no table {table} in the database (nothing was created; a worker creates it)"
                    ),
                ));
            }
            // A table of an earlier version (no aggregate columns): status reads the items.
            let row = client
                .query_one(has_columns, &[&table])
                .await
                .map_err(db_err)?;
            store.aggregates = row.get(0);
            return Ok(store);
        }
        // Two workers creating the table at once can collide on the catalog: retry.
        let create_policy = pacing::RetryPolicy {
            initial_backoff: std::time::Duration::from_millis(50),
            max_backoff: std::time::Duration::from_millis(800),
            ..pacing::RetryPolicy::default()
        };
        let mut tries = 0;
        loop {
            let client = store.pool.get().await.map_err(pool_err)?;
            let done = async {
                client.batch_execute(&ddl).await?;
                let row = client.query_one(has_columns, &[&table]).await?;
                if !row.get::<_, bool>(0) {
                    tracing::info!("adding the status columns to table {t}");
                    client.batch_execute(&migrate).await?;
                }
                client.batch_execute(&indexes).await?;
                Ok::<_, tokio_postgres::Error>(())
            };
            match done.await {
                Ok(()) => break,
                Err(e) if tries < 5 && e.code().is_none_or(|c| !permanent_sqlstate(c.code())) => {
                    tries += 1;
                    tracing::debug!("creating table {t}: {e}; retrying");
                    // Jittered, so that two workers that collided do not collide again.
                    tokio::time::sleep(create_policy.delay(tries, None)).await;
                }
                Err(e) => return Err(db_err(e)),
            }
        }
        Ok(store)
    }

    /// A pooled connection; the wait for it and the time it is held are measured apart.
    async fn client(&self) -> Result<Conn<'_>, Error> {
        let t = Instant::now();
        let obj = self.pool.get().await.map_err(pool_err)?;
        self.wait.record(t.elapsed());
        Ok(Conn {
            obj,
            since: Instant::now(),
            call: &self.call,
        })
    }
}

/// A connection taken from the pool; its time in use is recorded when it goes back.
struct Conn<'a> {
    obj: deadpool_postgres::Object,
    since: Instant,
    call: &'a Histogram,
}

impl std::ops::Deref for Conn<'_> {
    type Target = deadpool_postgres::Object;
    fn deref(&self) -> &Self::Target {
        &self.obj
    }
}

impl std::ops::DerefMut for Conn<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.obj
    }
}

impl Drop for Conn<'_> {
    fn drop(&mut self) {
        self.call.record(self.since.elapsed());
    }
}

/// The record's fields the status aggregates read, as column values.
struct Columns {
    docs: i64,
    bytes: i64,
    refused: i64,
    skipped: i64,
    held: bool,
    listed: bool,
}

impl Columns {
    fn of(r: &Record) -> Self {
        let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        Columns {
            docs: n(r.docs_done),
            bytes: n(r.bytes_done),
            refused: n(r.docs_refused),
            skipped: n(r.docs_skipped),
            held: r.holder.is_some(),
            listed: is_listed(r),
        }
    }
}

fn rows_to_records(rows: Vec<tokio_postgres::Row>) -> Result<Vec<(Record, Revision)>, Error> {
    rows.into_iter()
        .map(|r| {
            let id: String = r.get(0);
            let doc: String = r.get(1);
            let v: i64 = r.get(2);
            Ok((Record::from_json(&id, &doc)?, Revision::row(v)))
        })
        .collect()
}

#[async_trait]
impl Store for PostgresStore {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    async fn now(&self) -> Result<i64, Error> {
        let c = self.client().await?;
        let stmt = c
            .prepare_cached("SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint")
            .await
            .map_err(db_err)?;
        let row = c.query_one(&stmt, &[]).await.map_err(db_err)?;
        Ok(row.get(0))
    }

    async fn create(&self, rec: &Record) -> Result<Option<Revision>, Error> {
        let n = self.create_many(std::slice::from_ref(rec)).await?;
        Ok((n == 1).then_some(Revision::row(1)))
    }

    async fn create_many(&self, recs: &[Record]) -> Result<usize, Error> {
        let c = self.client().await?;
        let stmt = c
            .prepare_cached(&self.sql.insert_many)
            .await
            .map_err(db_err)?;
        let mut n = 0;
        for chunk in recs.chunks(1000) {
            let ids: Vec<&str> = chunk.iter().map(|r| r.id.as_str()).collect();
            let kinds: Vec<&str> = chunk.iter().map(|r| r.kind.as_str()).collect();
            let states: Vec<&str> = chunk.iter().map(|r| r.state.as_str()).collect();
            let expiries: Vec<i64> = chunk.iter().map(|r| r.expiry).collect();
            let rnds: Vec<f64> = {
                let mut rng = rand::thread_rng();
                chunk.iter().map(|_| rng.gen()).collect()
            };
            let docs: Vec<String> = chunk.iter().map(|r| r.to_json()).collect();
            let cols: Vec<Columns> = chunk.iter().map(Columns::of).collect();
            let grps: Vec<&str> = chunk.iter().map(|r| r.group.as_str()).collect();
            let dones: Vec<i64> = cols.iter().map(|c| c.docs).collect();
            let bytes: Vec<i64> = cols.iter().map(|c| c.bytes).collect();
            let refused: Vec<i64> = cols.iter().map(|c| c.refused).collect();
            let skipped: Vec<i64> = cols.iter().map(|c| c.skipped).collect();
            let held: Vec<bool> = cols.iter().map(|c| c.held).collect();
            let listed: Vec<bool> = cols.iter().map(|c| c.listed).collect();
            n += c
                .execute(
                    &stmt,
                    &[
                        &ids, &kinds, &states, &expiries, &rnds, &docs, &grps, &dones, &bytes,
                        &refused, &skipped, &held, &listed,
                    ],
                )
                .await
                .map_err(db_err)? as usize;
        }
        Ok(n)
    }

    async fn get(&self, id: &str) -> Result<Option<(Record, Revision)>, Error> {
        let c = self.client().await?;
        let stmt = c.prepare_cached(&self.sql.get).await.map_err(db_err)?;
        let rows = c.query(&stmt, &[&id]).await.map_err(db_err)?;
        Ok(rows_to_records(rows)?.into_iter().next())
    }

    async fn update(&self, rec: &Record, expected: Revision) -> Result<Option<Revision>, Error> {
        let c = self.client().await?;
        let stmt = c.prepare_cached(&self.sql.update).await.map_err(db_err)?;
        let rnd: f64 = rand::thread_rng().gen();
        let cols = Columns::of(rec);
        let n = c
            .execute(
                &stmt,
                &[
                    &rec.kind.as_str(),
                    &rec.state.as_str(),
                    &rec.expiry,
                    &rnd,
                    &rec.to_json(),
                    &rec.id,
                    &expected.seq,
                    &rec.group,
                    &cols.docs,
                    &cols.bytes,
                    &cols.refused,
                    &cols.skipped,
                    &cols.held,
                    &cols.listed,
                ],
            )
            .await
            .map_err(db_err)?;
        Ok((n == 1).then_some(Revision::row(expected.seq + 1)))
    }

    async fn candidates(&self, now: i64, limit: usize) -> Result<Vec<(Record, Revision)>, Error> {
        let c = self.client().await?;
        let pivot: f64 = rand::thread_rng().gen();
        let stmt = c
            .prepare_cached(&self.sql.candidates)
            .await
            .map_err(db_err)?;
        let rows = c
            .query(&stmt, &[&now, &pivot, &(limit as i64)])
            .await
            .map_err(db_err)?;
        rows_to_records(rows)
    }

    async fn earliest_open_expiry(&self) -> Result<Option<i64>, Error> {
        let c = self.client().await?;
        let row = c
            .query_one(self.sql.earliest.as_str(), &[])
            .await
            .map_err(db_err)?;
        Ok(row.get(0))
    }

    fn pool_stats(&self) -> Option<PoolStats> {
        Some(PoolStats {
            size: self.pool_size,
            wait: self.wait.read(),
            call: self.call.read(),
        })
    }

    async fn item_summary(&self, now: i64) -> Result<ItemSummary, Error> {
        if !self.aggregates {
            return Ok(ItemSummary::fold(now, self.list(RecordKind::Item).await?));
        }
        let mut c = self.client().await?;
        // One snapshot for both reads, so the totals and the listed items agree.
        let tx = c
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(db_err)?;
        let totals = tx
            .query(self.sql.totals.as_str(), &[&now])
            .await
            .map_err(db_err)?;
        let notable = tx
            .query(self.sql.notable.as_str(), &[&now])
            .await
            .map_err(db_err)?;
        tx.commit().await.map_err(db_err)?;
        let mut out = ItemSummary::default();
        for r in totals {
            let group: String = r.get(0);
            let state: String = r.get(1);
            let state = match state.as_str() {
                "open" => RecordState::Open,
                "done" => RecordState::Done,
                "failed" => RecordState::Failed,
                other => {
                    return Err(Error::Corrupt {
                        id: format!("items of {group}"),
                        reason: format!("unknown state {other:?}"),
                    })
                }
            };
            let leased: bool = r.get(2);
            let n = |i: usize| r.get::<_, Option<i64>>(i).unwrap_or(0).max(0) as u64;
            out.totals.insert(
                (group, state, leased),
                StateTotals {
                    items: n(3),
                    docs: n(4),
                    bytes: n(5),
                    refused: n(6),
                    skipped: n(7),
                },
            );
        }
        let mut seen = std::collections::HashSet::new();
        out.notable = rows_to_records(notable)?
            .into_iter()
            .filter_map(|(r, _)| seen.insert(r.id.clone()).then_some(r))
            .collect();
        Ok(out)
    }

    async fn list(&self, kind: RecordKind) -> Result<Vec<Record>, Error> {
        let c = self.client().await?;
        let rows = c
            .query(self.sql.list.as_str(), &[&kind.as_str()])
            .await
            .map_err(db_err)?;
        Ok(rows_to_records(rows)?.into_iter().map(|(r, _)| r).collect())
    }

    async fn clear(&self) -> Result<(), Error> {
        let c = self.client().await?;
        c.execute(self.sql.clear.as_str(), &[])
            .await
            .map_err(db_err)?;
        Ok(())
    }
}
