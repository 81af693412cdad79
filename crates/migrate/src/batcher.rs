//! Groups documents, in doc-id order, into bulk batches bounded by a document count and
//! a byte size (action lines included).

use crate::ports::BulkSized;

/// Batch limits. A single document larger than `max_bytes` travels alone.
#[derive(Debug, Clone, Copy)]
pub struct BatchLimits {
    pub max_docs: usize,
    pub max_bytes: usize,
}

impl Default for BatchLimits {
    fn default() -> Self {
        BatchLimits {
            max_docs: 1000,
            max_bytes: 8 << 20,
        }
    }
}

/// Consecutive documents of one work item: every live doc with a doc id in
/// `first_doc..=last_doc` that the source produced, in order.
#[derive(Debug)]
pub struct Batch<D> {
    pub first_doc: u64,
    pub last_doc: u64,
    pub bytes: u64,
    pub docs: Vec<D>,
}

/// Accumulates documents and hands out full batches.
#[derive(Debug)]
pub struct Batcher<D> {
    limits: BatchLimits,
    current: Option<Batch<D>>,
}

impl<D: BulkSized> Batcher<D> {
    pub fn new(limits: BatchLimits) -> Self {
        let limits = BatchLimits {
            max_docs: limits.max_docs.max(1),
            max_bytes: limits.max_bytes.max(1),
        };
        Batcher {
            limits,
            current: None,
        }
    }

    /// Adds a document; returns the batch that was full before it, if any.
    pub fn push(&mut self, doc_id: u64, doc: D) -> Option<Batch<D>> {
        let len = doc.bulk_len() as u64;
        let full = match &self.current {
            Some(b) => {
                b.docs.len() >= self.limits.max_docs
                    || (b.bytes + len > self.limits.max_bytes as u64 && !b.docs.is_empty())
            }
            None => false,
        };
        let done = if full { self.current.take() } else { None };
        let batch = self.current.get_or_insert_with(|| Batch {
            first_doc: doc_id,
            last_doc: doc_id,
            bytes: 0,
            docs: Vec::with_capacity(self.limits.max_docs.min(4096)),
        });
        batch.last_doc = doc_id;
        batch.bytes += len;
        batch.docs.push(doc);
        done
    }

    /// The last, partly filled batch.
    pub fn finish(&mut self) -> Option<Batch<D>> {
        self.current.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Doc(usize);
    impl BulkSized for Doc {
        fn bulk_len(&self) -> usize {
            self.0
        }
    }

    fn drain(limits: BatchLimits, docs: &[(u64, usize)]) -> Vec<(u64, u64, usize, u64)> {
        let mut b = Batcher::new(limits);
        let mut out = Vec::new();
        for &(id, len) in docs {
            if let Some(batch) = b.push(id, Doc(len)) {
                out.push((
                    batch.first_doc,
                    batch.last_doc,
                    batch.docs.len(),
                    batch.bytes,
                ));
            }
        }
        if let Some(batch) = b.finish() {
            out.push((
                batch.first_doc,
                batch.last_doc,
                batch.docs.len(),
                batch.bytes,
            ));
        }
        out
    }

    #[test]
    fn splits_by_count() {
        let docs: Vec<_> = (0..7).map(|i| (i * 2, 10)).collect();
        let got = drain(
            BatchLimits {
                max_docs: 3,
                max_bytes: 1000,
            },
            &docs,
        );
        assert_eq!(got, vec![(0, 4, 3, 30), (6, 10, 3, 30), (12, 12, 1, 10)]);
    }

    #[test]
    fn splits_by_bytes_and_lets_a_huge_doc_travel_alone() {
        let docs = [(1, 40), (2, 40), (3, 40), (4, 500), (5, 10)];
        let got = drain(
            BatchLimits {
                max_docs: 100,
                max_bytes: 100,
            },
            &docs,
        );
        assert_eq!(
            got,
            vec![(1, 2, 2, 80), (3, 3, 1, 40), (4, 4, 1, 500), (5, 5, 1, 10)]
        );
    }

    #[test]
    fn nothing_in_nothing_out() {
        assert!(drain(BatchLimits::default(), &[]).is_empty());
    }
}
