//! The table source: rows of one PostgreSQL table (crate `table`), slot by slot.
//!
//! **Row representation (for every sink).** Each row is one [`Document`] whose `source` is
//! one JSON object, columns in table order, rendered as [`table::value`] documents: text
//! and uuid → string; integers and floats → number; numeric → number written exactly from
//! PostgreSQL's text form; bool; NULL → null; bytea → base64 string; timestamps → RFC 3339
//! UTC strings; date → `YYYY-MM-DD`; json/jsonb → embedded JSON; other types → their text
//! form as a string. `id` is the key column's text (a string's content, a number's digits)
//! and `position` is `Position::Key` of the same text; `index` is the table's name.
//!
//! A sink that needs more than JSON tells (DynamoDB: bytea → `B`, numbers → `N`) gets the
//! column types from [`TableSource::columns`] when it is built: [`ColumnHints`] maps each
//! column name to [`ColumnShape`] (`Binary` columns hold base64 strings to decode, `Number`
//! columns hold JSON numbers to keep as written, `Json` columns hold embedded JSON).
//!
//! **Slots.** One [`WorkItem`] per slot: `group` the table, `part` the slot number,
//! `after`/`until` the slot's key bounds (`after < key <= until`); a successor item starts
//! after the last acknowledged key. `--from`/`--until` limits apply to every read.
//!
//! A row that cannot be rendered (NaN, infinite timestamps, text that is not UTF-8)
//! becomes a [`Skip`] with reason `bad_row`, its key and what was wrong: the failure log
//! has it, status counts it.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use coordination::{Cursor, Position, WorkItem};
use table::slots::{quantile_bounds, slots_between, time_slots, TimeKey};
use table::{Bounds, ColumnKind, Slot, SlotRule, Table};

use crate::document::{Document, Op, Read, Skip};
use crate::error::SourceError;
use crate::source::{GroupTotals, Plan, Source, Totals};

/// What a column's JSON value is, beyond what JSON says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnShape {
    String,
    /// A JSON number, written exactly (numeric keeps its digits).
    Number,
    Bool,
    /// A base64 string of bytes (bytea).
    Binary,
    /// An RFC 3339 UTC string (timestamps) or `YYYY-MM-DD` (dates).
    Time,
    /// Embedded JSON (json, jsonb): objects, arrays, scalars.
    Json,
}

/// Column name → shape, for sinks that map rows into typed items.
pub type ColumnHints = BTreeMap<String, ColumnShape>;

fn shape(kind: &ColumnKind) -> ColumnShape {
    match kind.json_shape() {
        "bool" => ColumnShape::Bool,
        "number" => ColumnShape::Number,
        "binary" => ColumnShape::Binary,
        "time" => ColumnShape::Time,
        "json" => ColumnShape::Json,
        _ => ColumnShape::String,
    }
}

/// How the table is cut and bounded.
#[derive(Debug, Clone)]
pub struct TableSourceOptions {
    pub rule: SlotRule,
    /// `--from` (inclusive) and `--until` (exclusive): times (RFC 3339 or a date) for
    /// time-ordered keys, key values otherwise.
    pub from: Option<String>,
    pub until: Option<String>,
    /// Rows per page.
    pub page_rows: u32,
    /// Newest slots first: slot 0 is the newest (the work items' numbering and the order
    /// they are created in).
    pub newest_first: bool,
}

/// Rows of one table.
pub struct TableSource {
    table: Arc<Table>,
    opts: TableSourceOptions,
    /// The limits as key texts.
    bounds: Bounds,
    /// The limits as times, when the key carries its time.
    time_limits: (Option<i64>, Option<i64>),
    time_key: Option<TimeKey>,
    group: Arc<str>,
    runtime: tokio::runtime::Handle,
}

impl TableSource {
    /// A source over `table`; call from inside the runtime (reads use it).
    pub async fn new(table: Arc<Table>, opts: TableSourceOptions) -> Result<Self, SourceError> {
        let kind = table.schema().key_column().kind.clone();
        let wants_time = matches!(opts.rule, SlotRule::Time { .. });
        let time_key = match kind {
            ColumnKind::Text => {
                let first = table
                    .key_range(&Bounds::default())
                    .await
                    .map_err(|e| SourceError::fatal(e.to_string()))?;
                TimeKey::detect(&kind, first.as_ref().map(|(lo, _)| lo.as_str()))
            }
            _ => TimeKey::detect(&kind, None),
        };
        let time_key = match (time_key, wants_time) {
            (Ok(t), _) => Some(t),
            (Err(e), true) => {
                return Err(SourceError::fatal(format!(
                    "table {}: {e}",
                    table.schema().table
                )))
            }
            (Err(_), false) => None,
        };
        let mut bounds = Bounds::default();
        let mut time_limits = (None, None);
        for (given, key_out, ms_out) in [
            (&opts.from, &mut bounds.from, &mut time_limits.0),
            (&opts.until, &mut bounds.until, &mut time_limits.1),
        ] {
            let Some(v) = given else { continue };
            match (time_key, table::slots::parse_time(v)) {
                (Some(tk), Ok(ms)) => {
                    *key_out = Some(tk.lowest(ms));
                    *ms_out = Some(ms);
                }
                (Some(_), Err(e)) if wants_time => return Err(SourceError::fatal(e)),
                _ => *key_out = Some(v.clone()),
            }
        }
        let group: Arc<str> = Arc::from(table.schema().table.to_string());
        Ok(TableSource {
            table,
            opts,
            bounds,
            time_limits,
            time_key,
            group,
            runtime: tokio::runtime::Handle::current(),
        })
    }

    /// The table's name as the work items' group and the documents' `index`.
    pub fn group(&self) -> &str {
        &self.group
    }

    pub fn table(&self) -> &Arc<Table> {
        &self.table
    }

    /// The limits every read applies.
    pub fn bounds(&self) -> &Bounds {
        &self.bounds
    }

    /// Each column's shape, for sinks that build typed items.
    pub fn columns(&self) -> ColumnHints {
        self.table
            .schema()
            .columns
            .iter()
            .map(|c| (c.name.clone(), shape(&c.kind)))
            .collect()
    }

    /// The slots of the plan (async: call from the runtime).
    pub async fn slots(&self) -> Result<Vec<Slot>, SourceError> {
        let err = |e: table::TableError| match e.is_transient() {
            true => SourceError::item(e.to_string()),
            false => SourceError::fatal(e.to_string()),
        };
        let nulls = self.table.null_keys().await.map_err(err)?;
        if nulls > 0 {
            return Err(SourceError::fatal(format!(
                "table {}: {nulls} rows have a NULL key; keyset pages cannot reach them (make the key column NOT NULL or fill it)",
                self.group
            )));
        }
        let mut slots = match self.opts.rule {
            SlotRule::Time { width_ms } => {
                let tk = self
                    .time_key
                    .ok_or_else(|| SourceError::fatal("time slots need a time-ordered key"))?;
                let range = self.table.key_range(&self.bounds).await.map_err(err)?;
                let lo = self
                    .time_limits
                    .0
                    .or_else(|| range.as_ref().and_then(|(lo, _)| tk.time_of(lo)));
                let hi = self
                    .time_limits
                    .1
                    .map(|u| u - 1)
                    .or_else(|| range.as_ref().and_then(|(_, hi)| tk.time_of(hi)));
                match (lo, hi) {
                    (Some(lo), Some(hi)) if lo <= hi => {
                        time_slots(tk, width_ms, lo, hi).map_err(SourceError::fatal)?
                    }
                    _ => vec![Slot::default()],
                }
            }
            SlotRule::Count(n) => {
                let target = u64::from(n).saturating_mul(64).clamp(10_000, 2_000_000);
                let sample = self
                    .table
                    .sample_keys(&self.bounds, target)
                    .await
                    .map_err(err)?;
                slots_between(quantile_bounds(&sample, n))
            }
        };
        if self.opts.newest_first {
            slots.reverse();
        }
        Ok(slots)
    }

    fn item_error(&self, e: table::TableError) -> SourceError {
        let msg = format!("table {}: {e}", self.group);
        if e.is_transient() {
            SourceError::item(msg)
        } else {
            SourceError::fatal(msg)
        }
    }
}

fn key_of(p: &Option<Position>, what: &str) -> Result<Option<String>, SourceError> {
    match p {
        None => Ok(None),
        Some(Position::Key(k)) => Ok(Some(k.clone())),
        Some(Position::Doc(d)) => Err(SourceError::fatal(format!(
            "document number {d} as the {what} of a table slot"
        ))),
    }
}

impl Source for TableSource {
    fn identity(&self) -> BTreeMap<String, String> {
        let mut id = BTreeMap::new();
        id.insert("kind".into(), "table".into());
        id.insert("source".into(), self.table.shown_url().to_string());
        id.insert("table".into(), self.group.to_string());
        id.insert("key".into(), self.table.schema().key_column().name.clone());
        let rule = match self.opts.rule {
            SlotRule::Time { width_ms } => format!("time:{}s", width_ms / 1000),
            SlotRule::Count(n) => format!("slots:{n}"),
        };
        id.insert("slots".into(), rule);
        if let Some(f) = &self.opts.from {
            id.insert("from".into(), f.clone());
        }
        if let Some(u) = &self.opts.until {
            id.insert("until".into(), u.clone());
        }
        id
    }

    fn plan(&self) -> Result<Plan, SourceError> {
        let slots = self.runtime.block_on(self.slots())?;
        let group = self.group.to_string();
        let schema = self.table.schema();
        let mut totals = Totals::default();
        totals.add(
            &group,
            GroupTotals {
                parts: u32::try_from(slots.len()).unwrap_or(u32::MAX),
                docs: schema.estimated_rows,
                bytes: schema.estimated_bytes,
                broken: BTreeMap::new(),
            },
        );
        let items = slots
            .into_iter()
            .enumerate()
            .map(|(i, s)| WorkItem {
                group: group.clone(),
                part: u32::try_from(i).unwrap_or(u32::MAX),
                after: s.after.map(Position::Key),
                until: s.until.map(Position::Key),
            })
            .collect();
        Ok(Plan { items, totals })
    }

    fn read(
        &self,
        item: &WorkItem,
        after: &Cursor,
        emit: &mut dyn FnMut(Read) -> bool,
    ) -> Result<(), SourceError> {
        let slot = Slot {
            after: key_of(&item.after, "start")?,
            until: key_of(&item.until, "end")?,
        };
        let mut cursor = key_of(after, "cursor")?.or_else(|| slot.after.clone());
        loop {
            let page = self
                .runtime
                .block_on(self.table.page(
                    &slot,
                    &self.bounds,
                    cursor.as_deref(),
                    self.opts.page_rows,
                ))
                .map_err(|e| self.item_error(e))?;
            for row in page.rows {
                let read = match row {
                    table::reader::PageRow::Row { key, json } => Read::Doc(Document {
                        position: Position::Key(key.clone()),
                        op: Op::Index,
                        index: self.group.clone(),
                        id: key,
                        doc_type: None,
                        routing: None,
                        source: Bytes::from(json),
                    }),
                    table::reader::PageRow::Bad {
                        key: Some(key),
                        reason,
                    } => Read::Skip(Skip {
                        position: Position::Key(key.clone()),
                        index: self.group.clone(),
                        id: Some(key),
                        doc_type: None,
                        routing: None,
                        reason: "bad_row",
                        detail: reason,
                        source: None,
                    }),
                    table::reader::PageRow::Bad { key: None, reason } => {
                        return Err(SourceError::item(format!(
                            "table {}: a row whose key cannot be read after {}: {reason}",
                            self.group,
                            cursor.as_deref().unwrap_or("the start")
                        )))
                    }
                };
                if !emit(read) {
                    return Ok(());
                }
            }
            if !page.full {
                return Ok(());
            }
            cursor = page.last_key;
        }
    }
}
