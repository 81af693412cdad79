//! The pure half of metadata migration: from the snapshot's metadata, the target version
//! and the options, every item with its action (before looking at the target) and the
//! exact body that would create it.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::aliases::{self, AliasError};
use super::convert::{self, ConvertOptions, Needs};
use super::filter::{decide, is_system_index, is_system_template, Allowlist, Decision};
use super::mappings::{self, MappingsError, MergeError, MultiTypeMode};
use super::plan::{Action, MetadataItem, MetadataKind, Notes};
use super::settings::{self, SettingsContext};
use super::source::{DataStreamInfo, SourceIndex, SourceMetadata};
use super::type_mapping::{TypeMapping, PROVIDER};
use super::{Distribution, ProductVersion};

/// What to migrate and how.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub indices: Allowlist,
    pub legacy_templates: Allowlist,
    pub component_templates: Allowlist,
    pub index_templates: Allowlist,
    /// Replace every index's `number_of_replicas`.
    pub replicas: Option<u32>,
    pub multi_type_mode: MultiTypeMode,
    /// Target index names (renames, prefix, suffix); templates and aliases keep theirs.
    pub naming: crate::names::Naming,
    /// Per mapping type of an ES ≤ 6 index (`index/type`): the target index its documents
    /// go to (before [`Options::naming`]), or `None` to leave that type out (its documents
    /// are skipped with reason `no_route`). Types not listed follow `multi_type_mode`.
    pub type_routes: BTreeMap<String, Option<String>>,
    /// The reference tool's `TypeMappingSanitizationTransformerProvider` rules (from
    /// `--doc-transformer-config`), not yet expanded for a snapshot: see
    /// [`Options::with_type_mapping`].
    pub type_mapping: Option<Arc<TypeMapping>>,
    /// Those rules expanded for the snapshot's indices: index → mapping type → target
    /// index (before [`Options::naming`]), `None` for a type they leave out (its
    /// documents are skipped with reason `type_mapping`). Every type of such an index is
    /// listed.
    pub mapped_types: BTreeMap<String, BTreeMap<String, Option<String>>>,
    /// Choices of the mapping conversions (the k-NN engine).
    pub convert: ConvertOptions,
    /// How data streams of the snapshot are created on the target.
    pub data_streams: DataStreamMode,
    /// The target is OpenSearch Serverless (SigV4 service `aoss`): the settings it
    /// manages itself are dropped ([`crate::settings`]). `migrate` and `evaluate` set it
    /// from the target client.
    pub serverless: bool,
}

/// What becomes of a data stream of the snapshot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DataStreamMode {
    /// A data stream on the target, created from its index template (which must come
    /// along), documents written to it with `create`; BLOCKED when the target has none.
    #[default]
    DataStreams,
    /// Each backing index becomes a plain index, and the data stream's name an alias over
    /// them (the newest is the write index).
    Indices,
}

/// A data stream mode that is neither `data-streams` nor `indices` (the text given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("data stream mode `{0}`: expected data-streams or indices")]
pub struct ParseDataStreamModeError(pub String);

impl std::str::FromStr for DataStreamMode {
    type Err = ParseDataStreamModeError;
    fn from_str(s: &str) -> Result<Self, ParseDataStreamModeError> {
        match s {
            "data-streams" | "data_streams" => Ok(DataStreamMode::DataStreams),
            "indices" => Ok(DataStreamMode::Indices),
            other => Err(ParseDataStreamModeError(other.to_string())),
        }
    }
}

/// What is wrong with a `--type-route`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TypeRouteError {
    /// The route (as given) is not `INDEX/TYPE=TARGET` or `INDEX/TYPE=`.
    #[error("type route {0:?}: expected INDEX/TYPE=TARGET")]
    Malformed(String),
    /// Two routes name the same `INDEX/TYPE`.
    #[error("type {0} is routed twice")]
    RoutedTwice(String),
    /// A `--type-route` names a pair the type mapping provider routes too.
    #[error(
        "--type-route {pair}={} and {PROVIDER} (which sends it {}) both route {pair}: \
         give it in one place",
        explicit.as_deref().unwrap_or(""),
        mapped.as_deref().map_or("nowhere".to_string(), |t| format!("to {t}"))
    )]
    Conflict {
        pair: String,
        explicit: Option<String>,
        mapped: Option<String>,
    },
}

/// Why an index or template definition cannot be converted for the target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DefinitionError {
    /// A definition given to [`convert_definition`] is not an object.
    #[error("the definition is not a JSON object")]
    NotAnObject,
    /// A composable (component or index) template is not an object.
    #[error("template is not an object")]
    TemplateNotAnObject,
    /// A legacy template has neither `index_patterns` nor `template`.
    #[error("template has no index_patterns")]
    NoIndexPatterns,
    #[error(transparent)]
    Mappings(#[from] MappingsError),
    /// The mapping types cannot be merged into one.
    #[error(transparent)]
    Merge(#[from] MergeError),
    #[error(transparent)]
    Aliases(#[from] AliasError),
}

/// What every planning function needs: the versions and the options.
#[derive(Clone, Copy)]
struct Cx<'a> {
    target: ProductVersion,
    source: Option<ProductVersion>,
    options: &'a Options,
    /// The item being converted has `index.knn: true` (set per index or template).
    source_knn: bool,
    /// Its `index.knn.space_type` (OpenSearch 1.x–2.x).
    source_space_type: Option<&'static str>,
}

impl<'a> Cx<'a> {
    fn convert(&self) -> convert::Ctx<'a> {
        convert::Ctx {
            source: self.source,
            target: self.target,
            options: &self.options.convert,
            source_knn: self.source_knn,
            source_space_type: self.source_space_type,
        }
    }

    /// The same, for an item with these (source) settings.
    fn with_settings(self, settings: Option<&Value>) -> Self {
        Cx {
            source_knn: settings.is_some_and(convert::knn_index_enabled),
            source_space_type: settings.and_then(convert::knn_index_space_type),
            ..self
        }
    }
}

impl Options {
    /// The route `--type-route` (or the type mapping provider, expanded) gives the
    /// documents of `doc_type` in `index`, if any.
    pub fn type_route(&self, index: &str, doc_type: &str) -> Option<Option<&str>> {
        self.type_routes
            .get(&format!("{index}/{doc_type}"))
            .or_else(|| self.mapped_types.get(index)?.get(doc_type))
            .map(Option::as_deref)
    }

    /// Whether the type mapping provider decides where the types of `index` go.
    pub fn type_mapped(&self, index: &str) -> bool {
        self.mapped_types.contains_key(index)
    }

    /// These options with the type mapping provider's rules ([`Options::type_mapping`])
    /// expanded into exact routes for every `(index, type)` pair of `source` (an index
    /// without mapping types is looked up as type `_doc`, as the reference tool does), so
    /// the plan and every worker's document routing follow the same table. A pair
    /// `--type-route` names too is an error.
    pub fn with_type_mapping(&self, source: &SourceMetadata) -> Result<Options, TypeRouteError> {
        self.expand_type_mapping(source, true)
    }

    /// [`Options::with_type_mapping`] for callers that cannot report an error (the plan
    /// and the routing, when given options nobody expanded): `--type-route` wins a
    /// conflict. Borrowed when there is nothing to expand.
    pub(crate) fn expanded(&self, source: &SourceMetadata) -> Cow<'_, Options> {
        match self.type_mapping {
            None => Cow::Borrowed(self),
            // The lenient expansion has no error to return.
            Some(_) => Cow::Owned(
                self.expand_type_mapping(source, false)
                    .unwrap_or_else(|_| self.clone()),
            ),
        }
    }

    fn expand_type_mapping(
        &self,
        source: &SourceMetadata,
        strict: bool,
    ) -> Result<Options, TypeRouteError> {
        let mut out = self.clone();
        let Some(rules) = out.type_mapping.take() else {
            return Ok(out);
        };
        for index in &source.indices {
            let mut types = BTreeMap::new();
            for t in route_types(index) {
                let mapped = rules.target(&index.name, &t);
                let pair = format!("{}/{t}", index.name);
                if let Some(explicit) = self.type_routes.get(&pair) {
                    if strict {
                        return Err(TypeRouteError::Conflict {
                            pair,
                            explicit: explicit.clone(),
                            mapped,
                        });
                    }
                    continue;
                }
                types.insert(t, mapped);
            }
            out.mapped_types.insert(index.name.clone(), types);
        }
        Ok(out)
    }

    /// Parses `INDEX/TYPE=TARGET` (or `INDEX/TYPE=` to leave the type out).
    pub fn parse_type_routes(
        routes: &[String],
    ) -> Result<BTreeMap<String, Option<String>>, TypeRouteError> {
        let mut out = BTreeMap::new();
        for r in routes {
            let (key, target) = r
                .split_once('=')
                .ok_or_else(|| TypeRouteError::Malformed(r.clone()))?;
            let ok = key
                .split_once('/')
                .is_some_and(|(i, t)| !i.is_empty() && !t.is_empty());
            if !ok {
                return Err(TypeRouteError::Malformed(r.clone()));
            }
            let target = (!target.is_empty()).then(|| target.to_string());
            if out.insert(key.to_string(), target).is_some() {
                return Err(TypeRouteError::RoutedTwice(key.to_string()));
            }
        }
        Ok(out)
    }
}

/// Every item in creation order (legacy templates, component templates, index templates,
/// indices), each `Create`, `SkipExcluded`, `SkipUnsupported` or `Error`; existence on
/// the target is checked later.
pub fn plan(
    source: &SourceMetadata,
    target: ProductVersion,
    options: &Options,
) -> Vec<MetadataItem> {
    let expanded = options.expanded(source);
    let options: &Options = &expanded;
    let cx = Cx {
        target,
        source: source.version,
        options,
        source_knn: false,
        source_space_type: None,
    };
    let mut items = Vec::new();
    for (name, t) in &source.legacy_templates {
        items.push(legacy_template(name, t, cx));
    }

    let mut index_templates = Vec::new();
    let mut required = BTreeSet::new();
    for (name, t) in &source.index_templates {
        let item = index_template(name, t, cx);
        if item.action == Action::Create {
            if let Some(Value::Array(c)) = t.get("composed_of") {
                required.extend(
                    c.iter()
                        .filter_map(Value::as_str)
                        .map(|c| (c.to_string(), name.clone())),
                );
            }
        }
        index_templates.push(item);
    }
    for (name, t) in &source.component_templates {
        let needed_by = required
            .iter()
            .find(|(c, _)| c == name)
            .map(|(_, by)| by.as_str());
        items.push(component_template(name, t, cx, needed_by));
    }
    let stream_items: Vec<MetadataItem> = source
        .data_streams
        .iter()
        .filter_map(|ds| data_stream_item(ds, &index_templates, cx))
        .collect();
    items.extend(index_templates);
    items.extend(stream_items);

    for index in &source.indices {
        let ds = source.data_stream_of(&index.name);
        items.extend(index_items(index, ds, cx));
    }
    merge_shared_targets(&mut items);
    items
}

/// Index items of several source indices with one target name (type routes can send
/// them there, as the reference tool's regex mappings often do): one index, created from
/// the first; each later one's mapping merged into it as `--multi-type merge` merges
/// types (a conflicting field is an error of that index), its aliases added, its settings
/// the first's (a difference is a warning). The later items say where they went.
fn merge_shared_targets(items: &mut [MetadataItem]) {
    let mut first: BTreeMap<String, usize> = BTreeMap::new();
    for i in 0..items.len() {
        if items[i].kind != MetadataKind::Index || items[i].action != Action::Create {
            continue;
        }
        let Some(&j) = first.get(&items[i].name) else {
            first.insert(items[i].name.clone(), i);
            continue;
        };
        let origin = |it: &MetadataItem| it.source_name.clone().unwrap_or(it.name.clone());
        let (from, into) = (origin(&items[i]), origin(&items[j]));
        let name = items[j].name.clone();
        let later = items[i].body.clone().unwrap_or_default();
        let (first_item, merged) = {
            let (a, b) = items.split_at_mut(i);
            (&mut a[j], &mut b[0])
        };
        let mut notes = std::mem::take(&mut first_item.notes);
        let body = first_item.body.get_or_insert_with(|| json!({}));
        match merge_bodies(body, &later, &from, &into, &mut notes) {
            Ok(()) => {
                notes.change(format!(
                    "index {from} merged into {name} (also the target of {into})"
                ));
                merged.action = Action::SkipExcluded;
                merged.reasons = vec![format!(
                    "merged into index {name}, created from {into}: both are routed there"
                )];
            }
            Err(e) => {
                first_item.action = Action::Error;
                first_item.reasons = vec![format!(
                    "indices {into} and {from} are both routed to {name} and cannot be merged: {e}"
                )];
                merged.action = Action::Error;
                merged.reasons = first_item.reasons.clone();
            }
        }
        first_item.notes = notes;
    }
}

/// `later`'s mapping and aliases into `body` (create-index bodies for one target).
fn merge_bodies(
    body: &mut Value,
    later: &Value,
    from: &str,
    into: &str,
    notes: &mut Notes,
) -> Result<(), MergeError> {
    // A typed mapping (for an Elasticsearch 6 target) is `{"_doc": {…}}`.
    fn split(m: &Value) -> (Option<String>, Value) {
        match m.as_object() {
            Some(o) if o.len() == 1 && !o.contains_key("properties") => {
                let (t, inner) = o.iter().next().expect("one");
                if inner.is_object() && t == "_doc" {
                    return (Some(t.clone()), inner.clone());
                }
                (None, m.clone())
            }
            _ => (None, m.clone()),
        }
    }
    if let Some(m2) = later.get("mappings") {
        let merged = match body.get("mappings") {
            None => m2.clone(),
            Some(m1) => {
                let ((t, a), (_, b)) = (split(m1), split(m2));
                let m = mappings::merge(&[(into.to_string(), a), (from.to_string(), b)], notes)?;
                match t {
                    Some(t) => json!({ t: m }),
                    None => m,
                }
            }
        };
        body["mappings"] = merged;
    }
    if later.get("settings") != body.get("settings") {
        notes.warn(format!(
            "the settings of {from} differ from those of {into}; the index has {into}'s"
        ));
    }
    if let Some(Value::Object(add)) = later.get("aliases") {
        let aliases = body
            .as_object_mut()
            .expect("an index body is an object")
            .entry("aliases")
            .or_insert_with(|| json!({}));
        if let Value::Object(have) = aliases {
            for (k, v) in add {
                have.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
    Ok(())
}

fn excluded_or_unsupported(
    kind: MetadataKind,
    name: &str,
    list: &Allowlist,
    system: bool,
    target: ProductVersion,
) -> Result<&'static str, Box<MetadataItem>> {
    match decide(list, name, system) {
        Decision::Exclude(why) => Err(Box::new(MetadataItem::new(
            kind,
            name,
            Action::SkipExcluded,
            why,
        ))),
        Decision::Include(why) => {
            if matches!(
                kind,
                MetadataKind::ComponentTemplate | MetadataKind::IndexTemplate
            ) && !target.supports_composable_templates()
            {
                return Err(Box::new(MetadataItem::new(
                    kind,
                    name,
                    Action::SkipUnsupported,
                    format!("{target} has no composable templates (Elasticsearch 7.8+ or OpenSearch needed)"),
                )));
            }
            Ok(why)
        }
    }
}

fn finish(
    kind: MetadataKind,
    name: &str,
    why: &str,
    body: Result<Value, DefinitionError>,
    notes: Notes,
) -> MetadataItem {
    match body {
        Ok(body) if notes.blocked() => {
            let mut item = MetadataItem::new(
                kind,
                name,
                Action::Blocked,
                format!("the target cannot hold: {}", notes.blockers.join("; ")),
            );
            item.notes = notes;
            item.body = Some(body);
            item
        }
        Ok(body) => {
            let mut item = MetadataItem::new(kind, name, Action::Create, why);
            item.notes = notes;
            item.body = Some(body);
            item
        }
        Err(e) => {
            let mut item = MetadataItem::new(kind, name, Action::Error, e.to_string());
            item.notes = notes;
            item
        }
    }
}

fn legacy_template(name: &str, t: &Value, cx: Cx<'_>) -> MetadataItem {
    let why = match excluded_or_unsupported(
        MetadataKind::LegacyTemplate,
        name,
        &cx.options.legacy_templates,
        is_system_template(name),
        cx.target,
    ) {
        Ok(why) => why,
        Err(item) => return *item,
    };
    let mut notes = Notes::default();
    let body = legacy_template_body(t, cx, &mut notes);
    finish(MetadataKind::LegacyTemplate, name, why, body, notes)
}

/// The `_template` body: patterns (5.x `template` string → `index_patterns`), order,
/// version, settings, mappings (typed for ES 6), aliases.
fn legacy_template_body(
    t: &Value,
    cx: Cx<'_>,
    notes: &mut Notes,
) -> Result<Value, DefinitionError> {
    let mut body = Map::new();
    match (t.get("index_patterns"), t.get("template")) {
        (Some(p @ Value::Array(_)), _) => {
            body.insert("index_patterns".into(), p.clone());
        }
        (Some(Value::String(p)), _) => {
            body.insert("index_patterns".into(), json!([p]));
        }
        (_, Some(Value::String(p))) => {
            body.insert("index_patterns".into(), json!([p]));
            notes.change(format!(
                "template pattern \"{p}\" → index_patterns [\"{p}\"]"
            ));
        }
        _ => return Err(DefinitionError::NoIndexPatterns),
    }
    for key in ["order", "version"] {
        if let Some(v) = t.get(key).filter(|v| !v.is_null()) {
            body.insert(key.into(), v.clone());
        }
    }
    template_parts(t, cx, true, notes, &mut body)?;
    Ok(Value::Object(body))
}

/// Settings, mappings and aliases of a template (legacy: at the top; composable: under `template`).
fn template_parts(
    t: &Value,
    cx: Cx<'_>,
    typed_target: bool,
    notes: &mut Notes,
    into: &mut Map<String, Value>,
) -> Result<(), DefinitionError> {
    let target = cx.target;
    let cx = cx.with_settings(t.get("settings"));
    let mut needs = Needs::default();
    let mut mapping_out = None;
    if let Some(m) = t.get("mappings") {
        let types = mappings::without_default(mappings::typed(m)?, notes);
        if let Some((source_type, mapping)) = one_mapping(types, cx, &mut needs, notes)? {
            let mapping = if typed_target {
                mappings::for_target(mapping, &source_type, target, notes)
            } else {
                mapping
            };
            mapping_out = Some(mapping);
        }
    }
    let settings_in = t.get("settings").filter(|s| !s.is_null());
    if settings_in.is_some() || needs.knn {
        let ctx = SettingsContext {
            target,
            replicas: None,
            routing_num_shards: None,
            serverless: cx.options.serverless,
        };
        let mut s = match settings_in {
            Some(s) => settings::transform(s, &ctx, notes),
            None => Map::new(),
        };
        convert::convert_settings(&mut s, &cx.convert(), needs, notes);
        if !s.is_empty() {
            into.insert("settings".into(), Value::Object(s));
        }
    }
    if let Some(m) = mapping_out {
        into.insert("mappings".into(), m);
    }
    if let Some(a) = t.get("aliases") {
        let a = aliases::transform(a, target, notes)?;
        if !a.is_empty() {
            into.insert("aliases".into(), Value::Object(a));
        }
    }
    Ok(())
}

/// Cleans and converts every type and merges them: `None` when there is no mapping at all.
fn one_mapping(
    types: Vec<(String, Value)>,
    cx: Cx<'_>,
    needs: &mut Needs,
    notes: &mut Notes,
) -> Result<Option<(String, Value)>, DefinitionError> {
    let cleaned: Vec<(String, Value)> = types
        .into_iter()
        .map(|(t, m)| {
            let m = mappings::clean(&m, cx.target, notes);
            let m = convert::convert_mapping(&m, &cx.convert(), needs, notes);
            (t, m)
        })
        .collect();
    match cleaned.len() {
        0 => Ok(None),
        1 => Ok(cleaned.into_iter().next()),
        _ => Ok(Some(("_doc".into(), mappings::merge(&cleaned, notes)?))),
    }
}

fn component_template(name: &str, t: &Value, cx: Cx<'_>, needed_by: Option<&str>) -> MetadataItem {
    let listed = excluded_or_unsupported(
        MetadataKind::ComponentTemplate,
        name,
        &cx.options.component_templates,
        is_system_template(name),
        cx.target,
    );
    let why = match (listed, needed_by) {
        (Ok(why), _) => why.to_string(),
        (Err(item), Some(by)) if item.action == Action::SkipExcluded => {
            format!(
                "required by index template {by} ({})",
                item.reasons.join("; ")
            )
        }
        (Err(item), _) => return *item,
    };
    let mut notes = Notes::default();
    let body = composable_body(t, cx, &["template", "version", "_meta"], &mut notes);
    finish(MetadataKind::ComponentTemplate, name, &why, body, notes)
}

fn index_template(name: &str, t: &Value, cx: Cx<'_>) -> MetadataItem {
    let why = match excluded_or_unsupported(
        MetadataKind::IndexTemplate,
        name,
        &cx.options.index_templates,
        is_system_template(name),
        cx.target,
    ) {
        Ok(why) => why,
        Err(item) => return *item,
    };
    let mut notes = Notes::default();
    let body = composable_body(
        t,
        cx,
        &[
            "index_patterns",
            "template",
            "composed_of",
            "priority",
            "version",
            "_meta",
            "data_stream",
        ],
        &mut notes,
    );
    finish(MetadataKind::IndexTemplate, name, why, body, notes)
}

/// A component or index template body; keys outside `known` are dropped with a warning.
fn composable_body(
    t: &Value,
    cx: Cx<'_>,
    known: &[&str],
    notes: &mut Notes,
) -> Result<Value, DefinitionError> {
    let target = cx.target;
    let Value::Object(src) = t else {
        return Err(DefinitionError::TemplateNotAnObject);
    };
    let mut body = Map::new();
    for (k, v) in src {
        if v.is_null() {
            continue;
        }
        if !known.contains(&k.as_str()) {
            notes.warn(format!(
                "template parameter {k} dropped (not supported by {target})"
            ));
            continue;
        }
        match k.as_str() {
            "template" => {
                let mut inner = Map::new();
                template_parts(v, cx, false, notes, &mut inner)?;
                body.insert(k.clone(), Value::Object(inner));
            }
            "data_stream" if target.distribution == Distribution::OpenSearch => {
                let mut ds = Map::new();
                if let Value::Object(d) = v {
                    for (dk, dv) in d {
                        if dk == "timestamp_field" {
                            ds.insert(dk.clone(), dv.clone());
                        } else {
                            notes.warn(format!(
                                "data_stream.{dk} dropped (not supported by {target})"
                            ));
                        }
                    }
                }
                body.insert(k.clone(), Value::Object(ds));
            }
            _ => {
                body.insert(k.clone(), v.clone());
            }
        }
    }
    Ok(Value::Object(body))
}

/// The data stream itself, in `--data-streams data-streams` mode: created on the target
/// (`PUT _data_stream/<name>`) from a migrated index template with a `data_stream` section.
fn data_stream_item(
    ds: &DataStreamInfo,
    index_templates: &[MetadataItem],
    cx: Cx<'_>,
) -> Option<MetadataItem> {
    let options = cx.options;
    if options.data_streams != DataStreamMode::DataStreams {
        return None;
    }
    let name = ds.name.as_str();
    let why = match decide(&options.indices, name, ds.system) {
        Decision::Exclude(why) => {
            return Some(MetadataItem::new(
                MetadataKind::DataStream,
                name,
                Action::SkipExcluded,
                why,
            ))
        }
        Decision::Include(why) => why,
    };
    let mut item = MetadataItem::new(MetadataKind::DataStream, name, Action::Create, why);
    item.body = Some(json!({"timestamp_field": ds.timestamp_field, "backing_indices": ds.indices}));
    if !cx.target.supports_data_streams() {
        item.action = Action::Blocked;
        let b = format!(
            "{} has no data streams (Elasticsearch 7.9+ or OpenSearch needed): use --data-streams indices",
            cx.target
        );
        item.reasons = vec![b.clone()];
        item.notes.block(b);
        return Some(item);
    }
    let template = index_templates.iter().find(|t| {
        t.action == Action::Create
            && t.body.as_ref().is_some_and(|b| {
                b.get("data_stream").is_some_and(Value::is_object)
                    && b.get("index_patterns")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .any(|p| crate::wildcard::matches(p, name))
            })
    });
    match template {
        Some(t) => item.notes.change(format!(
            "data stream {name} created from index template {}; the documents of its {} backing indices are written to it with create",
            t.name,
            ds.indices.len()
        )),
        None => {
            item.action = Action::Error;
            item.reasons = vec![format!(
                "no migrated index template with a data_stream section matches {name}: migrate one (--index-template) or use --data-streams indices"
            )];
        }
    }
    Some(item)
}

/// Converts one index definition for `target` exactly as metadata migration would, with
/// no snapshot and no cluster: what `rfs metadata convert` prints. `body` may be a bare
/// mapping (`{"properties": …}`, typed or not), an index body (`{"settings", "mappings",
/// "aliases"}`), or a `GET <index>` / `GET <index>/_mapping` answer for one index.
pub fn convert_definition(
    body: &Value,
    source: Option<ProductVersion>,
    target: ProductVersion,
    options: &Options,
) -> Result<(Value, Notes), DefinitionError> {
    let cx = Cx {
        target,
        source,
        options,
        source_knn: false,
        source_space_type: None,
    };
    let Value::Object(top) = body else {
        return Err(DefinitionError::NotAnObject);
    };
    // `{"<index>": {"mappings": …}}` as GET answers.
    let unwrapped = match top.iter().next() {
        Some((_, Value::Object(inner)))
            if top.len() == 1
                && (inner.contains_key("mappings") || inner.contains_key("settings")) =>
        {
            inner.clone()
        }
        _ => top.clone(),
    };
    let is_body = unwrapped.contains_key("mappings") || unwrapped.contains_key("settings");
    let (mapping, settings_in, aliases_in) = if is_body {
        (
            unwrapped.get("mappings").cloned(),
            unwrapped.get("settings").cloned(),
            unwrapped.get("aliases").cloned(),
        )
    } else {
        (Some(Value::Object(unwrapped)), None, None)
    };
    let cx = cx.with_settings(settings_in.as_ref());
    let mut notes = Notes::default();
    let mut needs = Needs::default();
    let mut out = Map::new();
    let mut mapping_out = None;
    if let Some(m) = mapping {
        let types = mappings::without_default(mappings::typed(&m)?, &mut notes);
        if let Some((t, m)) = one_mapping(types, cx, &mut needs, &mut notes)? {
            mapping_out = Some(mappings::for_target(m, &t, target, &mut notes));
        }
    }
    let ctx = SettingsContext {
        target,
        replicas: options.replicas,
        routing_num_shards: None,
        serverless: options.serverless,
    };
    let mut settings = match &settings_in {
        Some(s) => settings::transform(s, &ctx, &mut notes),
        None => Map::new(),
    };
    convert::convert_settings(&mut settings, &cx.convert(), needs, &mut notes);
    if !settings.is_empty() {
        out.insert("settings".into(), Value::Object(settings));
    }
    if let Some(m) = mapping_out {
        out.insert("mappings".into(), m);
    }
    if let Some(a) = aliases_in {
        let a = aliases::transform(&a, target, &mut notes)?;
        if !a.is_empty() {
            out.insert("aliases".into(), Value::Object(a));
        }
    }
    Ok((Value::Object(out), notes))
}

/// The target index of one mapping type when an index is split per type.
pub fn split_index_name(index: &str, doc_type: &str) -> String {
    format!("{index}_{doc_type}")
}

/// Whether the snapshot marks the index as a system index, or its name says so.
pub fn index_is_system(index: &SourceIndex) -> bool {
    is_system_index(&index.name)
        || index.metadata.get("system").and_then(Value::as_bool) == Some(true)
}

/// The mapping types of an index (`_default_` aside), in snapshot order.
pub fn index_types(index: &SourceIndex) -> Result<Vec<String>, MappingsError> {
    let types = mappings::typed(index.metadata.get("mappings").unwrap_or(&Value::Null))?;
    Ok(types
        .into_iter()
        .map(|(t, _)| t)
        .filter(|t| t != mappings::DEFAULT_TYPE)
        .collect())
}

/// The mapping types the documents of `index` are routed by: its types, or `_doc` for an
/// index without any (the reference tool's type of a typeless document). Empty when the
/// mappings cannot be read (the plan reports that).
pub fn route_types(index: &SourceIndex) -> Vec<String> {
    match index_types(index) {
        Ok(t) if t.is_empty() => vec!["_doc".into()],
        Ok(t) => t,
        Err(_) => Vec::new(),
    }
}

fn index_items(
    index: &SourceIndex,
    data_stream: Option<&DataStreamInfo>,
    cx: Cx<'_>,
) -> Vec<MetadataItem> {
    let (target, options) = (cx.target, cx.options);
    let name = index.name.as_str();
    if let (Some(ds), DataStreamMode::DataStreams) = (data_stream, options.data_streams) {
        return vec![MetadataItem::new(
            MetadataKind::Index,
            name,
            Action::SkipExcluded,
            format!(
                "backing index of data stream {}: its documents are written to the data stream",
                ds.name
            ),
        )];
    }
    // A backing index of a data stream is selected by the stream's name as well.
    let system = index_is_system(index) && data_stream.is_none_or(|d| d.system);
    let decision = match data_stream {
        Some(ds)
            if matches!(
                decide(&options.indices, &ds.name, ds.system),
                Decision::Include(_)
            ) =>
        {
            decide(&options.indices, &ds.name, ds.system)
        }
        _ => decide(&options.indices, name, system),
    };
    let why = match decision {
        Decision::Exclude(why) => {
            return vec![MetadataItem::new(
                MetadataKind::Index,
                name,
                Action::SkipExcluded,
                why,
            )]
        }
        Decision::Include(why) => why,
    };
    let meta = &index.metadata;
    let cx = cx.with_settings(meta.get("settings"));
    let mut notes = Notes::default();
    if meta.get("state").and_then(Value::as_str) == Some("close") {
        notes.warn("the source index was closed; it is created open");
    }
    let error = |e: DefinitionError, notes: Notes| {
        let mut item = MetadataItem::new(MetadataKind::Index, name, Action::Error, e.to_string());
        item.notes = notes;
        vec![item]
    };
    let routing_num_shards = meta.get("routing_num_shards").and_then(|v| {
        v.as_u64()
            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
    });
    let ctx = SettingsContext {
        target,
        replicas: options.replicas,
        routing_num_shards,
        serverless: cx.options.serverless,
    };
    let base_settings = settings::transform(
        meta.get("settings").unwrap_or(&Value::Null),
        &ctx,
        &mut notes,
    );
    let mut aliases = match aliases::transform(
        meta.get("aliases").unwrap_or(&Value::Null),
        target,
        &mut notes,
    ) {
        Ok(a) => a,
        Err(e) => return error(e.into(), notes),
    };
    if let Some(ds) = data_stream {
        // As plain indices: the stream's name becomes an alias over its backing indices.
        let write = ds.indices.last().map(String::as_str) == Some(name);
        let mut def = Map::new();
        if write && target.supports_write_index_alias() {
            def.insert("is_write_index".into(), Value::Bool(true));
        }
        aliases.insert(ds.name.clone(), Value::Object(def));
        notes.change(format!(
            "backing index of data stream {} created as an index, with alias {}{}",
            ds.name,
            ds.name,
            if write { " (its write index)" } else { "" }
        ));
    }
    let mut types = match mappings::typed(meta.get("mappings").unwrap_or(&Value::Null)) {
        Ok(t) => mappings::without_default(t, &mut notes),
        Err(e) => return error(e.into(), notes),
    };
    drop_noop_source_mode(meta, &mut types, &mut notes);
    let body = |mapping: Option<Value>, needs: Needs, notes: &mut Notes| {
        let mut settings = base_settings.clone();
        convert::convert_settings(&mut settings, &cx.convert(), needs, notes);
        let mut b = Map::new();
        b.insert("settings".into(), Value::Object(settings));
        if let Some(m) = mapping {
            b.insert("mappings".into(), m);
        }
        if !aliases.is_empty() {
            b.insert("aliases".into(), Value::Object(aliases.clone()));
        }
        Value::Object(b)
    };
    let split = types.len() > 1 && options.multi_type_mode == MultiTypeMode::Split;
    // An index without types (Elasticsearch 7+, or no mapping) is routed as `_doc`.
    let typeless_route = if types.is_empty() {
        options.type_route(name, "_doc")
    } else {
        None
    };
    let routed = typeless_route.is_some()
        || types
            .iter()
            .any(|(t, _)| options.type_route(name, t).is_some());
    if split || routed {
        // Each type to its target (before naming); the types sent to one target make one
        // index, their mappings merged as `--multi-type merge` merges them.
        let by = if options.type_mapped(name) {
            PROVIDER
        } else {
            "--type-route"
        };
        let mut groups: Vec<(String, Vec<(String, Value)>)> = Vec::new();
        let mut left_out = Vec::new();
        let mut place = |t: String, m: Option<Value>, route: Option<Option<&str>>| {
            let target = match route {
                Some(None) => {
                    left_out.push(t);
                    return;
                }
                Some(Some(route)) => route.to_string(),
                None if split => split_index_name(name, &t),
                None => name.to_string(),
            };
            let i = match groups.iter().position(|(g, _)| *g == target) {
                Some(i) => i,
                None => {
                    groups.push((target, Vec::new()));
                    groups.len() - 1
                }
            };
            if let Some(m) = m {
                groups[i].1.push((t, m));
            }
        };
        if let Some(route) = typeless_route {
            place("_doc".into(), None, Some(route));
        }
        for (t, m) in types {
            let route = options.type_route(name, &t);
            place(t, Some(m), route);
        }
        for t in &left_out {
            notes.change(format!(
                "mapping type {t} of {name} left out by {by}: its documents are skipped"
            ));
        }
        if groups.is_empty() {
            let mut item = MetadataItem::new(
                MetadataKind::Index,
                name,
                Action::SkipExcluded,
                format!("every mapping type of {name} is left out by {by}"),
            );
            item.notes = notes;
            return vec![item];
        }
        let mut items = Vec::new();
        for (target_route, members) in groups {
            let mut n = notes.clone();
            let target_name = options.naming.target(&target_route);
            let names: Vec<&str> = members.iter().map(|(t, _)| t.as_str()).collect();
            n.change(match (names.as_slice(), routed) {
                ([t], false) => {
                    format!("mapping type {t} of {name} split into its own index {target_name}")
                }
                ([], _) => format!("{name} is created as {target_name} ({by})"),
                ([t], true) => format!("mapping type {t} of {name} routed to index {target_name}"),
                (many, _) => format!(
                    "mapping types {} of {name} routed to one index {target_name}",
                    many.join(", ")
                ),
            });
            let mut needs = Needs::default();
            let mut item = match one_mapping(members, cx, &mut needs, &mut n) {
                Ok(m) => {
                    let m = m.map(|(t, m)| mappings::for_target(m, &t, target, &mut n));
                    let b = body(m, needs, &mut n);
                    finish(MetadataKind::Index, &target_name, why, Ok(b), n)
                }
                Err(e) => {
                    let mut item = MetadataItem::new(
                        MetadataKind::Index,
                        &target_name,
                        Action::Error,
                        e.to_string(),
                    );
                    item.notes = n;
                    item
                }
            };
            if target_name != name {
                item.source_name = Some(name.to_string());
            }
            items.push(item);
        }
        return items;
    }
    let mut needs = Needs::default();
    match one_mapping(types, cx, &mut needs, &mut notes) {
        Ok(m) => {
            let m = m.map(|(t, m)| mappings::for_target(m, &t, target, &mut notes));
            let b = body(m, needs, &mut notes);
            let target_name = options.naming.target(name);
            if target_name == name {
                return vec![finish(MetadataKind::Index, name, why, Ok(b), notes)];
            }
            notes.change(format!("{name} is created as {target_name}"));
            let mut item = finish(MetadataKind::Index, &target_name, why, Ok(b), notes);
            item.source_name = Some(name.to_string());
            vec![item]
        }
        Err(e) => error(e, notes),
    }
}

/// Indices created from index version `SOURCE_MAPPER_MODE_ATTRIBUTE_NOOP` (Elasticsearch
/// 9.x) on keep `_source.mode` in their mappings without effect (`SourceFieldMapper`,
/// see `snapshot::IndexMetadata::source_mode`): the source kept `_source`, so the
/// parameter is dropped rather than made to take effect on the target.
fn drop_noop_source_mode(meta: &Value, types: &mut [(String, Value)], notes: &mut Notes) {
    let created = meta
        .get("settings")
        .and_then(|s| s.get("index.version.created"))
        .and_then(|v| match v {
            Value::String(s) => snapshot::IndexVersion::parse(s),
            other => other.as_u64().and_then(snapshot::IndexVersion::from_id),
        });
    let Some(created) = created
        .filter(|v| v.on_or_after(snapshot::IndexVersion::SOURCE_MAPPER_MODE_ATTRIBUTE_NOOP))
    else {
        return;
    };
    for (_, m) in types.iter_mut() {
        let Some(Value::Object(src)) = m.get_mut("_source") else {
            continue;
        };
        if let Some(mode) = src.remove("mode") {
            notes.change(format!(
                "_source.mode {mode} dropped: the index (created by {created}) ignores it and stores _source"
            ));
            if src.is_empty() {
                if let Some(o) = m.as_object_mut() {
                    o.remove("_source");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DocumentRouting;

    fn es56_index() -> SourceIndex {
        SourceIndex {
            name: "test_updates_deletes".into(),
            metadata: json!({
                "version": 5,
                "routing_num_shards": 1,
                "state": "open",
                "settings": {
                    "index.number_of_shards": "1", "index.number_of_replicas": "0",
                    "index.uuid": "x", "index.creation_date": "1", "index.version.created": "5061699",
                    "index.provided_name": "test_updates_deletes"
                },
                "mappings": [
                    {"type2": {"_all": {"enabled": false}, "properties": {"content": {"type": "text"}, "title": {"type": "string"}}}},
                    {"type1": {"properties": {"title": {"type": "string"}, "n": {"type": "long", "include_in_all": false}}}}
                ],
                "aliases": {"a": {"filter": {"term": {"x": 1}}}}
            }),
        }
    }

    fn source() -> SourceMetadata {
        SourceMetadata {
            version: Some(ProductVersion::es(5, 6)),
            legacy_templates: vec![
                (
                    "posts".into(),
                    json!({"order": 0, "template": "posts_*", "settings": {"index": {"number_of_shards": "1"}}, "mappings": [{"_default_": {"_all": {"enabled": false}}}, {"doc": {"properties": {"t": {"type": "string", "index": "not_analyzed"}}}}], "aliases": {"{index}-alias": {}}}),
                ),
                (
                    ".ml-meta".into(),
                    json!({"order": 0, "template": ".ml-meta"}),
                ),
            ],
            component_templates: vec![
                (
                    "logs-settings".into(),
                    json!({"template": {"settings": {"index": {"lifecycle": {"name": "logs"}}}}}),
                ),
                (
                    "posts_ct".into(),
                    json!({"template": {"mappings": {"properties": {"a": {"type": "keyword"}}}}, "version": 1}),
                ),
            ],
            index_templates: vec![
                (
                    "logs".into(),
                    json!({"index_patterns": ["logs-*-*"], "composed_of": ["logs-settings"], "priority": 100, "data_stream": {"hidden": false}}),
                ),
                (
                    "posts_it".into(),
                    json!({"index_patterns": ["posts*"], "composed_of": ["posts_ct", "logs-settings"], "template": {"aliases": {"cur": {}}}, "allow_auto_create": true}),
                ),
            ],
            indices: vec![
                es56_index(),
                SourceIndex {
                    name: ".kibana".into(),
                    metadata: json!({}),
                },
            ],
            data_streams: Vec::new(),
        }
    }

    fn find<'a>(items: &'a [MetadataItem], kind: MetadataKind, name: &str) -> &'a MetadataItem {
        items
            .iter()
            .find(|i| i.kind == kind && i.name == name)
            .unwrap_or_else(|| panic!("no {kind:?} {name} in {items:#?}"))
    }

    #[test]
    fn order_filters_and_dependencies() {
        let items = plan(&source(), ProductVersion::os(3, 8), &Options::default());
        let kinds: Vec<MetadataKind> = items.iter().map(|i| i.kind).collect();
        let mut sorted = kinds.clone();
        sorted.sort();
        assert_eq!(kinds, sorted, "creation order");
        assert_eq!(
            find(&items, MetadataKind::LegacyTemplate, ".ml-meta").action,
            Action::SkipExcluded
        );
        assert_eq!(
            find(&items, MetadataKind::IndexTemplate, "logs").action,
            Action::SkipExcluded
        );
        let ls = find(&items, MetadataKind::ComponentTemplate, "logs-settings");
        assert_eq!(ls.action, Action::Create, "pulled in by posts_it");
        assert!(ls.reasons[0].contains("required by index template posts_it"));
        assert_eq!(
            ls.body,
            Some(json!({"template": {}})),
            "ILM setting dropped for OpenSearch"
        );
        let it = find(&items, MetadataKind::IndexTemplate, "posts_it");
        assert_eq!(
            it.body,
            Some(
                json!({"index_patterns": ["posts*"], "composed_of": ["posts_ct", "logs-settings"], "template": {"aliases": {"cur": {}}}})
            )
        );
        assert!(it
            .notes
            .warnings
            .iter()
            .any(|w| w.contains("allow_auto_create")));
        assert_eq!(
            find(&items, MetadataKind::Index, ".kibana").action,
            Action::SkipExcluded
        );
    }

    #[test]
    fn legacy_template_for_es6_and_os() {
        let items = plan(&source(), ProductVersion::os(2, 0), &Options::default());
        let t = find(&items, MetadataKind::LegacyTemplate, "posts");
        assert_eq!(
            t.body,
            Some(
                json!({"index_patterns": ["posts_*"], "order": 0, "settings": {"index.number_of_shards": "1"},
                "mappings": {"properties": {"t": {"type": "keyword"}}}, "aliases": {"{index}-alias": {}}})
            )
        );
        let items = plan(&source(), ProductVersion::es(6, 8), &Options::default());
        let t = find(&items, MetadataKind::LegacyTemplate, "posts");
        assert_eq!(
            t.body.as_ref().unwrap()["mappings"],
            json!({"_doc": {"properties": {"t": {"type": "keyword"}}}})
        );
        assert_eq!(
            find(&items, MetadataKind::IndexTemplate, "posts_it").action,
            Action::SkipUnsupported
        );
        assert_eq!(
            find(&items, MetadataKind::ComponentTemplate, "posts_ct").action,
            Action::SkipUnsupported
        );
    }

    #[test]
    fn multi_type_index_merged() {
        let opts = Options {
            replicas: Some(2),
            ..Options::default()
        };
        let items = plan(&source(), ProductVersion::os(3, 8), &opts);
        let i = find(&items, MetadataKind::Index, "test_updates_deletes");
        assert_eq!(i.action, Action::Create, "{i:#?}");
        assert_eq!(
            i.body,
            Some(json!({
                "settings": {"index.number_of_shards": "1", "index.number_of_replicas": "2", "index.number_of_routing_shards": "1"},
                "mappings": {"properties": {"content": {"type": "text"}, "title": {"type": "text"}, "n": {"type": "long"}}},
                "aliases": {"a": {"filter": {"term": {"x": 1}}}}
            }))
        );
        let all: Vec<&String> = i
            .notes
            .transformations
            .iter()
            .chain(&i.notes.warnings)
            .collect();
        assert!(
            all.iter().any(|n| n.contains("type2, type1 merged")),
            "{all:?}"
        );
        assert!(all.iter().any(|n| n.contains("_all")));
    }

    #[test]
    fn multi_type_index_split() {
        let opts = Options {
            multi_type_mode: MultiTypeMode::Split,
            ..Options::default()
        };
        let items = plan(&source(), ProductVersion::es(6, 8), &opts);
        let t1 = find(&items, MetadataKind::Index, "test_updates_deletes_type1");
        let t2 = find(&items, MetadataKind::Index, "test_updates_deletes_type2");
        assert_eq!(t1.source_name.as_deref(), Some("test_updates_deletes"));
        assert_eq!(
            t1.body.as_ref().unwrap()["mappings"],
            json!({"_doc": {"properties": {"title": {"type": "text"}, "n": {"type": "long"}}}})
        );
        assert_eq!(
            t2.body.as_ref().unwrap()["mappings"],
            json!({"_doc": {"properties": {"content": {"type": "text"}, "title": {"type": "text"}}}})
        );
        assert!(t1
            .notes
            .transformations
            .iter()
            .any(|n| n.contains("type1 → _doc")));
    }

    /// Options whose type mapping provider has this configuration (with its required
    /// `sourceProperties`).
    fn mapped(mut config: Value, mode: MultiTypeMode) -> Options {
        config["sourceProperties"] = json!({"version": {"major": 5, "minor": 6}});
        Options {
            multi_type_mode: mode,
            type_mapping: Some(Arc::new(crate::TypeMapping::from_config(&config).unwrap())),
            ..Options::default()
        }
    }

    fn index_names(items: &[MetadataItem]) -> Vec<&str> {
        items
            .iter()
            .filter(|i| i.kind == MetadataKind::Index && i.action == Action::Create)
            .map(|i| i.name.as_str())
            .collect()
    }

    /// Several types sent to one target make one index whose mapping is the one
    /// `--multi-type merge` makes, in both modes; the documents follow.
    #[test]
    fn type_mapping_merges_types_sent_to_one_target() {
        let merged = plan(&source(), ProductVersion::os(3, 8), &Options::default());
        let want = find(&merged, MetadataKind::Index, "test_updates_deletes")
            .body
            .clone()
            .unwrap();
        for mode in [MultiTypeMode::Merge, MultiTypeMode::Split] {
            let opts = mapped(
                json!({"staticMappings": {"test_updates_deletes": {"type1": "both", "type2": "both"}}}),
                mode,
            );
            let items = plan(&source(), ProductVersion::os(3, 8), &opts);
            assert_eq!(index_names(&items), ["both"], "{mode:?}");
            let both = find(&items, MetadataKind::Index, "both");
            assert_eq!(both.body.as_ref(), Some(&want), "{mode:?}");
            assert_eq!(both.source_name.as_deref(), Some("test_updates_deletes"));
            assert!(
                both.notes
                    .transformations
                    .iter()
                    .any(|n| n.contains("mapping types type2, type1 merged")),
                "{:?}",
                both.notes
            );
            let r = DocumentRouting::new(&source(), &opts);
            assert_eq!(
                r.target_index("test_updates_deletes", Some("type1")),
                Some("both")
            );
            assert_eq!(
                r.target_index("test_updates_deletes", Some("type2")),
                Some("both")
            );
        }
        // Conflicting fields are reported as merge reports them.
        let mut s = source();
        s.indices[0].metadata["mappings"] = json!([{"a": {"properties": {"x": {"type": "long"}}}}, {"b": {"properties": {"x": {"type": "keyword"}}}}]);
        let opts = mapped(
            json!({"regexMappings": [{"sourceIndexPattern": "(.*)", "sourceTypePattern": ".*", "targetIndexPattern": "$1-all"}]}),
            MultiTypeMode::Split,
        );
        let items = plan(&s, ProductVersion::os(3, 8), &opts);
        let i = find(&items, MetadataKind::Index, "test_updates_deletes-all");
        assert_eq!(i.action, Action::Error);
        assert!(i.reasons[0].contains("field x"), "{:?}", i.reasons);
    }

    #[test]
    fn type_mapping_regex_routes_each_pair_and_drops_the_unmatched() {
        let opts = mapped(
            json!({"regexMappings": [
                {"sourceIndexPattern": "test_(.*)", "sourceTypePattern": "type(1)", "targetIndexPattern": "t$2-$1"}
            ]}),
            MultiTypeMode::Merge,
        );
        let items = plan(&source(), ProductVersion::es(6, 8), &opts);
        assert_eq!(index_names(&items), ["t1-updates_deletes"]);
        let t1 = find(&items, MetadataKind::Index, "t1-updates_deletes");
        assert_eq!(
            t1.body.as_ref().unwrap()["mappings"],
            json!({"_doc": {"properties": {"title": {"type": "text"}, "n": {"type": "long"}}}})
        );
        assert!(
            t1.notes.transformations.iter().any(|n| n.contains(
                "mapping type type2 of test_updates_deletes left out by TypeMappingSanitizationTransformerProvider"
            )),
            "{:?}",
            t1.notes
        );
        let r = DocumentRouting::new(&source(), &opts);
        assert_eq!(
            r.target_index("test_updates_deletes", Some("type1")),
            Some("t1-updates_deletes")
        );
        assert_eq!(r.target_index("test_updates_deletes", Some("type2")), None);
        assert!(r.type_mapped("test_updates_deletes"));
        assert!(r.includes("test_updates_deletes"));

        // Nothing matches: the index is not created, and says why.
        let none = mapped(json!({"regexMappings": []}), MultiTypeMode::Merge);
        let items = plan(&source(), ProductVersion::os(3, 8), &none);
        let i = find(&items, MetadataKind::Index, "test_updates_deletes");
        assert_eq!(i.action, Action::SkipExcluded);
        assert!(
            i.reasons[0].contains("every mapping type"),
            "{:?}",
            i.reasons
        );
        let r = DocumentRouting::new(&source(), &none);
        assert_eq!(r.per_type("test_updates_deletes"), Some(Vec::new()));
    }

    #[test]
    fn type_mapping_and_type_route_on_one_pair_conflict() {
        let mut opts = mapped(
            json!({"staticMappings": {"test_updates_deletes": {"type1": "a"}}}),
            MultiTypeMode::Merge,
        );
        opts.type_routes =
            Options::parse_type_routes(&["test_updates_deletes/type2=b".into()]).unwrap();
        let e = opts.with_type_mapping(&source()).unwrap_err();
        assert_eq!(
            e,
            TypeRouteError::Conflict {
                pair: "test_updates_deletes/type2".into(),
                explicit: Some("b".into()),
                mapped: None
            }
        );
        let text = e.to_string();
        assert!(
            text.contains("--type-route test_updates_deletes/type2=b"),
            "{text}"
        );
        assert!(
            text.contains("TypeMappingSanitizationTransformerProvider"),
            "{text}"
        );
        // A route for a pair the snapshot does not have is no conflict.
        opts.type_routes = Options::parse_type_routes(&["other/t=b".into()]).unwrap();
        let o = opts.with_type_mapping(&source()).unwrap();
        assert!(o.type_mapping.is_none());
        assert_eq!(
            o.type_route("test_updates_deletes", "type1"),
            Some(Some("a"))
        );
        assert_eq!(o.type_route("test_updates_deletes", "type2"), Some(None));
        assert_eq!(o.type_route("other", "t"), Some(Some("b")));
    }

    /// Two indices routed to one target make one index, mappings merged; a conflicting
    /// field is an error of both.
    #[test]
    fn indices_routed_to_one_target_are_merged() {
        let mut s = source();
        let mut second = es56_index();
        second.name = "test_other".into();
        second.metadata["mappings"] = json!([{"t9": {"properties": {"z": {"type": "keyword"}}}}]);
        second.metadata["aliases"] = json!({"b": {}});
        s.indices.insert(1, second);
        let opts = mapped(
            json!({"regexMappings": [{"sourceIndexPattern": "test_.*", "sourceTypePattern": ".*", "targetIndexPattern": "leftovers"}]}),
            MultiTypeMode::Merge,
        );
        let items = plan(&s, ProductVersion::os(3, 8), &opts);
        assert_eq!(index_names(&items), ["leftovers"]);
        let i = items
            .iter()
            .find(|i| i.name == "leftovers" && i.action == Action::Create)
            .unwrap();
        let body = i.body.as_ref().unwrap();
        assert_eq!(
            body["mappings"],
            json!({"properties": {"content": {"type": "text"}, "title": {"type": "text"}, "n": {"type": "long"}, "z": {"type": "keyword"}}})
        );
        assert_eq!(
            body["aliases"],
            json!({"a": {"filter": {"term": {"x": 1}}}, "b": {}})
        );
        let merged = items
            .iter()
            .find(|i| i.source_name.as_deref() == Some("test_other"))
            .unwrap();
        assert_eq!(merged.action, Action::SkipExcluded);
        assert!(
            merged.reasons[0].contains("merged into index leftovers"),
            "{:?}",
            merged.reasons
        );
        let r = DocumentRouting::new(&s, &opts);
        assert_eq!(r.target_index("test_other", Some("t9")), Some("leftovers"));

        s.indices[1].metadata["mappings"] =
            json!([{"t9": {"properties": {"n": {"type": "keyword"}}}}]);
        let items = plan(&s, ProductVersion::os(3, 8), &opts);
        let errors: Vec<&MetadataItem> =
            items.iter().filter(|i| i.action == Action::Error).collect();
        assert_eq!(errors.len(), 2, "{items:#?}");
        assert!(
            errors[0].reasons[0].contains("field n"),
            "{:?}",
            errors[0].reasons
        );
    }

    /// An index without types (Elasticsearch 7+) is routed as `_doc`, as the reference
    /// tool routes a document without `_type`.
    #[test]
    fn type_mapping_routes_typeless_indices_as_doc() {
        let s = SourceMetadata {
            version: Some(ProductVersion::es(7, 10)),
            indices: vec![
                SourceIndex {
                    name: "logs-2024".into(),
                    metadata: json!({"settings": {"index.number_of_shards": "1"},
                        "mappings": {"properties": {"m": {"type": "keyword"}}}}),
                },
                SourceIndex {
                    name: "bare".into(),
                    metadata: json!({"settings": {"index.number_of_shards": "1"}}),
                },
                SourceIndex {
                    name: "other".into(),
                    metadata: json!({"settings": {"index.number_of_shards": "1"}}),
                },
            ],
            ..SourceMetadata::default()
        };
        let opts = mapped(
            json!({"regexMappings": [
                {"sourceIndexPattern": "logs-(\\d+)", "sourceTypePattern": "_doc", "targetIndexPattern": "y$1"},
                {"sourceIndexPattern": "(bare)", "sourceTypePattern": "(_doc)", "targetIndexPattern": "$1$2"}
            ]}),
            MultiTypeMode::Merge,
        );
        let items = plan(&s, ProductVersion::os(2, 19), &opts);
        assert_eq!(index_names(&items), ["y2024", "bare_doc"]);
        assert_eq!(
            find(&items, MetadataKind::Index, "y2024")
                .body
                .as_ref()
                .unwrap()["mappings"],
            json!({"properties": {"m": {"type": "keyword"}}})
        );
        assert_eq!(
            find(&items, MetadataKind::Index, "other").action,
            Action::SkipExcluded
        );
        let r = DocumentRouting::new(&s, &opts);
        assert_eq!(r.target_index("logs-2024", None), Some("y2024"));
        assert_eq!(r.target_index("bare", None), Some("bare_doc"));
        assert_eq!(r.target_index("other", None), None);
    }

    #[test]
    fn conflicting_types_are_an_error_in_merge_mode() {
        let mut s = source();
        s.indices[0].metadata["mappings"] = json!([{"a": {"properties": {"x": {"type": "long"}}}}, {"b": {"properties": {"x": {"type": "keyword"}}}}]);
        let items = plan(&s, ProductVersion::os(3, 8), &Options::default());
        let i = find(&items, MetadataKind::Index, "test_updates_deletes");
        assert_eq!(i.action, Action::Error);
        assert!(i.reasons[0].contains("field x"), "{:?}", i.reasons);
    }

    #[test]
    fn allowlists() {
        let opts = Options {
            indices: Allowlist::parse(&[".kibana"]).unwrap(),
            legacy_templates: Allowlist::parse(&["regex:\\.ml-.*"]).unwrap(),
            ..Options::default()
        };
        let items = plan(&source(), ProductVersion::os(3, 8), &opts);
        assert_eq!(
            find(&items, MetadataKind::Index, ".kibana").action,
            Action::Create
        );
        assert_eq!(
            find(&items, MetadataKind::Index, "test_updates_deletes").action,
            Action::SkipExcluded
        );
        assert_eq!(
            find(&items, MetadataKind::LegacyTemplate, ".ml-meta").action,
            Action::Create
        );
        assert_eq!(
            find(&items, MetadataKind::LegacyTemplate, "posts").action,
            Action::SkipExcluded
        );
    }

    #[test]
    fn data_streams_by_mode_and_target() {
        let mut s = source();
        s.indices.push(SourceIndex {
            name: ".ds-logs-app-default-2024.01.01-000001".into(),
            metadata: json!({"settings": {"index.number_of_shards": "1", "index.hidden": "true"},
                             "mappings": [{"_doc": {"properties": {"@timestamp": {"type": "date"}}}}]}),
        });
        s.data_streams = vec![DataStreamInfo {
            name: "logs-app-default".into(),
            timestamp_field: "@timestamp".into(),
            indices: vec![".ds-logs-app-default-2024.01.01-000001".into()],
            system: false,
        }];
        let backing = ".ds-logs-app-default-2024.01.01-000001";
        // No template with data_stream matches: an error naming both ways out.
        let items = plan(&s, ProductVersion::os(2, 19), &Options::default());
        let ds = find(&items, MetadataKind::DataStream, "logs-app-default");
        assert_eq!(ds.action, Action::Error);
        assert!(
            ds.reasons[0].contains("--data-streams indices"),
            "{:?}",
            ds.reasons
        );
        assert_eq!(
            find(&items, MetadataKind::Index, backing).action,
            Action::SkipExcluded
        );
        // With one, the stream is created after the templates, before the indices.
        s.index_templates.push((
            "logs-app".into(),
            json!({"index_patterns": ["logs-app-*"], "data_stream": {}, "priority": 200}),
        ));
        let items = plan(&s, ProductVersion::os(2, 19), &Options::default());
        assert_eq!(
            find(&items, MetadataKind::DataStream, "logs-app-default").action,
            Action::Create
        );
        let kinds: Vec<MetadataKind> = items.iter().map(|i| i.kind).collect();
        let mut sorted = kinds.clone();
        sorted.sort();
        assert_eq!(kinds, sorted, "creation order");
        // A target without data streams blocks it.
        let items = plan(&s, ProductVersion::es(7, 8), &Options::default());
        assert_eq!(
            find(&items, MetadataKind::DataStream, "logs-app-default").action,
            Action::Blocked
        );
        // As indices: the backing index with the stream's name as its write alias.
        let opts = Options {
            data_streams: DataStreamMode::Indices,
            ..Options::default()
        };
        let items = plan(&s, ProductVersion::es(7, 8), &opts);
        assert!(items.iter().all(|i| i.kind != MetadataKind::DataStream));
        let b = find(&items, MetadataKind::Index, backing);
        assert_eq!(b.action, Action::Create);
        assert_eq!(
            b.body.as_ref().unwrap()["aliases"]["logs-app-default"],
            json!({"is_write_index": true})
        );
        // Routing follows the mode.
        let r = DocumentRouting::new(&s, &Options::default());
        assert_eq!(r.target_index(backing, None), Some("logs-app-default"));
        assert!(r.create_only(backing));
        let r = DocumentRouting::new(&s, &opts);
        assert_eq!(r.target_index(backing, None), Some(backing));
        assert!(!r.create_only(backing));
    }

    #[test]
    fn bad_metadata_is_an_error_item() {
        let mut s = source();
        s.indices[0].metadata["mappings"] = json!(["RFZMAA=="]);
        s.legacy_templates[0].1 = json!({"order": 1});
        let items = plan(&s, ProductVersion::os(3, 8), &Options::default());
        assert_eq!(
            find(&items, MetadataKind::Index, "test_updates_deletes").action,
            Action::Error
        );
        assert_eq!(
            find(&items, MetadataKind::LegacyTemplate, "posts").action,
            Action::Error
        );
    }

    /// `_source.mode` of a 9.x index created after `SOURCE_MAPPER_MODE_ATTRIBUTE_NOOP` had
    /// no effect there, so it is dropped with a note; earlier indices keep it.
    #[test]
    fn noop_source_mode_is_dropped_for_recent_indices_only() {
        let mapping = json!({"_source": {"mode": "synthetic"}, "properties": {}});
        for (created, kept) in [
            (json!("9039000"), false),
            (json!("9007000"), false),
            (json!("9006000"), true),
            (json!("8521000"), true),
            (json!(9_039_000), false),
        ] {
            let meta = json!({"settings": {"index.version.created": created}});
            let mut types = vec![("_doc".to_string(), mapping.clone())];
            let mut notes = Notes::default();
            drop_noop_source_mode(&meta, &mut types, &mut notes);
            assert_eq!(types[0].1 == mapping, kept, "{created}: {types:?}");
            assert_eq!(notes.transformations.is_empty(), kept, "{created}");
            if !kept {
                assert_eq!(types[0].1, json!({"properties": {}}));
            }
        }
    }

    /// The index's own `index.knn` reaches the mapping conversion: a `knn_vector` without
    /// `method` is indexed on Elasticsearch only where the source index had `index.knn: true`.
    #[test]
    fn knn_vector_without_method_follows_the_index_setting() {
        let index = |name: &str, knn: &str| SourceIndex {
            name: name.into(),
            metadata: json!({
                "settings": {"index.number_of_shards": "1", "index.knn": knn},
                "mappings": {"properties": {"v": {"type": "knn_vector", "dimension": 3}}}
            }),
        };
        let src = SourceMetadata {
            version: Some(ProductVersion::os(2, 19)),
            legacy_templates: Vec::new(),
            component_templates: Vec::new(),
            index_templates: vec![(
                "vt".into(),
                json!({"index_patterns": ["v*"], "template": {"settings": {"index": {"knn": true}},
                    "mappings": {"properties": {"v": {"type": "knn_vector", "dimension": 3}}}}}),
            )],
            indices: vec![index("graph", "true"), index("exact", "false")],
            data_streams: Vec::new(),
        };
        let items = plan(&src, ProductVersion::es(8, 15), &Options::default());
        let v = |kind, name| {
            let body = find(&items, kind, name).body.clone().unwrap();
            let body = if kind == MetadataKind::IndexTemplate {
                body["template"].clone()
            } else {
                body
            };
            body["mappings"]["properties"]["v"].clone()
        };
        let indexed = json!({"type": "dense_vector", "dims": 3, "index": true,
            "similarity": "l2_norm", "index_options": {"type": "hnsw"}});
        assert_eq!(v(MetadataKind::Index, "graph"), indexed);
        assert_eq!(v(MetadataKind::IndexTemplate, "vt"), indexed);
        assert_eq!(
            v(MetadataKind::Index, "exact"),
            json!({"type": "dense_vector", "dims": 3, "index": false})
        );
    }
}
