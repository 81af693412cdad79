//! [`Table`]: a pool of read-only connections to one table, its [`Schema`], and the
//! statements a migration needs — keyset pages, key range, key sample, row estimate.
//!
//! Every connection starts with `default_transaction_read_only=on` and the statement
//! timeout, so each page is one read-only statement (no transaction held across pages:
//! fine against a replica). Pages are retried with exponential backoff and jitter while
//! the failure is transient ([`TableError::is_transient`]); each retry asks again for the
//! keys after the last one delivered, so nothing is read twice or skipped.

use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::types::ToSql;

use crate::error::TableError;
use crate::name::{quote_ident, TableName};
use crate::schema::{Column, ColumnKind, Schema};
use crate::slots::{Bounds, Slot};
use crate::value::{key_text, Raw, Renderer};

/// How the table is read.
#[derive(Debug, Clone)]
pub struct TableOptions {
    /// Rows per keyset page (1–1000000).
    pub page_rows: u32,
    /// Longest one statement may run on the server.
    pub statement_timeout: Duration,
    /// Attempts per statement while failures are transient (1 = no retry).
    pub attempts: usize,
    /// First backoff delay (doubles, with jitter, up to 30 s).
    pub backoff: Duration,
    /// Connections in the pool.
    pub pool_size: usize,
    /// Only these columns, each `(column, name in the document)`; empty: every column.
    /// The key column is always read (it is the cursor and the id) and is in the
    /// document only when listed.
    pub columns: Vec<(String, String)>,
    /// Only rows matching this SQL predicate (`--where`), added to every keyset read.
    pub filter: Option<String>,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            page_rows: 5000,
            statement_timeout: Duration::from_secs(60),
            attempts: 10,
            backoff: Duration::from_millis(200),
            pool_size: 16,
            columns: Vec::new(),
            filter: None,
        }
    }
}

/// One page of rows: each rendered as a JSON object, or refused with its key and why.
#[derive(Debug, Default)]
pub struct Page {
    pub rows: Vec<PageRow>,
    /// The last key of the page (the next page starts after it).
    pub last_key: Option<String>,
    /// Whether the page was full (more rows may follow).
    pub full: bool,
}

/// A row of a page.
#[derive(Debug)]
pub enum PageRow {
    Row { key: String, json: Vec<u8> },
    Bad { key: Option<String>, reason: String },
}

/// A table, ready to be read.
pub struct Table {
    pool: Pool,
    schema: Schema,
    renderer: Renderer,
    opts: TableOptions,
    /// `SELECT <columns> FROM <table>`.
    select: String,
    /// `<key>` quoted, and its type for casts.
    key_sql: String,
    key_type: String,
    /// The URL without secrets, for messages and the migration identity.
    shown_url: String,
}

impl Table {
    /// Connects to `url` (`postgres://…`, `sslmode=require` for TLS, `sslrootcert=FILE`),
    /// finds `table` and checks that `key` is a column with a unique index of its own.
    pub async fn open(
        url: &str,
        table: &str,
        key: &str,
        opts: TableOptions,
    ) -> Result<Table, TableError> {
        let shown_url = redact::url(url);
        let bad = |reason: String| TableError::Config(format!("source {shown_url}: {reason}"));
        let name = TableName::parse(table).map_err(TableError::Config)?;
        let (conn_url, root_cert) = take_param(url, "sslrootcert").map_err(&bad)?;
        let mut config: tokio_postgres::Config =
            conn_url.parse().map_err(|e| bad(format!("{e}")))?;
        let timeout_ms = opts
            .statement_timeout
            .as_millis()
            .clamp(1, i32::MAX as u128);
        let mut options = config.get_options().unwrap_or_default().to_string();
        options.push_str(&format!(
            " -c default_transaction_read_only=on -c statement_timeout={timeout_ms}"
        ));
        config.options(options.trim());
        if config.get_application_name().is_none() {
            config.application_name("rfs");
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        let connector =
            pgconn::Connector::for_config(&config, root_cert.as_deref()).map_err(|e| bad(e.0))?;
        let mc = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let mgr = match connector {
            pgconn::Connector::Tls(t) => Manager::from_config(config, t, mc),
            pgconn::Connector::Plain(p) => Manager::from_config(config, p, mc),
        };
        let pool = Pool::builder(mgr)
            .max_size(opts.pool_size.max(1))
            .build()
            .map_err(|e| bad(e.to_string()))?;
        let mut t = Table {
            pool,
            schema: Schema {
                table: name.clone(),
                columns: Vec::new(),
                key: 0,
                estimated_rows: 0,
                estimated_bytes: 0,
            },
            renderer: Renderer::new(&Schema {
                table: name.clone(),
                columns: Vec::new(),
                key: 0,
                estimated_rows: 0,
                estimated_bytes: 0,
            }),
            opts,
            select: String::new(),
            key_sql: String::new(),
            key_type: String::new(),
            shown_url,
        };
        t.schema = t.introspect(&name, key).await?;
        let names = t.project()?;
        t.renderer = Renderer::with_names(&t.schema, &names);
        let cols: Vec<String> = t
            .schema
            .columns
            .iter()
            .map(|c| {
                let q = quote_ident(&c.name);
                if c.kind.read_as_text() {
                    format!("{q}::text")
                } else {
                    q
                }
            })
            .collect();
        t.select = format!("SELECT {} FROM {}", cols.join(", "), t.schema.table.sql());
        t.key_sql = quote_ident(&t.schema.key_column().name);
        t.key_type = t.schema.key_column().sql_type.clone();
        if let Some(pred) = &t.opts.filter {
            // A predicate that does not parse or names no column is an error now, not at
            // the first page of some worker.
            let sql = format!("{} WHERE ({pred}) LIMIT 0", t.select);
            t.query("checking --where", &sql, &[])
                .await
                .map_err(|e| TableError::Config(format!("--where {pred:?}: {e}")))?;
        }
        Ok(t)
    }

    /// Keeps the `--columns` of the schema (the key column too, always) and returns each
    /// kept column's name in the document (`None`: read, not written).
    fn project(&mut self) -> Result<Vec<Option<String>>, TableError> {
        if self.opts.columns.is_empty() {
            return Ok(self
                .schema
                .columns
                .iter()
                .map(|c| Some(c.name.clone()))
                .collect());
        }
        let key = self.schema.key_column().name.clone();
        let mut columns = Vec::new();
        let mut names = Vec::new();
        let mut seen_out = std::collections::BTreeSet::new();
        for (col, out) in &self.opts.columns {
            let Some(c) = self.schema.columns.iter().find(|c| &c.name == col) else {
                return Err(TableError::Config(format!(
                    "--columns: table {} has no column {col:?} (columns: {})",
                    self.schema.table,
                    self.schema
                        .columns
                        .iter()
                        .map(|c| c.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            };
            if columns.iter().any(|k: &Column| &k.name == col) {
                return Err(TableError::Config(format!(
                    "--columns: column {col:?} is listed twice"
                )));
            }
            if !seen_out.insert(out.clone()) {
                return Err(TableError::Config(format!(
                    "--columns: two columns are written as {out:?}"
                )));
            }
            columns.push(c.clone());
            names.push(Some(out.clone()));
        }
        if !columns.iter().any(|c| c.name == key) {
            columns.push(self.schema.key_column().clone());
            names.push(None);
        }
        self.schema.key = columns
            .iter()
            .position(|c| c.name == key)
            .expect("the key column is kept");
        self.schema.columns = columns;
        Ok(names)
    }

    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// How the table is read (`--columns`, `--where`, pages).
    pub fn options(&self) -> &TableOptions {
        &self.opts
    }

    /// The source URL with its password masked.
    pub fn shown_url(&self) -> &str {
        &self.shown_url
    }

    async fn introspect(&self, name: &TableName, key: &str) -> Result<Schema, TableError> {
        let rel = self
            .query(
                "finding the table",
                "SELECT c.oid::int8, n.nspname::text, c.relname::text, c.reltuples::float8,
                        pg_total_relation_size(c.oid)::int8
                 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                 WHERE c.oid = to_regclass($1)",
                &[&name.sql()],
            )
            .await?;
        let Some(r) = rel.first() else {
            return Err(TableError::Config(format!(
                "table {name} not found in {} (or not visible to this user)",
                self.shown_url
            )));
        };
        let oid: i64 = r.get(0);
        let found = TableName {
            schema: Some(r.get(1)),
            name: r.get(2),
        };
        let reltuples: f64 = r.get(3);
        let bytes: i64 = r.get(4);
        let cols = self
            .query(
                "reading the columns",
                "SELECT a.attname::text, a.attnum::int4,
                        COALESCE(NULLIF(t.typbasetype, 0), a.atttypid)::int8,
                        format_type(COALESCE(NULLIF(t.typbasetype, 0), a.atttypid), a.atttypmod),
                        EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid
                                AND i.indisunique AND i.indnkeyatts = 1 AND i.indkey[0] = a.attnum
                                AND i.indpred IS NULL)
                 FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
                 WHERE a.attrelid = $1::int8::oid AND a.attnum > 0 AND NOT a.attisdropped
                 ORDER BY a.attnum",
                &[&oid],
            )
            .await?;
        let mut columns = Vec::new();
        let mut key_at = None;
        for c in &cols {
            let name: String = c.get(0);
            let type_oid: i64 = c.get(2);
            let sql_type: String = c.get(3);
            let unique: bool = c.get(4);
            if name == key {
                if !unique {
                    return Err(TableError::Config(format!(
                        "key column {key} of {found} has no unique index of its own: rows with equal keys would be lost between pages (use a primary key or a unique column)"
                    )));
                }
                key_at = Some(columns.len());
            }
            columns.push(Column {
                kind: ColumnKind::from_oid(type_oid as u32, &sql_type),
                name,
                sql_type,
            });
        }
        let Some(key_at) = key_at else {
            return Err(TableError::Config(format!(
                "table {found} has no column {key:?} (columns: {})",
                columns
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        if matches!(
            columns[key_at].kind,
            ColumnKind::Json
                | ColumnKind::Jsonb
                | ColumnKind::Float4
                | ColumnKind::Float8
                | ColumnKind::Bytea
                | ColumnKind::Bool
        ) {
            return Err(TableError::Config(format!(
                "key column {key} of {found} is {}: use a text, uuid, integer, numeric, timestamp or date key",
                columns[key_at].sql_type
            )));
        }
        let estimated_rows = if reltuples >= 0.0 {
            reltuples as u64
        } else {
            // Never analysed: count (such tables are new, hence usually small).
            let n = self
                .query(
                    "counting rows",
                    &format!("SELECT count(*) FROM {}", found.sql()),
                    &[],
                )
                .await?;
            n.first().map_or(0, |r| r.get::<_, i64>(0).max(0) as u64)
        };
        Ok(Schema {
            table: found,
            columns,
            key: key_at,
            estimated_rows,
            estimated_bytes: bytes.max(0) as u64,
        })
    }

    /// Runs one statement with retries.
    async fn query(
        &self,
        what: &str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, TableError> {
        let run = || async {
            let client = self.pool.get().await.map_err(|e| match e {
                deadpool_postgres::PoolError::Backend(e) => {
                    TableError::from_pg(&format!("connecting to {}", self.shown_url), &e)
                }
                other => {
                    TableError::Unavailable(format!("connecting to {}: {other}", self.shown_url))
                }
            })?;
            let stmt = client
                .prepare_cached(sql)
                .await
                .map_err(|e| TableError::from_pg(what, &e))?;
            client
                .query(&stmt, params)
                .await
                .map_err(|e| TableError::from_pg(what, &e))
        };
        run.retry(
            ExponentialBuilder::default()
                .with_min_delay(self.opts.backoff)
                .with_max_delay(Duration::from_secs(30))
                .with_max_times(self.opts.attempts.saturating_sub(1))
                .with_jitter(),
        )
        .when(TableError::is_transient)
        .notify(|e, wait| tracing::warn!("{e}; retrying in {wait:?}"))
        .await
    }

    /// The key as ORDER BY must name it: qualified by the table, so that it is the column
    /// and not the output column of the same name, which is its text for keys read as
    /// text (numeric keys would be sorted as strings: `10.5` before `2`).
    fn order_key(&self) -> String {
        format!("{}.{}", self.schema.table.sql(), self.key_sql)
    }

    fn cast(&self, n: usize) -> String {
        format!("${n}::text::{}", self.key_type)
    }

    /// Up to `limit` rows of `slot` after `cursor` (the last key delivered; `None`: from the
    /// slot's start) and inside `bounds`, in key order.
    pub async fn page(
        &self,
        slot: &Slot,
        bounds: &Bounds,
        cursor: Option<&str>,
        limit: u32,
    ) -> Result<Page, TableError> {
        let k = &self.key_sql;
        // NULL keys sort last and cannot be stepped over: [`Table::null_keys`] counts them.
        let mut conds: Vec<String> = vec![format!("{k} IS NOT NULL")];
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::new();
        // The cursor is inside the slot, hence after its lower bound.
        let after = cursor.or(slot.after.as_deref());
        let after_s;
        let until_s;
        let from_s;
        let limit_s;
        if let Some(a) = after {
            after_s = a.to_string();
            params.push(&after_s);
            conds.push(format!("{k} > {}", self.cast(params.len())));
        }
        if let Some(u) = &slot.until {
            until_s = u.clone();
            params.push(&until_s);
            conds.push(format!("{k} <= {}", self.cast(params.len())));
        }
        if let Some(f) = &bounds.from {
            from_s = f.clone();
            params.push(&from_s);
            conds.push(format!("{k} >= {}", self.cast(params.len())));
        }
        if let Some(u) = &bounds.until {
            limit_s = u.clone();
            params.push(&limit_s);
            conds.push(format!("{k} < {}", self.cast(params.len())));
        }
        if let Some(pred) = &self.opts.filter {
            conds.push(format!("({pred})"));
        }
        let limit = limit.max(1);
        let sql = format!(
            "{} WHERE {} ORDER BY {} LIMIT {limit}",
            self.select,
            conds.join(" AND "),
            self.order_key()
        );
        let rows = self
            .query(&format!("reading {}", self.schema.table), &sql, &params)
            .await?;
        let mut page = Page {
            full: rows.len() as u64 >= limit as u64,
            ..Page::default()
        };
        let mut size = 256;
        for row in &rows {
            let mut buf = Vec::with_capacity(size);
            match self.renderer.render(row, &mut buf) {
                Ok(key) => {
                    size = buf.len() + 64;
                    page.last_key = Some(key.clone());
                    page.rows.push(PageRow::Row { key, json: buf });
                }
                Err((key, bad)) => {
                    if let Some(k) = &key {
                        page.last_key = Some(k.clone());
                    }
                    page.rows.push(PageRow::Bad { key, reason: bad.0 });
                }
            }
        }
        Ok(page)
    }

    /// Rows of `slot` after `cursor` inside `bounds` whose key is not NULL: what reading
    /// them page by page must have found.
    pub async fn count(
        &self,
        slot: &Slot,
        bounds: &Bounds,
        cursor: Option<&str>,
    ) -> Result<u64, TableError> {
        let k = &self.key_sql;
        let mut conds: Vec<String> = vec![format!("{k} IS NOT NULL")];
        let mut values: Vec<String> = Vec::new();
        for (v, op) in [
            (cursor.or(slot.after.as_deref()), ">"),
            (slot.until.as_deref(), "<="),
            (bounds.from.as_deref(), ">="),
            (bounds.until.as_deref(), "<"),
        ] {
            if let Some(v) = v {
                values.push(v.to_string());
                conds.push(format!("{k} {op} {}", self.cast(values.len())));
            }
        }
        let params: Vec<&(dyn ToSql + Sync)> =
            values.iter().map(|v| v as &(dyn ToSql + Sync)).collect();
        let sql = format!(
            "SELECT count(*) FROM {} WHERE {}",
            self.schema.table.sql(),
            conds.join(" AND ")
        );
        let rows = self.query("counting a slot's rows", &sql, &params).await?;
        Ok(rows.first().map_or(0, |r| r.get::<_, i64>(0).max(0) as u64))
    }

    /// The smallest and greatest key inside `bounds` (`None`: no rows).
    pub async fn key_range(&self, bounds: &Bounds) -> Result<Option<(String, String)>, TableError> {
        let lo = self.edge_key(bounds, "ASC").await?;
        let hi = self.edge_key(bounds, "DESC").await?;
        Ok(lo.zip(hi))
    }

    async fn edge_key(&self, bounds: &Bounds, dir: &str) -> Result<Option<String>, TableError> {
        let k = &self.key_sql;
        let (conds, from_s, until_s) = self.bound_conds(bounds);
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::new();
        if let Some(f) = &from_s {
            params.push(f);
        }
        if let Some(u) = &until_s {
            params.push(u);
        }
        let sql = format!(
            "SELECT {k}{} FROM {} {conds} ORDER BY {} {dir} LIMIT 1",
            if self.schema.key_column().kind.read_as_text() {
                "::text"
            } else {
                ""
            },
            self.schema.table.sql(),
            self.order_key()
        );
        let rows = self.query("reading the key range", &sql, &params).await?;
        self.first_key(&rows)
    }

    fn first_key(&self, rows: &[tokio_postgres::Row]) -> Result<Option<String>, TableError> {
        let Some(r) = rows.first() else {
            return Ok(None);
        };
        let raw: Raw = r
            .try_get(0)
            .map_err(|e| TableError::Query(format!("reading a key: {e}")))?;
        key_text(&self.schema.key_column().kind, raw.0)
            .map(Some)
            .map_err(|e| TableError::Query(format!("reading a key: {}", e.0)))
    }

    fn bound_conds(&self, bounds: &Bounds) -> (String, Option<String>, Option<String>) {
        let k = &self.key_sql;
        // NULL keys are no key: DESC would give them first.
        let mut conds = vec![format!("{k} IS NOT NULL")];
        let mut n = 0;
        if bounds.from.is_some() {
            n += 1;
            conds.push(format!("{k} >= {}", self.cast(n)));
        }
        if bounds.until.is_some() {
            n += 1;
            conds.push(format!("{k} < {}", self.cast(n)));
        }
        let w = format!("WHERE {}", conds.join(" AND "));
        (w, bounds.from.clone(), bounds.until.clone())
    }

    /// Whether `columns` are provably unique together: a unique index (or primary key)
    /// without a predicate or expressions has its key columns among them. Two rows can then
    /// only agree on all of `columns` when one of those is NULL in both (a unique index lets
    /// NULLs repeat). `None` when a column does not exist.
    pub async fn unique_over(&self, columns: &[&str]) -> Result<Option<bool>, TableError> {
        let names: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
        for c in &names {
            if !self.schema.columns.iter().any(|k| &k.name == c) {
                return Ok(None);
            }
        }
        let rows = self
            .query(
                "reading the unique indexes",
                "SELECT EXISTS (
                    SELECT 1 FROM pg_index i
                    WHERE i.indrelid = to_regclass($1) AND i.indisunique
                      AND i.indpred IS NULL AND i.indexprs IS NULL
                      AND NOT EXISTS (
                        SELECT 1 FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
                        WHERE k.n <= i.indnkeyatts AND k.attnum NOT IN (
                            SELECT a.attnum FROM pg_attribute a
                            WHERE a.attrelid = i.indrelid AND a.attname = ANY($2::text[]))))",
                &[&self.schema.table.sql(), &names],
            )
            .await?;
        Ok(Some(rows.first().is_some_and(|r| r.get::<_, bool>(0))))
    }

    /// Rows whose key is NULL (a unique index allows them; pages never reach them).
    pub async fn null_keys(&self) -> Result<u64, TableError> {
        let sql = format!(
            "SELECT count(*) FROM {} WHERE {} IS NULL",
            self.schema.table.sql(),
            self.key_sql
        );
        let rows = self.query("counting NULL keys", &sql, &[]).await?;
        Ok(rows.first().map_or(0, |r| r.get::<_, i64>(0).max(0) as u64))
    }

    /// About `target` keys inside `bounds`, sorted: every key when the table holds no more
    /// than that many rows, else a block sample (`TABLESAMPLE SYSTEM`).
    pub async fn sample_keys(
        &self,
        bounds: &Bounds,
        target: u64,
    ) -> Result<Vec<String>, TableError> {
        let k = &self.key_sql;
        let (conds, from_s, until_s) = self.bound_conds(bounds);
        let mut params: Vec<&(dyn ToSql + Sync)> = Vec::new();
        if let Some(f) = &from_s {
            params.push(f);
        }
        if let Some(u) = &until_s {
            params.push(u);
        }
        let est = self.schema.estimated_rows;
        let sampling = if est > target.saturating_mul(2) {
            let pct = (target as f64 * 100.0 / est as f64).clamp(0.0001, 100.0);
            // Block sampling: reads only the sampled pages, not the whole table.
            format!("TABLESAMPLE SYSTEM ({pct})")
        } else {
            String::new()
        };
        let sql = format!(
            "SELECT {k}{} FROM {} {sampling} {conds} ORDER BY {}",
            if self.schema.key_column().kind.read_as_text() {
                "::text"
            } else {
                ""
            },
            self.schema.table.sql(),
            self.order_key()
        );
        let rows = self.query("sampling keys", &sql, &params).await?;
        let kind = &self.schema.key_column().kind;
        rows.iter()
            .map(|r| {
                let raw: Raw = r
                    .try_get(0)
                    .map_err(|e| TableError::Query(format!("reading a key: {e}")))?;
                key_text(kind, raw.0)
                    .map_err(|e| TableError::Query(format!("reading a key: {}", e.0)))
            })
            .collect()
    }
}

/// Removes query parameter `name` from a URL (tokio-postgres does not know it).
fn take_param(url: &str, name: &str) -> Result<(String, Option<String>), String> {
    if !url.contains("://") {
        // key=value connection strings are passed on as they are.
        return Ok((url.to_string(), None));
    }
    let mut u = url::Url::parse(url).map_err(|e| e.to_string())?;
    let mut value = None;
    let kept: Vec<(String, String)> = u
        .query_pairs()
        .filter_map(|(k, v)| {
            if k == name {
                value = Some(v.into_owned());
                None
            } else {
                Some((k.into_owned(), v.into_owned()))
            }
        })
        .collect();
    if kept.is_empty() {
        u.set_query(None);
    } else {
        u.query_pairs_mut().clear().extend_pairs(kept);
    }
    Ok((u.to_string(), value))
}
