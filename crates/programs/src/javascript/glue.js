(function (transform, sortFill) {
  // A document's objects reach the transform as Maps over the parsed objects. While the
  // transform only gets, sets and asks for keys, a map reads and writes its object (new
  // keys only where an object appends them, as a Map does); the objects it hands out are
  // kept beside it so that each is handed out once. Anything else fills the Map from the
  // object. What the transform never opens goes out as it was parsed, without a walk.
  // A filled map whose keys still follow its object's order (none deleted, new ones
  // appended) writes its changes back into that object rather than building a new one.
  const DIRECT = 0, IN_ORDER = 1, REBUILT = 2;
  const forEach = Map.prototype.forEach;
  const mapGet = Map.prototype.get;
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
  // The order of an object's keys once its JSON text has been through rfs's JSON values
  // (keys sorted by their UTF-8 bytes): array indices first (an object puts them first),
  // then the other keys sorted. With `sortFill`, a map is filled in this order, so that a
  // transform given the document's own text sees the keys in the order it would see them
  // given that of rfs's values.
  function inputOrder(o, added) {
    let names = Object.keys(o);
    // What `set` appended comes last, in its order (the object holds it last too).
    const n = added === null ? names.length : names.length - added.length;
    let j = 0;
    while (j < n && isIndex(names[j])) j++;
    if (j === n) return names;
    const rest = sortKeys(names.slice(j, n));
    names = j === 0 ? rest : names.slice(0, j).concat(rest);
    return added === null ? names : names.concat(added);
  }
  function isIndex(k) {
    const c = k.charCodeAt(0);
    if (!(c >= 48 && c <= 57)) return false;
    return String(Number(k)) === k && Number(k) < 4294967295;
  }
  // Sorted by UTF-8 bytes, which is the order of code points: the UTF-16 order but for
  // keys holding code units from U+D800 up.
  function sortKeys(names) {
    names.sort();
    for (let i = 0; i < names.length; i++) {
      if (/[\ud800-\uffff]/.test(names[i])) {
        names.sort(byCodePoints);
        break;
      }
    }
    return names;
  }
  function byCodePoints(a, b) {
    const x = [...a], y = [...b];
    for (let i = 0; i < x.length && i < y.length; i++) {
      const d = x[i].codePointAt(0) - y[i].codePointAt(0);
      if (d !== 0) return d;
    }
    return x.length - y.length;
  }
  // The value a document's span names: `s[i + 1]` its KIND, `s[i + 2]` and `s[i + 3]`
  // where its JSON text is in `text`. KIND 1: a string without escapes (the characters
  // between its quotes); 2: a number; 3, 4, 5: true, false, null; 6: an object whose
  // members are the values of the `s[i + 3]` spans from `s[i + 2]` on (their keys in
  // `names`), in the order JSON.parse puts them; else any JSON, parsed.
  function spanValue(text, s, i, names) {
    const a = s[i + 2], b = s[i + 3];
    switch (s[i + 1]) {
      case 1:
        return text.slice(a + 1, b - 1);
      case 2:
        return numberAt(text, a, b);
      case 3:
        return true;
      case 4:
        return false;
      case 5:
        return null;
      case 6: {
        const o = {};
        for (let j = a, end = a + 4 * b; j < end; j += 4) put(o, names[s[j]], spanValue(text, s, j, names));
        return o;
      }
      default:
        return JSON.parse(text.slice(a, b));
    }
  }
  // Powers of ten a double holds exactly.
  const TENS = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];
  // The number written from `a` to `b` in `text` (JSON), as JSON.parse reads it: with up
  // to 15 digits, the integer they make divided by a power of ten — both exact, so that
  // the one rounding of the division gives the nearest double, as the parser's does;
  // anything longer is converted as a string.
  function numberAt(text, a, b) {
    let i = a;
    const negative = text.charCodeAt(i) === 45;
    if (negative) i++;
    let m = 0;
    let digits = 0;
    let fraction = -1;
    for (; i < b; i++) {
      const c = text.charCodeAt(i);
      if (c === 46 && fraction < 0) {
        fraction = 0;
        continue;
      }
      const d = c - 48;
      if (d < 0 || d > 9 || ++digits > 15) return +text.slice(a, b);
      m = m * 10 + d;
      if (fraction >= 0) fraction++;
    }
    if (digits === 0) return +text.slice(a, b);
    const x = fraction > 0 ? m / TENS[fraction] : m;
    return negative ? -x : x;
  }
  class LazyMap extends Map {
    #o;
    #state;
    // While DIRECT: the keys whose values were handed out or set as objects, and those
    // values (the output's are made from them).
    #keys;
    #vals;
    // With `sortFill`: the keys `set` appended to the object while DIRECT.
    #added = null;
    // Whether `set` was called while DIRECT.
    #set = false;
    // A document map made from its JSON text (node's `withText`): the text holding it, and
    // [start, end, how many top-level values, then KEY, KIND, START, END for each, then
    // the members of its flat objects] where it is in that text (`spanValue`); the object
    // holds the values read or set so far. Null once the object holds them all (it is
    // parsed whole when the map is filled or goes out).
    #text = null;
    #spans = null;
    // The keys the spans name by their index.
    #names = null;
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
    // The index of `k`'s value in the spans, or -1.
    #span(k) {
      const s = this.#spans, names = this.#names;
      for (let i = 3, end = 3 + 4 * s[2]; i < end; i += 4) if (names[s[i]] === k) return i;
      return -1;
    }
    #own(k) {
      return hasOwn(this.#o, k) || (this.#spans !== null && this.#span(k) >= 0);
    }
    // The object parsed whole from the text, with the values read or set so far (those
    // set new last, in their order).
    #whole() {
      const part = this.#o, s = this.#spans;
      const o = JSON.parse(this.#text.slice(s[0], s[1]));
      for (const k of Object.keys(part)) put(o, k, part[k]);
      this.#o = o;
      this.#text = this.#spans = this.#names = null;
    }
    #fill() {
      if (this.#spans !== null) this.#whole();
      const o = this.#o, keys = this.#keys, vals = this.#vals;
      const names = sortFill ? inputOrder(o, this.#added) : Object.keys(o);
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
      if (typeof k !== "string") return undefined;
      if (!hasOwn(o, k)) {
        if (this.#spans === null) return undefined;
        const i = this.#span(k);
        if (i < 0) return undefined;
        put(o, k, spanValue(this.#text, this.#spans, i, this.#names));
      }
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
      return typeof k === "string" && this.#own(k);
    }
    set(k, v) {
      if (this.#state === DIRECT) {
        const o = this.#o;
        if (typeof k === "string" && (this.#own(k) || appends(k))) {
          if (sortFill && !this.#own(k)) (this.#added ??= []).push(k);
          put(o, k, v);
          this.#keep(k, v);
          this.#set = true;
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
    // For node's answers: when `m` (an input in the reference shape) is still as it was
    // given but for its `document` map (and `operation` map) having been handed out, and
    // that document map was never filled, the fields of the document set or handed out
    // as objects, as a flat list [key, value, …]; else null.
    static patch(m) {
      if (m.#state !== DIRECT || m.#set) return null;
      const keys = m.#keys;
      let doc = null;
      if (keys !== null) {
        for (let i = 0; i < keys.length; i++) {
          const k = keys[i], v = m.#vals[i];
          if (k === "document") doc = v;
          else if (k !== "operation" || !(v instanceof LazyMap) || v.#state !== DIRECT || v.#set || v.#keys !== null) {
            return null;
          }
        }
      }
      if (doc === null) return [];
      if (!(doc instanceof LazyMap) || doc.#state !== DIRECT) return null;
      const out = [];
      if (doc.#keys !== null) for (let i = 0; i < doc.#keys.length; i++) out.push(doc.#keys[i], doc.#vals[i]);
      return out;
    }
    // The map of a document in the reference shape `o` (its `document` a placeholder
    // object) whose document is the JSON text in `text` that `spans` place (see #spans),
    // their keys in `names`.
    static withText(o, text, spans, names) {
      const doc = new LazyMap({});
      doc.#text = text;
      doc.#spans = spans;
      doc.#names = names;
      const m = new LazyMap(o);
      m.#keep("document", doc);
      return m;
    }
    // What `m` holds at `k` if it was handed out (what an output may hold), else undefined.
    static handedOut(m, k) {
      if (m.#state !== DIRECT) return mapGet.call(m, k);
      const i = m.#keys === null ? -1 : m.#keys.indexOf(k);
      return i < 0 ? undefined : m.#vals[i];
    }
    // The plain object for output.
    static plain(m) {
      const s = m.#state;
      if (s === DIRECT) {
        if (m.#spans !== null) m.#whole();
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
  const patch = LazyMap.patch;
  const withText = LazyMap.withText;
  const handedOut = LazyMap.handedOut;
  delete LazyMap.touch;
  delete LazyMap.plain;
  delete LazyMap.patch;
  delete LazyMap.withText;
  delete LazyMap.handedOut;
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
  function call(docs) {
    const out = transform(docs);
    if (out !== null && typeof out === "object" && typeof out.then === "function") {
      throw new Error("the transform returned a Promise; rfs runs transforms synchronously");
    }
    return out;
  }
  const run = function (text) {
    const out = call(wrap(JSON.parse(text)));
    return JSON.stringify(out === undefined ? null : toPlain(out));
  };
  // For the node engine's loop (javascript/node.js).
  run.parts = { wrap, toPlain, put, call, sortKeys, LazyMap, patch, withText, handedOut };
  return run;
})
