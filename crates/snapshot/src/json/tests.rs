//! The scanner against `serde_json` (grammar: `IgnoredAny`; UTF-8: `str::from_utf8`) on
//! a hand-written corpus, on random JSON values and on random damage to them.

use super::*;
use proptest::prelude::*;
use serde_json::Value;

/// `serde_json`'s verdict: one JSON value (its recursion limit is 128, below ours) with
/// valid UTF-8. `IgnoredAny` checks the grammar without decoding escapes, so lone
/// surrogate escapes pass, as they do here.
fn oracle(b: &[u8]) -> bool {
    let Some(plain) = comments_to_spaces(b) else {
        return false;
    };
    serde_json::from_slice::<serde::de::IgnoredAny>(&plain).is_ok()
        && std::str::from_utf8(&plain).is_ok()
}

/// The input with each comment outside strings replaced by one space (what Jackson with
/// comments allowed sees); `None` when a `/*` comment is not closed. Comment contents
/// are not part of the value, so they are not checked.
fn comments_to_spaces(b: &[u8]) -> Option<Vec<u8>> {
    #[derive(PartialEq)]
    enum At {
        Out,
        Str,
        Esc,
        Line,
        Block,
        BlockStar,
    }
    let mut at = At::Out;
    let mut out = Vec::new();
    let mut k = 0;
    while k < b.len() {
        let c = b[k];
        match at {
            At::Out if c == b'/' && b.get(k + 1) == Some(&b'*') => {
                at = At::Block;
                k += 1;
            }
            At::Out if c == b'/' && b.get(k + 1) == Some(&b'/') => {
                at = At::Line;
                k += 1;
            }
            At::Out => {
                if c == b'"' {
                    at = At::Str;
                }
                out.push(c);
            }
            At::Str => {
                at = match c {
                    b'\\' => At::Esc,
                    b'"' => At::Out,
                    _ => At::Str,
                };
                out.push(c);
            }
            At::Esc => {
                at = At::Str;
                out.push(c);
            }
            At::Line if c == b'\n' || c == b'\r' => {
                at = At::Out;
                out.extend_from_slice(b" ");
                out.push(c);
            }
            At::Line => {}
            At::Block => at = if c == b'*' { At::BlockStar } else { At::Block },
            At::BlockStar => {
                at = match c {
                    b'/' => {
                        out.push(b' ');
                        At::Out
                    }
                    b'*' => At::BlockStar,
                    _ => At::Block,
                }
            }
        }
        k += 1;
    }
    match at {
        At::Block | At::BlockStar => None,
        At::Line => {
            out.push(b' ');
            Some(out)
        }
        _ => Some(out),
    }
}

fn agree(b: &[u8]) {
    let ours = check_value(b);
    assert_eq!(
        ours.is_ok(),
        oracle(b),
        "disagreement on {:?}: ours {ours:?}",
        String::from_utf8_lossy(b)
    );
}

#[test]
fn corpus_agrees_with_serde_json() {
    let valid: &[&[u8]] = &[
        br#"{}"#,
        br#"[]"#,
        br#"{"a":1}"#,
        b" \t\n{ \"a\" : [ 1 , 2.5 , -3e+7 , 0 , -0.0e-0 , true , false , null ] } \r\n",
        br#""plain string""#,
        br#"0"#,
        br#"-0"#,
        br#"1E9"#,
        br#"123456789012345678901234567890e999999"#,
        br#"{"esc":"\" \\ \/ \b \f \n \r \t \u00e9 \uD83D\uDE00 \ud800"}"#,
        "{\"utf8\":\"é 日本語 😀\"}".as_bytes(),
        b"{\"del\":\"\x7f\"}",
        br#"[[[[[[[[[[]]]]]]]]]]"#,
        br#"{"a":{"b":{"c":[{"d":[]}]}}}"#,
        br#"{"a":"12345678abcdefgh\"ijklmnop","b":"01234567"}"#,
        br#"{"":""}"#,
        br#"{"dup":1,"dup":2}"#,
    ];
    let invalid: &[&[u8]] = &[
        b"",
        b"   ",
        br#"{"#,
        br#"}"#,
        br#"{"a"}"#,
        br#"{"a":}"#,
        br#"{"a":1,}"#,
        br#"[1,]"#,
        br#"[,1]"#,
        br#"{,}"#,
        br#"{"a":1"b":2}"#,
        br#"{a:1}"#,
        br#"{'a':1}"#,
        br#"[01]"#,
        br#"[-01]"#,
        br#"[1.]"#,
        br#"[.5]"#,
        br#"[1e]"#,
        br#"[1e+]"#,
        br#"[-]"#,
        br#"[+1]"#,
        br#"[NaN]"#,
        br#"[Infinity]"#,
        br#"[tru]"#,
        br#"[nul]"#,
        br#"[truex]"#,
        br#"{"a":1}{"b":2}"#,
        br#"{"a":1} x"#,
        br#""unterminated"#,
        br#"["\x"]"#,
        br#"["\u12"]"#,
        br#"["\u12G4"]"#,
        b"[\"tab\tinside\"]",
        b"[\"nl\ninside\"]",
        b"[\"nul\x00inside\"]",
        b"[\"bad utf8 \xff\"]",
        b"[\"truncated utf8 \xe6\x97\"]",
        b"[\"overlong \xc0\xaf\"]",
        b"[\"surrogate \xed\xa0\x80\"]",
        b"\xef\xbb\xbf{}",
        b"[1] \xe9",
        br#"[1}"#,
        br#"{"a":1]"#,
        br#"["a\"]"#,
    ];
    for b in valid {
        agree(b);
        assert!(check_value(b).is_ok(), "{:?}", String::from_utf8_lossy(b));
    }
    for b in invalid {
        agree(b);
        assert!(check_value(b).is_err(), "{:?}", String::from_utf8_lossy(b));
    }
}

#[test]
fn errors_say_where() {
    let e = check_value(br#"{"a":[1,2,x]}"#).unwrap_err();
    assert_eq!(e.offset, 10);
    assert_eq!(e.to_string(), "expected a value at byte 10");
    let e = check_value(b"{\"a\":\"ok \xff\"}").unwrap_err();
    assert_eq!(e.offset, 9, "{e}");
}

#[test]
fn line_breaks_are_reported_outside_strings_only() {
    assert!(!check_value(br#"{"a":"x\ny"}"#).unwrap().line_breaks);
    assert!(!check_value(b"{ \"a\" :\t1 }").unwrap().line_breaks);
    assert!(check_value(b"{\"a\":1}\n").unwrap().line_breaks);
    assert!(check_value(b"{\r\"a\":1}").unwrap().line_breaks);
    assert!(check_value(b"[1,\n2]").unwrap().line_breaks);
}

#[test]
fn comments_are_accepted_where_whitespace_is() {
    for ok in [
        &b"/* lead */ {\"a\":1}"[..],
        b"{/**/\"a\"/* k */:/* v */1/**/,\"b\":[/* empty */]}",
        b"{\"a\":[1 /* one */, 2 // two\n]}",
        b"{\"a\":1} // trailing, to the end",
        b"{\"a\":1}/* x */",
        b"{\"a\":\"/* not a comment */ // nor this\"}",
        b"{\"a\":1 /* a * b / c **/}",
        b"[1,/*\xff\x01 anything */2]",
    ] {
        let scan =
            check_value(ok).unwrap_or_else(|e| panic!("{:?}: {e}", String::from_utf8_lossy(ok)));
        let inside = !ok.starts_with(b"{\"a\":\"/*");
        assert_eq!(scan.comments, inside, "{:?}", String::from_utf8_lossy(ok));
        agree(ok);
    }
    assert!(check_value(b"{\"a\":1 // x\n}").unwrap().line_breaks);
    assert!(!check_value(b"{\"a\":1 /* x */}").unwrap().line_breaks);
    for (bad, reason) in [
        (&b"{\"a\":1 /* open"[..], "comment is not closed"),
        (b"{\"a\":1 /*/", "comment is not closed"),
        (b"{\"a\": / 1}", "'/' that starts no comment"),
        (b"{\"a\":1} /", "'/' that starts no comment"),
        (b"{\"a\":1 // to the end}", "unexpected end of input"),
        (
            b"{\"a\":1} # yaml style",
            "trailing characters after the value",
        ),
    ] {
        let e = check_value(bad).unwrap_err();
        assert_eq!(e.reason, reason, "{:?}", String::from_utf8_lossy(bad));
        agree(bad);
    }
}

#[test]
fn nesting_is_bounded() {
    let deep = |n: usize| {
        let mut v = "[".repeat(n).into_bytes();
        v.extend("]".repeat(n).bytes());
        v
    };
    assert!(check_value(&deep(MAX_DEPTH)).is_ok());
    let e = check_value(&deep(MAX_DEPTH + 1)).unwrap_err();
    assert_eq!(e.offset, MAX_DEPTH, "{e}");
    let mut objects = r#"{"a":"#.repeat(MAX_DEPTH).into_bytes();
    objects.extend(b"1");
    objects.extend("}".repeat(MAX_DEPTH).bytes());
    assert!(check_value(&objects).is_ok());
    // A million opening brackets: an error, not a stack overflow.
    assert!(check_value(&vec![b'['; 1_000_000]).is_err());
}

/// Strings that exercise the 8-byte scan: every position of a stop byte in a word,
/// non-ASCII characters across word boundaries.
#[test]
fn every_alignment_of_stops_and_multibyte_characters() {
    for pad in 0..20 {
        for tail in ["\\\"", "\\n", "\\u00e9", "é", "😀", "日本", "\u{7f}"] {
            let s = format!(
                "{{\"k\":\"{}{tail}{}\",\"z\":1}}",
                "a".repeat(pad),
                "b".repeat(pad % 7)
            );
            agree(s.as_bytes());
            assert!(check_value(s.as_bytes()).is_ok(), "{s}");
            // Cut inside the string (maybe inside a multi-byte character): invalid.
            for cut in 6..s.len() - 8 {
                agree(&s.as_bytes()[..cut]);
            }
            // A raw control character or a bad byte at every position of the string.
            for at in 6..6 + pad {
                for bad in [0x01u8, 0x1f, 0xff, 0x80] {
                    let mut b = s.clone().into_bytes();
                    b[at] = bad;
                    agree(&b);
                }
            }
        }
    }
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[ -~é日😀\\n\\t\"\\\\\u{1}\u{1f}\u{7f}]{0,24}".prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_é\"\\\\]{0,8}", inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Damage applied to valid JSON.
#[derive(Debug, Clone)]
enum Damage {
    Flip(usize, u8),
    Set(usize, u8),
    Insert(usize, u8),
    Remove(usize),
    Truncate(usize),
}

fn damage() -> impl Strategy<Value = Damage> {
    let interesting = prop_oneof![
        any::<u8>(),
        prop::sample::select(
            b"{}[]\",:\\ \n0123456789-+.eEtrufalsn\x00\x1f\x7f\x80\xc3\xff".to_vec()
        ),
    ];
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(p, b)| Damage::Flip(p, 1 << b)),
        (any::<usize>(), interesting.clone()).prop_map(|(p, b)| Damage::Set(p, b)),
        (any::<usize>(), interesting).prop_map(|(p, b)| Damage::Insert(p, b)),
        any::<usize>().prop_map(Damage::Remove),
        any::<usize>().prop_map(Damage::Truncate),
    ]
}

fn apply(mut b: Vec<u8>, d: &Damage) -> Vec<u8> {
    if b.is_empty() {
        return b;
    }
    let n = b.len();
    match *d {
        Damage::Flip(p, m) => b[p % n] ^= m,
        Damage::Set(p, v) => b[p % n] = v,
        Damage::Insert(p, v) => b.insert(p % (n + 1), v),
        Damage::Remove(p) => {
            b.remove(p % n);
        }
        Damage::Truncate(p) => b.truncate(p % n),
    }
    b
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn serialized_values_are_valid(v in json_value()) {
        let compact = serde_json::to_vec(&v).unwrap();
        prop_assert_eq!(check_value(&compact), Ok(JsonScan { line_breaks: false, comments: false }));
        let pretty = serde_json::to_vec_pretty(&v).unwrap();
        let scan = check_value(&pretty).unwrap();
        prop_assert_eq!(scan.line_breaks, pretty.contains(&b'\n'));
    }

    #[test]
    fn damaged_values_agree_with_serde_json(
        v in json_value(),
        pretty in any::<bool>(),
        damages in prop::collection::vec(damage(), 1..4),
    ) {
        let mut b = if pretty { serde_json::to_vec_pretty(&v) } else { serde_json::to_vec(&v) }.unwrap();
        for d in &damages {
            b = apply(b, d);
        }
        prop_assert_eq!(check_value(&b).is_ok(), oracle(&b), "{:?}", String::from_utf8_lossy(&b));
    }

    #[test]
    fn random_json_alphabet_agrees(b in prop::collection::vec(
        prop::sample::select(b"{}[]\",:\\ \n0123456789-+.eEtrufalsnu\xc3\xa9/*".to_vec()), 0..40)
    ) {
        prop_assert_eq!(check_value(&b).is_ok(), oracle(&b), "{:?}", String::from_utf8_lossy(&b));
    }

    #[test]
    fn random_bytes_agree(b in prop::collection::vec(any::<u8>(), 0..64)) {
        prop_assert_eq!(check_value(&b).is_ok(), oracle(&b));
    }
}

/// A noted source is known checked only as those very bytes (same memory, same length),
/// once, and only on a thread that asked for notes.
#[test]
fn a_noted_source_is_known_only_as_itself() {
    std::thread::spawn(|| {
        let b = bytes::Bytes::from_static(br#"{"a":1}"#);
        note_checked(&b);
        assert!(!checked_before(&b), "noted without being asked");
        note_checked_sources();
        note_checked(&b);
        let copy = b.to_vec();
        assert!(!checked_before(&copy), "other bytes of the same content");
        assert!(!checked_before(&b[..b.len() - 1]), "a part of it");
        assert!(checked_before(&b.clone()));
        assert!(!checked_before(&b), "the note is used once");
        note_checked(&bytes::Bytes::new());
        assert!(!checked_before(&[]));
    })
    .join()
    .unwrap();
}
