//! Verification of a finished migration: per target index, the documents the source holds
//! (read with the same source and transform as the migration) against the target's
//! `_count` after a refresh, and sampled documents (or all of them) fetched by id and
//! compared JSON-equal. Every live document must be accounted for: delivered (on the
//! target), refused (in a failure log given to verify) or skipped (the source or the
//! transform could not deliver it; listed with the reason).
//!
//! A target index whose mapping disables `_source` returns no document to compare: for it
//! the count is compared, each sampled id must be found, and where the mapping has fields
//! whose doc values the target returns exactly (keyword, whole numbers, boolean, date,
//! float, double, ip: see [`doc_values`]) those values are compared with the rebuilt
//! document's; the report names such indices, never calling content the target does not
//! keep a mismatch.

mod dates;
mod doc_values;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use cluster::{encode_segment, Client, Method};
use rand::Rng;
use serde::Serialize;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::document::Read;
use crate::source::Source;
use crate::transform::{Shaped, Transform};

/// How many documents to compare per index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sample {
    /// A uniform random sample of this many documents per target index.
    PerIndex(usize),
    /// Every document.
    All,
}

/// What verify could compare on one target index.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub enum Compared {
    /// The target returns `_source`: sampled documents compared JSON-equal.
    #[default]
    #[serde(rename = "documents")]
    Documents,
    /// The target's mapping disables `_source`: it returns none, so the count and the
    /// sampled ids (each found) are all verify can compare.
    #[serde(rename = "count and ids only")]
    CountAndIds,
    /// No `_source` on the target: the count, the sampled ids, and the doc values of the
    /// mapping's keyword, whole-number, boolean, date, float, double and ip fields.
    #[serde(rename = "count, ids and doc values")]
    CountIdsAndDocValues,
}

/// The verdict for one target index.
#[derive(Debug, Clone, Default, Serialize)]
pub struct IndexVerdict {
    pub index: String,
    /// Documents the source delivers to this index (live documents that are not skipped).
    pub expected: u64,
    /// Of those, documents a failure log says the target refused (not expected there).
    pub refused: u64,
    /// `_count` on the target after a refresh (`None`: the index does not exist).
    pub target_count: Option<u64>,
    pub compared: u64,
    /// Sampled ids absent from the target (at most 100 listed).
    pub missing: Vec<String>,
    /// Sampled ids whose `_source` differs (at most 100 listed).
    pub different: Vec<String>,
    pub missing_count: u64,
    pub different_count: u64,
    /// What could be compared: documents, or (a target without `_source`) count and ids,
    /// and doc values where the mapping has fields whose values the target returns.
    pub compared_by: Compared,
    /// The fields whose doc values were compared (`compared_by` "count, ids and doc values").
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub doc_value_fields: Vec<String>,
    /// Fields of a comparable type whose doc values were not compared, with why (a date
    /// format not understood): for them, count and ids only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub doc_values_left_out: Vec<String>,
    /// Of `different`, the documents whose doc values differ, with the first field that
    /// does (at most 100 listed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub different_doc_values: Vec<DocValueDifference>,
}

/// A document whose doc values on the target differ from the rebuilt document's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DocValueDifference {
    pub id: String,
    /// The first field that differs.
    pub field: String,
}

impl IndexVerdict {
    pub fn ok(&self) -> bool {
        self.target_count == Some(self.expected - self.refused)
            && self.missing_count == 0
            && self.different_count == 0
    }
}

/// A live document that is not expected on the target, and why.
#[derive(Debug, Clone, Serialize)]
pub struct SkippedDoc {
    /// The source index or table.
    pub index: String,
    pub id: Option<String>,
    pub reason: String,
    pub detail: String,
}

/// The account of one source index: every live document the snapshot holds in it (its
/// own count, from live-docs bitsets and segment infos) is read or is a nested child, and
/// the target holds what is left after skips, filters and refusals.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SourceVerdict {
    /// The source index.
    pub index: String,
    /// Live Lucene documents of its shards, as planned (nested children included).
    pub snapshot_live: u64,
    /// Nested children the reader passed over, counted one by one (part of their parent).
    pub nested: u64,
    /// Documents read (given as documents or skips).
    pub read: u64,
    /// Of those, skipped by the source or the transform.
    pub skipped: u64,
    /// Of those, filtered out by the transform.
    pub filtered: u64,
    /// Documents a failure log says the target refused.
    pub refused: u64,
    /// What the target must hold: snapshot live − nested − skipped − filtered − refused.
    pub expected_on_target: u64,
    /// The target index that holds this source index's documents and no other's (`None`
    /// when several source indices share a target, one goes to several, or a document
    /// becomes several: the per-target table then checks the counts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// `_count` of `target` (`None`: no such single target, or it does not exist).
    pub target_count: Option<u64>,
}

impl SourceVerdict {
    /// Every live document of the snapshot is read or a nested child.
    pub fn accounted(&self) -> bool {
        self.read + self.nested == self.snapshot_live
    }

    /// The single target holds exactly what is expected (true when there is none to ask).
    pub fn target_matches(&self) -> bool {
        self.target.is_none() || self.target_count == Some(self.expected_on_target)
    }

    pub fn ok(&self) -> bool {
        self.accounted() && self.target_matches()
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct VerifyReport {
    pub indices: Vec<IndexVerdict>,
    /// Live documents the source holds (delivered + refused + skipped must equal it).
    pub live: u64,
    /// Documents skipped by the source or the transform, by reason.
    pub skipped: BTreeMap<String, u64>,
    /// The first skipped documents (at most 100 listed).
    pub skipped_listed: Vec<SkippedDoc>,
    /// Documents the transform program filtered out (expected absent), by reason.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub filtered: BTreeMap<String, u64>,
    /// The snapshot's own live count (live-docs bitsets and segment infos' deletions, as
    /// planned): `live` plus the nested children, part of their parents' documents. Every
    /// read proves its doc-id range against it (the snapshot source's coverage check).
    pub snapshot_live: u64,
    /// Skipped documents per source index, as found by reading.
    pub skipped_per_index: BTreeMap<String, u64>,
    /// Where the failure logs given disagree with the skips found: source index →
    /// (skips recorded in the logs, skips found). Empty when no log was given.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub unrecorded: BTreeMap<String, (u64, u64)>,
    /// Per source index: the snapshot's live count against what was read and the nested
    /// children, and what the target must hold.
    pub sources: Vec<SourceVerdict>,
}

impl VerifyReport {
    pub fn ok(&self) -> bool {
        self.indices.iter().all(IndexVerdict::ok)
            && self.unrecorded.is_empty()
            && self.live <= self.snapshot_live
            && self.sources.iter().all(SourceVerdict::ok)
    }

    /// Compares the skips the migration's failure logs record (distinct documents per
    /// source index) with the skips found by reading: every skipped document must be in
    /// a log (a log that keeps fewer lost some; more: logs of another snapshot).
    pub fn check_recorded_skips(&mut self, recorded: &BTreeMap<String, u64>) {
        let indices: std::collections::BTreeSet<&String> = recorded
            .keys()
            .chain(self.skipped_per_index.keys())
            .collect();
        for index in indices {
            let r = recorded.get(index).copied().unwrap_or(0);
            let f = self.skipped_per_index.get(index).copied().unwrap_or(0);
            if r != f {
                self.unrecorded.insert(index.clone(), (r, f));
            }
        }
    }

    /// Documents skipped for any reason.
    pub fn skipped_total(&self) -> u64 {
        self.skipped.values().sum()
    }

    /// The target indices that keep no `_source`: their documents could not be compared
    /// whole (only counts, ids and, where the mapping allows, doc values).
    pub fn without_source(&self) -> Vec<&str> {
        self.indices
            .iter()
            .filter(|v| v.compared_by != Compared::Documents)
            .map(|v| v.index.as_str())
            .collect()
    }

    /// Per source index: snapshot live = read + nested, and the target's count against
    /// what must be there.
    pub fn sources_table(&self) -> String {
        let mut out = format!(
            "{:<32} {:>12} {:>9} {:>12} {:>9} {:>9} {:>9} {:>12} {:>12}  result\n",
            "source index",
            "snap. live",
            "nested",
            "read",
            "skipped",
            "filtered",
            "refused",
            "expected",
            "target"
        );
        for s in &self.sources {
            let target = match (&s.target, s.target_count) {
                (None, _) => "shared".to_string(),
                (Some(_), None) => "absent".to_string(),
                (Some(_), Some(c)) => c.to_string(),
            };
            out.push_str(&format!(
                "{:<32} {:>12} {:>9} {:>12} {:>9} {:>9} {:>9} {:>12} {:>12}  {}\n",
                s.index,
                s.snapshot_live,
                s.nested,
                s.read,
                s.skipped,
                s.filtered,
                s.refused,
                s.expected_on_target,
                target,
                if s.ok() { "ok" } else { "MISMATCH" }
            ));
            if !s.accounted() {
                out.push_str(&format!(
                    "    MISMATCH {}: the snapshot holds {} live documents, but {} were read and {} are nested children (read + nested must equal it)\n",
                    s.index, s.snapshot_live, s.read, s.nested
                ));
            }
            if !s.target_matches() {
                out.push_str(&format!(
                    "    MISMATCH {}: target {} holds {}, but {} must be there ({} live − {} nested − {} skipped − {} filtered − {} refused)\n",
                    s.index,
                    s.target.as_deref().unwrap_or(""),
                    s.target_count.map_or("no index".to_string(), |c| c.to_string()),
                    s.expected_on_target,
                    s.snapshot_live,
                    s.nested,
                    s.skipped,
                    s.filtered,
                    s.refused
                ));
            }
        }
        out
    }

    pub fn to_table(&self) -> String {
        let mut out = format!(
            "{:<40} {:>12} {:>9} {:>12} {:>9} {:>8} {:>9}  result\n",
            "index", "expected", "refused", "target", "compared", "missing", "different"
        );
        for v in &self.indices {
            out.push_str(&format!(
                "{:<40} {:>12} {:>9} {:>12} {:>9} {:>8} {:>9}  {}\n",
                v.index,
                v.expected,
                v.refused,
                v.target_count
                    .map_or("absent".to_string(), |c| c.to_string()),
                v.compared,
                v.missing_count,
                v.different_count,
                match (v.ok(), v.compared_by) {
                    (false, _) => "MISMATCH",
                    (true, Compared::Documents) => "ok",
                    (true, Compared::CountAndIds) => "ok (count and ids only)",
                    (true, Compared::CountIdsAndDocValues) => "ok (count, ids, doc values)",
                }
            ));
            for id in &v.missing {
                out.push_str(&format!("    missing   {id}\n"));
            }
            for id in &v.different {
                match v.different_doc_values.iter().find(|d| &d.id == id) {
                    Some(d) => {
                        out.push_str(&format!("    different {id} (doc values of {})\n", d.field))
                    }
                    None => out.push_str(&format!("    different {id}\n")),
                }
            }
        }
        let only = self.without_source();
        if !only.is_empty() {
            out.push_str(&format!(
                "{} target {} no _source (mapping _source.enabled: false), so not compared whole: count and ids (and doc values where listed) only; --target-source enable stores it: {}\n",
                only.len(),
                if only.len() == 1 { "index keeps" } else { "indices keep" },
                only.join(", ")
            ));
            for v in &self.indices {
                if !v.doc_value_fields.is_empty() {
                    out.push_str(&format!(
                        "    {}: doc values compared for {}\n",
                        v.index,
                        v.doc_value_fields.join(", ")
                    ));
                }
                if !v.doc_values_left_out.is_empty() {
                    out.push_str(&format!(
                        "    {}: count and ids only for {}\n",
                        v.index,
                        v.doc_values_left_out.join(", ")
                    ));
                }
            }
        }
        if !self.skipped.is_empty() {
            out.push_str(&format!(
                "{} of {} live documents are not expected on the target (skipped):\n",
                self.skipped_total(),
                self.live
            ));
            for (reason, n) in &self.skipped {
                out.push_str(&format!("    {n:>10} {reason}\n"));
            }
            for s in &self.skipped_listed {
                out.push_str(&format!(
                    "    skipped   {} {} ({}: {})\n",
                    s.index,
                    s.id.as_deref().unwrap_or("(no id)"),
                    s.reason,
                    s.detail
                ));
            }
        }
        if !self.filtered.is_empty() {
            out.push_str(&format!(
                "{} live documents are filtered by the transform (expected absent):\n",
                self.filtered.values().sum::<u64>()
            ));
            for (reason, n) in &self.filtered {
                out.push_str(&format!("    {n:>10} filtered:{reason}\n"));
            }
        }
        let nested: u64 = self.sources.iter().map(|s| s.nested).sum();
        out.push_str(&format!(
            "the snapshot's shards hold {} live documents: {} read, {} nested children (part of their parents)\n",
            self.snapshot_live, self.live, nested
        ));
        if self.live > self.snapshot_live {
            out.push_str("    MISMATCH: more documents read than the snapshot holds\n");
        }
        if !self.sources.is_empty() {
            out.push_str(&self.sources_table());
        }
        for (index, (recorded, found)) in &self.unrecorded {
            out.push_str(&format!(
                "    MISMATCH {index}: the failure logs record {recorded} skipped documents, the snapshot has {found}\n"
            ));
        }
        out
    }
}

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("source: {0}")]
    Source(#[from] crate::error::SourceError),
    #[error("target: {0}")]
    Target(#[from] cluster::ClusterError),
    #[error("{0}")]
    Other(String),
}

/// One document read from the snapshot, as the target should hold it.
#[derive(Debug, Clone)]
struct Expected {
    target: Arc<str>,
    id: String,
    routing: Option<String>,
    source: bytes::Bytes,
}

enum Msg {
    Doc(Expected),
    /// At the end: documents per target index, and the skipped ones.
    Counts(BTreeMap<Arc<str>, u64>, Skipped),
}

#[derive(Default)]
struct Skipped {
    live: u64,
    /// The plan's live count (the snapshot's own).
    planned: u64,
    filtered: BTreeMap<String, u64>,
    by_reason: BTreeMap<String, u64>,
    per_index: BTreeMap<String, u64>,
    listed: Vec<SkippedDoc>,
    /// Per source index, what was found reading it.
    per_source: BTreeMap<String, SourceTally>,
}

/// What reading one source index found.
#[derive(Default)]
struct SourceTally {
    /// The plan's live count of the index.
    planned: u64,
    nested: u64,
    read: u64,
    skipped: u64,
    filtered: u64,
    refused: u64,
    /// Documents the transform made of it (one per document unless a program splits).
    outputs: u64,
    targets: std::collections::BTreeSet<Arc<str>>,
}

const MGET_CHUNK: usize = 500;
const LISTED: usize = 100;

/// Compares the target with the snapshot.
/// Compares the target with what `source` through `transform` delivers. `refused` holds
/// the (target index, id) pairs failure logs say the target refused.
pub async fn verify<S: Source>(
    source: Arc<S>,
    transform: Arc<dyn Transform>,
    client: &Client,
    sample: Sample,
    refused: HashSet<(String, String)>,
) -> Result<VerifyReport, VerifyError> {
    let (tx, mut rx) = mpsc::channel::<Result<Msg, VerifyError>>(4 * MGET_CHUNK);
    let refused = Arc::new(refused);
    let reader = {
        let refused = refused.clone();
        tokio::task::spawn_blocking(move || {
            if let Err(e) = read_expected(&*source, &*transform, sample, &refused, &tx) {
                let _ = tx.blocking_send(Err(e));
            }
        })
    };
    let mut verdicts: BTreeMap<Arc<str>, IndexVerdict> = BTreeMap::new();
    let mut pending: BTreeMap<Arc<str>, Vec<Expected>> = BTreeMap::new();
    // per target index seen: None when it does not exist, else what can be compared on it
    let mut refreshed: BTreeMap<Arc<str>, Option<OnTarget>> = BTreeMap::new();
    let mut counts = None;
    while let Some(msg) = rx.recv().await {
        match msg? {
            Msg::Doc(d) => {
                let target = d.target.clone();
                if !refreshed.contains_key(&target) {
                    let state = refresh(client, &target).await?;
                    refreshed.insert(target.clone(), state);
                }
                let list = pending.entry(target.clone()).or_default();
                list.push(d);
                if list.len() >= MGET_CHUNK {
                    let batch = std::mem::take(list);
                    let v = verdicts.entry(target.clone()).or_default();
                    compare(client, &target, batch, refreshed[&target].as_ref(), v).await?;
                }
            }
            Msg::Counts(c, s) => counts = Some((c, s)),
        }
    }
    reader
        .await
        .map_err(|e| VerifyError::Other(format!("snapshot reader: {e}")))?;
    let (counts, skipped) =
        counts.ok_or_else(|| VerifyError::Other("the source reader stopped early".into()))?;
    for (target, batch) in pending {
        let v = verdicts.entry(target.clone()).or_default();
        compare(client, &target, batch, refreshed[&target].as_ref(), v).await?;
    }
    let mut report = VerifyReport {
        live: skipped.live,
        skipped: skipped.by_reason,
        skipped_listed: skipped.listed,
        filtered: skipped.filtered,
        snapshot_live: skipped.planned,
        skipped_per_index: skipped.per_index,
        ..VerifyReport::default()
    };
    let mut refused_per_index: BTreeMap<&str, u64> = BTreeMap::new();
    for (index, _) in refused.iter() {
        *refused_per_index.entry(index.as_str()).or_default() += 1;
    }
    for (target, expected) in counts {
        let mut v = verdicts.remove(&target).unwrap_or_default();
        v.index = target.to_string();
        v.expected = expected;
        v.refused = refused_per_index.get(&*target).copied().unwrap_or(0);
        let state = match refreshed.get(&target) {
            Some(s) => s.clone(),
            None => refresh(client, &target).await?,
        };
        v.target_count = match state {
            Some(on) => {
                v.compared_by = on.compared;
                v.doc_value_fields = on.doc_values.iter().map(|f| f.path.clone()).collect();
                v.doc_values_left_out = on.left_out.to_vec();
                Some(client.count(&target).await?)
            }
            None => None,
        };
        report.indices.push(v);
    }
    report.sources = source_verdicts(skipped.per_source, &report.indices);
    Ok(report)
}

/// The account of each source index, with the count of the target index that holds its
/// documents alone (one target, no other source index sending to it, one document each).
fn source_verdicts(
    tallies: BTreeMap<String, SourceTally>,
    indices: &[IndexVerdict],
) -> Vec<SourceVerdict> {
    let mut senders: BTreeMap<&str, usize> = BTreeMap::new();
    for t in tallies.values() {
        for target in &t.targets {
            *senders.entry(&**target).or_default() += 1;
        }
    }
    tallies
        .iter()
        .map(|(index, t)| {
            let one_each = t.outputs + t.skipped + t.filtered == t.read;
            let target = match (t.targets.len(), t.targets.iter().next()) {
                (1, Some(target)) if one_each && senders.get(&**target) == Some(&1) => {
                    Some(target.to_string())
                }
                _ => None,
            };
            let target_count = target.as_ref().and_then(|name| {
                indices
                    .iter()
                    .find(|v| &v.index == name)
                    .and_then(|v| v.target_count)
            });
            SourceVerdict {
                index: index.clone(),
                snapshot_live: t.planned,
                nested: t.nested,
                read: t.read,
                skipped: t.skipped,
                filtered: t.filtered,
                refused: t.refused,
                expected_on_target: t
                    .planned
                    .saturating_sub(t.nested + t.skipped + t.filtered + t.refused),
                target,
                target_count,
            }
        })
        .collect()
}

/// What can be compared on one target index.
#[derive(Debug, Clone)]
struct OnTarget {
    compared: Compared,
    /// The fields compared through doc values (an index without `_source`).
    doc_values: Arc<Vec<doc_values::Field>>,
    /// Fields left out of that comparison, with why.
    left_out: Arc<Vec<String>>,
}

/// Refreshes `index` and learns from its mapping what can be compared on it; `None` when
/// it does not exist.
async fn refresh(client: &Client, index: &str) -> Result<Option<OnTarget>, VerifyError> {
    if !client.index_exists(index).await? {
        return Ok(None);
    }
    client.refresh(index).await?;
    let path = format!("/{}/_mapping", encode_segment(index));
    let body: Value = client
        .request(Method::GET, &path, None)
        .await?
        .error_for_status()?
        .json()?;
    if keeps_source(&body) {
        return Ok(Some(OnTarget {
            compared: Compared::Documents,
            doc_values: Arc::default(),
            left_out: Arc::default(),
        }));
    }
    let fields = doc_values::fields(&body);
    let left_out = doc_values::left_out(&body);
    Ok(Some(OnTarget {
        compared: if fields.is_empty() {
            Compared::CountAndIds
        } else {
            Compared::CountIdsAndDocValues
        },
        doc_values: Arc::new(fields),
        left_out: Arc::new(left_out),
    }))
}

/// Whether every index of a `GET INDEX/_mapping` answer (an alias or a data stream may
/// answer for several; Elasticsearch 6 nests each mapping under its type) keeps `_source`.
pub fn keeps_source(mapping_answer: &Value) -> bool {
    let disabled = |root: &Value| {
        root.pointer("/_source/enabled")
            .is_some_and(|e| e == &Value::Bool(false) || e == "false")
    };
    let Some(indices) = mapping_answer.as_object() else {
        return true;
    };
    !indices.values().any(|i| {
        let Some(m) = i.get("mappings") else {
            return false;
        };
        disabled(m)
            || m.as_object().is_some_and(|types| {
                types
                    .iter()
                    .any(|(k, t)| !k.starts_with('_') && k != "properties" && disabled(t))
            })
    })
}

/// Fetches `batch` by id (with routing) and compares each `_source` JSON-equal; on an index
/// without `_source`, checks that each is found and compares its doc values.
async fn compare(
    client: &Client,
    index: &str,
    batch: Vec<Expected>,
    on: Option<&OnTarget>,
    v: &mut IndexVerdict,
) -> Result<(), VerifyError> {
    if batch.is_empty() {
        return Ok(());
    }
    let compared = on.map_or(Compared::Documents, |o| o.compared);
    let docs: Vec<Value> = batch
        .iter()
        .map(|d| match &d.routing {
            Some(r) => json!({ "_id": d.id, "routing": r }),
            None => json!({ "_id": d.id }),
        })
        .collect();
    let path = format!("/{}/_mget", encode_segment(index));
    let by_id = compared != Compared::Documents;
    let mut found_ids: Vec<&Expected> = Vec::new();
    let resp = client
        .request(Method::POST, &path, Some(&json!({ "docs": docs })))
        .await?;
    let resp = resp.error_for_status()?;
    let body: Value = resp.json()?;
    let got = body
        .get("docs")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if got.len() != batch.len() {
        return Err(VerifyError::Other(format!(
            "{path}: asked for {} documents, got {}",
            batch.len(),
            got.len()
        )));
    }
    for (want, have) in batch.iter().zip(got) {
        v.compared += 1;
        let found = have.get("found").and_then(Value::as_bool).unwrap_or(false);
        if !found {
            v.missing_count += 1;
            if v.missing.len() < LISTED {
                v.missing.push(want.id.clone());
            }
            continue;
        }
        if by_id {
            found_ids.push(want);
            continue;
        }
        let expected: Result<Value, _> = serde_json::from_slice(&want.source);
        let same = match (expected, have.get("_source")) {
            (Ok(e), Some(h)) => &e == h,
            _ => false,
        };
        if !same {
            v.different_count += 1;
            if v.different.len() < LISTED {
                v.different.push(want.id.clone());
            }
        }
    }
    match on {
        Some(on) if !on.doc_values.is_empty() && !found_ids.is_empty() => {
            compare_doc_values(client, index, &found_ids, &on.doc_values, v).await
        }
        _ => Ok(()),
    }
}

/// Asks the doc values of `fields` for `found` (documents the target holds) and compares
/// them with what each rebuilt document holds.
async fn compare_doc_values(
    client: &Client,
    index: &str,
    found: &[&Expected],
    fields: &[doc_values::Field],
    v: &mut IndexVerdict,
) -> Result<(), VerifyError> {
    let ids: Vec<&str> = found.iter().map(|d| d.id.as_str()).collect();
    let body = client
        .search(index, &doc_values::request(&ids, fields))
        .await?;
    let mut by_id: BTreeMap<&str, &Value> = BTreeMap::new();
    for h in body
        .pointer("/hits/hits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(id) = h.get("_id").and_then(Value::as_str) {
            by_id.insert(id, h.get("fields").unwrap_or(&Value::Null));
        }
    }
    for want in found {
        let source: Value = match serde_json::from_slice(&want.source) {
            Ok(s) => s,
            Err(_) => Value::Null,
        };
        let got = by_id.get(want.id.as_str()).copied();
        if let Some(field) = doc_values::first_difference(fields, &source, got) {
            tracing::info!(index, id = %want.id, field, "doc values differ from the rebuilt document");
            v.different_count += 1;
            if v.different.len() < LISTED {
                v.different.push(want.id.clone());
                v.different_doc_values.push(DocValueDifference {
                    id: want.id.clone(),
                    field: field.to_string(),
                });
            }
        }
    }
    Ok(())
}

/// Reads every partition of the source through the transform; sends the documents to
/// compare and, at the end, the counts per target index and the skipped documents.
fn read_expected<S: Source>(
    source: &S,
    transform: &dyn Transform,
    sample: Sample,
    refused: &HashSet<(String, String)>,
    tx: &mpsc::Sender<Result<Msg, VerifyError>>,
) -> Result<(), VerifyError> {
    let mut counts: BTreeMap<Arc<str>, u64> = BTreeMap::new();
    let mut reservoirs: BTreeMap<Arc<str>, Vec<Expected>> = BTreeMap::new();
    let mut skipped = Skipped::default();
    let mut rng = rand::thread_rng();
    let plan = source.plan()?;
    skipped.planned = plan.totals.docs;
    let mut tallies: BTreeMap<String, SourceTally> = plan
        .totals
        .groups
        .iter()
        .map(|(name, g)| {
            let t = SourceTally {
                planned: g.docs,
                ..SourceTally::default()
            };
            (name.clone(), t)
        })
        .collect();
    let mut hung_up = false;
    let mut outputs = Vec::new();
    for item in &plan.items {
        let tally = tallies.entry(item.group.clone()).or_default();
        let mut nested = 0u64;
        let read = source.read_counting_nested(
            item,
            &item.after,
            &mut |read| {
                skipped.live += 1;
                tally.read += 1;
                match read {
                    Read::Skip(s) => {
                        tally.skipped += 1;
                        skipped.skip(s.index.to_string(), s.id, s.reason, s.detail);
                        return true;
                    }
                    Read::Doc(d) => match transform.apply_all(d, &mut outputs) {
                        Ok(Shaped::Docs) => {}
                        Ok(Shaped::Filtered(reason)) => {
                            tally.filtered += 1;
                            *skipped.filtered.entry(reason).or_default() += 1;
                            return true;
                        }
                        Err(s) => {
                            tally.skipped += 1;
                            skipped.skip(s.index.to_string(), s.id, s.reason, s.detail);
                            return true;
                        }
                    },
                };
                for doc in outputs.drain(..) {
                    let target = match counts.get_key_value(&*doc.index) {
                        Some((k, _)) => k.clone(),
                        None => doc.index.clone(),
                    };
                    let n = counts.entry(target.clone()).or_insert(0);
                    *n += 1;
                    tally.outputs += 1;
                    if !tally.targets.contains(&target) {
                        tally.targets.insert(target.clone());
                    }
                    if refused.contains(&(target.to_string(), doc.id.clone())) {
                        tally.refused += 1;
                        continue;
                    }
                    let e = Expected {
                        target: target.clone(),
                        id: doc.id,
                        routing: doc.routing,
                        source: doc.source,
                    };
                    match sample {
                        Sample::All => {
                            if tx.blocking_send(Ok(Msg::Doc(e))).is_err() {
                                hung_up = true;
                                return false;
                            }
                        }
                        Sample::PerIndex(k) => {
                            let r = reservoirs.entry(target).or_default();
                            if r.len() < k {
                                r.push(e);
                            } else {
                                let j = rng.gen_range(0..*n) as usize;
                                if j < k {
                                    r[j] = e;
                                }
                            }
                        }
                    }
                }
                true
            },
            &mut nested,
        );
        tally.nested += nested;
        read?;
        if hung_up {
            return Ok(());
        }
    }
    skipped.per_source = tallies;
    for (_, r) in reservoirs {
        for e in r {
            if tx.blocking_send(Ok(Msg::Doc(e))).is_err() {
                return Ok(());
            }
        }
    }
    let _ = tx.blocking_send(Ok(Msg::Counts(counts, skipped)));
    Ok(())
}

impl Skipped {
    fn skip(&mut self, index: String, id: Option<String>, reason: &str, detail: String) {
        *self.by_reason.entry(reason.to_string()).or_default() += 1;
        *self.per_index.entry(index.clone()).or_default() += 1;
        if self.listed.len() < LISTED {
            self.listed.push(SkippedDoc {
                index,
                id,
                reason: reason.to_string(),
                detail,
            });
        }
    }
}

#[cfg(test)]
mod tests;
