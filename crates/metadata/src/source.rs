//! What metadata migration reads from a snapshot, as plain JSON values: the global
//! metadata's three kinds of templates and each index's metadata. Filled from the
//! `snapshot` crate by [`SourceMetadata::from_snapshot`], or built directly in tests.

use serde_json::{json, Map, Value};

use super::error::MetadataError;
use super::ProductVersion;

/// One index of the snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceIndex {
    /// The name in the repository data.
    pub name: String,
    /// The IndexMetadata body: `settings` (flat dotted keys), `mappings` (array of
    /// `{type: mapping}`), `aliases`, `routing_num_shards`, `state`, …
    pub metadata: Value,
}

/// A data stream of the snapshot and its backing indices, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DataStreamInfo {
    pub name: String,
    pub timestamp_field: String,
    pub indices: Vec<String>,
    pub system: bool,
}

/// Everything metadata migration needs from one snapshot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SourceMetadata {
    /// The version that wrote the snapshot, when known.
    pub version: Option<ProductVersion>,
    /// Legacy (`_template`) templates by name, as stored in the global metadata.
    pub legacy_templates: Vec<(String, Value)>,
    /// Component templates by name.
    pub component_templates: Vec<(String, Value)>,
    /// Composable index templates by name.
    pub index_templates: Vec<(String, Value)>,
    pub indices: Vec<SourceIndex>,
    /// Data streams (Elasticsearch 7.9+, OpenSearch) of the global metadata.
    pub data_streams: Vec<DataStreamInfo>,
}

impl SourceMetadata {
    /// The data stream `index` backs, if any.
    pub fn data_stream_of(&self, index: &str) -> Option<&DataStreamInfo> {
        self.data_streams
            .iter()
            .find(|d| d.indices.iter().any(|i| i == index))
    }
}

impl SourceMetadata {
    /// Reads the templates out of a global metadata document (`{"meta-data": {...}}` or its
    /// inner object): `templates`, and the doubly nested `index_template` /
    /// `component_template` customs of 7.8+.
    pub fn set_global_metadata(&mut self, global: &Value) {
        let meta = global.get("meta-data").unwrap_or(global);
        self.legacy_templates = entries(meta.get("templates"));
        self.component_templates = entries(nested(meta, "component_template"));
        self.index_templates = entries(nested(meta, "index_template"));
    }
}

impl SourceMetadata {
    /// Reads templates (when the snapshot holds global state) and every index's metadata.
    pub fn from_snapshot(snap: &snapshot::Snapshot) -> Result<Self, MetadataError> {
        let mut out = SourceMetadata {
            version: snap.version(),
            ..SourceMetadata::default()
        };
        if snap.info().include_global_state == Some(false) {
            tracing::warn!(
                snapshot = snap.name(),
                "snapshot taken without global state: no templates to migrate"
            );
        } else {
            let g = snap
                .global_metadata()
                .map_err(|e| MetadataError::Source(e.to_string()))?;
            let list = |m: &std::collections::BTreeMap<String, Value>| {
                m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
            };
            out.legacy_templates = list(&g.legacy_templates);
            out.component_templates = list(&g.component_templates);
            out.index_templates = list(&g.index_templates);
            out.data_streams = g
                .data_streams
                .values()
                .map(|d| DataStreamInfo {
                    name: d.name.clone(),
                    timestamp_field: d.timestamp_field.clone(),
                    indices: d.indices.clone(),
                    system: d.system,
                })
                .collect();
        }
        for name in snap.index_names() {
            let index = snap
                .index(&name)
                .map_err(|e| MetadataError::Source(e.to_string()))?;
            out.indices
                .push(SourceIndex::from_metadata(index.metadata()));
        }
        Ok(out)
    }
}

impl SourceIndex {
    /// The planner's view of one snapshot index (mappings already decoded).
    pub fn from_metadata(m: &snapshot::IndexMetadata) -> Self {
        let mappings: Vec<Value> = m
            .mappings
            .iter()
            .map(|t| {
                let mut o = Map::new();
                o.insert(t.doc_type.clone(), t.mapping.clone());
                Value::Object(o)
            })
            .collect();
        let mut metadata = json!({
            "settings": Value::Object(m.settings.clone()),
            "mappings": mappings,
            "aliases": Value::Object(m.aliases.clone()),
        });
        if let Some(r) = m.routing_num_shards {
            metadata["routing_num_shards"] = json!(r);
        }
        if let Some(s) = &m.state {
            metadata["state"] = json!(s);
        }
        if let Some(sys) = m.raw.get("system") {
            metadata["system"] = sys.clone();
        }
        SourceIndex {
            name: m.name.clone(),
            metadata,
        }
    }
}

/// `{"x": {"x": {...}}}` → the inner object (or the single level when not doubled).
fn nested<'a>(meta: &'a Value, key: &str) -> Option<&'a Value> {
    let outer = meta.get(key)?;
    Some(outer.get(key).unwrap_or(outer))
}

fn entries(v: Option<&Value>) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = v
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_three_template_kinds() {
        let g = json!({"meta-data": {
            "templates": {"b": {"order": 0}, "a": {"order": 1}},
            "index_template": {"index_template": {"it": {"index_patterns": ["x*"]}}},
            "component_template": {"component_template": {"ct": {"template": {}}}}
        }});
        let mut s = SourceMetadata::default();
        s.set_global_metadata(&g);
        assert_eq!(
            s.legacy_templates
                .iter()
                .map(|t| t.0.as_str())
                .collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(s.index_templates[0].0, "it");
        assert_eq!(s.component_templates[0].0, "ct");
        let mut empty = SourceMetadata::default();
        empty.set_global_metadata(&json!({"meta-data": {"templates": {}}}));
        assert!(empty.legacy_templates.is_empty() && empty.index_templates.is_empty());
    }
}
