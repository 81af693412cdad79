//! Where each document goes: the target index of a (source index, mapping type) pair,
//! so the document pipeline follows the same allowlist and per-type split as metadata
//! migration. Computed from the snapshot and the options alone, so every worker derives
//! the same answer without talking to the target.

use std::collections::{BTreeMap, BTreeSet};

use super::build::{index_is_system, route_types, split_index_name, DataStreamMode, Options};
use super::filter::{decide, Decision};
use super::mappings::MultiTypeMode;
use super::source::SourceMetadata;
use crate::vectors::{self, VectorField};

/// The mapping type a document without one is routed by (the reference tool's choice).
pub const TYPELESS: &str = "_doc";

#[derive(Debug, Clone, PartialEq, Eq)]
enum Route {
    /// Every document of the index goes to one target index.
    Single(String),
    /// Each mapping type has its own target index.
    PerType(BTreeMap<String, String>),
}

/// Source index (and type) → target index, and the values to rewrite on the way.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DocumentRouting {
    routes: BTreeMap<String, Route>,
    /// Source index → its `dense_vector` fields (whose string values become arrays).
    vector_fields: BTreeMap<String, Vec<VectorField>>,
    /// Source indices whose documents go to a data stream: written with `create`.
    create_only: BTreeSet<String>,
    /// Source indices whose types the type mapping provider routes.
    type_mapped: BTreeSet<String>,
}

impl DocumentRouting {
    /// The routing for `source` under `options`: excluded indices have no route.
    pub fn new(source: &SourceMetadata, options: &Options) -> Self {
        let expanded = options.expanded(source);
        let options: &Options = &expanded;
        let mut routes = BTreeMap::new();
        let mut type_mapped = BTreeSet::new();
        let mut by_index = BTreeMap::new();
        let mut create_only = BTreeSet::new();
        for index in &source.indices {
            // A backing index follows its data stream's name (`.ds-…` names are hidden).
            let included = match source.data_stream_of(&index.name) {
                Some(ds) => {
                    matches!(
                        decide(&options.indices, &ds.name, ds.system),
                        Decision::Include(_)
                    ) || matches!(
                        decide(
                            &options.indices,
                            &index.name,
                            index_is_system(index) && ds.system
                        ),
                        Decision::Include(_)
                    )
                }
                None => matches!(
                    decide(&options.indices, &index.name, index_is_system(index)),
                    Decision::Include(_)
                ),
            };
            if !included {
                continue;
            }
            let mut vectors: Vec<VectorField> = super::mappings::typed(
                index
                    .metadata
                    .get("mappings")
                    .unwrap_or(&serde_json::Value::Null),
            )
            .unwrap_or_default()
            .iter()
            .flat_map(|(_, m)| vectors::vector_fields(m))
            .collect();
            vectors.dedup();
            if !vectors.is_empty() {
                by_index.insert(index.name.clone(), vectors);
            }
            if let Some(ds) = source.data_stream_of(&index.name) {
                if options.data_streams == DataStreamMode::DataStreams {
                    // Into the data stream of the same name (data stream names are not
                    // renamed: the index templates that create them match by name).
                    routes.insert(index.name.clone(), Route::Single(ds.name.clone()));
                    create_only.insert(index.name.clone());
                    continue;
                }
            }
            // An index without types is routed as `_doc` (its documents have none).
            let types = route_types(index);
            if options.type_mapped(&index.name) {
                type_mapped.insert(index.name.clone());
            }
            let naming = &options.naming;
            let split = types.len() > 1 && options.multi_type_mode == MultiTypeMode::Split;
            let routed = types
                .iter()
                .any(|t| options.type_route(&index.name, t).is_some());
            let route = if split || routed {
                // Each type to its own route; a type routed to nothing has no entry.
                Route::PerType(
                    types
                        .iter()
                        .filter_map(|t| {
                            let target = match options.type_route(&index.name, t) {
                                Some(route) => route?.to_string(),
                                None if split => split_index_name(&index.name, t),
                                None => index.name.clone(),
                            };
                            Some((t.clone(), naming.target(&target)))
                        })
                        .collect(),
                )
            } else {
                Route::Single(naming.target(&index.name))
            };
            routes.insert(index.name.clone(), route);
        }
        DocumentRouting {
            routes,
            vector_fields: by_index,
            create_only,
            type_mapped,
        }
    }

    /// Whether the type mapping provider decides where the types of `index` go (a type it
    /// leaves out is skipped with reason `type_mapping`, not `no_route`).
    pub fn type_mapped(&self, index: &str) -> bool {
        self.type_mapped.contains(index)
    }

    /// For an index routed per mapping type: each routed type and its target index
    /// (empty when every type is left out); `None` when all its documents go to one
    /// index or it is not migrated.
    pub fn per_type(&self, index: &str) -> Option<Vec<(&str, &str)>> {
        match self.routes.get(index)? {
            Route::PerType(m) => Some(m.iter().map(|(t, i)| (t.as_str(), i.as_str())).collect()),
            Route::Single(_) => None,
        }
    }

    /// Whether the documents of `index` go to a data stream (written with `create`).
    pub fn create_only(&self, index: &str) -> bool {
        self.create_only.contains(index)
    }

    /// The `dense_vector` fields of `index` in the snapshot's mapping.
    pub fn vector_fields(&self, index: &str) -> &[VectorField] {
        self.vector_fields.get(index).map_or(&[], Vec::as_slice)
    }

    /// The target index for a document of `index` with mapping type `doc_type` (ES ≤ 6
    /// documents have one; one without is looked up as `_doc`), or `None` when the index
    /// is not migrated or, for an index routed per type, the type has no route.
    pub fn target_index(&self, index: &str, doc_type: Option<&str>) -> Option<&str> {
        match self.routes.get(index)? {
            Route::Single(t) => Some(t),
            Route::PerType(by_type) => by_type
                .get(doc_type.unwrap_or(TYPELESS))
                .map(String::as_str),
        }
    }

    /// Whether any document of `index` is migrated.
    pub fn includes(&self, index: &str) -> bool {
        self.routes.contains_key(index)
    }

    /// For an index split per type: each mapping type and its target index.
    pub fn types_of(&self, index: &str) -> Vec<(&str, &str)> {
        match self.routes.get(index) {
            Some(Route::PerType(m)) => m.iter().map(|(t, i)| (t.as_str(), i.as_str())).collect(),
            _ => Vec::new(),
        }
    }

    /// Every target index of `index` (one, or one per type).
    pub fn targets_of(&self, index: &str) -> Vec<&str> {
        match self.routes.get(index) {
            None => Vec::new(),
            Some(Route::Single(t)) => vec![t.as_str()],
            Some(Route::PerType(m)) => m.values().map(String::as_str).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::source::SourceIndex;
    use super::*;
    use serde_json::json;

    fn src() -> SourceMetadata {
        SourceMetadata {
            indices: vec![
                SourceIndex {
                    name: "multi".into(),
                    metadata: json!({"mappings": [{"_default_": {}}, {"t1": {}}, {"t2": {}}]}),
                },
                SourceIndex {
                    name: "one".into(),
                    metadata: json!({"mappings": [{"doc": {}}]}),
                },
                SourceIndex {
                    name: ".sys".into(),
                    metadata: json!({}),
                },
            ],
            ..SourceMetadata::default()
        }
    }

    #[test]
    fn merge_and_split() {
        let merge = DocumentRouting::new(&src(), &Options::default());
        assert_eq!(merge.target_index("multi", Some("t2")), Some("multi"));
        assert_eq!(merge.target_index("one", None), Some("one"));
        assert_eq!(merge.target_index(".sys", None), None);
        let split = DocumentRouting::new(
            &src(),
            &Options {
                multi_type_mode: MultiTypeMode::Split,
                ..Options::default()
            },
        );
        assert_eq!(split.target_index("multi", Some("t1")), Some("multi_t1"));
        assert_eq!(split.target_index("multi", Some("t2")), Some("multi_t2"));
        assert_eq!(split.target_index("multi", Some("t3")), None);
        assert_eq!(split.target_index("multi", None), None);
        assert_eq!(
            split.target_index("one", Some("doc")),
            Some("one"),
            "a single type is never split"
        );
        assert_eq!(split.targets_of("multi"), vec!["multi_t1", "multi_t2"]);
        assert!(!split.includes(".sys"));
        let renamed = DocumentRouting::new(
            &src(),
            &Options {
                multi_type_mode: MultiTypeMode::Split,
                naming: crate::names::Naming {
                    renames: [("one".to_string(), "uno".to_string())].into(),
                    prefix: "v2-".into(),
                    suffix: String::new(),
                },
                ..Options::default()
            },
        );
        assert_eq!(renamed.target_index("one", None), Some("v2-uno"));
        let routed = DocumentRouting::new(
            &src(),
            &Options {
                type_routes: Options::parse_type_routes(&[
                    "multi/t1=".into(),
                    "multi/t2=other".into(),
                ])
                .unwrap(),
                ..Options::default()
            },
        );
        assert_eq!(
            routed.target_index("multi", Some("t1")),
            None,
            "t1 is left out"
        );
        assert_eq!(routed.target_index("multi", Some("t2")), Some("other"));
        assert!(Options::parse_type_routes(&["multi=x".into()]).is_err());
        assert!(Options::parse_type_routes(&["a/b=x".into(), "a/b=y".into()]).is_err());
        assert_eq!(
            renamed.target_index("multi", Some("t1")),
            Some("v2-multi_t1")
        );
    }
}
