//! `rfs table verify`: a table against what a migration wrote. Per slot, every source row's
//! key is looked up in the target (the slot's row count against the target's count of
//! them), and a sample of rows (or all) is compared field by field after conversion: the
//! source row as the table source renders it, the target's stored object as parsed JSON.
//!
//! With a document program (`--transform`, `--doc-transformer-config`) each row goes
//! through the same transform as in the migration first: what it yields is looked up
//! by its `_id` and compared (several outputs: each); a row it filters, or fails on, is
//! expected absent (counted, never looked up; the target's total shows one written anyway).
//!
//! Targets plug in through [`RowTarget`]: the file sink's directory ([`FileRows`]), an
//! index through `_mget` ([`BulkRows`]), and a DynamoDB table through `BatchGetItem`
//! ([`DynamoRows`]: rows converted as the sink converts them, items compared attribute by
//! attribute).

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use serde_json::Value;
use table::reader::PageRow;
use table::Slot;

use crate::document::{Document, Op};
use crate::naming::file_name_for;
use crate::sources::table::TableSource;
use crate::transform::{Shaped, Transform};

/// One source row as a target is asked for it: its key, the index the migration sends it
/// to (a program may route rows to several), and the row as the table source renders it
/// (a target whose own key is made of other columns finds it there).
#[derive(Debug, Clone, Copy)]
pub struct SourceRow<'a> {
    pub key: &'a str,
    pub index: &'a str,
    pub json: &'a [u8],
}

/// Where the rows went.
pub trait RowTarget: Send + Sync {
    /// The stored rows among `rows`: the row's place in `rows` → the stored row as JSON
    /// (in the form [`RowTarget::expected`] gives) when `with_rows`, else `Value::Null`
    /// (existence only). Rows not stored are absent from the map.
    fn fetch(
        &self,
        rows: &[SourceRow<'_>],
        with_rows: bool,
    ) -> impl Future<Output = Result<HashMap<usize, Value>, String>> + Send;

    /// The index whose documents [`RowTarget::total`] counts, for a target made of
    /// indices (`None`: every row goes to the one table, whatever its `_index`).
    fn index(&self) -> Option<&str> {
        None
    }

    /// What the target should hold for a source row, to compare with what `fetch` gave:
    /// by default the rendered row itself, parsed.
    fn expected(&self, json: &[u8]) -> Result<Value, String> {
        serde_json::from_slice(json).map_err(|e| format!("rendered JSON does not parse: {e}"))
    }

    /// How many rows the target holds in all (`None`: it cannot tell).
    fn total(&self) -> impl Future<Output = Result<Option<u64>, String>> + Send;

    /// What the target is, for messages.
    fn describe(&self) -> String;
}

/// How much to compare, and through which transform.
#[derive(Clone, Default)]
pub struct RowVerifyOptions {
    /// Rows per slot compared field by field (ignored with `all`).
    pub sample: u64,
    /// Compare every row.
    pub all: bool,
    /// Keys kept per kind of mismatch for the report.
    pub max_listed: usize,
    /// The seed of the sample; `None`: a random one (the report gives it, to replay).
    pub seed: Option<u64>,
    /// The migration's transform when it runs a document program (what it yields is
    /// what the target must hold); `None`: rows are compared as the source renders them.
    pub transform: Option<Arc<dyn Transform>>,
}

impl std::fmt::Debug for RowVerifyOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowVerifyOptions")
            .field("sample", &self.sample)
            .field("all", &self.all)
            .field("max_listed", &self.max_listed)
            .field("seed", &self.seed)
            .field("transform", &self.transform.is_some())
            .finish()
    }
}

/// One slot's counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlotReport {
    pub slot: usize,
    pub after: Option<String>,
    pub until: Option<String>,
    /// Rows in the source (rows that cannot be rendered included).
    pub source_rows: u64,
    /// Of them, found in the target.
    pub target_rows: u64,
    pub compared: u64,
    pub different: u64,
    /// Rows the source cannot render (`bad_row`): expected absent from the target.
    pub bad_rows: u64,
    /// Rows the program filtered out, or failed on: expected absent from the target.
    pub filtered: u64,
    pub transform_errors: u64,
    /// Documents the target must hold for this slot (rows, or what the program yields).
    pub expected: u64,
    /// Of those, the ones sent to the index the target's total counts (all of them for a
    /// target without indices).
    pub expected_here: u64,
}

/// The whole comparison.
#[derive(Debug, Clone, Default)]
pub struct RowVerifyReport {
    pub slots: Vec<SlotReport>,
    pub missing: Vec<String>,
    pub different: Vec<String>,
    pub missing_count: u64,
    pub different_count: u64,
    pub source_rows: u64,
    pub bad_rows: u64,
    /// Rows the program filtered out, or failed on (expected absent).
    pub filtered: u64,
    pub transform_errors: u64,
    /// Documents the target must hold (rows, or what the program yields).
    pub expected: u64,
    /// Of those, the ones in the index the target's total counts.
    pub expected_here: u64,
    /// Missing documents a program routed to another index than the target's.
    pub missing_elsewhere: u64,
    /// The target's own total, when it can tell.
    pub target_total: Option<u64>,
    /// The seed the sample was drawn with.
    pub seed: u64,
}

impl RowVerifyReport {
    /// Rows in the target that the source does not hold (by the totals).
    pub fn extra(&self) -> u64 {
        let missing_here = self.missing_count.saturating_sub(self.missing_elsewhere);
        let expected = self.expected_here.saturating_sub(missing_here);
        self.target_total.map_or(0, |t| t.saturating_sub(expected))
    }

    pub fn ok(&self) -> bool {
        self.missing_count == 0 && self.different_count == 0 && self.extra() == 0
    }
}

/// Compares every slot of `source` with `target`.
pub async fn verify_rows<T: RowTarget>(
    source: &TableSource,
    target: &T,
    opts: &RowVerifyOptions,
) -> Result<RowVerifyReport, String> {
    let table = source.table().clone();
    let slots = source.slots().await.map_err(|e| e.to_string())?;
    let seed = opts.seed.unwrap_or_else(rand::random);
    let mut report = RowVerifyReport {
        seed,
        ..RowVerifyReport::default()
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    // Each row is compared with a probability that gives about `sample` rows per slot of
    // the average size (and at most `sample`).
    let avg = (table.schema().estimated_rows / (slots.len() as u64).max(1)).max(1);
    let p = if opts.all {
        1.0
    } else {
        (opts.sample as f64 / avg as f64).min(1.0)
    };
    for (i, slot) in slots.iter().enumerate() {
        let mut sr = SlotReport {
            slot: i,
            after: slot.after.clone(),
            until: slot.until.clone(),
            ..SlotReport::default()
        };
        verify_slot(
            &table,
            source,
            target,
            slot,
            opts,
            p,
            &mut rng,
            &mut sr,
            &mut report,
        )
        .await?;
        report.source_rows += sr.source_rows;
        report.bad_rows += sr.bad_rows;
        report.filtered += sr.filtered;
        report.transform_errors += sr.transform_errors;
        report.expected += sr.expected;
        report.expected_here += sr.expected_here;
        report.slots.push(sr);
    }
    report.target_total = target.total().await?;
    Ok(report)
}

#[allow(clippy::too_many_arguments)]
async fn verify_slot<T: RowTarget>(
    table: &table::Table,
    source: &TableSource,
    target: &T,
    slot: &Slot,
    opts: &RowVerifyOptions,
    p: f64,
    rng: &mut rand::rngs::StdRng,
    sr: &mut SlotReport,
    report: &mut RowVerifyReport,
) -> Result<(), String> {
    const PAGE: u32 = 2000;
    let mut cursor: Option<String> = None;
    // Where an untransformed row goes: the target's index (or the table's name). A
    // program sees the row as the source names it (the table), renames included.
    let here: Arc<str> = Arc::from(target.index().unwrap_or(source.group()));
    let group: Arc<str> = Arc::from(source.group());
    loop {
        let page = table
            .page(slot, source.bounds(), cursor.as_deref(), PAGE)
            .await
            .map_err(|e| e.to_string())?;
        let mut rows: Vec<(String, Arc<str>, Vec<u8>, bool)> = Vec::with_capacity(page.rows.len());
        for r in page.rows {
            sr.source_rows += 1;
            match r {
                PageRow::Row { key, json } => {
                    let compare = opts.all || sr.compared < opts.sample && rng.gen_bool(p);
                    match &opts.transform {
                        None => rows.push((key, here.clone(), json, compare)),
                        Some(t) => {
                            transformed(t.as_ref(), &group, key, json, compare, sr, &mut rows)
                        }
                    }
                }
                PageRow::Bad { .. } => sr.bad_rows += 1,
            }
        }
        sr.expected += rows.len() as u64;
        // What the target's own total counts: the rows sent to its index.
        sr.expected_here += match target.index() {
            Some(i) => rows.iter().filter(|r| &*r.1 == i).count() as u64,
            None => rows.len() as u64,
        };
        let asked: Vec<SourceRow<'_>> = rows
            .iter()
            .map(|(key, index, json, _)| SourceRow { key, index, json })
            .collect();
        let with_rows = rows.iter().any(|r| r.3);
        let found = target.fetch(&asked, with_rows).await?;
        drop(asked);
        for (at, (key, index, json, compare)) in rows.into_iter().enumerate() {
            let Some(stored) = found.get(&at) else {
                report.missing_count += 1;
                if target.index().is_some_and(|i| i != &*index) {
                    report.missing_elsewhere += 1;
                }
                if report.missing.len() < opts.max_listed {
                    report.missing.push(match target.index() {
                        Some(i) if i != &*index => format!("{key} (in {index})"),
                        _ => key,
                    });
                }
                continue;
            };
            sr.target_rows += 1;
            if !compare {
                continue;
            }
            sr.compared += 1;
            let difference = match target.expected(&json) {
                Ok(expected) if &expected == stored => None,
                Ok(expected) => Some(first_difference(&expected, stored)),
                Err(e) => Some(e),
            };
            if let Some(difference) = difference {
                sr.different += 1;
                report.different_count += 1;
                if report.different.len() < opts.max_listed {
                    report.different.push(format!("{key}: {difference}"));
                }
            }
        }
        if !page.full {
            return Ok(());
        }
        cursor = page.last_key;
    }
}

/// One source row through the migration's transform: its outputs pushed onto `rows` (each
/// compared when the row is), a filtered row or one the program fails on counted.
fn transformed(
    transform: &dyn Transform,
    index: &Arc<str>,
    key: String,
    json: Vec<u8>,
    compare: bool,
    sr: &mut SlotReport,
    rows: &mut Vec<(String, Arc<str>, Vec<u8>, bool)>,
) {
    let doc = Document {
        position: coordination::Position::Key(key.clone()),
        op: Op::Index,
        index: index.clone(),
        id: key,
        doc_type: None,
        routing: None,
        source: bytes::Bytes::from(json),
    };
    let mut out = Vec::new();
    match transform.apply_all(doc, &mut out) {
        Ok(Shaped::Docs) => {
            for d in out {
                // A delete the program asks for leaves nothing to compare.
                if d.op != Op::Delete {
                    rows.push((d.id, d.index, d.source.to_vec(), compare));
                }
            }
        }
        Ok(Shaped::Filtered(_)) => sr.filtered += 1,
        Err(skip) => {
            tracing::debug!(key = ?skip.id, "the program fails on this row: {}", skip.detail);
            sr.transform_errors += 1;
        }
    }
}

/// The first field that differs, for the report.
fn first_difference(expected: &Value, stored: &Value) -> String {
    match (expected, stored) {
        (Value::Object(e), Value::Object(s)) => {
            for (k, v) in e {
                match s.get(k) {
                    None => return format!("field {k} missing"),
                    Some(sv) if sv != v => return format!("field {k}: source {v}, target {sv}"),
                    _ => {}
                }
            }
            for k in s.keys() {
                if !e.contains_key(k) {
                    return format!("field {k} only in the target");
                }
            }
            "equal".into()
        }
        _ => format!("source {expected}, target {stored}"),
    }
}

/// The rows the file sink wrote for one table: every `<table>.*.jsonl` (and
/// `<table>.jsonl`) of a directory, each line `{"_index","_id","_source"}`; the last line of
/// an `_id` wins (rows written again after a restart are the same row).
pub struct FileRows {
    /// (`_index`, `_id`) → `_source`.
    rows: HashMap<(String, String), Value>,
    index: String,
    dir: PathBuf,
}

impl FileRows {
    /// Reads the files of `index` (as the sink named them) in `dir`; with `every_index`,
    /// the JSON-lines files of every index there (a program may route rows to others).
    pub fn load(dir: &std::path::Path, index: &str, every_index: bool) -> Result<FileRows, String> {
        let base = file_name_for(index);
        let mut rows = HashMap::new();
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut files: Vec<PathBuf> = Vec::new();
        for e in entries {
            let e = e.map_err(|e| format!("{}: {e}", dir.display()))?;
            let name = e.file_name().to_string_lossy().to_string();
            if name.ends_with(".jsonl")
                && (every_index
                    || name == format!("{base}.jsonl")
                    || name.starts_with(&format!("{base}.")))
            {
                files.push(e.path());
            }
        }
        files.sort();
        for path in files {
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            for (n, line) in text.lines().enumerate() {
                if line.is_empty() {
                    continue;
                }
                let mut v: Value = serde_json::from_str(line)
                    .map_err(|e| format!("{} line {}: {e}", path.display(), n + 1))?;
                let field = |name: &str| {
                    v.get(name)
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .ok_or_else(|| format!("{} line {}: no {name}", path.display(), n + 1))
                };
                let key = (field("_index")?, field("_id")?);
                let source = v.get_mut("_source").map(Value::take).unwrap_or(Value::Null);
                rows.insert(key, source);
            }
        }
        Ok(FileRows {
            rows,
            index: index.to_string(),
            dir: dir.to_path_buf(),
        })
    }
}

impl RowTarget for FileRows {
    async fn fetch(
        &self,
        rows: &[SourceRow<'_>],
        _with_rows: bool,
    ) -> Result<HashMap<usize, Value>, String> {
        Ok(rows
            .iter()
            .enumerate()
            .filter_map(|(at, r)| {
                let key = (r.index.to_string(), r.key.to_string());
                self.rows.get(&key).map(|v| (at, v.clone()))
            })
            .collect())
    }

    fn index(&self) -> Option<&str> {
        Some(&self.index)
    }

    async fn total(&self) -> Result<Option<u64>, String> {
        Ok(Some(
            self.rows.keys().filter(|(i, _)| *i == self.index).count() as u64,
        ))
    }

    fn describe(&self) -> String {
        self.dir.display().to_string()
    }
}

/// Rows as documents of one index (`_mget` by id, `_count` after a refresh).
pub struct BulkRows {
    client: cluster::Client,
    index: String,
}

impl BulkRows {
    pub fn new(client: cluster::Client, index: String) -> Self {
        BulkRows { client, index }
    }
}

impl RowTarget for BulkRows {
    async fn fetch(
        &self,
        rows: &[SourceRow<'_>],
        _with_rows: bool,
    ) -> Result<HashMap<usize, Value>, String> {
        // Each index's rows by `_mget` on it (a program may route rows to several).
        let mut by_index: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (at, r) in rows.iter().enumerate() {
            by_index.entry(r.index).or_default().push(at);
        }
        let mut out = HashMap::with_capacity(rows.len());
        for (index, places) in by_index {
            for chunk in places.chunks(500) {
                let refs: Vec<&str> = chunk.iter().map(|&at| rows[at].key).collect();
                let docs = self
                    .client
                    .mget(index, &refs)
                    .await
                    .map_err(|e| format!("_mget on {index}: {e}"))?;
                for (&at, doc) in chunk.iter().zip(docs) {
                    if let Some(d) = doc {
                        out.insert(at, d.source.unwrap_or(Value::Null));
                    }
                }
            }
        }
        Ok(out)
    }

    fn index(&self) -> Option<&str> {
        Some(&self.index)
    }

    async fn total(&self) -> Result<Option<u64>, String> {
        self.client
            .refresh(&self.index)
            .await
            .map_err(|e| format!("refreshing {}: {e}", self.index))?;
        self.client
            .count(&self.index)
            .await
            .map(Some)
            .map_err(|e| format!("_count on {}: {e}", self.index))
    }

    fn describe(&self) -> String {
        format!(
            "{} index {}",
            redact::url(self.client.base_url()),
            self.index
        )
    }
}

/// Rows as items of a DynamoDB table: each source row is converted as the DynamoDB sink
/// converts it (the same column hints), its key read from the item, the items fetched by
/// `BatchGetItem` (consistent reads; key attributes only when just checking existence),
/// and compared in wire form with numbers canonical — so a difference names the attribute
/// and both values (`field amount: source {"N":"1.5"}, target {"N":"2"}`). The total is
/// a parallel `Scan` count.
pub struct DynamoRows {
    client: dynamo::Client,
    table: String,
    key: dynamo::KeySchema,
    hints: dynamo::ColumnHints,
}

impl DynamoRows {
    /// Items of `table` (whose key is `key`), rows converted with `hints`.
    pub fn new(
        client: dynamo::Client,
        table: impl Into<String>,
        key: dynamo::KeySchema,
        hints: dynamo::ColumnHints,
    ) -> Self {
        DynamoRows {
            client,
            table: table.into(),
            key,
            hints,
        }
    }

    fn item(&self, json: &[u8]) -> Result<dynamo::Item, String> {
        dynamo::row_to_item(json, &self.hints)
            .map_err(|e| format!("the row cannot be an item ({}): {e}", e.error_type))
    }
}

impl RowTarget for DynamoRows {
    async fn fetch(
        &self,
        rows: &[SourceRow<'_>],
        with_rows: bool,
    ) -> Result<HashMap<usize, Value>, String> {
        // Key signature → the source rows with that item key (more than one when the key
        // mapping is not unique: one item then stands for several rows).
        let mut wanted: HashMap<Vec<u8>, Vec<usize>> = HashMap::with_capacity(rows.len());
        let mut keys: Vec<dynamo::Item> = Vec::with_capacity(rows.len());
        for (at, r) in rows.iter().enumerate() {
            let key = match self.item(r.json).and_then(|item| {
                self.key
                    .key_of(&item)
                    .map_err(|e| format!("no item key ({}): {e}", e.error_type))
            }) {
                Ok(k) => k,
                Err(e) => {
                    // Not in the target: the sink refused it into the failure log.
                    tracing::warn!(key = %r.key, "{e}");
                    continue;
                }
            };
            let entry = wanted.entry(self.key.signature(&key)).or_default();
            if entry.is_empty() {
                keys.push(key);
            }
            entry.push(at);
        }
        let names: Vec<&str> = self.key.attributes().map(|a| a.name.as_str()).collect();
        let items = self
            .client
            .batch_get_projected(
                &self.table,
                &keys,
                true,
                (!with_rows).then_some(names.as_slice()),
            )
            .await
            .map_err(|e| format!("BatchGetItem on {}: {e}", self.table))?;
        let mut out = HashMap::with_capacity(rows.len());
        for item in items {
            let key = self
                .key
                .key_of(&item)
                .map_err(|e| format!("{}: an item without its key: {e}", self.table))?;
            let Some(sources) = wanted.get(&self.key.signature(&key)) else {
                continue;
            };
            let value = if with_rows {
                dynamo::canonical_json(&item)
            } else {
                Value::Null
            };
            for &at in sources {
                out.insert(at, value.clone());
            }
        }
        Ok(out)
    }

    fn expected(&self, json: &[u8]) -> Result<Value, String> {
        self.item(json).map(|i| dynamo::canonical_json(&i))
    }

    async fn total(&self) -> Result<Option<u64>, String> {
        self.client
            .count_items(&self.table, 4)
            .await
            .map(Some)
            .map_err(|e| format!("counting the items of {}: {e}", self.table))
    }

    fn describe(&self) -> String {
        format!(
            "DynamoDB table {} at {}",
            self.table,
            self.client.endpoint()
        )
    }
}

/// The report as lines: per slot counts where something is off, then the keys.
pub fn render(report: &RowVerifyReport, target: &str) -> String {
    let mut out = String::new();
    let mut bad_slots: BTreeMap<usize, &SlotReport> = BTreeMap::new();
    for s in &report.slots {
        if s.target_rows != s.expected || s.different > 0 {
            bad_slots.insert(s.slot, s);
        }
    }
    let compared: u64 = report.slots.iter().map(|s| s.compared).sum();
    out.push_str(&format!(
        "{} slots, {} source rows ({} not convertible), {} compared field by field; target {}: {} rows\n",
        report.slots.len(),
        report.source_rows,
        report.bad_rows,
        compared,
        target,
        report
            .target_total
            .map_or_else(|| "?".to_string(), |t| t.to_string())
    ));
    for s in bad_slots.values() {
        out.push_str(&format!(
            "slot {} ({} .. {}]: source {} rows, target {}, different {}\n",
            s.slot,
            s.after.as_deref().unwrap_or("start"),
            s.until.as_deref().unwrap_or("end"),
            s.expected,
            s.target_rows,
            s.different
        ));
    }
    if report.filtered + report.transform_errors > 0 {
        out.push_str(&format!(
            "the program yields {} documents; {} rows filtered out and {} it fails on expected absent\n",
            report.expected, report.filtered, report.transform_errors
        ));
    }
    let listed = |out: &mut String, what: &str, n: u64, keys: &[String]| {
        if n > 0 {
            out.push_str(&format!("{n} {what}:\n"));
            for k in keys {
                out.push_str(&format!("  {k}\n"));
            }
            if n > keys.len() as u64 {
                out.push_str(&format!("  … and {} more\n", n - keys.len() as u64));
            }
        }
    };
    listed(
        &mut out,
        "rows missing from the target",
        report.missing_count,
        &report.missing,
    );
    listed(
        &mut out,
        "rows different in the target",
        report.different_count,
        &report.different,
    );
    if report.extra() > 0 {
        out.push_str(&format!(
            "{} rows in the target that the source does not hold\n",
            report.extra()
        ));
    }
    out
}
