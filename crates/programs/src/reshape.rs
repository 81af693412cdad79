//! A document program (jq, or the reference tool's JavaScript) composed with the naming
//! transform in one stage. The program sees each document as read —
//! `{"_index", "_id", "_type"?, "_routing", "op", "_source"}` with the *source* index —
//! and yields zero or more documents:
//!
//! - none: the document is filtered (`filtered:program`); an output
//!   `{"_filtered": "REASON"}` names the reason (`filtered:REASON`);
//! - one or more: each is sent, sharing the input's position in the item;
//! - an error, or an output that is not a document: a `transform_error` skip.
//!
//! An output whose `_index` the program left alone then goes through the naming
//! transform (renames, prefix, type routes, vector conversions); an `_index` the program
//! changed is the target name as given.

use std::sync::Arc;

use bytes::Bytes;
use jaq_json::{Map, Val};

use crate::program::{parse, JqProgram, RunError};
use engine::document::{Document, Op, Skip};
use engine::transform::{Batched, Shaped, Transform, Unroutable};

/// The skip reason of a document the program could not transform.
pub const TRANSFORM_ERROR: &str = "transform_error";

/// What a program made of one document of a batch: its outputs, and the reason it asked
/// for the document to be filtered with, if any (see [`DocumentProgram::reshape`]).
pub type Reshaped = Result<(Vec<Document>, Option<String>), RunError>;

/// A program over documents.
pub trait DocumentProgram: Send + Sync + 'static {
    /// Runs on one document and pushes its outputs onto `out`. `Ok(Some(reason))` when
    /// the program asked for the document to be filtered with that reason.
    fn reshape(&self, doc: &Document, out: &mut Vec<Document>) -> Result<Option<String>, RunError>;

    /// How many documents [`DocumentProgram::reshape_batch`] is best given at once.
    fn batch_size(&self) -> usize {
        1
    }

    /// [`DocumentProgram::reshape`] of each of `docs`, in order.
    fn reshape_batch(&self, docs: &[Document]) -> Vec<Reshaped> {
        docs.iter()
            .map(|d| {
                let mut out = Vec::new();
                self.reshape(d, &mut out).map(|f| (out, f))
            })
            .collect()
    }
}

/// The program, then the naming transform for what the program did not rename.
pub struct Reshape {
    program: Arc<dyn DocumentProgram>,
    then: Arc<dyn Transform>,
    identity: Option<String>,
}

impl Reshape {
    pub fn new(program: Arc<dyn DocumentProgram>, then: Arc<dyn Transform>) -> Reshape {
        Reshape {
            program,
            then,
            identity: None,
        }
    }

    /// The program's digest for the migration's identity ([`engine::job::program_digest`]).
    pub fn with_identity(mut self, identity: Option<String>) -> Reshape {
        self.identity = identity;
        self
    }
}

impl Transform for Reshape {
    /// One output only (used where one document must stay one, e.g. a lookup).
    fn apply(&self, doc: &mut Document) -> Result<(), Unroutable> {
        let mut out = Vec::new();
        match self.apply_all(doc.clone(), &mut out) {
            Ok(Shaped::Docs) if out.len() == 1 => {
                *doc = out.pop().expect("one output");
                Ok(())
            }
            Ok(Shaped::Docs) => Err(Unroutable {
                reason: TRANSFORM_ERROR,
                detail: format!("the program yields {} documents, one expected", out.len()),
            }),
            Ok(Shaped::Filtered(r)) => Err(Unroutable {
                reason: "filtered",
                detail: r,
            }),
            Err(s) => Err(Unroutable {
                reason: s.reason,
                detail: s.detail,
            }),
        }
    }

    fn reshapes(&self) -> bool {
        true
    }

    fn program_identity(&self) -> Option<String> {
        self.identity.clone()
    }

    fn batch_size(&self) -> usize {
        self.program.batch_size()
    }

    fn apply_batch(&self, docs: Vec<Document>) -> Vec<Batched> {
        let reshaped = self.program.reshape_batch(&docs);
        docs.into_iter()
            .zip(reshaped)
            .map(|(doc, r)| {
                let (mut outputs, r) = match r {
                    Ok((outputs, f)) => (outputs, Ok(f)),
                    Err(e) => (Vec::new(), Err(e)),
                };
                let outcome = self.settle(doc, r, &mut outputs, 0);
                Batched { outcome, outputs }
            })
            .collect()
    }

    fn apply_all(&self, doc: Document, out: &mut Vec<Document>) -> Result<Shaped, Box<Skip>> {
        let start = out.len();
        let r = self.program.reshape(&doc, out);
        self.settle(doc, r, out, start)
    }
}

impl Reshape {
    /// The outcome of the program's run on `doc` (its outputs in `out` from `start`): the
    /// outputs it left in their index through the naming transform.
    fn settle(
        &self,
        doc: Document,
        r: Result<Option<String>, RunError>,
        out: &mut Vec<Document>,
        start: usize,
    ) -> Result<Shaped, Box<Skip>> {
        let filtered = match r {
            Ok(f) => f,
            Err(e) => {
                out.truncate(start);
                return Err(Box::new(Skip::of(doc, TRANSFORM_ERROR, e.0)));
            }
        };
        if out.len() == start {
            return Ok(Shaped::Filtered(
                filtered.unwrap_or_else(|| "program".to_string()),
            ));
        }
        for d in &mut out[start..] {
            if d.index != doc.index {
                continue;
            }
            if let Err(u) = self.then.apply(d) {
                let d = d.clone();
                out.truncate(start);
                let mut skip = Skip::of(doc, u.reason, u.detail);
                if d.id != skip.id.as_deref().unwrap_or_default() {
                    skip.detail = format!("output {}: {}", d.id, skip.detail);
                }
                return Err(Box::new(skip));
            }
        }
        Ok(Shaped::Docs)
    }
}

impl DocumentProgram for JqProgram {
    fn reshape(&self, doc: &Document, out: &mut Vec<Document>) -> Result<Option<String>, RunError> {
        let outputs = self.run(to_val(doc)?)?;
        let mut filtered = None;
        for v in outputs {
            match from_val(doc, v)? {
                Output::Doc(d) => out.push(d),
                Output::Filtered(r) => filtered = Some(r),
            }
        }
        Ok(filtered)
    }
}

fn key(k: &'static str) -> Val {
    Val::utf8_str(Bytes::from_static(k.as_bytes()))
}

fn string(s: &str) -> Val {
    Val::utf8_str(Bytes::copy_from_slice(s.as_bytes()))
}

/// The document as the program sees it.
pub fn to_val(doc: &Document) -> Result<Val, RunError> {
    let mut m = Map::default();
    m.insert(key("_index"), string(&doc.index));
    m.insert(key("_id"), string(&doc.id));
    if let Some(t) = &doc.doc_type {
        m.insert(key("_type"), string(t));
    }
    m.insert(
        key("_routing"),
        doc.routing.as_deref().map_or(Val::Null, string),
    );
    m.insert(key("op"), key(op_name(doc.op)));
    let source = if doc.source.is_empty() {
        Val::Null
    } else {
        parse(&doc.source).map_err(|e| RunError(format!("_source: {}", e.0)))?
    };
    m.insert(key("_source"), source);
    Ok(Val::obj(m))
}

pub fn op_name(op: Op) -> &'static str {
    match op {
        Op::Index => "index",
        Op::Create => "create",
        Op::Delete => "delete",
    }
}

enum Output {
    Doc(Document),
    Filtered(String),
}

fn as_text(v: &Val) -> Option<&str> {
    match v {
        Val::TStr(b) => std::str::from_utf8(b).ok(),
        _ => None,
    }
}

/// A reason key made of `[a-z0-9_-]`, at most 40 characters.
pub fn reason_key(s: &str) -> String {
    let k: String = s
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    if k.is_empty() {
        "program".into()
    } else {
        k
    }
}

/// The `_id` an output gives: a string or a number, 1 to 512 bytes.
pub(crate) fn id_of(id: &Val) -> Result<String, RunError> {
    let text = match id {
        Val::TStr(_) => as_text(id).unwrap_or_default().to_string(),
        Val::Num(n) => n.to_string(),
        _ => String::new(),
    };
    if text.is_empty() || text.len() > 512 {
        return Err(RunError(format!(
            "_id must be a non-empty string of at most 512 bytes, not {}",
            cut(&id.to_string())
        )));
    }
    Ok(text)
}

/// The `_routing` an output gives: a string, a number or null (none).
pub(crate) fn routing_of(r: &Val) -> Result<Option<String>, RunError> {
    Ok(match r {
        Val::Null => None,
        Val::Num(n) => Some(n.to_string()),
        _ => Some(
            as_text(r)
                .ok_or_else(|| {
                    RunError(format!(
                        "_routing must be a string or null, not {}",
                        cut(&r.to_string())
                    ))
                })?
                .to_string(),
        ),
    })
}

/// An output of `input` with `source`: its place, operation, index, id, type and routing
/// the input's (what a program's output changes is set on it after).
pub(crate) fn output_of(input: &Document, source: Bytes) -> Document {
    Document {
        position: input.position.clone(),
        op: input.op,
        index: input.index.clone(),
        id: input.id.clone(),
        doc_type: input.doc_type.clone(),
        routing: input.routing.clone(),
        source,
    }
}

/// One output of the program back into a document (what it left out keeps the input's).
fn from_val(input: &Document, v: Val) -> Result<Output, RunError> {
    let Val::Obj(m) = &v else {
        return Err(RunError(format!(
            "an output is not a document object: {}",
            cut(&v.to_string())
        )));
    };
    if let Some(r) = m.get(&key("_filtered")) {
        let reason = as_text(r).map_or_else(|| r.to_string(), str::to_string);
        return Ok(Output::Filtered(reason_key(&reason)));
    }
    let field = |name: &'static str| m.get(&key(name));
    let mut doc = output_of(input, Bytes::new());
    if let Some(ix) = field("_index") {
        match as_text(ix) {
            Some(s) if !s.is_empty() => {
                if s != &*doc.index {
                    doc.index = Arc::from(s);
                }
            }
            _ => {
                return Err(RunError(format!(
                    "_index must be a non-empty string, not {}",
                    cut(&ix.to_string())
                )))
            }
        }
    }
    if let Some(id) = field("_id") {
        doc.id = id_of(id)?;
    }
    if let Some(t) = field("_type") {
        doc.doc_type = match t {
            Val::Null => None,
            _ => Some(Arc::from(as_text(t).ok_or_else(|| {
                RunError(format!(
                    "_type must be a string or null, not {}",
                    cut(&t.to_string())
                ))
            })?)),
        };
    }
    if let Some(r) = field("_routing") {
        doc.routing = routing_of(r)?;
    }
    if let Some(op) = field("op") {
        doc.op = match as_text(op) {
            Some("index") => Op::Index,
            Some("create") => Op::Create,
            Some("delete") => Op::Delete,
            _ => {
                return Err(RunError(format!(
                    "op must be \"index\", \"create\" or \"delete\", not {}",
                    cut(&op.to_string())
                )))
            }
        };
    }
    match field("_source") {
        Some(s @ Val::Obj(_)) if doc.op != Op::Delete => {
            doc.source = json_bytes(s, input.source.len());
        }
        _ if doc.op == Op::Delete => {}
        Some(other) => {
            return Err(RunError(format!(
                "_source must be an object, not {}",
                cut(&other.to_string())
            )))
        }
        None => return Err(RunError("the output has no _source".into())),
    }
    Ok(Output::Doc(doc))
}

/// `v` as JSON text, byte for byte as its `Display` writes it (but for numbers that are not
/// finite, see `write_json`), written straight into
/// bytes: `Display` goes through `fmt` and a lossy UTF-8 pass per string, a quarter of a
/// general program's time in `scripts/bench-e2e ONLY=transforms`. What this writer does
/// not take (a byte string, text that is not UTF-8) falls back to `Display`.
pub fn json_bytes(v: &Val, size_hint: usize) -> Bytes {
    let mut buf = Vec::with_capacity(size_hint.saturating_add(64));
    if write_json(&mut buf, v) {
        Bytes::from(buf)
    } else {
        Bytes::from(v.to_string())
    }
}

/// Appends `v` as JSON text; `false` (with `out` partly written) for a value only `Display`
/// writes. A number that is not finite, which `Display` writes as `NaN` or `Infinity` (not
/// JSON, so a target would refuse the document), is written as jq writes it.
pub(crate) fn write_json(out: &mut Vec<u8>, v: &Val) -> bool {
    match v {
        Val::Null => out.extend_from_slice(b"null"),
        Val::Bool(true) => out.extend_from_slice(b"true"),
        Val::Bool(false) => out.extend_from_slice(b"false"),
        // not JSON: jq's way (`nan` prints as null, `infinite` as the largest double)
        Val::Num(jaq_json::Num::Float(x)) if !x.is_finite() => {
            out.extend_from_slice(if x.is_nan() {
                b"null"
            } else if *x > 0.0 {
                b"1.7976931348623157e+308"
            } else {
                b"-1.7976931348623157e+308"
            })
        }
        // the bytes `Display` writes, without going through `fmt`: integers in decimal,
        // finite floats by ryu (as `Display` does), decimals as read
        Val::Num(jaq_json::Num::Int(i)) => write_int(out, *i),
        Val::Num(jaq_json::Num::Float(x)) => {
            out.extend_from_slice(ryu::Buffer::new().format_finite(*x).as_bytes())
        }
        Val::Num(jaq_json::Num::Dec(d)) => out.extend_from_slice(d.as_bytes()),
        Val::Num(n) => {
            use std::io::Write as _;
            if write!(out, "{n}").is_err() {
                return false;
            }
        }
        Val::TStr(b) => return write_text(out, b),
        Val::BStr(_) => return false,
        Val::Arr(a) => {
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                if !write_json(out, x) {
                    return false;
                }
            }
            out.push(b']');
        }
        Val::Obj(o) => {
            out.push(b'{');
            for (i, (k, x)) in o.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                if !write_json(out, k) {
                    return false;
                }
                out.push(b':');
                if !write_json(out, x) {
                    return false;
                }
            }
            out.push(b'}');
        }
    }
    true
}

/// `i` in decimal, as `Display` writes it.
fn write_int(out: &mut Vec<u8>, i: isize) {
    let mut digits = [0u8; 20];
    let mut n = i.unsigned_abs();
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if i < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[at..]);
}

/// Bytes a text string writes escaped: control characters, `"`, `\\` and DEL.
const NEEDS_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 0x20 {
        t[c] = true;
        c += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t[0x7f] = true;
    t
};

/// A text string with jaq's escapes: `\b \f \t \n \r \\ \"`, other control characters
/// and DEL as `\u00XX` (lower-case hex); `false` for text that is not UTF-8.
fn write_text(out: &mut Vec<u8>, b: &[u8]) -> bool {
    if std::str::from_utf8(b).is_err() {
        return false;
    }
    out.reserve(b.len() + 2);
    out.push(b'"');
    let mut rest = b;
    while let Some(at) = rest.iter().position(|&c| NEEDS_ESCAPE[usize::from(c)]) {
        out.extend_from_slice(&rest[..at]);
        let c = rest[at];
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(c >> 4)]);
                out.push(HEX[usize::from(c & 0xf)]);
            }
        }
        rest = &rest[at + 1..];
    }
    out.extend_from_slice(rest);
    out.push(b'"');
    true
}

fn cut(s: &str) -> String {
    let mut end = s.len().min(80);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    if end < s.len() {
        format!("{}…", &s[..end])
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routes::Rename;
    use coordination::Position;
    use metadata::Naming;

    fn doc(source: &str) -> Document {
        Document {
            position: Position::Doc(7),
            op: Op::Index,
            index: "logs".into(),
            id: "1".into(),
            doc_type: None,
            routing: None,
            source: Bytes::copy_from_slice(source.as_bytes()),
        }
    }

    /// JSON values with what writers get wrong: escapes, control characters, non-ASCII
    /// text, numbers of every kind, nesting.
    fn json_value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        let text = "(\\PC|[\"\\\\/\u{0}-\u{1f}\u{7f}\u{80}-\u{ff}é☃😀])*";
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::Bool),
            any::<i64>().prop_map(|n| serde_json::json!(n)),
            any::<u64>().prop_map(|n| serde_json::json!(n)),
            (-1e300f64..1e300).prop_map(|f| serde_json::json!(f)),
            text.prop_map(serde_json::Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
                proptest::collection::vec((text, inner), 0..6)
                    .prop_map(|kv| serde_json::Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn the_byte_writer_writes_what_display_writes(v in json_value()) {
            let text = serde_json::to_string(&v).unwrap();
            let val = parse(text.as_bytes()).unwrap();
            let fast = json_bytes(&val, 0);
            proptest::prop_assert_eq!(std::str::from_utf8(&fast).unwrap(), val.to_string());
        }

        /// Numbers a program computes (floats, machine integers) take the writer's own
        /// path, not `Display`: the same bytes.
        #[test]
        fn computed_numbers_are_written_as_display_writes_them(
            x in proptest::num::f64::NORMAL | proptest::num::f64::SUBNORMAL | proptest::num::f64::ZERO,
            i in proptest::prelude::any::<isize>(),
        ) {
            for v in [Val::Num(jaq_json::Num::Float(x)), Val::Num(jaq_json::Num::Int(i))] {
                let fast = json_bytes(&v, 0);
                proptest::prop_assert_eq!(std::str::from_utf8(&fast).unwrap(), v.to_string());
            }
        }
    }

    #[test]
    fn number_corners_are_written_as_display_writes_them() {
        let floats = [
            0.0,
            -0.0,
            1e16,
            1e-7,
            123.45,
            -2.5e300,
            f64::MAX,
            f64::MIN_POSITIVE,
        ];
        let ints = [0, -1, 9, 10, isize::MAX, isize::MIN];
        let decimals = ["1.50e3", "-0.0", "2.50"];
        let vals = floats
            .map(|x| Val::Num(jaq_json::Num::Float(x)))
            .into_iter()
            .chain(ints.map(|i| Val::Num(jaq_json::Num::Int(i))))
            .chain(decimals.map(|d| Val::Num(jaq_json::Num::Dec(d.to_string().into()))));
        for v in vals {
            assert_eq!(
                std::str::from_utf8(&json_bytes(&v, 0)).unwrap(),
                v.to_string()
            );
        }
    }

    #[test]
    fn numbers_that_are_not_finite_are_written_as_jq_writes_them() {
        let p = JqProgram::compile(
            "._source.up = (._source.n / 0) | ._source.down = (0 - ._source.n / 0) | ._source.nan = (._source.n / 0 - ._source.n / 0)",
        )
        .unwrap();
        let mut out = Vec::new();
        p.reshape(&doc(r#"{"n":1.5}"#), &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out[0].source).unwrap();
        assert_eq!(v["up"].as_f64(), Some(f64::MAX), "{v}");
        assert_eq!(v["down"].as_f64(), Some(f64::MIN), "{v}");
        assert!(v["nan"].is_null(), "{v}");
    }

    #[test]
    fn text_that_is_not_utf8_is_written_as_display_writes_it() {
        let val = Val::TStr(Box::new(bytes::Bytes::from_static(b"a\xffb")));
        let out = json_bytes(&val, 0);
        assert_eq!(&out[..], val.to_string().as_bytes());
        assert!(std::str::from_utf8(&out).is_ok());
    }

    fn reshape(prog: &str, prefix: &str) -> Reshape {
        let naming = Naming {
            prefix: prefix.into(),
            ..Naming::default()
        };
        Reshape::new(
            Arc::new(JqProgram::compile(prog).unwrap()),
            Arc::new(Rename::new(naming, &["logs".into()])),
        )
    }

    #[test]
    fn rename_field_keeps_the_rest_and_the_naming_applies() {
        let t = reshape(r#"._source |= (.new = .old | del(.old))"#, "p_");
        let mut out = Vec::new();
        assert_eq!(
            t.apply_all(doc(r#"{"old":1,"k":"v"}"#), &mut out).unwrap(),
            Shaped::Docs
        );
        assert_eq!(out.len(), 1);
        assert_eq!(&*out[0].index, "p_logs");
        assert_eq!(out[0].position, Position::Doc(7));
        let v: serde_json::Value = serde_json::from_slice(&out[0].source).unwrap();
        assert_eq!(v, serde_json::json!({"k":"v","new":1}));
    }

    #[test]
    fn changed_index_is_the_target_as_given() {
        let t = reshape(r#"._index = "other" | ._routing = "r1""#, "p_");
        let mut out = Vec::new();
        t.apply_all(doc("{}"), &mut out).unwrap();
        assert_eq!(&*out[0].index, "other");
        assert_eq!(out[0].routing.as_deref(), Some("r1"));
    }

    #[test]
    fn filter_and_explode() {
        let t = reshape(r#"select(._source.keep)"#, "");
        let mut out = Vec::new();
        assert_eq!(
            t.apply_all(doc(r#"{"keep":false}"#), &mut out).unwrap(),
            Shaped::Filtered("program".into())
        );
        let t = reshape(
            r#"if ._source.keep then . else {_filtered: "Not Kept"} end"#,
            "",
        );
        assert_eq!(
            t.apply_all(doc(r#"{"keep":false}"#), &mut out).unwrap(),
            Shaped::Filtered("not_kept".into())
        );
        assert!(out.is_empty());
        let t = reshape(r#"(._id += "-a"), (._id += "-b" | ._source.b = true)"#, "");
        t.apply_all(doc(r#"{"x":1}"#), &mut out).unwrap();
        let ids: Vec<_> = out.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, ["1-a", "1-b"]);
        assert!(out.iter().all(|d| d.position == Position::Doc(7)));
    }

    #[test]
    fn errors_and_bad_outputs_are_transform_errors() {
        let mut out = Vec::new();
        for prog in [
            r#"error("nope")"#,
            r#"1"#,
            r#"._id = """#,
            r#"._source = [1]"#,
            r#".op = "upsert""#,
            r#"del(._source)"#,
            r#"., 2"#,
        ] {
            let t = reshape(prog, "");
            let e = t.apply_all(doc(r#"{"x":1}"#), &mut out).unwrap_err();
            assert_eq!(e.reason, TRANSFORM_ERROR, "{prog}");
            assert_eq!(e.id.as_deref(), Some("1"));
            assert!(out.is_empty(), "{prog}: no partial output");
        }
        let t = reshape(".", "");
        let e = t.apply_all(doc("{not json"), &mut out).unwrap_err();
        assert!(e.detail.contains("_source"), "{}", e.detail);
    }

    #[test]
    fn deletes_need_no_source() {
        let t = reshape(".", "");
        let mut d = doc("");
        d.op = Op::Delete;
        let mut out = Vec::new();
        t.apply_all(d, &mut out).unwrap();
        assert_eq!(out[0].op, Op::Delete);
        assert!(out[0].source.is_empty());
    }
}
