//! What changed in one shard between an older snapshot (`old`, A) and a newer one (`new`,
//! B): which documents of B to index and where the `_id`s to delete come from, found
//! without reading the documents that did not change.
//!
//! - **Segments.** A segment of B with the same name, segment id and `.si` file (length
//!   and checksum in the shard metadata) as one of A is *shared*: its documents are the
//!   same Lucene documents, and only their liveness can differ (a newer `.liv`
//!   generation, newer soft deletes). A segment of B that A does not have is *new* (flushed
//!   after A, or written by a merge); a segment of A that B does not have *vanished*.
//! - **Index** every document live in B that was not live in A: in shared segments the
//!   ones live in B but not in A (normally none), in new segments every live one — except
//!   documents a merge carried over unchanged. Those are recognised by `_seq_no` (a
//!   numeric doc value, one per operation of the shard's history): when both commits have
//!   the same `history_uuid` and every new and vanished segment has `_seq_no`, a document
//!   of a new segment whose sequence number belongs to a live document of a vanished
//!   segment is that document, moved. Without `_seq_no` (Elasticsearch 5, other
//!   histories) a merged segment is sent again whole, and [`DeltaStats::unproven`] says
//!   how many documents that is.
//! - **Delete** every `_id` live in A that is not live in B. The documents concerned
//!   (*gone*: live in A, not live in B, after matching) are known without reading them; their
//!   `_id`s come from one of two places ([`DeleteKeys`]):
//!   - *history*: with soft deletes, Elasticsearch records every operation as a document
//!     (a new version, or a tombstone carrying the deleted `_id`). When B's new segments
//!     hold a document for every sequence number after A's local checkpoint (checked), every
//!     `_id` touched after A is among them, so their `_id`s are read from those (small)
//!     segments instead of from the gone documents. Not used when a gone document's segment
//!     has `_routing` (tombstones do not carry it).
//!   - *old*: otherwise the gone documents themselves are read from A (only the chunks
//!     that hold them).
//!
//!   Either way an `_id` that is live in B (re-indexed: an update) is not deleted, and an
//!   `_id` deleted that the target never had (added and deleted between A and B) is a
//!   harmless delete of a missing document.

use std::collections::HashMap;

use lucene::{DocSet, IndexReader, NumericValues, Selection};
use serde::Serialize;

use crate::error::Result;
use crate::reader::ShardReader;

/// The sequence-number doc-values field.
pub const SEQ_NO_FIELD: &str = "_seq_no";

/// Where the `_id`s of the documents to delete are read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeleteKeys {
    /// From these documents of A (the gone documents).
    Old(Selection),
    /// From these documents of B: every operation after A (new versions, tombstones).
    History(Selection),
}

impl DeleteKeys {
    /// The documents to read keys from, and whether they are B's.
    pub fn selection(&self) -> (&Selection, bool) {
        match self {
            DeleteKeys::Old(s) => (s, false),
            DeleteKeys::History(s) => (s, true),
        }
    }
}

/// Counts of one shard's delta, for the plan and `rfs status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DeltaStats {
    pub shared_segments: u32,
    pub new_segments: u32,
    pub vanished_segments: u32,
    /// Documents of B to index (new or changed; includes [`DeltaStats::unproven`]).
    pub index: u64,
    /// Documents live in A and not in B: at most this many deletes (an updated document
    /// is gone too, but its `_id` is re-indexed, not deleted).
    pub gone: u64,
    /// Documents live in both, not sent.
    pub unchanged: u64,
    /// Of `unchanged`, documents found in rewritten (merged) segments through `_seq_no`.
    pub matched: u64,
    /// Documents of rewritten segments that are sent again without proof that they
    /// changed (no `_seq_no`, or another history): at most this many are unchanged.
    pub unproven: u64,
    /// Documents whose keys are read for deletes (from B's history or from A).
    pub delete_keys: u64,
    /// Whether delete keys come from B's operation history (else from A's documents).
    pub keys_from_history: bool,
    /// Why keys could not come from the history (when they could not).
    pub history_refused: Option<String>,
}

/// The delta of one shard between A and B.
#[derive(Debug, Clone)]
pub struct ShardDelta {
    /// Documents of B to index (by B's segments).
    pub index: Selection,
    /// Where the `_id`s to delete are read.
    pub deletes: DeleteKeys,
    pub stats: DeltaStats,
}

/// The live documents of a segment as a set.
fn live_set(reader: &IndexReader, seg: usize) -> DocSet {
    let s = &reader.segments()[seg];
    let mut set = DocSet::empty(s.max_doc());
    let mut d = 0;
    while let Some(doc) = s.next_live(d) {
        set.insert(doc);
        d = doc + 1;
    }
    set
}

fn user_data_i64(reader: &IndexReader, key: &str) -> Option<i64> {
    reader.commit().user_data.get(key)?.parse().ok()
}

/// `(length, checksum)` of each segment's `.si` in the shard metadata.
fn si_files(reader: &ShardReader) -> HashMap<String, (u64, Option<String>)> {
    reader
        .shard()
        .files()
        .files
        .iter()
        .filter_map(|f| {
            let seg = f.physical_name.strip_suffix(".si")?;
            Some((seg.to_string(), (f.length, f.checksum.clone())))
        })
        .collect()
}

/// Sequence numbers of a segment, or `None` when it has none.
fn seq_nos(reader: &ShardReader, seg: usize) -> Result<Option<NumericValues>> {
    reader.numeric_values(seg, SEQ_NO_FIELD)
}

impl ShardDelta {
    /// The delta from nothing: every live document of `new` is indexed, nothing deleted
    /// (the shard failed in the older snapshot, so the target never got it).
    pub fn whole(new: &ShardReader) -> ShardDelta {
        let rb = new.lucene();
        let index: Vec<DocSet> = (0..rb.segments().len()).map(|j| live_set(rb, j)).collect();
        let stats = DeltaStats {
            new_segments: index.len() as u32,
            index: index.iter().map(|s| u64::from(s.len())).sum(),
            history_refused: Some("the shard has no data in the older snapshot".into()),
            ..DeltaStats::default()
        };
        let none = index.iter().map(|s| DocSet::empty(s.max_doc())).collect();
        ShardDelta {
            index: Selection::new(index),
            deletes: DeleteKeys::History(Selection::new(none)),
            stats,
        }
    }

    /// Compares the shard in `old` (A) with the same shard in `new` (B).
    pub fn compute(old: &ShardReader, new: &ShardReader) -> Result<ShardDelta> {
        let (ra, rb) = (old.lucene(), new.lucene());
        let (si_a, si_b) = (si_files(old), si_files(new));
        let a_by_name: HashMap<&str, usize> = ra
            .segments()
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name(), i))
            .collect();
        let mut stats = DeltaStats::default();
        // B segment → A segment when shared.
        let mut pair_of_b: Vec<Option<usize>> = vec![None; rb.segments().len()];
        let mut shared_a = vec![false; ra.segments().len()];
        for (j, sb) in rb.segments().iter().enumerate() {
            let Some(&i) = a_by_name.get(sb.name()) else {
                continue;
            };
            let sa = &ra.segments()[i];
            let same_si = match (si_a.get(sa.name()), si_b.get(sb.name())) {
                (Some(x), Some(y)) => x == y,
                _ => true,
            };
            if sa.id() == sb.id() && sa.max_doc() == sb.max_doc() && same_si {
                pair_of_b[j] = Some(i);
                shared_a[i] = true;
            }
        }

        // Start: index = live in B and not live in A; gone = live in A and not live in B.
        let mut index: Vec<DocSet> = Vec::with_capacity(rb.segments().len());
        for (j, pair) in pair_of_b.iter().enumerate() {
            let mut set = live_set(rb, j);
            match pair {
                Some(i) => {
                    stats.shared_segments += 1;
                    let sa = &ra.segments()[*i];
                    for d in set.iter().collect::<Vec<_>>() {
                        if sa.is_live(d) {
                            set.remove(d);
                            stats.unchanged += 1;
                        }
                    }
                }
                None => stats.new_segments += 1,
            }
            index.push(set);
        }
        let mut gone: Vec<DocSet> = Vec::with_capacity(ra.segments().len());
        for (i, is_shared) in shared_a.iter().enumerate() {
            let mut set = live_set(ra, i);
            if *is_shared {
                let j = pair_of_b
                    .iter()
                    .position(|p| *p == Some(i))
                    .expect("paired");
                let sb = &rb.segments()[j];
                for d in set.iter().collect::<Vec<_>>() {
                    if sb.is_live(d) {
                        set.remove(d);
                    }
                }
            } else {
                stats.vanished_segments += 1;
            }
            gone.push(set);
        }

        let same_history = match (
            ra.commit().user_data.get("history_uuid"),
            rb.commit().user_data.get("history_uuid"),
        ) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        };
        let new_segs: Vec<usize> = (0..rb.segments().len())
            .filter(|&j| pair_of_b[j].is_none())
            .collect();
        let vanished: Vec<usize> = (0..ra.segments().len()).filter(|&i| !shared_a[i]).collect();
        // Sequence numbers of B's new segments (read at most once).
        let mut new_seq: HashMap<usize, Option<NumericValues>> = HashMap::new();
        if same_history {
            for &j in &new_segs {
                new_seq.insert(j, seq_nos(new, j)?);
            }
        }

        // Documents a merge carried from A's vanished segments into B's new ones.
        let vanished_live: u64 = vanished.iter().map(|&i| u64::from(gone[i].len())).sum();
        let new_live: u64 = new_segs.iter().map(|&j| u64::from(index[j].len())).sum();
        if vanished_live > 0 && new_live > 0 {
            let mut matched_ok = same_history;
            let mut old_seqs: Vec<i64> = Vec::new();
            if matched_ok {
                for &i in &vanished {
                    if gone[i].is_empty() {
                        continue;
                    }
                    match seq_nos(old, i)? {
                        Some(v) => {
                            for d in gone[i].iter() {
                                match v.get(d) {
                                    Some(s) => old_seqs.push(s),
                                    None => matched_ok = false,
                                }
                            }
                        }
                        None => matched_ok = false,
                    }
                }
                matched_ok &= new_segs
                    .iter()
                    .all(|j| index[*j].is_empty() || new_seq.get(j).is_some_and(Option::is_some));
            }
            if matched_ok {
                old_seqs.sort_unstable();
                let mut kept: Vec<i64> = Vec::new();
                for &j in &new_segs {
                    let Some(Some(v)) = new_seq.get(&j) else {
                        continue;
                    };
                    for d in index[j].iter().collect::<Vec<_>>() {
                        if let Some(s) = v.get(d) {
                            if old_seqs.binary_search(&s).is_ok() {
                                index[j].remove(d);
                                kept.push(s);
                                stats.unchanged += 1;
                                stats.matched += 1;
                            }
                        }
                    }
                }
                kept.sort_unstable();
                for &i in &vanished {
                    if kept.is_empty() {
                        break;
                    }
                    let Some(v) = seq_nos(old, i)? else { continue };
                    for d in gone[i].iter().collect::<Vec<_>>() {
                        if v.get(d).is_some_and(|s| kept.binary_search(&s).is_ok()) {
                            gone[i].remove(d);
                        }
                    }
                }
            } else {
                stats.unproven = new_live;
            }
        }
        stats.index = index.iter().map(|s| u64::from(s.len())).sum();
        stats.gone = gone.iter().map(|s| u64::from(s.len())).sum();

        let deletes = match history_keys(old, new, &gone, &new_segs, &new_seq, same_history)? {
            Ok(sel) => {
                stats.keys_from_history = true;
                DeleteKeys::History(sel)
            }
            Err(why) => {
                stats.history_refused = Some(why.to_string());
                DeleteKeys::Old(Selection::new(gone))
            }
        };
        // Nothing gone: nothing to delete, no key to read.
        let deletes = match deletes {
            DeleteKeys::History(s) if stats.gone == 0 => DeleteKeys::History(empty_like(&s)),
            DeleteKeys::Old(s) if stats.gone == 0 => DeleteKeys::Old(empty_like(&s)),
            d => d,
        };
        stats.delete_keys = deletes.selection().0.len();
        Ok(ShardDelta {
            index: Selection::new(index),
            deletes,
            stats,
        })
    }
}

fn empty_like(s: &Selection) -> Selection {
    Selection::new(
        s.sets()
            .iter()
            .map(|d| DocSet::empty(d.max_doc()))
            .collect(),
    )
}

/// Why the operations after A cannot be found in B's history (the deleted keys are then
/// read from A).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum HistoryRefusal {
    #[error("the commits have different (or no) history_uuid")]
    OtherHistory,
    #[error("the commits do not record local_checkpoint and max_seq_no")]
    NoSeqNos,
    #[error(
        "inconsistent sequence numbers (A checkpoint {checkpoint}, A max {old_max}, B max {new_max})"
    )]
    Inconsistent {
        checkpoint: i64,
        old_max: i64,
        new_max: i64,
    },
    #[error("{0} operations after A: too many to check")]
    TooMany(i64),
    /// A segment (named) of A has routed documents.
    #[error("segment {0} has routed documents (tombstones do not record routing)")]
    Routed(String),
    /// A new segment (named) of B has no `_seq_no`.
    #[error("new segment {0} has no {SEQ_NO_FIELD}")]
    NoSeqNo(String),
    #[error("{missing} of the {span} operations after A are no longer recorded in B (merged away or hard deletes)")]
    NotRecorded { missing: u64, span: i64 },
}

/// The documents of B that record every operation after A, when B keeps them all; else
/// why not.
fn history_keys(
    old: &ShardReader,
    new: &ShardReader,
    gone: &[DocSet],
    new_segs: &[usize],
    new_seq: &HashMap<usize, Option<NumericValues>>,
    same_history: bool,
) -> Result<std::result::Result<Selection, HistoryRefusal>> {
    let (ra, rb) = (old.lucene(), new.lucene());
    if !same_history {
        return Ok(Err(HistoryRefusal::OtherHistory));
    }
    let (Some(checkpoint), Some(old_max), Some(new_max)) = (
        user_data_i64(ra, "local_checkpoint"),
        user_data_i64(ra, "max_seq_no"),
        user_data_i64(rb, "max_seq_no"),
    ) else {
        return Ok(Err(HistoryRefusal::NoSeqNos));
    };
    if new_max < checkpoint || old_max < checkpoint {
        return Ok(Err(HistoryRefusal::Inconsistent {
            checkpoint,
            old_max,
            new_max,
        }));
    }
    let span = new_max - checkpoint;
    if span > 1 << 30 {
        return Ok(Err(HistoryRefusal::TooMany(span)));
    }
    for (i, g) in gone.iter().enumerate() {
        if !g.is_empty() && ra.segments()[i].field_infos().by_name("_routing").is_some() {
            return Ok(Err(HistoryRefusal::Routed(
                ra.segments()[i].name().to_string(),
            )));
        }
    }
    // Which sequence numbers in (checkpoint, new_max] some document holds.
    let mut covered = DocSet::empty(span as u32);
    let mark = |covered: &mut DocSet, s: i64| {
        if s > checkpoint && s <= new_max {
            covered.insert((s - checkpoint - 1) as u32);
        }
    };
    // Operations A applied above its checkpoint (rare: in flight when A was taken).
    let mut old_above: Vec<i64> = Vec::new();
    if old_max > checkpoint {
        for i in 0..ra.segments().len() {
            if let Some(v) = old.numeric_values(i, SEQ_NO_FIELD)? {
                old_above.extend(v.iter().map(|(_, s)| s).filter(|s| *s > checkpoint));
            }
        }
        old_above.sort_unstable();
        for s in &old_above {
            mark(&mut covered, *s);
        }
    }
    let mut ops: Vec<DocSet> = rb
        .segments()
        .iter()
        .map(|s| DocSet::empty(s.max_doc()))
        .collect();
    for &j in new_segs {
        let Some(Some(v)) = new_seq.get(&j) else {
            return Ok(Err(HistoryRefusal::NoSeqNo(
                rb.segments()[j].name().to_string(),
            )));
        };
        for (d, s) in v.iter() {
            mark(&mut covered, s);
            if s > checkpoint && old_above.binary_search(&s).is_err() {
                ops[j].insert(d);
            }
        }
    }
    let missing = span as u64 - u64::from(covered.len());
    if missing > 0 {
        return Ok(Err(HistoryRefusal::NotRecorded { missing, span }));
    }
    Ok(Ok(Selection::new(ops)))
}

/// A set of document identities (`_type`, `_id`), kept as 128-bit hashes so that a large
/// set (every document of a merged segment without `_seq_no`) costs 16 bytes per entry.
#[derive(Debug, Default, Clone)]
pub struct KeySet(std::collections::HashSet<u128>);

impl KeySet {
    fn hash(doc_type: Option<&str>, id: &str) -> u128 {
        use std::hash::{Hash, Hasher};
        let half = |seed: u8| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            seed.hash(&mut h);
            doc_type.hash(&mut h);
            id.hash(&mut h);
            h.finish()
        };
        (u128::from(half(1)) << 64) | u128::from(half(2))
    }

    /// Adds a key; returns whether it was new.
    pub fn insert(&mut self, doc_type: Option<&str>, id: &str) -> bool {
        self.0.insert(Self::hash(doc_type, id))
    }

    pub fn contains(&self, doc_type: Option<&str>, id: &str) -> bool {
        self.0.contains(&Self::hash(doc_type, id))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl ShardDelta {
    /// The keys of the documents to index (read from `new`, without their `_source`).
    pub fn index_keys(&self, new: &ShardReader) -> Result<KeySet> {
        let mut keys = KeySet::default();
        for k in new.keys(&self.index) {
            let k = k?;
            keys.insert(k.doc_type.as_deref(), &k.id);
        }
        Ok(keys)
    }

    /// The documents to delete, in the order of the documents their keys were read from
    /// (`global_doc_id` is in A for [`DeleteKeys::Old`], in B for
    /// [`DeleteKeys::History`]): every key read that `indexed` (the keys of the documents
    /// to index, see [`ShardDelta::index_keys`]) does not hold, each once.
    pub fn deletes(
        &self,
        old: &ShardReader,
        new: &ShardReader,
        indexed: &KeySet,
    ) -> Result<Vec<crate::reader::DocKey>> {
        let (selection, from_new) = self.deletes.selection();
        let reader = if from_new { new } else { old };
        let keys = reader.keys(selection).collect::<Result<Vec<_>>>()?;
        Ok(deletes_among(keys, indexed))
    }
}

/// Of `keys` (in the order of the documents they were read from), the ones to delete:
/// those `indexed` does not hold, each once (its first occurrence).
pub fn deletes_among(
    keys: impl IntoIterator<Item = crate::reader::DocKey>,
    indexed: &KeySet,
) -> Vec<crate::reader::DocKey> {
    let mut seen = KeySet::default();
    keys.into_iter()
        .filter(|k| {
            let t = k.doc_type.as_deref();
            !indexed.contains(t, &k.id) && seen.insert(t, &k.id)
        })
        .collect()
}
