//! Verify by content, for a target that generated the document ids (OpenSearch
//! Serverless time-series and vector-search collections, `--server-generated-ids`): with
//! no id to look a document up by, each index is compared as a multiset of content
//! digests — the digest of each document's canonical `_source` mapped to how many
//! documents have it — on the source side (what the migration sent) and on the target
//! (every document, read back). A digest the target holds fewer times than sent is that
//! many documents missing; more times, that many extra (duplicates: a batch re-sent after
//! a worker died or its answer was lost).
//!
//! The canonical form is the exact JSON value ([`engine::lookup::exact`]): object keys in
//! order, strings unescaped, numbers by decimal value (`1.0` and `1` alike), so the
//! target's re-serialisation of a document does not make it another one.

use std::collections::HashMap;

use serde::Serialize;
use sha2::{Digest, Sha256};

use engine::lookup::exact::Exact;

/// The digest of one document's content.
pub type ContentDigest = [u8; 16];

/// The digest of `value`'s canonical form (the first 128 bits of its SHA-256).
pub fn digest(value: &Exact) -> ContentDigest {
    let mut h = Sha256::new();
    feed(&mut h, value);
    let full = h.finalize();
    let mut out = [0u8; 16];
    out.copy_from_slice(&full[..16]);
    out
}

/// Writes `v` canonically into the hash: a tag byte per kind, lengths before strings and
/// collections, so no two values share a form.
fn feed(h: &mut Sha256, v: &Exact) {
    match v {
        Exact::Null => h.update(b"n"),
        Exact::Bool(true) => h.update(b"t"),
        Exact::Bool(false) => h.update(b"f"),
        Exact::Number(n) => text(h, b'#', &n.canonical()),
        Exact::String(s) => text(h, b's', s),
        Exact::Array(a) => {
            h.update(b"[");
            h.update((a.len() as u64).to_le_bytes());
            for e in a {
                feed(h, e);
            }
        }
        Exact::Object(o) => {
            // A BTreeMap: keys in order.
            h.update(b"{");
            h.update((o.len() as u64).to_le_bytes());
            for (k, e) in o {
                text(h, b'k', k);
                feed(h, e);
            }
        }
    }
}

fn text(h: &mut Sha256, tag: u8, s: &str) {
    h.update([tag]);
    h.update((s.len() as u64).to_le_bytes());
    h.update(s.as_bytes());
}

/// Content digests of one index, with how many documents have each, and the first
/// source id seen per digest (to name a missing document).
#[derive(Debug, Default, Clone)]
pub struct Multiset {
    counts: HashMap<ContentDigest, (u64, Option<String>)>,
    total: u64,
}

impl Multiset {
    /// One more document with this digest (`id`: its source id, when known).
    pub fn add(&mut self, d: ContentDigest, id: Option<&str>) {
        let e = self.counts.entry(d).or_insert((0, None));
        e.0 += 1;
        if e.1.is_none() {
            e.1 = id.map(str::to_string);
        }
        self.total += 1;
    }

    /// Documents counted.
    pub fn total(&self) -> u64 {
        self.total
    }
}

/// One index compared by content.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ContentVerdict {
    /// Documents the source sent (refused ones left out).
    pub expected: u64,
    /// Documents the target holds (every one read back).
    pub held: u64,
    /// Documents sent that the target does not hold (by digest count).
    pub missing: u64,
    /// Documents the target holds beyond those sent: duplicates of a sent document, or
    /// documents that match none.
    pub extra: u64,
    /// Of `extra`, copies of a document that was sent (its digest sent fewer times than
    /// held): the duplicates a re-sent batch makes.
    pub duplicates: u64,
    /// Source ids of missing documents (at most `listed`; one per digest).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missing_ids: Vec<String>,
    /// Hex digests of extra documents with how many extra (at most `listed`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extra_digests: Vec<String>,
}

impl ContentVerdict {
    pub fn ok(&self) -> bool {
        self.missing == 0 && self.extra == 0
    }
}

/// `held` against `sent`, listing at most `listed` of each kind.
pub fn compare(sent: &Multiset, held: &Multiset, listed: usize) -> ContentVerdict {
    let mut v = ContentVerdict {
        expected: sent.total,
        held: held.total,
        ..ContentVerdict::default()
    };
    let mut missing: Vec<(&ContentDigest, u64, Option<&String>)> = Vec::new();
    for (d, (n, id)) in &sent.counts {
        let have = held.counts.get(d).map_or(0, |h| h.0);
        if have < *n {
            v.missing += n - have;
            missing.push((d, n - have, id.as_ref()));
        } else if have > *n {
            v.extra += have - n;
            v.duplicates += have - n;
        }
    }
    let mut extra: Vec<(&ContentDigest, u64)> = Vec::new();
    for (d, (n, _)) in &held.counts {
        match sent.counts.get(d) {
            None => {
                v.extra += n;
                extra.push((d, *n));
            }
            Some((s, _)) if n > s => extra.push((d, n - s)),
            Some(_) => {}
        }
    }
    // Listed in a stable order (by digest), whatever the hash map's.
    missing.sort();
    extra.sort();
    v.missing_ids = missing
        .into_iter()
        .take(listed)
        .map(|(d, n, id)| match id {
            Some(id) if n > 1 => format!("{id} (and {} more alike)", n - 1),
            Some(id) => id.clone(),
            None => format!("{} x{n}", hex(d)),
        })
        .collect();
    v.extra_digests = extra
        .into_iter()
        .take(listed)
        .map(|(d, n)| format!("{} x{n}", hex(d)))
        .collect();
    v
}

fn hex(d: &ContentDigest) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(json: &str) -> ContentDigest {
        digest(&Exact::parse(json.as_bytes()).unwrap())
    }

    #[test]
    fn digests_follow_the_value_not_the_text() {
        assert_eq!(
            d(r#"{"a":1,"b":[true,null]}"#),
            d(r#"{ "b":[true, null], "a":1.0 }"#)
        );
        assert_eq!(d(r#"{"s":"\u00e9"}"#), d(r#"{"s":"é"}"#));
        assert_ne!(d(r#"{"a":1}"#), d(r#"{"a":"1"}"#));
        assert_ne!(d(r#"{"a":1}"#), d(r#"{"a":1.000000000000000000001}"#));
        assert_ne!(d(r#"["ab","c"]"#), d(r#"["a","bc"]"#));
        assert_ne!(d(r#"{"a":[]}"#), d(r#"{"a":{}}"#));
    }

    #[test]
    fn multisets_count_missing_duplicates_and_strangers() {
        let mut sent = Multiset::default();
        for (id, j) in [
            ("1", r#"{"n":1}"#),
            ("2", r#"{"n":2}"#),
            ("3", r#"{"n":2}"#),
            ("4", r#"{"n":4}"#),
        ] {
            sent.add(d(j), Some(id));
        }
        let mut held = Multiset::default();
        // n:1 twice (one duplicate), n:2 once (one missing), n:4 absent, n:9 a stranger
        for j in [r#"{"n":1}"#, r#"{"n":1.0}"#, r#"{"n":2}"#, r#"{"n":9}"#] {
            held.add(d(j), None);
        }
        let v = compare(&sent, &held, 10);
        assert_eq!((v.expected, v.held), (4, 4));
        assert_eq!((v.missing, v.extra, v.duplicates), (2, 2, 1));
        assert!(!v.ok());
        assert_eq!(v.missing_ids.len(), 2);
        assert!(
            v.missing_ids.iter().any(|m| m == "4"),
            "{:?}",
            v.missing_ids
        );
        assert!(
            v.missing_ids.iter().any(|m| m == "2" || m == "3"),
            "{:?}",
            v.missing_ids
        );
        assert_eq!(v.extra_digests.len(), 2);
        assert!(compare(&sent, &sent, 10).ok());
        let listed = compare(&sent, &held, 1);
        assert_eq!(
            (listed.missing_ids.len(), listed.extra_digests.len()),
            (1, 1)
        );
    }
}
