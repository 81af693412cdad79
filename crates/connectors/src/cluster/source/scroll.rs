//! Reading a slice by scroll, for clusters without points in time (Elasticsearch 5.0–7.9,
//! OpenSearch 1.x–2.3): `POST /INDEX/_search?scroll=KEEP` sorted by `_doc` with
//! `slice: {id, max}`, then `POST /_search/scroll` page after page; the scroll is cleared
//! (`DELETE /_search/scroll`) when the item ends, fails or stops.
//!
//! Resume. A scroll context does not outlive a restart (nor its keep-alive), so a resumed
//! item opens a new scroll over its slice and passes over the hits it already gave. A
//! position is `NNNNNNNNNNNNNNNNNNNN-DDDDDDDDDDDDDDDD`: how many hits of the slice were
//! given (zero-padded, so positions order as text) and an order-free 64-bit digest of their
//! `(index, _id)`. Resuming after it reads the first N hits of the new scroll without
//! handing them over and checks that their digest is the same: then the documents given
//! before are exactly those passed over, and the rest of the slice is the rest of the
//! documents. This holds while the index does not change (no writes, deletes or merges that
//! reorder `_doc` — a read-only or force-merged index): if it did, the digest differs and
//! the item fails with that reason instead of losing or doubling documents.
//!
//! Coverage: a scroll counts its hits exactly (`hits.total`, a number before 7.0, an object
//! with `relation: eq` after): every read, whole or resumed, ends with as many hits passed
//! over and given as the slice holds, or fails its item.

use bytes::Bytes;
use cluster::Method;
use coordination::{Cursor, Position, WorkItem};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{source_error, ClusterSource, Hits, Shards};
use engine::document::{Document, Op, Read, Skip};
use engine::error::SourceError;

#[derive(Deserialize)]
struct ScrollPage<'a> {
    #[serde(rename = "_scroll_id", default)]
    scroll_id: Option<String>,
    #[serde(rename = "_shards", default)]
    shards: Option<Shards>,
    /// A shard ran out of the search timeout: its hits are missing with no failure said.
    #[serde(default)]
    timed_out: bool,
    #[serde(borrow)]
    hits: Hits<'a>,
}

/// How far into its slice a scroll read is: hits given and their digest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Mark {
    pub(super) count: u64,
    pub(super) digest: u64,
}

impl Mark {
    fn position(self) -> Position {
        let mut key = String::with_capacity(37);
        self.write(&mut key);
        Position::Key(key)
    }

    /// The count in 20 decimal digits, `-`, the digest in 16 hex digits (as
    /// `{:020}-{:016x}` would, without the formatting machinery: one per document).
    pub(super) fn write(self, key: &mut String) {
        push_digits(key, self.count);
        key.push('-');
        let mut hex = [b'0'; 16];
        for (i, h) in hex.iter_mut().enumerate() {
            *h = HEX[((self.digest >> ((15 - i) * 4)) & 0xf) as usize];
        }
        push_ascii(key, &hex);
    }

    pub(super) fn parse(key: &str) -> Option<Mark> {
        let (count, digest) = key.split_once('-')?;
        if count.len() != 20 || digest.len() != 16 {
            return None;
        }
        Some(Mark {
            count: count.parse().ok()?,
            digest: u64::from_str_radix(digest, 16).ok()?,
        })
    }

    /// One more hit: the digest is a sum of mixed hashes, so the order does not matter.
    pub(super) fn add(&mut self, index: &str, id: &str) {
        self.count += 1;
        self.digest = self.digest.wrapping_add(hash(index, id));
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// `v` in 20 decimal digits, zero-padded (`u64::MAX` has 20).
pub(super) fn push_digits(key: &mut String, mut v: u64) {
    let mut digits = [b'0'; 20];
    let mut i = digits.len();
    while v > 0 && i > 0 {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
    }
    push_ascii(key, &digits);
}

/// Appends bytes known to be ASCII digits or letters in one copy (a position is written
/// per document read, so not a `char` at a time).
fn push_ascii(key: &mut String, ascii: &[u8]) {
    // Never fails: the callers' bytes are ASCII; an empty push would only mean a bug here,
    // which the round-trip tests of the marks would catch.
    key.push_str(std::str::from_utf8(ascii).unwrap_or_default());
}

/// FNV-1a over `index`, a separator and `id`, then a splitmix64 finish: stable across
/// processes and versions (unlike the standard library's hasher).
fn hash(index: &str, id: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in index.bytes().chain([0xff]).chain(id.bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// The exact count of a scroll's hits: a number (before 7.0) or `{value, relation: eq}`.
fn exact_total(total: Option<&Value>) -> Option<u64> {
    match total? {
        Value::Number(n) => n.as_u64(),
        t => t
            .get("relation")
            .and_then(Value::as_str)
            .filter(|r| *r == "eq")
            .and(t.get("value"))
            .and_then(Value::as_u64),
    }
}

impl ClusterSource {
    /// Reads the item's slice by scroll from `after` (or the item's start). As for the
    /// point-in-time reader, only the requests run inside `block_on`, never `emit`.
    pub(super) fn read_scroll(
        &self,
        item: &WorkItem,
        (slice, slices): (u32, u32),
        after: &Cursor,
        emit: &mut dyn FnMut(Read) -> bool,
    ) -> Result<(), SourceError> {
        let index = &item.group;
        let where_ = format!("{}/{index} slice {}", self.location, item.part);
        if item.until.is_some() {
            return Err(SourceError::item(format!(
                "{where_}: a scroll reads whole slices; the item has an end position"
            )));
        }
        let resume = match after.as_ref().or(item.after.as_ref()) {
            None => Mark::default(),
            Some(Position::Key(k)) => Mark::parse(k).ok_or_else(|| {
                SourceError::item(format!(
                    "{where_}: cursor {k:?} is not a scroll position (count-digest)"
                ))
            })?,
            Some(Position::Doc(d)) => {
                return Err(SourceError::item(format!(
                    "{where_}: cursor {d} is a point-in-time position, not a scroll one"
                )))
            }
        };
        let mut body = json!({
            "size": self.opts.page_size,
            "sort": ["_doc"],
        });
        if slices > 1 {
            body["slice"] = json!({"id": slice, "max": slices});
        }
        let path = format!(
            "/{}/_search?scroll={}",
            cluster::encode_segment(index),
            self.opts.keep_alive
        );
        let mut scroll_id: Option<String> = None;
        let result = self.scroll_pages(&where_, &path, body, resume, &mut scroll_id, emit);
        if let Some(id) = scroll_id {
            self.runtime.block_on(async {
                let body = json!({ "scroll_id": [id] });
                if let Err(e) = self
                    .client
                    .request(Method::DELETE, "/_search/scroll", Some(&body))
                    .await
                {
                    tracing::debug!("clearing a scroll on {}: {e}", self.location);
                }
            });
        }
        result
    }

    fn scroll_pages(
        &self,
        where_: &str,
        open_path: &str,
        open_body: Value,
        resume: Mark,
        scroll_id: &mut Option<String>,
        emit: &mut dyn FnMut(Read) -> bool,
    ) -> Result<(), SourceError> {
        let mut mark = Mark::default();
        let mut expected: Option<u64> = None;
        let mut first = true;
        loop {
            let answer = self.runtime.block_on(async {
                match scroll_id.as_deref() {
                    None => {
                        self.client
                            .request(Method::POST, open_path, Some(&open_body))
                            .await
                    }
                    Some(id) => {
                        let body = json!({"scroll": self.opts.keep_alive, "scroll_id": id});
                        self.client
                            .request(Method::POST, "/_search/scroll", Some(&body))
                            .await
                    }
                }
            });
            let r = match answer {
                Ok(r) if r.status == 404 && scroll_id.is_some() => {
                    // Expired (not used for its keep-alive) or lost with a node: nothing
                    // to clear, and the item goes back to its last checkpoint.
                    *scroll_id = None;
                    return Err(SourceError::item(format!(
                        "{where_}: the scroll context is gone after {} hits (expired: keep-alive {}, or lost by the cluster); the item is read again from its last checkpoint",
                        mark.count, self.opts.keep_alive
                    )));
                }
                other => other
                    .and_then(|r| r.error_for_status())
                    .map_err(|e| source_error(e, where_))?,
            };
            let page: ScrollPage = serde_json::from_slice(&r.body).map_err(|e| {
                SourceError::item(format!(
                    "{where_}: a scroll answer that is not a page of hits: {e}"
                ))
            })?;
            match page.scroll_id {
                Some(id) => *scroll_id = Some(id),
                None if scroll_id.is_none() => {
                    return Err(SourceError::item(format!(
                        "{where_}: the search answer has no _scroll_id"
                    )))
                }
                None => {}
            }
            if page.timed_out {
                return Err(SourceError::item(format!(
                    "{where_}: the scroll page timed out on a shard after {} hits (its hits are missing from the page); the item is read again from its last checkpoint",
                    mark.count
                )));
            }
            if let Some(why) = page.shards.as_ref().and_then(Shards::failure) {
                // The page lacks that shard's hits: given as they are, documents would be
                // missing with nothing to count them. The item is read again instead.
                return Err(SourceError::item(format!(
                    "{where_}: the scroll answered without some of its hits after {} hits: {why}; the item is read again from its last checkpoint",
                    mark.count
                )));
            }
            if first {
                first = false;
                expected = exact_total(page.hits.total.as_ref());
                if let Some(n) = expected.filter(|n| *n < resume.count) {
                    return Err(SourceError::item(format!(
                        "{where_}: the slice now holds {n} hits, fewer than the {} already given: the index changed since; it cannot be resumed by scroll",
                        resume.count
                    )));
                }
            }
            if page.hits.hits.is_empty() {
                if mark.count < resume.count {
                    return Err(SourceError::item(format!(
                        "{where_}: the slice ended after {} hits, before the {} already given: the index changed since; it cannot be resumed by scroll",
                        mark.count, resume.count
                    )));
                }
                if let Some(n) = expected.filter(|n| *n != mark.count) {
                    return Err(SourceError::coverage(format!(
                        "{where_}: the scroll holds {n} hits for the slice, but {} were read: hits were lost on the way; the item fails rather than end as done",
                        mark.count
                    )));
                }
                return Ok(());
            }
            for h in page.hits.hits {
                #[cfg(test)]
                if self.forget_id.as_deref() == Some(h.id.as_str()) {
                    continue;
                }
                mark.add(&h.index, &h.id);
                if mark.count <= resume.count {
                    if mark.count == resume.count && mark != resume {
                        return Err(SourceError::item(format!(
                            "{where_}: the first {} hits of the slice are not the documents already given (their digest differs): the index changed or merged since; it cannot be resumed by scroll",
                            resume.count
                        )));
                    }
                    continue;
                }
                let position = mark.position();
                let doc_type = h
                    .doc_type
                    .filter(|_| self.typed)
                    .map(|t| std::sync::Arc::<str>::from(t.as_str()));
                let read = match h.source {
                    Some(s) => Read::Doc(Document {
                        position,
                        op: Op::Index,
                        index: h.index.as_str().into(),
                        id: h.id,
                        doc_type,
                        routing: h.routing,
                        source: Bytes::copy_from_slice(s.get().as_bytes()),
                    }),
                    None => Read::Skip(Skip {
                        position,
                        index: h.index.as_str().into(),
                        id: Some(h.id),
                        doc_type,
                        routing: h.routing,
                        reason: "no_source",
                        detail: format!("{where_}: the hit has no _source"),
                        source: None,
                    }),
                };
                if !emit(read) {
                    return Ok(());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_order_as_text_and_read_back() {
        let mut m = Mark::default();
        let mut last = None;
        for i in 0..120 {
            m.add("idx", &i.to_string());
            let p = m.position();
            assert!(last.as_ref().is_none_or(|l| *l < p), "{p:?}");
            let Position::Key(k) = &p else { unreachable!() };
            assert_eq!(Mark::parse(k), Some(m));
            last = Some(p);
        }
        // the digest does not depend on the order
        let (mut a, mut b) = (Mark::default(), Mark::default());
        for id in ["x", "y", "z"] {
            a.add("i", id);
        }
        for id in ["z", "x", "y"] {
            b.add("i", id);
        }
        assert_eq!(a, b);
        b.add("i", "w");
        assert_ne!(a.digest, b.digest);
        for (count, digest) in [
            (0, 0),
            (1, 0xabc),
            (u64::MAX, u64::MAX),
            (1234567890, 1 << 63),
        ] {
            let mut key = String::new();
            Mark { count, digest }.write(&mut key);
            assert_eq!(key, format!("{count:020}-{digest:016x}"));
        }
        assert_eq!(Mark::parse("12"), None);
        assert_eq!(Mark::parse("00000000000000000001-zzzzzzzzzzzzzzzz"), None);
    }
}
