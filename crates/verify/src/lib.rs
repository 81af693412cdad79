//! Verification of a finished migration, the one verifier whatever the source and the
//! sink: per target index, the documents the source holds (read with the same source and
//! transform as the migration) against the target's count, and sampled documents (or all
//! of them) looked up by id through the [`engine::lookup`] port and compared. Every live
//! document must be accounted for: delivered (on the target), refused (in a failure log
//! given to verify) or skipped (the source or the transform could not deliver it; listed
//! with the reason).
//!
//! A target index whose mapping disables `_source` returns no document to compare: for it
//! the count is compared, each sampled id must be found, and where the mapping has fields
//! whose doc values the target returns exactly (keyword, whole numbers, boolean, date,
//! float, double, ip: see the cluster lookup's doc values) those values are compared with
//! the rebuilt document's; the report names such indices, never calling content the target
//! does not keep a mismatch.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use serde::Serialize;
use tokio::sync::mpsc;

use engine::document::{Op, Read};
use engine::lookup::{Held, Keeps, Lookup, LookupError, Wanted};
use engine::source::Source;
use engine::transform::{Shaped, Transform};
use ids::IdRuns;

/// How many documents to compare per index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sample {
    /// A uniform random sample of this many documents per target index.
    PerIndex(usize),
    /// Every document.
    All,
    /// Every document looked up by id (found or missing), and about `per_item` of each
    /// work item (a table's slot) compared, drawn with `seed` (the same seed, the same
    /// documents).
    EveryKey { per_item: u64, seed: u64 },
}

/// An index the pattern matches that the migration did not read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeftOut {
    pub index: String,
    /// Its documents as `_cat/indices` counts them (nested children included).
    pub docs: u64,
}

/// The matched indices that are not among `read` (the indices the migration's source
/// covered).
pub fn left_out(matched: &[(String, u64)], read: &[String]) -> Vec<LeftOut> {
    matched
        .iter()
        .filter(|(index, _)| !read.iter().any(|r| r == index))
        .map(|(index, docs)| LeftOut {
            index: index.clone(),
            docs: *docs,
        })
        .collect()
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
    /// The target cannot tell how many documents the index holds (its count is not
    /// compared).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub uncounted: bool,
    /// The listed different ids with what differs (`ID: field F: source …, target …`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub differences: Vec<String>,
    /// Every id of the index on the target against every id the source delivers to it
    /// (`--ids all`): missing and extra ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ids: Option<ids::IdsVerdict>,
    /// Compared by content, without ids ([`Options::by_content`]): the multiset of
    /// content digests sent against the one the target holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<content::ContentVerdict>,
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
        (self.uncounted || self.target_count == Some(self.expected - self.refused))
            && self.missing_count == 0
            && self.different_count == 0
            && self.ids.as_ref().is_none_or(ids::IdsVerdict::ok)
            && self
                .content
                .as_ref()
                .is_none_or(content::ContentVerdict::ok)
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
    /// Per work item of the source (a shard, a table's slot, …), in plan order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<ItemVerdict>,
    /// The source's totals are its own exact live counts ([`Source::exact_totals`]: a
    /// snapshot): `snapshot_live` and `sources` hold what was read against them. `false`
    /// (JSON lines, a live cluster, a table): `snapshot_live` is the plan's estimate and
    /// nothing is held against it; the per-target-index counts are still exact.
    pub exact_totals: bool,
    /// Indices the source's pattern matches, by verify's own listing, that the migration
    /// did not read (a live-cluster source, listed by the cluster connector).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOut>,
}

/// What verify found for one work item of the source.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ItemVerdict {
    pub group: String,
    pub part: u32,
    /// Where the item starts and ends (a table slot's keys), as text.
    pub after: Option<String>,
    pub until: Option<String>,
    /// Live documents (rows) read, skipped ones included.
    pub read: u64,
    /// Documents the target must hold for it (what the transform yields).
    pub expected: u64,
    pub filtered: u64,
    pub skipped: u64,
    /// Of the documents looked up: found, missing; compared and different.
    pub found: u64,
    pub missing: u64,
    pub compared: u64,
    pub different: u64,
}

impl VerifyReport {
    pub fn ok(&self) -> bool {
        self.indices.iter().all(IndexVerdict::ok)
            && self.unrecorded.is_empty()
            && (!self.exact_totals || self.live <= self.snapshot_live)
            && self.sources.iter().all(SourceVerdict::ok)
            && self.left_out.is_empty()
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
            if let Some(c) = &v.content {
                out.push_str(&format!(
                    "    by content (the target generated the ids): {} sent, {} on the target: {} missing, {} extra ({} duplicates of a sent document)\n",
                    c.expected, c.held, c.missing, c.extra, c.duplicates
                ));
                for id in &c.missing_ids {
                    out.push_str(&format!("    missing   {id}\n"));
                }
                for d in &c.extra_digests {
                    out.push_str(&format!("    extra     digest {d}\n"));
                }
            }
            if let Some(ids) = &v.ids {
                out.push_str(&format!(
                    "    ids: {} in the source, {} on the target: {} missing, {} extra\n",
                    ids.source, ids.target, ids.missing_count, ids.extra_count
                ));
                for id in ids.missing.iter().filter(|id| !v.missing.contains(id)) {
                    out.push_str(&format!("    missing   {id}\n"));
                }
                for id in &ids.extra {
                    out.push_str(&format!("    extra     {id}\n"));
                }
                let shown = ids.missing.len() + ids.extra.len();
                let all = ids.missing_count + ids.extra_count;
                if all > shown as u64 {
                    out.push_str(&format!("    … and {} more\n", all - shown as u64));
                }
            }
            for id in &v.different {
                match v.different_doc_values.iter().find(|d| &d.id == id) {
                    Some(d) => {
                        out.push_str(&format!("    different {id} (doc values of {})\n", d.field))
                    }
                    None => match v.differences.iter().find_map(|d| {
                        d.strip_prefix(id.as_str())
                            .and_then(|rest| rest.strip_prefix(": "))
                    }) {
                        Some(what) => out.push_str(&format!("    different {id}: {what}\n")),
                        None => out.push_str(&format!("    different {id}\n")),
                    },
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
        if self.exact_totals {
            let nested: u64 = self.sources.iter().map(|s| s.nested).sum();
            out.push_str(&format!(
                "the snapshot's shards hold {} live documents: {} read, {} nested children (part of their parents)\n",
                self.snapshot_live, self.live, nested
            ));
            if self.live > self.snapshot_live {
                out.push_str("    MISMATCH: more documents read than the snapshot holds\n");
            }
        } else {
            out.push_str(&format!(
                "{} documents read; the source keeps no exact live count of its own (its totals are estimates), so what was read is not checked against one: the target's counts are compared with what was read\n",
                self.live
            ));
        }
        if !self.sources.is_empty() {
            out.push_str(&self.sources_table());
        }
        for (index, (recorded, found)) in &self.unrecorded {
            out.push_str(&format!(
                "    MISMATCH {index}: the failure logs record {recorded} skipped documents, the snapshot has {found}\n"
            ));
        }
        for l in &self.left_out {
            out.push_str(&format!(
                "    MISMATCH left out {}: the source's pattern matches it ({} documents) but the migration did not read it (exclude it in the pattern, `,-{}`, if meant)\n",
                l.index, l.docs, l.index
            ));
        }
        out
    }
}

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("source")]
    Source(#[from] engine::error::SourceError),
    #[error("target")]
    Target(#[from] cluster::ClusterError),
    #[error("target")]
    Lookup(#[from] LookupError),
    #[error("{0}")]
    Other(String),
}

/// One document read from the source, as the target should hold it.
#[derive(Debug, Clone)]
struct Expected {
    target: Arc<str>,
    /// The work item it was read from (its place in the plan).
    item: usize,
    /// Compared (else only looked up).
    compare: bool,
    doc: Wanted,
}

enum Msg {
    Doc(Expected),
    /// At the end: documents per target index, the skipped ones, per item, and (`--ids
    /// all`) the ids expected per target index.
    Counts(
        BTreeMap<Arc<str>, u64>,
        Skipped,
        Vec<ItemVerdict>,
        BTreeMap<Arc<str>, IdRuns>,
    ),
}

#[derive(Default)]
struct Skipped {
    /// The source's totals are exact ([`Source::exact_totals`]).
    exact: bool,
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

/// How verify reads and compares.
#[derive(Debug, Clone)]
pub struct Options {
    pub sample: Sample,
    /// The (target index, id) pairs failure logs say the target refused.
    pub refused: HashSet<(String, String)>,
    /// Ids listed per target index and kind of mismatch (the rest are counted).
    pub max_listed: usize,
    /// Every id of each target index listed (ids only) and held against every id the
    /// source delivers to it: every missing and every extra document found, whatever the
    /// sample.
    pub all_ids: bool,
    /// Top-level fields holding a timestamp column (a table's `timestamp`/`timestamptz`):
    /// compared as instants where both sides hold a timestamp ([`instants`]).
    pub instants: std::collections::BTreeSet<String>,
    /// The target generated the document ids (`--server-generated-ids`): nothing can be
    /// looked up by id, so every document is read on both sides and each index compared
    /// as a multiset of content digests ([`content`]); the sample and `all_ids` are moot.
    pub by_content: bool,
}

impl Options {
    pub fn new(sample: Sample) -> Self {
        Options {
            sample,
            refused: HashSet::new(),
            max_listed: LISTED,
            all_ids: false,
            instants: Default::default(),
            by_content: false,
        }
    }
}

/// Compares the target with what `source` through `transform` delivers, looking every
/// document (or a sample) up through `lookup`: the one verifier, whatever the source
/// (snapshot, table, JSON lines, live cluster) and whatever the sink (`_mget`, files,
/// DynamoDB).
pub async fn verify<S: Source>(
    source: Arc<S>,
    transform: Arc<dyn Transform>,
    lookup: &dyn Lookup,
    options: Options,
) -> Result<VerifyReport, VerifyError> {
    let (tx, mut rx) = mpsc::channel::<Result<Msg, VerifyError>>(4 * MGET_CHUNK);
    let refused = Arc::new(options.refused);
    let by_content = options.by_content;
    let sample = if by_content {
        Sample::All
    } else {
        options.sample
    };
    let listed = options.max_listed.max(1);
    let all_ids = options.all_ids && !by_content;
    let mut sent: BTreeMap<Arc<str>, content::Multiset> = BTreeMap::new();
    let instants = options.instants;
    let reader = {
        let refused = refused.clone();
        tokio::task::spawn_blocking(move || {
            if let Err(e) = read_expected(&*source, &*transform, sample, all_ids, &refused, &tx) {
                let _ = tx.blocking_send(Err(e));
            }
        })
    };
    let mut verdicts: BTreeMap<Arc<str>, IndexVerdict> = BTreeMap::new();
    let mut pending: BTreeMap<Arc<str>, Vec<Expected>> = BTreeMap::new();
    // per target index seen: None when it does not exist, else what can be compared on it
    let mut prepared: BTreeMap<Arc<str>, Option<Keeps>> = BTreeMap::new();
    let mut found: Vec<ItemVerdict> = Vec::new();
    let mut counts = None;
    while let Some(msg) = rx.recv().await {
        match msg? {
            Msg::Doc(d) => {
                let target = d.target.clone();
                if !prepared.contains_key(&target) {
                    let state = lookup.prepare(&target).await?;
                    prepared.insert(target.clone(), state);
                }
                if by_content {
                    match lookup.expected(&target, &d.doc) {
                        Ok(want) => sent
                            .entry(target)
                            .or_default()
                            .add(content::digest(&want), Some(d.doc.id.as_str())),
                        Err(e) => {
                            let v = verdicts.entry(target).or_default();
                            v.different_count += 1;
                            if v.different.len() < listed {
                                v.different.push(d.doc.id.clone());
                                v.differences
                                    .push(format!("{}: {}", d.doc.id, redact::chain(&e)));
                            }
                        }
                    }
                    continue;
                }
                let list = pending.entry(target.clone()).or_default();
                list.push(d);
                if list.len() >= MGET_CHUNK {
                    let batch = std::mem::take(list);
                    let v = verdicts.entry(target.clone()).or_default();
                    let keeps = prepared[&target].as_ref();
                    check(
                        lookup, &target, batch, keeps, v, &mut found, listed, &instants,
                    )
                    .await?;
                }
            }
            Msg::Counts(c, s, items, ids) => counts = Some((c, s, items, ids)),
        }
    }
    reader
        .await
        .map_err(|e| VerifyError::Other(format!("source reader: {e}")))?;
    let (counts, skipped, mut items, mut expected_ids) =
        counts.ok_or_else(|| VerifyError::Other("the source reader stopped early".into()))?;
    for (target, batch) in pending {
        let v = verdicts.entry(target.clone()).or_default();
        let keeps = prepared[&target].as_ref();
        check(
            lookup, &target, batch, keeps, v, &mut found, listed, &instants,
        )
        .await?;
    }
    for (item, f) in items.iter_mut().zip(found) {
        item.found = f.found;
        item.missing = f.missing;
        item.compared = f.compared;
        item.different = f.different;
    }
    let mut report = VerifyReport {
        live: skipped.live,
        skipped: skipped.by_reason,
        skipped_listed: skipped.listed,
        filtered: skipped.filtered,
        snapshot_live: skipped.planned,
        skipped_per_index: skipped.per_index,
        items,
        exact_totals: skipped.exact,
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
        let state = match prepared.get(&target) {
            Some(s) => s.clone(),
            None => lookup.prepare(&target).await?,
        };
        let exists = state.is_some();
        v.target_count = match state {
            Some(keeps) => {
                v.compared_by = keeps.compared;
                v.doc_value_fields = keeps.doc_value_fields;
                v.doc_values_left_out = keeps.doc_values_left_out;
                match lookup.count(&target).await? {
                    Some(n) => Some(n),
                    None => {
                        v.uncounted = true;
                        None
                    }
                }
            }
            None => None,
        };
        if by_content {
            let mut held = content::Multiset::default();
            let mut unreadable = Vec::new();
            let mut each = |json: &[u8]| match exact::Exact::parse(json) {
                Ok(have) => held.add(content::digest(&have), None),
                Err(e) => unreadable.push(e.to_string()),
            };
            if exists && !lookup.each_source(&target, &mut each).await? {
                return Err(VerifyError::Other(format!(
                    "{}: this target cannot list the documents of {target} (a verify by \
                     content, the target having generated the ids)",
                    lookup.describe()
                )));
            }
            if let Some(first) = unreadable.first() {
                return Err(VerifyError::Other(format!(
                    "{}: {} document(s) of {target} hold a _source that does not parse \
                     (first: {first})",
                    lookup.describe(),
                    unreadable.len()
                )));
            }
            let want = sent.remove(&target).unwrap_or_default();
            v.content = Some(content::compare(&want, &held, listed));
        }
        if all_ids {
            let want = expected_ids.remove(&target).unwrap_or_default();
            let mut have = IdRuns::default();
            if exists && !lookup.list_ids(&target, &mut have).await? {
                return Err(VerifyError::Other(format!(
                    "{}: this target cannot list the ids of {target} (--ids all)",
                    lookup.describe()
                )));
            }
            let compared = tokio::task::spawn_blocking(move || {
                ids::compare(want.sorted()?, have.sorted()?, listed)
            })
            .await
            .map_err(|e| VerifyError::Other(format!("comparing ids: {e}")))?
            .map_err(LookupError::Spill)?;
            v.ids = Some(compared);
        }
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

/// Looks `batch` up on `index` (`keeps` `None`: the index does not exist, every document
/// is missing) and counts what was found, missing and different, per index and per item.
#[allow(clippy::too_many_arguments)]
async fn check(
    lookup: &dyn Lookup,
    index: &str,
    batch: Vec<Expected>,
    keeps: Option<&Keeps>,
    v: &mut IndexVerdict,
    items: &mut Vec<ItemVerdict>,
    listed: usize,
    instants: &std::collections::BTreeSet<String>,
) -> Result<(), VerifyError> {
    if batch.is_empty() {
        return Ok(());
    }
    let (meta, docs): (Vec<(usize, bool)>, Vec<Wanted>) = batch
        .into_iter()
        .map(|e| ((e.item, e.compare), e.doc))
        .unzip();
    let held = match keeps {
        None => vec![Held::Absent; docs.len()],
        Some(k) => {
            let content = k.compared == Compared::Documents && meta.iter().any(|m| m.1);
            lookup.fetch(index, &docs, content).await?
        }
    };
    if held.len() != docs.len() {
        return Err(VerifyError::Other(format!(
            "{}: asked for {} documents of {index}, got {} answers",
            lookup.describe(),
            docs.len(),
            held.len()
        )));
    }
    for (((item, compare), doc), held) in meta.into_iter().zip(&docs).zip(held) {
        if items.len() <= item {
            items.resize_with(item + 1, ItemVerdict::default);
        }
        let it = &mut items[item];
        if compare {
            v.compared += 1;
            it.compared += 1;
        }
        let doc_values_field = match &held {
            Held::DocValuesDiffer(field) => Some(field.clone()),
            _ => None,
        };
        let difference = match held {
            Held::Absent => {
                v.missing_count += 1;
                it.missing += 1;
                if v.missing.len() < listed {
                    v.missing.push(doc.id.clone());
                }
                continue;
            }
            Held::Present => None,
            Held::Holds(mut have) if compare => match lookup.expected(index, doc) {
                Ok(want) => {
                    instants::align(instants, &want, &mut have);
                    vectors::difference(&want, &have, keeps.map_or(&[][..], |k| &k.vector_fields))
                }
                Err(e) => Some(redact::chain(&e)),
            },
            Held::Holds(_) => None,
            Held::Differs(d) => compare.then_some(d),
            Held::DocValuesDiffer(field) => compare.then(|| format!("doc values of {field}")),
        };
        it.found += 1;
        if let Some(d) = difference {
            v.different_count += 1;
            it.different += 1;
            if v.different.len() < listed {
                v.different.push(doc.id.clone());
                v.differences.push(format!("{}: {d}", doc.id));
                if let Some(field) = doc_values_field {
                    v.different_doc_values.push(DocValueDifference {
                        id: doc.id.clone(),
                        field,
                    });
                }
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
    all_ids: bool,
    refused: &HashSet<(String, String)>,
    tx: &mpsc::Sender<Result<Msg, VerifyError>>,
) -> Result<(), VerifyError> {
    let mut counts: BTreeMap<Arc<str>, u64> = BTreeMap::new();
    let mut expected_ids: BTreeMap<Arc<str>, IdRuns> = BTreeMap::new();
    let mut spill_error: Option<std::io::Error> = None;
    let mut reservoirs: BTreeMap<Arc<str>, Vec<Expected>> = BTreeMap::new();
    let mut skipped = Skipped::default();
    let mut rng = match sample {
        Sample::EveryKey { seed, .. } => rand::rngs::StdRng::seed_from_u64(seed),
        _ => rand::rngs::StdRng::from_entropy(),
    };
    let plan = source.plan()?;
    skipped.planned = plan.totals.docs;
    // Per source index, when the plan's counts are the source's own live counts (a
    // snapshot; a table's are estimates): what reading it finds, to account for each.
    let exact = source.exact_totals();
    skipped.exact = exact;
    let mut tallies: BTreeMap<String, SourceTally> = if exact {
        plan.totals
            .groups
            .iter()
            .map(|(name, g)| {
                let t = SourceTally {
                    planned: g.docs,
                    ..SourceTally::default()
                };
                (name.clone(), t)
            })
            .collect()
    } else {
        BTreeMap::new()
    };
    let mut items: Vec<ItemVerdict> = plan
        .items
        .iter()
        .map(|i| ItemVerdict {
            group: i.group.clone(),
            part: i.part,
            after: i.after.as_ref().map(position_text),
            until: i.until.as_ref().map(position_text),
            ..ItemVerdict::default()
        })
        .collect();
    // Every key looked up: each document compared with a probability that gives about
    // `per_item` per item of the average size (and at most `per_item`).
    let p = match sample {
        Sample::EveryKey { per_item, .. } => {
            let avg = (plan.totals.docs / (plan.items.len() as u64).max(1)).max(1);
            (per_item as f64 / avg as f64).min(1.0)
        }
        _ => 1.0,
    };
    let mut hung_up = false;
    let mut outputs = Vec::new();
    let mut unplanned = SourceTally::default();
    for (at, item) in plan.items.iter().enumerate() {
        let tally = &mut items[at];
        let per_source = if exact {
            tallies.entry(item.group.clone()).or_default()
        } else {
            &mut unplanned
        };
        let mut nested = 0u64;
        let read = source.read_counting_nested(
            item,
            &item.after,
            &mut |read| {
                skipped.live += 1;
                tally.read += 1;
                per_source.read += 1;
                match read {
                    Read::Skip(s) => {
                        tally.skipped += 1;
                        per_source.skipped += 1;
                        skipped.skip(s.index.to_string(), s.id, s.reason, s.detail);
                        return true;
                    }
                    Read::Doc(d) => match transform.apply_all(d, &mut outputs) {
                        Ok(Shaped::Docs) => {}
                        Ok(Shaped::Filtered(reason)) => {
                            tally.filtered += 1;
                            per_source.filtered += 1;
                            *skipped.filtered.entry(reason).or_default() += 1;
                            return true;
                        }
                        Err(s) => {
                            tally.skipped += 1;
                            per_source.skipped += 1;
                            skipped.skip(s.index.to_string(), s.id, s.reason, s.detail);
                            return true;
                        }
                    },
                };
                // Every key: one draw per document read (each of its outputs compared alike).
                let compare = match sample {
                    Sample::EveryKey { per_item, .. } => {
                        tally.compared < per_item && rng.gen_bool(p) && {
                            tally.compared += 1;
                            true
                        }
                    }
                    _ => true,
                };
                for doc in outputs.drain(..) {
                    if doc.op == Op::Delete {
                        // A delete the program asks for: nothing to find on the target.
                        continue;
                    }
                    let target = match counts.get_key_value(&*doc.index) {
                        Some((k, _)) => k.clone(),
                        None => doc.index.clone(),
                    };
                    let n = counts.entry(target.clone()).or_insert(0);
                    *n += 1;
                    tally.expected += 1;
                    per_source.outputs += 1;
                    if !per_source.targets.contains(&target) {
                        per_source.targets.insert(target.clone());
                    }
                    if refused.contains(&(target.to_string(), doc.id.clone())) {
                        per_source.refused += 1;
                        continue;
                    }
                    if all_ids {
                        let runs = expected_ids.entry(target.clone()).or_default();
                        if let Err(e) = runs.push(doc.id.clone()) {
                            spill_error = Some(e);
                            return false;
                        }
                    }
                    let e = Expected {
                        target: target.clone(),
                        item: at,
                        compare,
                        doc: Wanted {
                            id: doc.id,
                            routing: doc.routing,
                            source: doc.source,
                        },
                    };
                    match sample {
                        Sample::All | Sample::EveryKey { .. } => {
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
        per_source.nested += nested;
        read?;
        if let Some(e) = spill_error.take() {
            return Err(LookupError::Spill(e).into());
        }
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
    // What was found is counted by the engine.
    for i in &mut items {
        i.compared = 0;
    }
    let _ = tx.blocking_send(Ok(Msg::Counts(counts, skipped, items, expected_ids)));
    Ok(())
}

fn position_text(p: &coordination::Position) -> String {
    match p {
        coordination::Position::Key(k) => k.clone(),
        coordination::Position::Doc(d) => d.to_string(),
    }
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

pub use engine::lookup::{exact, ids, vectors, Compared};
pub mod content;
pub mod instants;
#[cfg(test)]
mod tests;
