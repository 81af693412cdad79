//! The transform stage between source and sink: names each document's target index
//! (type routes for multi-type indices, then renames), keeps its routing, and converts
//! values where the target needs it (string-encoded vectors become arrays: see
//! [`crate::vectors`]). A document with no route is a skip with a reason, never a warning.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::document::{Document, Op, Skip};
use crate::metadata::DocumentRouting;
use crate::vectors::{rewrite_vectors, VectorField};

/// Why the transform could not route a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unroutable {
    pub reason: &'static str,
    pub detail: String,
}

/// What the transform made of one document (see [`Transform::apply_all`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shaped {
    /// The documents to send were pushed (one, or several sharing the input's position).
    Docs,
    /// Left out on purpose (a program yielded nothing): counted as `filtered:<reason>`,
    /// never delivered, not a failure.
    Filtered(String),
}

/// Turns a source document into a target document.
pub trait Transform: Send + Sync + 'static {
    fn apply(&self, doc: &mut Document) -> Result<(), Unroutable>;

    /// `true` when [`Transform::apply_all`] may yield other than exactly one document (a
    /// program): otherwise the pipeline calls [`Transform::apply`], its fast path.
    fn reshapes(&self) -> bool {
        false
    }

    /// A digest of the document program this transform runs, if any: part of the
    /// migration's identity (see [`crate::job::with_program`]).
    fn program_identity(&self) -> Option<String> {
        None
    }

    /// Turns one document into zero or more, pushed onto `out`; a document that cannot be
    /// transformed is a skip (`no_route`, `transform_error`).
    fn apply_all(&self, doc: Document, out: &mut Vec<Document>) -> Result<Shaped, Box<Skip>> {
        let mut doc = doc;
        match self.apply(&mut doc) {
            Ok(()) => {
                out.push(doc);
                Ok(Shaped::Docs)
            }
            Err(u) => Err(Box::new(Skip::of(doc, u.reason, u.detail))),
        }
    }
}

/// Why an `OLD=NEW` rename is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenameError {
    #[error("rename {0:?}: expected OLD=NEW")]
    Shape(String),
    #[error("index {0} is renamed twice")]
    Twice(String),
}

/// Target index names: exact renames first, then a prefix and a suffix for every name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Naming {
    pub renames: BTreeMap<String, String>,
    pub prefix: String,
    pub suffix: String,
}

impl Naming {
    /// Parses `OLD=NEW` renames.
    pub fn parse_renames(pairs: &[String]) -> Result<BTreeMap<String, String>, RenameError> {
        let mut out = BTreeMap::new();
        for p in pairs {
            let (old, new) = p
                .split_once('=')
                .filter(|(o, n)| !o.is_empty() && !n.is_empty())
                .ok_or_else(|| RenameError::Shape(p.clone()))?;
            if out.insert(old.to_string(), new.to_string()).is_some() {
                return Err(RenameError::Twice(old.to_string()));
            }
        }
        Ok(out)
    }

    /// The target name of `name`.
    pub fn target(&self, name: &str) -> String {
        let base = self.renames.get(name).map_or(name, String::as_str);
        format!("{}{base}{}", self.prefix, self.suffix)
    }

    pub fn is_identity(&self) -> bool {
        self.renames.is_empty() && self.prefix.is_empty() && self.suffix.is_empty()
    }
}

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
    /// Source index → what happens to its documents (looked up once per document, so
    /// with a fast hash; the keys are index names from our own plan).
    indices: FxHashMap<Box<str>, IndexRoute>,
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
}

impl Routes {
    /// Routes for every index of `indices` that `routing` migrates.
    pub fn new(routing: &DocumentRouting, indices: &[String]) -> Routes {
        let mut map = FxHashMap::default();
        for index in indices {
            let fields = routing.vector_fields(index);
            let route = if routing.targets_of(index).is_empty() {
                None
            } else {
                Some(match routing.target_index(index, None) {
                    Some(t) => Route::Single(Arc::from(t)),
                    None => Route::PerType(
                        routing
                            .types_of(index)
                            .into_iter()
                            .map(|(ty, t)| (Box::from(ty), Arc::from(t)))
                            .collect(),
                    ),
                })
            };
            map.insert(
                Box::from(index.as_str()),
                IndexRoute {
                    route,
                    vectors: (!fields.is_empty()).then(|| Arc::from(fields)),
                    create_only: routing.create_only(index),
                },
            );
        }
        Routes { indices: map }
    }
}

impl Transform for Routes {
    fn apply(&self, doc: &mut Document) -> Result<(), Unroutable> {
        let Some(ix) = self.indices.get(&*doc.index) else {
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
            Some(Route::Single(t)) => t,
            Some(Route::PerType(by_type)) => {
                let ty = doc.doc_type.as_deref().unwrap_or("");
                by_type.get(ty).ok_or_else(|| Unroutable {
                    reason: "no_route",
                    detail: format!(
                        "mapping type {ty:?} of index {} has no target index",
                        doc.index
                    ),
                })?
            }
        };
        doc.index = target.clone();
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
    fn naming_renames_then_affixes() {
        let n = Naming {
            renames: Naming::parse_renames(&["logs=events".into()]).unwrap(),
            prefix: "new-".into(),
            suffix: "-v2".into(),
        };
        assert_eq!(n.target("logs"), "new-events-v2");
        assert_eq!(n.target("other"), "new-other-v2");
        assert!(Naming::parse_renames(&["x".into()]).is_err());
        assert!(Naming::parse_renames(&["a=b".into(), "a=c".into()]).is_err());
        assert!(Naming::parse_renames(&["=b".into()]).is_err());
    }

    #[test]
    fn routes_rewrite_string_vectors_of_their_index() {
        use crate::metadata::{Options, SourceIndex, SourceMetadata};
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
