//! The reference tool's JavaScript document transforms, run by an embedded QuickJS engine
//! (`rquickjs`), so that a transform written for it moves over unchanged.
//!
//! The script's value is a function `main(bindings)` (the usual ending is
//! `(() => main)();`); `main` is called once with the parsed `bindingsObject` and returns
//! the transform. The transform is called with a list of documents — rfs passes one per
//! call — each a `Map` (nested objects are `Map`s too, arrays are arrays) in the reference
//! tool's bulk-operation shape:
//!
//! ```json
//! {"schema": "rfs-opensearch-bulk-v1", "operation_type": "index", "include_document": true,
//!  "operation": {"_index": "books", "_id": "1", "_type": "doc", "routing": "r"},
//!  "document": {"title": "…"}}
//! ```
//!
//! It returns a list of such documents (plain objects or `Map`s): none filters the input,
//! several explode it. A single document instead of a list is taken as a list of one. A
//! thrown error is that document's `transform_error`. Numbers are JavaScript numbers (an
//! integer beyond 2^53 loses precision, as in the reference tool).
//!
//! Two engines run it, with the same outputs ([`JsEngine`]): V8 in a `node` child
//! process per reader thread ([`node`]), given a batch of documents per call, as the
//! reference tool does; or QuickJS, embedded, one document per call. With a batch, the
//! outputs are told apart by input through the maps the transform was given (an output
//! that is an input's map, or holds its `operation` or `document` map); when they
//! cannot be, or the transform throws, each input of the batch is run alone, so that an
//! error is the failing document's only (a transform that keeps state between calls
//! sees those inputs twice).
//!
//! node is sent each document's JS-canonical text when it has one ([`canonical`]: what
//! node writes for it unchanged), beside the batch's JSON, with where each of its
//! top-level values is (32-bit numbers node views as they are, without parsing them),
//! so that node parses only the values the transform reads (and
//! the whole text only when the transform fills the document's map or the document goes
//! out whole). An input that is its only output, changed in top-level fields of its
//! document only (set, or handed out as objects), is answered with those fields; rfs
//! writes the output from the text it sent and those fields, so that node neither sorts
//! nor writes the rest, and rfs reads only what changed. Every other answer is whole, as
//! before; the output bytes are the same either way (javascript/patch_tests.rs).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::path::PathBuf;
use std::sync::{Mutex, Weak};

use rquickjs::{CatchResultExt, Context, Function, Persistent, Runtime, Value};

use crate::program::RunError;
use crate::reshape::{output_of, reason_key, DocumentProgram, Reshaped};
use engine::document::{Document, Op};

pub mod canonical;
pub mod node;
#[cfg(test)]
mod patch_tests;

#[cfg(test)]
thread_local! {
    /// How many answers this thread took as patches (for tests).
    static PATCHED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Which engine runs the JavaScript transforms (`--js-engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JsEngine {
    /// node when a usable one (18 or later) is found, else QuickJS.
    #[default]
    Auto,
    Node,
    QuickJs,
}

/// A name that is not one of [`JsEngine`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not auto, node or quickjs")]
pub struct UnknownJsEngine(pub String);

impl std::str::FromStr for JsEngine {
    type Err = UnknownJsEngine;
    fn from_str(s: &str) -> Result<JsEngine, UnknownJsEngine> {
        match s {
            "auto" => Ok(JsEngine::Auto),
            "node" => Ok(JsEngine::Node),
            "quickjs" => Ok(JsEngine::QuickJs),
            _ => Err(UnknownJsEngine(s.to_string())),
        }
    }
}

static DEFAULT_ENGINE: Mutex<JsEngine> = Mutex::new(JsEngine::Auto);

/// The engine of the programs compiled from now on ([`JsProgram::new`]).
pub fn set_default_engine(engine: JsEngine) {
    *DEFAULT_ENGINE.lock().unwrap_or_else(|p| p.into_inner()) = engine;
}

/// How many documents node is given per call.
const NODE_BATCH: usize = 256;

/// How many bytes of canonical texts a line holds at most, but for one text longer alone
/// (node.js reads each line as one string; from 128 KiB on, of two-byte characters too,
/// V8 allocates a string apart, which costs it about 15 times the CPU per byte).
const TEXTS_LINE: usize = 60 << 10;

/// The engine a program runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Runs {
    QuickJs,
    Node(PathBuf),
}

/// `engine` made concrete: `auto` picks node when it is usable (said once, at info).
fn resolve(engine: JsEngine) -> Result<Runs, RunError> {
    static SAID: std::sync::Once = std::sync::Once::new();
    match (engine, node::probe()) {
        (JsEngine::QuickJs, _) => Ok(Runs::QuickJs),
        (JsEngine::Node, Ok((path, _))) => Ok(Runs::Node(path.clone())),
        (JsEngine::Node, Err(why)) => Err(RunError(format!(
            "--js-engine node: no usable node ({why}); set RFS_NODE to its path"
        ))),
        (JsEngine::Auto, Ok((path, version))) => {
            SAID.call_once(|| {
                tracing::info!(node = %path.display(), %version, "JavaScript transforms run in node (V8)")
            });
            Ok(Runs::Node(path.clone()))
        }
        (JsEngine::Auto, Err(why)) => {
            SAID.call_once(
                || tracing::info!(%why, "JavaScript transforms run in QuickJS: no usable node"),
            );
            Ok(Runs::QuickJs)
        }
    }
}

/// Memory one engine may use.
const MEMORY_LIMIT: usize = 512 << 20;
/// How long the transform may run on one document before it is interrupted.
const TIME_LIMIT: Duration = Duration::from_secs(10);

/// Glue between rfs and the user's transform: JSON text in, `Map`s to the transform
/// (filled when first used), plain JSON text out.
const RUNNER: &str = include_str!("javascript/glue.js");

/// A JavaScript transform in the reference tool's form.
#[derive(Debug)]
pub struct JsProgram {
    /// Identifies this program's engines in each thread's cache.
    key: u64,
    script: String,
    /// The `bindingsObject` as JSON text.
    bindings: String,
    time_limit: Duration,
    runs: Runs,
    /// The node processes started for this program, reaped when it goes.
    processes: Mutex<Vec<Weak<Mutex<std::process::Child>>>>,
    /// node answers every document whole (for tests: the patches change no byte).
    no_patch: bool,
    /// The node started to check the script, for the first thread that needs one.
    spare: Mutex<Option<node::Node>>,
}

impl Drop for JsProgram {
    fn drop(&mut self) {
        let processes = self.processes.get_mut().unwrap_or_else(|p| p.into_inner());
        for p in processes.drain(..) {
            if let Some(c) = p.upgrade() {
                node::reap(&c);
            }
        }
    }
}

static NEXT_KEY: AtomicU64 = AtomicU64::new(1);

/// One thread's engine for one program. Fields drop in order: the saved function, then
/// the context, then the runtime (QuickJS asserts that nothing outlives its runtime).
struct Engine {
    run: Persistent<Function<'static>>,
    ctx: Context,
    /// Milliseconds since `epoch` after which the running call is interrupted.
    deadline: Arc<AtomicU64>,
    epoch: Instant,
    _rt: Runtime,
}

thread_local! {
    static ENGINES: RefCell<HashMap<u64, Engine>> = RefCell::new(HashMap::new());
    static NODES: RefCell<HashMap<u64, node::Node>> = RefCell::new(HashMap::new());
}

impl JsProgram {
    /// Loads the script and calls its `main` with `bindings` (JSON text) once, here, so
    /// that a script that cannot run is an error before any document is read; in the
    /// engine [`set_default_engine`] chose.
    pub fn new(script: String, bindings: String) -> Result<JsProgram, RunError> {
        let engine = *DEFAULT_ENGINE.lock().unwrap_or_else(|p| p.into_inner());
        JsProgram::with_engine(script, bindings, engine)
    }

    /// [`JsProgram::new`] in `engine`.
    pub fn with_engine(
        script: String,
        bindings: String,
        engine: JsEngine,
    ) -> Result<JsProgram, RunError> {
        let p = JsProgram {
            key: NEXT_KEY.fetch_add(1, Ordering::Relaxed),
            script,
            bindings,
            time_limit: TIME_LIMIT,
            runs: resolve(engine)?,
            processes: Mutex::new(Vec::new()),
            no_patch: false,
            spare: Mutex::new(None),
        };
        match &p.runs {
            Runs::QuickJs => drop(p.engine()?),
            Runs::Node(path) => {
                let n = node::Node::start(path, &p.script, &p.bindings, p.time_limit)?;
                p.processes
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(n.process());
                *p.spare.lock().unwrap_or_else(|e| e.into_inner()) = Some(n);
            }
        }
        Ok(p)
    }

    /// `true` when the program runs in node.
    pub fn in_node(&self) -> bool {
        matches!(self.runs, Runs::Node(_))
    }

    /// The program with node answering every document whole, as before patches were.
    #[cfg(test)]
    fn without_patches(mut self) -> JsProgram {
        self.no_patch = true;
        self
    }

    /// How long the transform may run on one document, or node on one batch (default 10 s).
    pub fn with_time_limit(mut self, limit: Duration) -> JsProgram {
        self.time_limit = limit;
        // The spare's watchdog sleeps as long as the limit it was started with.
        *self.spare.get_mut().unwrap_or_else(|e| e.into_inner()) = None;
        self
    }

    fn engine(&self) -> Result<Engine, RunError> {
        let err = |what: &str, e: &dyn std::fmt::Display| RunError(format!("{what}: {e}"));
        let rt = Runtime::new().map_err(|e| err("starting QuickJS", &e))?;
        rt.set_memory_limit(MEMORY_LIMIT);
        rt.set_max_stack_size(1 << 20);
        let deadline = Arc::new(AtomicU64::new(u64::MAX));
        let epoch = Instant::now();
        {
            let deadline = deadline.clone();
            rt.set_interrupt_handler(Some(Box::new(move || {
                epoch.elapsed().as_millis() as u64 > deadline.load(Ordering::Relaxed)
            })));
        }
        let ctx = Context::full(&rt).map_err(|e| err("starting QuickJS", &e))?;
        deadline.store(
            epoch.elapsed().as_millis() as u64 + TIME_LIMIT.as_millis() as u64,
            Ordering::Relaxed,
        );
        let run = ctx.with(|ctx| -> Result<_, RunError> {
            let main: Value = ctx
                .eval(self.script.as_str())
                .catch(&ctx)
                .map_err(|e| err("the initialization script", &e))?;
            let main = main.into_function().ok_or_else(|| {
                RunError(
                    "the initialization script must evaluate to a function main(bindings) \
                     (end it with `(() => main)();`)"
                        .into(),
                )
            })?;
            let bindings = ctx
                .json_parse(self.bindings.as_str())
                .catch(&ctx)
                .map_err(|e| err("bindingsObject is not JSON", &e))?;
            let transform: Value = main
                .call((bindings,))
                .catch(&ctx)
                .map_err(|e| err("main(bindings)", &e))?;
            let transform = transform.into_function().ok_or_else(|| {
                RunError("main(bindings) must return the transform function".into())
            })?;
            let runner: Function = ctx
                .eval(RUNNER)
                .catch(&ctx)
                .map_err(|e| err("rfs's JavaScript glue", &e))?;
            let run: Function = runner
                .call((transform, false))
                .catch(&ctx)
                .map_err(|e| err("rfs's JavaScript glue", &e))?;
            Ok(Persistent::save(&ctx, run))
        })?;
        deadline.store(u64::MAX, Ordering::Relaxed);
        Ok(Engine {
            run,
            ctx,
            deadline,
            epoch,
            _rt: rt,
        })
    }

    /// Runs the transform on one JSON text (a list of documents), in this thread's engine.
    pub fn call(&self, input: &str) -> Result<String, RunError> {
        ENGINES.with(|engines| {
            let mut engines = engines.borrow_mut();
            let e = match engines.entry(self.key) {
                std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => v.insert(self.engine()?),
            };
            e.deadline.store(
                e.epoch.elapsed().as_millis() as u64 + self.time_limit.as_millis() as u64,
                Ordering::Relaxed,
            );
            let out = e.ctx.with(|ctx| -> Result<String, RunError> {
                let run = e
                    .run
                    .clone()
                    .restore(&ctx)
                    .map_err(|err| RunError(format!("the transform: {err}")))?;
                run.call::<_, String>((input,))
                    .catch(&ctx)
                    .map_err(|err| RunError(format!("the transform: {err}")))
            });
            e.deadline.store(u64::MAX, Ordering::Relaxed);
            // An interrupted or out-of-memory engine is not reused.
            let broken = out
                .as_ref()
                .err()
                .is_some_and(|m| m.0.contains("interrupted") || m.0.contains("memory"));
            if broken {
                engines.remove(&self.key);
            }
            out
        })
    }
}

impl JsProgram {
    /// Sends `line` (a batch of `docs` documents) to this thread's node, started if need
    /// be; a node that failed is not reused.
    fn node_call(&self, lines: &[&[u8]], docs: usize) -> Result<String, RunError> {
        let Runs::Node(path) = &self.runs else {
            unreachable!("node_call on a QuickJS program")
        };
        NODES.with(|nodes| {
            let mut nodes = nodes.borrow_mut();
            let n = match nodes.entry(self.key) {
                std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => {
                    let spare = self.spare.lock().unwrap_or_else(|p| p.into_inner()).take();
                    let n = match spare {
                        Some(n) => n,
                        None => {
                            let n = node::Node::start(
                                path,
                                &self.script,
                                &self.bindings,
                                self.time_limit,
                            )?;
                            let mut processes =
                                self.processes.lock().unwrap_or_else(|p| p.into_inner());
                            processes.retain(|p| p.strong_count() > 0);
                            processes.push(n.process());
                            n
                        }
                    };
                    v.insert(n)
                }
            };
            let out = n.call(lines, self.time_limit, docs);
            if out.is_err() {
                nodes.remove(&self.key);
            }
            out
        })
    }

    /// The transform on `docs` in node: one answer per document. Unless `exact`, each
    /// document that has a JS-canonical text ([`canonical`]) is sent as that text and may
    /// be answered with a patch of its top-level fields.
    fn node_batch(&self, docs: &[&Document], exact: bool) -> Vec<Reshaped> {
        let mut answers: Vec<Option<Reshaped>> = docs.iter().map(|_| None).collect();
        let mut line = Vec::with_capacity(docs.iter().map(|d| d.source.len() + 200).sum());
        // The size of the spans and the number of lines of texts, filled in below
        // (node.js's `Number` reads their zeros).
        line.extend_from_slice(b"00000000000000000000 00000000000000000000 {\"docs\":[");
        let mut sent = Vec::with_capacity(docs.len());
        let mut canon = (!self.no_patch).then(canonical::Entries::default);
        // The canonical texts: the batch's lines of texts.
        let mut texts = Vec::with_capacity(if canon.is_some() {
            docs.iter().map(|d| d.source.len()).sum::<usize>() + 1
        } else {
            1
        });
        // Where each line of the texts starts: node makes a string of each, and one of
        // 128 KiB or more costs it an allocation of its own (several times the CPU).
        let mut pieces = vec![0];
        let mut patchable: Vec<Option<Patchable>> = Vec::with_capacity(docs.len());
        for (i, d) in docs.iter().enumerate() {
            let start = line.len();
            if !sent.is_empty() {
                line.push(b',');
            }
            let last = pieces[pieces.len() - 1];
            if texts.len() > last && texts.len() - last + d.source.len() > TEXTS_LINE {
                texts.push(b'\n');
                pieces.push(texts.len());
            }
            let canon = canon.as_mut().map(|c| (c, &mut texts));
            match write_reference(d, exact, &mut line, canon) {
                Ok(p) => {
                    sent.push(i);
                    patchable.push(p);
                }
                Err(e) => {
                    line.truncate(start);
                    answers[i] = Some(Err(e));
                }
            }
        }
        line.extend_from_slice(b"],\"patch\":\"");
        line.extend(
            patchable
                .iter()
                .map(|p| if p.is_some() { b'1' } else { b'0' }),
        );
        line.extend_from_slice(b"\",\"keys\":[");
        let spans = write_keys_and_spans(&texts, &pieces, &patchable, canon.as_ref(), &mut line);
        line.extend_from_slice(b"]}\n");
        texts.push(b'\n');
        let spans_at = texts.len();
        texts.extend(spans.iter().flat_map(|n| n.to_ne_bytes()));
        let size = (texts.len() - spans_at).to_string();
        line[20 - size.len()..20].copy_from_slice(size.as_bytes());
        let lines = pieces.len().to_string();
        line[41 - lines.len()..41].copy_from_slice(lines.as_bytes());
        if !sent.is_empty() {
            let sent_docs = Sent {
                texts: &texts,
                patchable: &patchable,
                entries: canon.as_ref(),
            };
            let answered = self
                .node_call(&[&line, &texts], sent.len())
                .and_then(|text| read_answers(&text, sent.iter().map(|i| docs[*i]), &sent_docs));
            match answered {
                Ok(Some(got)) => {
                    for (i, a) in sent.iter().zip(got) {
                        answers[*i] = Some(a);
                    }
                }
                // A batch node could not read, or that stopped node: each document
                // alone, its text made by rfs's JSON values (with their errors).
                Ok(None) if sent.len() > 1 || !exact => {
                    for i in sent {
                        answers[i] = Some(self.node_batch(&[docs[i]], true).pop().expect("one"));
                    }
                }
                Err(_) if sent.len() > 1 => {
                    for i in sent {
                        answers[i] = Some(self.node_batch(&[docs[i]], true).pop().expect("one"));
                    }
                }
                Ok(None) => {
                    for i in sent {
                        answers[i] = Some(Err(RunError(
                            "node could not read the document's JSON".into(),
                        )));
                    }
                }
                Err(e) => {
                    for i in sent {
                        answers[i] = Some(Err(e.clone()));
                    }
                }
            }
        }
        answers
            .into_iter()
            .map(|a| a.expect("every document answered"))
            .collect()
    }
}

/// The batch's list of keys onto `line` (JSON strings, comma-separated), and the spans of
/// the canonical texts in `texts` (lines starting at `pieces`) for node (node.js's
/// `inputs`): per document sent, 0 when it is not sent as a canonical text, else how many
/// numbers follow, the line holding its text, the text's start and end in that line, how
/// many top-level values it has, then for each its key (an index in the list), its kind
/// ([`value_kind`]), start and end — for a [`FLAT_OBJECT`], where its members are (in the
/// numbers of the document, counted from the text's start) and how many — then the flat
/// objects' members, each as a value.
fn write_keys_and_spans(
    texts: &[u8],
    pieces: &[usize],
    patchable: &[Option<Patchable>],
    canon: Option<&canonical::Entries>,
    line: &mut Vec<u8>,
) -> Vec<u32> {
    // Where each canonical text and its top-level values are in its line, in
    // UTF-16 code units (its characters are all below U+D000: one unit each), each
    // value's key an index in the batch's list of keys: 32-bit numbers in this
    // machine's order, for node to view as they are (a Uint32Array) after the texts.
    let mut spans: Vec<u32> = Vec::with_capacity(patchable.len() * 16);
    let mut names: rustc_hash::FxHashMap<&[u8], u32> = Default::default();
    // The keys met last at each position of a document, with their indices.
    let mut last: Vec<(&[u8], u32)> = Vec::new();
    // A document's objects' members (see `flat_members`), sent after its values.
    let mut members: Vec<u32> = Vec::new();
    let mut flat = Vec::new();
    // A text past 4 GiB is past what node can hold in a string: it cannot read the line.
    let n32 = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    let mut units = 0;
    let mut at = 0;
    let mut piece = 0;
    for p in patchable {
        let (Some(p), Some(c)) = (p, canon) else {
            spans.push(0);
            continue;
        };
        // The line holding the text (each counted from its start).
        while piece + 1 < pieces.len() && pieces[piece + 1] <= p.text.start {
            piece += 1;
            units = 0;
            at = pieces[piece];
        }
        units += utf16_len(&texts[at..p.text.start]);
        at = p.text.end;
        let text = &texts[p.text.clone()];
        let start = units;
        let ascii = text.is_ascii();
        units += if ascii { text.len() } else { utf16_len(text) };
        let entries = &c.list[p.entries.clone()];
        // How many numbers follow, filled in below.
        let head = spans.len();
        spans.extend([0, n32(piece), n32(start), n32(units), n32(entries.len())]);
        members.clear();
        // The offsets of the text's values come in order: each counted from the last.
        let (mut from, mut from_units) = (p.text.start, start);
        let mut unit = |off: usize| {
            from_units += if ascii {
                off - from
            } else {
                utf16_len(&texts[from..off])
            };
            from = off;
            n32(from_units)
        };
        for (j, e) in entries.iter().enumerate() {
            let name = &texts[e.member.start..e.value - 1];
            // Documents of an index mostly have the keys of the one before, in its order.
            let key = match last.get(j) {
                Some(&(k, n)) if k == name => n,
                _ => {
                    let n = n32(names.len());
                    let n = *names.entry(name).or_insert(n);
                    if j < last.len() {
                        last[j] = (name, n);
                    } else {
                        last.push((name, n));
                    }
                    n
                }
            };
            if texts[e.value] == b'{' && flat_members(texts, e.value..e.member.end, &mut flat) {
                // Its members after the document's values: where, and how many.
                let first = 3 + 4 * entries.len() + members.len();
                spans.extend([key, FLAT_OBJECT, n32(first), n32(flat.len())]);
                for (k, kind, v) in &flat {
                    let n = n32(names.len());
                    let k = *names.entry(&texts[k.clone()]).or_insert(n);
                    members.extend([k, *kind, unit(v.start), unit(v.end)]);
                }
            } else {
                let kind = value_kind(&texts[e.value..e.member.end]);
                spans.extend([key, kind, unit(e.value), unit(e.member.end)]);
            }
        }
        spans.extend_from_slice(&members);
        spans[head] = n32(spans.len() - head - 1);
    }
    let mut keys: Vec<(&[u8], u32)> = names.into_iter().collect();
    keys.sort_unstable_by_key(|k| k.1);
    for (n, (k, _)) in keys.iter().enumerate() {
        if n > 0 {
            line.push(b',');
        }
        line.extend_from_slice(k);
    }
    spans
}

/// The kind of a top-level value that is an object of [`FLAT`] members at most, each a
/// string, a number or a literal: node makes it from its members' spans (glue.js's
/// `spanValue`) rather than parse its text.
const FLAT_OBJECT: u32 = 6;
/// How many members an object made from their spans may have.
const FLAT: usize = 32;

/// The members of the object whose canonical text (valid JSON without white space) is
/// `texts[value]`, onto `out` (emptied first) as the range of each key's JSON text, its
/// value's kind ([`value_kind`]) and range; `false` when one of them is an object or an
/// array, or there are more than [`FLAT`].
fn flat_members(
    texts: &[u8],
    value: std::ops::Range<usize>,
    out: &mut Vec<(std::ops::Range<usize>, u32, std::ops::Range<usize>)>,
) -> bool {
    // Just past the string that opens at `i`.
    let string_end = |mut i: usize| -> Option<usize> {
        i += 1;
        loop {
            i += memchr::memchr2(b'"', b'\\', texts.get(i..value.end)?)?;
            if texts[i] == b'"' {
                return Some(i + 1);
            }
            i += 2;
        }
    };
    out.clear();
    let mut i = value.start + 1;
    if texts.get(i) == Some(&b'}') {
        return i + 1 == value.end;
    }
    loop {
        if out.len() == FLAT || texts.get(i) != Some(&b'"') {
            return false;
        }
        let Some(key_end) = string_end(i) else {
            return false;
        };
        if texts.get(key_end) != Some(&b':') {
            return false;
        }
        let v = key_end + 1;
        let end = match texts.get(v) {
            Some(b'"') => string_end(v),
            Some(b'{' | b'[') | None => None,
            Some(_) => texts[v..value.end]
                .iter()
                .position(|&b| b == b',' || b == b'}')
                .map(|n| v + n),
        };
        let Some(end) = end else {
            return false;
        };
        out.push((i..key_end, value_kind(&texts[v..end]), v..end));
        match texts.get(end) {
            Some(b',') => i = end + 1,
            Some(b'}') => return end + 1 == value.end,
            _ => return false,
        }
    }
}

/// What a top-level value's canonical text is, for node (glue.js's `spanValue`): 1 a string
/// without escapes, 2 a number, 3 `true`, 4 `false`, 5 `null`, 0 anything else (parsed);
/// [`FLAT_OBJECT`] is given by `write_keys_and_spans`.
fn value_kind(text: &[u8]) -> u32 {
    match text.first() {
        Some(b'"') if memchr::memchr(b'\\', text).is_none() => 1,
        Some(b'-' | b'0'..=b'9') => 2,
        Some(b't') => 3,
        Some(b'f') => 4,
        Some(b'n') => 5,
        _ => 0,
    }
}

/// A document sent to node as its JS-canonical text, which node may answer with a patch:
/// where that text is in the line, and its top-level members (a range of the batch's
/// [`canonical::Entries`]).
#[derive(Debug, Clone)]
struct Patchable {
    text: std::ops::Range<usize>,
    entries: std::ops::Range<usize>,
}

/// How many UTF-16 code units the UTF-8 `text` makes, none of its characters past U+FFFF:
/// its bytes less its continuation bytes (`10xxxxxx`), counted eight at a time.
fn utf16_len(text: &[u8]) -> usize {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut chunks = text.chunks_exact(8);
    let mut continuations = 0;
    for c in &mut chunks {
        let x = u64::from_le_bytes(c.try_into().expect("eight bytes"));
        // Bit 7 set and bit 6 clear, in each byte (bit 6 shifted onto bit 7 of its own byte).
        continuations += (x & !(x << 1) & HIGH).count_ones() as usize;
    }
    continuations += chunks
        .remainder()
        .iter()
        .filter(|&&b| b & 0xC0 == 0x80)
        .count();
    text.len() - continuations
}

/// What was sent to node in a batch, for reading its patches.
struct Sent<'a> {
    /// The canonical texts.
    texts: &'a [u8],
    /// One per document sent.
    patchable: &'a [Option<Patchable>],
    entries: Option<&'a canonical::Entries>,
}

/// Whether an output that keeps `doc`'s fields but its `_source` comes out of node's full
/// answer as `doc`'s own fields: its id and index are valid, and node would not send the
/// output the slow way for them (node.js's `UNUSUAL`).
fn plain_fields(doc: &Document) -> bool {
    let usual =
        |s: &str| !s.bytes().any(|b| b >= 0xED) && !canonical::surrogate_escape(s.as_bytes());
    !doc.id.is_empty()
        && doc.id.len() <= 512
        && !doc.index.is_empty()
        && usual(&doc.id)
        && usual(&doc.index)
        && doc.doc_type.as_deref().is_none_or(usual)
        && doc.routing.as_deref().is_none_or(usual)
}

/// `doc` in the reference shape as JSON text, onto `out`: its `_source` as it is, unless
/// `exact` or it holds a line break or a surrogate escape, which go through rfs's JSON
/// values (as the QuickJS engine's input does: the same keys, values and errors). With
/// `canon`, a document that has a JS-canonical text has that text written to the texts
/// (the same values) and `{}` in its place, and where that text is comes back.
fn write_reference(
    doc: &Document,
    exact: bool,
    out: &mut Vec<u8>,
    canon: Option<(&mut canonical::Entries, &mut Vec<u8>)>,
) -> Result<Option<Patchable>, RunError> {
    let src = &doc.source[..];
    let string = |out: &mut Vec<u8>, s: &str| {
        serde_json::to_writer(&mut *out, s).expect("a string serialises")
    };
    let delete = doc.op == Op::Delete;
    // The canonical writer refuses a line break and a surrogate escape itself, so a text
    // it writes is one that `unusual` below would pass: those are looked for once.
    if let Some((entries, texts)) =
        canon.filter(|_| !exact && !delete && !src.is_empty() && plain_fields(doc))
    {
        let start = texts.len();
        let from = entries.list.len();
        if canonical::write(src, texts, entries) {
            // [_id, _index, _type or null, routing or null, 1 when op_type is create]:
            // node.js's `inputs` makes the reference shape of it.
            out.push(b'[');
            string(out, &doc.id);
            out.push(b',');
            string(out, &doc.index);
            for s in [&doc.doc_type.as_deref(), &doc.routing.as_deref()] {
                out.push(b',');
                match s {
                    Some(s) => string(out, s),
                    None => out.extend_from_slice(b"null"),
                }
            }
            out.extend_from_slice(if doc.op == Op::Create { b",1]" } else { b",0]" });
            return Ok(Some(Patchable {
                text: start..texts.len(),
                entries: from..entries.list.len(),
            }));
        }
    }
    let unusual = exact || memchr::memchr(b'\n', src).is_some() || canonical::surrogate_escape(src);
    if unusual {
        let v = to_reference(doc)?;
        serde_json::to_writer(&mut *out, &v).expect("JSON serialises");
        return Ok(None);
    }
    out.extend_from_slice(b"{\"document\":");
    if src.is_empty() {
        out.extend_from_slice(b"null");
    } else {
        out.extend_from_slice(src);
    }
    out.extend_from_slice(if delete {
        &b",\"include_document\":false,\"operation\":{\"_id\":"[..]
    } else {
        &b",\"include_document\":true,\"operation\":{\"_id\":"[..]
    });
    string(out, &doc.id);
    out.extend_from_slice(b",\"_index\":");
    string(out, &doc.index);
    if let Some(t) = &doc.doc_type {
        out.extend_from_slice(b",\"_type\":");
        string(out, t);
    }
    if doc.op == Op::Create {
        out.extend_from_slice(b",\"op_type\":\"create\"");
    }
    if let Some(r) = &doc.routing {
        out.extend_from_slice(b",\"routing\":");
        string(out, r);
    }
    out.extend_from_slice(if delete {
        &b"},\"operation_type\":\"delete\",\"schema\":\"rfs-opensearch-bulk-v1\"}"[..]
    } else {
        &b"},\"operation_type\":\"index\",\"schema\":\"rfs-opensearch-bulk-v1\"}"[..]
    });
    Ok(None)
}

/// node's answers to a batch of `inputs` (node.js describes them); `None` when node could
/// not read the batch.
fn read_answers<'a>(
    text: &str,
    inputs: impl ExactSizeIterator<Item = &'a Document>,
    sent: &Sent,
) -> Result<Option<Vec<Reshaped>>, RunError> {
    let garbled = |e: &dyn std::fmt::Display| RunError(format!("node's answer: {e}"));
    if text.starts_with("{\"fatal\"") {
        return Ok(None);
    }
    let answers: Vec<Answer> = serde_json::from_str(text).map_err(|e| garbled(&e))?;
    if answers.len() != inputs.len() {
        return Err(garbled(&format!(
            "{} answers to {} documents",
            answers.len(),
            inputs.len()
        )));
    }
    let mut patch = Vec::new();
    Ok(Some(
        answers
            .into_iter()
            .zip(inputs)
            .zip(sent.patchable)
            .map(|((a, input), patchable)| {
                outputs_of(a, input, patchable.as_ref(), sent, &mut patch)
            })
            .collect(),
    ))
}

/// One of node's answers (node.js describes them).
#[derive(serde::Deserialize)]
struct Answer<'a> {
    #[serde(default)]
    e: Option<String>,
    #[serde(borrow, default)]
    o: Option<Vec<Output<'a>>>,
    /// Keys and values, one after the other.
    #[serde(borrow, default)]
    p: Option<Vec<&'a serde_json::value::RawValue>>,
}

/// An output in an answer.
#[derive(serde::Deserialize)]
struct Output<'a> {
    #[serde(default)]
    m: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(borrow, default)]
    d: Option<&'a serde_json::value::RawValue>,
    #[serde(default)]
    s: Option<String>,
}

/// The output of a patch answer, `items` its keys and values one after the other: the
/// canonical text sent for `input` with those fields (node.js's `patchAnswer`).
fn patched<'t>(
    input: &Document,
    patchable: Option<&Patchable>,
    sent: &Sent,
    items: &[&'t serde_json::value::RawValue],
    patch: &mut Vec<canonical::Patch<'t>>,
) -> Reshaped {
    let garbled = |e: &dyn std::fmt::Display| RunError(format!("node's answer: {e}"));
    let (Some(at), Some(entries)) = (patchable, sent.entries) else {
        return Err(garbled(&"a patch for a document sent whole"));
    };
    if !items.len().is_multiple_of(2) {
        return Err(garbled(&"a patch without its last value"));
    }
    patch.clear();
    for kv in items.chunks_exact(2) {
        let (k, v) = (kv[0].get(), kv[1].get());
        let key = match k.strip_prefix('"').and_then(|k| k.strip_suffix('"')) {
            Some(plain) if !plain.contains('\\') => plain.as_bytes().to_vec(),
            _ => serde_json::from_str::<String>(k)
                .map_err(|e| garbled(&e))?
                .into_bytes(),
        };
        patch.push(canonical::Patch {
            key_text: k,
            key,
            value: v,
        });
    }
    let mut source = Vec::with_capacity(at.text.len() + 64);
    if !canonical::merge(
        sent.texts,
        &entries.list[at.entries.clone()],
        &entries.keys,
        patch,
        &mut source,
    ) {
        return Err(garbled(&"a patch naming a field twice"));
    }
    let out = output_of(input, bytes::Bytes::from(source));
    #[cfg(test)]
    PATCHED.with(|c| c.set(c.get() + 1));
    Ok((vec![out], None))
}

/// The outputs of one of node's answers for `input`.
fn outputs_of<'t>(
    a: Answer<'t>,
    input: &Document,
    patchable: Option<&Patchable>,
    sent: &Sent,
    patch: &mut Vec<canonical::Patch<'t>>,
) -> Reshaped {
    let garbled = |e: &dyn std::fmt::Display| RunError(format!("node's answer: {e}"));
    if let Some(e) = a.e {
        return Err(RunError(format!("the transform: {e}")));
    }
    if let Some(p) = a.p {
        return patched(input, patchable, sent, &p, patch);
    }
    let mut out = Vec::new();
    let mut filtered = None;
    for o in a.o.unwrap_or_default() {
        match o {
            Output { s: Some(s), .. } => {
                let v: serde_json::Value = serde_json::from_str(&s)
                    .map_err(|e| RunError(format!("the transform's result is not JSON: {e}")))?;
                if let Some(r) = push_reference_outputs(input, v, &mut out)? {
                    filtered = Some(r);
                }
            }
            Output {
                m: Some(m),
                d: Some(d),
                ..
            } => {
                if let Some(r) = m.get("_filtered") {
                    filtered = Some(reason_key(r.as_str().unwrap_or("program")));
                    continue;
                }
                out.push(from_reference_parts(input, &m, Body::Text(d.get()))?);
            }
            _ => return Err(garbled(&"an output without its parts")),
        }
    }
    Ok((out, filtered))
}

/// The reference tool's document shape of `doc`.
pub fn to_reference(doc: &Document) -> Result<serde_json::Value, RunError> {
    let mut op = serde_json::Map::new();
    op.insert("_index".into(), doc.index.to_string().into());
    op.insert("_id".into(), doc.id.clone().into());
    if let Some(t) = &doc.doc_type {
        op.insert("_type".into(), t.to_string().into());
    }
    if let Some(r) = &doc.routing {
        op.insert("routing".into(), r.clone().into());
    }
    let delete = doc.op == Op::Delete;
    if doc.op == Op::Create {
        op.insert("op_type".into(), "create".into());
    }
    let mut m = serde_json::Map::new();
    m.insert("schema".into(), "rfs-opensearch-bulk-v1".into());
    m.insert(
        "operation_type".into(),
        if delete { "delete" } else { "index" }.into(),
    );
    m.insert("include_document".into(), (!delete).into());
    m.insert("operation".into(), serde_json::Value::Object(op));
    let source = if doc.source.is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::from_slice(&doc.source)
            .map_err(|e| RunError(format!("_source is not JSON: {e}")))?
    };
    m.insert("document".into(), source);
    Ok(serde_json::Value::Object(m))
}

/// One output in the reference shape back into a document (what it leaves out keeps the
/// input's).
pub fn from_reference(input: &Document, v: &serde_json::Value) -> Result<Document, RunError> {
    let m = v.as_object().ok_or_else(|| {
        RunError(
            "an output document: not an object (expected {operation_type, operation, document})"
                .into(),
        )
    })?;
    from_reference_parts(input, m, Body::Value(m.get("document")))
}

/// An output's `document`: as a value, or as the JSON text of an object that needs no
/// change (node's answers).
enum Body<'a> {
    Value(Option<&'a serde_json::Value>),
    Text(&'a str),
}

/// [`from_reference`] of an output's fields but its `document`, and that document.
fn from_reference_parts(
    input: &Document,
    m: &serde_json::Map<String, serde_json::Value>,
    body: Body,
) -> Result<Document, RunError> {
    let bad = |what: &str| RunError(format!("an output document: {what}"));
    let mut doc = output_of(input, bytes::Bytes::new());
    if let Some(op) = m.get("operation") {
        let op = op
            .as_object()
            .ok_or_else(|| bad("operation is not an object"))?;
        if let Some(ix) = op.get("_index") {
            match ix.as_str() {
                Some(s) if !s.is_empty() => {
                    if s != &*doc.index {
                        doc.index = Arc::from(s);
                    }
                }
                _ => return Err(bad("operation._index must be a non-empty string")),
            }
        }
        if let Some(id) = op.get("_id") {
            doc.id = match id {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Number(n) => n.to_string(),
                _ => String::new(),
            };
            if doc.id.is_empty() || doc.id.len() > 512 {
                return Err(bad(
                    "operation._id must be a non-empty string of at most 512 bytes",
                ));
            }
        }
        match op.get("_type") {
            None => {}
            Some(serde_json::Value::Null) => doc.doc_type = None,
            Some(serde_json::Value::String(t)) => doc.doc_type = Some(Arc::from(t.as_str())),
            Some(_) => return Err(bad("operation._type must be a string")),
        }
        match op.get("routing") {
            None => {}
            Some(serde_json::Value::Null) => doc.routing = None,
            Some(serde_json::Value::String(r)) => doc.routing = Some(r.clone()),
            Some(serde_json::Value::Number(n)) => doc.routing = Some(n.to_string()),
            Some(_) => return Err(bad("operation.routing must be a string")),
        }
        if op.get("op_type").and_then(|t| t.as_str()) == Some("create") {
            doc.op = Op::Create;
        }
    }
    match m.get("operation_type").and_then(|t| t.as_str()) {
        None => {}
        Some("index") if doc.op == Op::Delete => doc.op = Op::Index,
        Some("index") => {}
        Some("delete") => doc.op = Op::Delete,
        Some(other) => {
            return Err(bad(&format!(
                "operation_type {other:?} is not \"index\" or \"delete\""
            )))
        }
    }
    match body {
        Body::Text(t) if doc.op != Op::Delete => {
            doc.source = bytes::Bytes::copy_from_slice(t.as_bytes());
        }
        Body::Value(Some(s @ serde_json::Value::Object(_))) if doc.op != Op::Delete => {
            doc.source = bytes::Bytes::from(serde_json::to_vec(s).expect("JSON serialises"));
        }
        _ if doc.op == Op::Delete => {}
        _ => return Err(bad("document must be an object")),
    }
    Ok(doc)
}

impl DocumentProgram for JsProgram {
    fn batch_size(&self) -> usize {
        if self.in_node() {
            NODE_BATCH
        } else {
            1
        }
    }

    fn reshape_batch(&self, docs: &[Document]) -> Vec<Reshaped> {
        if !self.in_node() {
            return docs
                .iter()
                .map(|d| {
                    let mut out = Vec::new();
                    self.reshape(d, &mut out).map(|f| (out, f))
                })
                .collect();
        }
        let docs: Vec<&Document> = docs.iter().collect();
        self.node_batch(&docs, false)
    }

    fn reshape(&self, doc: &Document, out: &mut Vec<Document>) -> Result<Option<String>, RunError> {
        if self.in_node() {
            let (docs, filtered) = self.node_batch(&[doc], false).pop().expect("one")?;
            out.extend(docs);
            return Ok(filtered);
        }
        let input = serde_json::Value::Array(vec![to_reference(doc)?]).to_string();
        let text = self.call(&input)?;
        let v: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| RunError(format!("the transform's result is not JSON: {e}")))?;
        let v = match v {
            serde_json::Value::Null => serde_json::Value::Array(Vec::new()),
            a @ serde_json::Value::Array(_) => a,
            one => serde_json::Value::Array(vec![one]),
        };
        push_reference_outputs(doc, v, out)
    }
}

/// The documents of a list of outputs in the reference shape, pushed onto `out`; an
/// output `{"_filtered": "REASON"}` names why the input is filtered (returned).
pub fn push_reference_outputs(
    input: &Document,
    outputs: serde_json::Value,
    out: &mut Vec<Document>,
) -> Result<Option<String>, RunError> {
    let start = out.len();
    let serde_json::Value::Array(outputs) = outputs else {
        return Err(RunError("the transform's result is not a list".into()));
    };
    let mut filtered = None;
    for o in &outputs {
        if let Some(r) = o.get("_filtered") {
            filtered = Some(reason_key(r.as_str().unwrap_or("program")));
            continue;
        }
        match from_reference(input, o) {
            Ok(d) => out.push(d),
            Err(e) => {
                out.truncate(start);
                return Err(e);
            }
        }
    }
    Ok(filtered)
}

#[cfg(test)]
mod tests {
    use super::*;
    use coordination::Position;
    use std::cell::Cell;

    thread_local! {
        static ENGINE: Cell<JsEngine> = const { Cell::new(JsEngine::QuickJs) };
    }

    /// The engines every test runs on: QuickJS, and node (required under CI=true).
    fn engines() -> Vec<JsEngine> {
        match node::probe() {
            Ok(_) => vec![JsEngine::QuickJs, JsEngine::Node],
            Err(why) if std::env::var("CI").is_ok_and(|v| v == "true") => {
                panic!("CI=true and no node to test the node engine with: {why}")
            }
            Err(why) => {
                eprintln!("skipping the node engine: {why}");
                vec![JsEngine::QuickJs]
            }
        }
    }

    /// Runs `test` once per engine ([`new`] compiles in it).
    fn on_each_engine(test: fn()) {
        for e in engines() {
            ENGINE.with(|c| c.set(e));
            test();
        }
    }

    /// A program in the engine under test.
    fn new(script: String, bindings: String) -> Result<JsProgram, RunError> {
        JsProgram::with_engine(script, bindings, ENGINE.with(|c| c.get()))
    }

    fn doc() -> Document {
        Document {
            position: Position::Doc(1),
            op: Op::Index,
            index: "books".into(),
            id: "7".into(),
            doc_type: None,
            routing: Some("r".into()),
            source: bytes::Bytes::from_static(br#"{"title":"T","n":1}"#),
        }
    }

    const SCRIPT: &str = r#"
function main(context) {
  return (documents) => documents.flatMap(d => {
    const src = d.get("document");
    if (src.get("n") === context.skip) return [];
    src.set("title_lower", src.get("title").toLowerCase());
    src.set("tag", context.tag);
    d.get("operation").set("_index", d.get("operation").get("_index") + "_new");
    return [d];
  });
}
(() => main)();
"#;

    #[test]
    fn a_reference_style_transform_runs_with_its_bindings() {
        on_each_engine(a_reference_style_transform_runs_with_its_bindings_on);
    }

    fn a_reference_style_transform_runs_with_its_bindings_on() {
        let p = new(SCRIPT.into(), r#"{"tag":"x","skip":2}"#.into()).unwrap();
        let mut out = Vec::new();
        assert_eq!(p.reshape(&doc(), &mut out).unwrap(), None);
        assert_eq!(out.len(), 1);
        assert_eq!(&*out[0].index, "books_new");
        assert_eq!(out[0].id, "7");
        assert_eq!(out[0].routing.as_deref(), Some("r"));
        let v: serde_json::Value = serde_json::from_slice(&out[0].source).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"title":"T","n":1,"title_lower":"t","tag":"x"})
        );
        // In another thread: its own engine.
        let p = Arc::new(p);
        let q = p.clone();
        let n = std::thread::spawn(move || {
            let mut out = Vec::new();
            let mut d = doc();
            d.source = bytes::Bytes::from_static(br#"{"title":"T","n":2}"#);
            q.reshape(&d, &mut out).unwrap();
            out.len()
        })
        .join()
        .unwrap();
        assert_eq!(n, 0, "filtered");
    }

    /// Keys that mean something to JavaScript objects (`__proto__`, `constructor`), at the
    /// top and nested, through a transform that passes the document on and one that
    /// builds a new plain object from it: every key comes back exactly.
    #[test]
    fn every_key_round_trips_exactly() {
        on_each_engine(every_key_round_trips_exactly_on);
    }

    fn every_key_round_trips_exactly_on() {
        let source = r#"{"__proto__":{"x":1},"constructor":"c","toString":2,"a":{"__proto__":[1,{"__proto__":null}],"constructor":{"prototype":3}},"hasOwnProperty":false}"#;
        let want: serde_json::Value = serde_json::from_str(source).unwrap();
        for script in [
            "(() => (c) => (docs) => docs)();",
            // A copy made with plain objects, as a user's transform may build it.
            r#"(() => (c) => (docs) => docs.map(d => {
                const plain = (v) => v instanceof Map
                    ? Object.fromEntries([...v].map(([k, x]) => [k, plain(x)]))
                    : Array.isArray(v) ? v.map(plain) : v;
                const m = new Map(d);
                m.set("document", plain(d.get("document")));
                return m;
            }))();"#,
        ] {
            let got: serde_json::Value = serde_json::from_str(&run_on(script, source)).unwrap();
            assert_eq!(got, want, "{script}");
        }
    }

    /// The output `_source` of `script` run on one document with `source`.
    fn run_on(script: &str, source: &str) -> String {
        let p = new(script.into(), "{}".into()).unwrap();
        let mut out = Vec::new();
        let mut d = doc();
        d.source = bytes::Bytes::from(source.as_bytes().to_vec());
        if let Err(e) = p.reshape(&d, &mut out) {
            panic!("{e} in {:?}: {script}", ENGINE.with(|c| c.get()));
        }
        assert_eq!(out.len(), 1, "{script}");
        String::from_utf8(out[0].source.to_vec()).unwrap()
    }

    /// The maps are filled when first used: every way of reading one sees all its
    /// entries, and what the transform changes, at any depth, reaches the output.
    #[test]
    fn maps_filled_on_use_behave_as_maps() {
        on_each_engine(maps_filled_on_use_behave_as_maps_on);
    }

    fn maps_filled_on_use_behave_as_maps_on() {
        let source = r#"{"a":{"b":{"c":1},"l":[{"x":1},2,[{"y":2}]]},"n":null,"s":"t","z":[1,2]}"#;
        let cases = [
            // Read every way; nothing changed.
            (
                r#"const s = d.get("document");
                   const seen = [s.size, s.has("a"), s.constructor === Map, s instanceof Map,
                     [...s.keys()].join(), [...s].length, Array.from(s.values()).length,
                     [...s.entries()].map(([k]) => k).join()];
                   s.forEach((v, k) => seen.push(k));
                   for (const [k, v] of s.get("a")) seen.push(k, v instanceof Map || Array.isArray(v));
                   if (JSON.stringify(seen) !== '[4,true,true,true,"a,n,s,z",4,4,"a,n,s,z","a","n","s","z","b",true,"l",true]')
                     throw new Error(JSON.stringify(seen));"#,
                source,
            ),
            // Deep changes: in a nested map, in a map inside an array, an array pushed to.
            (
                r#"const a = d.get("document").get("a");
                   a.get("b").set("c", 2);
                   a.get("l")[0].set("x", new Map([["w", [new Map([["v", 1]])]]]));
                   a.get("l")[2][0].delete("y");
                   d.get("document").get("z").push(new Map([["p", {q: new Map([["r", 3]])}]]));"#,
                r#"{"a":{"b":{"c":2},"l":[{"x":{"w":[{"v":1}]}},2,[{}]]},"n":null,"s":"t","z":[1,2,{"p":{"q":{"r":3}}}]}"#,
            ),
            // A nested map replaced, by a map and by a plain object holding a map; keys
            // added (ones that sort first in an object too), deleted, and cleared.
            (
                r#"const s = d.get("document");
                   s.set("a", new Map([["k", 1]]));
                   s.set("n", {m: new Map([["j", [new Map()]]]), o: [1]});
                   s.set("new", 1); s.set("7", 2); s.set(8, 3); s.set("__proto__", {p: 1});
                   s.delete("s"); s.delete("missing");
                   s.get("z").length = 0;"#,
                r#"{"7":2,"8":3,"__proto__":{"p":1},"a":{"k":1},"n":{"m":{"j":[{}]},"o":[1]},"new":1,"z":[]}"#,
            ),
            (
                r#"const s = d.get("document"); s.clear(); s.set("only", true);"#,
                r#"{"only":true}"#,
            ),
            // Read and changed through get and set, then filled: what was handed out
            // stays the one map, and what was set is what is read.
            (
                r#"const s = d.get("document");
                   const a = s.get("a");
                   if (a !== s.get("a") || s.has("toString") || s.get("toString") !== undefined
                       || s.get("__proto__") !== undefined || s.get(1) !== undefined || !s.has("n"))
                     throw new Error("direct reads");
                   a.get("b").set("c", 5);
                   s.set("n", {k: new Map([["v", 1]])});
                   s.set("added", [new Map([["w", 2]])]);
                   s.set("s", "u");
                   if (s.get("n").k.get("v") !== 1) throw new Error("set then get");
                   const keys = [...s.keys()].join();
                   if (keys !== "a,n,s,z,added" || s.get("a") !== a) throw new Error(keys);
                   a.set("b", 0);"#,
                r#"{"a":{"b":0,"l":[{"x":1},2,[{"y":2}]]},"added":[{"w":2}],"n":{"k":{"v":1}},"s":"u","z":[1,2]}"#,
            ),
            // Map methods known to this engine only (they fill the map too).
            (
                r#"const s = d.get("document");
                   if (typeof s.getOrInsert === "function") s.getOrInsert("g", 5);
                   else s.set("g", 5);
                   s.get("a").get("b").set("c", 3);"#,
                r#"{"a":{"b":{"c":3},"l":[{"x":1},2,[{"y":2}]]},"g":5,"n":null,"s":"t","z":[1,2]}"#,
            ),
        ];
        for (body, want) in cases {
            let script =
                format!("(() => (c) => (docs) => docs.map(d => {{ {body}\n return d; }}))();");
            assert_eq!(run_on(&script, source), want, "{body}");
        }
        // A plain object in the reference shape, holding the document's maps.
        let script = r#"(() => (c) => (docs) => docs.map(d => ({
            operation: d.get("operation"),
            document: {copy: d.get("document").get("a"), m: new Map([["k", d.get("document")]])},
        })))();"#;
        assert_eq!(
            run_on(script, source),
            format!(
                r#"{{"copy":{{"b":{{"c":1}},"l":[{{"x":1}},2,[{{"y":2}}]]}},"m":{{"k":{source}}}}}"#
            )
        );
    }

    /// A map kept by the transform from one call to the next is still a map, and its
    /// changes reach the later output.
    #[test]
    fn a_map_kept_across_calls_stays_a_map() {
        on_each_engine(a_map_kept_across_calls_stays_a_map_on);
    }

    fn a_map_kept_across_calls_stays_a_map_on() {
        let source = r#"{"a":{"b":{"c":1},"l":[{"x":1}]},"s":"t"}"#;
        let p = new(
            r#"let kept = null;
            (() => (c) => (docs) => docs.map(d => {
                if (kept === null) kept = d.get("document").get("a");
                else d.get("document").set("prev", kept);
                kept.get("b").set("c", kept.get("b").get("c") + 1);
                return d;
            }))();"#
                .into(),
            "{}".into(),
        )
        .unwrap();
        let mut d = doc();
        d.source = bytes::Bytes::from(source.as_bytes().to_vec());
        let mut out = Vec::new();
        p.reshape(&d, &mut out).unwrap();
        p.reshape(&d, &mut out).unwrap();
        let got: Vec<&[u8]> = out.iter().map(|d| &d.source[..]).collect();
        assert_eq!(
            got,
            [
                &br#"{"a":{"b":{"c":2},"l":[{"x":1}]},"s":"t"}"#[..],
                br#"{"a":{"b":{"c":1},"l":[{"x":1}]},"prev":{"b":{"c":3},"l":[{"x":1}]},"s":"t"}"#
            ]
        );
    }

    #[test]
    fn errors_name_what_failed() {
        on_each_engine(errors_name_what_failed_on);
    }

    fn errors_name_what_failed_on() {
        let e = new("function main(c) {".into(), "{}".into()).unwrap_err();
        assert!(e.0.contains("initialization script"), "{e}");
        let e = new("42".into(), "{}".into()).unwrap_err();
        assert!(e.0.contains("main(bindings)"), "{e}");
        let e = new("(() => (c) => 1)()".into(), "{".into()).unwrap_err();
        assert!(e.0.contains("bindingsObject"), "{e}");
        let p = new(
            "(() => (c) => (docs) => { throw new Error('boom ' + docs.length); })()".into(),
            "{}".into(),
        )
        .unwrap();
        let e = p.reshape(&doc(), &mut Vec::new()).unwrap_err();
        assert!(e.0.contains("boom 1"), "{e}");
    }

    #[test]
    fn a_runaway_transform_is_interrupted() {
        on_each_engine(a_runaway_transform_is_interrupted_on);
    }

    fn a_runaway_transform_is_interrupted_on() {
        let p = new(
            "(() => (c) => (docs) => { for (;;) {} })()".into(),
            "{}".into(),
        )
        .unwrap()
        .with_time_limit(Duration::from_millis(200));
        let started = Instant::now();
        let e = p.reshape(&doc(), &mut Vec::new()).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(e.0.contains("interrupted"), "{e}");
        // The next document gets a fresh engine.
        let e = p.reshape(&doc(), &mut Vec::new()).unwrap_err();
        assert!(e.0.contains("interrupted"), "{e}");
    }

    /// What a program made of one input, comparable between engines: the outputs' fields
    /// and exact `_source` bytes, the filter reason, or that it failed.
    type Fate = Result<
        (
            Vec<(String, String, Option<String>, Option<String>, String)>,
            Option<String>,
        ),
        (),
    >;

    fn fate(r: Reshaped) -> Fate {
        r.map(|(out, f)| {
            let out = out
                .into_iter()
                .map(|d| {
                    (
                        d.index.to_string(),
                        d.id,
                        d.routing,
                        d.doc_type.map(|t| t.to_string()),
                        format!("{:?} {}", d.op, String::from_utf8_lossy(&d.source)),
                    )
                })
                .collect();
            (out, f)
        })
        .map_err(|_| ())
    }

    fn docs_of(sources: &[&str]) -> Vec<Document> {
        sources
            .iter()
            .enumerate()
            .map(|(i, s)| Document {
                position: Position::Doc(i as u64),
                op: if i % 4 == 3 { Op::Create } else { Op::Index },
                index: "books".into(),
                id: format!("{i}"),
                doc_type: (i % 3 == 1).then(|| "doc".into()),
                routing: (i % 2 == 1).then(|| format!("r{i}")),
                source: bytes::Bytes::from(s.as_bytes().to_vec()),
            })
            .collect()
    }

    /// `script` on `sources`: QuickJS one document per call, node the whole batch in one
    /// call; the same outputs, byte for byte, and the same inputs failing. The fates.
    fn same_on_both(script: &str, sources: &[&str]) -> Vec<Fate> {
        let docs = docs_of(sources);
        let q = JsProgram::with_engine(script.into(), "{}".into(), JsEngine::QuickJs).unwrap();
        let want: Vec<Fate> = docs
            .iter()
            .map(|d| {
                let mut out = Vec::new();
                fate(q.reshape(d, &mut out).map(|f| (out, f)))
            })
            .collect();
        if !engines().contains(&JsEngine::Node) {
            return want;
        }
        let n = JsProgram::with_engine(script.into(), "{}".into(), JsEngine::Node).unwrap();
        assert_eq!(n.batch_size(), NODE_BATCH);
        let got: Vec<Fate> = n.reshape_batch(&docs).into_iter().map(fate).collect();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "input {i} ({}) of {script}", sources[i]);
        }
        assert_eq!(got.len(), want.len());
        want
    }

    /// Numbers as rfs writes them whatever the engine: integers past 2^53 and 2^64, -0,
    /// exponents, small decimals; keys that sort differently as bytes and as UTF-16, that
    /// are array indices, `__proto__`; unicode and lone surrogates (which fail: rfs's JSON
    /// has no place for them); deep nesting.
    #[test]
    fn both_engines_write_the_same_bytes() {
        let sources = [
            r#"{"b":1,"a":2,"n":[9007199254740993,18446744073709551615,18446744073709551616,-9223372036854775808,-0,1e21,1e20,123456789012345678901234,1.5,0.1,1e-5,0.000001,1.5e-7,1e-7,2.5e300,1E2,100.0,-1.25e-6]}"#,
            r#"{"z":{"y":{"x":[{"d":1,"c":[{"b":2,"a":3}]}]}},"10":1,"7":2,"__proto__":{"q":1},"constructor":3}"#,
            r#"{"é":"ü","\ud83d\ude00":1,"\uffff":2,"ａ":3,"a\u0000b":"\u001f\"\\/\b\f\n\r\t","emoji":"😀 \u2028 \u007f"}"#,
            r#"{"lone":"\ud800","other":1}"#,
            r#"{"k":"\udc00x"}"#,
            r#"{"deep":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}"#,
            r#"{"big":1e400}"#,
            "{\"pretty\":\n  [1, 2]}",
            r#"{"dup":1,"dup":2}"#,
            "",
        ];
        for script in [
            // Passed on untouched.
            "(() => (c) => (docs) => docs)();",
            // Read every key (fills the maps) and set one.
            r#"(() => (c) => (docs) => docs.map(d => {
                const s = d.get("document");
                if (s === null) return d;
                s.set("keys", [...s.keys()].join("|"));
                s.set("sum", [...s.values()].filter(v => typeof v === "number").reduce((a, b) => a + b, 0));
                s.set("neg0", -0); s.set("tiny", 3e-6); s.set("huge", 2 ** 70);
                return d;
            }))();"#,
            // New plain objects holding the input's maps.
            r#"(() => (c) => (docs) => docs.map(d => ({operation: d.get("operation"),
                operation_type: "index", document: {copy: d.get("document"), n: 1e21}})))();"#,
        ] {
            let fates = same_on_both(script, &sources);
            // What fails on both: the lone surrogates, the number past f64.
            let failed: Vec<usize> = (0..fates.len()).filter(|i| fates[*i].is_err()).collect();
            assert!(
                failed.contains(&3) && failed.contains(&4) && failed.contains(&6),
                "{script}: {failed:?}"
            );
            assert!(
                fates[0].is_ok() && fates[1].is_ok() && fates[2].is_ok() && fates[7].is_ok(),
                "{script}"
            );
        }
    }

    /// A batch larger than node's first read buffer (1 MiB) and than the pipe, in documents
    /// of a few hundred KB each, ASCII and not: node reads it in many parts; each output the
    /// one QuickJS writes, the fields read from the right places.
    #[test]
    fn a_batch_of_several_megabytes_reads_as_small_ones_do() {
        let sources: Vec<String> = (0..12)
            .map(|i| {
                let fill = if i % 3 == 0 { "\u{e9}\u{20ac}" } else { "abc" }.repeat(90_000 + i);
                format!(r#"{{"a":"{fill}","n":{i},"z":{{"x":"{fill}","y":[{i}]}}}}"#)
            })
            .collect();
        let sources: Vec<&str> = sources.iter().map(String::as_str).collect();
        let fates = same_on_both(
            r#"(() => (c) => (docs) => docs.map(d => {
                const s = d.get("document");
                s.set("n", s.get("n") * 2 + s.get("z").get("y")[0] + s.get("a").length);
                return d;
            }))();"#,
            &sources,
        );
        for (i, f) in fates.iter().enumerate() {
            let (docs, filtered) = f.as_ref().expect("each document transformed");
            assert_eq!((docs.len(), filtered), (1, &None), "input {i}");
            let len = if i % 3 == 0 { 2 } else { 3 } * (90_000 + i);
            let want = format!(r#","n":{},"z""#, i * 3 + len);
            assert!(docs[0].4.contains(&want), "input {i}: {want}");
        }
    }

    /// A batch in node: some inputs filtered (with and without a reason), some exploded,
    /// some throwing, outputs built from scratch (then each input runs alone): each input's
    /// fate is the one QuickJS gives it alone.
    #[test]
    fn a_batch_filters_explodes_and_fails_as_single_documents_do() {
        let sources: Vec<String> = (0..40)
            .map(|i| format!(r#"{{"n":{i},"t":"x{i}"}}"#))
            .collect();
        let sources: Vec<&str> = sources.iter().map(|s| s.as_str()).collect();
        for script in [
            // Filters, explodes (the copy holds the input's operation map), passes on.
            r#"(() => (c) => (docs) => docs.flatMap(d => {
                const n = d.get("document").get("n");
                if (n % 5 === 0) return [];
                if (n % 3 === 0) {
                    const copy = new Map(d);
                    copy.set("document", {n: n, copy: true});
                    d.get("operation").set("_id", "a" + n);
                    return [d, copy];
                }
                return [d];
            }))();"#,
            // And throws on some: the batch runs again, one document at a time.
            r#"(() => (c) => (docs) => docs.flatMap(d => {
                const n = d.get("document").get("n");
                if (n % 7 === 6) throw new Error("seven " + n);
                if (n % 5 === 0) return [];
                return [d];
            }))();"#,
            // Outputs that name no input, and filter reasons: one document at a time.
            r#"(() => (c) => (docs) => docs.map(d => {
                const n = d.get("document").get("n");
                if (n % 4 === 0) return {_filtered: "four"};
                return {operation_type: "index", operation: {_index: "fresh", _id: "f" + n}, document: {n}};
            }))();"#,
            // Outputs in another order than their inputs: one document at a time.
            "(() => (c) => (docs) => docs.slice().reverse())();",
            // A bad output, a delete, a bad id.
            r#"(() => (c) => (docs) => docs.map(d => {
                const n = d.get("document").get("n");
                if (n === 1) return 42;
                if (n === 2) d.set("operation_type", "delete");
                if (n === 3) d.get("operation").set("_id", "");
                return d;
            }))();"#,
            // A single document rather than a list.
            r#"(() => (c) => (docs) => docs.length === 1 ? docs[0] : docs)();"#,
        ] {
            let fates = same_on_both(script, &sources);
            assert_eq!(fates.len(), 40);
        }
        let fates = same_on_both(
            r#"(() => (c) => (docs) => docs.flatMap(d => {
                const n = d.get("document").get("n");
                if (n % 7 === 6) throw new Error("seven " + n);
                return n % 5 === 0 ? [] : [d];
            }))();"#,
            &sources,
        );
        for (n, f) in fates.iter().enumerate() {
            match f {
                Err(()) => assert_eq!(n % 7, 6),
                Ok((out, None)) if out.is_empty() => assert_eq!(n % 5, 0),
                Ok((out, None)) => assert_eq!(out.len(), 1),
                Ok(other) => panic!("{n}: {other:?}"),
            }
        }
    }

    /// A node that hangs on a batch is stopped at the time limit and the batch's documents
    /// fail, each alone, with a clear error; a node that dies names its stderr; the next
    /// batch gets a fresh one.
    #[test]
    fn a_hung_or_dead_node_is_stopped_and_named() {
        if !engines().contains(&JsEngine::Node) {
            return;
        }
        let p = JsProgram::with_engine(
            r#"(() => (c) => (docs) => { if (docs[0].get("document").get("n") === 1) for (;;) {} return docs; })()"#.into(),
            "{}".into(),
            JsEngine::Node,
        )
        .unwrap()
        .with_time_limit(Duration::from_millis(300));
        let docs = docs_of(&[r#"{"n":0}"#, r#"{"n":1}"#, r#"{"n":2}"#]);
        let started = Instant::now();
        let got: Vec<Fate> = p.reshape_batch(&docs).into_iter().map(fate).collect();
        assert!(started.elapsed() < Duration::from_secs(8));
        assert!(got[0].is_ok() && got[2].is_ok(), "{got:?}");
        let e = p.reshape_batch(&docs[1..2]).pop().unwrap().unwrap_err();
        assert!(e.0.contains("interrupted") && e.0.contains("300ms"), "{e}");
        assert_eq!(fate(p.reshape_batch(&docs[..1]).pop().unwrap()), got[0]);

        let p = JsProgram::with_engine(
            r#"(() => (c) => (docs) => { console.error("going away"); process.exit(3); })()"#
                .into(),
            "{}".into(),
            JsEngine::Node,
        )
        .unwrap();
        let e = p.reshape_batch(&docs[..1]).pop().unwrap().unwrap_err();
        assert!(
            e.0.contains("going away") && e.0.contains("node stopped"),
            "{e}"
        );
    }

    #[test]
    fn flat_objects_are_told_by_their_members() {
        let members = |text: &str| {
            let t = format!("x{text}y");
            let mut out = Vec::new();
            flat_members(t.as_bytes(), 1..1 + text.len(), &mut out).then(|| {
                out.iter()
                    .map(|(k, kind, v)| (t[k.clone()].to_string(), *kind, t[v.clone()].to_string()))
                    .collect::<Vec<_>>()
            })
        };
        let m = |k: &str, kind, v: &str| (k.to_string(), kind, v.to_string());
        assert_eq!(members("{}"), Some(vec![]));
        assert_eq!(
            members(r#"{"a":"b","c\"d":-1.5,"e":true,"f":false,"g":null,"h":"i\"}j"}"#),
            Some(vec![
                m(r#""a""#, 1, r#""b""#),
                m(r#""c\"d""#, 2, "-1.5"),
                m(r#""e""#, 3, "true"),
                m(r#""f""#, 4, "false"),
                m(r#""g""#, 5, "null"),
                m(r#""h""#, 0, r#""i\"}j""#),
            ])
        );
        for nested in [
            r#"{"a":{}}"#,
            r#"{"a":1,"b":[1]}"#,
            "{\"a\":1",
            r#"{"a":1}}"#,
        ] {
            assert_eq!(members(nested), None, "{nested}");
        }
        let wide: Vec<String> = (0..FLAT + 1).map(|i| format!("\"k{i}\":{i}")).collect();
        assert_eq!(members(&format!("{{{}}}", wide.join(","))), None);
        let most = format!("{{{}}}", wide[..FLAT].join(","));
        assert_eq!(members(&most).map(|m| m.len()), Some(FLAT));
    }

    #[test]
    fn spans_are_counted_as_javascript_counts_them() {
        // UTF-16 lengths at every cut of texts mixing one-, two- and three-byte characters.
        let text = "a\u{e9}b\u{20ac}cd\u{7ff}efgh\u{800}ijklmnop\u{cfff}\"q\\r";
        for s in [
            text,
            "",
            "plain ascii only, more than eight bytes",
            "\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}",
        ] {
            for (cut, _) in s.char_indices().chain([(s.len(), ' ')]) {
                let t = &s[..cut];
                assert_eq!(utf16_len(t.as_bytes()), t.encode_utf16().count(), "{t:?}");
            }
        }
    }
}
