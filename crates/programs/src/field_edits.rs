//! The common jq programs — set, copy, compute, update or delete `_source` fields at any
//! depth, set `_index` — recognised from their text and applied to the raw `_source` bytes:
//! only the objects a step reaches are taken apart, and only the values a step reads are
//! parsed, so such a transform costs a fraction of running the program on the whole
//! document.
//!
//! Recognised forms (whitespace and `#` comments anywhere), chained with `|`:
//!
//! - `._source |= (STEP | STEP …)` with paths from the source (`.a.b`), or the same steps
//!   written from the document (`._source.a.b`);
//! - STEP is `PATH = EXPR`, `PATH |= NAME` or `PATH |= NAME("text")` (a function of the
//!   value at PATH, run by jq itself on that value alone), `PATH op= LITERAL` (`op` one of
//!   `+ - * / %`), `del(PATH, …)`, `if COND then STEPS (elif COND then STEPS)* (else
//!   STEPS)? end` (`.` for no steps) or, outside `._source |= ( … )`, `select(COND)`;
//! - EXPR is a path, a literal (`"text"`, a number, `true`, `false`, `null`), arithmetic
//!   over them (`+ - * / %`, parentheses), comparisons (`== != < <= > >=`), `and`, `or`
//!   and `EXPR // EXPR`, with the precedence of the interpreter, jaq (where `%` binds
//!   tighter than `*`, `==` looser than `<`, and `//` tighter than `=`); a COND is an EXPR;
//! - `._source |= del(…)` (one step: `|=` binds tighter than `|`);
//! - `._index = "name"`, `._id = EXPR`, `._routing = EXPR`.
//!
//! Field names are identifiers or `."quoted"` names without escapes. Values are computed
//! with the interpreter's own operations on its own values, and written by the same writer
//! as the interpreter's output, so a computed value is the one jq computes. Anything else
//! is left to jq. A document the fast path cannot take exactly as jq would — a `_source`
//! that is not one object on one line; an object on a step's way with a duplicate key, a
//! key holding an escape, or missing or not an object; an operation or function that fails
//! or does not yield exactly one value; a delete — goes to jq too, so the outputs are the
//! same documents either way (keys may be in another order; JSON objects have none).
//! Values the steps do not change are kept byte for byte, where jq may print a number
//! anew (`-0` as `0`). One difference on purpose: a string times a number that would be
//! longer than 64 MiB is the document's transform error here, where the interpreter
//! would try to build it.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use jaq_core::ops::Cmp;
use jaq_json::Val;

use crate::program::{JqProgram, RunError};
use crate::reshape::{write_json, DocumentProgram};
use engine::document::{Document, Op};

/// A path of field names from `_source`.
type Path = Vec<String>;

/// One step of a recognised program.
#[derive(Debug, Clone)]
enum Step {
    /// `_source.PATH = EXPR`.
    Set { to: Path, expr: Expr },
    /// `_source.PATH |= FUNCTION`: the function's one output on the value at the path.
    Apply { at: Path, function: Function },
    /// `del(_source.PATH, …)`.
    Delete(Vec<Path>),
    /// `_index = "name"`.
    Index(String),
    /// `_id = EXPR`.
    Id(Expr),
    /// `_routing = EXPR`.
    Routing(Expr),
    /// `select(COND)`: the document goes on when COND holds, else it is filtered out.
    Select(Expr),
    /// `if COND then STEPS (elif COND then STEPS)* (else STEPS)? end`; `.` is no steps.
    If {
        branches: Vec<(Expr, Vec<Step>)>,
        otherwise: Vec<Step>,
    },
}

/// A function of one value, run by jq.
#[derive(Clone)]
struct Function {
    text: String,
    program: Arc<JqProgram>,
    /// `ascii_upcase` (`Some(true)`) or `ascii_downcase` (`Some(false)`), which on a string
    /// written without escapes are done on its bytes as written: jq maps the same bytes.
    ascii_case: Option<bool>,
}

impl std::fmt::Debug for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// A value computed from the document.
#[derive(Debug, Clone)]
enum Expr {
    Path(Path),
    Literal(Val),
    Math(Box<Expr>, Math, Box<Expr>),
    /// `a // b`: `a` unless it is `null` or `false`.
    Alternative(Box<Expr>, Box<Expr>),
    /// `a == b`, `a < b`, …, by the interpreter's own comparison.
    Compare(Box<Expr>, Cmp, Box<Expr>),
    /// `a and b` (`true`) or `a or b` (`false`), as booleans.
    Logic(Box<Expr>, bool, Box<Expr>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Math {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl Math {
    fn of(c: u8) -> Option<Math> {
        Some(match c {
            b'+' => Math::Add,
            b'-' => Math::Sub,
            b'*' => Math::Mul,
            b'/' => Math::Div,
            b'%' => Math::Rem,
            _ => return None,
        })
    }

    /// The interpreter's (jaq's) precedence: `%` binds tighter than `* /`, which bind
    /// tighter than `+ -` (jq puts `%` with `* /`).
    fn binds(self) -> u8 {
        match self {
            Math::Add | Math::Sub => 1,
            Math::Mul | Math::Div => 2,
            Math::Rem => 3,
        }
    }

    fn run(self, a: Val, b: Val) -> Result<Val, Stop> {
        if self == Math::Mul {
            repeat_fits(&a, &b)?;
        }
        match self {
            Math::Add => a + b,
            Math::Sub => a - b,
            Math::Mul => a * b,
            Math::Div => a / b,
            Math::Rem => a % b,
        }
        .map_err(|_| Stop::Jq)
    }
}

/// The longest string `"text" * n` may build (the interpreter would try any length).
const MAX_REPEAT: usize = 64 << 20;

/// `a * b` of a string and a number builds the string repeated: refused past
/// [`MAX_REPEAT`] bytes.
fn repeat_fits(a: &Val, b: &Val) -> Result<(), Stop> {
    let (text, n) = match (a, b) {
        (Val::TStr(t) | Val::BStr(t), Val::Num(n)) | (Val::Num(n), Val::TStr(t) | Val::BStr(t)) => {
            (t, n)
        }
        _ => return Ok(()),
    };
    let count = match n {
        jaq_json::Num::Int(i) => usize::try_from(*i).unwrap_or(0),
        jaq_json::Num::BigInt(_) => usize::MAX,
        _ => return Ok(()),
    };
    if count
        .checked_mul(text.len())
        .is_none_or(|len| len > MAX_REPEAT)
    {
        return Err(Stop::Refuse(format!(
            "a string of {} bytes times {n} is longer than {MAX_REPEAT} bytes",
            text.len()
        )));
    }
    Ok(())
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
    fn edit(&self, doc: &Document) -> Option<Edited> {
        match self.try_edit(doc) {
            Ok(e) => Some(e),
            Err(Stop::Jq) => None,
            Err(Stop::Refuse(why)) => Some(Edited::Refused(why)),
        }
    }

    fn try_edit(&self, doc: &Document) -> Result<Edited, Stop> {
        if doc.op == Op::Delete {
            // what a program does to a delete (no `_source`) is jq's business
            return Err(Stop::Jq);
        }
        let src = &doc.source[..];
        // The reader checked it on this thread (the usual case in a pipeline), else now.
        if !snapshot::json::checked_before(src) {
            snapshot::json::note_checked_sources();
            match snapshot::json::check_value(src) {
                Ok(scan) if !scan.line_breaks && !scan.comments => {}
                _ => return Err(Stop::Jq),
            }
        }
        let mut fields = object(src, 0..src.len()).ok_or(Stop::Jq)?;
        let mut meta = Meta::default();
        if !run(&self.steps, &mut fields, src, &mut meta)? {
            return Ok(Edited::Filtered);
        }
        let mut buf = Vec::with_capacity(src.len() + 32);
        write_object(&mut buf, &fields, src).ok_or(Stop::Jq)?;
        Ok(Edited::Doc(Document {
            position: doc.position.clone(),
            op: doc.op,
            index: meta
                .index
                .map_or_else(|| doc.index.clone(), |n| Arc::from(n.as_str())),
            id: meta.id.unwrap_or_else(|| doc.id.clone()),
            doc_type: doc.doc_type.clone(),
            routing: meta.routing.unwrap_or_else(|| doc.routing.clone()),
            // exactly sized (shrunk in place): `Bytes` of a `Vec` with room to spare
            // allocates a header besides
            source: Bytes::from(buf.into_boxed_slice()),
        }))
    }
}

/// What the steps made of a document.
#[derive(Debug)]
enum Edited {
    Doc(Document),
    /// A `select` did not hold: no output, as jq gives none.
    Filtered,
    /// The document's transform error.
    Refused(String),
}

/// Why the steps stopped short of a document.
#[derive(Debug)]
enum Stop {
    /// jq runs it (it gives the same document or error, or something the steps cannot
    /// tell).
    Jq,
    /// An error of the document's own, which jq would not survive either (it would try
    /// to build a string of that size).
    Refuse(String),
}

/// What the steps set besides `_source`.
#[derive(Default)]
struct Meta<'a> {
    index: Option<&'a String>,
    id: Option<String>,
    routing: Option<Option<String>>,
}

/// Runs `steps` on the fields; `Ok(false)` when a `select` filtered the document out.
fn run<'a>(
    steps: &'a [Step],
    fields: &mut Vec<Field<'a>>,
    src: &'a [u8],
    meta: &mut Meta<'a>,
) -> Result<bool, Stop> {
    for s in steps {
        match s {
            Step::Index(name) => meta.index = Some(name),
            // a value the output could not carry is jq's error
            Step::Id(expr) => {
                meta.id =
                    Some(crate::reshape::id_of(&eval(expr, fields, src)?).map_err(|_| Stop::Jq)?);
            }
            Step::Routing(expr) => {
                meta.routing = Some(
                    crate::reshape::routing_of(&eval(expr, fields, src)?).map_err(|_| Stop::Jq)?,
                );
            }
            Step::Delete(paths) => {
                for p in paths {
                    let (last, parents) = p.split_last().ok_or(Stop::Jq)?;
                    object_at(fields, src, parents)
                        .ok_or(Stop::Jq)?
                        .retain(|f| f.name != last.as_bytes());
                }
            }
            Step::Set { to, expr } => {
                let v = eval(expr, fields, src)?;
                set(fields, src, to, &v).ok_or(Stop::Jq)?;
            }
            Step::Apply { at, function } => {
                if let Some(upper) = function.ascii_case {
                    if ascii_case(fields, src, at, upper).is_some() {
                        continue;
                    }
                }
                let v = get(fields, src, at).ok_or(Stop::Jq)?;
                let mut outputs = function.program.run(v).map_err(|_| Stop::Jq)?;
                match (outputs.pop(), outputs.is_empty()) {
                    (Some(v), true) => set(fields, src, at, &v).ok_or(Stop::Jq)?,
                    _ => return Err(Stop::Jq),
                }
            }
            Step::Select(cond) => {
                if !truthy(&eval(cond, fields, src)?) {
                    return Ok(false);
                }
            }
            Step::If {
                branches,
                otherwise,
            } => {
                let mut chosen = otherwise;
                for (cond, steps) in branches {
                    if truthy(&eval(cond, fields, src)?) {
                        chosen = steps;
                        break;
                    }
                }
                if !run(chosen, fields, src, meta)? {
                    return Ok(false);
                }
            }
        }
    }
    Ok(true)
}

impl DocumentProgram for FieldEdits {
    fn reshape(&self, doc: &Document, out: &mut Vec<Document>) -> Result<Option<String>, RunError> {
        match self.edit(doc) {
            Some(Edited::Doc(d)) => {
                out.push(d);
                Ok(None)
            }
            Some(Edited::Filtered) => Ok(None),
            Some(Edited::Refused(why)) => Err(RunError(why)),
            None => self.jq.reshape(doc, out),
        }
    }
}

// ---- the document, taken apart only where the steps go ----

#[derive(Debug)]
enum Key {
    /// The key as written in the source, quotes included.
    Raw(Range<usize>),
    New,
}

#[derive(Debug)]
enum Value<'a> {
    /// A value as written in the source.
    Raw(Range<usize>),
    /// A value a step wrote, as JSON text.
    New(Vec<u8>),
    /// An object of the source a step went into.
    Object(Vec<Field<'a>>),
}

#[derive(Debug)]
struct Field<'a> {
    /// The key's text (UTF-8: [`snapshot::json::check_value`] checked it).
    name: &'a [u8],
    key: Key,
    value: Value<'a>,
}

/// The fields of the object `parents` leads to, taken apart on the way; `None` when an
/// object on the way is missing or is not one jq would see the same way (see
/// [`object`]).
fn object_at<'f, 'a>(
    mut fields: &'f mut Vec<Field<'a>>,
    src: &'a [u8],
    parents: &[String],
) -> Option<&'f mut Vec<Field<'a>>> {
    for name in parents {
        let f = fields.iter_mut().find(|f| f.name == name.as_bytes())?;
        if let Value::Raw(r) = &f.value {
            f.value = Value::Object(object(src, r.clone())?);
        }
        match &mut f.value {
            Value::Object(o) => fields = o,
            _ => return None,
        }
    }
    Some(fields)
}

/// The value at `path` (`null` when its last field is missing).
fn get<'a>(fields: &mut Vec<Field<'a>>, src: &'a [u8], path: &[String]) -> Option<Val> {
    let (last, parents) = path.split_last()?;
    let o = object_at(fields, src, parents)?;
    match o.iter().find(|f| f.name == last.as_bytes()) {
        None => Some(Val::Null),
        Some(f) => match &f.value {
            Value::Raw(r) => parse(&src[r.clone()]),
            Value::New(b) => parse(b),
            Value::Object(o) => {
                let mut b = Vec::new();
                write_object(&mut b, o, src)?;
                parse(&b)
            }
        },
    }
}

/// The string at `path`, as written in the source without escapes, in ASCII upper or
/// lower case; `None` (nothing changed) for any other value.
fn ascii_case<'a>(
    fields: &mut Vec<Field<'a>>,
    src: &'a [u8],
    path: &[String],
    upper: bool,
) -> Option<()> {
    let (last, parents) = path.split_last()?;
    let o = object_at(fields, src, parents)?;
    let f = o.iter_mut().find(|f| f.name == last.as_bytes())?;
    let Value::Raw(r) = &f.value else {
        return None;
    };
    let raw = &src[r.clone()];
    if raw.first() != Some(&b'"') || raw.contains(&b'\\') {
        return None;
    }
    f.value = Value::New(if upper {
        raw.to_ascii_uppercase()
    } else {
        raw.to_ascii_lowercase()
    });
    Some(())
}

fn parse(b: &[u8]) -> Option<Val> {
    if let Some(n) = number(b) {
        return Some(Val::Num(n));
    }
    jaq_json::read::parse_single(b).ok()
}

/// What jaq's parser makes of `b` when it is exactly one JSON number (an integer without
/// fraction or exponent as an integer, any other as the decimal text), without its lexer;
/// `None` for anything else.
fn number(b: &[u8]) -> Option<jaq_json::Num> {
    let digits = |mut i: usize| {
        let from = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        (i > from).then_some(i)
    };
    let mut i = usize::from(b.first() == Some(&b'-'));
    i = match b.get(i)? {
        b'0' => i + 1,
        b'1'..=b'9' => digits(i)?,
        _ => return None,
    };
    let int = i;
    if b.get(i) == Some(&b'.') {
        i = digits(i + 1)?;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        i = digits(i)?;
    }
    if i != b.len() {
        return None;
    }
    // only ASCII digits and signs: UTF-8
    let text = std::str::from_utf8(b).ok()?;
    if int == b.len() {
        jaq_json::Num::from_str_radix(text, 10)
    } else {
        Some(jaq_json::Num::Dec(text.to_string().into()))
    }
}

/// Sets `path` to `v`, in place when present, else appended (jq keeps a key's place).
fn set<'a>(fields: &mut Vec<Field<'a>>, src: &'a [u8], path: &'a [String], v: &Val) -> Option<()> {
    let (last, parents) = path.split_last()?;
    let mut json = Vec::new();
    if !write_json(&mut json, v) {
        return None;
    }
    let o = object_at(fields, src, parents)?;
    match o.iter_mut().find(|f| f.name == last.as_bytes()) {
        Some(f) => f.value = Value::New(json),
        None => o.push(Field {
            name: last.as_bytes(),
            key: Key::New,
            value: Value::New(json),
        }),
    }
    Some(())
}

fn eval<'a>(e: &Expr, fields: &mut Vec<Field<'a>>, src: &'a [u8]) -> Result<Val, Stop> {
    match e {
        Expr::Path(p) => get(fields, src, p).ok_or(Stop::Jq),
        Expr::Literal(v) => Ok(v.clone()),
        Expr::Math(a, op, b) => {
            let a = eval(a, fields, src)?;
            let b = eval(b, fields, src)?;
            op.run(a, b)
        }
        Expr::Alternative(a, b) => match eval(a, fields, src)? {
            Val::Null | Val::Bool(false) => eval(b, fields, src),
            v => Ok(v),
        },
        Expr::Compare(a, op, b) => {
            let a = eval(a, fields, src)?;
            let b = eval(b, fields, src)?;
            Ok(Val::Bool(op.run(&a, &b)))
        }
        Expr::Logic(a, and, b) => {
            // `and` stops at a false left side, `or` at a true one
            if truthy(&eval(a, fields, src)?) != *and {
                return Ok(Val::Bool(!*and));
            }
            Ok(Val::Bool(truthy(&eval(b, fields, src)?)))
        }
    }
}

/// jq's truth: all but `null` and `false`.
fn truthy(v: &Val) -> bool {
    !matches!(v, Val::Null | Val::Bool(false))
}

fn write_object(out: &mut Vec<u8>, fields: &[Field<'_>], src: &[u8]) -> Option<()> {
    out.push(b'{');
    let mut i = 0;
    while i < fields.len() {
        if i > 0 {
            out.push(b',');
        }
        let f = &fields[i];
        i += 1;
        if let (Key::Raw(k), Value::Raw(v)) = (&f.key, &f.value) {
            // a run of fields untouched and next to each other in the source, in one copy
            let mut end = v.end;
            while let Some(Field {
                key: Key::Raw(k),
                value: Value::Raw(v),
                ..
            }) = fields.get(i)
            {
                let gap = src.get(end..k.start)?;
                if gap.iter().filter(|&&c| c == b',').count() != 1
                    || !gap.iter().all(|c| matches!(c, b',' | b' ' | b'\t'))
                {
                    break;
                }
                end = v.end;
                i += 1;
            }
            out.extend_from_slice(src.get(k.start..end)?);
            continue;
        }
        match &f.key {
            Key::Raw(r) => out.extend_from_slice(&src[r.clone()]),
            Key::New => out.extend_from_slice(
                serde_json::to_string(std::str::from_utf8(f.name).ok()?)
                    .ok()?
                    .as_bytes(),
            ),
        }
        out.push(b':');
        match &f.value {
            Value::Raw(r) => out.extend_from_slice(&src[r.clone()]),
            Value::New(b) => out.extend_from_slice(b),
            Value::Object(o) => write_object(out, o, src)?,
        }
    }
    out.push(b'}');
    Some(())
}

/// The fields of the object that is exactly `src[at]` (part of a text
/// [`snapshot::json::check_value`] found to be one JSON value): `None` unless it is an
/// object whose keys hold no escapes and are distinct.
fn object(src: &[u8], at: Range<usize>) -> Option<Vec<Field<'_>>> {
    let src_end = at.end;
    let src = src.get(..src_end)?;
    let mut i = skip_ws(src, at.start);
    if src.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(src, i + 1);
    // room for the usual document at once (growing cost two more allocations each time)
    let mut fields: Vec<Field<'_>> = Vec::with_capacity(16);
    if src.get(i) == Some(&b'}') {
        return (skip_ws(src, i + 1) == src_end).then_some(fields);
    }
    loop {
        if src.get(i) != Some(&b'"') {
            return None;
        }
        // a key holding an escape: its first quote or backslash is a backslash
        let key_end = i + 1 + memchr::memchr2(b'"', b'\\', src.get(i + 1..)?)?;
        if src[key_end] != b'"' {
            return None;
        }
        let key_end = key_end + 1;
        let name = &src[i + 1..key_end - 1];
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
            Some(b'}') => {
                return (skip_ws(src, i + 1) == src_end && distinct(&fields)).then_some(fields)
            }
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
        j += memchr::memchr2(b'"', b'\\', src.get(j..)?)?;
        if src[j] == b'"' {
            return Some(j + 1);
        }
        j += 2;
    }
}

/// Bytes that open or close a string, an object or an array.
const STRUCTURE: [bool; 256] = {
    let mut t = [false; 256];
    t[b'"' as usize] = true;
    t[b'{' as usize] = true;
    t[b'}' as usize] = true;
    t[b'[' as usize] = true;
    t[b']' as usize] = true;
    t
};

/// Just past the value starting at `i` (valid JSON, so only its extent is found).
fn value_end(src: &[u8], i: usize) -> Option<usize> {
    match src.get(i)? {
        b'"' => string_end(src, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                j += src
                    .get(j..)?
                    .iter()
                    .position(|&c| STRUCTURE[usize::from(c)])?;
                match src[j] {
                    b'"' => {
                        j = string_end(src, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    _ => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
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
    Number(String),
    Word(&'static str),
    /// `|=`
    Update,
    /// `=`
    Assign,
    /// `+=`, `-=`, …
    MathAssign(Math),
    Math(Math),
    /// `//`
    Alternative,
    Compare(Cmp),
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
        let next = b.get(i + 1).copied();
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
            b'|' if next == Some(b'=') => {
                out.push(Token::Update);
                i += 2;
            }
            b'|' => {
                out.push(Token::Pipe);
                i += 1;
            }
            b'=' if next == Some(b'=') => {
                out.push(Token::Compare(Cmp::Eq));
                i += 2;
            }
            b'!' if next == Some(b'=') => {
                out.push(Token::Compare(Cmp::Ne));
                i += 2;
            }
            b'<' | b'>' => {
                let or_equal = next == Some(b'=');
                out.push(Token::Compare(match (c, or_equal) {
                    (b'<', false) => Cmp::Lt,
                    (b'<', true) => Cmp::Le,
                    (_, false) => Cmp::Gt,
                    (_, true) => Cmp::Ge,
                }));
                i += 1 + usize::from(or_equal);
            }
            b'=' => {
                out.push(Token::Assign);
                i += 1;
            }
            b'/' if next == Some(b'/') => {
                if b.get(i + 2) == Some(&b'=') {
                    return None;
                }
                out.push(Token::Alternative);
                i += 2;
            }
            b'+' | b'-' | b'*' | b'/' | b'%' => {
                let m = Math::of(c)?;
                if next == Some(b'=') {
                    out.push(Token::MathAssign(m));
                    i += 2;
                } else {
                    out.push(Token::Math(m));
                    i += 1;
                }
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
            c if c.is_ascii_digit() => {
                let start = i;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
                if b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                }
                // an exponent, or a name glued to the digits: jq's business
                if b.get(i)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'.')
                {
                    return None;
                }
                out.push(Token::Number(text[start..i].to_string()));
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                let w = &text[start..i];
                if start > 0 && b[start - 1] == b'.' {
                    // a field, whatever its name (`.label`, `.end`; `. end` is a keyword)
                    out.push(Token::Name(w.to_string()));
                    continue;
                }
                const WORDS: [&str; 11] = [
                    "del", "null", "true", "false", "and", "or", "if", "then", "elif", "else",
                    "end",
                ];
                out.push(match w {
                    w if WORDS.contains(&w) => Token::Word(WORDS.into_iter().find(|k| *k == w)?),
                    // other keywords: jq's business
                    "as" | "def" | "reduce" | "foreach" | "try" | "catch" | "label" | "import"
                    | "include" | "__loc__" => return None,
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

    /// A path into `_source`; `inner` when inside `._source |= ( … )` (paths are the
    /// source's).
    fn field(&mut self, inner: bool) -> Option<Path> {
        let mut p = self.path()?;
        if !inner {
            if p.len() < 2 || p[0] != "_source" {
                return None;
            }
            p.remove(0);
        }
        Some(p)
    }

    /// A literal, as jq's compiler makes it.
    fn literal(&mut self) -> Option<Val> {
        let v = match self.peek()? {
            Token::Text(s) => Val::from(s.clone()),
            Token::Number(n) => <Val as jaq_core::ValT>::from_num(n).ok()?,
            Token::Word("null") => Val::Null,
            Token::Word("true") => Val::Bool(true),
            Token::Word("false") => Val::Bool(false),
            _ => return None,
        };
        self.i += 1;
        Some(v)
    }

    /// A path, a literal or a parenthesised expression (which may hold `//`).
    fn operand(&mut self, inner: bool) -> Option<Expr> {
        match self.peek()? {
            Token::Dot => Some(Expr::Path(self.field(inner)?)),
            Token::Open => {
                self.i += 1;
                let e = self.alternative(inner)?;
                self.eat(&Token::Close)?;
                Some(e)
            }
            _ => Some(Expr::Literal(self.literal()?)),
        }
    }

    /// An expression: `//` binds loosest, then `or`, `and`, `==` and `!=`, `<` `<=` `>`
    /// `>=`, arithmetic; all left-associative, as in jaq.
    fn alternative(&mut self, inner: bool) -> Option<Expr> {
        let mut e = self.logic(inner, false)?;
        while self.eat(&Token::Alternative).is_some() {
            let r = self.logic(inner, false)?;
            e = Expr::Alternative(Box::new(e), Box::new(r));
        }
        Some(e)
    }

    /// `a or b …` (`and` false) or `a and b …` (`and` true).
    fn logic(&mut self, inner: bool, and: bool) -> Option<Expr> {
        let word = Token::Word(if and { "and" } else { "or" });
        // `and` binds tighter than `or`, comparisons tighter than `and`
        let next = |p: &mut Parser| {
            if and {
                p.compare(inner, true)
            } else {
                p.logic(inner, true)
            }
        };
        let mut e = next(self)?;
        while self.eat(&word).is_some() {
            let r = next(self)?;
            e = Expr::Logic(Box::new(e), and, Box::new(r));
        }
        Some(e)
    }

    /// `a == b`, `a != b` (`equality`), or `a < b` and the like, which bind tighter.
    fn compare(&mut self, inner: bool, equality: bool) -> Option<Expr> {
        let next = |p: &mut Parser| {
            if equality {
                p.compare(inner, false)
            } else {
                p.math(inner, 0)
            }
        };
        let mut e = next(self)?;
        while let Some(Token::Compare(c)) = self.peek() {
            let c = *c;
            if matches!(c, Cmp::Eq | Cmp::Ne) != equality {
                break;
            }
            self.i += 1;
            let r = next(self)?;
            e = Expr::Compare(Box::new(e), c, Box::new(r));
        }
        Some(e)
    }

    /// Arithmetic with operators that bind tighter than `above`, left-associative.
    fn math(&mut self, inner: bool, above: u8) -> Option<Expr> {
        let mut e = self.operand(inner)?;
        while let Some(Token::Math(m)) = self.peek() {
            let m = *m;
            if m.binds() <= above {
                break;
            }
            self.i += 1;
            let r = self.math(inner, m.binds())?;
            e = Expr::Math(Box::new(e), m, Box::new(r));
        }
        Some(e)
    }

    /// The function of `PATH |= NAME` or `PATH |= NAME("text")`.
    fn function(&mut self) -> Option<Function> {
        let Token::Name(name) = self.peek()?.clone() else {
            return None;
        };
        self.i += 1;
        let text = if self.eat(&Token::Open).is_some() {
            let Token::Text(arg) = self.peek()?.clone() else {
                return None;
            };
            self.i += 1;
            self.eat(&Token::Close)?;
            format!("{name}({})", serde_json::to_string(&arg).ok()?)
        } else {
            name
        };
        let program = Arc::new(JqProgram::compile(&text).ok()?);
        let ascii_case = match text.as_str() {
            "ascii_upcase" => Some(true),
            "ascii_downcase" => Some(false),
            _ => None,
        };
        Some(Function {
            text,
            program,
            ascii_case,
        })
    }

    /// A step; `inner` when inside `._source |= ( … )` (paths are the source's).
    fn step(&mut self, inner: bool, out: &mut Vec<Step>) -> Option<()> {
        if self.peek() == Some(&Token::Word("del")) {
            self.i += 1;
            self.eat(&Token::Open)?;
            let mut paths = vec![self.field(inner)?];
            while self.eat(&Token::Comma).is_some() {
                paths.push(self.field(inner)?);
            }
            self.eat(&Token::Close)?;
            out.push(Step::Delete(paths));
            return Some(());
        }
        if self.eat(&Token::Word("if")).is_some() {
            let mut branches = Vec::new();
            loop {
                let cond = self.alternative(inner)?;
                self.eat(&Token::Word("then"))?;
                branches.push((cond, self.branch(inner)?));
                if self.eat(&Token::Word("elif")).is_none() {
                    break;
                }
            }
            let otherwise = if self.eat(&Token::Word("else")).is_some() {
                self.branch(inner)?
            } else {
                Vec::new()
            };
            self.eat(&Token::Word("end"))?;
            out.push(Step::If {
                branches,
                otherwise,
            });
            return Some(());
        }
        // in `._source |= (…)` no output would delete `_source`, not filter the document
        if !inner
            && self.peek() == Some(&Token::Name("select".into()))
            && self.t.get(self.i + 1) == Some(&Token::Open)
        {
            self.i += 2;
            let cond = self.alternative(inner)?;
            self.eat(&Token::Close)?;
            out.push(Step::Select(cond));
            return Some(());
        }
        let start = self.i;
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
        if !inner && target == ["_index"] {
            self.eat(&Token::Assign)?;
            return match self.peek()? {
                Token::Text(s) if !s.is_empty() => {
                    out.push(Step::Index(s.clone()));
                    self.i += 1;
                    Some(())
                }
                _ => None,
            };
        }
        if !inner && (target == ["_id"] || target == ["_routing"]) {
            self.eat(&Token::Assign)?;
            let expr = self.alternative(inner)?;
            out.push(if target[0] == "_id" {
                Step::Id(expr)
            } else {
                Step::Routing(expr)
            });
            return Some(());
        }
        self.i = start;
        let to = self.field(inner)?;
        let step = match self.peek()?.clone() {
            Token::Assign => {
                self.i += 1;
                // in jaq `=` binds looser than `//` (in jq, tighter)
                Step::Set {
                    to,
                    expr: self.alternative(inner)?,
                }
            }
            Token::MathAssign(m) => {
                self.i += 1;
                // a literal only: jq and jaq agree on what `.a += x` means for one
                let v = self.literal()?;
                Step::Set {
                    expr: Expr::Math(
                        Box::new(Expr::Path(to.clone())),
                        m,
                        Box::new(Expr::Literal(v)),
                    ),
                    to,
                }
            }
            Token::Update => {
                self.i += 1;
                Step::Apply {
                    at: to,
                    function: self.function()?,
                }
            }
            _ => return None,
        };
        out.push(step);
        Some(())
    }

    /// The steps of an `if` branch: `.` (none) or a pipe of steps.
    fn branch(&mut self, inner: bool) -> Option<Vec<Step>> {
        let mut steps = Vec::new();
        if self.peek() == Some(&Token::Dot)
            && matches!(
                self.t.get(self.i + 1),
                Some(Token::Word("elif" | "else" | "end"))
            )
        {
            self.i += 1;
            return Some(steps);
        }
        self.pipe(inner, &mut steps)?;
        Some(steps)
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

    /// `-0` as `0`: an untouched value is kept as written, where jq prints it anew.
    fn zero(v: serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        match v {
            Value::Number(n) if n.as_f64() == Some(0.0) => Value::from(0),
            Value::Array(a) => Value::Array(a.into_iter().map(zero).collect()),
            Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, zero(v))).collect()),
            v => v,
        }
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
            let json = |b: &[u8]| {
                serde_json::from_slice(b)
                    .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(b)))
            };
            let vx = zero(json(&x.source));
            let vy = zero(json(&y.source));
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

    /// Values read from the source are what jaq's parser makes of the same bytes: numbers,
    /// which take a path of their own, and what is not a number.
    #[test]
    fn values_read_are_what_jq_reads() {
        for b in [
            "0",
            "-0",
            "7",
            "-12",
            "1.5",
            "-0.25",
            "1.50e3",
            "2E-3",
            "1e+2",
            "123.45",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "123456789012345678901234567890",
            "-123456789012345678901234567890.5",
            "\"x\"",
            "null",
            "true",
            "[1]",
            "{\"a\":1}",
            "01",
            "1.",
            ".5",
            "-",
            "1e",
            "+1",
            "1 ",
            " 1",
            "--1",
            "1-2",
            "",
        ] {
            let ours = parse(b.as_bytes()).map(|v| format!("{v:?}"));
            let jaq = jaq_json::read::parse_single(b.as_bytes())
                .ok()
                .map(|v| format!("{v:?}"));
            assert_eq!(ours, jaq, "{b:?}");
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
            "._source |= (select(.n > 1))",
            "select(._source.n > 1) | .x",
            "._source |= (.a = .b) | .x",
            "._source.a.b = -1",
            "._source.a = .b",
            "._source.a = (._source.b // 1) | 2",
            "._source.a = (._source.b | not)",
            "if ._source.a then 1 else . end",
            "if ._source.a then ._source.b = 1 end | ._type = 1",
            "._source.a |= . + 1",
            "._source.a //= 1",
            "._source.a += ._source.b",
            "._source.a = 1e3",
            "._source |= (.a = 1) | ._source.b = [1]",
            "._source.a |= if . then 1 else 2 end",
            "._source.a.[0] = 1",
            "._id = ._source.k | ._source.x = ._id",
            "del(._source.a), del(._source.b)",
            "._source.a = \"\\(.x)\"",
            "._source.a == ._source.b",
            "._index = ._source.ix",
        ] {
            let jq = Arc::new(JqProgram::compile(p).unwrap());
            assert!(FieldEdits::recognise(jq).is_none(), "{p} was recognised");
        }
    }

    /// What a fast program does on documents shaped to reach its corners (missing and
    /// null objects on the way, numbers of every kind, strings with escapes, duplicate
    /// keys) is what jq does, document by document, errors included.
    mod against_jq {
        use super::*;
        use proptest::prelude::*;

        const PROGRAMS: &[&str] = &[
            "._source.customer.name |= ascii_upcase | ._source.total = (._source.price * ._source.qty)",
            "._source |= (.customer.name |= ascii_downcase | .total = .price * .qty + 1)",
            "._source.total = ._source.price - ._source.qty * 2 % 3",
            "._source.total = (._source.price / ._source.qty)",
            "._source.price += 1 | ._source.qty *= 2 | ._source.n -= 0.5",
            "._source.label = (._source.customer.name // ._source.customer.id // \"none\")",
            "._source.label = ._source.customer.name // ._source.n * 2 // null",
            "._source.customer.tier = \"gold\" | del(._source.customer.id, ._source.qty)",
            "._source.customer.name |= tostring | ._source.price |= tonumber",
            "._source.customer.name |= ltrimstr(\"a\") | ._source.customer |= length",
            "._source |= (.deep.a.b = .price | .c = .deep)",
            "._source.qty |= empty",
            "._index = \"other\" | ._source.customer.id = ._source.customer.name",
            "select(._source.qty > 500 and ._source.price != null)",
            "select(._source.qty == 0 or ._source.qty < ._source.price) | ._source.ok = true",
            "if ._source.qty > 500 then ._source.bulk = true else . end",
            "._source |= (if .qty >= .price then .a = .qty elif .n <= 1 then del(.n) else .b = (.n == .qty) end)",
            "if ._source.customer.name then ._index = \"named\" | select(._source.n) end",
            "._source.flag = (._source.qty > 1 == ._source.n < 2)",
            "._id = ._source.customer.name | ._routing = ._source.qty",
            "if ._source.qty < 500 then ._index = \"old\" | ._routing = ._source.n else . end",
        ];

        fn number() -> impl Strategy<Value = String> {
            prop_oneof![
                any::<i32>().prop_map(|n| n.to_string()),
                any::<i64>().prop_map(|n| n.to_string()),
                Just("0".to_string()),
                Just("-0".to_string()),
                Just("123456789012345678901234567890".to_string()),
                (-1000i32..1000, 0u32..100).prop_map(|(a, b)| format!("{a}.{b:02}")),
                Just("1.5e3".to_string()),
                Just("2.50".to_string()),
            ]
        }

        fn scalar() -> impl Strategy<Value = String> {
            prop_oneof![
                number(),
                Just("null".to_string()),
                Just("true".to_string()),
                Just("\"Ab c\"".to_string()),
                Just("\"\\u00e9t\\u00c9 \\\"q\\\" aXb\"".to_string()),
                Just("\"abc\"".to_string()),
                Just("[1,\"x\"]".to_string()),
            ]
        }

        fn customer() -> impl Strategy<Value = Option<String>> {
            prop_oneof![
                Just(None),
                Just(Some("null".to_string())),
                Just(Some("7".to_string())),
                (scalar(), scalar(), any::<bool>()).prop_map(|(n, i, dup)| {
                    let dup = if dup { r#","id":0"# } else { "" };
                    Some(format!(r#"{{ "name" : {n},"id":{i}{dup}}}"#))
                }),
                scalar().prop_map(|n| Some(format!(r#"{{"id":{n}}}"#))),
            ]
        }

        fn source() -> impl Strategy<Value = String> {
            (
                customer(),
                proptest::option::of(scalar()),
                proptest::option::of(scalar()),
                proptest::option::of(scalar()),
                proptest::option::of(scalar()),
            )
                .prop_map(|(c, mut p, mut q, n, total)| {
                    // a string times a large number would have jq build it (the fast path
                    // refuses it, see below): kept small here, where jq runs too
                    let text =
                        |v: &Option<String>| v.as_deref().is_some_and(|v| v.starts_with('"'));
                    let large = |v: &Option<String>| {
                        v.as_deref().is_some_and(|v| {
                            v.parse::<i128>().map_or(v.len() > 20, |n| n.abs() > 1000)
                        })
                    };
                    if text(&p) && large(&q) {
                        q = Some("3".into());
                    }
                    if text(&q) && large(&p) {
                        p = Some("3".into());
                    }
                    let mut parts = Vec::new();
                    for (k, v) in [
                        ("customer", c),
                        ("price", p),
                        ("qty", q),
                        ("n", n),
                        ("total", total),
                    ] {
                        if let Some(v) = v {
                            parts.push(format!(r#""{k}":{v}"#));
                        }
                    }
                    format!("{{{}}}", parts.join(","))
                })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(400))]
            #[test]
            fn fast_programs_give_what_jq_gives(s in source()) {
                for p in PROGRAMS {
                    let jq = Arc::new(JqProgram::compile(p).unwrap());
                    let fast = FieldEdits::recognise(jq.clone())
                        .unwrap_or_else(|| panic!("{p} was not recognised"));
                    let d = doc(&s, Op::Index);
                    if let Some(Edited::Refused(_)) = fast.edit(&d) {
                        // a string times a large number: jq would try to build it
                        continue;
                    }
                    let (mut a, mut b) = (Vec::new(), Vec::new());
                    let (ra, rb) = (fast.reshape(&d, &mut a), jq.reshape(&d, &mut b));
                    prop_assert_eq!(ra.is_ok(), rb.is_ok(), "{} on {}: {:?} vs {:?}", p, s, ra, rb);
                    same(&a, &b);
                }
            }
        }

        /// The comparison above is not only jq against itself: each program (but the one
        /// whose function yields nothing) takes a plain document on the fast path.
        #[test]
        fn every_program_takes_a_plain_document() {
            let s =
                r#"{"customer":{"name":"ab","id":1},"price":2,"qty":600,"n":1,"deep":{"a":{}}}"#;
            for p in PROGRAMS.iter().filter(|p| !p.contains("empty")) {
                let jq = Arc::new(JqProgram::compile(p).unwrap());
                let fast = FieldEdits::recognise(jq).unwrap();
                assert!(fast.edit(&doc(s, Op::Index)).is_some(), "{p} went to jq");
            }
        }

        #[test]
        fn a_string_times_a_large_number_is_the_documents_error() {
            let p = "._source.total = (._source.price * ._source.qty)";
            let fast = FieldEdits::recognise(Arc::new(JqProgram::compile(p).unwrap())).unwrap();
            for qty in [
                "7509502597965075654",
                "123456789012345678901234567890",
                "30000000",
            ] {
                let s = format!(r#"{{"price":"abc","qty":{qty}}}"#);
                let e = fast
                    .reshape(&doc(&s, Op::Index), &mut Vec::new())
                    .unwrap_err();
                assert!(e.0.contains("longer than"), "{e}");
            }
            let mut out = Vec::new();
            fast.reshape(&doc(r#"{"price":"ab","qty":3}"#, Op::Index), &mut out)
                .unwrap();
            let v: serde_json::Value = serde_json::from_slice(&out[0].source).unwrap();
            assert_eq!(v["total"], "ababab");
        }

        #[test]
        fn the_benchmark_program_takes_common_documents() {
            let p = PROGRAMS[0];
            let jq = Arc::new(JqProgram::compile(p).unwrap());
            let fast = FieldEdits::recognise(jq.clone()).unwrap();
            let s =
                r#"{"customer":{"name":"ann \u00e9","id":3},"price":19.99,"qty":3,"tags":["a"]}"#;
            let d = doc(s, Op::Index);
            let Some(Edited::Doc(out)) = fast.edit(&d) else {
                panic!("not taken")
            };
            let v: serde_json::Value = serde_json::from_slice(&out.source).unwrap();
            assert_eq!(v["customer"]["name"], "ANN \u{e9}");
            assert_eq!(v["total"].to_string(), "59.97");
            assert_eq!(v["tags"][0], "a");
            let (_, b, took) = both(p, s, Op::Index);
            assert!(took);
            same(&[out], &b);
        }
    }
}
