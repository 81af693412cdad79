//! Which indices a live-cluster pattern names: every index the pattern reaches is read, or
//! left out with a WARN saying which and why — never dropped by its name in silence.
//!
//! The cluster expands the pattern itself, with its own rules (read from
//! elastic/elasticsearch `IndexAbstractionResolver.isIndexVisible` and
//! `ResolveIndexAction.enrichIndexAbstraction`, 7.x; OpenSearch 1.0+ has the same API,
//! opensearch-project/documentation-website `_api-reference/index-apis/resolve.md`):
//!
//! * Elasticsearch 7.9+ and every OpenSearch: `GET _resolve/index/<pattern>?expand_wildcards=all`
//!   lists each match under what it is — a concrete index (with `hidden`/`closed`
//!   attributes and the data stream it backs), an alias (its indices), a data stream (its
//!   backing indices, oldest first).
//! * Elasticsearch 5.0–7.8 (no `_resolve/index`, no data streams):
//!   `GET <pattern>/_settings?expand_wildcards=all` lists the concrete indices, aliases
//!   resolved to theirs, with `index.hidden` (7.7+).
//!
//! Then rfs decides, as a cluster's own default (`expand_wildcards=open`) would, plus the
//! dot rule metadata migration applies (`metadata::is_system_index`):
//!
//! * a name given explicitly is never left out (an index, hidden or dot-named; an alias:
//!   all its indices; a data stream: all its backing indices);
//! * a wildcard leaves out hidden indices and dot-prefixed names (system indices), unless
//!   the wildcard itself starts with `.` and the name too (the cluster's "implicit hidden"
//!   rule), and closed indices (they cannot be searched); each is a WARN naming it, the
//!   wildcard and the reason, and is listed in the copy's summary;
//! * a closed index named explicitly is refused (it cannot be read, and the copy would
//!   otherwise end without it).
//!
//! A data stream's backing indices are read as separate groups (their own names, so no two
//! collide), and their documents carry the data stream's name as their index; the stream's
//! index template and the component templates it is composed of are read so that a
//! cluster sink can create the stream before writing into it (see [`LiveStream`]).

use std::collections::{BTreeMap, BTreeSet};

use cluster::{Client, Method};
use serde::Deserialize;
use serde_json::Value;

use super::{pattern_segment, source_error};
use engine::error::SourceError;
use metadata::{DataStreamInfo, ProductVersion, SourceIndex, SourceMetadata};

/// A data stream the pattern reaches, with what a target needs to create it.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveStream {
    pub name: String,
    pub timestamp_field: String,
    /// Backing indices, oldest first (all read).
    pub backing: Vec<String>,
    /// The index template the stream was created from (`GET _data_stream`), as
    /// `GET _index_template` gives it.
    pub template: (String, Value),
    /// The component templates that template is composed of.
    pub components: Vec<(String, Value)>,
}

/// An index the pattern reached that is not read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    pub index: String,
    pub why: String,
}

/// What a pattern resolves to.
#[derive(Debug, Clone, Default)]
pub(super) struct Resolved {
    /// Concrete indices to read, sorted, with their document counts.
    pub indices: Vec<(String, u64)>,
    pub streams: Vec<LiveStream>,
    pub left_out: Vec<LeftOut>,
}

impl Resolved {
    /// Backing index → data stream name.
    pub fn stream_names(&self) -> BTreeMap<String, std::sync::Arc<str>> {
        self.streams
            .iter()
            .flat_map(|s| {
                let name: std::sync::Arc<str> = s.name.as_str().into();
                s.backing.iter().map(move |b| (b.clone(), name.clone()))
            })
            .collect()
    }
}

/// The streams as metadata migration takes them (templates, components, the streams), so
/// a sink creates them exactly as the snapshot path does.
pub fn stream_metadata(version: ProductVersion, streams: &[LiveStream]) -> SourceMetadata {
    let mut components: BTreeMap<String, Value> = BTreeMap::new();
    let mut templates: BTreeMap<String, Value> = BTreeMap::new();
    for s in streams {
        templates.insert(s.template.0.clone(), s.template.1.clone());
        for (n, c) in &s.components {
            components.insert(n.clone(), c.clone());
        }
    }
    SourceMetadata {
        version: Some(version),
        component_templates: components.into_iter().collect(),
        index_templates: templates.into_iter().collect(),
        data_streams: streams
            .iter()
            .map(|s| DataStreamInfo {
                name: s.name.clone(),
                timestamp_field: s.timestamp_field.clone(),
                indices: s.backing.clone(),
                system: s.name.starts_with('.'),
            })
            .collect(),
        ..SourceMetadata::default()
    }
}

/// The parts of a pattern: names given as such, and wildcards (`*`, `_all`).
struct Parts<'a> {
    plain: BTreeSet<&'a str>,
    wildcards: Vec<&'a str>,
}

impl<'a> Parts<'a> {
    fn of(pattern: &'a str) -> Self {
        let mut plain = BTreeSet::new();
        let mut wildcards = Vec::new();
        for p in pattern.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if p.starts_with('-') {
                continue;
            }
            if p == "_all" {
                wildcards.push("*");
            } else if p.contains('*') {
                wildcards.push(p);
            } else {
                plain.insert(p);
            }
        }
        Parts { plain, wildcards }
    }

    /// The first wildcard that reaches `name`, when `name` was not given by itself.
    fn wildcard_of(&self, name: &str) -> Option<&'a str> {
        if self.plain.contains(name) {
            return None;
        }
        self.wildcards
            .iter()
            .copied()
            .find(|w| metadata::wildcard::matches(w, name))
    }

    /// Why a wildcard match is left out, if it is: hidden, dot-named (unless the wildcard
    /// is dot-named too), closed.
    fn leave_out(&self, name: &str, hidden: bool, closed: bool) -> Option<String> {
        let w = self.wildcard_of(name)?;
        let implicit = w.starts_with('.') && name.starts_with('.');
        if closed {
            return Some(format!(
                "closed index matched by the wildcard {w:?} (a closed index cannot be read; open it to copy it)"
            ));
        }
        if hidden && !implicit {
            return Some(format!(
                "hidden index matched by the wildcard {w:?} (name it to copy it)"
            ));
        }
        if name.starts_with('.') && !implicit {
            return Some(format!(
                "dot-prefixed (system) index matched by the wildcard {w:?} (name it to copy it)"
            ));
        }
        None
    }
}

#[derive(Deserialize)]
struct ResolveAnswer {
    #[serde(default)]
    indices: Vec<ResolvedIndex>,
    #[serde(default)]
    aliases: Vec<ResolvedAlias>,
    #[serde(default)]
    data_streams: Vec<ResolvedStream>,
}

#[derive(Deserialize)]
struct ResolvedIndex {
    name: String,
    #[serde(default)]
    attributes: Vec<String>,
    #[serde(default)]
    data_stream: Option<String>,
}

#[derive(Deserialize)]
struct ResolvedAlias {
    name: String,
    #[serde(default)]
    indices: Vec<String>,
}

#[derive(Deserialize)]
struct ResolvedStream {
    name: String,
    #[serde(default)]
    backing_indices: Vec<String>,
}

async fn get_json(client: &Client, path: &str, what: &str) -> Result<Value, SourceError> {
    let r = client
        .request(Method::GET, path, None)
        .await
        .and_then(|r| r.error_for_status())
        .map_err(|e| source_error(e, what))?;
    r.json::<Value>().map_err(|e| source_error(e, what))
}

/// Index names per `GET` of their definitions: the request line stays far below the
/// 4 KiB an Elasticsearch or OpenSearch node takes (`http.max_initial_line_length`).
const NAMES_PER_REQUEST_BYTES: usize = 2048;

/// The definitions of `names` as `GET <names>?flat_settings=true` gives them (settings
/// as flat keys, mappings typed or not, aliases), which is how metadata migration takes a
/// snapshot's index metadata. An index the answer leaves out is an error naming it.
pub(super) async fn index_definitions(
    client: &Client,
    names: &[String],
    what: &str,
) -> Result<Vec<SourceIndex>, SourceError> {
    let mut out = Vec::with_capacity(names.len());
    let mut rest = names;
    while !rest.is_empty() {
        let mut take = 0;
        let mut bytes = 0;
        for n in rest {
            let len = cluster::encode_segment(n).len() + 1;
            if take > 0 && bytes + len > NAMES_PER_REQUEST_BYTES {
                break;
            }
            bytes += len;
            take += 1;
        }
        let (batch, after) = rest.split_at(take);
        rest = after;
        let joined: Vec<String> = batch.iter().map(|n| cluster::encode_segment(n)).collect();
        let path = format!("/{}?flat_settings=true", joined.join(","));
        let answer = get_json(client, &path, what).await?;
        for name in batch {
            let Some(definition) = answer.get(name.as_str()).filter(|d| d.is_object()) else {
                return Err(SourceError::fatal(format!(
                    "{what}: the definition of index {name} is missing from the cluster's answer"
                )));
            };
            out.push(SourceIndex {
                name: name.clone(),
                metadata: definition.clone(),
            });
        }
    }
    Ok(out)
}

/// Resolves `pattern` on the cluster of `version` (see the module's documentation).
pub(super) async fn resolve(
    client: &Client,
    version: &ProductVersion,
    pattern: &str,
    what: &str,
) -> Result<Resolved, SourceError> {
    let parts = Parts::of(pattern);
    let mut read: BTreeSet<String> = BTreeSet::new();
    let mut left_out: BTreeMap<String, String> = BTreeMap::new();
    let mut closed_named: Vec<String> = Vec::new();
    let mut streams: BTreeMap<String, Vec<String>> = BTreeMap::new();
    if version.is_os() || version.at_least_es(7, 9) {
        let path = format!(
            "/_resolve/index/{}?expand_wildcards=all",
            pattern_segment(pattern)
        );
        let v = get_json(client, &path, &format!("{what}: resolving the pattern")).await?;
        let answer: ResolveAnswer = serde_json::from_value(v).map_err(|e| {
            SourceError::fatal(format!(
                "{what}: resolving the pattern: an answer of another shape: {e}"
            ))
        })?;
        for s in answer.data_streams {
            // A data stream named, or reached by a wildcard: all its backing indices (a
            // dot-named one only when named, or by a dot wildcard).
            if let Some(why) = parts.leave_out(&s.name, false, false) {
                for b in &s.backing_indices {
                    left_out.insert(
                        b.clone(),
                        format!("backing index of data stream {}: {why}", s.name),
                    );
                }
                continue;
            }
            read.extend(s.backing_indices.iter().cloned());
            streams.insert(s.name, s.backing_indices);
        }
        for a in answer.aliases {
            let by_wildcard = parts.wildcard_of(&a.name).is_some();
            for i in a.indices {
                if by_wildcard && i.starts_with('.') && !a.name.starts_with('.') {
                    left_out.insert(
                        i,
                        format!("dot-prefixed (system) index of the alias {} matched by a wildcard (name it to copy it)", a.name),
                    );
                } else {
                    read.insert(i);
                }
            }
        }
        for i in answer.indices {
            if read.contains(&i.name) {
                continue;
            }
            let hidden = i.attributes.iter().any(|a| a == "hidden");
            let closed = i.attributes.iter().any(|a| a == "closed");
            if let Some(why) = parts.leave_out(&i.name, hidden, closed) {
                let why = match &i.data_stream {
                    Some(ds) => format!("backing index of data stream {ds}: {why}"),
                    None => why,
                };
                left_out.insert(i.name, why);
                continue;
            }
            if closed {
                closed_named.push(i.name.clone());
            }
            if let Some(ds) = i.data_stream {
                // A backing index reached by itself: read as part of its stream.
                streams.entry(ds).or_default().push(i.name.clone());
            }
            read.insert(i.name);
        }
    } else {
        // Elasticsearch 5.0–7.8: the settings of what the pattern reaches, every kind.
        let path = format!(
            "/{}/_settings?expand_wildcards=all",
            pattern_segment(pattern)
        );
        let v = get_json(client, &path, &format!("{what}: listing the indices")).await?;
        let Value::Object(all) = v else {
            return Err(SourceError::fatal(format!(
                "{what}: listing the indices: the settings answer is not an object"
            )));
        };
        for (name, body) in all {
            let settings = body.get("settings").unwrap_or(&Value::Null);
            let hidden = settings
                .pointer("/index/hidden")
                .or_else(|| settings.get("index.hidden"))
                .is_some_and(|h| h == "true" || h == &Value::Bool(true));
            match parts.leave_out(&name, hidden, false) {
                Some(why) => {
                    left_out.insert(name, why);
                }
                None => {
                    read.insert(name);
                }
            }
        }
    }
    if !closed_named.is_empty() {
        return Err(SourceError::fatal(format!(
            "{what}: {} closed: a closed index cannot be read; open it, or leave it out of the pattern",
            closed_named.join(", ")
        )));
    }
    for i in &read {
        left_out.remove(i);
    }
    for (index, why) in &left_out {
        tracing::warn!(index = %index, "{what}: {index} is left out of the copy: {why}");
    }
    let counts = doc_counts(client, &read, what).await?;
    let indices = read
        .into_iter()
        .map(|i| {
            let n = counts.get(&i).copied().unwrap_or(0);
            (i, n)
        })
        .collect();
    let mut live = Vec::new();
    for (name, mut backing) in streams {
        backing.sort();
        backing.dedup();
        live.push(stream_definition(client, &name, backing, what).await?);
    }
    Ok(Resolved {
        indices,
        streams: live,
        left_out: left_out
            .into_iter()
            .map(|(index, why)| LeftOut { index, why })
            .collect(),
    })
}

/// Document counts of `names` (`_cat/indices`, names given one by one so hidden ones are
/// listed too; a few thousand bytes of path at a time, under `http.max_initial_line_length`).
async fn doc_counts(
    client: &Client,
    names: &BTreeSet<String>,
    what: &str,
) -> Result<BTreeMap<String, u64>, SourceError> {
    #[derive(Deserialize)]
    struct Row {
        index: String,
        #[serde(rename = "docs.count", default)]
        docs: Option<String>,
    }
    let mut out = BTreeMap::new();
    let mut batch: Vec<String> = Vec::new();
    let mut len = 0;
    let names: Vec<&String> = names.iter().collect();
    for (k, name) in names.iter().enumerate() {
        let seg = cluster::encode_segment(name);
        len += seg.len() + 1;
        batch.push(seg);
        if len < 3000 && k + 1 < names.len() {
            continue;
        }
        let path = format!(
            "/_cat/indices/{}?format=json&h=index,docs.count",
            batch.join(",")
        );
        let v = get_json(client, &path, &format!("{what}: counting documents")).await?;
        let rows: Vec<Row> = serde_json::from_value(v)
            .map_err(|e| SourceError::fatal(format!("{what}: counting documents: {e}")))?;
        for r in rows {
            out.insert(r.index, r.docs.and_then(|d| d.parse().ok()).unwrap_or(0));
        }
        batch.clear();
        len = 0;
    }
    Ok(out)
}

/// A stream's timestamp field, index template and component templates.
async fn stream_definition(
    client: &Client,
    name: &str,
    backing: Vec<String>,
    what: &str,
) -> Result<LiveStream, SourceError> {
    let seg = cluster::encode_segment(name);
    let w = format!("{what}: data stream {name}");
    let ds = get_json(client, &format!("/_data_stream/{seg}"), &w).await?;
    let ds = ds
        .get("data_streams")
        .and_then(Value::as_array)
        .and_then(|a| {
            a.iter()
                .find(|d| d.get("name").and_then(Value::as_str) == Some(name))
        })
        .ok_or_else(|| SourceError::fatal(format!("{w}: not in the data stream answer")))?;
    let timestamp_field = ds
        .pointer("/timestamp_field/name")
        .and_then(Value::as_str)
        .unwrap_or("@timestamp")
        .to_string();
    let template = ds
        .get("template")
        .and_then(Value::as_str)
        .ok_or_else(|| SourceError::fatal(format!("{w}: the answer names no index template")))?
        .to_string();
    let t = get_json(
        client,
        &format!("/_index_template/{}", cluster::encode_segment(&template)),
        &format!("{w}: index template {template}"),
    )
    .await?;
    let body = named(&t, "index_templates", "index_template", &template).ok_or_else(|| {
        SourceError::fatal(format!("{w}: index template {template} not in the answer"))
    })?;
    let mut components = Vec::new();
    for c in body
        .get("composed_of")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        let v = get_json(
            client,
            &format!("/_component_template/{}", cluster::encode_segment(c)),
            &format!("{w}: component template {c}"),
        )
        .await?;
        let cbody = named(&v, "component_templates", "component_template", c).ok_or_else(|| {
            SourceError::fatal(format!("{w}: component template {c} not in the answer"))
        })?;
        components.push((c.to_string(), cbody));
    }
    Ok(LiveStream {
        name: name.to_string(),
        timestamp_field,
        backing,
        template: (template, body),
        components,
    })
}

/// `{"<list>": [{"name": N, "<item>": {...}}]}` → the body named `name`.
fn named(v: &Value, list: &str, item: &str, name: &str) -> Option<Value> {
    v.get(list)?
        .as_array()?
        .iter()
        .find(|e| e.get("name").and_then(Value::as_str) == Some(name))?
        .get(item)
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_leave_out_hidden_dot_and_closed_names_never_named_ones() {
        let p = Parts::of("books,.secret,logs-*,-x*,_all");
        assert_eq!(p.leave_out("books", true, false), None);
        assert_eq!(p.leave_out(".secret", true, false), None);
        assert!(p
            .leave_out("hidden-1", true, false)
            .unwrap()
            .contains("hidden index"));
        assert!(p
            .leave_out(".kibana", false, false)
            .unwrap()
            .contains("dot-prefixed"));
        assert!(p.leave_out("old", false, true).unwrap().contains("closed"));
        assert_eq!(p.leave_out("logs-a", false, false), None);
        let dot = Parts::of(".ds-*");
        assert_eq!(dot.leave_out(".ds-logs-000001", true, false), None);
    }
}
