//! PostgreSQL backend: one table, compare-and-set by a version column, the server's
//! `clock_timestamp()` as the clock. Connections come from a small pool; `sslmode=require`
//! (with `sslrootcert=CA.pem` for a private CA) makes them TLS with a verified certificate.

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use rand::Rng;

use super::{check_name, is_certificate_error, redact, take_query_param, Store};
use crate::record::{Kind, Record, Revision};
use crate::Error;

const BACKEND: &str = "postgres";
const POOL_SIZE: usize = 16;

/// Coordination records in one PostgreSQL table.
pub struct PostgresStore {
    pool: Pool,
    sql: Sql,
}

struct Sql {
    insert_many: String,
    get: String,
    update: String,
    candidates_hi: String,
    candidates_lo: String,
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
        other => err(other),
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
        let table = table.unwrap_or_else(|| "rfs_coordination".to_string());
        check_name(url, &table)?;
        let config: tokio_postgres::Config = conn_url.parse().map_err(|e| Error::BadUrl {
            url: redact(url),
            reason: format!("{e}"),
        })?;
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
            .max_size(POOL_SIZE)
            .build()
            .map_err(err)?;
        let t = &table;
        let cols = "id, doc, version";
        let store = PostgresStore {
            pool,
            sql: Sql {
                insert_many: format!(
                    "INSERT INTO {t} (id, kind, state, expiry, rnd, version, doc)
                     SELECT id, kind, state, expiry, rnd, 1, doc FROM
                     UNNEST($1::text[], $2::text[], $3::text[], $4::bigint[], $5::float8[], $6::text[])
                     AS u(id, kind, state, expiry, rnd, doc)
                     ON CONFLICT (id) DO NOTHING"
                ),
                get: format!("SELECT {cols} FROM {t} WHERE id = $1"),
                update: format!(
                    "UPDATE {t} SET kind = $1, state = $2, expiry = $3, rnd = $4,
                     version = version + 1, doc = $5 WHERE id = $6 AND version = $7"
                ),
                candidates_hi: format!(
                    "SELECT {cols} FROM {t} WHERE kind = 'item' AND state = 'open'
                     AND expiry <= $1 AND rnd >= $2 ORDER BY rnd LIMIT $3"
                ),
                candidates_lo: format!(
                    "SELECT {cols} FROM {t} WHERE kind = 'item' AND state = 'open'
                     AND expiry <= $1 AND rnd < $2 ORDER BY rnd LIMIT $3"
                ),
                earliest: format!(
                    "SELECT MIN(expiry) FROM {t} WHERE kind = 'item' AND state = 'open'"
                ),
                list: format!("SELECT {cols} FROM {t} WHERE kind = $1"),
                clear: format!("DELETE FROM {t}"),
            },
        };
        let ddl = format!(
            "CREATE TABLE IF NOT EXISTS {t} (
                id TEXT PRIMARY KEY,
                kind TEXT NOT NULL,
                state TEXT NOT NULL,
                expiry BIGINT NOT NULL,
                rnd DOUBLE PRECISION NOT NULL,
                version BIGINT NOT NULL,
                doc TEXT NOT NULL
            );
            CREATE INDEX IF NOT EXISTS {t}_candidates ON {t} (kind, state, rnd);"
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
            return Ok(store);
        }
        // Two workers creating the table at once can collide on the catalog: retry.
        let mut tries = 0;
        loop {
            let client = store.pool.get().await.map_err(pool_err)?;
            match client.batch_execute(&ddl).await {
                Ok(()) => break,
                Err(e) if tries < 5 && e.code().is_none_or(|c| !permanent_sqlstate(c.code())) => {
                    tries += 1;
                    tracing::debug!("creating table {t}: {e}; retrying");
                    tokio::time::sleep(std::time::Duration::from_millis(50 * tries)).await;
                }
                Err(e) => return Err(db_err(e)),
            }
        }
        Ok(store)
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, Error> {
        self.pool.get().await.map_err(pool_err)
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
            n += c
                .execute(&stmt, &[&ids, &kinds, &states, &expiries, &rnds, &docs])
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
                ],
            )
            .await
            .map_err(db_err)?;
        Ok((n == 1).then_some(Revision::row(expected.seq + 1)))
    }

    async fn candidates(&self, now: i64, limit: usize) -> Result<Vec<(Record, Revision)>, Error> {
        let c = self.client().await?;
        let pivot: f64 = rand::thread_rng().gen();
        let hi = c
            .prepare_cached(&self.sql.candidates_hi)
            .await
            .map_err(db_err)?;
        let mut out = rows_to_records(
            c.query(&hi, &[&now, &pivot, &(limit as i64)])
                .await
                .map_err(db_err)?,
        )?;
        if out.len() < limit {
            let lo = c
                .prepare_cached(&self.sql.candidates_lo)
                .await
                .map_err(db_err)?;
            let rest = (limit - out.len()) as i64;
            out.extend(rows_to_records(
                c.query(&lo, &[&now, &pivot, &rest]).await.map_err(db_err)?,
            )?);
        }
        Ok(out)
    }

    async fn earliest_open_expiry(&self) -> Result<Option<i64>, Error> {
        let c = self.client().await?;
        let row = c
            .query_one(self.sql.earliest.as_str(), &[])
            .await
            .map_err(db_err)?;
        Ok(row.get(0))
    }

    async fn list(&self, kind: Kind) -> Result<Vec<Record>, Error> {
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
