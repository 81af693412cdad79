//! Bulk request bodies, framed once: one action line and the untouched `_source` bytes per
//! document, copied into a single buffer (no JSON tree is ever built). Each document keeps
//! its place in the buffer, so a retry or a split re-sends slices of it, never re-encodes.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;

use super::{ItemError, OpType};
use crate::version::{DocAddressing, Target};

/// What a bulk entry does with its document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BulkAction {
    /// Write the document (`index`, or `create` with [`OpType::Create`]).
    #[default]
    Write,
    /// Remove the document with this id (no source line).
    Delete,
    /// Write the document only if its id is absent (`create`, whatever the encoder's
    /// [`OpType`]): an existing document counts as delivered — what a retry or a re-run
    /// into a data stream (which takes only `create`) needs.
    Create,
}

/// Who a bulk entry is about: what the response is matched with and what a failure record
/// names. Built once per document and moved, never copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocMeta {
    pub index: Arc<str>,
    pub id: String,
    /// Mapping type; only sent to typed (ES ≤ 6) targets, where `None` means `_doc`.
    pub doc_type: Option<Arc<str>>,
    pub routing: Option<String>,
}

/// An entry of a body: where its bytes are and who it is about. The target index is a
/// slot of [`BulkBody`]'s index table, so a document's `Arc<str>` is released on the
/// thread that framed it instead of being shared, count and all, with the thread that
/// sends the body (one table per body, not one reference count per document).
#[derive(Debug)]
pub(crate) struct Part {
    /// The entry's bytes in the body (action line and source line).
    pub range: Range<usize>,
    /// Where its source line starts (== `range.end` for a delete).
    pub source_at: usize,
    pub delete: bool,
    /// A [`BulkAction::Create`]: a version conflict means delivered.
    pub once: bool,
    /// Slot of its target index in the body's index table.
    index: u32,
    id: Key,
    doc_type: Option<Arc<str>>,
    routing: Option<Key>,
}

impl Part {
    /// The document's `_id`; `buf` is the body the part is an entry of.
    pub fn id<'b>(&'b self, buf: &'b [u8]) -> &'b str {
        self.id.get(buf)
    }

    /// Who the entry is about, for a failure record.
    pub fn meta(self, buf: &[u8], indices: &[Arc<str>]) -> DocMeta {
        DocMeta {
            index: indices[self.index as usize].clone(),
            id: self.id.into_string(buf),
            doc_type: self.doc_type,
            routing: self.routing.map(|r| r.into_string(buf)),
        }
    }
}

/// A string of an entry's action line (`_id`, routing): where it stands in the body when
/// it was written there as is (no JSON escape), else its own copy. The document's own
/// `String` is then freed by the thread that framed it, not by the one that sends.
#[derive(Debug)]
enum Key {
    InBody(Range<usize>),
    Owned(String),
}

impl Key {
    fn new(s: String, at: Option<Range<usize>>) -> Key {
        match at {
            Some(r) => Key::InBody(r),
            None => Key::Owned(s),
        }
    }

    fn get<'b>(&'b self, buf: &'b [u8]) -> &'b str {
        match self {
            // Bytes copied from a `&str` with nothing escaped: the range is that string.
            Key::InBody(r) => std::str::from_utf8(&buf[r.clone()])
                .expect("a key's range holds the bytes of the str written there"),
            Key::Owned(s) => s,
        }
    }

    fn into_string(self, buf: &[u8]) -> String {
        match self {
            Key::Owned(s) => s,
            k => k.get(buf).to_string(),
        }
    }
}

/// A body taken apart for sending: its bytes, its entries, the index table their `index`
/// slots refer to, and whether any entry is a delete (known without walking the entries).
pub(crate) struct Framed {
    pub buf: Bytes,
    pub parts: Vec<Part>,
    pub indices: Vec<Arc<str>>,
    pub any_delete: bool,
}

/// One `_bulk` request body and the documents in it, in order.
#[derive(Debug, Default)]
pub struct BulkBody {
    buf: Vec<u8>,
    entries: Vec<Part>,
    /// The target indices of the entries; consecutive documents of one index share a slot.
    indices: Vec<Arc<str>>,
    /// Some entry is a delete.
    any_delete: bool,
    source_bytes: u64,
}

impl BulkBody {
    /// An empty body with room for about `bytes` bytes in `docs` documents.
    pub fn with_capacity(bytes: usize, docs: usize) -> BulkBody {
        BulkBody {
            buf: Vec::with_capacity(bytes),
            entries: Vec::with_capacity(docs),
            indices: Vec::new(),
            any_delete: false,
            source_bytes: 0,
        }
    }

    /// Documents in the body.
    pub fn docs(&self) -> usize {
        self.entries.len()
    }

    /// Bytes of the body.
    pub fn bytes(&self) -> usize {
        self.buf.len()
    }

    /// `_source` bytes of the documents.
    pub fn source_bytes(&self) -> u64 {
        self.source_bytes
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The body as sent (what the tests compare; senders take it apart with `into_parts`).
    #[cfg(test)]
    fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// The body taken apart for sending.
    pub(crate) fn into_parts(self) -> Framed {
        Framed {
            buf: Bytes::from(self.buf),
            parts: self.entries,
            indices: self.indices,
            any_delete: self.any_delete,
        }
    }

    /// The index table slot of `index`: the last one when it is the same index (the
    /// usual case, a body holds documents of one index), else a new slot.
    fn index_slot(&mut self, index: &Arc<str>) -> u32 {
        match self.indices.last() {
            Some(last) if Arc::ptr_eq(last, index) || **last == **index => {}
            _ => self.indices.push(index.clone()),
        }
        // At most one slot per entry, and entries are bounded by the body's size.
        (self.indices.len() - 1) as u32
    }
}

/// A document that can never be sent, given back with why.
#[derive(Debug, Clone)]
pub struct Unframed {
    pub meta: DocMeta,
    pub error: ItemError,
}

/// Writes action lines for one target dialect.
#[derive(Debug, Clone)]
pub struct BulkEncoder {
    op: OpType,
    dialect: DocAddressing,
    /// ES 5 spells `_routing` and `_version`.
    underscored: bool,
    external_versioning: bool,
    /// No entry may be larger.
    hard_max_bytes: usize,
    /// Action lines carry no `_id`: the target generates one (OpenSearch Serverless
    /// time-series and vector-search collections refuse ids). A delete cannot be sent.
    server_ids: bool,
}

impl BulkEncoder {
    pub fn new(
        target: &Target,
        op: OpType,
        external_versioning: bool,
        hard_max_bytes: usize,
    ) -> BulkEncoder {
        BulkEncoder {
            op,
            dialect: target.dialect(),
            underscored: target.underscored_bulk_keys(),
            external_versioning,
            hard_max_bytes,
            server_ids: false,
        }
    }

    /// The same encoder writing action lines without `_id` (the target generates ids)
    /// when `on`.
    pub fn with_server_generated_ids(mut self, on: bool) -> BulkEncoder {
        self.server_ids = on;
        self
    }

    /// Action lines carry no `_id`.
    pub fn server_generated_ids(&self) -> bool {
        self.server_ids
    }

    /// Appends one document to `body`, or gives its meta back with the reason it can never
    /// be sent (empty source, too large, no version under external versioning; status 0);
    /// the body is then unchanged.
    pub fn push(
        &self,
        body: &mut BulkBody,
        action: BulkAction,
        meta: DocMeta,
        version: Option<u64>,
        source: &[u8],
    ) -> Result<(), Box<Unframed>> {
        let start = body.buf.len();
        let slots = body.indices.len();
        let index = body.index_slot(&meta.index);
        // The document's own reference to its index is released before its bytes are
        // copied (the table holds one): a locked decrement right after the copy of the
        // source waited for those stores, a third of this function's time in a profile.
        let DocMeta {
            index: name,
            id,
            doc_type,
            routing,
        } = meta;
        drop(name);
        let keys = EntryKeys {
            index: &body.indices[index as usize],
            id: &id,
            doc_type: doc_type.as_deref(),
            routing: routing.as_deref(),
        };
        let framed = match self.frame(&mut body.buf, action, keys, version, source) {
            Ok(f) => f,
            Err(error) => {
                let name = body.indices[index as usize].clone();
                // A slot made for this document alone is not kept.
                body.indices.truncate(slots);
                let meta = DocMeta {
                    index: name,
                    id,
                    doc_type,
                    routing,
                };
                return Err(Box::new(Unframed { meta, error }));
            }
        };
        body.source_bytes += framed.source_len as u64;
        body.any_delete |= action == BulkAction::Delete;
        body.entries.push(Part {
            range: start..body.buf.len(),
            source_at: framed.source_at,
            delete: action == BulkAction::Delete,
            once: action == BulkAction::Create,
            index,
            id: Key::new(id, framed.id_at),
            doc_type,
            routing: routing.map(|r| Key::new(r, framed.routing_at)),
        });
        Ok(())
    }

    /// Appends one entry (action line, and the source on one line unless it is a delete) to
    /// `buf`, or leaves `buf` unchanged and says why the document can never be sent. The
    /// one place bulk entries are written: bodies for a cluster and bulk files alike.
    pub fn frame(
        &self,
        buf: &mut Vec<u8>,
        action: BulkAction,
        keys: EntryKeys<'_>,
        version: Option<u64>,
        source: &[u8],
    ) -> Result<Framing, ItemError> {
        let refuse = |error_type: &str, reason: String| ItemError {
            status: 0,
            error_type: error_type.into(),
            reason,
        };
        let start = buf.len();
        let source = trim_ascii(source);
        if action != BulkAction::Delete && source.is_empty() {
            return Err(refuse("invalid_document", "empty _source".into()));
        }
        if self.server_ids && action == BulkAction::Delete {
            return Err(refuse(
                "invalid_document",
                format!(
                    "a delete names its document by id, and the target generates ids \
                     (--server-generated-ids): delete [{}] cannot be sent",
                    keys.id
                ),
            ));
        }
        if self.external_versioning && version.is_none() {
            return Err(refuse(
                "invalid_document",
                "external versioning requested but the document has no version".into(),
            ));
        }
        buf.reserve(source.len() + keys.id.len() + keys.index.len() + 48);
        buf.extend_from_slice(match (action, self.op) {
            (BulkAction::Delete, _) => b"{\"delete\":{\"_index\":",
            (BulkAction::Create, _) => b"{\"create\":{\"_index\":",
            (BulkAction::Write, OpType::Index) => b"{\"index\":{\"_index\":",
            (BulkAction::Write, OpType::Create) => b"{\"create\":{\"_index\":",
        });
        write_json_str(buf, keys.index);
        // Without an id the entry's own id stays known (owned, not in the body) for
        // failure records and counts.
        let id_at = if self.server_ids {
            None
        } else {
            buf.extend_from_slice(b",\"_id\":");
            write_json_str(buf, keys.id)
        };
        if self.dialect == DocAddressing::Typed {
            buf.extend_from_slice(b",\"_type\":");
            write_json_str(buf, keys.doc_type.unwrap_or("_doc"));
        }
        let mut routing_at = None;
        if let Some(r) = keys.routing {
            buf.extend_from_slice(if self.underscored {
                b",\"_routing\":"
            } else {
                b",\"routing\":"
            });
            routing_at = write_json_str(buf, r);
        }
        if let (true, Some(v)) = (self.external_versioning, version) {
            buf.extend_from_slice(if self.underscored {
                b",\"_version\":"
            } else {
                b",\"version\":"
            });
            buf.extend_from_slice(v.to_string().as_bytes());
            buf.extend_from_slice(if self.underscored {
                b",\"_version_type\":\"external\""
            } else {
                b",\"version_type\":\"external\""
            });
        }
        buf.extend_from_slice(b"}}\n");
        let source_at = buf.len();
        if action != BulkAction::Delete {
            // A raw line break can only be whitespace in valid JSON (inside strings it must be
            // escaped), so replacing it by a space keeps the document and the framing intact.
            if memchr::memchr2(b'\n', b'\r', source).is_some() {
                buf.extend(
                    source
                        .iter()
                        .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b }),
                );
            } else {
                buf.extend_from_slice(source);
            }
            buf.push(b'\n');
        }
        let len = buf.len() - start;
        if len > self.hard_max_bytes {
            buf.truncate(start);
            return Err(refuse(
                "document_too_large",
                format!(
                    "the bulk entry takes {len} bytes, more than the {} byte request ceiling",
                    self.hard_max_bytes
                ),
            ));
        }
        let source_len = if action == BulkAction::Delete {
            0
        } else {
            source.len()
        };
        Ok(Framing {
            source_at,
            source_len,
            id_at,
            routing_at,
        })
    }
}

/// Who a bulk entry is about, borrowed: what [`BulkEncoder::frame`] writes in its action
/// line.
#[derive(Debug, Clone, Copy)]
pub struct EntryKeys<'a> {
    pub index: &'a str,
    pub id: &'a str,
    /// Written only for typed (ES ≤ 6) targets, where `None` means `_doc`.
    pub doc_type: Option<&'a str>,
    pub routing: Option<&'a str>,
}

/// Where [`BulkEncoder::frame`] put an entry's source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Framing {
    /// Offset of the source line in the buffer (its end for a delete).
    pub source_at: usize,
    /// Bytes of `_source` written (trimmed; 0 for a delete).
    pub source_len: usize,
    /// Where the `_id` stands in the buffer as is, when writing it escaped nothing.
    pub id_at: Option<Range<usize>>,
    /// The same for the routing.
    pub routing_at: Option<Range<usize>>,
}

fn trim_ascii(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &b[start..end]
}

/// Write `s` as a JSON string literal; where its bytes stand in `buf` when nothing had to
/// be escaped.
pub(crate) fn write_json_str(buf: &mut Vec<u8>, s: &str) -> Option<Range<usize>> {
    buf.push(b'"');
    let bytes = s.as_bytes();
    let mut verbatim = None;
    // Without an early exit, so that the compiler checks many bytes at a time (ids and
    // index names are short; this was 1.3 % of a worker's time byte by byte).
    let plain = bytes
        .iter()
        .fold(true, |ok, &b| ok & (b >= 0x20) & (b != b'"') & (b != b'\\'));
    if plain {
        let at = buf.len();
        buf.extend_from_slice(bytes);
        verbatim = Some(at..buf.len());
    } else {
        for &b in bytes {
            match b {
                b'"' => buf.extend_from_slice(b"\\\""),
                b'\\' => buf.extend_from_slice(b"\\\\"),
                b'\n' => buf.extend_from_slice(b"\\n"),
                b'\r' => buf.extend_from_slice(b"\\r"),
                b'\t' => buf.extend_from_slice(b"\\t"),
                0..=0x1f => buf.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
                _ => buf.push(b),
            }
        }
    }
    buf.push(b'"');
    verbatim
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::ProductVersion;
    use serde_json::{json, Value};

    fn meta(id: &str) -> DocMeta {
        DocMeta {
            index: "idx".into(),
            id: id.into(),
            doc_type: None,
            routing: None,
        }
    }

    fn lines(buf: &[u8]) -> Vec<Value> {
        std::str::from_utf8(buf)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn enc(t: &Target, op: OpType, ext: bool) -> BulkEncoder {
        BulkEncoder::new(t, op, ext, 1 << 20)
    }

    #[test]
    fn typeless_index_create_and_delete() {
        let os = Target::new(ProductVersion::os(2, 11));
        let e = enc(&os, OpType::Index, false);
        let mut body = BulkBody::default();
        let mut d = meta("a\"b\\c\n\u{1}é");
        d.doc_type = Some("ignored".into());
        d.routing = Some("r1".into());
        e.push(&mut body, BulkAction::Write, d, None, b"{\"x\":1}")
            .unwrap();
        e.push(&mut body, BulkAction::Delete, meta("gone"), None, b"")
            .unwrap();
        assert_eq!(
            lines(body.as_bytes()),
            vec![
                json!({"index":{"_index":"idx","_id":"a\"b\\c\n\u{1}é","routing":"r1"}}),
                json!({"x":1}),
                json!({"delete":{"_index":"idx","_id":"gone"}}),
            ]
        );
        assert_eq!((body.docs(), body.source_bytes()), (2, 7));
        let e = enc(&os, OpType::Create, false);
        let mut body = BulkBody::default();
        e.push(
            &mut body,
            BulkAction::Write,
            meta("1"),
            None,
            b"  {\"y\":\n2}\r\n",
        )
        .unwrap();
        assert_eq!(
            body.as_bytes(),
            b"{\"create\":{\"_index\":\"idx\",\"_id\":\"1\"}}\n{\"y\": 2}\n"
        );
        // A create-if-absent entry under an `index` encoder: `create`, flagged once.
        let e = enc(&os, OpType::Index, false);
        let mut body = BulkBody::default();
        e.push(&mut body, BulkAction::Create, meta("2"), None, b"{\"z\":3}")
            .unwrap();
        e.push(&mut body, BulkAction::Write, meta("3"), None, b"{}")
            .unwrap();
        assert!(e
            .push(&mut body, BulkAction::Create, meta("4"), None, b" ")
            .is_err());
        assert_eq!(
            lines(body.as_bytes())[0],
            json!({"create":{"_index":"idx","_id":"2"}})
        );
        let parts = body.into_parts().parts;
        assert_eq!(
            parts.iter().map(|p| p.once).collect::<Vec<_>>(),
            vec![true, false]
        );
    }

    #[test]
    fn server_generated_ids_leave_the_id_out_and_refuse_deletes() {
        let os = Target::new(ProductVersion::os(2, 11));
        let e = enc(&os, OpType::Index, false).with_server_generated_ids(true);
        let mut body = BulkBody::default();
        e.push(&mut body, BulkAction::Write, meta("a"), None, b"{\"x\":1}")
            .unwrap();
        e.push(&mut body, BulkAction::Create, meta("b"), None, b"{\"x\":2}")
            .unwrap();
        let refused = e
            .push(&mut body, BulkAction::Delete, meta("gone"), None, b"")
            .unwrap_err();
        assert_eq!(refused.meta.id, "gone");
        assert!(
            refused.error.reason.contains("--server-generated-ids"),
            "{}",
            refused.error.reason
        );
        assert_eq!(
            lines(body.as_bytes()),
            vec![
                json!({"index":{"_index":"idx"}}),
                json!({"x":1}),
                json!({"create":{"_index":"idx"}}),
                json!({"x":2}),
            ]
        );
        // The source's ids stay known for failure records.
        let framed = body.into_parts();
        let ids: Vec<&str> = framed.parts.iter().map(|p| p.id(&framed.buf)).collect();
        assert_eq!(ids, vec!["a", "b"]);
    }

    #[test]
    fn each_entry_keeps_its_own_index_routing_and_id() {
        let e = enc(
            &Target::new(ProductVersion::os(2, 11)),
            OpType::Index,
            false,
        );
        let mut body = BulkBody::default();
        let a: Arc<str> = Arc::from("a");
        let b: Arc<str> = Arc::from("b");
        // `a` again as another allocation: equal names share the slot too.
        let a2: Arc<str> = Arc::from("a");
        let docs = [(&a, "1"), (&a, "2"), (&b, "3"), (&a2, "4"), (&a, "5")];
        for (index, id) in docs {
            let meta = DocMeta {
                index: index.clone(),
                id: id.into(),
                doc_type: None,
                routing: (id == "3").then(|| "r".to_string()),
            };
            e.push(&mut body, BulkAction::Write, meta, None, b"{}")
                .unwrap();
        }
        let Framed {
            buf,
            parts,
            indices,
            ..
        } = body.into_parts();
        assert_eq!(indices.len(), 3, "{indices:?}");
        let metas: Vec<DocMeta> = parts.into_iter().map(|p| p.meta(&buf, &indices)).collect();
        let got: Vec<(&str, &str, Option<&str>)> = metas
            .iter()
            .map(|m| (&*m.index, m.id.as_str(), m.routing.as_deref()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("a", "1", None),
                ("a", "2", None),
                ("b", "3", Some("r")),
                ("a", "4", None),
                ("a", "5", None)
            ]
        );
    }

    #[test]
    fn ids_and_routings_come_back_as_sent_escaped_or_not() {
        let e = enc(
            &Target::new(ProductVersion::os(2, 11)),
            OpType::Index,
            false,
        );
        let mut body = BulkBody::default();
        let keys = [
            ("plain", Some("r")),
            ("a\"b\\c\n\u{1}é", Some("r\"1")),
            ("日本", None),
            ("", Some("")),
        ];
        for (id, routing) in keys {
            let mut m = meta(id);
            m.routing = routing.map(str::to_string);
            e.push(&mut body, BulkAction::Write, m, None, b"{}")
                .unwrap();
        }
        let Framed {
            buf,
            parts,
            indices,
            ..
        } = body.into_parts();
        let ids: Vec<&str> = parts.iter().map(|p| p.id(&buf)).collect();
        assert_eq!(ids, keys.iter().map(|k| k.0).collect::<Vec<_>>());
        let got: Vec<(String, Option<String>)> = parts
            .into_iter()
            .map(|p| {
                let m = p.meta(&buf, &indices);
                (m.id, m.routing)
            })
            .collect();
        let want: Vec<(String, Option<String>)> = keys
            .iter()
            .map(|(i, r)| (i.to_string(), r.map(str::to_string)))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn typed_and_versioned_for_old_elasticsearch() {
        let es6 = Target::new(ProductVersion::es(6, 8));
        let e = enc(&es6, OpType::Index, true);
        let mut body = BulkBody::default();
        e.push(&mut body, BulkAction::Write, meta("7"), Some(42), b"{}")
            .unwrap();
        let mut typed = meta("7");
        typed.doc_type = Some("tweet".into());
        e.push(&mut body, BulkAction::Write, typed.clone(), Some(42), b"{}")
            .unwrap();
        assert_eq!(
            lines(body.as_bytes()),
            vec![
                json!({"index":{"_index":"idx","_id":"7","_type":"_doc","version":42,"version_type":"external"}}),
                json!({}),
                json!({"index":{"_index":"idx","_id":"7","_type":"tweet","version":42,"version_type":"external"}}),
                json!({}),
            ]
        );
        let es5 = Target::new(ProductVersion::es(5, 6));
        let e = enc(&es5, OpType::Index, true);
        let mut body = BulkBody::default();
        typed.routing = Some("r".into());
        e.push(&mut body, BulkAction::Write, typed.clone(), Some(42), b"{}")
            .unwrap();
        assert_eq!(
            lines(body.as_bytes())[0],
            json!({"index":{"_index":"idx","_id":"7","_type":"tweet","_routing":"r","_version":42,"_version_type":"external"}})
        );
        let before = body.bytes();
        assert!(e
            .push(&mut body, BulkAction::Write, typed, None, b"{}")
            .is_err());
        assert!(e
            .push(&mut body, BulkAction::Write, meta("x"), Some(1), b" \n ")
            .is_err());
        assert_eq!(
            body.bytes(),
            before,
            "a refused document leaves the body unchanged"
        );
    }

    #[test]
    fn entries_larger_than_the_ceiling_are_refused() {
        let os = Target::new(ProductVersion::os(2, 11));
        let e = BulkEncoder::new(&os, OpType::Index, false, 100);
        let mut body = BulkBody::default();
        let big = format!("{{\"x\":\"{}\"}}", "a".repeat(200));
        let u = e
            .push(
                &mut body,
                BulkAction::Write,
                meta("big"),
                None,
                big.as_bytes(),
            )
            .unwrap_err();
        let (m, why) = (u.meta, u.error);
        assert_eq!(m.id, "big");
        assert_eq!(&*m.index, "idx");
        assert_eq!(why.error_type, "document_too_large");
        assert!(why.reason.contains("ceiling"), "{why:?}");
        assert!(body.is_empty() && body.bytes() == 0);
        // A refused document of another index leaves no slot in the index table.
        e.push(&mut body, BulkAction::Write, meta("1"), None, b"{}")
            .unwrap();
        let mut other = meta("big2");
        other.index = "other".into();
        let u = e
            .push(&mut body, BulkAction::Write, other, None, big.as_bytes())
            .unwrap_err();
        assert_eq!((&*u.meta.index, u.meta.id.as_str()), ("other", "big2"));
        e.push(&mut body, BulkAction::Write, meta("2"), None, b"{}")
            .unwrap();
        let framed = body.into_parts();
        assert_eq!(framed.indices.len(), 1, "{:?}", framed.indices);
        let ids: Vec<&str> = framed.parts.iter().map(|p| p.id(&framed.buf)).collect();
        assert_eq!(ids, vec!["1", "2"]);
    }
}
