//! SQLite file backend: the embedded default for one machine. WAL mode and a busy timeout
//! let several processes share the file; every call runs on a blocking thread. Workers
//! create the file; read-only commands open it only if it exists and holds rfs records.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rand::Rng;
use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension};

use super::{system_now_ms, Store};
use crate::record::{Record, RecordKind, Revision};
use crate::Error;

const BACKEND: &str = "sqlite";
const POOL_MAX: usize = 8;

/// Coordination records in one table of a SQLite file.
pub struct SqliteStore {
    path: PathBuf,
    create: bool,
    pool: Arc<Mutex<Vec<Connection>>>,
}

fn err(e: impl std::fmt::Display) -> Error {
    Error::store(BACKEND, e)
}

/// A SQLite error as a store error: busy or locked files and I/O hiccups are worth a
/// retry; a file that cannot be opened, is read-only, is not a database or is corrupt is
/// not. rusqlite's message already names the file when it is about opening it.
fn classify(path: &std::path::Path, e: rusqlite::Error) -> Error {
    let text = e.to_string();
    let message = if text.contains(&*path.to_string_lossy()) {
        text
    } else {
        format!("{}: {text}", path.display())
    };
    let permanent = match &e {
        rusqlite::Error::SqliteFailure(f, _) => matches!(
            f.code,
            ErrorCode::CannotOpen
                | ErrorCode::ReadOnly
                | ErrorCode::NotADatabase
                | ErrorCode::DatabaseCorrupt
                | ErrorCode::PermissionDenied
                | ErrorCode::AuthorizationForStatementDenied
                | ErrorCode::DiskFull
        ),
        // A record that does not parse will not parse on a retry either.
        rusqlite::Error::FromSqlConversionFailure(..) => true,
        _ => false,
    };
    if permanent {
        Error::refused(BACKEND, message)
    } else {
        err(message)
    }
}

impl SqliteStore {
    /// Open (creating if needed) the file at `path`.
    pub async fn open(path: &str) -> Result<Self, Error> {
        let store = SqliteStore {
            path: PathBuf::from(path),
            create: true,
            pool: Arc::new(Mutex::new(Vec::new())),
        };
        store
            .with_conn(|c| {
                c.execute_batch(
                    "CREATE TABLE IF NOT EXISTS records (
                        id TEXT PRIMARY KEY,
                        kind TEXT NOT NULL,
                        state TEXT NOT NULL,
                        expiry INTEGER NOT NULL,
                        rnd REAL NOT NULL,
                        version INTEGER NOT NULL,
                        doc TEXT NOT NULL
                    );
                    DROP INDEX IF EXISTS records_candidates;
                    CREATE INDEX IF NOT EXISTS records_open ON records(kind, state, expiry, rnd);",
                )
            })
            .await?;
        Ok(store)
    }

    /// Open the store file at `path` only if it exists and holds rfs records: nothing is
    /// created (a mistyped path is an error, not a new empty store).
    pub async fn open_existing(path: &str) -> Result<Self, Error> {
        let store = SqliteStore {
            path: PathBuf::from(path),
            create: false,
            pool: Arc::new(Mutex::new(Vec::new())),
        };
        if !store.path.is_file() {
            return Err(Error::refused(
                BACKEND,
                format!(
                    "{}: no such file (nothing was created; a worker creates the store)",
                    store.path.display()
                ),
            ));
        }
        let has_table = store
            .with_conn(|c| {
                c.query_row(
                    "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'records'",
                    [],
                    |r| r.get::<_, i64>(0),
                )
            })
            .await?;
        if has_table == 0 {
            return Err(Error::refused(
                BACKEND,
                format!(
                    "{}: not an rfs coordination store (no records table)",
                    store.path.display()
                ),
            ));
        }
        Ok(store)
    }

    fn connect(path: &PathBuf, create: bool) -> rusqlite::Result<Connection> {
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let c = Connection::open_with_flags(path, flags)?;
        c.busy_timeout(Duration::from_secs(30))?;
        c.pragma_update(None, "journal_mode", "WAL")?;
        c.pragma_update(None, "synchronous", "NORMAL")?;
        Ok(c)
    }

    /// Run `f` with a pooled connection on a blocking thread.
    async fn with_conn<T, F>(&self, f: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let pool = self.pool.clone();
        let path = self.path.clone();
        let create = self.create;
        tokio::task::spawn_blocking(move || {
            let taken = pool.lock().ok().and_then(|mut p| p.pop());
            let mut conn = match taken {
                Some(c) => c,
                None => Self::connect(&path, create).map_err(|e| classify(&path, e))?,
            };
            let out = f(&mut conn).map_err(|e| classify(&path, e));
            if let Ok(mut p) = pool.lock() {
                if p.len() < POOL_MAX {
                    p.push(conn);
                }
            }
            out
        })
        .await
        .map_err(err)?
    }
}

fn row_to_record(id: &str, doc: &str, version: i64) -> rusqlite::Result<(Record, Revision)> {
    let rec = Record::from_json(id, doc).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
    })?;
    Ok((rec, Revision::row(version)))
}

fn insert(c: &Connection, rec: &Record) -> rusqlite::Result<bool> {
    let n = c.execute(
        "INSERT INTO records (id, kind, state, expiry, rnd, version, doc)
         VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6) ON CONFLICT(id) DO NOTHING",
        params![
            rec.id,
            rec.kind.as_str(),
            rec.state.as_str(),
            rec.expiry,
            rand::thread_rng().gen::<f64>(),
            rec.to_json()
        ],
    )?;
    Ok(n == 1)
}

fn select_candidates(
    c: &Connection,
    sql: &str,
    args: &[&dyn rusqlite::ToSql],
) -> rusqlite::Result<Vec<(Record, Revision)>> {
    let mut stmt = c.prepare_cached(sql)?;
    let rows = stmt.query_map(args, |r| {
        let id: String = r.get(0)?;
        let doc: String = r.get(1)?;
        let v: i64 = r.get(2)?;
        Ok((id, doc, v))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (id, doc, v) = row?;
        out.push(row_to_record(&id, &doc, v)?);
    }
    Ok(out)
}

#[async_trait]
impl Store for SqliteStore {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    async fn now(&self) -> Result<i64, Error> {
        // Every process sharing the file runs on this machine: its clock is the store's.
        Ok(system_now_ms())
    }

    async fn create(&self, rec: &Record) -> Result<Option<Revision>, Error> {
        let rec = rec.clone();
        let created = self.with_conn(move |c| insert(c, &rec)).await?;
        Ok(created.then_some(Revision::row(1)))
    }

    async fn create_many(&self, recs: &[Record]) -> Result<usize, Error> {
        let recs = recs.to_vec();
        self.with_conn(move |c| {
            let mut n = 0;
            for chunk in recs.chunks(500) {
                let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                for r in chunk {
                    n += insert(&tx, r)? as usize;
                }
                tx.commit()?;
            }
            Ok(n)
        })
        .await
    }

    async fn get(&self, id: &str) -> Result<Option<(Record, Revision)>, Error> {
        let id = id.to_string();
        self.with_conn(move |c| {
            let row: Option<(String, i64)> = c
                .prepare_cached("SELECT doc, version FROM records WHERE id = ?1")?
                .query_row(params![id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            row.map(|(doc, v)| row_to_record(&id, &doc, v)).transpose()
        })
        .await
    }

    async fn update(&self, rec: &Record, expected: Revision) -> Result<Option<Revision>, Error> {
        let rec = rec.clone();
        self.with_conn(move |c| {
            let n = c
                .prepare_cached(
                    "UPDATE records SET kind = ?1, state = ?2, expiry = ?3, rnd = ?4,
                     version = version + 1, doc = ?5 WHERE id = ?6 AND version = ?7",
                )?
                .execute(params![
                    rec.kind.as_str(),
                    rec.state.as_str(),
                    rec.expiry,
                    rand::thread_rng().gen::<f64>(),
                    rec.to_json(),
                    rec.id,
                    expected.seq
                ])?;
            Ok((n == 1).then_some(Revision::row(expected.seq + 1)))
        })
        .await
    }

    async fn candidates(&self, now: i64, limit: usize) -> Result<Vec<(Record, Revision)>, Error> {
        let pivot: f64 = rand::thread_rng().gen();
        self.with_conn(move |c| {
            // Expired leases first (a dead holder's item), then fresh items from a random
            // point of the `rnd` order; all three are ranges of the `records_open` index.
            let mut out = select_candidates(
                c,
                "SELECT id, doc, version FROM records WHERE kind = 'item' AND state = 'open'
                 AND expiry > 0 AND expiry <= ?1 ORDER BY expiry LIMIT ?2",
                params![now, limit as i64],
            )?;
            for sql in [
                "SELECT id, doc, version FROM records WHERE kind = 'item' AND state = 'open'
                 AND expiry = 0 AND rnd >= ?1 ORDER BY rnd LIMIT ?2",
                "SELECT id, doc, version FROM records WHERE kind = 'item' AND state = 'open'
                 AND expiry = 0 AND rnd < ?1 ORDER BY rnd LIMIT ?2",
            ] {
                if out.len() >= limit {
                    break;
                }
                let rest = (limit - out.len()) as i64;
                out.extend(select_candidates(c, sql, params![pivot, rest])?);
            }
            Ok(out)
        })
        .await
    }

    async fn earliest_open_expiry(&self) -> Result<Option<i64>, Error> {
        self.with_conn(|c| {
            c.query_row(
                "SELECT MIN(expiry) FROM records WHERE kind = 'item' AND state = 'open'",
                [],
                |r| r.get::<_, Option<i64>>(0),
            )
        })
        .await
    }

    async fn list(&self, kind: RecordKind) -> Result<Vec<Record>, Error> {
        self.with_conn(move |c| {
            let mut stmt =
                c.prepare_cached("SELECT id, doc, version FROM records WHERE kind = ?1")?;
            let rows = stmt.query_map(params![kind.as_str()], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (id, doc, v) = row?;
                out.push(row_to_record(&id, &doc, v)?.0);
            }
            Ok(out)
        })
        .await
    }

    async fn clear(&self) -> Result<(), Error> {
        self.with_conn(|c| c.execute("DELETE FROM records", []).map(|_| ()))
            .await
    }
}
