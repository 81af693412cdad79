//! The low-water mark: the shard-global doc id of the last document such that it and every
//! document before it in the item are acknowledged. Batches complete out of order; the
//! mark only moves over a contiguous prefix of them, and so do the progress counts.

use std::collections::BTreeMap;

/// Progress of an item, as checkpointed into the store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Last contiguously acknowledged shard-global doc id.
    pub cursor: Option<u64>,
    /// Documents acknowledged or failed up to the cursor (in this lease).
    pub docs: u64,
    /// Bulk bytes of those documents.
    pub bytes: u64,
    /// Those of them written to the failure log.
    pub failed: u64,
}

/// One acknowledged batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Acked {
    pub last_doc: u64,
    pub docs: u64,
    pub bytes: u64,
    pub failed: u64,
}

#[derive(Debug, Default)]
pub struct LowWaterMark {
    next_seq: u64,
    progress: Progress,
    out_of_order: BTreeMap<u64, Acked>,
}

impl LowWaterMark {
    /// A mark that starts at `cursor` (the item's checkpoint, if any).
    pub fn new(cursor: Option<u64>) -> Self {
        LowWaterMark {
            next_seq: 0,
            progress: Progress {
                cursor,
                ..Progress::default()
            },
            out_of_order: BTreeMap::new(),
        }
    }

    /// Batch number `seq` (numbered from 0 in dispatch order) is acknowledged.
    pub fn ack(&mut self, seq: u64, batch: Acked) {
        self.out_of_order.insert(seq, batch);
        while let Some(b) = self.out_of_order.remove(&self.next_seq) {
            self.progress.cursor = Some(b.last_doc);
            self.progress.docs += b.docs;
            self.progress.bytes += b.bytes;
            self.progress.failed += b.failed;
            self.next_seq += 1;
        }
    }

    /// The last contiguously acknowledged doc id and the counts up to it.
    pub fn progress(&self) -> Progress {
        self.progress
    }

    /// Batches acknowledged beyond a gap.
    pub fn pending(&self) -> usize {
        self.out_of_order.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(last_doc: u64, docs: u64) -> Acked {
        Acked {
            last_doc,
            docs,
            bytes: docs * 10,
            failed: 0,
        }
    }

    #[test]
    fn moves_only_over_a_contiguous_prefix() {
        let mut m = LowWaterMark::new(Some(9));
        assert_eq!(m.progress().cursor, Some(9));
        m.ack(1, b(30, 5));
        m.ack(2, b(45, 5));
        assert_eq!(
            m.progress(),
            Progress {
                cursor: Some(9),
                docs: 0,
                bytes: 0,
                failed: 0
            },
            "batch 0 in flight"
        );
        assert_eq!(m.pending(), 2);
        m.ack(0, b(19, 7));
        assert_eq!(
            m.progress(),
            Progress {
                cursor: Some(45),
                docs: 17,
                bytes: 170,
                failed: 0
            }
        );
        assert_eq!(m.pending(), 0);
        m.ack(4, b(80, 1));
        assert_eq!(m.progress().cursor, Some(45));
        m.ack(
            3,
            Acked {
                last_doc: 61,
                docs: 2,
                bytes: 5,
                failed: 1,
            },
        );
        assert_eq!(
            m.progress(),
            Progress {
                cursor: Some(80),
                docs: 20,
                bytes: 185,
                failed: 1
            }
        );
    }

    #[test]
    fn starts_empty() {
        let mut m = LowWaterMark::new(None);
        assert_eq!(m.progress().cursor, None);
        m.ack(0, b(0, 1));
        assert_eq!(m.progress().cursor, Some(0));
    }
}
