//! One shard of a delta between two snapshots (`rfs … --since A`): the operations that
//! turn the target's state for snapshot A into snapshot B — index what is new or changed,
//! delete what is gone — found by [`snapshot::ShardDelta`] without reading what did not
//! change.
//!
//! Positions order the two passes of an item so that one cursor resumes either exactly:
//!
//! - **index pass**: position = the document's shard-global doc id in B
//!   (`0 .. maxDoc(B)`), in doc-id order;
//! - **delete pass**: position = `maxDoc(B) + d`, where `d` is the shard-global doc id of
//!   the document the deleted `_id` was read from (in A for ids read from A's gone
//!   documents, in B for ids read from B's operation history), in that order.
//!
//! A cursor below `maxDoc(B)` resumes the index pass after it (then runs the whole delete
//! pass); a cursor at or above it resumes the delete pass after it. Which `_id`s the
//! delete pass sends depends on the whole index pass (an `_id` re-indexed is never
//! deleted) and on the ids before it in the pass (each is deleted once), so those are
//! read again on resume — keys only, no `_source` — and the same deletes come out at the
//! same positions. Both snapshots are immutable, so every worker computes the same delta.

use std::sync::Arc;

use coordination::Position;
use snapshot::delta::{deletes_among, KeySet};
use snapshot::{DeleteKeys, ShardDelta, ShardReader};

use engine::document::{Document, Op, Read};
use engine::error::SourceError;
use engine::source::DeltaTotals;

use super::source::emit_documents;

/// What [`snapshot::DeltaStats`] says, in the engine's terms.
pub fn totals(delta: &ShardDelta) -> DeltaTotals {
    let s = &delta.stats;
    DeltaTotals {
        index: s.index,
        delete_at_most: s.gone,
        unchanged: s.unchanged,
        matched: s.matched,
        unproven: s.unproven,
        delete_keys: s.delete_keys,
        parts_from_history: u32::from(s.keys_from_history),
    }
}

/// Emits the operations of one delta shard from position `first` on (`first`: the first
/// position to emit), in position order, until done or `emit` returns `false`.
pub fn read_shard(
    group: &Arc<str>,
    old: &ShardReader,
    new: &ShardReader,
    delta: &ShardDelta,
    first: u64,
    emit: &mut dyn FnMut(Read) -> bool,
) -> Result<(), SourceError> {
    let err = |e: snapshot::Error| super::source::source_error("reading the delta".into(), e);
    let deletes_at = new.max_doc();
    let mut indexed = KeySet::default();
    let deletes = if first >= deletes_at {
        // Resuming the delete pass: the keys of the index pass again, then the deletes.
        indexed = delta.index_keys(new).map_err(err)?;
        delta.deletes(old, new, &indexed).map_err(err)?
    } else if let DeleteKeys::History(ops) = &delta.deletes {
        // One walk over B's new documents: the ones to index are sent (from `first`; the
        // ones before it only give their key), the other operations give only their key;
        // every chunk is read once.
        let walk = delta.index.union(ops);
        let mut docs = new.documents_and_keys(&walk, &delta.index);
        let done = emit_documents(group, &mut docs, &mut |read| {
            let position = read.position().doc().unwrap_or(0);
            if let Some(k) = key_of(&read) {
                indexed.insert(k.0, k.1);
            }
            position < first || emit(read)
        })?;
        if !done {
            return Ok(());
        }
        deletes_among(docs.take_keys(), &indexed)
    } else {
        // Keys of the documents before the cursor (already sent): they are not deleted.
        if first > 0 {
            let before = new.restrict(&delta.index, 0..first);
            for k in new.keys(&before) {
                let k = k.map_err(err)?;
                indexed.insert(k.doc_type.as_deref(), &k.id);
            }
        }
        let after = new.restrict(&delta.index, first..deletes_at);
        let mut docs = new.selected_documents(&after);
        let done = emit_documents(group, &mut docs, &mut |read| {
            // A document live in B is never deleted, even one that is skipped here (the
            // skip is counted and logged): the keys pass on resume sees it the same way.
            if let Some(k) = key_of(&read) {
                indexed.insert(k.0, k.1);
            }
            emit(read)
        })?;
        if !done {
            return Ok(());
        }
        delta.deletes(old, new, &indexed).map_err(err)?
    };
    let mut types = super::source::TypeNames::default();
    for k in deletes {
        let position = deletes_at + k.global_doc_id;
        if position < first {
            continue;
        }
        let doc = Document {
            position: Position::Doc(position),
            op: Op::Delete,
            index: group.clone(),
            id: k.id,
            doc_type: k.doc_type.map(|t| types.get(t)),
            routing: k.routing,
            source: bytes::Bytes::new(),
        };
        if !emit(Read::Doc(doc)) {
            return Ok(());
        }
    }
    Ok(())
}

/// `(mapping type, _id)` of a document, or of a skip that has an `_id`.
fn key_of(read: &Read) -> Option<(Option<&str>, &str)> {
    match read {
        Read::Doc(d) => Some((d.doc_type.as_deref(), &d.id)),
        Read::Skip(s) => Some((s.doc_type.as_deref(), s.id.as_deref()?)),
    }
}
