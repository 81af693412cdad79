//! The low-water mark: the last position such that it and every document before it in the
//! item are delivered, refused or skipped. Batches complete out of order; the mark only
//! moves over a contiguous prefix of them, and so do the counts.

use std::collections::BTreeMap;

use coordination::{Position, Progress};

/// Reasons kept per item; further ones are counted under `<stage>:other`.
const MAX_REASONS: usize = 64;

/// One acknowledged batch (or a run of skips with nothing to send).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acked {
    /// The position of the batch's last document or skip; `None` when the batch only
    /// holds the first outputs of an input that a later batch completes.
    pub last: Option<Position>,
    pub delivered: u64,
    pub bytes: u64,
    pub refused: u64,
    pub skipped: u64,
    /// Refused and skipped documents by reason key (`refused:…`, `skipped:…`).
    pub reasons: Vec<(String, u64)>,
    /// Inputs the batch completes (documents and skips) plus the further outputs of
    /// exploded ones: what its delivered + refused + skipped + filtered add up to.
    pub covered: u64,
    /// Documents the batch sent to the target (delivered or refused by it).
    pub sent: u64,
}

#[derive(Debug)]
pub struct LowWaterMark {
    next_seq: u64,
    progress: Progress,
    out_of_order: BTreeMap<u64, Acked>,
    /// Documents sent in the batches of the prefix up to the cursor (from the start of
    /// this mark), and in those after it that moved the counts but not the cursor.
    sent_to_cursor: u64,
    sent_past_cursor: u64,
}

impl LowWaterMark {
    /// A mark that starts where the item's checkpoint says (cursor and counts).
    pub fn new(base: Progress) -> Self {
        LowWaterMark {
            next_seq: 0,
            progress: base,
            out_of_order: BTreeMap::new(),
            sent_to_cursor: 0,
            sent_past_cursor: 0,
        }
    }

    /// Batch number `seq` (numbered from 0 in dispatch order) is acknowledged.
    pub fn ack(&mut self, seq: u64, batch: Acked) {
        self.out_of_order.insert(seq, batch);
        while let Some(b) = self.out_of_order.remove(&self.next_seq) {
            let p = &mut self.progress;
            self.sent_past_cursor += b.sent;
            if let Some(last) = b.last {
                p.cursor = Some(last);
                self.sent_to_cursor += std::mem::take(&mut self.sent_past_cursor);
            }
            p.docs += b.delivered;
            p.bytes += b.bytes;
            p.refused += b.refused;
            p.skipped += b.skipped;
            p.covered += b.covered;
            for (reason, n) in b.reasons {
                let key = if p.reasons.len() >= MAX_REASONS && !p.reasons.contains_key(&reason) {
                    let stage = reason.split(':').next().unwrap_or("other");
                    format!("{stage}:other")
                } else {
                    reason
                };
                *p.reasons.entry(key).or_default() += n;
            }
            self.next_seq += 1;
        }
    }

    /// The last contiguously acknowledged position and the counts up to it.
    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    /// Documents sent in the acknowledged batches the cursor has passed: those a run
    /// resumed from the cursor does not send again.
    pub fn sent_to_cursor(&self) -> u64 {
        self.sent_to_cursor
    }

    /// Batches acknowledged beyond a gap.
    pub fn pending(&self) -> usize {
        self.out_of_order.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(last: u64, delivered: u64) -> Acked {
        Acked {
            last: Some(Position::Doc(last)),
            delivered,
            bytes: delivered * 10,
            refused: 0,
            skipped: 0,
            reasons: Vec::new(),
            covered: delivered,
            sent: delivered,
        }
    }

    #[test]
    fn moves_only_over_a_contiguous_prefix() {
        let base = Progress {
            cursor: Some(Position::Doc(9)),
            docs: 5,
            ..Progress::default()
        };
        let mut m = LowWaterMark::new(base.clone());
        m.ack(1, b(30, 5));
        m.ack(2, b(45, 5));
        assert_eq!(m.progress(), &base, "batch 0 in flight");
        assert_eq!(m.pending(), 2);
        m.ack(0, b(19, 7));
        assert_eq!(m.progress().cursor, Some(Position::Doc(45)));
        assert_eq!((m.progress().docs, m.progress().bytes), (22, 170));
        assert_eq!(m.pending(), 0);
        m.ack(4, b(80, 1));
        assert_eq!(m.progress().cursor, Some(Position::Doc(45)));
        m.ack(
            3,
            Acked {
                last: Some(Position::Doc(61)),
                delivered: 2,
                bytes: 5,
                refused: 1,
                skipped: 2,
                reasons: vec![
                    ("refused:mapper_parsing_exception".into(), 1),
                    ("skipped:no_source".into(), 2),
                ],
                covered: 5,
                sent: 3,
            },
        );
        let p = m.progress();
        assert_eq!(p.cursor, Some(Position::Doc(80)));
        assert_eq!((p.docs, p.bytes, p.refused, p.skipped), (25, 185, 1, 2));
        assert_eq!(p.reasons["skipped:no_source"], 2);
        assert_eq!(
            p.covered,
            7 + 5 + 5 + 5 + 1,
            "what the batches cover, in order"
        );
    }

    #[test]
    fn a_batch_without_a_last_position_counts_but_keeps_the_cursor() {
        let mut m = LowWaterMark::new(Progress::default());
        m.ack(0, b(3, 2));
        m.ack(
            1,
            Acked {
                last: None,
                ..b(0, 4)
            },
        );
        assert_eq!(m.progress().cursor, Some(Position::Doc(3)));
        assert_eq!(m.progress().docs, 6);
        m.ack(2, b(4, 1));
        assert_eq!(m.progress().cursor, Some(Position::Doc(4)));
    }

    #[test]
    fn documents_sent_count_only_once_the_cursor_passes_them() {
        let mut m = LowWaterMark::new(Progress::default());
        m.ack(1, b(9, 4));
        assert_eq!(m.sent_to_cursor(), 0, "batch 0 in flight");
        m.ack(0, b(3, 2));
        assert_eq!(m.sent_to_cursor(), 6);
        // The first outputs of an input the next batch completes: resent from the cursor.
        m.ack(
            2,
            Acked {
                last: None,
                ..b(0, 5)
            },
        );
        assert_eq!(m.sent_to_cursor(), 6);
        m.ack(3, b(12, 1));
        assert_eq!(m.sent_to_cursor(), 12);
    }

    #[test]
    fn reasons_are_bounded() {
        let mut m = LowWaterMark::new(Progress::default());
        for i in 0..100u64 {
            m.ack(
                i,
                Acked {
                    reasons: vec![(format!("refused:type{i}"), 1)],
                    refused: 1,
                    ..b(i, 0)
                },
            );
        }
        let p = m.progress();
        assert_eq!(p.reasons.len(), MAX_REASONS + 1);
        assert_eq!(p.reasons.values().sum::<u64>(), 100);
        assert_eq!(p.reasons["refused:other"], 100 - MAX_REASONS as u64);
    }
}
