//! Every `--transform '…'` example of the README, run on sample documents by the field-edit
//! fast path (where it takes the program) and by the interpreter: the same documents.

use std::sync::Arc;

use bytes::Bytes;
use coordination::Position;
use engine::document::{Document, Op};
use programs::field_edits::FieldEdits;
use programs::program::JqProgram;
use programs::reshape::DocumentProgram;

fn examples() -> Vec<String> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let mut out = Vec::new();
    // command lines: indented code, not prose
    for line in readme.lines().filter(|l| l.starts_with("    ")) {
        for part in line.split("--transform '").skip(1) {
            if let Some(end) = part.find('\'') {
                out.push(part[..end].to_string());
            }
        }
    }
    out
}

const SOURCES: &[&str] = &[
    r#"{"title":"Dune","author":"Herbert","year":1965,"internal":1,"tmp":"x","langs":["en","fr"]}"#,
    r#"{"title":"Emma","author":"Austen","year":1815,"deleted":true,"langs":[]}"#,
    r#"{"title":"Odd \"one\"","year":"unknown","author":null}"#,
    r#"{"year":1949.5,"nested":{"a":[1,{"b":null}]}}"#,
    r#"{}"#,
];

fn doc(source: &str) -> Document {
    Document {
        position: Position::Doc(3),
        op: Op::Index,
        index: Arc::from("books"),
        id: "b1".into(),
        doc_type: None,
        routing: None,
        source: Bytes::from(source.to_string()),
    }
}

/// One output: index, id, routing and `_source`.
type Output = (String, String, Option<String>, serde_json::Value);

fn outputs(p: &dyn DocumentProgram, d: &Document) -> Result<Vec<Output>, String> {
    let mut out = Vec::new();
    p.reshape(d, &mut out).map_err(|e| e.0)?;
    Ok(out
        .into_iter()
        .map(|o| {
            let v = serde_json::from_slice(&o.source).expect("JSON");
            (o.index.to_string(), o.id, o.routing, v)
        })
        .collect())
}

#[test]
fn readme_transform_examples_give_the_same_documents_on_both_paths() {
    let examples = examples();
    assert!(examples.len() >= 6, "{examples:?}");
    let mut fast = 0;
    for text in &examples {
        let jq = Arc::new(JqProgram::compile(text).unwrap_or_else(|e| panic!("{text}: {e}")));
        let Some(edits) = FieldEdits::recognise(jq.clone()) else {
            continue;
        };
        fast += 1;
        for s in SOURCES {
            let d = doc(s);
            assert_eq!(outputs(&edits, &d), outputs(&*jq, &d), "{text} on {s}");
        }
    }
    // the rename, the derived field and the `del` of the copy example (the route sets
    // `_routing`, which only jq does)
    assert!(
        fast >= 3,
        "only {fast} of the README's examples take the fast path"
    );
}
