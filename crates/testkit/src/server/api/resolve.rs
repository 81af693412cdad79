//! `GET _resolve/index/<expr>` (ES 7.9+, OpenSearch 1.0+), `POST <stream>/_rollover` for
//! data streams, and the `expand_wildcards` parameter of the listing APIs.
//!
//! What a real cluster answers was read from elastic/elasticsearch
//! `ResolveIndexAction.TransportAction.enrichIndexAbstraction` (7.x): each name or wildcard
//! match is listed once, under what it is — a concrete index in `indices` (`aliases`,
//! `attributes` sorted: `open`/`closed`, `hidden`, `frozen`; `data_stream` for a backing
//! index), an alias in `aliases` (its `indices`, sorted), a data stream in `data_streams`
//! (`backing_indices`, `timestamp_field`); each list sorted by name. An alias or a data
//! stream named is *not* expanded into `indices`. The request's indices options default to
//! strict expansion of open indices: a missing name is a 404 `index_not_found_exception`
//! (rest-api-spec `indices.resolve_index` tests). Wildcards skip hidden indices unless
//! `expand_wildcards` has `hidden` (`all`), or the pattern and the name both start with `.`
//! (`IndexAbstractionResolver.isIndexVisible`).

use serde_json::{json, Value};

use super::{Ctx, Resp};
use crate::server::error::EsError;
use crate::server::state::glob;

/// Whether `expand_wildcards` reaches hidden indices; a value the version does not know is
/// a 400 as there (`hidden` came with hidden indices in 7.7; before, `all` is open and
/// closed, which in this server also reaches dot-prefixed names).
pub(super) fn expand_hidden(c: &Ctx<'_>) -> Result<bool, EsError> {
    let Some(v) = c.q("expand_wildcards") else {
        return Ok(false);
    };
    let mut hidden = false;
    for w in v.split(',').filter(|w| !w.is_empty()) {
        match w {
            "open" | "closed" | "none" => {}
            "all" => hidden = true,
            "hidden" if c.shared.dialect.hidden_indices() => hidden = true,
            other => {
                return Err(EsError::new(
                    400,
                    "illegal_argument_exception",
                    format!("No valid expand wildcard value [{other}]"),
                ))
            }
        }
    }
    Ok(hidden)
}

pub(super) fn resolve_index(c: &Ctx<'_>, expr: &str) -> Result<Resp, EsError> {
    let hidden = expand_hidden(c)?;
    let st = c.state();
    let mut names: Vec<String> = Vec::new();
    let add = |n: &str, names: &mut Vec<String>| {
        if !names.iter().any(|x| x == n) {
            names.push(n.to_string());
        }
    };
    let is_alias = |n: &str| {
        !st.data_streams.contains_key(n) && st.indices.values().any(|i| i.aliases.contains_key(n))
    };
    for part in expr.split(',').filter(|p| !p.is_empty()) {
        if let Some(excluded) = part.strip_prefix('-') {
            names.retain(|n| !glob(excluded, n));
            continue;
        }
        if part == "_all" || part.contains('*') {
            let pat = if part == "_all" { "*" } else { part };
            for (name, idx) in &st.indices {
                if st.wildcard_reaches(pat, name, idx, hidden) {
                    add(name, &mut names);
                }
            }
            let mut aliases: Vec<&String> = st
                .indices
                .values()
                .flat_map(|i| i.aliases.keys())
                .filter(|a| !st.data_streams.contains_key(*a) && glob(pat, a))
                .collect();
            aliases.sort();
            for a in aliases {
                add(a, &mut names);
            }
            for ds in st.data_streams.keys().filter(|d| glob(pat, d)) {
                add(ds, &mut names);
            }
            continue;
        }
        if st.indices.contains_key(part) || st.data_streams.contains_key(part) || is_alias(part) {
            add(part, &mut names);
        } else {
            return Err(EsError::index_not_found(part));
        }
    }
    let mut indices = Vec::new();
    let mut aliases = Vec::new();
    let mut streams = Vec::new();
    for n in &names {
        if let Some(idx) = st.indices.get(n) {
            let mut attributes = vec!["open"];
            if idx.settings.get("index.hidden").and_then(Value::as_str) == Some("true") {
                attributes.push("hidden");
            }
            attributes.sort_unstable();
            let mut own: Vec<&String> = idx
                .aliases
                .keys()
                .filter(|a| !st.data_streams.contains_key(*a))
                .collect();
            own.sort();
            let mut entry = json!({"name": n, "attributes": attributes});
            if !own.is_empty() {
                entry["aliases"] = json!(own);
            }
            if let Some(ds) = st.stream_of(n) {
                entry["data_stream"] = json!(ds);
            }
            indices.push(entry);
        } else if let Some(ds) = st.data_streams.get(n) {
            streams.push(json!({"name": n, "backing_indices": ds.indices,
                                "timestamp_field": ds.timestamp_field}));
        } else {
            let mut of: Vec<&String> = st
                .indices
                .iter()
                .filter(|(_, i)| i.aliases.contains_key(n))
                .map(|(k, _)| k)
                .collect();
            of.sort();
            aliases.push(json!({"name": n, "indices": of}));
        }
    }
    let by_name = |v: &mut Vec<Value>| {
        v.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    };
    by_name(&mut indices);
    by_name(&mut aliases);
    by_name(&mut streams);
    c.ok(
        200,
        json!({"indices": indices, "aliases": aliases, "data_streams": streams}),
    )
}

/// `POST <name>/_rollover` on a data stream (the answer's shape as Elasticsearch's
/// `RolloverResponse`: `old_index`, `new_index`, `rolled_over`, …).
pub(super) fn rollover(c: &Ctx<'_>, name: &str) -> Result<Resp, EsError> {
    let (old, new) = c.state().rollover_data_stream(name, &c.shared.dialect)?;
    c.ok(
        200,
        json!({"acknowledged": true, "shards_acknowledged": true, "old_index": old,
               "new_index": new, "rolled_over": true, "dry_run": false, "conditions": {}}),
    )
}
