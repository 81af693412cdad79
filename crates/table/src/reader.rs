//! [`Table`]: a pool of read-only connections to one table, its [`Schema`], and the
//! statements a migration needs — keyset pages, key range, key sample, row estimate.
//!
//! Every connection starts with `default_transaction_read_only=on` and the statement
//! timeout. A slot is read by a [`SlotRead`]: its pages and the count of its rows in one
//! read-only REPEATABLE READ snapshot, so that the count is of the rows read (a replica
//! serves these too; a long one may be cancelled by recovery, which is retried).
//! Statements are retried with exponential backoff and jitter while the failure is
//! transient ([`TableError::is_transient`]); each retry asks again for the keys after the
//! last one delivered (in a new snapshot), so nothing is read twice or skipped.

use std::time::Duration;

use backon::Retryable;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use pacing::RetryPolicy;
use tokio_postgres::types::ToSql;

use crate::error::TableError;
use crate::name::{quote_ident, TableName};
use crate::schema::{Column, ColumnKind, Schema};
use crate::slots::{Bounds, Slot};
use crate::value::{key_text, Raw, Renderer};

/// The settings every session reading the source starts with, whatever the server, the
/// database or the role set (`ALTER DATABASE … SET`): the text of a value read as text
/// depends on them, so workers on replicas with other defaults would write other values.
///
/// - `extra_float_digits=3`: floats (in arrays, geometric types, …) in their shortest
///   exact form, never rounded to 15 digits (PostgreSQL 12 and later; `0.30000000000000004`).
/// - `DateStyle=ISO,MDY`: dates and times in ISO 8601 (`2024-04-30 21:30:00+00`);
///   `MDY` only orders ambiguous input, which rfs never sends.
/// - `TimeZone=UTC`: timestamptz texts (in arrays, ranges) in UTC.
/// - `IntervalStyle=postgres`: `1 day 02:00:00`.
/// - `bytea_output=hex`: bytea inside arrays and records as `\x…`.
/// - `lc_monetary=C`: money without a locale's currency symbol or separators.
///
/// Not pinned: `search_path` (it resolves `--table` and `--where` as the user means them;
/// it only changes how `regclass`-like values name objects). Verified after connecting
/// ([`Table::open`] fails when a pooler dropped them).
pub const PINNED_SETTINGS: &[(&str, &str)] = &[
    ("extra_float_digits", "3"),
    ("DateStyle", "ISO,MDY"),
    ("TimeZone", "UTC"),
    ("IntervalStyle", "postgres"),
    ("bytea_output", "hex"),
    ("lc_monetary", "C"),
];

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

impl TableOptions {
    /// How a transient failure is retried: [`TableOptions::attempts`] in all, waits from
    /// [`TableOptions::backoff`] doubling with jitter up to 30 s.
    pub fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_attempts: u32::try_from(self.attempts.max(1)).unwrap_or(u32::MAX),
            initial_backoff: self.backoff,
            max_backoff: Duration::from_secs(30),
            ..RetryPolicy::default()
        }
    }
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
    pub(crate) schema: Schema,
    pub(crate) renderer: Renderer,
    /// Each column's name in the documents (`None`: read, not written), as `schema.columns`.
    names: Vec<Option<String>>,
    pub(crate) opts: TableOptions,
    /// `SELECT <columns> FROM <table>`.
    select: String,
    /// The `<columns>` of [`Table::select`].
    pub(crate) columns_sql: String,
    /// `<key>` quoted, and its type for casts.
    pub(crate) key_sql: String,
    pub(crate) key_type: String,
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
        let name = TableName::parse(table)?;
        // sslrootcert= is not tokio-postgres's: taken out of a URL (a key=value connection
        // string is passed on as it is)
        let (conn_url, root_cert) = if url.contains("://") {
            pgconn::take_param(url, "sslrootcert").map_err(|e| bad(e.to_string()))?
        } else {
            (url.to_string(), None)
        };
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
        // Last, so that they win over the URL's `options=` too; a startup option also wins
        // over ALTER DATABASE / ALTER ROLE settings (PostgreSQL's GUC source order: client
        // over database and role).
        for (name, value) in PINNED_SETTINGS {
            options.push_str(&format!(" -c {name}={value}"));
        }
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
            names: Vec::new(),
            opts,
            select: String::new(),
            columns_sql: String::new(),
            key_sql: String::new(),
            key_type: String::new(),
            shown_url,
        };
        t.check_session().await?;
        t.schema = t.introspect(&name, key).await?;
        let names = t.project()?;
        t.renderer = Renderer::with_names(&t.schema, &names);
        t.names = names;
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
        t.columns_sql = cols.join(", ");
        t.select = format!("SELECT {} FROM {}", t.columns_sql, t.schema.table.sql());
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

    /// Each column of [`Table::schema`] with its name in the documents (after `--columns`);
    /// columns read but not written (the key, when not listed) are left out.
    pub fn written_columns(&self) -> impl Iterator<Item = (&Column, &str)> {
        self.schema
            .columns
            .iter()
            .zip(&self.names)
            .filter_map(|(c, n)| Some((c, n.as_deref()?)))
    }

    /// The column written under `name` in the documents.
    pub fn column_written_as(&self, name: &str) -> Option<&Column> {
        self.written_columns()
            .find(|(_, n)| *n == name)
            .map(|(c, _)| c)
    }

    /// The key column's name in the documents (`None`: it is read, not written).
    pub fn key_written_as(&self) -> Option<&str> {
        self.names.get(self.schema.key).and_then(|n| n.as_deref())
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
                "SELECT a.attname::text, a.attnum::int4, a.atttypid::int8,
                        format_type(a.atttypid, a.atttypmod),
                        EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid
                                AND i.indisunique AND i.indnkeyatts = 1 AND i.indkey[0] = a.attnum
                                AND i.indpred IS NULL),
                        a.atttypmod, t.typtype = 'd' OR t.typcategory = 'A'
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
            let mut type_oid: i64 = c.get(2);
            let mut sql_type: String = c.get(3);
            let unique: bool = c.get(4);
            if c.get::<_, bool>(6) {
                // A domain (of any depth) or an array (of domains, perhaps): read and
                // rendered as what it is made of.
                (type_oid, sql_type) = self.base_type(type_oid, c.get(5)).await?;
            }
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

    /// The session has the [`PINNED_SETTINGS`] (a pooler may drop startup options).
    async fn check_session(&self) -> Result<(), TableError> {
        let names: Vec<String> = PINNED_SETTINGS.iter().map(|(n, _)| n.to_string()).collect();
        let rows = self
            .query(
                "reading the session's settings",
                "SELECT current_setting(n) FROM unnest($1::text[]) WITH ORDINALITY AS s(n, i) ORDER BY i",
                &[&names],
            )
            .await?;
        let norm = |v: &str| v.replace(' ', "").to_ascii_lowercase();
        for ((name, want), row) in PINNED_SETTINGS.iter().zip(&rows) {
            let got: String = row.get(0);
            if norm(&got) != norm(want) {
                return Err(TableError::Config(format!(
                    "source {}: the session has {name}={got}, not the {want} it asked for at connect (a connection pooler dropping startup options?): values read as text would follow the server's settings",
                    self.shown_url
                )));
            }
        }
        Ok(())
    }

    /// The type a domain stands for, through any number of domains over domains, and an
    /// array of domains as the array of their base type (`int4` for a domain over a
    /// domain over `int4`, `int4[]` for an array of it), with the type as SQL. A typmod
    /// (`varchar(10)`) is the outermost one given.
    async fn base_type(&self, oid: i64, typmod: i32) -> Result<(i64, String), TableError> {
        let (oid, typmod) = self.resolve_type(oid, typmod, 0).await?;
        let rows = self
            .query(
                "reading a column's type",
                "SELECT format_type($1::int8::oid, $2::int4)",
                &[&oid, &typmod],
            )
            .await?;
        let shown = rows.first().map(|r| r.get::<_, String>(0));
        Ok((oid, shown.unwrap_or_default()))
    }

    async fn resolve_type(
        &self,
        mut oid: i64,
        mut typmod: i32,
        depth: usize,
    ) -> Result<(i64, i32), TableError> {
        // Domains cannot form a cycle; the bound only keeps a broken catalog from looping.
        for _ in 0..64 {
            let rows = self
                .query(
                    "reading a column's type",
                    "SELECT typtype::text, typbasetype::int8, typtypmod, typelem::int8,
                            typlen::int4, typcategory::text
                     FROM pg_type WHERE oid = $1::int8::oid",
                    &[&oid],
                )
                .await?;
            let Some(t) = rows.first() else {
                return Ok((oid, typmod));
            };
            let (typtype, base, domain_mod): (String, i64, i32) = (t.get(0), t.get(1), t.get(2));
            let (elem, len, category): (i64, i32, String) = (t.get(3), t.get(4), t.get(5));
            if typtype == "d" && base != 0 {
                if typmod == -1 {
                    typmod = domain_mod;
                }
                oid = base;
                continue;
            }
            // A true array (varlena with an element type): its element resolved, the array
            // of that. Fixed-length types with an element (point, name) are not arrays.
            if category == "A" && elem != 0 && len == -1 && depth < 8 {
                let (elem_base, elem_mod) =
                    Box::pin(self.resolve_type(elem, typmod, depth + 1)).await?;
                if elem_base != elem {
                    let rows = self
                        .query(
                            "reading a column's type",
                            "SELECT typarray::int8 FROM pg_type WHERE oid = $1::int8::oid",
                            &[&elem_base],
                        )
                        .await?;
                    if let Some(array) = rows.first().map(|r| r.get::<_, i64>(0)) {
                        if array != 0 {
                            return Ok((array, elem_mod));
                        }
                    }
                }
            }
            return Ok((oid, typmod));
        }
        Ok((oid, typmod))
    }

    /// A connection of the pool.
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object, TableError> {
        self.pool.get().await.map_err(|e| match e {
            deadpool_postgres::PoolError::Backend(e) => {
                TableError::from_pg(&format!("connecting to {}", self.shown_url), &e)
            }
            other => TableError::Unavailable(format!("connecting to {}: {other}", self.shown_url)),
        })
    }

    /// Runs one statement with retries.
    pub(crate) async fn query(
        &self,
        what: &str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, TableError> {
        let run = || async {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached(sql)
                .await
                .map_err(|e| TableError::from_pg(what, &e))?;
            client
                .query(&stmt, params)
                .await
                .map_err(|e| TableError::from_pg(what, &e))
        };
        run.retry(self.opts.retry_policy().waits())
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
        let limit = limit.max(1);
        let (sql, values) = self.page_sql(slot, bounds, cursor, limit);
        let rows = self
            .query(
                &format!("reading {}", self.schema.table),
                &sql,
                &params(&values),
            )
            .await?;
        Ok(self.render_page(&rows, limit))
    }

    /// The keyset statement of [`Table::page`] and its parameters (key texts).
    fn page_sql(
        &self,
        slot: &Slot,
        bounds: &Bounds,
        cursor: Option<&str>,
        limit: u32,
    ) -> (String, Vec<String>) {
        // NULL keys sort last and cannot be stepped over: [`Table::null_keys`] counts them.
        // The cursor is inside the slot, hence after its lower bound.
        let (conds, values) = self.slot_conds(slot, bounds, cursor.or(slot.after.as_deref()));
        let sql = format!(
            "{} WHERE {} ORDER BY {} LIMIT {limit}",
            self.select,
            conds.join(" AND "),
            self.order_key()
        );
        (sql, values)
    }

    /// The conditions of the rows of `slot` after `after` inside `bounds` (and `--where`),
    /// with their parameters: the same for pages and counts, so that a count is of the rows
    /// the pages read.
    fn slot_conds(
        &self,
        slot: &Slot,
        bounds: &Bounds,
        after: Option<&str>,
    ) -> (Vec<String>, Vec<String>) {
        let k = &self.key_sql;
        let mut conds: Vec<String> = vec![format!("{k} IS NOT NULL")];
        let mut values: Vec<String> = Vec::new();
        for (v, op) in [
            (after, ">"),
            (slot.until.as_deref(), "<="),
            (bounds.from.as_deref(), ">="),
            (bounds.until.as_deref(), "<"),
        ] {
            if let Some(v) = v {
                values.push(v.to_string());
                conds.push(format!("{k} {op} {}", self.cast(values.len())));
            }
        }
        if let Some(pred) = &self.opts.filter {
            conds.push(format!("({pred})"));
        }
        (conds, values)
    }

    fn render_page(&self, rows: &[tokio_postgres::Row], limit: u32) -> Page {
        let mut page = Page {
            full: rows.len() as u64 >= limit as u64,
            ..Page::default()
        };
        let mut size = 256;
        for row in rows {
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
        page
    }

    /// Rows of `slot` after `cursor` inside `bounds` (and `--where`) whose key is not NULL:
    /// what reading them page by page must have found.
    pub async fn count(
        &self,
        slot: &Slot,
        bounds: &Bounds,
        cursor: Option<&str>,
    ) -> Result<u64, TableError> {
        let (sql, values) = self.count_sql(slot, bounds, cursor, None);
        let rows = self
            .query("counting a slot's rows", &sql, &params(&values))
            .await?;
        Ok(rows.first().map_or(0, |r| r.get::<_, i64>(0).max(0) as u64))
    }

    /// The statement of [`Table::count`], of the keys up to `upto` too when given.
    fn count_sql(
        &self,
        slot: &Slot,
        bounds: &Bounds,
        cursor: Option<&str>,
        upto: Option<&str>,
    ) -> (String, Vec<String>) {
        let (mut conds, mut values) =
            self.slot_conds(slot, bounds, cursor.or(slot.after.as_deref()));
        if let Some(u) = upto {
            values.push(u.to_string());
            conds.push(format!("{} <= {}", self.key_sql, self.cast(values.len())));
        }
        let sql = format!(
            "SELECT count(*) FROM {} WHERE {}",
            self.schema.table.sql(),
            conds.join(" AND ")
        );
        (sql, values)
    }

    /// Reads `slot` after `cursor` page by page, each page and the slot's count in one
    /// snapshot: see [`SlotRead`].
    pub fn read_slot(&self, slot: &Slot, bounds: &Bounds, cursor: Option<&str>) -> SlotRead<'_> {
        SlotRead {
            table: self,
            slot: slot.clone(),
            bounds: bounds.clone(),
            cursor: cursor.map(str::to_owned),
            open: None,
            interrupted: None,
            proven: Vec::new(),
        }
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

fn params(values: &[String]) -> Vec<&(dyn ToSql + Sync)> {
    values.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

/// One read of a slot, page by page, in REPEATABLE READ snapshots: a snapshot opens with
/// the count of the slot's rows after the key where it starts, and its pages are read in
/// it, so that when the last page arrives the count is of exactly the rows the pages could
/// return. A page that fails for a transient reason (connection lost, statement timeout,
/// the snapshot held too long) is retried with backoff in a new snapshot that starts after
/// the last key read; the rows read in the interrupted one are counted again in the new
/// one ([`SlotProof::interrupted`]), where rows written in between may change the count.
///
/// Dropped before the end (the pipeline stopped), the open snapshot's connection is
/// closed rather than given back to the pool inside its transaction.
pub struct SlotRead<'t> {
    table: &'t Table,
    slot: Slot,
    bounds: Bounds,
    /// The last key read (`None`: none yet; from the slot's start or the first cursor).
    cursor: Option<String>,
    open: Option<ReadSnapshot>,
    /// A snapshot that ended in an error: where it started, and the rows read in it.
    interrupted: Option<(Option<String>, u64)>,
    proven: Vec<SnapshotCount>,
}

/// A PostgreSQL read snapshot (a REPEATABLE READ, READ ONLY transaction) open on the
/// slot; not a snapshot of an Elasticsearch repository.
struct ReadSnapshot {
    client: deadpool_postgres::Object,
    /// The key after which it starts.
    from: Option<String>,
    /// Rows after `from`, counted in the snapshot.
    counted: u64,
    /// Rows read in it.
    read: u64,
}

/// What one snapshot of a [`SlotRead`] counted and what was read in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotCount {
    /// The key after which the snapshot's rows start (`None`: the slot's start).
    pub from: Option<String>,
    /// Rows of the slot from there, counted in the snapshot.
    pub counted: u64,
    /// Rows the pages read in it.
    pub read: u64,
    /// This snapshot was interrupted by an error: `counted` is of the rows up to the key
    /// where it stopped, counted again in the next snapshot (rows written in between
    /// change it; nothing proves a difference a loss).
    pub interrupted: bool,
}

/// What a whole [`SlotRead`] counted: one entry per snapshot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlotProof {
    pub snapshots: Vec<SnapshotCount>,
}

impl SlotProof {
    /// The first snapshot (not interrupted) whose pages read other than its count.
    pub fn mismatch(&self) -> Option<&SnapshotCount> {
        self.snapshots
            .iter()
            .find(|s| !s.interrupted && s.counted != s.read)
    }

    /// Interrupted snapshots whose rows counted again differ from the rows read.
    pub fn changed(&self) -> impl Iterator<Item = &SnapshotCount> {
        self.snapshots
            .iter()
            .filter(|s| s.interrupted && s.counted != s.read)
    }
}

impl SlotRead<'_> {
    /// The next page (`full == false`: the slot's last; then [`SlotRead::proof`] says what
    /// the snapshot counted).
    pub async fn next_page(&mut self, limit: u32) -> Result<Page, TableError> {
        let mut waits = self.table.opts.retry_policy().waits();
        loop {
            match self.try_page(limit.max(1)).await {
                Ok(p) => return Ok(p),
                Err(e) => {
                    if let Some(s) = self.open.take() {
                        // Nothing of the broken snapshot is trusted but the rows already
                        // returned: the next one starts after the last key read.
                        self.interrupted = Some((s.from, s.read));
                        drop(deadpool_postgres::Object::take(s.client));
                    }
                    match waits.next().filter(|_| e.is_transient()) {
                        Some(wait) => {
                            tracing::warn!("{e}; retrying in {wait:?} in a new snapshot");
                            tokio::time::sleep(wait).await;
                        }
                        None => return Err(e),
                    }
                }
            }
        }
    }

    async fn try_page(&mut self, limit: u32) -> Result<Page, TableError> {
        let t = self.table;
        let what = format!("reading {}", t.schema.table);
        if self.open.is_none() {
            let client = t.client().await?;
            client
                .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                .await
                .map_err(|e| TableError::from_pg(&what, &e))?;
            let count = |cursor: Option<&str>, upto: Option<&str>| {
                let (sql, values) = t.count_sql(&self.slot, &self.bounds, cursor, upto);
                let client = &client;
                async move {
                    let rows = client
                        .query(&sql, &params(&values))
                        .await
                        .map_err(|e| TableError::from_pg("counting a slot's rows", &e))?;
                    Ok::<u64, TableError>(
                        rows.first().map_or(0, |r| r.get::<_, i64>(0).max(0) as u64),
                    )
                }
            };
            if let Some((from, read)) = self.interrupted.take() {
                let counted = count(from.as_deref(), self.cursor.as_deref()).await?;
                self.proven.push(SnapshotCount {
                    from,
                    counted,
                    read,
                    interrupted: true,
                });
            }
            let counted = count(self.cursor.as_deref(), None).await?;
            self.open = Some(ReadSnapshot {
                client,
                from: self.cursor.clone(),
                counted,
                read: 0,
            });
        }
        let s = self.open.as_mut().expect("a snapshot is open");
        let (sql, values) = t.page_sql(&self.slot, &self.bounds, self.cursor.as_deref(), limit);
        let stmt = s
            .client
            .prepare_cached(&sql)
            .await
            .map_err(|e| TableError::from_pg(&what, &e))?;
        let rows = s
            .client
            .query(&stmt, &params(&values))
            .await
            .map_err(|e| TableError::from_pg(&what, &e))?;
        let page = t.render_page(&rows, limit);
        s.read += page.rows.len() as u64;
        if let Some(k) = &page.last_key {
            self.cursor = Some(k.clone());
        }
        if !page.full {
            let s = self.open.take().expect("a snapshot is open");
            // A read-only transaction: its end cannot fail what was read. A connection that
            // cannot say COMMIT is not given back to the pool.
            match s.client.batch_execute("COMMIT").await {
                Ok(()) => drop(s.client),
                Err(_) => drop(deadpool_postgres::Object::take(s.client)),
            }
            self.proven.push(SnapshotCount {
                from: s.from,
                counted: s.counted,
                read: s.read,
                interrupted: false,
            });
        }
        Ok(page)
    }

    /// What the snapshots counted, once the last page was read.
    pub fn proof(&self) -> SlotProof {
        SlotProof {
            snapshots: self.proven.clone(),
        }
    }
}

impl Drop for SlotRead<'_> {
    fn drop(&mut self) {
        if let Some(s) = self.open.take() {
            // Inside its transaction: closed, not pooled.
            drop(deadpool_postgres::Object::take(s.client));
        }
    }
}
