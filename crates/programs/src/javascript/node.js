// rfs's loop in a `node` child process (javascript/node.rs): runs the reference tool's
// JavaScript transform on batches of documents. `GLUE` (javascript/glue.js, the code the
// QuickJS engine runs too) is defined before this text.
//
// In: one line of JSON `{"script", "bindings"}`, then per batch a line, LINES lines of
// texts and the spans. The first line is `SIZE LINES {"docs": [DOCUMENT…], "patch": FLAGS,
// "keys": [KEY…]}`, SIZE the spans' size in bytes (both in decimal, with leading zeros):
// a document in the reference
// shape when it has no spans; else `[_id, _index, _type or null, routing or null, 1 when
// op_type is create]`, an index operation (`inputs` makes its reference shape) whose
// `document` is its JS-canonical text (javascript/canonical.rs: the text `answer` below
// writes for it unchanged) in one of the lines of texts, its spans being [LINE, START,
// END, N, then KEY, KIND, START, END for each of its N top-level fields, then the members
// of those that are flat objects] in UTF-16 code units of that line (LINE counted from
// 0), KEY an index in `keys`, KIND what the value's text is (glue.js's `spanValue`): its
// map reads those fields one at a time, when the transform reads them, and parses the
// whole text only when it is filled (glue.js's `withText`). FLAGS: a string with a "1"
// for each document that may be answered with a patch. The lines of texts: the
// canonical texts, one after the other (each line under 128 KiB but for a longer text
// alone: a string that long costs V8 many times more). The spans: 32-bit unsigned numbers in this machine's order,
// for each document how many of its spans follow (0: none), then those.
// Out: one line `{"ready": true}` or `{"init": MESSAGE}`, then one line per batch, a list
// with one answer per document:
// - `{"e": MESSAGE}`: the transform threw on it;
// - `{"p": [KEY, VALUE, …]}`: its only output is its own map, unchanged but for the
//   top-level fields of its document named here (set, or handed out as objects), each
//   value in canonical JSON; rfs writes the rest from the text it sent;
// - `{"o": [OUTPUT…]}`: its outputs (none: filtered), each `{"m": META, "d": DOCUMENT}` —
//   the output without its `document`, and the document in rfs's canonical JSON (keys
//   sorted by their bytes at every depth, numbers as rfs writes them) — or `{"s": TEXT}`,
//   the output's JSON text in a list of one, for rfs to read as the QuickJS engine's are.
// `{"fatal": MESSAGE}` instead: the batch's text could not be read. The answers are
// written by one `JSON.stringify` of the batch's (`wholeBatch`), the same text as each
// written alone.
"use strict";
const fs = require("fs");
const vm = require("vm");

// Whatever the script logs goes to stderr: stdout carries the answers.
for (const k of ["log", "info", "warn", "error", "debug", "trace"]) {
  console[k] = (...args) => process.stderr.write(args.map(String).join(" ") + "\n");
}

// What was read of stdin and not taken yet: `input` from `start` to `end`. Reads go
// straight into it (no copy of what came before, however many reads a batch takes).
let input = Buffer.allocUnsafe(1 << 20);
let start = 0;
let end = 0;
// More of stdin into `input`: false at its end.
function more() {
  if (start === end) start = end = 0;
  if (end === input.length) {
    if (start > 0) {
      input.copy(input, 0, start, end);
    } else {
      const larger = Buffer.allocUnsafe(input.length * 2);
      input.copy(larger, 0, start, end);
      input = larger;
    }
    end -= start;
    start = 0;
  }
  for (;;) {
    let n;
    try {
      n = fs.readSync(0, input, end, input.length - end, null);
    } catch (e) {
      if (e.code === "EAGAIN") continue;
      if (e.code === "EOF") return false;
      throw e;
    }
    if (n === 0) return false;
    end += n;
    return true;
  }
}

// The next line of stdin, or null at its end.
function readLine() {
  let from = 0;
  for (;;) {
    const nl = input.subarray(start, end).indexOf(10, from);
    if (nl >= 0) {
      const line = input.toString("utf8", start, start + nl);
      start += nl + 1;
      return line;
    }
    from = end - start;
    if (!more()) return null;
  }
}

// The next `n` bytes of stdin as 32-bit numbers (in this machine's order), or null at
// its end.
function readNumbers(n) {
  while (end - start < n) if (!more()) return null;
  // A copy: a view of 32-bit numbers starts at a multiple of four.
  const out = new Uint32Array(n >>> 2);
  new Uint8Array(out.buffer).set(input.subarray(start, start + n));
  start += n;
  return out;
}

function writeLine(text) {
  const b = Buffer.from(text + "\n", "utf8");
  let off = 0;
  while (off < b.length) {
    try {
      off += fs.writeSync(1, b, off, b.length - off);
    } catch (e) {
      if (e.code !== "EAGAIN") throw e;
    }
  }
}

// A thrown value as a message: an error's name, message and where it was thrown.
function message(e) {
  if (e instanceof Error) {
    const at = typeof e.stack === "string" ? e.stack.split("\n").find((l) => /^\s+at /.test(l)) : undefined;
    return e.name + ": " + e.message + (at === undefined ? "" : "\n" + at);
  }
  try {
    return String(e);
  } catch (_) {
    return "a value that cannot be shown";
  }
}

const init = JSON.parse(readLine());
let parts;
{
  // What failed is named as the QuickJS engine names it.
  let stage = "the initialization script";
  try {
    const main = vm.runInThisContext(init.script, { filename: "initializationScript" });
    if (typeof main !== "function") {
      stage = "";
      throw new Error("the initialization script must evaluate to a function main(bindings) (end it with `(() => main)();`)");
    }
    stage = "bindingsObject is not JSON";
    const bindings = JSON.parse(init.bindings);
    stage = "main(bindings)";
    const transform = main(bindings);
    if (typeof transform !== "function") {
      stage = "";
      throw new Error("main(bindings) must return the transform function");
    }
    stage = "rfs's JavaScript glue";
    parts = vm.runInThisContext(GLUE, { filename: "rfs-glue" })(transform, true).parts;
  } catch (e) {
    const m = stage === "" ? e.message : message(e);
    writeLine(JSON.stringify({ init: stage === "" ? m : stage + ": " + m }));
    process.exit(0);
  }
}
writeLine('{"ready":true}');
const { wrap, toPlain, put, call, LazyMap, patch, withText, handedOut } = parts;

// Whether rfs writes the number `x` as JavaScript does: integers it reads as 64-bit ones,
// and the decimals both write without an exponent from 1e-5 up.
function plainNumber(x) {
  if (Number.isInteger(x)) return x >= -9.2e18 && x <= 9.2e18;
  const a = Math.abs(x);
  return a >= 1e-5 && a < 1e16;
}

// `v` (a plain value, as toPlain makes it) with every object's keys in byte order;
// `state.slow` set when rfs's JSON would differ otherwise (numbers, nesting, keys an
// object cannot hold in that order).
function canon(v, depth, state) {
  if (depth > 100) {
    state.slow = true;
    return v;
  }
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const x = v[i];
      if (typeof x === "number") {
        if (!plainNumber(x)) state.slow = true;
      } else if (x !== null && typeof x === "object") {
        v[i] = canon(x, depth + 1, state);
      }
    }
    return v;
  }
  const keys = Object.keys(v);
  let o = v;
  for (let i = 1; i < keys.length; i++) {
    if (!(keys[i - 1] < keys[i])) {
      // In UTF-16 order: where that is not the byte order (code units from U+D800 up),
      // UNUSUAL sends the output the slow way.
      keys.sort();
      o = {};
      for (let j = 0; j < keys.length; j++) put(o, keys[j], v[keys[j]]);
      const got = Object.keys(o);
      for (let j = 1; j < got.length; j++) {
        if (!(got[j - 1] < got[j])) {
          state.slow = true;
          break;
        }
      }
      break;
    }
  }
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    const x = o[k];
    if (typeof x === "number") {
      if (!plainNumber(x)) state.slow = true;
    } else if (x !== null && typeof x === "object") {
      const c = canon(x, depth + 1, state);
      if (c !== x) put(o, k, c);
    }
  }
  return o;
}

// Text rfs's reader would decode differently: code units from U+D800 up (lone surrogates,
// and keys whose byte order is not their UTF-16 order).
const UNUSUAL = /[\ud800-\uffff]|\\u[dD][89abAB]/;

// The answer for one input whose outputs are `outs` (a list of plain values), as a value
// for the batch's `JSON.stringify`: `{"o": [PART…]}`, each part `{"m": META, "d":
// DOCUMENT}` or, when the document cannot be sent that way, `{"s": TEXT}`. `careful`: each
// part's text is looked at for UNUSUAL (else the batch's whole text is, once, and this runs
// again with `careful` when it finds something).
function answer(outs, careful) {
  const parts = [];
  for (const p of outs) {
    if (p !== null && typeof p === "object" && !Array.isArray(p)) {
      const doc = p.document;
      if (doc !== null && typeof doc === "object" && !Array.isArray(doc) && !("_filtered" in p)) {
        const state = { slow: false };
        const c = canon(doc, 0, state);
        if (!state.slow) {
          const meta = {};
          for (const k of Object.keys(p)) if (k !== "document") put(meta, k, p[k]);
          const part = { m: meta, d: c };
          if (!careful || !UNUSUAL.test(JSON.stringify(part))) {
            parts.push(part);
            continue;
          }
        }
      }
    }
    parts.push({ s: JSON.stringify([p]) });
  }
  return { o: parts };
}

// Nothing: the value of a patch that `answer` would write in another way.
const NOPE = {};

// A top-level field's value `x` in a patch, as `answer` would write it; NOPE when it would
// not be written so.
function patchValue(x) {
  const v = toPlain(x);
  if (typeof v === "number") return plainNumber(v) ? v : NOPE;
  if (v === null || typeof v === "string" || typeof v === "boolean") return v;
  if (typeof v === "object") {
    const state = { slow: false };
    const c = canon(v, 1, state);
    return state.slow ? NOPE : c;
  }
  return NOPE;
}

// The answer for an input whose only output is itself, changed in the top-level fields
// `pairs` of its document only (LazyMap's `patch`): `{"p": [KEY, VALUE, …]}`, each value
// as `answer` would write it; or null when one of them would make `answer` write the
// document another way (then `answer` writes it).
function patchAnswer(pairs) {
  const p = new Array(pairs.length);
  for (let i = 0; i < pairs.length; i += 2) {
    const v = patchValue(pairs[i + 1]);
    if (v === NOPE) return null;
    p[i] = pairs[i];
    p[i + 1] = v;
  }
  return { p };
}

// The outputs of a transform's result, as a list of plain values.
function plainList(out) {
  if (out === undefined || out === null) return [];
  const p = toPlain(out);
  return Array.isArray(p) ? p : [p];
}

function field(x, k) {
  if (x instanceof Map) return x.get(k);
  if (x !== null && typeof x === "object") return x[k];
  return undefined;
}

// The transform on the whole batch: its answers' line, or null when its outputs cannot
// be told apart by input (then each input is run alone). `patchable`: a string with "1"
// for each input that may be answered with a patch.
function wholeBatch(docs, patchable) {
  // The inputs as given (the transform may change the list it is given).
  const given = docs.slice();
  const out = call(docs);
  const list = out === undefined || out === null ? [] : Array.isArray(out) ? out : [out];
  const byInput = sameInputs(given, list) ?? byOwner(given, list);
  if (byInput === null) return null;
  const answers = byInput.map((xs, i) => answerFor(xs, given[i], patchable.charCodeAt(i) === 49));
  // The answers written at once; each alone when that text holds something UNUSUAL.
  const text = JSON.stringify(answers);
  if (!UNUSUAL.test(text)) return text;
  return "[" + answers.map((a, i) => answerText(a, byInput[i])).join(",") + "]";
}

// Each input's outputs when the transform's are its inputs, in their order, none filtered
// (the usual `documents.map(…)`); else null.
function sameInputs(given, list) {
  if (list.length !== given.length) return null;
  for (let i = 0; i < given.length; i++) {
    if (list[i] !== given[i] || field(list[i], "_filtered") !== undefined) return null;
  }
  return given.map((d) => [d]);
}

// Each input's outputs, told apart by the maps each was given (an output that is one, or
// holds its `operation` or `document`); null when they cannot be, or come out of order.
function byOwner(given, list) {
  const owners = new Map();
  for (let i = 0; i < given.length; i++) owners.set(given[i], i);
  // Each input's parts that were handed out (an output can hold no other).
  for (let i = 0; i < given.length; i++) {
    const d = given[i];
    for (const k of ["operation", "document"]) {
      const x = handedOut(d, k);
      if (x instanceof LazyMap && !owners.has(x)) owners.set(x, i);
    }
  }
  const byInput = given.map(() => []);
  let last = 0;
  for (const x of list) {
    let i = owners.get(x);
    if (i === undefined) i = owners.get(field(x, "operation"));
    if (i === undefined) i = owners.get(field(x, "document"));
    if (i === undefined || i < last || field(x, "_filtered") !== undefined) return null;
    last = i;
    byInput[i].push(x);
  }
  return byInput;
}

// The answer for `input` (a map given to the transform), whose outputs are `outs`, as a
// value to write: a patch when it may have one (`patchable`) and its only output is
// itself, else the whole. Its text may need `answerText`'s look.
function answerFor(outs, input, patchable) {
  if (patchable && outs.length === 1 && outs[0] === input) {
    const pairs = patch(input);
    const a = pairs === null ? null : patchAnswer(pairs);
    if (a !== null) return a;
  }
  return answer(plainList(outs), false);
}

// The text of `a`, `answerFor`'s answer for the outputs `outs`: made again, looking at
// each part, when it holds something UNUSUAL.
function answerText(a, outs) {
  const t = JSON.stringify(a);
  return UNUSUAL.test(t) ? JSON.stringify(answer(plainList(outs), true)) : t;
}

// The batch's inputs: maps over its documents, those sent as text read from the lines
// `texts` where `spans` place them.
function inputs(batch, texts, spans) {
  const docs = batch.docs, names = batch.keys;
  let at = 0;
  for (let i = 0; i < docs.length; i++) {
    const n = spans[at++];
    if (n === 0) {
      docs[i] = wrap(docs[i]);
      continue;
    }
    const text = texts[spans[at]];
    const own = spans.subarray(at + 1, at + n);
    at += n;
    // [_id, _index, _type or null, routing or null, 1 for create]: the shape rfs sends
    // the others in, keys in the same order.
    const m = docs[i];
    const op = { _id: m[0], _index: m[1] };
    if (m[2] !== null) op._type = m[2];
    if (m[4] === 1) op.op_type = "create";
    if (m[3] !== null) op.routing = m[3];
    const o = {
      document: {},
      include_document: true,
      operation: op,
      operation_type: "index",
      schema: "rfs-opensearch-bulk-v1",
    };
    docs[i] = withText(o, text, own, names);
  }
  return docs;
}

// Each input alone: the batch's answers' line.
function oneByOne(text, texts, spans) {
  const batch = JSON.parse(text);
  const answers = inputs(batch, texts, spans).map((d, i) => {
    try {
      const input = [d];
      const out = call(input);
      const outs = out === undefined || out === null ? [] : Array.isArray(out) ? out : [out];
      return answerText(answerFor(outs, input[0], batch.patch.charCodeAt(i) === 49), outs);
    } catch (e) {
      return JSON.stringify({ e: message(e) });
    }
  });
  return "[" + answers.join(",") + "]";
}

for (;;) {
  const line = readLine();
  if (line === null) break;
  const space = line.indexOf(" ");
  const space2 = line.indexOf(" ", space + 1);
  const count = Number(line.slice(space + 1, space2));
  const texts = [];
  while (texts.length < count) {
    const t = readLine();
    if (t === null) break;
    texts.push(t);
  }
  if (texts.length < count) break;
  const spans = readNumbers(Number(line.slice(0, space)));
  if (spans === null) break;
  const text = line.slice(space2 + 1);
  let docs, patchable;
  try {
    const batch = JSON.parse(text);
    docs = inputs(batch, texts, spans);
    patchable = batch.patch;
  } catch (e) {
    writeLine(JSON.stringify({ fatal: message(e) }));
    continue;
  }
  let answers = null;
  try {
    answers = wholeBatch(docs, patchable);
  } catch (_) {
    // Which inputs fail is found by running each alone.
  }
  if (answers === null) answers = oneByOne(text, texts, spans);
  writeLine(answers);
}
