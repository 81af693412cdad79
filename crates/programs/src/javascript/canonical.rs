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

/// A member of an object being written: as an [`Entry`] (its key in
/// `Entries::stack_keys`), and its key's first 8 bytes as a number that orders as they do
/// (so that most comparisons of two keys are one of two numbers).
#[derive(Debug, Clone)]
struct Member {
    key: Range<usize>,
    member: Range<usize>,
    value: usize,
    prefix: u64,
}

impl Member {
    /// How `self`'s key and `other`'s compare, their bytes in `keys`.
    fn order(&self, other: &Member, keys: &[u8]) -> std::cmp::Ordering {
        // Zeros after a short key's end order as its end does: the number of "a" is below
        // that of "ab" and equal to that of "a\0" (the bytes tell those two apart).
        self.prefix
            .cmp(&other.prefix)
            .then_with(|| keys[self.key.clone()].cmp(&keys[other.key.clone()]))
    }
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
    stack: Vec<Member>,
    /// Scratch: every open object's keys.
    stack_keys: Vec<u8>,
    /// Scratch: an object's members being put in order (each one's key prefix and place).
    order: Vec<(u64, usize)>,
    /// Scratch: an object's members' text while they are put in order, a string's
    /// decoded text.
    tmp: Vec<u8>,
}

/// Writes the JS-canonical text of `src` onto `out` and pushes its top-level members onto
/// `entries.list` (offsets in `out`); or returns `false`, with `out` and the list as they
/// were, when it cannot be sure of node's text.
pub fn write(src: &[u8], out: &mut Vec<u8>, entries: &mut Entries) -> bool {
    let start = out.len();
    let list_start = entries.list.len();
    let keys_start = entries.keys.len();
    let ok = screen(src).is_some_and(|tabs| {
        let mut p = Parser {
            src,
            pos: 0,
            tabs,
            out,
            e: entries,
        };
        p.ws();
        p.peek() == Some(b'{') && p.object(0, true).is_some() && {
            p.ws();
            p.pos == src.len()
        }
    });
    if !ok {
        out.truncate(start);
        entries.list.truncate(list_start);
        entries.keys.truncate(keys_start);
        entries.stack.clear();
        entries.stack_keys.clear();
    }
    ok
}

/// What is refused at once, in one pass over the source: not UTF-8, a line break or
/// another control character but the tab and the carriage return (white space between
/// tokens, refused in a string), a byte from U+D000's lead up. `Some(true)` when there is
/// a tab or a carriage return, `Some(false)` when a string's text needs no look for
/// control characters.
///
/// `\u` followed by a surrogate's first digits is not looked for here but where it can
/// be: a `\u` escape of a surrogate is refused with every one from U+D000 up, and
/// [`Parser::string`] refuses a string whose decoded text holds one (that text, written
/// again, would hold it with its backslash doubled). Neither can be elsewhere: a
/// backslash outside a string is not JSON.
fn screen(src: &[u8]) -> Option<bool> {
    // Both ends at once, in a fold without an early exit so that it runs many bytes at a
    // time: a byte below 0x20 or from 0xED up, plus 0x13, is below 0x33.
    let (odd, high) = src.iter().fold((false, 0u8), |(o, h), &b| {
        (o | (b.wrapping_add(0x13) < 0x33), h | b)
    });
    let mut tabs = false;
    if odd {
        for &b in src {
            match b {
                b'\t' | b'\r' => tabs = true,
                0..=0x1f | 0xED.. => return None,
                _ => {}
            }
        }
    }
    (high < 0x80 || std::str::from_utf8(src).is_ok()).then_some(tabs)
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
    /// A tab or carriage return is in the source (see [`screen`]).
    tabs: bool,
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
                let prefix = k
                    .iter()
                    .take(8)
                    .enumerate()
                    .fold(0, |p, (i, &b)| p | u64::from(b) << (56 - 8 * i));
                self.eat(b':')?;
                self.out.push(b':');
                let value = self.out.len();
                self.value(depth + 1)?;
                self.e.stack.push(Member {
                    key,
                    member: member..self.out.len(),
                    value,
                    prefix,
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
        let Entries {
            list,
            keys,
            stack,
            stack_keys,
            order,
            tmp,
        } = &mut *self.e;
        let members = &stack[base..];
        // The top level's keys go to the entries, and its members from where they end up.
        let keys_at = keys.len();
        if top {
            keys.extend_from_slice(&stack_keys[keys_base..]);
        }
        let entry = |m: &Member, at: usize| Entry {
            key: m.key.start - keys_base + keys_at..m.key.end - keys_base + keys_at,
            member: at..at + m.member.len(),
            value: at + (m.value - m.member.start),
        };
        if members
            .windows(2)
            .all(|w| w[0].order(&w[1], stack_keys).is_lt())
        {
            if top {
                list.extend(members.iter().map(|m| entry(m, m.member.start)));
            }
        } else {
            order.clear();
            order.extend(members.iter().enumerate().map(|(i, m)| (m.prefix, i)));
            let cmp = |a: &(u64, usize), b: &(u64, usize)| {
                a.0.cmp(&b.0)
                    .then_with(|| members[a.1].order(&members[b.1], stack_keys))
            };
            order.sort_unstable_by(cmp);
            if order.windows(2).any(|w| cmp(&w[0], &w[1]).is_eq()) {
                return None;
            }
            // The members again, in order, from a copy of their text.
            tmp.clear();
            tmp.extend_from_slice(&self.out[open + 1..]);
            self.out.truncate(open + 1);
            let shift = open + 1;
            for (n, &(_, i)) in order.iter().enumerate() {
                if n > 0 {
                    self.out.push(b',');
                }
                let m = &members[i];
                if top {
                    list.push(entry(m, self.out.len()));
                }
                self.out
                    .extend_from_slice(&tmp[m.member.start - shift..m.member.end - shift]);
            }
        }
        self.out.push(b'}');
        self.e.stack.truncate(base);
        self.e.stack_keys.truncate(keys_base);
        Some(())
    }

    /// A string, as `JSON.stringify` writes it; `key`: its decoded bytes go to the keys
    /// (from that offset).
    fn string(&mut self, key: Option<usize>) -> Option<()> {
        self.pos += 1;
        let start = self.pos;
        let at = string_end(&self.src[start..])? + start;
        if self.src[at] == b'"' {
            // No escape: as it is (the source is UTF-8; a control character is not JSON,
            // and a parser that found one said no: only a tab or a carriage return can
            // be here, and only when the screen saw one).
            let raw = &self.src[start..at];
            if self.tabs && raw.iter().fold(false, |c, &b| c | (b < 0x20)) {
                return None;
            }
            // With its quotes.
            self.out.extend_from_slice(&self.src[start - 1..=at]);
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
        // Written again, a backslash followed by a surrogate's `u` and first digits would
        // read as the escape of one (`\\ud800` holds `\ud800`).
        if surrogate_escape(&text) {
            self.e.tmp = text;
            return None;
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

/// Where the first quote or backslash of `s` is. Most strings are short: their first bytes are
/// looked at 8 at a time here, the rest by `memchr2`.
fn string_end(s: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // The lowest byte set is the first zero byte of `x` (a borrow only runs upwards).
    let zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let mut i = 0;
    while i < 32 {
        let Some(w) = s[i..].first_chunk::<8>() else {
            break;
        };
        let w = u64::from_le_bytes(*w);
        let m = zero(w ^ (ONES * u64::from(b'"'))) | zero(w ^ (ONES * u64::from(b'\\')));
        if m != 0 {
            return Some(i + m.trailing_zeros() as usize / 8);
        }
        i += 8;
    }
    memchr::memchr2(b'"', b'\\', &s[i..]).map(|j| i + j)
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    use reference::reference_write;

    /// The writer as it was before it was made faster (6961c95), to compare with: its
    /// screen looked for surrogate escapes in the source and its output, for control
    /// characters in every string, and it put an object's members in order through a
    /// copy of all of them.
    mod reference {
        use super::super::{surrogate_escape, write_js_number, write_js_string, Entry, MAX_DEPTH};

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
        pub fn reference_write(src: &[u8], out: &mut Vec<u8>, entries: &mut Entries) -> bool {
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
                                    let hex =
                                        std::str::from_utf8(self.src.get(i + 2..i + 6)?).ok()?;
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
    }

    /// Text in a string: raw or escaped in every way, a backslash next to a surrogate's
    /// digits in every way; with `wild` (1, else 0), what is refused too (control
    /// characters, surrogates, text from U+D000 up, bytes that are not UTF-8, broken
    /// escapes).
    fn string_piece(wild: u32) -> impl Strategy<Value = Vec<u8>> {
        let taken: Vec<&[u8]> = vec![
            b"\\\"",
            b"\\\\",
            b"\\/",
            b"\\b",
            b"\\f",
            b"\\n",
            b"\\r",
            b"\\t",
            b"\\u0041",
            b"\\u00e9",
            b"\\u00E9",
            b"\\u0000",
            b"\\u001f",
            b"\\u2028",
            b"\\ucfff",
            b"\\u005c",
            b"\\u005C",
            b"\\u0075",
            b"\\u0064",
            b"\\\\uD",
            b"\\\\ud0",
            b"\\\\ud",
            b"\\\\u",
            b"\\u005cud0",
            b"\\u005cu",
            b"\\u005cuD7",
            b"u",
            b"d",
            b"8",
            b"a",
            b"D",
            b"\x7f",
            b" ",
            b"/",
            "\u{e9}".as_bytes(),
            "\u{2028}".as_bytes(),
            "\u{cfff}".as_bytes(),
        ];
        let refused: Vec<&[u8]> = vec![
            b"\\ud000",
            b"\\ud800",
            b"\\uD83D\\uDE00",
            b"\\udc00",
            b"\\x",
            b"\\u12",
            b"\\u12g4",
            b"\\u+123",
            b"\\",
            b"\\\\ud800",
            b"\\\\uD9",
            b"\\\\udF",
            b"\\u005cud800",
            b"\\u005cuDa",
            b"\\\\\\u0075d8",
            b"\t",
            b"\r",
            b"\n",
            b"\x01",
            b"\x1f",
            "\u{d000}".as_bytes(),
            "\u{e000}".as_bytes(),
            "\u{1f600}".as_bytes(),
            b"\xff",
            b"\xc3",
            b"\xed\xa0\x80",
            b"\x80",
        ];
        prop_oneof![
            20 => "[a-z ]{1,12}".prop_map(String::into_bytes),
            4 => prop::sample::select(taken).prop_map(<[u8]>::to_vec),
            2 * wild => prop::sample::select(refused).prop_map(<[u8]>::to_vec),
        ]
    }

    fn string(wild: u32) -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(string_piece(wild), 0..5).prop_map(|ps| {
            let mut s = b"\"".to_vec();
            ps.iter().for_each(|p| s.extend_from_slice(p));
            s.push(b'"');
            s
        })
    }

    /// Keys, often the same ones (also written in another way), some that objects do
    /// not keep in insertion order.
    fn key(wild: u32) -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            3 => prop::sample::select(vec![
                "\"a\"", "\"b\"", "\"ab\"", "\"A\"", "\"\"", "\"\\u0061\"", "\"a\\u0000\"",
                "\"a\\u0000b\"", "\"abcdefgh\"", "\"abcdefghi\"", "\"abcdefgh\\u0000\"",
                "\"abcdefgi\"", "\"\u{e9}\"", "\"\u{ff41}\"", "\"_1\"", "\"\\u005f_proto__\"",
            ])
            .prop_map(|k| k.as_bytes().to_vec()),
            wild => prop::sample::select(vec!["\"1\"", "\"10\"", "\"__proto__\""])
                .prop_map(|k| k.as_bytes().to_vec()),
            8 => "[a-z]{1,10}".prop_map(|k| format!("\"{k}\"").into_bytes()),
            1 => string(wild),
        ]
    }

    fn number(wild: u32) -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            2 => prop::sample::select(vec![
                "0", "-0", "0.0", "1.50", "1e5", "1E-5", "1e-5", "0.00001", "1e20", "9.2e18",
                "1e15", "2.5E+3", "123.4500", "-1.25e-3", "0.1e1", "1234567890123456",
            ])
            .prop_map(|n| n.as_bytes().to_vec()),
            wild => prop::sample::select(vec![
                "1E-7", "0.000001", "1e21", "1e16", "12345678901234567890", "1e400", "5e-324",
                "01", "1.", "-", "1e", ".5", "+1", "-1.25e-6",
            ])
            .prop_map(|n| n.as_bytes().to_vec()),
            3 => any::<i32>().prop_map(|x| x.to_string().into_bytes()),
            wild => any::<f64>().prop_map(|x| format!("{x:e}").into_bytes()),
            3 => (any::<u32>(), 0..8u32)
                .prop_map(|(m, e)| format!("{}", m as f64 / 10f64.powi(e as i32)).into_bytes()),
        ]
    }

    /// White space; with `wild`, line breaks too.
    fn ws(wild: u32) -> impl Strategy<Value = &'static [u8]> {
        prop_oneof![
            8 => prop::sample::select(vec![&b""[..], b"", b"", b" ", b"\t", b"\r", b" \t\r"]),
            wild => prop::sample::select(vec![&b"\n"[..], b"\r\n"]),
        ]
    }

    fn value(wild: u32) -> impl Strategy<Value = Vec<u8>> {
        let leaf = prop_oneof![
            3 => string(wild),
            3 => number(wild),
            1 => prop::sample::select(vec!["true", "false", "null"])
                .prop_map(|w| w.as_bytes().to_vec()),
            wild => prop::sample::select(vec!["nul", "True", "tru"])
                .prop_map(|w| w.as_bytes().to_vec()),
        ];
        leaf.prop_recursive(4, 32, 5, move |inner| {
            prop_oneof![
                prop::collection::vec((ws(wild), inner.clone(), ws(wild)), 0..5).prop_map(|xs| {
                    let xs: Vec<Vec<u8>> = xs
                        .into_iter()
                        .map(|(a, x, b)| [a, &x, b].concat())
                        .collect();
                    [&b"["[..], &xs.join(&b","[..]), b"]"].concat()
                }),
                object(wild, inner),
            ]
        })
    }

    fn object(wild: u32, value: impl Strategy<Value = Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec((ws(wild), key(wild), ws(wild), value, ws(wild)), 0..8).prop_map(
            |xs| {
                let xs: Vec<Vec<u8>> = xs
                    .into_iter()
                    .map(|(a, k, b, v, c)| [a, &k, b, b":", &v, c].concat())
                    .collect();
                [&b"{"[..], &xs.join(&b","[..]), b"}"].concat()
            },
        )
    }

    /// A value inside about [`MAX_DEPTH`] objects and arrays.
    fn deep(wild: u32) -> impl Strategy<Value = Vec<u8>> {
        (MAX_DEPTH - 3..MAX_DEPTH + 3, any::<u64>(), value(wild)).prop_map(|(n, bits, v)| {
            let (mut open, mut close) = (Vec::new(), Vec::new());
            for i in 0..n {
                if bits >> (i % 64) & 1 == 1 {
                    open.push(b'[');
                    close.push(b']');
                } else {
                    open.extend_from_slice(b"{\"k\":");
                    close.push(b'}');
                }
            }
            close.reverse();
            [&b"{\"d\":"[..], &open, &v, &close, b"}"].concat()
        })
    }

    /// A document's source: an object, deep or not; when wild, sometimes another value or
    /// with a byte put in or taken out.
    fn source() -> impl Strategy<Value = Vec<u8>> {
        any::<bool>().prop_flat_map(|wild| {
            let wild = u32::from(wild);
            let doc = prop_oneof![
                12 => object(wild, value(wild)),
                1 => deep(wild),
                wild => value(wild),
            ];
            let bytes = b"\n\t\r\x01\x1f\x7f\xed\xff\xc3\"\\ud8{}[],:0e".to_vec();
            let edits = if wild == 1 { 4 } else { 20 };
            (
                ws(wild),
                doc,
                ws(wild),
                0..edits,
                any::<prop::sample::Index>(),
                prop::sample::select(bytes),
            )
                .prop_map(|(a, d, b, edit, at, byte)| {
                    let mut s = [a, &d, b].concat();
                    let i = at.index(s.len() + 1);
                    match edit {
                        0 => s.insert(i, byte),
                        1 if i < s.len() => {
                            s.remove(i);
                        }
                        _ => {}
                    }
                    s
                })
        })
    }

    /// The writer says yes to the same sources as it did before it was made faster, and
    /// then writes the same text and entries; a refusal leaves what was written before
    /// (the previous documents') as it was.
    #[test]
    fn the_writer_is_the_reference_one() {
        let mut runner = TestRunner::deterministic();
        let strategy = source();
        let mut sources: Vec<Vec<u8>> = (0..30_000)
            .map(|_| strategy.new_tree(&mut runner).unwrap().current())
            .collect();
        sources.extend(
            [
                &br#"{"a":"\\ud800"}"#[..],
                br#"{"a":"\u005cud800"}"#,
                br#"{"a":"\u005cuD9ff"}"#,
                br#"{"\u005cudb":1}"#,
                br#"{"a":"\u005cud0"}"#,
                br#"{"a":"\ud800"}"#,
                b"{\"a\":\"\t\"}",
                b"{\"a\":\t\"\r\"}",
                b"{\"a\":\t\"x\"}\r",
                b"{\"a\":\"x\x01\"}",
                b"{\"b\":1,\"a\":2,\"b\":3}",
                b"{\"b\":1,\"a\":2,\"\\u0062\":3}",
                b"{\"b\":{\"y\":1,\"x\":[{\"d\":1,\"c\":2}]},\"a\":2}",
            ]
            .map(<[u8]>::to_vec),
        );
        let (mut out, mut entries) = (b"prefix".to_vec(), Entries::default());
        let (mut ref_out, mut ref_entries) = (out.clone(), reference::Entries::default());
        let (mut taken, mut several) = (0, 0);
        for (n, src) in sources.iter().enumerate() {
            if n % 64 == 0 {
                out.truncate(6);
                ref_out.truncate(6);
                entries.list.clear();
                entries.keys.clear();
                ref_entries.list.clear();
                ref_entries.keys.clear();
            }
            let was = (out.len(), entries.list.len());
            let yes = write(src, &mut out, &mut entries);
            let want = reference_write(src, &mut ref_out, &mut ref_entries);
            let shown = String::from_utf8_lossy(src);
            assert_eq!(yes, want, "{shown}");
            assert_eq!(out, ref_out, "{shown}");
            assert_eq!(entries.list, ref_entries.list, "{shown}");
            assert_eq!(entries.keys, ref_entries.keys, "{shown}");
            if yes {
                taken += 1;
                several += usize::from(entries.list.len() - was.1 > 1);
            } else {
                assert_eq!(out.len(), was.0, "{shown}");
            }
        }
        // Both ways, often; and documents of several members (to be put in order or not).
        let n = sources.len();
        assert!(taken > n / 5 && taken < n * 4 / 5, "{taken} of {n} taken");
        assert!(several > n / 20, "{several} of {n} with several members");
    }
}
