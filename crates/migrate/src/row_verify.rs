//! `rfs table verify`: a table against what a migration wrote. Per slot, every source row's
//! key is looked up in the target (the slot's row count against the target's count of
//! them), and a sample of rows (or all) is compared field by field after conversion: the
//! source row as the table source renders it, the target's stored object as parsed JSON.
//!
//! Targets plug in through [`RowTarget`]: the file sink's directory ([`FileRows`]) and an
//! index through `_mget` ([`BulkRows`]); the DynamoDB sink adds its own.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::PathBuf;

use rand::{Rng, SeedableRng};
use serde_json::Value;
use table::reader::PageRow;
use table::Slot;

use crate::naming::file_name_for;
use crate::sources::table::TableSource;

/// Where the rows went.
pub trait RowTarget: Send + Sync {
    /// The stored rows among `ids`: id → the row as a JSON object when `with_rows`, else
    /// `Value::Null` (existence only). Ids not stored are absent from the map.
    fn fetch(
        &self,
        ids: &[String],
        with_rows: bool,
    ) -> impl Future<Output = Result<HashMap<String, Value>, String>> + Send;

    /// How many rows the target holds in all (`None`: it cannot tell).
    fn total(&self) -> impl Future<Output = Result<Option<u64>, String>> + Send;

    /// What the target is, for messages.
    fn describe(&self) -> String;
}

/// How much to compare.
#[derive(Debug, Clone)]
pub struct RowVerifyOptions {
    /// Rows per slot compared field by field (ignored with `all`).
    pub sample: u64,
    /// Compare every row.
    pub all: bool,
    /// Keys kept per kind of mismatch for the report.
    pub max_listed: usize,
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
    /// The target's own total, when it can tell.
    pub target_total: Option<u64>,
}

impl RowVerifyReport {
    /// Rows in the target that the source does not hold (by the totals).
    pub fn extra(&self) -> u64 {
        let expected = self.source_rows - self.bad_rows - self.missing_count;
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
    let mut report = RowVerifyReport::default();
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x7ab1e);
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
    loop {
        let page = table
            .page(slot, source.bounds(), cursor.as_deref(), PAGE)
            .await
            .map_err(|e| e.to_string())?;
        let mut rows: Vec<(String, Vec<u8>, bool)> = Vec::with_capacity(page.rows.len());
        for r in page.rows {
            sr.source_rows += 1;
            match r {
                PageRow::Row { key, json } => {
                    let compare = opts.all || sr.compared < opts.sample && rng.gen_bool(p);
                    rows.push((key, json, compare));
                }
                PageRow::Bad { .. } => sr.bad_rows += 1,
            }
        }
        let ids: Vec<String> = rows.iter().map(|r| r.0.clone()).collect();
        let with_rows = rows.iter().any(|r| r.2);
        let found = target.fetch(&ids, with_rows).await?;
        for (key, json, compare) in rows {
            let Some(stored) = found.get(&key) else {
                report.missing_count += 1;
                if report.missing.len() < opts.max_listed {
                    report.missing.push(key);
                }
                continue;
            };
            sr.target_rows += 1;
            if !compare {
                continue;
            }
            sr.compared += 1;
            let expected: Value = serde_json::from_slice(&json)
                .map_err(|e| format!("row {key}: rendered JSON does not parse: {e}"))?;
            if &expected != stored {
                sr.different += 1;
                report.different_count += 1;
                if report.different.len() < opts.max_listed {
                    report
                        .different
                        .push(format!("{key}: {}", first_difference(&expected, stored)));
                }
            }
        }
        if !page.full {
            return Ok(());
        }
        cursor = page.last_key;
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
    rows: HashMap<String, Value>,
    dir: PathBuf,
}

impl FileRows {
    /// Reads the files of `index` (as the sink named them) in `dir`.
    pub fn load(dir: &std::path::Path, index: &str) -> Result<FileRows, String> {
        let base = file_name_for(index);
        let mut rows = HashMap::new();
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut files: Vec<PathBuf> = Vec::new();
        for e in entries {
            let e = e.map_err(|e| format!("{}: {e}", dir.display()))?;
            let name = e.file_name().to_string_lossy().to_string();
            if name.ends_with(".jsonl")
                && (name == format!("{base}.jsonl") || name.starts_with(&format!("{base}.")))
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
                let id = v
                    .get("_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("{} line {}: no _id", path.display(), n + 1))?
                    .to_string();
                let source = v.get_mut("_source").map(Value::take).unwrap_or(Value::Null);
                rows.insert(id, source);
            }
        }
        Ok(FileRows {
            rows,
            dir: dir.to_path_buf(),
        })
    }
}

impl RowTarget for FileRows {
    async fn fetch(
        &self,
        ids: &[String],
        _with_rows: bool,
    ) -> Result<HashMap<String, Value>, String> {
        Ok(ids
            .iter()
            .filter_map(|id| self.rows.get(id).map(|v| (id.clone(), v.clone())))
            .collect())
    }

    async fn total(&self) -> Result<Option<u64>, String> {
        Ok(Some(self.rows.len() as u64))
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
        ids: &[String],
        _with_rows: bool,
    ) -> Result<HashMap<String, Value>, String> {
        let mut out = HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(500) {
            let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
            let docs = self
                .client
                .mget(&self.index, &refs)
                .await
                .map_err(|e| format!("_mget on {}: {e}", self.index))?;
            for (id, doc) in chunk.iter().zip(docs) {
                if let Some(d) = doc {
                    out.insert(id.clone(), d.source.unwrap_or(Value::Null));
                }
            }
        }
        Ok(out)
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

/// The report as lines: per slot counts where something is off, then the keys.
pub fn render(report: &RowVerifyReport, target: &str) -> String {
    let mut out = String::new();
    let mut bad_slots: BTreeMap<usize, &SlotReport> = BTreeMap::new();
    for s in &report.slots {
        if s.target_rows + s.bad_rows != s.source_rows || s.different > 0 {
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
            s.source_rows - s.bad_rows,
            s.target_rows,
            s.different
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
