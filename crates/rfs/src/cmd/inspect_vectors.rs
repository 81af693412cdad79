//! `rfs inspect`'s vector lines: each vector field of an index (its path, the mapping's
//! element type, the per-field Lucene formats its segments use) and where its values will
//! come from — `_source`, the vector files (the index left vectors out of `_source`:
//! Elasticsearch 9.2+ `index.mapping.exclude_source_vectors`, OpenSearch 3 derived
//! source), or nowhere (an ERROR: vectors left out of `_source` and kept in a format the
//! reader does not know). The copy itself skips such documents as `vector_unreadable`
//! (counted, in the failure log, exit 7) rather than refusing the plan: a document that
//! still holds the field in its `_source`, or lies in a segment of a readable format, is
//! delivered whole.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Value};
use snapshot::vectors::{Element, VectorFieldSummary, VectorPlan};

/// Per field, what the segments say: formats, and the first reason one cannot be read.
#[derive(Default)]
struct Seen {
    formats: BTreeSet<String>,
    encoding: BTreeSet<&'static str>,
    unreadable: Option<String>,
}

/// The `vector_fields` entry of an index: one object per vector field of the mapping or
/// of the segments.
pub fn vector_fields(
    index: &str,
    md: &snapshot::IndexMetadata,
    segments: &[VectorFieldSummary],
) -> Value {
    let plan = VectorPlan::from_metadata(md).unwrap_or_default();
    let mut seen: BTreeMap<String, Seen> = BTreeMap::new();
    let mut metadata_error = None;
    for s in segments {
        if s.field == "*" {
            // the segment's vector metadata itself could not be read
            metadata_error.get_or_insert_with(|| s.unreadable.clone().unwrap_or_default());
            continue;
        }
        let e = seen.entry(s.field.clone()).or_default();
        e.formats.insert(s.format.clone());
        if !s.encoding.is_empty() {
            e.encoding.insert(s.encoding);
        }
        if let Some(why) = &s.unreadable {
            e.unreadable.get_or_insert_with(|| why.clone());
        }
    }
    let mut out = Vec::new();
    let mut paths: BTreeSet<&str> = plan.fields.iter().map(|f| f.path.as_str()).collect();
    paths.extend(seen.keys().map(String::as_str));
    for path in paths {
        let mapped = plan.fields.iter().find(|f| f.path == path);
        let s = seen.get(path);
        let element = match mapped.map(|f| f.element) {
            Some(Element::Float) => "float",
            Some(Element::Byte) => "byte",
            Some(Element::Bit) => "bit",
            // in the segments only (not a mapped vector field): the stored encoding
            None => s
                .and_then(|s| s.encoding.iter().next().copied())
                .unwrap_or("?"),
        };
        let formats: Vec<&String> = s.map(|s| s.formats.iter().collect()).unwrap_or_default();
        let unreadable = s
            .and_then(|s| s.unreadable.clone())
            .or_else(|| metadata_error.clone());
        let (read_from, note) = if !plan.excluded || mapped.is_none() {
            let note = unreadable.as_ref().map(|why| {
                format!(
                    "the vector files cannot be read ({why}); a document whose _source lacks the field{} is skipped as vector_unreadable when the files hold a vector for it",
                    if mapped.is_some_and(|f| f.opensearch) { " or holds the derived-source mask 1" } else { "" }
                )
            });
            ("_source", note)
        } else if let Some(why) = &unreadable {
            (
                "unreadable",
                Some(format!(
                    "index {index}: vector field {path} (format {}) is left out of _source and its vector files cannot be read: {why}; documents without it in _source are skipped as vector_unreadable (exit 7)",
                    join(&formats)
                )),
            )
        } else if s.is_none() {
            (
                "_source",
                Some("no segment holds vectors of this field".to_string()),
            )
        } else {
            ("vector files", None)
        };
        let mut v = json!({
            "path": path,
            "element": element,
            "formats": formats,
            "read_from": read_from,
            "mapped": mapped.is_some(),
        });
        if let Some(n) = note {
            v["note"] = json!(n);
        }
        if mapped.is_some_and(|f| f.es_cosine) && read_from == "vector files" {
            v["denormalized"] = json!("stored normalised: multiplied back by <field>._magnitude");
        }
        out.push(v);
    }
    Value::Array(out)
}

fn join(formats: &[&String]) -> String {
    if formats.is_empty() {
        "unknown".into()
    } else {
        formats
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The text lines of an index's vector fields.
pub fn print(index: &Value) {
    for v in index["vector_fields"].as_array().into_iter().flatten() {
        let path = v["path"].as_str().unwrap_or("");
        let formats: Vec<&str> = v["formats"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let head = format!(
            "vector field {path} ({}, format {})",
            v["element"].as_str().unwrap_or("?"),
            if formats.is_empty() {
                "none".to_string()
            } else {
                formats.join(", ")
            }
        );
        match v["read_from"].as_str() {
            Some("unreadable") => println!(
                "    ERROR {head}: {}",
                v["note"].as_str().unwrap_or("cannot be read")
            ),
            Some(from) => match v["note"].as_str() {
                Some(n) => println!("    {head}: read from {from}; {n}"),
                None => println!("    {head}: read from {from}"),
            },
            None => {}
        }
    }
}
