//! Vectors put back into `_source`.
//!
//! Elasticsearch 9.2 leaves `dense_vector` values out of the stored `_source` of new indices
//! (`index.mapping.exclude_source_vectors`, default from index version
//! `EXCLUDE_SOURCE_VECTORS_DEFAULT` = 9_035_000; elastic/elasticsearch #131907,
//! `server/src/main/java/org/elasticsearch/index/IndexSettings.java` /
//! `IndexVersions.java`), and OpenSearch 3.0's k-NN plugin does the same for `knn_vector`
//! fields (`index.knn.derived_source.enabled`, on by default for k-NN indices from 3.0;
//! opensearch-project/k-NN `src/main/java/org/opensearch/knn/index/KNNSettings.java`),
//! leaving the number `1` where the vector was. The vectors then live only in the segment's
//! vector files, read by [`lucene::vectors`].
//!
//! For every document of an index whose mapping has vector fields, a mapped vector field
//! that the document's `_source` lacks (or holds as OpenSearch's mask `1`) is filled from
//! the vector files when they hold a vector for the document: at the field's path, as the
//! mapping's element type (float, byte, bit: bytes as signed numbers). Cosine fields of
//! Elasticsearch are stored normalised, with the original length in the NUMERIC doc value
//! `<field>._magnitude` (float bits; absent when the length was 1): the vector given back is
//! the stored one times that length, as Elasticsearch's own `DenormalizedCosineFloatVectorValues`
//! does (elastic/elasticsearch `server/src/main/java/org/elasticsearch/index/mapper/vectors/DenseVectorFieldMapper.java`).
//! Vectors of `nested` objects, at any depth, are put back into their objects: child
//! document k of the block to the k-th nested object of `_source` in the order
//! Elasticsearch indexes them (see [`nested_objects`]); a count that does not match is a
//! refusal, never a guess.
//!
//! Never silent: where vectors were left out (settings and version) or the mask is there,
//! and the field's vector files are in a format the reader does not know (or the nested
//! layout cannot be matched), the document is refused as `vector_unreadable`, naming the
//! index, field, format and file. The rest of the document is kept byte for byte: only
//! the objects on the changed paths are rewritten, in their key order.

use std::sync::Arc;

use lucene::vectors::{Vector, VectorCursor};
use lucene::{DocValue, FieldValues, SegmentReader, VectorEncoding};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::index_version::IndexVersion;
use crate::metadata::IndexMetadata;

/// The element type a mapping gives a vector field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Element {
    Float,
    Byte,
    /// Packed bits (Elasticsearch `element_type: bit`, OpenSearch `data_type: binary`),
    /// stored as bytes.
    Bit,
}

/// One vector field of the mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappedVector {
    /// Full dotted path, which is also the Lucene field name.
    pub path: String,
    pub element: Element,
    /// Elasticsearch `similarity: cosine` on floats: stored normalised.
    pub es_cosine: bool,
    /// The `nested` object path it lies under, if any.
    pub nested: Option<String>,
    /// OpenSearch `knn_vector` (its derived source leaves a mask `1`).
    pub opensearch: bool,
}

/// The vector fields of an index and whether the index left them out of `_source`.
#[derive(Debug, Clone, Default)]
pub struct VectorPlan {
    pub fields: Vec<MappedVector>,
    /// Settings and creation version say vectors were left out of `_source`.
    pub excluded: bool,
    /// Every `nested` path of the mapping.
    pub nested_paths: Vec<String>,
}

/// Bit 27 of a version id marks OpenSearch.
const OPENSEARCH_ID_BIT: u64 = 0x0800_0000;

/// Whether an Elasticsearch index created with version id `created` leaves vectors out of
/// `_source` when the setting is not given (from
/// [`IndexVersion::EXCLUDE_SOURCE_VECTORS_DEFAULT`] on, compared as ids).
pub fn es_excludes_vectors_by_default(created: u64) -> bool {
    IndexVersion::from_id(created)
        .is_some_and(|v| v.on_or_after(IndexVersion::EXCLUDE_SOURCE_VECTORS_DEFAULT))
}

impl VectorPlan {
    /// The plan of an index: its mapped vector fields; `None` when it has none.
    pub fn from_metadata(md: &IndexMetadata) -> Option<VectorPlan> {
        let mut plan = VectorPlan::default();
        for m in &md.mappings {
            if let Some(p) = m.mapping.get("properties").and_then(Value::as_object) {
                walk(p, "", None, &mut plan);
            }
        }
        if plan.fields.is_empty() {
            return None;
        }
        plan.fields.sort_by(|a, b| a.path.cmp(&b.path));
        plan.fields.dedup_by(|a, b| a.path == b.path);
        let setting = |k: &str| md.setting(k).map(|v| v == "true");
        let created = md
            .setting("index.version.created")
            .and_then(|s| s.parse::<u64>().ok());
        let os = created.is_some_and(|c| c & OPENSEARCH_ID_BIT != 0);
        plan.excluded = if os {
            setting("index.knn.derived_source.enabled").unwrap_or_else(|| {
                // on by default for k-NN indices created by 3.0+
                setting("index.knn") == Some(true)
                    && created.is_some_and(|c| (c & !OPENSEARCH_ID_BIT) >= 3_00_00_99)
            })
        } else {
            setting("index.mapping.exclude_source_vectors")
                .unwrap_or_else(|| created.is_some_and(es_excludes_vectors_by_default))
        };
        Some(plan)
    }
}

fn walk(
    props: &serde_json::Map<String, Value>,
    prefix: &str,
    nested: Option<&str>,
    plan: &mut VectorPlan,
) {
    for (name, def) in props {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        let ty = def.get("type").and_then(Value::as_str);
        match ty {
            Some("dense_vector") => {
                let element = match def.get("element_type").and_then(Value::as_str) {
                    Some("byte") => Element::Byte,
                    Some("bit") => Element::Bit,
                    _ => Element::Float,
                };
                let es_cosine = element == Element::Float
                    && def.get("similarity").and_then(Value::as_str) == Some("cosine");
                plan.fields.push(MappedVector {
                    path,
                    element,
                    es_cosine,
                    nested: nested.map(str::to_string),
                    opensearch: false,
                });
            }
            Some("knn_vector") => {
                let element = match def.get("data_type").and_then(Value::as_str) {
                    Some("byte") => Element::Byte,
                    Some("binary") => Element::Bit,
                    _ => Element::Float,
                };
                plan.fields.push(MappedVector {
                    path,
                    element,
                    es_cosine: false,
                    nested: nested.map(str::to_string),
                    opensearch: true,
                });
            }
            _ => {
                if let Some(p) = def.get("properties").and_then(Value::as_object) {
                    if ty == Some("nested") {
                        plan.nested_paths.push(path.clone());
                        walk(p, &path, Some(&path), plan);
                    } else {
                        walk(p, &path, nested, plan);
                    }
                }
            }
        }
    }
}

/// One planned field in the segment being read.
struct SegField {
    plan: usize,
    /// The field's vectors, or why they cannot be read (index, field, format, file).
    cursor: Result<VectorCursor, Refusal>,
    magnitude: Option<FieldValues>,
}

/// Per-reader state: the cursors of the segment being read, and the nested children
/// walked since the last root document.
#[derive(Default)]
pub(crate) struct VectorState {
    segment: Option<usize>,
    fields: Vec<SegField>,
    /// Nested children walked since the last root document, and their segment.
    children: Vec<u32>,
    children_segment: Option<usize>,
    value: DocValue,
}

/// Why the vectors of a document could not be put back. Cloned from the field's cursor
/// into each document it refuses.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum Refusal {
    /// The field's vector files cannot be read (a format this reader does not handle).
    #[error("index {index}: vector field {field:?} (format {format:?}, file {file})")]
    Unreadable {
        index: String,
        field: String,
        format: String,
        file: String,
        #[source]
        source: Arc<lucene::Error>,
    },
    #[error("index {index}: field {field:?} holds the derived-source mask 1 but the vector files have no vector for the document")]
    MaskWithoutVector { index: String, field: String },
    /// The vectors of a nested field cannot be matched to the nested objects of `_source`.
    #[error("index {index}: nested vector field {field:?}: {why}")]
    Nested {
        index: String,
        field: String,
        why: String,
    },
}

impl VectorState {
    fn enter(
        &mut self,
        plan: &VectorPlan,
        index: &str,
        seg: &SegmentReader,
        seg_index: usize,
    ) -> lucene::Result<()> {
        if self.segment == Some(seg_index) {
            return Ok(());
        }
        self.segment = Some(seg_index);
        self.fields.clear();
        if !plan
            .fields
            .iter()
            .any(|f| seg.field_infos().by_name(&f.path).is_some())
        {
            return Ok(());
        }
        let vectors = seg.vectors()?;
        let mut dv = None;
        for (i, f) in plan.fields.iter().enumerate() {
            let Some(vf) = vectors.field(&f.path) else {
                continue;
            };
            let cursor = match vf.cursor() {
                Ok(c) => Ok(c),
                Err(e) if e.is_permanent() => Err(Refusal::Unreadable {
                    index: index.to_string(),
                    field: f.path.clone(),
                    format: vf.format.clone(),
                    file: vf.data_file.clone(),
                    source: Arc::new(e),
                }),
                Err(e) => return Err(e),
            };
            let magnitude = if f.es_cosine && vf.encoding == VectorEncoding::Float32 {
                let dv = dv.get_or_insert_with(|| seg.doc_values());
                dv.field(&format!("{}._magnitude", f.path))?
            } else {
                None
            };
            self.fields.push(SegField {
                plan: i,
                cursor,
                magnitude,
            });
        }
        Ok(())
    }

    /// Notes a nested child document (no `_id`) of segment `seg_index`.
    pub(crate) fn note_child(&mut self, seg_index: usize, local: u32) {
        if self.children_segment != Some(seg_index) {
            self.children_segment = Some(seg_index);
            self.children.clear();
        }
        self.children.push(local);
    }

    /// The nested children noted since the last root document (of segment `seg_index`),
    /// which belong to the root document now read; the list starts over.
    pub(crate) fn take_children(&mut self, seg_index: usize) -> Vec<u32> {
        let same = self.children_segment == Some(seg_index);
        let children = std::mem::take(&mut self.children);
        if same {
            children
        } else {
            Vec::new()
        }
    }

    /// `source` (JSON) with the vectors of the document `local` of segment `seg` (whose
    /// nested children are `children`) put back where `_source` lacks them; or why that
    /// cannot be done.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn restore(
        &mut self,
        plan: &VectorPlan,
        index: &str,
        seg: &SegmentReader,
        seg_index: usize,
        local: u32,
        children: &[u32],
        source: bytes::Bytes,
    ) -> lucene::Result<Result<bytes::Bytes, Refusal>> {
        self.enter(plan, index, seg, seg_index)?;
        if self.fields.is_empty() {
            return Ok(Ok(source));
        }
        let Ok(mut root) = serde_json::from_slice::<Obj>(&source) else {
            return Ok(Ok(source)); // not an object: nothing to put a vector into
        };
        let mut changed = false;
        // the nested objects in document order, found once (vectors put back do not move them)
        let mut objects: Option<Vec<(String, Vec<Step>)>> = None;
        for sf in &mut self.fields {
            let f = &plan.fields[sf.plan];
            match &f.nested {
                None => {
                    let current = root.get(&f.path);
                    let mask = f.opensearch && current.as_deref().is_some_and(is_mask);
                    if current.is_some() && !mask {
                        continue;
                    }
                    let cursor = match &mut sf.cursor {
                        Ok(c) => c,
                        Err(why) if plan.excluded || mask => return Ok(Err(why.clone())),
                        Err(_) => continue,
                    };
                    let Some(v) = cursor.vector(local)? else {
                        if mask {
                            return Ok(Err(Refusal::MaskWithoutVector {
                                index: index.to_string(),
                                field: f.path.clone(),
                            }));
                        }
                        continue;
                    };
                    let json = vector_json(f, v, sf.magnitude.as_mut(), local, &mut self.value)?;
                    root.set(&f.path, json);
                    changed = true;
                }
                // no child documents: no nested vector to put back
                Some(_) if children.is_empty() => {}
                Some(np) => {
                    let objects =
                        objects.get_or_insert_with(|| nested_objects(&root, &plan.nested_paths));
                    match restore_nested(
                        plan,
                        f,
                        sf,
                        np,
                        index,
                        children,
                        objects,
                        &mut root,
                        &mut self.value,
                    )? {
                        Ok(c) => changed |= c,
                        Err(why) => return Ok(Err(why)),
                    }
                }
            }
        }
        Ok(Ok(if changed {
            bytes::Bytes::from(root.write())
        } else {
            source
        }))
    }
}

/// One step from a `_source` value to a nested object in it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// The nested objects of `_source` in the order Elasticsearch (and OpenSearch, forked from
/// 7.10) indexes their documents: each nested object's own nested objects first, then the
/// object, siblings in source order, the root document last ("we preserve the order of the
/// children while ensuring that parents appear after them": `ParseContext.postParse` /
/// `reorderParent`, elastic/elasticsearch
/// `server/src/main/java/org/elasticsearch/index/mapper/ParseContext.java`, 7.x; the same
/// rule in 8.x `DocumentParserContext`). Each entry: the nested path and where the object
/// is. Members that are not objects (null, a value Elasticsearch would have refused) make
/// no document.
fn nested_objects(root: &Obj, nested_paths: &[String]) -> Vec<(String, Vec<Step>)> {
    fn walk_obj(
        obj: &Obj,
        prefix: &str,
        nested_paths: &[String],
        loc: &mut Vec<Step>,
        out: &mut Vec<(String, Vec<Step>)>,
    ) {
        for (k, v) in &obj.0 {
            let path = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            loc.push(Step::Key(k.clone()));
            if nested_paths.contains(&path) {
                let one = |item: &RawValue, loc: &mut Vec<Step>, out: &mut Vec<_>| {
                    if let Ok(o) = serde_json::from_str::<Obj>(item.get()) {
                        walk_obj(&o, &path, nested_paths, loc, out);
                        out.push((path.clone(), loc.clone()));
                    }
                };
                match serde_json::from_str::<Vec<Box<RawValue>>>(v.get()) {
                    Ok(items) => {
                        for (i, item) in items.iter().enumerate() {
                            loc.push(Step::Index(i));
                            one(item, loc, out);
                            loc.pop();
                        }
                    }
                    Err(_) => one(v, loc, out),
                }
            } else {
                walk_value(v, &path, nested_paths, loc, out);
            }
            loc.pop();
        }
    }
    fn walk_value(
        v: &RawValue,
        path: &str,
        nested_paths: &[String],
        loc: &mut Vec<Step>,
        out: &mut Vec<(String, Vec<Step>)>,
    ) {
        let text = v.get().trim_start();
        if text.starts_with('{') {
            if let Ok(o) = serde_json::from_str::<Obj>(text) {
                walk_obj(&o, path, nested_paths, loc, out);
            }
        } else if text.starts_with('[') {
            if let Ok(items) = serde_json::from_str::<Vec<Box<RawValue>>>(text) {
                for (i, item) in items.iter().enumerate() {
                    loc.push(Step::Index(i));
                    walk_value(item, path, nested_paths, loc, out);
                    loc.pop();
                }
            }
        }
    }
    let mut out = Vec::new();
    walk_obj(root, "", nested_paths, &mut Vec::new(), &mut out);
    out
}

/// The object at `loc` below `obj`.
fn obj_at(obj: &Obj, loc: &[Step]) -> Option<Obj> {
    let Some((Step::Key(k), rest)) = loc.split_first() else {
        return None;
    };
    let (_, v) = obj.0.iter().rev().find(|(key, _)| key == k)?;
    let mut text = v.clone();
    let mut rest = rest;
    loop {
        match rest.split_first() {
            None => return serde_json::from_str::<Obj>(text.get()).ok(),
            Some((Step::Index(i), r)) => {
                let items = serde_json::from_str::<Vec<Box<RawValue>>>(text.get()).ok()?;
                text = items.into_iter().nth(*i)?;
                rest = r;
            }
            Some((Step::Key(_), _)) => {
                return obj_at(&serde_json::from_str::<Obj>(text.get()).ok()?, rest)
            }
        }
    }
}

/// Sets dotted `rel` to `value` in the object at `loc` below `obj`, rewriting only the
/// values on the way.
fn set_at(obj: &mut Obj, loc: &[Step], rel: &str, value: Box<RawValue>) -> bool {
    fn in_value(text: &RawValue, loc: &[Step], rel: &str, value: Box<RawValue>) -> Option<String> {
        match loc.split_first() {
            None => {
                let mut o = serde_json::from_str::<Obj>(text.get()).ok()?;
                o.set(rel, value);
                Some(o.write())
            }
            Some((Step::Index(i), rest)) => {
                let mut items = serde_json::from_str::<Vec<Box<RawValue>>>(text.get()).ok()?;
                let item = items.get_mut(*i)?;
                *item = raw_of(in_value(item, rest, rel, value)?);
                let parts: Vec<&str> = items.iter().map(|i| i.get()).collect();
                Some(format!("[{}]", parts.join(",")))
            }
            Some((Step::Key(_), _)) => {
                let mut o = serde_json::from_str::<Obj>(text.get()).ok()?;
                set_at(&mut o, loc, rel, value).then(|| o.write())
            }
        }
    }
    match loc.split_first() {
        None => {
            obj.set(rel, value);
            true
        }
        Some((Step::Key(k), rest)) => {
            let Some(slot) = obj.0.iter_mut().rev().find(|(key, _)| key == k) else {
                return false;
            };
            match in_value(&slot.1, rest, rel, value) {
                Some(text) => {
                    slot.1 = raw_of(text);
                    true
                }
                None => false,
            }
        }
        Some((Step::Index(_), _)) => false,
    }
}

/// Puts the vectors of one nested vector field back: child document k of the block holds
/// the vector of the k-th nested object in [`nested_objects`] order; the field's own
/// nested path picks its objects.
#[allow(clippy::too_many_arguments)]
fn restore_nested(
    plan: &VectorPlan,
    f: &MappedVector,
    sf: &mut SegField,
    nested_path: &str,
    index: &str,
    children: &[u32],
    objects: &[(String, Vec<Step>)],
    root: &mut Obj,
    value: &mut DocValue,
) -> lucene::Result<Result<bool, Refusal>> {
    let rel = &f.path[nested_path.len() + 1..];
    let refuse = |why: String| {
        Ok(Err(Refusal::Nested {
            index: index.to_string(),
            field: f.path.clone(),
            why,
        }))
    };
    let cursor = match &mut sf.cursor {
        Ok(c) => c,
        Err(why) => {
            if plan.excluded && !children.is_empty() {
                return Ok(Err(why.clone()));
            }
            return Ok(Ok(false));
        }
    };
    // each child's vector of this field, read once in doc order
    let mut vectors: Vec<Option<Box<RawValue>>> = Vec::with_capacity(children.len());
    for &child in children {
        vectors.push(match cursor.vector(child)? {
            Some(v) => Some(vector_json(f, v, sf.magnitude.as_mut(), child, value)?),
            None => None,
        });
    }
    if vectors.iter().all(Option::is_none) {
        return Ok(Ok(false));
    }
    if objects.len() != children.len() {
        return refuse(format!(
            "{} nested objects in _source but {} child documents",
            objects.len(),
            children.len()
        ));
    }
    let mut changed = false;
    for ((path, loc), vector) in objects.iter().zip(vectors) {
        if path != nested_path {
            if vector.is_some() {
                return refuse(format!(
                    "a child document of nested path {path} holds a vector of this field"
                ));
            }
            continue;
        }
        let Some(obj) = obj_at(root, loc) else {
            return refuse(format!("nested object of {path} not found in _source"));
        };
        let current = obj.get(rel);
        let mask = f.opensearch && current.as_deref().is_some_and(is_mask);
        if current.is_some() && !mask {
            continue;
        }
        match vector {
            Some(json) => {
                if !set_at(root, loc, rel, json) {
                    return refuse(format!("nested object of {path} not found in _source"));
                }
                changed = true;
            }
            None if mask => {
                return refuse(
                    "a nested object holds the mask 1 but its child document has no vector".into(),
                )
            }
            None => {}
        }
    }
    Ok(Ok(changed))
}

/// OpenSearch derived source's placeholder.
fn is_mask(raw: &RawValue) -> bool {
    raw.get().trim() == "1"
}

fn raw_of(text: String) -> Box<RawValue> {
    RawValue::from_string(text).expect("valid JSON written by this module")
}

/// A vector as the mapping's JSON: floats (denormalised for Elasticsearch cosine fields),
/// or bytes as signed numbers.
fn vector_json(
    f: &MappedVector,
    v: Vector<'_>,
    magnitude: Option<&mut FieldValues>,
    doc: u32,
    value: &mut DocValue,
) -> lucene::Result<Box<RawValue>> {
    let mut text = String::with_capacity(v.raw.len() * 4 + 2);
    text.push('[');
    match (f.element, v.encoding) {
        (Element::Float, VectorEncoding::Float32) => {
            let mut scale = None;
            if let Some(m) = magnitude {
                if m.read(doc, value)? {
                    if let Some(&bits) = value.numbers.first() {
                        scale = Some(f32::from_bits(bits as u32));
                    }
                }
            }
            for (i, x) in v.to_f32().into_iter().enumerate() {
                if i > 0 {
                    text.push(',');
                }
                let x = scale.map_or(x, |s| x * s);
                push_float(&mut text, x);
            }
        }
        _ => {
            for (i, b) in v.raw.iter().enumerate() {
                if i > 0 {
                    text.push(',');
                }
                text.push_str(&(*b as i8).to_string());
            }
        }
    }
    text.push(']');
    Ok(raw_of(text))
}

/// A float with the fewest digits that read back as the same float (Java's
/// `Float.toString` digits); non-finite values (which Lucene refuses to index) as null.
fn push_float(out: &mut String, x: f32) {
    if !x.is_finite() {
        out.push_str("null");
    } else if x == x.trunc() && x.abs() < 1e15 {
        out.push_str(&format!("{x:.1}"));
    } else {
        out.push_str(&format!("{x}"));
    }
}

/// A JSON object with its members in source order, each kept as its original text.
struct Obj(Vec<(String, Box<RawValue>)>);

impl<'de> serde::Deserialize<'de> for Obj {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Obj, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Obj;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Obj, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, Box<RawValue>>()? {
                    out.push((k, v));
                }
                Ok(Obj(out))
            }
        }
        d.deserialize_map(V)
    }
}

impl Obj {
    /// The value at dotted `path`, following objects and dotted keys.
    fn get(&self, path: &str) -> Option<Box<RawValue>> {
        if let Some((_, v)) = self.0.iter().rev().find(|(k, _)| k == path) {
            return Some(v.clone());
        }
        for (k, v) in &self.0 {
            if let Some(rest) = path
                .strip_prefix(k.as_str())
                .and_then(|r| r.strip_prefix('.'))
            {
                if let Ok(child) = serde_json::from_str::<Obj>(v.get()) {
                    if let Some(found) = child.get(rest) {
                        return Some(found);
                    }
                }
            }
        }
        None
    }

    /// Sets dotted `path` to `value`: replaces the value where the path exists (through
    /// objects or a dotted key), else adds it (as nested objects under the first missing
    /// name).
    fn set(&mut self, path: &str, value: Box<RawValue>) {
        if let Some(slot) = self.0.iter_mut().rev().find(|(k, _)| k == path) {
            slot.1 = value;
            return;
        }
        for i in 0..self.0.len() {
            let k = self.0[i].0.clone();
            if let Some(rest) = path
                .strip_prefix(k.as_str())
                .and_then(|r| r.strip_prefix('.'))
            {
                if let Ok(mut child) = serde_json::from_str::<Obj>(self.0[i].1.get()) {
                    child.set(rest, value);
                    self.0[i].1 = raw_of(child.write());
                    return;
                }
            }
        }
        let (first, rest) = match path.split_once('.') {
            Some((a, b)) => (a, Some(b)),
            None => (path, None),
        };
        let v = match rest {
            None => value,
            Some(rest) => {
                let mut child = Obj(Vec::new());
                child.set(rest, value);
                raw_of(child.write())
            }
        };
        self.0.push((first.to_string(), v));
    }

    fn write(&self) -> String {
        let mut s = String::from("{");
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str(&serde_json::to_string(k).expect("a string serializes"));
            s.push(':');
            s.push_str(v.get());
        }
        s.push('}');
        s
    }
}

/// One vector field of a segment, for `rfs inspect`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct VectorFieldSummary {
    pub field: String,
    /// The per-field vector format (`Lucene99HnswVectorsFormat`, …).
    pub format: String,
    /// `float32` or `byte`.
    pub encoding: &'static str,
    pub dimension: u32,
    /// Vectors in the segment (deleted documents' included); `None` when unreadable.
    pub vectors: Option<u32>,
    /// The file the vectors are read from.
    pub file: String,
    /// Why they cannot be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
}

/// The vector fields of `seg` and where they are read from; a segment whose vector
/// metadata cannot be read gives one entry naming the error.
pub fn summarize(seg: &SegmentReader) -> Vec<VectorFieldSummary> {
    if !seg.field_infos().iter().any(|f| f.vector_dimension > 0) {
        return Vec::new();
    }
    match seg.vectors() {
        Ok(v) => v
            .fields()
            .iter()
            .map(|f| VectorFieldSummary {
                field: f.name.clone(),
                format: f.format.clone(),
                encoding: match f.encoding {
                    VectorEncoding::Float32 => "float32",
                    VectorEncoding::Byte => "byte",
                },
                dimension: f.dimension,
                vectors: f.count(),
                file: f.data_file.clone(),
                unreadable: f.unreadable().map(str::to_string),
            })
            .collect(),
        Err(e) => vec![VectorFieldSummary {
            field: "*".into(),
            format: String::new(),
            encoding: "",
            dimension: 0,
            vectors: None,
            file: e.file().to_string(),
            unreadable: Some(e.to_string()),
        }],
    }
}

/// Shared plan handle.
pub type SharedPlan = Arc<VectorPlan>;

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(s: &str) -> Obj {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn set_keeps_other_members_as_written() {
        let mut o = obj(r#"{"b":1.50,"a":{"x":"y","v":1},"c":[1,2]}"#);
        o.set("a.v", raw_of("[1.0,2.0]".into()));
        assert_eq!(
            o.write(),
            r#"{"b":1.50,"a":{"x":"y","v":[1.0,2.0]},"c":[1,2]}"#
        );
        o.set("d.e", raw_of("[3]".into()));
        assert_eq!(
            o.write(),
            r#"{"b":1.50,"a":{"x":"y","v":[1.0,2.0]},"c":[1,2],"d":{"e":[3]}}"#
        );
        let mut o = obj(r#"{"a.v":1}"#);
        o.set("a.v", raw_of("[0.5]".into()));
        assert_eq!(o.write(), r#"{"a.v":[0.5]}"#);
    }

    #[test]
    fn get_through_objects_and_dotted_keys() {
        let o = obj(r#"{"a":{"v":1},"b.w":[1]}"#);
        assert!(o.get("a.v").is_some());
        assert!(o.get("b.w").is_some());
        assert!(o.get("a.x").is_none());
        assert!(o.get("c").is_none());
    }

    #[test]
    fn floats_print_shortest() {
        let mut s = String::new();
        for x in [0.2f32, -0.1, 1.0, 3.4028235e38, 1e-45, -0.0] {
            push_float(&mut s, x);
            s.push(' ');
        }
        assert_eq!(s, "0.2 -0.1 1.0 340282350000000000000000000000000000000 0.000000000000000000000000000000000000000000001 -0.0 ");
    }

    #[test]
    fn version_rule() {
        assert!(!es_excludes_vectors_by_default(9_034_000));
        assert!(es_excludes_vectors_by_default(9_035_000));
        assert!(es_excludes_vectors_by_default(9_039_000));
        assert!(!es_excludes_vectors_by_default(8_525_000));
        assert!(!es_excludes_vectors_by_default(136_267_827)); // OpenSearch 2.x
    }
}
