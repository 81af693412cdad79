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

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rquickjs::{CatchResultExt, Context, Function, Persistent, Runtime, Value};

use crate::program::RunError;
use crate::reshape::{reason_key, DocumentProgram};
use engine::document::{Document, Op};

/// Memory one engine may use.
const MEMORY_LIMIT: usize = 512 << 20;
/// How long the transform may run on one document before it is interrupted.
const TIME_LIMIT: Duration = Duration::from_secs(10);

/// Glue between rfs and the user's transform: JSON text in, `Map`s to the transform
/// (filled when first used), plain JSON text out.
const RUNNER: &str = r#"
(function (transform) {
  // A document's objects reach the transform as Maps over the parsed objects. While the
  // transform only gets, sets and asks for keys, a map reads and writes its object (new
  // keys only where an object appends them, as a Map does); the objects it hands out are
  // kept beside it so that each is handed out once. Anything else fills the Map from the
  // object. What the transform never opens goes out as it was parsed, without a walk.
  // A filled map whose keys still follow its object's order (none deleted, new ones
  // appended) writes its changes back into that object rather than building a new one.
  const DIRECT = 0, IN_ORDER = 1, REBUILT = 2;
  const forEach = Map.prototype.forEach;
  const hasOwn = Object.hasOwn;
  // An assignment of `__proto__` would set the object's prototype and the field would
  // vanish from the output: that key is defined as an own property. Every other key of
  // Object.prototype is a writable data property, so assigning it makes an own property,
  // and costs far less than defining one.
  function put(o, k, x) {
    if (k === "__proto__") {
      Object.defineProperty(o, k, { value: x, enumerable: true, writable: true, configurable: true });
    } else {
      o[k] = x;
    }
  }
  // Whether a new key appended to an object comes last, as in a Map: a string that is
  // not `__proto__` and cannot be an array index (those an object puts first).
  function appends(k) {
    if (typeof k !== "string" || k === "__proto__") return false;
    const c = k.charCodeAt(0);
    return !(c >= 48 && c <= 57);
  }
  class LazyMap extends Map {
    #o;
    #state;
    // While DIRECT: the keys whose values were handed out or set as objects, and those
    // values (the output's are made from them).
    #keys;
    #vals;
    constructor(o) {
      super();
      this.#o = o;
      this.#state = DIRECT;
      this.#keys = null;
      this.#vals = null;
    }
    #keep(k, v) {
      if (this.#keys === null) {
        this.#keys = [k];
        this.#vals = [v];
        return;
      }
      const i = this.#keys.indexOf(k);
      if (i >= 0) this.#vals[i] = v;
      else {
        this.#keys.push(k);
        this.#vals.push(v);
      }
    }
    #fill() {
      const o = this.#o, keys = this.#keys, vals = this.#vals;
      const names = Object.keys(o);
      for (let i = 0; i < names.length; i++) {
        const k = names[i];
        const j = keys === null ? -1 : keys.indexOf(k);
        super.set(k, j >= 0 ? vals[j] : wrap(o[k]));
      }
      this.#keys = this.#vals = null;
      this.#state = IN_ORDER;
    }
    get(k) {
      if (this.#state !== DIRECT) return super.get(k);
      const o = this.#o;
      if (typeof k !== "string" || !hasOwn(o, k)) return undefined;
      const v = o[k];
      if (v === null || typeof v !== "object") return v;
      const i = this.#keys === null ? -1 : this.#keys.indexOf(k);
      if (i >= 0) return this.#vals[i];
      const w = wrap(v);
      this.#keep(k, w);
      return w;
    }
    has(k) {
      if (this.#state !== DIRECT) return super.has(k);
      return typeof k === "string" && hasOwn(this.#o, k);
    }
    set(k, v) {
      if (this.#state === DIRECT) {
        const o = this.#o;
        if (typeof k === "string" && (hasOwn(o, k) || appends(k))) {
          put(o, k, v);
          if ((v !== null && typeof v === "object") || (this.#keys !== null && this.#keys.includes(k))) {
            this.#keep(k, v);
          }
          return this;
        }
        this.#fill();
      }
      if (this.#state === IN_ORDER) {
        if (super.has(k) || appends(k)) put(this.#o, k, v);
        else this.#state = REBUILT;
      }
      super.set(k, v);
      return this;
    }
    delete(k) {
      if (this.#state === DIRECT) this.#fill();
      const gone = super.delete(k);
      if (gone) this.#state = REBUILT;
      return gone;
    }
    clear() {
      this.#state = REBUILT;
      this.#keys = this.#vals = null;
      super.clear();
    }
    get size() {
      if (this.#state === DIRECT) this.#fill();
      return super.size;
    }
    forEach(f, self) {
      if (this.#state === DIRECT) this.#fill();
      return super.forEach(f, self);
    }
    keys() {
      if (this.#state === DIRECT) this.#fill();
      return super.keys();
    }
    values() {
      if (this.#state === DIRECT) this.#fill();
      return super.values();
    }
    entries() {
      if (this.#state === DIRECT) this.#fill();
      return super.entries();
    }
    [Symbol.iterator]() {
      if (this.#state === DIRECT) this.#fill();
      return super.entries();
    }
    // Filled, and rebuilt on output (for Map methods not known here).
    static touch(m) {
      if (m.#state === DIRECT) m.#fill();
      m.#state = REBUILT;
    }
    // The plain object for output.
    static plain(m) {
      const s = m.#state;
      if (s === DIRECT) {
        const o = m.#o, keys = m.#keys, vals = m.#vals;
        if (keys !== null) for (let i = 0; i < keys.length; i++) put(o, keys[i], toPlain(vals[i]));
        return o;
      }
      if (s === IN_ORDER) {
        // Keys and primitive values are already there (written by `set`).
        const o = m.#o;
        forEach.call(m, (x, k) => {
          if (x !== null && typeof x === "object") put(o, k, toPlain(x));
        });
        return o;
      }
      const o = {};
      forEach.call(m, (x, k) => put(o, String(k), toPlain(x)));
      return o;
    }
  }
  const touch = LazyMap.touch;
  const plain = LazyMap.plain;
  delete LazyMap.touch;
  delete LazyMap.plain;
  for (const name of Reflect.ownKeys(Map.prototype)) {
    const d = Object.getOwnPropertyDescriptor(Map.prototype, name);
    if (Object.hasOwn(LazyMap.prototype, name) || typeof d.value !== "function") continue;
    const f = d.value;
    d.value = function (...args) {
      touch(this);
      return f.apply(this, args);
    };
    Object.defineProperty(LazyMap.prototype, name, d);
  }
  // What the transform sees is a Map like any other.
  Object.defineProperty(LazyMap.prototype, "constructor", { value: Map, writable: true, configurable: true });
  // Arrays are the parsed ones, their objects replaced by maps.
  function wrap(v) {
    if (v === null || typeof v !== "object") return v;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const x = v[i];
        if (x !== null && typeof x === "object") v[i] = wrap(x);
      }
      return v;
    }
    return new LazyMap(v);
  }
  function toPlain(v) {
    if (v === null || typeof v !== "object") return v;
    if (v instanceof LazyMap) return plain(v);
    if (v instanceof Map) {
      const o = {};
      forEach.call(v, (x, k) => put(o, String(k), toPlain(x)));
      return o;
    }
    if (Array.isArray(v)) return v.map(toPlain);
    const o = {};
    for (const k of Object.keys(v)) put(o, k, toPlain(v[k]));
    return o;
  }
  return function (text) {
    const out = transform(wrap(JSON.parse(text)));
    if (out !== null && typeof out === "object" && typeof out.then === "function") {
      throw new Error("the transform returned a Promise; rfs runs transforms synchronously");
    }
    return JSON.stringify(out === undefined ? null : toPlain(out));
  };
})
"#;

/// A JavaScript transform in the reference tool's form.
#[derive(Debug)]
pub struct JsProgram {
    /// Identifies this program's engines in each thread's cache.
    key: u64,
    script: String,
    /// The `bindingsObject` as JSON text.
    bindings: String,
    time_limit: Duration,
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
}

impl JsProgram {
    /// Loads the script and calls its `main` with `bindings` (JSON text) once, here, so
    /// that a script that cannot run is an error before any document is read.
    pub fn new(script: String, bindings: String) -> Result<JsProgram, RunError> {
        let p = JsProgram {
            key: NEXT_KEY.fetch_add(1, Ordering::Relaxed),
            script,
            bindings,
            time_limit: TIME_LIMIT,
        };
        p.engine()?;
        Ok(p)
    }

    /// How long the transform may run on one document (default 10 s).
    pub fn with_time_limit(mut self, limit: Duration) -> JsProgram {
        self.time_limit = limit;
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
                .call((transform,))
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
    let bad = |what: &str| RunError(format!("an output document: {what}"));
    let m = v
        .as_object()
        .ok_or_else(|| bad("not an object (expected {operation_type, operation, document})"))?;
    let mut doc = Document {
        position: input.position.clone(),
        op: input.op,
        index: input.index.clone(),
        id: input.id.clone(),
        doc_type: input.doc_type.clone(),
        routing: input.routing.clone(),
        source: bytes::Bytes::new(),
    };
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
    match m.get("document") {
        Some(s @ serde_json::Value::Object(_)) if doc.op != Op::Delete => {
            doc.source = bytes::Bytes::from(serde_json::to_vec(s).expect("JSON serialises"));
        }
        _ if doc.op == Op::Delete => {}
        _ => return Err(bad("document must be an object")),
    }
    Ok(doc)
}

impl DocumentProgram for JsProgram {
    fn reshape(&self, doc: &Document, out: &mut Vec<Document>) -> Result<Option<String>, RunError> {
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
        let p = JsProgram::new(SCRIPT.into(), r#"{"tag":"x","skip":2}"#.into()).unwrap();
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
        let p = JsProgram::new(script.into(), "{}".into()).unwrap();
        let mut out = Vec::new();
        let mut d = doc();
        d.source = bytes::Bytes::from(source.as_bytes().to_vec());
        p.reshape(&d, &mut out).unwrap();
        assert_eq!(out.len(), 1, "{script}");
        String::from_utf8(out[0].source.to_vec()).unwrap()
    }

    /// The maps are filled when first used: every way of reading one sees all its
    /// entries, and what the transform changes, at any depth, reaches the output.
    #[test]
    fn maps_filled_on_use_behave_as_maps() {
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
        let source = r#"{"a":{"b":{"c":1},"l":[{"x":1}]},"s":"t"}"#;
        let p = JsProgram::new(
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
        let e = JsProgram::new("function main(c) {".into(), "{}".into()).unwrap_err();
        assert!(e.0.contains("initialization script"), "{e}");
        let e = JsProgram::new("42".into(), "{}".into()).unwrap_err();
        assert!(e.0.contains("main(bindings)"), "{e}");
        let e = JsProgram::new("(() => (c) => 1)()".into(), "{".into()).unwrap_err();
        assert!(e.0.contains("bindingsObject"), "{e}");
        let p = JsProgram::new(
            "(() => (c) => (docs) => { throw new Error('boom ' + docs.length); })()".into(),
            "{}".into(),
        )
        .unwrap();
        let e = p.reshape(&doc(), &mut Vec::new()).unwrap_err();
        assert!(e.0.contains("boom 1"), "{e}");
    }

    #[test]
    fn a_runaway_transform_is_interrupted() {
        let p = JsProgram::new(
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
}
