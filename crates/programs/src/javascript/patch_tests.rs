//! node's patches change no output byte: documents run through node with patches and
//! with every answer whole (as before patches were), compared one by one; and the
//! JS-canonical writer against node itself.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

use super::canonical;
use super::*;
use coordination::Position;

/// node, required under CI=true; `None` (the test says so and passes) elsewhere.
fn node_path() -> Option<PathBuf> {
    match node::probe() {
        Ok((path, _)) => Some(path.clone()),
        Err(why) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("CI=true and no node to test the patches with: {why}")
        }
        Err(why) => {
            eprintln!("skipping: {why}");
            None
        }
    }
}

/// Runs node's `script` with `lines` on its stdin (one each), and returns its stdout's lines.
fn node_lines(node: &Path, script: &str, lines: &[String]) -> Vec<String> {
    let mut child = Command::new(node)
        .arg("-e")
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines: Vec<String> = lines
        .iter()
        .map(|l| serde_json::to_string(l).unwrap())
        .collect();
    let input = lines.join("\n") + "\n";
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let got: Vec<String> = text.lines().map(str::to_string).collect();
    assert_eq!(got.len(), lines.len());
    got
}

/// What node does with a document's text: parse it, sort every object's keys, write it.
const SORTED: &str = r#"
const sort = (v) => {
  if (Array.isArray(v)) return v.map(sort);
  if (v === null || typeof v !== "object") return v;
  const o = {};
  for (const k of Object.keys(v).sort())
    Object.defineProperty(o, k, { value: sort(v[k]), enumerable: true, writable: true, configurable: true });
  return o;
};
const lines = require("fs").readFileSync(0, "utf8").split("\n");
lines.pop();
for (const l of lines) {
  let out;
  try { out = JSON.stringify(sort(JSON.parse(JSON.parse(l)))); } catch (e) { out = "!"; }
  process.stdout.write(out + "\n");
}
"#;

/// A JSON string's text: characters that need escaping or not, written raw or escaped in
/// each way JSON allows.
fn json_string(tame: bool) -> impl Strategy<Value = String> {
    let ch = prop_oneof![
        30 => prop::char::range('a', 'z'),
        8 => prop::sample::select(vec![
            '"', '\\', '/', '\u{0}', '\u{8}', '\u{9}', '\u{a}', '\u{c}', '\u{d}', '\u{1f}',
            '\u{7f}', 'é', '\u{2028}', ' ', '0', '\u{7ff}', '\u{800}', '\u{cfff}',
        ]),
        // Text the engines send the slow way (or that the writer refuses to be sure).
        if tame { 0 } else { 1 } => prop::sample::select(vec!['\u{d000}', '\u{d7ff}', '\u{e000}', '\u{ffff}', '😀']),
    ];
    prop::collection::vec((ch, 0..4u8), 0..8).prop_map(|cs| {
        let mut s = String::from("\"");
        for (c, how) in cs {
            match (c, how) {
                ('"', _) => s.push_str("\\\""),
                ('\\', _) => s.push_str("\\\\"),
                ('/', 1) => s.push_str("\\/"),
                ('\u{8}', 1) => s.push_str("\\b"),
                ('\u{9}', 1) => s.push_str("\\t"),
                ('\u{a}', 1) => s.push_str("\\n"),
                ('\u{c}', 1) => s.push_str("\\f"),
                ('\u{d}', 1) => s.push_str("\\r"),
                (c, 2) | (c @ '\u{0}'..='\u{1f}', _) => {
                    let mut units = [0u16; 2];
                    for u in c.encode_utf16(&mut units) {
                        s.push_str(&format!("\\u{u:04X}"));
                    }
                }
                (c, 3) if c.is_ascii_lowercase() => s.push_str(&format!("\\u{:04x}", c as u32)),
                (c, _) => s.push(c),
            }
        }
        s.push('"');
        s
    })
}

/// A JSON number's text, of every shape.
fn json_number(tame: bool) -> impl Strategy<Value = String> {
    let wild = if tame { 0 } else { 1 };
    prop_oneof![
        2 * wild => prop::sample::select(vec![
            "0", "-0", "0.0", "-0.0", "1.0", "100.0", "1e5", "1E-7", "1e-5", "0.00001", "0.000001",
            "0.1", "0.30000000000000004", "123.4500", "-1.25e-6", "1e21", "1e16", "9.2e18",
            "9300000000000000000", "123456789012345", "1234567890123456", "12345678901234567",
            "12345678901234567890", "9007199254740993", "-9223372036854775808", "1e400",
            "-2.5e300", "2.5e-300", "1E+2", "0e0", "5e-324", "1234567890123.5", "0.1e1",
            "999999999999999.9", "9999999999999999.5",
        ])
        .prop_map(str::to_string),
        wild => any::<f64>().prop_map(|x| format!("{x:e}")),
        wild => any::<f64>().prop_map(|x| format!("{x}")),
        wild => any::<i64>().prop_map(|x| x.to_string()),
        3 => any::<i32>().prop_map(|x| x.to_string()),
        4 => (any::<u32>(), 0..8u32).prop_map(|(m, e)| format!("{}", m as f64 / 10f64.powi(e as i32))),
        wild => (-30..30i32, 1..99999u32).prop_map(|(e, m)| format!("{m}e{e}")),
        1 => prop::sample::select(vec!["-0", "1.0", "1e5", "0.1", "1E2", "12.50", "1e-5", "-0.0"])
            .prop_map(str::to_string),
    ]
}

/// A key: the usual, and those that objects do not keep in insertion order.
fn json_key(tame: bool) -> impl Strategy<Value = String> {
    prop_oneof![
        12 => prop::sample::select(vec![
            "\"a\"", "\"b\"", "\"A\"", "\"_id\"", "\"\"", "\"constructor\"", "\"é\"",
            "\"a\\u0062\"", "\"ab\"", "\"z\"", "\"a b\"", "\"\\n\"", "\"toString\"",
        ])
        .prop_map(str::to_string),
        // Keys an object does not keep in insertion order, or that the writer refuses.
        if tame { 0 } else { 1 } => prop::sample::select(vec![
            "\"10\"", "\"7\"", "\"0x\"", "\"__proto__\"", "\"\\ud83d\\ude00\"", "\"ａ\"",
        ])
        .prop_map(str::to_string),
        12 => "[a-z_]{1,6}".prop_map(|k| format!("\"{k}\"")),
        3 => json_string(tame),
    ]
}

/// A JSON value's text, with some white space between its tokens.
fn json_value(tame: bool) -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        json_number(tame),
        json_string(tame),
        prop::sample::select(vec!["true", "false", "null"]).prop_map(str::to_string),
    ];
    leaf.prop_recursive(5, 48, 6, move |inner| {
        let ws = prop::sample::select(if tame {
            vec!["", "", "", "", " ", "\t", "  ", "\r"]
        } else {
            vec!["", "", " ", "\r\n"]
        });
        prop_oneof![
            prop::collection::vec((inner.clone(), ws.clone()), 0..6).prop_map(|xs| {
                let xs: Vec<String> = xs.into_iter().map(|(x, w)| format!("{w}{x}")).collect();
                format!("[{}]", xs.join(","))
            }),
            object_of(json_key(tame), inner, ws),
        ]
    })
}

fn object_of(
    key: impl Strategy<Value = String>,
    value: impl Strategy<Value = String>,
    ws: impl Strategy<Value = &'static str>,
) -> impl Strategy<Value = String> {
    prop::collection::vec((key, value, ws), 0..7).prop_map(|xs| {
        let xs: Vec<String> = xs
            .into_iter()
            .map(|(k, v, w)| format!("{w}{k}{w}:{v}"))
            .collect();
        format!("{{{}}}", xs.join(","))
    })
}

/// A document's source: an object, with the fields the bench's general transform reads
/// (in some of them), then others.
fn json_source() -> impl Strategy<Value = String> {
    any::<bool>().prop_flat_map(|tame| {
        let ws = prop::sample::select(vec!["", "", " "]);
        (
            any::<bool>(),
            json_string(tame),
            json_number(tame),
            json_number(tame),
            object_of(json_key(tame), json_value(tame), ws),
        )
            .prop_map(|(general, name, price, qty, rest)| {
                if !general {
                    return rest;
                }
                let comma = if rest == "{}" { "" } else { "," };
                format!(
                    r#"{{"customer":{{"name":{name},"email":"e@x"}},"price":{price},"qty":{qty}{comma}{}"#,
                    &rest[1..]
                )
            })
    })
}

/// `n` values of `strategy`, the same ones at every run.
fn sample<S: Strategy>(strategy: S, n: usize) -> Vec<S::Value> {
    let mut runner = TestRunner::deterministic();
    (0..n)
        .map(|_| strategy.new_tree(&mut runner).unwrap().current())
        .collect()
}

/// The sources of the snapshot fixtures' expected documents, and each with its line
/// breaks made spaces (node reads a source with line breaks through rfs's values).
fn fixture_sources() -> Vec<String> {
    let dir = std::env::var("RFS_FIXTURES").unwrap_or_else(|_| "../../../shared/fixtures".into());
    let dir = Path::new(&dir).join("snapshots");
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("CI=true and no fixtures in {}: {e}", dir.display())
        }
        Err(e) => {
            eprintln!("no fixtures in {}: {e}", dir.display());
            return out;
        }
    };
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    match (k.as_str(), x) {
                        ("_source", serde_json::Value::String(s)) => {
                            out.push(s.clone());
                            out.push(s.replace('\n', " "));
                        }
                        _ => walk(x, out),
                    }
                }
            }
            serde_json::Value::Array(xs) => xs.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    for e in entries {
        let path = e.unwrap().path();
        if path.to_string_lossy().ends_with(".expected.json") {
            let v: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            walk(&v, &mut out);
        }
    }
    assert!(
        !out.is_empty(),
        "no _source in the fixtures of {}",
        dir.display()
    );
    out
}

/// Each written text is node's for the same source (every object's keys sorted); and the
/// writer takes most of the generated sources (the test would prove nothing otherwise).
#[test]
fn the_canonical_text_is_nodes() {
    let Some(node) = node_path() else { return };
    let mut sources = sample(json_source(), 4000);
    sources.extend(fixture_sources());
    sources.extend(
        [
            r#"{"b":1,"a":{"d":[1,{"z":0,"y":-0}],"c":"\u00e9\/\u2028"},"e":1.50}"#,
            r#"{"n":[1e5,1E-5,0.1e1,123456789012345678,-1.5,12.30]}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"x":{"a":1,"b":{"a":2,"a":3}}}"#,
            r#" { "s" : "\u0001\u001F\"\\" } "#,
        ]
        .map(str::to_string),
    );
    let want = node_lines(&node, SORTED, &sources);
    let mut taken = 0;
    let mut entries = canonical::Entries::default();
    for (src, want) in sources.iter().zip(&want) {
        let mut out = b"prefix".to_vec();
        entries.list.clear();
        entries.keys.clear();
        if !canonical::write(src.as_bytes(), &mut out, &mut entries) {
            assert_eq!(out, b"prefix");
            assert!(entries.list.is_empty());
            continue;
        }
        taken += 1;
        let got = std::str::from_utf8(&out[6..]).unwrap();
        assert_eq!(got, want, "{src}");
        // The entries: every top-level member, in order, with its decoded key.
        let members: Vec<String> = entries
            .list
            .iter()
            .map(|e| String::from_utf8(out[e.member.clone()].to_vec()).unwrap())
            .collect();
        let v: serde_json::Value = serde_json::from_str(got).unwrap();
        let m = v.as_object().unwrap();
        assert_eq!(members.len(), m.len(), "{src}");
        for (e, (member, (k, _))) in entries.list.iter().zip(members.iter().zip(m)) {
            assert_eq!(&entries.keys[e.key.clone()], k.as_bytes(), "{src}");
            let one: serde_json::Value = serde_json::from_str(&format!("{{{member}}}")).unwrap();
            assert_eq!(one.as_object().unwrap().keys().next().unwrap(), k, "{src}");
        }
        // With no patch, the merge writes the text again.
        let mut again = Vec::new();
        assert!(canonical::merge(
            &out,
            &entries.list,
            &entries.keys,
            &mut [],
            &mut again
        ));
        assert_eq!(again, &out[6..]);
    }
    assert!(taken > sources.len() / 4, "{taken} of {}", sources.len());
}

/// Numbers written as `Number.prototype.toString` writes them, where node.js's
/// `plainNumber` takes them, and refused elsewhere.
#[test]
fn numbers_are_written_as_javascript_writes_them() {
    let Some(node) = node_path() else { return };
    let xs: Vec<f64> = sample(
        prop_oneof![
            any::<f64>(),
            any::<i64>().prop_map(|x| x as f64),
            (any::<u32>(), 0..12u32).prop_map(|(m, e)| m as f64 / 10f64.powi(e as i32)),
            (1u64..1 << 53, -70..60i32).prop_map(|(m, e)| m as f64 * 2f64.powi(e)),
        ],
        20000,
    );
    let lines: Vec<String> = xs.iter().map(|x| format!("{x:e}")).collect();
    let got = node_lines(
        &node,
        r#"const lines = require("fs").readFileSync(0, "utf8").split("\n"); lines.pop();
           const plain = (x) => Number.isInteger(x) ? x >= -9.2e18 && x <= 9.2e18 : Math.abs(x) >= 1e-5 && Math.abs(x) < 1e16;
           for (const l of lines) { const x = Number(JSON.parse(l)); process.stdout.write((plain(x) ? String(x) : "-") + "\n"); }"#,
        &lines,
    );
    let mut written = 0;
    for (x, want) in xs.iter().zip(&got) {
        let mut out = Vec::new();
        match canonical::write_js_number(*x, &mut out) {
            Some(()) => {
                written += 1;
                assert_eq!(std::str::from_utf8(&out).unwrap(), want, "{x:e}");
            }
            None => assert_eq!(want, "-", "{x:e}"),
        }
    }
    assert!(written > 5000, "{written}");
}

fn docs_of(sources: &[String]) -> Vec<Document> {
    sources
        .iter()
        .enumerate()
        .map(|(i, s)| Document {
            position: Position::Doc(i as u64),
            op: match i % 9 {
                3 => Op::Create,
                8 => Op::Delete,
                _ => Op::Index,
            },
            index: "books".into(),
            id: match i % 31 {
                5 => String::new(),
                6 => "x\\ud800".into(),
                _ => format!("{i}"),
            },
            doc_type: (i % 3 == 1).then(|| "doc".into()),
            routing: (i % 2 == 1).then(|| format!("r{i}")),
            source: bytes::Bytes::from(s.as_bytes().to_vec()),
        })
        .collect()
}

/// What a program made of one input: the outputs' fields and exact `_source` bytes, the
/// filter reason; or its error.
type Fate = Result<(Vec<String>, Option<String>), String>;

fn fates(rs: Vec<Reshaped>) -> Vec<Fate> {
    rs.into_iter()
        .map(|r| {
            r.map(|(out, f)| {
                let out = out
                    .into_iter()
                    .map(|d| {
                        format!(
                            "{:?} {} {} {:?} {:?} {:?} {}",
                            d.position,
                            d.index,
                            d.id,
                            d.routing,
                            d.doc_type,
                            d.op,
                            String::from_utf8_lossy(&d.source)
                        )
                    })
                    .collect();
                (out, f)
            })
            // (serde's errors name a column in node's answer, which the patches move.)
            .map_err(|e| {
                e.0.split(" at line ")
                    .next()
                    .unwrap_or_default()
                    .to_string()
            })
        })
        .collect()
}

/// The transforms the patches are checked with: the bench's general one, one that passes
/// documents on, and ones that set, read and hand out fields of every kind.
const SCRIPTS: &[&str] = &[
    r#"(() => (c) => (documents) => documents.map((d) => {
        const source = d.get("document");
        const customer = source.get("customer");
        customer.set("name", customer.get("name").toUpperCase());
        source.set("total", source.get("price") * source.get("qty"));
        return d;
    }))();"#,
    "(() => (c) => (docs) => docs)();",
    r#"(() => (c) => (docs) => docs.map((d, i) => {
        const s = d.get("document");
        if (s === null) return d;
        switch (i % 14) {
            case 0: s.set("new", {b: 1, a: [1, new Map([["d", 2], ["c", 3]])], "\u2028": "\u0001/"}); break;
            case 1: s.set("n", -0); s.set("big", 2 ** 70); s.set("tiny", 1e-7); break;
            case 2: s.set("u", undefined); s.set("nan", NaN); break;
            case 3: { const x = s.get("a"); if (x instanceof Map) x.set("zz", "é\ud800"); break; }
            case 4: s.set("10", 1); s.set("a", "\ud83d\ude00"); break;
            case 5: s.set("__proto__", {p: 1}); s.set("self", s.get("b")); break;
            case 6: s.set("b", s.get("a")); s.set("a", true); s.set("f", () => 1); break;
            case 7: s.get("z"); s.has("b"); d.get("operation").get("_id"); s.set("zz", new Map([["10", 1], ["2", 2]])); break;
            case 8: s.set("n", -0); s.set("x", 1.5e-3); s.set("y", 123456789012345680000); s.set("a\"\n", "q\"\\\u001f"); break;
            case 9: s.set("b", s.get("a")); s.set("a", false); s.set("", null); break;
            case 10: { const x = s.get("a"); if (x instanceof Map) { x.set("zz", [1, {y: 2, x: 1}]); x.set("b", 2); } break; }
            case 11: { const x = s.get("A"); if (Array.isArray(x)) x.push(new Map([["k", 0.1 + 0.2]])); s.set("b", "é\u2028"); break; }
            case 12: s.get("a"); s.get("b"); break;
            case 13: s.set("ab", s.get("b")); s.set("z", s.get("z")); break;
        }
        return d;
    }))();"#,
    r#"(() => (c) => (docs) => docs.map((d, i) => {
        if (i % 3 === 0) d.get("operation").set("_id", "z" + i);
        if (i % 3 === 1) d.set("operation_type", "index");
        if (i % 5 === 0) d.get("document").delete("a");
        return d;
    }))();"#,
];

/// Every generated, fixture and bench-like source through each transform, patches on and
/// off: the same fate for every document, byte for byte; and patches were taken.
#[test]
fn patches_change_no_byte() {
    if node_path().is_none() {
        return;
    }
    let mut sources = sample(json_source(), 1200);
    sources.extend(fixture_sources());
    for i in 0..50 {
        sources.push(format!(
            r#"{{"id":"doc-{i:08}","version":{i},"@timestamp":"2024-01-0{}T00:00:00Z","price":{}.{},"qty":{},"customer":{{"name":"alpha bravo","email":"x{i}@example.com"}},"tags":["a","b"],"body":"text {i}"}}"#,
            i % 9 + 1,
            i * 37 % 1000,
            i % 100,
            i * 7 % 1000
        ));
    }
    let docs = docs_of(&sources);
    for (n, script) in SCRIPTS.iter().enumerate() {
        let with = JsProgram::with_engine(script.to_string(), "{}".into(), JsEngine::Node).unwrap();
        let without = JsProgram::with_engine(script.to_string(), "{}".into(), JsEngine::Node)
            .unwrap()
            .without_patches();
        let mut got = Vec::new();
        let before = PATCHED.with(|c| c.get());
        for chunk in docs.chunks(NODE_BATCH) {
            got.extend(fates(with.reshape_batch(chunk)));
        }
        let patched = PATCHED.with(|c| c.get()) - before;
        let mut want = Vec::new();
        for chunk in docs.chunks(NODE_BATCH) {
            want.extend(fates(without.reshape_batch(chunk)));
        }
        assert_eq!(PATCHED.with(|c| c.get()) - before, patched);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "script {n}, input {i}: {}", sources[i]);
        }
        assert_eq!(got.len(), want.len());
        let ok = want.iter().filter(|f| f.is_ok()).count();
        eprintln!("script {n}: {patched} patched, {ok} fine of {}", want.len());
        assert!(patched > 100, "script {n}: only {patched} patches");
    }
}
