//! The naming transforms: the snapshot's routes (type routes for multi-type indices, then
//! renames, and string-encoded vectors rewritten as arrays where the target needs it: see
//! [`metadata::vectors`]), a rename of every index, and every document into one index.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use engine::document::{Document, Op};
use engine::transform::{Transform, Unroutable};
use metadata::names::Naming;
use metadata::vectors::{rewrite_vectors, VectorField};
use metadata::DocumentRouting;
use rustc_hash::FxHashMap;

#[derive(Debug, Clone)]
enum Route {
    Single(Arc<str>),
    PerType(HashMap<Box<str>, Arc<str>>),
}

/// The snapshot transform: the routes metadata migration decided (allowlist, merge or
/// split of mapping types, [`Naming`]), one lookup per document, and the vector fields
/// whose string values are rewritten.
#[derive(Debug, Clone)]
pub struct Routes {
    /// Source index → its slot in `routes` (looked up when a thread's documents change
    /// index, with a fast hash; the keys are index names from our own plan).
    indices: FxHashMap<Box<str>, usize>,
    routes: Vec<IndexRoute>,
    /// Tells these routes (and their clones, which route alike) from others in
    /// [`LAST_ROUTED`].
    id: u64,
}

/// Ids of [`Routes`].
static ROUTES_IDS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The source index this thread routed last: the id of the routes, the document's
    /// index `Arc` (held, so that the same address is the same name) and its slot. The
    /// documents of a shard share one `Arc`, so a document of the same index as the one
    /// before is routed without hashing its name (the lookup was 2 % of a worker's time
    /// on ~390 B documents).
    static LAST_ROUTED: RefCell<Option<(u64, Arc<str>, usize)>> = const { RefCell::new(None) };
}

/// What happens to the documents of one source index.
#[derive(Debug, Clone)]
struct IndexRoute {
    /// `None`: the index is not migrated.
    route: Option<Route>,
    /// Vector fields whose string values are rewritten.
    vectors: Option<Arc<[VectorField]>>,
    /// Written with `create` (the target is a data stream).
    create_only: bool,
    /// The type mapping provider routes its types (a type it leaves out is skipped with
    /// reason `type_mapping`).
    type_mapped: bool,
    /// A single target of the source index's own name: the document keeps its `index`.
    same_name: bool,
}

impl Routes {
    /// Routes for every index of `indices` that `routing` migrates.
    pub fn new(routing: &DocumentRouting, indices: &[String]) -> Routes {
        let mut map = FxHashMap::default();
        let mut routes = Vec::with_capacity(indices.len());
        for index in indices {
            let fields = routing.vector_fields(index);
            let route = match routing.per_type(index) {
                Some(types) => Some(Route::PerType(
                    types
                        .into_iter()
                        .map(|(ty, t)| (Box::from(ty), Arc::from(t)))
                        .collect(),
                )),
                None => routing
                    .target_index(index, None)
                    .map(|t| Route::Single(Arc::from(t))),
            };
            let same_name = matches!(&route, Some(Route::Single(t)) if **t == **index);
            map.insert(Box::from(index.as_str()), routes.len());
            routes.push(IndexRoute {
                same_name,
                route,
                vectors: (!fields.is_empty()).then(|| Arc::from(fields)),
                create_only: routing.create_only(index),
                type_mapped: routing.type_mapped(index),
            });
        }
        Routes {
            indices: map,
            routes,
            id: ROUTES_IDS.fetch_add(1, Ordering::Relaxed),
        }
    }
}

impl Routes {
    /// What happens to the documents of `index`: from [`LAST_ROUTED`] when it is the
    /// same `Arc` as this thread's last, else looked up (and remembered).
    fn route_of(&self, index: &Arc<str>) -> Option<&IndexRoute> {
        let last = LAST_ROUTED.with_borrow(|last| match last {
            Some((id, name, slot)) if *id == self.id && Arc::ptr_eq(name, index) => Some(*slot),
            _ => None,
        });
        let slot = match last {
            Some(slot) => slot,
            None => {
                let slot = *self.indices.get(&**index)?;
                LAST_ROUTED.set(Some((self.id, index.clone(), slot)));
                slot
            }
        };
        self.routes.get(slot)
    }
}

impl Transform for Routes {
    fn apply(&self, doc: &mut Document) -> Result<(), Unroutable> {
        let Some(ix) = self.route_of(&doc.index) else {
            return Err(Unroutable {
                reason: "no_route",
                detail: format!("index {} is not migrated", doc.index),
            });
        };
        if doc.op == Op::Index {
            if let Some(fields) = &ix.vectors {
                if let Some(new) = rewrite_vectors(&doc.source, fields) {
                    doc.source = bytes::Bytes::from(new);
                }
            }
            if ix.create_only {
                doc.op = Op::Create;
            }
        }
        let target = match &ix.route {
            None => {
                return Err(Unroutable {
                    reason: "no_route",
                    detail: format!("index {} is not migrated", doc.index),
                })
            }
            // The document's `Arc` is kept: a clone and a drop of shared counts per
            // document saved (two locked instructions, 40 % of this function in a
            // profile of ~390 B documents), and no comparison of names.
            Some(Route::Single(_)) if ix.same_name => return Ok(()),
            Some(Route::Single(t)) => t,
            Some(Route::PerType(by_type)) => {
                // A document without a type (Elasticsearch 7+) is routed as `_doc`.
                let ty = doc.doc_type.as_deref().unwrap_or(metadata::TYPELESS);
                by_type.get(ty).ok_or_else(|| {
                    if ix.type_mapped {
                        Unroutable {
                            reason: "type_mapping",
                            detail: format!(
                                "mapping type {ty:?} of index {}: no staticMappings or regexMappings entry of {} routes it",
                                doc.index,
                                metadata::type_mapping::PROVIDER
                            ),
                        }
                    } else {
                        Unroutable {
                            reason: "no_route",
                            detail: format!(
                                "mapping type {ty:?} of index {} has no target index",
                                doc.index
                            ),
                        }
                    }
                })?
            }
        };
        // A type routed to an index of the same name keeps the document's `Arc` too.
        if !Arc::ptr_eq(&doc.index, target) && *doc.index != **target {
            doc.index = target.clone();
        }
        Ok(())
    }
}

/// A transform for sources without mapping types (tables): every group goes to the index
/// [`Naming`] gives it.
#[derive(Debug, Clone, Default)]
pub struct Rename {
    naming: Naming,
    cache: HashMap<Box<str>, Arc<str>>,
}

impl Rename {
    /// Renames for the groups a plan holds (others are named on the fly).
    pub fn new(naming: Naming, groups: &[String]) -> Rename {
        let cache = groups
            .iter()
            .map(|g| (Box::from(g.as_str()), Arc::from(naming.target(g))))
            .collect();
        Rename { naming, cache }
    }
}

impl Transform for Rename {
    fn apply(&self, doc: &mut Document) -> Result<(), Unroutable> {
        if self.naming.is_identity() {
            return Ok(());
        }
        doc.index = match self.cache.get(&*doc.index) {
            Some(t) => t.clone(),
            None => Arc::from(self.naming.target(&doc.index)),
        };
        Ok(())
    }
}

/// The transform of a sink URL that names `index` (every document into it), or of one
/// that does not (`None`: each document keeps its index).
pub fn into_index(index: Option<&str>) -> Arc<dyn Transform> {
    Arc::new(IntoIndex(index.map(Arc::from)))
}

/// Every document into one index, or unchanged.
struct IntoIndex(Option<Arc<str>>);

impl Transform for IntoIndex {
    fn apply(&self, doc: &mut Document) -> Result<(), Unroutable> {
        if let Some(i) = &self.0 {
            doc.index = i.clone();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coordination::Position;

    fn doc(index: &str, ty: Option<&str>) -> Document {
        Document {
            position: Position::Doc(0),
            op: Default::default(),
            index: index.into(),
            id: "1".into(),
            doc_type: ty.map(Arc::from),
            routing: Some("r".into()),
            source: bytes::Bytes::from_static(b"{}"),
        }
    }

    #[test]
    fn routes_rewrite_string_vectors_of_their_index() {
        use metadata::{Options, SourceIndex, SourceMetadata};
        let source = SourceMetadata {
            indices: vec![SourceIndex {
                name: "vec".into(),
                metadata: serde_json::json!({"mappings": [{"_doc": {"properties": {
                    "b": {"type": "dense_vector", "dims": 2, "element_type": "byte"}}}}]}),
            }],
            ..SourceMetadata::default()
        };
        let routing = DocumentRouting::new(&source, &Options::default());
        let routes = Routes::new(&routing, &["vec".to_string()]);
        let mut d = doc("vec", None);
        d.source = bytes::Bytes::from_static(br#"{"b":"01ff","k":"x"}"#);
        routes.apply(&mut d).unwrap();
        assert_eq!(&d.source[..], br#"{"b":[1,-1],"k":"x"}"#);
        assert_eq!(&*d.index, "vec");
        // Arrays go through as the same bytes.
        let mut d = doc("vec", None);
        d.source = bytes::Bytes::from_static(br#"{"b" : [1, -1]}"#);
        routes.apply(&mut d).unwrap();
        assert_eq!(&d.source[..], br#"{"b" : [1, -1]}"#);
    }

    #[test]
    fn routes_name_the_target_index_renamed_or_not() {
        use metadata::{Options, SourceIndex, SourceMetadata};
        let source = SourceMetadata {
            indices: ["a", "b"]
                .into_iter()
                .map(|name| SourceIndex {
                    name: name.into(),
                    metadata: serde_json::json!({"mappings": {"properties": {}}}),
                })
                .collect(),
            ..SourceMetadata::default()
        };
        let indices = ["a".to_string(), "b".to_string()];
        let plain = Routes::new(
            &DocumentRouting::new(&source, &Options::default()),
            &indices,
        );
        let options = Options {
            naming: Naming {
                prefix: "p_".into(),
                ..Naming::default()
            },
            ..Options::default()
        };
        let renamed = Routes::new(&DocumentRouting::new(&source, &options), &indices);
        for (routes, want) in [(&plain, ["a", "b"]), (&renamed, ["p_a", "p_b"])] {
            for (from, want) in ["a", "b"].into_iter().zip(want) {
                let mut d = doc(from, None);
                routes.apply(&mut d).unwrap();
                assert_eq!(&*d.index, want);
                assert_eq!((d.id.as_str(), d.routing.as_deref()), ("1", Some("r")));
            }
        }
        let mut d = doc("c", None);
        assert_eq!(plain.apply(&mut d).unwrap_err().reason, "no_route");
        // Documents sharing their index's `Arc` (as a shard's do), through both routes in
        // turn on one thread: each routes them as its own, whatever the other did last.
        let (a, b): (Arc<str>, Arc<str>) = (Arc::from("a"), Arc::from("b"));
        for (index, routes, want) in [
            (&a, &plain, "a"),
            (&a, &renamed, "p_a"),
            (&a, &renamed, "p_a"),
            (&b, &renamed, "p_b"),
            (&a, &plain, "a"),
            (&a, &plain, "a"),
            (&b, &plain, "b"),
            (&a, &renamed, "p_a"),
        ] {
            let mut d = doc("x", None);
            d.index = index.clone();
            routes.apply(&mut d).unwrap();
            assert_eq!(&*d.index, want);
        }
        // A clone routes as its original.
        let mut d = doc("x", None);
        d.index = b.clone();
        renamed.clone().apply(&mut d).unwrap();
        assert_eq!(&*d.index, "p_b");
    }

    #[test]
    fn rename_keeps_routing_and_ids() {
        let t = Rename::new(
            Naming {
                prefix: "p_".into(),
                ..Naming::default()
            },
            &["t".into()],
        );
        let mut d = doc("t", None);
        t.apply(&mut d).unwrap();
        assert_eq!(&*d.index, "p_t");
        assert_eq!(d.routing.as_deref(), Some("r"));
        let mut d = doc("u", None);
        t.apply(&mut d).unwrap();
        assert_eq!(&*d.index, "p_u");
    }
}
