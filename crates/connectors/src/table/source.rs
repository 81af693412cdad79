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
//! column types from [`TableSource::columns`] when it is built: [`ColumnShapes`] maps each
//! column name to [`ColumnShape`] (`Binary` columns hold base64 strings to decode, `Number`
//! columns hold JSON numbers to keep as written, `Json` columns hold embedded JSON).
//!
//! **Slots.** One [`WorkItem`] per slot: `group` the table, `part` the slot number,
//! `after`/`until` the slot's key bounds (`after < key <= until`); a successor item starts
//! after the last acknowledged key. `--from`/`--until` limits apply to every read.
//!
//! A row that cannot be rendered (NaN, infinite timestamps, text that is not UTF-8)
//! becomes a [`Skip`] with reason `bad_row`, its key and what was wrong: the failure log
//! has it, status counts it. A key without a JSON form (NaN, ±infinity) is stepped over in
//! PostgreSQL's text of it. Rows whose key is NULL are skipped (`bad_row`, no id) by the
//! slot open above, after its last page, when no `--from`/`--until` is given.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use coordination::{Cursor, Position, WorkItem};
use table::slots::{quantile_bounds, slots_between, time_slots, TimeKey};
use table::{Bounds, ColumnKind, Slot, SlotRule, Table};

use engine::columns::{ColumnShape, ColumnShapes};
use engine::document::{Document, Op, Read, Skip};
use engine::error::SourceError;
use engine::source::{GroupTotals, Plan, Source, Totals};

use crate::keys::{KeyCheck, UniqueFuture};
use crate::ConnectError;

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
        let time_limits_given = opts.from.is_some() || opts.until.is_some();
        if let Some(tk @ (TimeKey::Ulid | TimeKey::UuidV7)) = time_key {
            if wants_time || time_limits_given {
                check_time_keys(&table, tk, &kind).await?;
            }
        }
        let mut bounds = Bounds::default();
        let mut time_limits = (None, None);
        for (given, key_out, ms_out, upper) in [
            (&opts.from, &mut bounds.from, &mut time_limits.0, false),
            (&opts.until, &mut bounds.until, &mut time_limits.1, true),
        ] {
            let Some(v) = given else { continue };
            match (time_key, table::slots::parse_time(v)) {
                (Some(tk), Ok(ms)) => {
                    // A date key stands for a whole day: a limit inside a day takes that
                    // day in (`--until 2024-05-01T12:00Z` keeps the rows of May 1st, some
                    // of whose time is before it; `--from` rounds down by itself).
                    let ms = if upper && tk == TimeKey::Date {
                        ceil_to(ms, 86_400_000)
                    } else {
                        ms
                    };
                    *key_out = Some(tk.lowest(ms));
                    *ms_out = Some(ms);
                }
                (Some(_), Err(e)) if wants_time => return Err(SourceError::fatal(e.to_string())),
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

    /// The name the key column has in the documents: its `--columns` name, or its own when
    /// it is not written (then no attribute of the rows is it, unless another column is
    /// written under its name). The default DynamoDB partition key.
    pub fn key_attribute(&self) -> String {
        self.table
            .key_written_as()
            .unwrap_or(&self.table.schema().key_column().name)
            .to_string()
    }

    /// The limits every read applies.
    pub fn bounds(&self) -> &Bounds {
        &self.bounds
    }

    /// Each written column's shape, by its name in the documents (after `--columns`
    /// renames: `body=raw` makes `raw` the shape of `body`), for sinks that build typed
    /// items.
    pub fn columns(&self) -> ColumnShapes {
        self.table
            .written_columns()
            .map(|(c, name)| (name.to_string(), shape(&c.kind)))
            .collect()
    }

    /// The slots of the plan (async: call from the runtime).
    pub async fn slots(&self) -> Result<Vec<Slot>, SourceError> {
        let err = |e: table::TableError| match e.is_transient() {
            true => SourceError::item(e.to_string()),
            false => SourceError::fatal(e.to_string()),
        };
        let nulls = self.table.null_keys().await.map_err(err)?;
        if nulls > 0 && self.nulls_in_range() {
            tracing::warn!(
                table = %self.group,
                "{nulls} rows have a NULL key: they cannot be delivered (no id) and are skipped as bad_row by the last slot (make the key column NOT NULL or fill it)"
            );
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
                    (Some(lo), Some(hi)) if lo <= hi => time_slots(tk, width_ms, lo, hi)
                        .map_err(|e| SourceError::fatal(e.to_string()))?,
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

    /// Whether rows with a NULL key are inside `--from`/`--until` (only when neither is
    /// given: a NULL key is not after or before any limit).
    fn nulls_in_range(&self) -> bool {
        self.bounds.from.is_none() && self.bounds.until.is_none()
    }

    /// The table named in the message, `e` (what failed and why) as its cause.
    fn item_error(&self, e: table::TableError) -> SourceError {
        let msg = format!("table {}", self.group);
        let error = if e.is_transient() {
            SourceError::item(msg)
        } else {
            SourceError::fatal(msg)
        };
        error.caused_by(e)
    }
}

/// Time bounds of ULID and UUIDv7 keys hold only when every key is one, in the letter case
/// the bounds are written in (C collation orders `a` after `Z`): checked on the first and
/// last key and a sample of keys, each named in the error.
async fn check_time_keys(table: &Table, tk: TimeKey, kind: &ColumnKind) -> Result<(), SourceError> {
    let err = |e: table::TableError| SourceError::fatal(e.to_string());
    let mut keys = table
        .sample_keys(&Bounds::default(), 2000)
        .await
        .map_err(err)?;
    if let Some((lo, hi)) = table.key_range(&Bounds::default()).await.map_err(err)? {
        keys.push(lo);
        keys.push(hi);
    }
    let name = &table.schema().key_column().name;
    let group = &table.schema().table;
    for k in &keys {
        if tk.time_of(k).is_none() {
            let what = match tk {
                TimeKey::Ulid => "a ULID",
                _ => "a UUIDv7 (version 7)",
            };
            return Err(SourceError::fatal(format!(
                "table {group}: key {k:?} of {name} is not {what}, so time slots and time limits cannot hold it: use --slots N (and --from/--until with key values)"
            )));
        }
        // Text keys: ULIDs are written upper case, UUIDs lower case; a key in the other
        // case sorts outside the time bounds under C collation.
        let other_case = match (tk, kind) {
            (TimeKey::Ulid, ColumnKind::Text) => k.bytes().any(|b| b.is_ascii_lowercase()),
            (TimeKey::UuidV7, ColumnKind::Text) => k.bytes().any(|b| b.is_ascii_uppercase()),
            _ => false,
        };
        if other_case {
            return Err(SourceError::fatal(format!(
                "table {group}: key {k:?} of {name} is in {} case, but time bounds are written in {} case and would not hold it (text compares letter case): use --slots N (and --from/--until with key values), or store the keys in one case",
                if tk == TimeKey::Ulid { "lower" } else { "upper" },
                if tk == TimeKey::Ulid { "upper" } else { "lower" },
            )));
        }
    }
    Ok(())
}

/// `ms` rounded up to a multiple of `unit`.
fn ceil_to(ms: i64, unit: i64) -> i64 {
    match ms.rem_euclid(unit) {
        0 => ms,
        r => ms.saturating_add(unit - r),
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
    fn change_feed(&self) -> Option<Arc<dyn engine::follow::ChangeFeed>> {
        Some(Arc::new(super::follow::TableFeed::new(
            self.table.clone(),
            self.bounds.clone(),
            self.group.clone(),
            self.runtime.clone(),
        )))
    }

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
        let read = self.table.options();
        if let Some(w) = &read.filter {
            id.insert("where".into(), w.clone());
        }
        if !read.columns.is_empty() {
            let cols: Vec<String> = read
                .columns
                .iter()
                .map(|(c, n)| {
                    if c == n {
                        c.clone()
                    } else {
                        format!("{c}={n}")
                    }
                })
                .collect();
            id.insert("columns".into(), cols.join(","));
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
                delta: None,
                count: Some(engine::source::TotalCount::PerItem),
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
                extent: None,
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
        // A cursor among the NULL-key skips: the rows are done, the skips after it are not.
        let nulls_done = match cursor
            .as_deref()
            .and_then(|c| c.strip_prefix(NULL_KEYS_DONE))
        {
            None => None,
            // The form written before the skips were numbered: all of them were handed over.
            Some("") => return Ok(()),
            Some(n) => Some(n.trim_start().parse::<u64>().map_err(|_| {
                SourceError::fatal(format!(
                    "table {}: cursor {:?} is neither a key nor a NULL-key skip",
                    self.group,
                    cursor.as_deref().unwrap_or_default()
                ))
            })?),
        };
        if let Some(done) = nulls_done {
            return self.emit_null_keys(done, emit);
        }
        // Pages and the slot's count in one snapshot (a new one after a retried error).
        let mut pages = self.table.read_slot(&slot, &self.bounds, cursor.as_deref());
        loop {
            let page = self
                .runtime
                .block_on(pages.next_page(self.opts.page_rows))
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
                break;
            }
            cursor = page.last_key;
        }
        // Coverage: every row the slot's snapshot counted (after where it started) was read
        // and handed over, as a document or a bad_row skip. Rows written behind the read are
        // not in the snapshot: the delta's and `rfs table verify`'s business.
        let proof = pages.proof();
        for s in proof.changed() {
            tracing::warn!(
                table = %self.group,
                slot = item.part,
                "slot {} of {}: {} rows read after {} before a retried error, but the retry's snapshot counts {} there: rows were written or deleted in between (rfs table verify finds them)",
                item.part,
                self.group,
                s.read,
                s.from.as_deref().unwrap_or("the start"),
                s.counted
            );
        }
        if let Some(s) = proof.mismatch() {
            // In one snapshot a deterministic predicate counts what the pages read; with a
            // `--where` a difference means it is not (random(), clock_timestamp()): an
            // attempt that happens to agree proves nothing, so no attempt is made again.
            let volatile = self.table.options().filter.is_some();
            return Err(SourceError {
                severity: if volatile {
                    engine::error::Severity::Permanent
                } else {
                    engine::error::Severity::Item
                },
                ..SourceError::coverage(format!(
                "table {} slot {}: {} rows were read after {}, but count(*) in the same snapshot says {}: rows were {} {}",
                self.group,
                item.part,
                s.read,
                s.from.as_deref().unwrap_or("the start"),
                s.counted,
                if s.read < s.counted { "lost" } else { "read beyond the count" },
                if volatile {
                    "the --where predicate gives other rows to each statement (random(), clock_timestamp(), …): the item fails for good, since an attempt whose counts happen to agree proves nothing; make the predicate deterministic"
                } else {
                    "(a key that does not compare as its text?); the item fails rather than end as done"
                },
            ))
            });
        }
        // The slot open above holds the rows whose key is NULL (they sort last): each is
        // skipped, counted and logged; pages never return them.
        if slot.until.is_some() || !self.nulls_in_range() {
            return Ok(());
        }
        self.emit_null_keys(0, emit)
    }
}

impl TableSource {
    /// The skips of the rows whose key is NULL, after the first `done` of them, each at a
    /// position of its own so that a read stopped among them resumes with the next.
    fn emit_null_keys(
        &self,
        done: u64,
        emit: &mut dyn FnMut(Read) -> bool,
    ) -> Result<(), SourceError> {
        let nulls = self
            .runtime
            .block_on(self.table.null_keys())
            .map_err(|e| self.item_error(e))?;
        let key = &self.table.schema().key_column().name;
        for n in done.saturating_add(1)..=nulls {
            let skip = Skip {
                position: Position::Key(null_key_position(n)),
                index: self.group.clone(),
                id: None,
                doc_type: None,
                routing: None,
                reason: "bad_row",
                detail: format!(
                    "the key column {key} is NULL (row {n} of {nulls} with a NULL key; find them with WHERE {key} IS NULL)"
                ),
                source: None,
            };
            if !emit(Read::Skip(skip)) {
                return Ok(());
            }
        }
        Ok(())
    }
}

/// The start of the positions of the NULL-key skips of the last slot (after every key, so
/// that reading resumes with no row left and no NULL key counted twice): the `n`-th skip
/// is at [`null_key_position`]`(n)`; this text alone (written by earlier versions) means
/// all were handed over. No key of another type reads as this text, and a text key would
/// have to start with the noncharacter U+FFFF; it holds no NUL, so every store keeps it.
pub const NULL_KEYS_DONE: &str = "\u{ffff} NULL keys skipped";

/// The position of the `n`-th NULL-key skip (from 1): zero-padded, so that the positions
/// increase as text too.
pub fn null_key_position(n: u64) -> String {
    format!("{NULL_KEYS_DONE} {n:020}")
}

impl KeyCheck for TableSource {
    fn group(&self) -> String {
        TableSource::group(self).to_string()
    }

    fn key_attribute(&self) -> String {
        TableSource::key_attribute(self)
    }

    fn column_written_as(&self, attr: &str) -> Option<String> {
        self.table().column_written_as(attr).map(|c| c.name.clone())
    }

    fn written_columns(&self) -> Vec<String> {
        self.table()
            .written_columns()
            .map(|(_, n)| n.to_string())
            .collect()
    }

    fn unique_over<'a>(&'a self, columns: &'a [String]) -> UniqueFuture<'a> {
        Box::pin(async move {
            let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
            self.table()
                .unique_over(&columns)
                .await
                .map_err(ConnectError::of)
        })
    }
}
