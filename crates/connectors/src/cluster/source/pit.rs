//! Reading a slice through a point in time (Elasticsearch ≥ 7.15, OpenSearch ≥ 3.3):
//! `POST /_search` with `pit`, `slice: {id, max}`, sorted by `_shard_doc`, page after page
//! by `search_after`.
//!
//! One point in time per index, opened by the plan and recorded in each item's extent:
//! the slices of an index are cut from the same view (Elasticsearch guarantees disjoint,
//! complete slices only within one point in time: elastic/elasticsearch#74457), and a
//! resumed read (a restart, a retry, a successor) continues in it, where a document's
//! `_shard_doc` does not change. Every page extends its keep-alive; the reader that ends
//! the last slice of an index in this process closes it, else it expires.
//!
//! A position is `NNNNNNNNNNNNNNNNNNNN-DDDDDDDDDDDDDDDD-TSSSSSSSSSSSSSSSSSSSS`: how many
//! hits of the slice were given and their order-free digest (as a scroll position), then
//! `T` `s` when the hit's `_shard_doc` (`S…`) is of the plan's point in time, `o` when of
//! a point in time of the read's own. A `_shard_doc` is resumed after only in the point in
//! time it came from. When that is gone (expired, closed, lost with a node), the read
//! starts over in a new point in time and passes over as many hits as were given, whose
//! digest must be that of the documents given: then the rest is exactly the rest, else
//! the item fails (the index changed) rather than lose or double a document.
//!
//! Coverage: when the slice ends, the count of its hits is asked by a second route
//! (`size: 0`, `track_total_hits: true`, the same point in time and slice) and must equal
//! the hits given and passed over, or the item fails (retried from where the run started).
//! A page that timed out (`timed_out: true`, which a search timeout answers with
//! `_shards.failed: 0`) or lost a shard fails the item too; `allow_partial_search_results
//! =false` asks the cluster to fail such a search itself.

use bytes::Bytes;
use cluster::Method;
use coordination::{Cursor, Position, WorkItem};
use serde_json::{json, Value};

use super::scroll::{push_digits, Mark};
use super::{source_error, ClusterSource, Extent, Page, PitApi, Shards};
use engine::document::{Document, Op, Read, Skip};
use engine::error::{Severity, SourceError};

/// How many times one read starts over in a new point in time before it fails.
const REOPENINGS: u32 = 3;

/// How many times the plan asks for an index's count before the plan fails.
const PLAN_COUNT_ATTEMPTS: u32 = 5;

/// Where a point-in-time read is: hits given (with their digest) and the last hit's
/// `_shard_doc`, of the plan's point in time or of the read's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PitMark {
    pub(super) mark: Mark,
    pub(super) shared: bool,
    pub(super) shard_doc: u64,
}

impl PitMark {
    /// `{count:020}-{digest:016x}-{s|o}{shard_doc:020}`, written without `format!` (one per
    /// document read).
    pub(super) fn position(self) -> Position {
        let mut key = String::with_capacity(58);
        self.mark.write(&mut key);
        key.push('-');
        key.push(if self.shared { 's' } else { 'o' });
        push_digits(&mut key, self.shard_doc);
        Position::Key(key)
    }

    pub(super) fn parse(key: &str) -> Option<PitMark> {
        let (mark, rest) = key.rsplit_once('-')?;
        let mark = Mark::parse(mark)?;
        let shared = match rest.get(..1)? {
            "s" => true,
            "o" => false,
            _ => return None,
        };
        let doc = rest.get(1..)?;
        if doc.len() != 20 {
            return None;
        }
        Some(PitMark {
            mark,
            shared,
            shard_doc: doc.parse().ok()?,
        })
    }
}

/// The point in time a read is in.
struct View {
    id: String,
    /// The plan's (shared by the index's slices) or the read's own (closed at its end).
    shared: bool,
}

/// What one search answered.
enum Answer {
    /// The answer's body as the client holds it (not copied: a page is megabytes).
    Page(Bytes),
    /// 404: the point in time is gone (expired, closed, or lost by the cluster).
    Gone,
}

impl ClusterSource {
    /// Reads the item's slice of its extent through a point in time from `after`.
    pub(super) fn read_pit(
        &self,
        api: PitApi,
        item: &WorkItem,
        extent: &Extent,
        after: &Cursor,
        emit: &mut dyn FnMut(Read) -> bool,
    ) -> Result<(), SourceError> {
        let index = &item.group;
        let where_ = format!("{}/{index} slice {}", self.location, extent.slice);
        if item.until.is_some() {
            return Err(SourceError::item(format!(
                "{where_}: a point-in-time read covers whole slices; the item has an end position"
            )));
        }
        let resume = match after.as_ref().or(item.after.as_ref()) {
            None => None,
            Some(Position::Key(k)) => Some(PitMark::parse(k).ok_or_else(|| {
                SourceError::item(format!(
                    "{where_}: cursor {k:?} is not a point-in-time position (count-digest-shard_doc)"
                ))
            })?),
            Some(Position::Doc(d)) => {
                return Err(SourceError::item(format!(
                    "{where_}: cursor {d} is a bare _shard_doc, which no point in time of the plan can continue"
                )))
            }
        };
        let mut view = match &extent.pit {
            Some(id) => View {
                id: id.clone(),
                shared: true,
            },
            None => View {
                id: self.runtime.block_on(self.open_pit(api, index))?,
                shared: false,
            },
        };
        let result = self.pit_pages(api, item, extent, &where_, resume, &mut view, emit);
        if !view.shared {
            self.runtime.block_on(self.close_pit(api, &view.id));
        }
        if result.as_ref().is_ok_and(|ended| *ended) {
            if let Some(id) = extent.pit.as_deref().filter(|_| view.shared) {
                self.slice_ended(api, id, extent);
            }
        }
        result.map(|_| ())
    }

    /// The pages of one read; `Ok(true)` when the slice was read to its end and proved.
    #[allow(clippy::too_many_arguments)]
    fn pit_pages(
        &self,
        api: PitApi,
        item: &WorkItem,
        extent: &Extent,
        where_: &str,
        resume: Option<PitMark>,
        view: &mut View,
        emit: &mut dyn FnMut(Read) -> bool,
    ) -> Result<bool, SourceError> {
        let index = &item.group;
        // Hits given (and passed over) in this view, and the last `_shard_doc` there.
        let mut mark = Mark::default();
        let mut after: Option<u64> = None;
        // Hits already given by an earlier read that this one passes over, proving by
        // their digest that they are the same documents.
        let mut pass_over = Mark::default();
        match resume {
            Some(r) if r.shared && view.shared => {
                mark = r.mark;
                after = Some(r.shard_doc);
            }
            Some(r) => pass_over = r.mark,
            None => {}
        }
        let mut reopened = 0u32;
        loop {
            let mut body = json!({
                "size": self.opts.page_size,
                "sort": [{"_shard_doc": "asc"}],
                "pit": {"id": view.id, "keep_alive": self.opts.keep_alive},
                "track_total_hits": false,
            });
            if extent.slices > 1 {
                body["slice"] = json!({"id": extent.slice, "max": extent.slices});
            }
            if let Some(a) = after {
                body["search_after"] = json!([a]);
            }
            let bytes = match self.pit_search(where_, &body)? {
                Answer::Page(b) => b,
                Answer::Gone => {
                    reopened += 1;
                    if reopened > REOPENINGS {
                        return Err(SourceError::item(format!(
                            "{where_}: the point in time was gone {REOPENINGS} times in one read (keep-alive {}); the item is read again from its last checkpoint",
                            self.opts.keep_alive
                        )));
                    }
                    // Start over in a new view, passing over what was given in this one
                    // and before it.
                    let given = if mark.count >= pass_over.count {
                        mark
                    } else {
                        pass_over
                    };
                    tracing::warn!(
                        "{where_}: the point in time is gone (expired: keep-alive {}, closed, or lost by the cluster) after {} hits; reading the slice again in a new one, passing over those hits (proved by their digest)",
                        self.opts.keep_alive,
                        given.count
                    );
                    if !view.shared {
                        self.runtime.block_on(self.close_pit(api, &view.id));
                    }
                    *view = View {
                        id: self.runtime.block_on(self.open_pit(api, index))?,
                        shared: false,
                    };
                    pass_over = given;
                    mark = Mark::default();
                    after = None;
                    continue;
                }
            };
            let page: Page = serde_json::from_slice(&bytes).map_err(|e| {
                SourceError::item(format!(
                    "{where_}: a search answer that is not a page of hits: {e}"
                ))
            })?;
            if let Some(id) = page.pit_id.clone() {
                view.id = id;
            }
            if page.timed_out {
                return Err(SourceError::item(format!(
                    "{where_}: the point-in-time page timed out on a shard after {} hits (its hits are missing from the page); the item is read again from its last checkpoint",
                    mark.count
                )));
            }
            if let Some(why) = page.shards.as_ref().and_then(Shards::failure) {
                // The page lacks that shard's hits: given as they are, documents would be
                // missing with nothing to count them. The item is read again instead.
                return Err(SourceError::item(format!(
                    "{where_}: the point in time answered without some of its hits after {} hits: {why}; the item is read again from its last checkpoint",
                    mark.count
                )));
            }
            if page.hits.hits.is_empty() {
                if mark.count < pass_over.count {
                    return Err(SourceError::item(format!(
                        "{where_}: the slice ended after {} hits in a new point in time, before the {} already given: the index changed since; the slice cannot be resumed",
                        mark.count, pass_over.count
                    )));
                }
                self.prove_count(extent, where_, &view.id, mark.count)?;
                return Ok(true);
            }
            for h in page.hits.hits {
                let Some(pos) = h.sort.first().and_then(Value::as_u64) else {
                    return Err(SourceError::item(format!(
                        "{where_}: hit {} has no _shard_doc sort value",
                        h.id
                    )));
                };
                if after.is_some_and(|a| pos <= a) {
                    return Err(SourceError::item(format!(
                        "{where_}: sort values went back ({pos} after {after:?})"
                    )));
                }
                after = Some(pos);
                #[cfg(test)]
                if self.forget_id.as_deref() == Some(h.id.as_str()) {
                    continue;
                }
                mark.add(&h.index, &h.id);
                if mark.count <= pass_over.count {
                    if mark.count == pass_over.count && mark != pass_over {
                        return Err(SourceError::item(format!(
                            "{where_}: in a new point in time, the first {} hits of the slice are not the documents already given (their digest differs): the index changed since; the slice cannot be resumed",
                            pass_over.count
                        )));
                    }
                    continue;
                }
                let position = PitMark {
                    mark,
                    shared: view.shared,
                    shard_doc: pos,
                }
                .position();
                let read = match h.source {
                    Some(s) => Read::Doc(Document {
                        position,
                        op: Op::Index,
                        index: h.index.as_str().into(),
                        id: h.id,
                        doc_type: None,
                        routing: h.routing,
                        source: Bytes::copy_from_slice(s.get().as_bytes()),
                    }),
                    None => Read::Skip(Skip {
                        position,
                        index: h.index.as_str().into(),
                        id: Some(h.id),
                        doc_type: None,
                        routing: h.routing,
                        reason: "no_source",
                        detail: format!("{where_}: the hit has no _source"),
                        source: None,
                    }),
                };
                if !emit(read) {
                    return Ok(false);
                }
            }
        }
    }

    /// One search of a point in time, with partial results refused.
    fn pit_search(&self, where_: &str, body: &Value) -> Result<Answer, SourceError> {
        let answer = self.runtime.block_on(async {
            self.client
                .request(
                    Method::POST,
                    "/_search?allow_partial_search_results=false",
                    Some(body),
                )
                .await
        });
        match answer {
            Ok(r) if r.status == 404 => Ok(Answer::Gone),
            other => {
                let r = other
                    .and_then(|r| r.error_for_status())
                    .map_err(|e| source_error(e, where_))?;
                Ok(Answer::Page(r.body))
            }
        }
    }

    /// The second route: the count of the slice's hits in the same point in time, which
    /// must be what the read walked.
    fn prove_count(
        &self,
        extent: &Extent,
        where_: &str,
        pit: &str,
        walked: u64,
    ) -> Result<(), SourceError> {
        let slice = (extent.slices > 1).then_some((extent.slice, extent.slices));
        let what = format!("{where_}: counting the slice's hits");
        let n = self.pit_count(&what, pit, slice)?;
        if n == walked {
            return Ok(());
        }
        Err(SourceError::coverage(format!(
            "{where_}: the point in time holds {n} hits for the slice, but {walked} were read: hits were lost on the way; the item fails rather than end as done"
        )))
    }

    /// The index's total for the plan: the hits of its point in time (the view every
    /// slice reads), counted exactly.
    pub(super) fn count_in_pit(&self, index: &str, pit: &str) -> Result<u64, SourceError> {
        let what = format!(
            "{}/{index}: counting the documents of the plan's point in time",
            self.location
        );
        // A count that timed out or lost a shard is asked again (as a page would be).
        let mut attempt = 1;
        loop {
            match self.pit_count(&what, pit, None) {
                Ok(n) => return Ok(n),
                Err(e) if attempt < PLAN_COUNT_ATTEMPTS && e.severity != Severity::Fatal => {
                    tracing::warn!("{}; asking again", e.message);
                    attempt += 1;
                    std::thread::sleep(std::time::Duration::from_millis(200 * u64::from(attempt)));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The exact count of the hits of `pit` (of one slice, or all): `size: 0`,
    /// `track_total_hits: true` (a `relation: eq` total; a timed-out or partial answer is
    /// no count).
    fn pit_count(
        &self,
        what: &str,
        pit: &str,
        slice: Option<(u32, u32)>,
    ) -> Result<u64, SourceError> {
        let mut body = json!({
            "size": 0,
            "track_total_hits": true,
            "pit": {"id": pit, "keep_alive": self.opts.keep_alive},
        });
        if let Some((id, max)) = slice {
            body["slice"] = json!({"id": id, "max": max});
        }
        let bytes = match self.pit_search(what, &body)? {
            Answer::Page(b) => b,
            Answer::Gone => {
                return Err(SourceError::item(format!(
                    "{what}: the point in time is gone; the item is read again"
                )))
            }
        };
        let page: Page = serde_json::from_slice(&bytes)
            .map_err(|e| SourceError::item(format!("{what}: not a search answer: {e}")))?;
        if page.timed_out || page.shards.as_ref().and_then(Shards::failure).is_some() {
            return Err(SourceError::item(format!(
                "{what}: the count timed out or lost a shard; the item is read again"
            )));
        }
        page.hits
            .total
            .as_ref()
            .filter(|t| t.get("relation").and_then(Value::as_str) == Some("eq"))
            .and_then(|t| t.get("value").and_then(Value::as_u64))
            .ok_or_else(|| {
                SourceError::item(format!(
                    "{what}: no exact hits.total in the answer; the item is read again"
                ))
            })
    }

    /// A slice of the plan's point in time was read to its end here: when every slice of
    /// the index has been, nothing needs the point in time any more and it is closed.
    fn slice_ended(&self, api: PitApi, pit: &str, extent: &Extent) {
        let all = {
            let mut ended = self.ended_slices.lock().unwrap_or_else(|e| e.into_inner());
            let set = ended.entry(pit.to_string()).or_default();
            set.insert(extent.slice);
            set.len() as u64 >= u64::from(extent.slices)
        };
        if all {
            self.runtime.block_on(self.close_pit(api, pit));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pit_marks_order_as_text_and_read_back() {
        let mut m = Mark::default();
        let mut last: Option<Position> = None;
        for i in 0..50u64 {
            m.add("i", &i.to_string());
            for (shared, doc) in [(true, 1000 - i), (false, i << 33)] {
                let p = PitMark {
                    mark: m,
                    shared,
                    shard_doc: doc,
                };
                let Position::Key(k) = p.position() else {
                    unreachable!()
                };
                assert_eq!(PitMark::parse(&k), Some(p), "{k}");
                let mark = format!("{:020}-{:016x}", m.count, m.digest);
                let side = if shared { 's' } else { 'o' };
                assert_eq!(k, format!("{mark}-{side}{doc:020}"));
            }
            let p = PitMark {
                mark: m,
                shared: true,
                shard_doc: 1000 - i,
            }
            .position();
            assert!(last.as_ref().is_none_or(|l| *l < p), "{p:?}");
            last = Some(p);
        }
        assert_eq!(
            PitMark::parse("00000000000000000001-0000000000000001"),
            None
        );
        assert_eq!(
            PitMark::parse("00000000000000000001-0000000000000001-x00000000000000000001"),
            None
        );
    }
}
