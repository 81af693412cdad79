//! The common jq programs — rename, copy, set or delete top-level `_source` fields, set
//! `_index` — recognised from their text and applied to the raw `_source` bytes without
//! building the document, so such a transform costs a fraction of running the program.
//!
//! Recognised forms (whitespace and `#` comments anywhere), chained with `|`:
//!
//! - `._source |= (STEP | STEP …)` where each STEP is `.a = .b`, `.a = "text"` (or `null`,
//!   `true`, `false`) or `del(.a, .b …)`;
//! - the same steps written from the document: `._source.a = ._source.b`,
//!   `._source.a = "text"`, `del(._source.a, …)`;
//! - `._source |= del(…)` (one step: `|=` binds tighter than `|`);
//! - `._index = "name"`.
//!
//! Field names are identifiers or `."quoted"` names without escapes. Anything else is left
//! to jq. A document the fast path cannot take exactly as jq would — a `_source` that is
//! not one object on one line, with a duplicate key, or a key holding an escape; a
//! delete — goes to jq too, so the outputs are the same documents either way (keys may
//! be in another order; JSON objects have none). Values the steps do not change are kept byte for byte,
//! where jq may print a number anew (`-0` as `0`).

use std::sync::Arc;

use bytes::Bytes;

use crate::program::{JqProgram, RunError};
use crate::reshape::DocumentProgram;
use engine::document::{Document, Op};

/// One step of a recognised program.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// `_source.to = _source.from` (null when `from` is missing).
    Copy { to: String, from: String },
    /// `_source.to = LITERAL` (the literal as compact JSON).
    Set { to: String, json: String },
    /// `del(_source.f, …)`.
    Delete(Vec<String>),
    /// `_index = "name"`.
    Index(String),
}

/// A recognised program: its steps in order, and jq for the documents the steps cannot
/// take.
pub struct FieldEdits {
    steps: Vec<Step>,
    jq: Arc<JqProgram>,
}

impl std::fmt::Debug for FieldEdits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FieldEdits")
            .field("steps", &self.steps)
            .finish()
    }
}

impl FieldEdits {
    /// The fast form of `jq`'s program, when its text is one of the recognised forms.
    pub fn recognise(jq: Arc<JqProgram>) -> Option<FieldEdits> {
        let steps = parse_program(jq.text())?;
        if steps.is_empty() {
            return None;
        }
        Some(FieldEdits { steps, jq })
    }

    /// Applies the steps to `doc`; `None` when the document must go to jq.
    fn edit(&self, doc: &Document) -> Option<Document> {
        if doc.op == Op::Delete {
            // what a program does to a delete (no `_source`) is jq's business
            return None;
        }
        let mut out = Document {
            position: doc.position.clone(),
            op: doc.op,
            index: doc.index.clone(),
            id: doc.id.clone(),
            doc_type: doc.doc_type.clone(),
            routing: doc.routing.clone(),
            source: Bytes::new(),
        };
        let src = &doc.source[..];
        match snapshot::json::check_value(src) {
            Ok(scan) if !scan.line_breaks && !scan.comments => {}
            _ => return None,
        }
        let mut fields = top_level(src)?;
        for s in &self.steps {
            match s {
                Step::Index(name) => out.index = Arc::from(name.as_str()),
                Step::Delete(names) => {
                    fields.retain(|f| !names.iter().any(|n| f.name == n.as_str()));
                }
                Step::Copy { to, from } => {
                    let value = fields
                        .iter()
                        .find(|f| f.name == from.as_str())
                        .map_or(Value::Null, |f| f.value.clone());
                    set(&mut fields, to, value);
                }
                Step::Set { to, json } => set(&mut fields, to, Value::Text(json.clone())),
            }
        }
        let mut buf = Vec::with_capacity(src.len() + 32);
        buf.push(b'{');
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            match &f.key {
                Key::Raw(r) => buf.extend_from_slice(&src[r.clone()]),
                Key::New => buf.extend_from_slice(serde_json::to_string(f.name).ok()?.as_bytes()),
            }
            buf.push(b':');
            match &f.value {
                Value::Raw(r) => buf.extend_from_slice(&src[r.clone()]),
                Value::Text(t) => buf.extend_from_slice(t.as_bytes()),
                Value::Null => buf.extend_from_slice(b"null"),
            }
        }
        buf.push(b'}');
        out.source = Bytes::from(buf);
        Some(out)
    }
}

impl DocumentProgram for FieldEdits {
    fn reshape(&self, doc: &Document, out: &mut Vec<Document>) -> Result<Option<String>, RunError> {
        match self.edit(doc) {
            Some(d) => {
                out.push(d);
                Ok(None)
            }
            None => self.jq.reshape(doc, out),
        }
    }
}

#[derive(Debug, Clone)]
enum Key {
    /// The key as written in the source, quotes included.
    Raw(std::ops::Range<usize>),
    New,
}

#[derive(Debug, Clone)]
enum Value {
    Raw(std::ops::Range<usize>),
    Text(String),
    Null,
}

#[derive(Debug)]
struct Field<'a> {
    name: &'a str,
    key: Key,
    value: Value,
}

/// Sets `name` in place when present, else appends it (jq keeps a key's place).
fn set<'a>(fields: &mut Vec<Field<'a>>, name: &'a str, value: Value) {
    match fields.iter_mut().find(|f| f.name == name) {
        Some(f) => f.value = value,
        None => fields.push(Field {
            name,
            key: Key::New,
            value,
        }),
    }
}

/// The top-level fields of `src`, which [`snapshot::json::check_value`] found to be one
/// JSON value: `None` unless it is an object whose keys hold no escapes and are distinct.
fn top_level(src: &[u8]) -> Option<Vec<Field<'_>>> {
    let mut i = skip_ws(src, 0);
    if src.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(src, i + 1);
    let mut fields: Vec<Field<'_>> = Vec::new();
    if src.get(i) == Some(&b'}') {
        return Some(fields);
    }
    loop {
        if src.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(src, i)?;
        let name = std::str::from_utf8(&src[i + 1..key_end - 1]).ok()?;
        if name.contains('\\') {
            return None;
        }
        let key = i..key_end;
        i = skip_ws(src, key_end);
        if src.get(i) != Some(&b':') {
            return None;
        }
        let start = skip_ws(src, i + 1);
        let end = value_end(src, start)?;
        fields.push(Field {
            name,
            key: Key::Raw(key),
            value: Value::Raw(start..end),
        });
        i = skip_ws(src, end);
        match src.get(i) {
            Some(b',') => i = skip_ws(src, i + 1),
            Some(b'}') => return distinct(&fields).then_some(fields),
            _ => return None,
        }
    }
}

/// No key twice (jq keeps the last of duplicates; the fast path leaves such documents
/// to it).
fn distinct(fields: &[Field<'_>]) -> bool {
    if fields.len() <= 16 {
        return fields
            .iter()
            .enumerate()
            .all(|(i, f)| fields[..i].iter().all(|g| g.name != f.name));
    }
    let mut seen = std::collections::HashSet::with_capacity(fields.len());
    fields.iter().all(|f| seen.insert(f.name))
}

fn skip_ws(src: &[u8], mut i: usize) -> usize {
    while matches!(src.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// Just past the closing quote of the string opening at `i`.
fn string_end(src: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        match src.get(j)? {
            b'"' => return Some(j + 1),
            b'\\' => j += 2,
            _ => j += 1,
        }
    }
}

/// Just past the value starting at `i` (valid JSON, so only its extent is found).
fn value_end(src: &[u8], i: usize) -> Option<usize> {
    match src.get(i)? {
        b'"' => string_end(src, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match src.get(j)? {
                    b'"' => {
                        j = string_end(src, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while let Some(c) = src.get(j) {
                if matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                    break;
                }
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

// ---- the program's text ----

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Dot,
    Name(String),
    Text(String),
    Word(&'static str),
    Update,
    Assign,
    Pipe,
    Comma,
    Open,
    Close,
}

fn tokens(text: &str) -> Option<Vec<Token>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'.' => {
                out.push(Token::Dot);
                i += 1;
            }
            b'|' if b.get(i + 1) == Some(&b'=') => {
                out.push(Token::Update);
                i += 2;
            }
            b'|' => {
                out.push(Token::Pipe);
                i += 1;
            }
            b'=' if b.get(i + 1) == Some(&b'=') => return None,
            b'=' => {
                out.push(Token::Assign);
                i += 1;
            }
            b',' => {
                out.push(Token::Comma);
                i += 1;
            }
            b'(' => {
                out.push(Token::Open);
                i += 1;
            }
            b')' => {
                out.push(Token::Close);
                i += 1;
            }
            b'"' => {
                let end = text[i + 1..].find('"')? + i + 1;
                let s = &text[i + 1..end];
                if s.contains('\\') || s.chars().any(char::is_control) {
                    return None;
                }
                out.push(Token::Text(s.to_string()));
                i = end + 1;
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                let w = &text[start..i];
                out.push(match w {
                    "del" => Token::Word("del"),
                    "null" => Token::Word("null"),
                    "true" => Token::Word("true"),
                    "false" => Token::Word("false"),
                    _ => Token::Name(w.to_string()),
                });
            }
            _ => return None,
        }
    }
    Some(out)
}

struct Parser {
    t: Vec<Token>,
    i: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.t.get(self.i)
    }

    fn eat(&mut self, want: &Token) -> Option<()> {
        (self.peek()? == want).then(|| self.i += 1)
    }

    /// `.a.b."c"` → ["a", "b", "c"] (a name may not follow a dot with space between:
    /// jq allows it, this parser does not need to).
    fn path(&mut self) -> Option<Vec<String>> {
        let mut p = Vec::new();
        while self.peek() == Some(&Token::Dot) {
            self.i += 1;
            match self.peek()? {
                Token::Name(n) | Token::Text(n) => {
                    p.push(n.clone());
                    self.i += 1;
                }
                _ => return None,
            }
        }
        (!p.is_empty()).then_some(p)
    }

    /// A step; `inner` when inside `._source |= ( … )` (paths are the source's).
    fn step(&mut self, inner: bool, out: &mut Vec<Step>) -> Option<()> {
        let field = |p: Vec<String>| -> Option<String> {
            match (inner, p.as_slice()) {
                (true, [f]) => Some(f.clone()),
                (false, [s, f]) if s == "_source" => Some(f.clone()),
                _ => None,
            }
        };
        if self.peek() == Some(&Token::Word("del")) {
            self.i += 1;
            self.eat(&Token::Open)?;
            let mut names = vec![field(self.path()?)?];
            while self.eat(&Token::Comma).is_some() {
                names.push(field(self.path()?)?);
            }
            self.eat(&Token::Close)?;
            out.push(Step::Delete(names));
            return Some(());
        }
        let target = self.path()?;
        if !inner && target == ["_source"] {
            // `|=` binds tighter than `|`: without parentheses only one step is updated
            self.eat(&Token::Update)?;
            if self.eat(&Token::Open).is_some() {
                self.pipe(true, out)?;
                return self.eat(&Token::Close);
            }
            if self.peek() != Some(&Token::Word("del")) {
                return None;
            }
            return self.step(true, out);
        }
        self.eat(&Token::Assign)?;
        if !inner && target == ["_index"] {
            return match self.peek()? {
                Token::Text(s) if !s.is_empty() => {
                    out.push(Step::Index(s.clone()));
                    self.i += 1;
                    Some(())
                }
                _ => None,
            };
        }
        let to = field(target)?;
        let step = match self.peek()?.clone() {
            Token::Text(s) => {
                self.i += 1;
                Step::Set {
                    to,
                    json: serde_json::to_string(&s).ok()?,
                }
            }
            Token::Word(w @ ("null" | "true" | "false")) => {
                self.i += 1;
                Step::Set {
                    to,
                    json: w.to_string(),
                }
            }
            Token::Dot => Step::Copy {
                to,
                from: field(self.path()?)?,
            },
            _ => return None,
        };
        out.push(step);
        Some(())
    }

    fn pipe(&mut self, inner: bool, out: &mut Vec<Step>) -> Option<()> {
        self.step(inner, out)?;
        while self.eat(&Token::Pipe).is_some() {
            self.step(inner, out)?;
        }
        Some(())
    }
}

/// The steps of `text`, when it is one of the recognised forms.
fn parse_program(text: &str) -> Option<Vec<Step>> {
    let mut p = Parser {
        t: tokens(text)?,
        i: 0,
    };
    let mut steps = Vec::new();
    p.pipe(false, &mut steps)?;
    (p.i == p.t.len()).then_some(steps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use coordination::Position;

    fn doc(source: &str, op: Op) -> Document {
        Document {
            position: Position::Doc(7),
            op,
            index: Arc::from("logs"),
            id: "d1".into(),
            doc_type: None,
            routing: Some("r".into()),
            source: Bytes::from(source.to_string()),
        }
    }

    fn both(program: &str, source: &str, op: Op) -> (Vec<Document>, Vec<Document>, bool) {
        let jq = Arc::new(JqProgram::compile(program).unwrap());
        let fast = FieldEdits::recognise(jq.clone()).expect("recognised");
        let d = doc(source, op);
        let took = fast.edit(&d).is_some();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        fast.reshape(&d, &mut a).unwrap();
        jq.reshape(&d, &mut b).unwrap();
        (a, b, took)
    }

    fn same(a: &[Document], b: &[Document]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert_eq!(
                (&x.index, &x.id, &x.routing, x.op),
                (&y.index, &y.id, &y.routing, y.op)
            );
            if x.op == Op::Delete {
                continue;
            }
            let vx: serde_json::Value = serde_json::from_slice(&x.source).unwrap();
            let vy: serde_json::Value = serde_json::from_slice(&y.source).unwrap();
            assert_eq!(
                vx,
                vy,
                "{} vs {}",
                String::from_utf8_lossy(&x.source),
                String::from_utf8_lossy(&y.source)
            );
        }
    }

    #[test]
    fn recognised_programs_give_what_jq_gives() {
        let programs = [
            "._source |= (.buyer = .customer | del(.customer))",
            "._source.buyer = ._source.customer | del(._source.customer)",
            "del(._source.customer, ._source.n)",
            "._source |= (.flag = true | .gone = null | .label = \"x y\")",
            "._index = \"archive\" | ._source |= del(.n)",
            "._source |= del(.customer) | ._source.c = ._source.n",
            "._index = \"archive\"",
            "._source |= (.\"odd name\" = .n) # a comment",
            "._source |= (.n = .n | .missing = .absent)",
        ];
        let sources = [
            r#"{"customer":{"name":"a\"b","tags":["x","}"]},"n":1.50e3,"t":"é"}"#,
            r#"{ "n" : 10 , "customer" : null }"#,
            r#"{}"#,
            r#"{"buyer":"old","customer":[1,[2,{"a":"]"}]],"z":false}"#,
        ];
        for p in programs {
            for s in sources {
                let (a, b, took) = both(p, s, Op::Index);
                assert!(took, "{p} on {s} went to jq");
                same(&a, &b);
            }
            let d = doc("", Op::Delete);
            let jq = Arc::new(JqProgram::compile(p).unwrap());
            let fast = FieldEdits::recognise(jq.clone()).unwrap();
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let (ra, rb) = (fast.reshape(&d, &mut a), jq.reshape(&d, &mut b));
            assert_eq!(ra.is_ok(), rb.is_ok());
            same(&a, &b);
        }
    }

    #[test]
    fn documents_the_fast_path_cannot_take_go_to_jq() {
        let p = "._source |= (.buyer = .customer | del(.customer))";
        for s in [
            r#"{"customer":1,"customer":2}"#,
            r#"{"cust\u006fmer":1}"#,
            "{\"customer\":\n1}",
            r#"{"customer":1 /* c */}"#,
        ] {
            let jq = Arc::new(JqProgram::compile(p).unwrap());
            let fast = FieldEdits::recognise(jq.clone()).unwrap();
            let d = doc(s, Op::Index);
            assert!(fast.edit(&d).is_none(), "{s} was taken");
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let (ra, rb) = (fast.reshape(&d, &mut a), jq.reshape(&d, &mut b));
            assert_eq!(ra.is_ok(), rb.is_ok());
            same(&a, &b);
        }
        // not an object: jq's own error
        let jq = Arc::new(JqProgram::compile(p).unwrap());
        let fast = FieldEdits::recognise(jq.clone()).unwrap();
        let mut out = Vec::new();
        assert!(fast.reshape(&doc("[1]", Op::Index), &mut out).is_err());
    }

    #[test]
    fn other_programs_are_left_to_jq() {
        for p in [
            ".",
            "select(._source.n > 1)",
            "._source |= (.a = .b) | .x",
            "._source.a.b = 1",
            "._source.a = 1",
            "._id = ._source.k",
            "del(._source.a), del(._source.b)",
            "._source.a = \"\\(.x)\"",
            "._source.a == ._source.b",
            "._index = ._source.ix",
        ] {
            let jq = Arc::new(JqProgram::compile(p).unwrap());
            assert!(FieldEdits::recognise(jq).is_none(), "{p} was recognised");
        }
    }
}
