//! A `_source` written as node's loop writes an unchanged document: the text of
//! `JSON.stringify` of its parsed value with every object's keys sorted by their bytes
//! (node.js's `canon`). rfs sends this text to node instead of the source as it is (the
//! same values), and when the transform leaves the document alone but for some of its
//! top-level fields, node answers with those fields only and rfs writes the rest from
//! here ([`merge`]).
//!
//! [`write`] says no (`false`) whenever it is not sure that its text is node's, and that
//! document goes the whole way through node: a duplicate key; a key that an object does
//! not keep in insertion order (one starting with a digit) or that is `__proto__`; text at
//! or past U+D000 (the engines send code points from U+D800 up the slow way, and this is
//! a cheap test that covers them); `\u` followed by a surrogate's first digits anywhere;
//! a number node writes in another way than rfs would (node.js's `plainNumber`: past
//! ±9.2e18 for integers, below 1e-5 or from 1e16 up for the others) or that is not
//! finite; a line break (such a source reaches node through rfs's JSON values); nesting
//! deeper than [`MAX_DEPTH`]; anything that is not valid JSON of an object.
//!
//! Numbers are parsed as `JSON.parse` parses them (the nearest double) and written as
//! `Number.prototype.toString` writes them: the shortest digits that read back to the
//! same double (ryu's), with no exponent in the ranges above. Strings are written as
//! `JSON.stringify` writes them: `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, the other
//! control characters as `\u00xx`, everything else as itself (`/`, U+007F, U+2028 too).

use std::ops::Range;

/// Nesting deeper than this is left to node (its `canon` stops at 100).
pub const MAX_DEPTH: usize = 90;

/// A top-level member of a document written by [`write`]: its key's decoded bytes (in
/// [`Entries::keys`]) and the member's text, `"KEY":VALUE` (in the output), its value
/// from `value` to the member's end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: Range<usize>,
    pub member: Range<usize>,
    pub value: usize,
}

/// The top-level members of documents written by [`write`], and scratch space reused
/// from one document to the next.
#[derive(Debug, Default)]
pub struct Entries {
    /// The members, in key order (each document's a range of this list).
    pub list: Vec<Entry>,
    /// The keys' decoded bytes.
    pub keys: Vec<u8>,
    /// Scratch: every open object's members.
    stack: Vec<Entry>,
    /// Scratch: every open object's keys.
    stack_keys: Vec<u8>,
    /// Scratch: an object's members being put in order.
    order: Vec<usize>,
    tmp: Vec<u8>,
}

/// Writes the JS-canonical text of `src` onto `out` and pushes its top-level members onto
/// `entries.list` (offsets in `out`); or returns `false`, with `out` and the list as they
/// were, when it cannot be sure of node's text.
pub fn write(src: &[u8], out: &mut Vec<u8>, entries: &mut Entries) -> bool {
    let start = out.len();
    let list_start = entries.list.len();
    let keys_start = entries.keys.len();
    let ok = screen(src) && {
        let mut p = Parser {
            src,
            pos: 0,
            out,
            e: entries,
        };
        p.ws();
        let ok = p.peek() == Some(b'{') && p.object(0, true).is_some() && {
            p.ws();
            p.pos == src.len()
        };
        ok && !surrogate_escape(&out[start..])
    };
    if !ok {
        out.truncate(start);
        entries.list.truncate(list_start);
        entries.keys.truncate(keys_start);
        entries.stack.clear();
        entries.stack_keys.clear();
    }
    ok
}

/// What is refused at once: not UTF-8, a line break, a byte from U+D000's lead up, `\u`
/// followed by a surrogate's first digits.
fn screen(src: &[u8]) -> bool {
    // Without an early exit, so that it runs many bytes at a time.
    let (refused, high) = src.iter().fold((false, 0u8), |(r, h), &b| {
        (r | (b >= 0xED) | (b == b'\n'), h | b)
    });
    !refused && (high < 0x80 || std::str::from_utf8(src).is_ok()) && !surrogate_escape(src)
}

/// `\u` then `d` and one of `8`–`f`: what node.js's `UNUSUAL` looks for in a text.
pub fn surrogate_escape(text: &[u8]) -> bool {
    memchr::memchr_iter(b'\\', text).any(|i| {
        text.get(i + 1) == Some(&b'u')
            && matches!(text.get(i + 2), Some(b'd' | b'D'))
            && matches!(
                text.get(i + 3),
                Some(b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
            )
    })
}

struct Parser<'a> {
    src: &'a [u8],
    pos: usize,
    out: &'a mut Vec<u8>,
    e: &'a mut Entries,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.peek() {
            self.pos += 1;
        }
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        self.ws();
        (self.peek() == Some(b)).then(|| self.pos += 1)
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        self.ws();
        match self.peek()? {
            b'{' => self.object(depth, false),
            b'[' => self.array(depth),
            b'"' => self.string(None),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        if !self.src[self.pos..].starts_with(word) {
            return None;
        }
        self.pos += word.len();
        self.out.extend_from_slice(word);
        Some(())
    }

    fn array(&mut self, depth: usize) -> Option<()> {
        if depth >= MAX_DEPTH {
            return None;
        }
        self.pos += 1;
        self.out.push(b'[');
        self.ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.out.push(b']');
            return Some(());
        }
        loop {
            self.value(depth + 1)?;
            self.ws();
            match self.peek()? {
                b',' => {
                    self.pos += 1;
                    self.out.push(b',');
                }
                b']' => {
                    self.pos += 1;
                    self.out.push(b']');
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// An object, its members in key order; `top`: the document's own, whose members go
    /// to the entries.
    fn object(&mut self, depth: usize, top: bool) -> Option<()> {
        if depth >= MAX_DEPTH {
            return None;
        }
        self.pos += 1;
        let open = self.out.len();
        self.out.push(b'{');
        let base = self.e.stack.len();
        let keys_base = self.e.stack_keys.len();
        self.ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
        } else {
            loop {
                self.ws();
                if self.peek()? != b'"' {
                    return None;
                }
                let member = self.out.len();
                let key = self.e.stack_keys.len();
                self.string(Some(key))?;
                let key = key..self.e.stack_keys.len();
                let k = &self.e.stack_keys[key.clone()];
                if k.first().is_some_and(u8::is_ascii_digit) || k == b"__proto__" {
                    return None;
                }
                self.eat(b':')?;
                self.out.push(b':');
                let value = self.out.len();
                self.value(depth + 1)?;
                self.e.stack.push(Entry {
                    key,
                    member: member..self.out.len(),
                    value,
                });
                self.ws();
                match self.peek()? {
                    b',' => {
                        self.pos += 1;
                        self.out.push(b',');
                    }
                    b'}' => {
                        self.pos += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        let members = &self.e.stack[base..];
        let keys = &self.e.stack_keys;
        let key = |m: &Entry| &keys[m.key.clone()];
        let sorted = members.windows(2).all(|w| key(&w[0]) < key(&w[1]));
        if !sorted {
            let order = &mut self.e.order;
            order.clear();
            order.extend(0..members.len());
            order.sort_unstable_by(|a, b| key(&members[*a]).cmp(key(&members[*b])));
            if order
                .windows(2)
                .any(|w| key(&members[w[0]]) == key(&members[w[1]]))
            {
                return None;
            }
            // The members again, in order, from a copy of their text.
            let tmp = &mut self.e.tmp;
            tmp.clear();
            tmp.extend_from_slice(&self.out[open + 1..]);
            self.out.truncate(open + 1);
            let shift = open + 1;
            for (n, i) in order.iter().enumerate() {
                if n > 0 {
                    self.out.push(b',');
                }
                let m = &members[*i];
                self.out
                    .extend_from_slice(&tmp[m.member.start - shift..m.member.end - shift]);
            }
            if top {
                // Where each member now is, for the entries.
                let mut at = open + 1;
                let members = &mut self.e.stack[base..];
                let mut placed: Vec<Entry> = Vec::with_capacity(members.len());
                for i in order.iter() {
                    let m = &members[*i];
                    let len = m.member.len();
                    placed.push(Entry {
                        key: m.key.clone(),
                        member: at..at + len,
                        value: at + (m.value - m.member.start),
                    });
                    at += len + 1;
                }
                members.clone_from_slice(&placed);
            }
        }
        self.out.push(b'}');
        if top {
            let keys_at = self.e.keys.len();
            self.e
                .keys
                .extend_from_slice(&self.e.stack_keys[keys_base..]);
            for m in &self.e.stack[base..] {
                self.e.list.push(Entry {
                    key: m.key.start - keys_base + keys_at..m.key.end - keys_base + keys_at,
                    member: m.member.clone(),
                    value: m.value,
                });
            }
        }
        self.e.stack.truncate(base);
        self.e.stack_keys.truncate(keys_base);
        Some(())
    }

    /// A string, as `JSON.stringify` writes it; `key`: its decoded bytes go to the keys
    /// (from that offset).
    fn string(&mut self, key: Option<usize>) -> Option<()> {
        self.pos += 1;
        let start = self.pos;
        let at = memchr::memchr2(b'"', b'\\', &self.src[start..])? + start;
        if self.src[at] == b'"' {
            // No escape: as it is (the source is UTF-8 with no control character; a
            // control character is not JSON, and a parser that found one said no).
            let raw = &self.src[start..at];
            if raw.iter().fold(false, |c, &b| c | (b < 0x20)) {
                return None;
            }
            self.out.push(b'"');
            self.out.extend_from_slice(raw);
            self.out.push(b'"');
            if key.is_some() {
                self.e.stack_keys.extend_from_slice(raw);
            }
            self.pos = at + 1;
            return Some(());
        }
        // Decoded, then written again.
        let mut text = std::mem::take(&mut self.e.tmp);
        text.clear();
        let mut i = start;
        loop {
            let b = *self.src.get(i)?;
            match b {
                b'"' => break,
                b'\\' => {
                    let c = match *self.src.get(i + 1)? {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hex = std::str::from_utf8(self.src.get(i + 2..i + 6)?).ok()?;
                            let u = u32::from_str_radix(hex, 16).ok()?;
                            if !hex.bytes().all(|h| h.is_ascii_hexdigit()) || u >= 0xD000 {
                                return None;
                            }
                            i += 4;
                            char::from_u32(u)?
                        }
                        _ => return None,
                    };
                    i += 2;
                    let mut buf = [0u8; 4];
                    text.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                0..=0x1f => return None,
                _ => {
                    text.push(b);
                    i += 1;
                }
            }
        }
        self.pos = i + 1;
        write_js_string(&text, self.out);
        if key.is_some() {
            self.e.stack_keys.extend_from_slice(&text);
        }
        self.e.tmp = text;
        Some(())
    }

    fn number(&mut self) -> Option<()> {
        let start = self.pos;
        let s = self.src;
        let mut i = start;
        if s.get(i) == Some(&b'-') {
            i += 1;
        }
        let int_start = i;
        match s.get(i)? {
            b'0' => i += 1,
            b'1'..=b'9' => {
                while s.get(i).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                }
            }
            _ => return None,
        }
        let int_end = i;
        let mut frac = i..i;
        if s.get(i) == Some(&b'.') {
            i += 1;
            let f = i;
            while s.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            if i == f {
                return None;
            }
            frac = f..i;
        }
        let mut exp = false;
        if let Some(b'e' | b'E') = s.get(i) {
            exp = true;
            i += 1;
            if let Some(b'+' | b'-') = s.get(i) {
                i += 1;
            }
            let e = i;
            while s.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            if i == e {
                return None;
            }
        }
        self.pos = i;
        let negative = int_start > start;
        let int = &s[int_start..int_end];
        if !exp {
            // Up to 15 significant digits read back as themselves: the text is the
            // shortest, less the fraction's trailing zeros.
            let mut fr = &s[frac];
            while let [rest @ .., b'0'] = fr {
                fr = rest;
            }
            let zero_int = int == b"0";
            let leading = if zero_int {
                fr.iter().take_while(|&&b| b == b'0').count()
            } else {
                0
            };
            let digits = if zero_int { 0 } else { int.len() } + fr.len() - leading;
            if digits <= 15 {
                if zero_int && fr.is_empty() {
                    // 0, -0, 0.0: JSON.stringify writes 0.
                    self.out.push(b'0');
                    return Some(());
                }
                if zero_int && leading > 4 {
                    // Below 1e-5: not plain.
                    return None;
                }
                if negative {
                    self.out.push(b'-');
                }
                self.out.extend_from_slice(int);
                if !fr.is_empty() {
                    self.out.push(b'.');
                    self.out.extend_from_slice(fr);
                }
                return Some(());
            }
        }
        let text = std::str::from_utf8(&s[start..i]).ok()?;
        let x: f64 = text.parse().ok()?;
        write_js_number(x, self.out)
    }
}

/// `x` as `Number.prototype.toString` writes it, when node.js's `plainNumber` takes it;
/// `None` when it does not (nothing written).
pub fn write_js_number(x: f64, out: &mut Vec<u8>) -> Option<()> {
    if !x.is_finite() {
        return None;
    }
    let plain = if x.fract() == 0.0 {
        (-9.2e18..=9.2e18).contains(&x)
    } else {
        (1e-5..1e16).contains(&x.abs())
    };
    if !plain {
        return None;
    }
    if x == 0.0 {
        out.push(b'0');
        return Some(());
    }
    // ryu's shortest digits, placed as JavaScript places them.
    let mut buf = ryu::Buffer::new();
    let r = buf.format_finite(x).as_bytes();
    let (negative, r) = match r {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, r),
    };
    let (mantissa, exponent) = match r.iter().position(|&b| b == b'e') {
        Some(e) => (
            &r[..e],
            std::str::from_utf8(&r[e + 1..]).ok()?.parse::<i32>().ok()?,
        ),
        None => (r, 0),
    };
    let dot = mantissa
        .iter()
        .position(|&b| b == b'.')
        .unwrap_or(mantissa.len());
    let mut digits: Vec<u8> = mantissa.iter().copied().filter(|&b| b != b'.').collect();
    // The value is 0.DIGITS × 10^n.
    let mut n = dot as i32 + exponent;
    let lead = digits.iter().take_while(|&&b| b == b'0').count();
    digits.drain(..lead);
    n -= lead as i32;
    while digits.last() == Some(&b'0') {
        digits.pop();
    }
    let k = digits.len() as i32;
    if k == 0 {
        return None;
    }
    if negative {
        out.push(b'-');
    }
    if k <= n && n <= 21 {
        out.extend_from_slice(&digits);
        out.extend(std::iter::repeat_n(b'0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.extend_from_slice(&digits[..n as usize]);
        out.push(b'.');
        out.extend_from_slice(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-n) as usize));
        out.extend_from_slice(&digits);
    } else {
        return None;
    }
    Some(())
}

/// `text` (UTF-8) as a JSON string the way `JSON.stringify` writes it.
fn write_js_string(text: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let mut from = 0;
    for (i, &b) in text.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x0c => b"\\f",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&text[from..i]);
        if esc.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[(b >> 4) as usize]);
            out.push(HEX[(b & 15) as usize]);
        } else {
            out.extend_from_slice(esc);
        }
        from = i + 1;
    }
    out.extend_from_slice(&text[from..]);
    out.push(b'"');
}

/// A top-level field node sent back: its key's text as `JSON.stringify` wrote it, the
/// key's decoded bytes, and its value's text.
pub struct Patch<'a> {
    pub key_text: &'a str,
    pub key: Vec<u8>,
    pub value: &'a str,
}

/// The document written by [`write`] in `text` (its members `entries`, their keys in
/// `keys`) with `patch` applied (a field's new value, or a new field in its place by key
/// order), onto `out`; `patch` is sorted here. `false` when two patches name one key.
pub fn merge(
    text: &[u8],
    entries: &[Entry],
    keys: &[u8],
    patch: &mut [Patch],
    out: &mut Vec<u8>,
) -> bool {
    patch.sort_unstable_by(|a, b| a.key.cmp(&b.key));
    if patch.windows(2).any(|w| w[0].key == w[1].key) {
        return false;
    }
    out.push(b'{');
    let mut first = true;
    let mut sep = |out: &mut Vec<u8>| {
        if !first {
            out.push(b',');
        }
        first = false;
    };
    let mut p = 0;
    for e in entries {
        let key = &keys[e.key.clone()];
        while p < patch.len() && patch[p].key.as_slice() < key {
            sep(out);
            write_patch(&patch[p], out);
            p += 1;
        }
        sep(out);
        if p < patch.len() && patch[p].key.as_slice() == key {
            write_patch(&patch[p], out);
            p += 1;
        } else {
            out.extend_from_slice(&text[e.member.clone()]);
        }
    }
    for q in &patch[p..] {
        sep(out);
        write_patch(q, out);
    }
    out.push(b'}');
    true
}

fn write_patch(p: &Patch, out: &mut Vec<u8>) {
    out.extend_from_slice(p.key_text.as_bytes());
    out.push(b':');
    out.extend_from_slice(p.value.as_bytes());
}
