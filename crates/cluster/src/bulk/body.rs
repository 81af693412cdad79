//! Bulk request bodies: one action line and the untouched `_source` bytes per document,
//! copied into a single buffer (no JSON tree is ever built).

use super::{BulkDoc, OpType};
use crate::version::{Dialect, Target};

/// Writes action lines for one target dialect.
#[derive(Debug, Clone)]
pub(crate) struct BodyEncoder {
    pub op: OpType,
    pub dialect: Dialect,
    /// ES 5 spells `_routing` and `_version`.
    pub underscored: bool,
    pub external_versioning: bool,
}

impl BodyEncoder {
    pub fn new(target: &Target, op: OpType, external_versioning: bool) -> BodyEncoder {
        BodyEncoder {
            op,
            dialect: target.dialect(),
            underscored: target.underscored_bulk_keys(),
            external_versioning,
        }
    }

    /// Append the document's two lines, or say why it cannot be sent.
    pub fn encode(&self, buf: &mut Vec<u8>, doc: &BulkDoc) -> Result<(), &'static str> {
        let source = trim_ascii(&doc.source);
        if source.is_empty() {
            return Err("empty _source");
        }
        if self.external_versioning && doc.version.is_none() {
            return Err("external versioning requested but the document has no version");
        }
        buf.reserve(source.len() + doc.id.len() + doc.index.len() + 48);
        buf.extend_from_slice(match self.op {
            OpType::Index => b"{\"index\":{\"_index\":",
            OpType::Create => b"{\"create\":{\"_index\":",
        });
        write_json_str(buf, &doc.index);
        buf.extend_from_slice(b",\"_id\":");
        write_json_str(buf, &doc.id);
        if self.dialect == Dialect::Typed {
            buf.extend_from_slice(b",\"_type\":");
            write_json_str(buf, doc.doc_type.as_deref().unwrap_or("_doc"));
        }
        if let Some(r) = &doc.routing {
            buf.extend_from_slice(if self.underscored {
                b",\"_routing\":"
            } else {
                b",\"routing\":"
            });
            write_json_str(buf, r);
        }
        if self.external_versioning {
            if let Some(v) = doc.version {
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
        }
        buf.extend_from_slice(b"}}\n");
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
        Ok(())
    }
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

/// Write `s` as a JSON string literal.
pub(crate) fn write_json_str(buf: &mut Vec<u8>, s: &str) {
    buf.push(b'"');
    let bytes = s.as_bytes();
    if !bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\') {
        buf.extend_from_slice(bytes);
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::{Distribution, Version};
    use bytes::Bytes;
    use serde_json::{json, Value};

    fn doc(id: &str, source: &str) -> BulkDoc {
        BulkDoc::new("idx", id, Bytes::from(source.to_owned()))
    }

    fn lines(buf: &[u8]) -> Vec<Value> {
        std::str::from_utf8(buf)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn typeless_index_and_create() {
        let os = Target::new(Distribution::OpenSearch, Version::new(2, 11, 0));
        let e = BodyEncoder::new(&os, OpType::Index, false);
        let mut buf = Vec::new();
        let mut d = doc("a\"b\\c\n\u{1}é", "{\"x\":1}");
        d.doc_type = Some("ignored".into());
        d.routing = Some("r1".into());
        e.encode(&mut buf, &d).unwrap();
        assert_eq!(
            lines(&buf),
            vec![
                json!({"index":{"_index":"idx","_id":"a\"b\\c\n\u{1}é","routing":"r1"}}),
                json!({"x":1})
            ]
        );
        let e = BodyEncoder::new(&os, OpType::Create, false);
        let mut buf = Vec::new();
        e.encode(&mut buf, &doc("1", "  {\"y\":\n2}\r\n")).unwrap();
        assert_eq!(
            buf,
            b"{\"create\":{\"_index\":\"idx\",\"_id\":\"1\"}}\n{\"y\": 2}\n"
        );
    }

    #[test]
    fn typed_and_versioned_for_old_elasticsearch() {
        let es6 = Target::new(Distribution::Elasticsearch, Version::new(6, 8, 0));
        let e = BodyEncoder::new(&es6, OpType::Index, true);
        let mut buf = Vec::new();
        let mut d = doc("7", "{}");
        d.version = Some(42);
        e.encode(&mut buf, &d).unwrap();
        d.doc_type = Some("tweet".into());
        e.encode(&mut buf, &d).unwrap();
        assert_eq!(
            lines(&buf),
            vec![
                json!({"index":{"_index":"idx","_id":"7","_type":"_doc","version":42,"version_type":"external"}}),
                json!({}),
                json!({"index":{"_index":"idx","_id":"7","_type":"tweet","version":42,"version_type":"external"}}),
                json!({}),
            ]
        );
        let es5 = Target::new(Distribution::Elasticsearch, Version::new(5, 6, 0));
        let e = BodyEncoder::new(&es5, OpType::Index, true);
        let mut buf = Vec::new();
        d.routing = Some("r".into());
        e.encode(&mut buf, &d).unwrap();
        assert_eq!(
            lines(&buf)[0],
            json!({"index":{"_index":"idx","_id":"7","_type":"tweet","_routing":"r","_version":42,"_version_type":"external"}})
        );
        d.version = None;
        assert!(e.encode(&mut buf, &d).is_err());
        assert!(e.encode(&mut buf, &doc("x", " \n ")).is_err());
    }
}
