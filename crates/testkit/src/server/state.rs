//! What the server holds: indices (settings, mappings, aliases, documents with sequence numbers),
//! templates, snapshot repositories and snapshots; and the write rules Elasticsearch applies
//! (create conflicts, compare-and-set on `_seq_no`/`_primary_term`, external versions).

use std::collections::BTreeMap;

use bytes::Bytes;
use serde_json::{json, Map, Value};

use super::error::EsError;
use super::version::Dialect;

/// One stored document.
#[derive(Clone, Debug)]
pub(crate) struct Doc {
    pub source: Bytes,
    pub seq_no: i64,
    pub primary_term: i64,
    pub version: i64,
    pub routing: Option<String>,
}

/// One index.
#[derive(Debug)]
pub(crate) struct Index {
    pub uuid: String,
    /// Flat `index.*` keys → string (or array of strings) values.
    pub settings: BTreeMap<String, Value>,
    pub mappings: Value,
    pub aliases: BTreeMap<String, Value>,
    /// The single mapping type (ES 6), once known.
    pub type_name: Option<String>,
    pub docs: BTreeMap<String, Doc>,
    pub next_seq_no: i64,
    pub primary_term: i64,
    /// Documents accepted but not kept (`discard_documents`).
    pub discarded: u64,
}

impl Index {
    pub fn doc_count(&self) -> u64 {
        self.docs.len() as u64 + self.discarded
    }

    /// False when the mapping says `"_source": {"enabled": false}`: as OpenSearch, the
    /// index then returns no `_source` (documents still count and are searchable).
    pub fn source_enabled(&self) -> bool {
        source_enabled(&self.mappings, self.type_name.as_deref())
    }
}

/// Whether `mappings` as stored (typeless, or `{TYPE: {...}}` with `type_name`) keep `_source`.
pub(crate) fn source_enabled(mappings: &Value, type_name: Option<&str>) -> bool {
    let root = match type_name {
        Some(t) => mappings.get(t).unwrap_or(mappings),
        None => mappings,
    };
    !root
        .pointer("/_source/enabled")
        .is_some_and(|e| e == &Value::Bool(false) || e == "false")
}

/// A snapshot the server reported.
#[derive(Clone, Debug)]
pub(crate) struct SnapshotRecord {
    pub uuid: String,
    pub indices: Vec<String>,
    pub start_ms: i64,
    pub end_ms: Option<i64>,
    pub failure: Option<String>,
}

/// Everything behind the server's lock.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub indices: BTreeMap<String, Index>,
    pub legacy_templates: BTreeMap<String, Value>,
    pub component_templates: BTreeMap<String, Value>,
    pub index_templates: BTreeMap<String, Value>,
    pub repositories: BTreeMap<String, Value>,
    pub snapshots: BTreeMap<(String, String), SnapshotRecord>,
    /// Cluster settings set through `PUT _cluster/settings` (flat keys).
    pub persistent_settings: BTreeMap<String, Value>,
    pub transient_settings: BTreeMap<String, Value>,
    pub uuid_counter: u64,
    /// Data streams by name. Each is also an alias (write index: its newest backing
    /// index) so that searches and writes by its name resolve like an alias's.
    pub data_streams: BTreeMap<String, DataStreamState>,
    /// Open points in time by id.
    pub pits: BTreeMap<String, Pit>,
    /// Open scroll contexts by scroll id.
    pub scrolls: BTreeMap<String, Scroll>,
}

/// A point in time: the documents of its indices as they were when it was opened, kept
/// until it is closed or not used for its keep-alive.
#[derive(Debug)]
pub(crate) struct Pit {
    pub indices: Vec<(String, BTreeMap<String, Doc>)>,
    /// Per index (as `indices`), each document's `_shard_doc` in this point in time: its
    /// rank among the index's live documents when the point in time was opened (the
    /// index's number in the high 32 bits). As a real cluster's (the shard's ordinal and
    /// the Lucene doc id), it is stable within one point in time only: a point in time
    /// opened after a delete (or a merge) numbers the later documents anew.
    pub shard_doc: Vec<BTreeMap<String, i64>>,
    pub expires: std::time::Instant,
}

/// A scroll context: every hit of its search, in order, as the documents were when it was
/// opened; pages are taken from `next` on. Kept until cleared or not used for its keep-alive.
#[derive(Debug)]
pub(crate) struct Scroll {
    pub hits: Vec<ScrollHit>,
    pub next: usize,
    pub size: usize,
    pub expires: std::time::Instant,
    pub opts: PageOpts,
}

/// One hit held by a scroll context.
#[derive(Debug)]
pub(crate) struct ScrollHit {
    pub index: String,
    pub id: String,
    pub doc: Doc,
    pub sort: Vec<Option<Value>>,
}

/// What each hit of a search page shows.
#[derive(Clone, Debug, Default)]
pub(crate) struct PageOpts {
    pub with_source: bool,
    pub seq_no: bool,
    pub with_version: bool,
    /// A sort was asked: hits carry `sort` and no score.
    pub sorted: bool,
    pub doc_values: Vec<crate::server::doc_values::Requested>,
}

/// A data stream the server holds.
#[derive(Clone, Debug)]
pub(crate) struct DataStreamState {
    pub timestamp_field: String,
    /// Backing indices, oldest first.
    pub indices: Vec<String>,
    /// The index template it was created from.
    pub template: String,
}

/// What a write operation does.
#[derive(Debug)]
pub(crate) enum OpKind {
    Index,
    Create,
    Delete,
    /// Partial update with `doc` (no scripts).
    Update {
        doc: Option<Value>,
        upsert: Option<Value>,
        doc_as_upsert: bool,
        detect_noop: bool,
    },
}

/// One write (from `_bulk` or the document APIs), its index already resolved.
#[derive(Debug)]
pub(crate) struct WriteOp {
    pub kind: OpKind,
    pub id: String,
    pub type_name: Option<String>,
    pub source: Bytes,
    pub routing: Option<String>,
    pub if_seq_no: Option<i64>,
    pub if_primary_term: Option<i64>,
    pub version: Option<i64>,
    pub external_gte: bool,
}

/// A successful write.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Written {
    pub result: &'static str,
    pub status: u16,
    pub version: i64,
    pub seq_no: i64,
    pub primary_term: i64,
}

fn conflict(index: &Index, name: &str, reason: String) -> EsError {
    EsError::new(409, "version_conflict_engine_exception", reason)
        .with("index_uuid", index.uuid.clone())
        .with("shard", "0")
        .with("index", name)
}

/// Deep merge: objects merge key by key, anything else is replaced by `over`.
pub(crate) fn merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(k) {
                    Some(slot) => merge(slot, v),
                    None => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

impl Index {
    /// Applies one write under Elasticsearch's rules. `discard` accepts index/create without keeping.
    pub fn apply(
        &mut self,
        name: &str,
        op: WriteOp,
        discard: bool,
        dialect: &Dialect,
    ) -> Result<Written, EsError> {
        if dialect.typed() {
            if let Some(t) = &op.type_name {
                match &self.type_name {
                    Some(existing) if existing != t && dialect.multi_type() => {
                        return Err(EsError::bad_request(format!(
                            "testkit server: index [{name}] holds documents of type [{existing}] only; a document of type [{t}] is not held (Elasticsearch 5 would keep it beside them)"
                        )));
                    }
                    Some(existing) if existing != t => {
                        return Err(EsError::bad_request(format!(
                            "Rejecting mapping update to [{name}] as the final mapping would have more than 1 type: [{existing}, {t}]"
                        )));
                    }
                    Some(_) => {}
                    None => self.type_name = Some(t.clone()),
                }
            }
        }
        if discard && matches!(op.kind, OpKind::Index | OpKind::Create) {
            let seq_no = self.next_seq_no;
            self.next_seq_no += 1;
            self.discarded += 1;
            return Ok(Written {
                result: "created",
                status: 201,
                version: op.version.unwrap_or(1),
                seq_no,
                primary_term: self.primary_term,
            });
        }
        let id = op.id.as_str();
        let current = self.docs.get(id);
        if op.if_seq_no.is_some() || op.if_primary_term.is_some() {
            let (s, t) = (op.if_seq_no.unwrap_or(-2), op.if_primary_term.unwrap_or(0));
            match current {
                None => {
                    return Err(conflict(self, name, format!(
                        "[{id}]: version conflict, required seqNo [{s}], primary term [{t}]. but no document was found"
                    )))
                }
                Some(d) if d.seq_no != s || d.primary_term != t => {
                    return Err(conflict(self, name, format!(
                        "[{id}]: version conflict, required seqNo [{s}], primary term [{t}]. current document has seqNo [{}] and primary term [{}]",
                        d.seq_no, d.primary_term
                    )))
                }
                Some(_) => {}
            }
        }
        if let (Some(v), Some(d)) = (op.version, current) {
            let stale = if op.external_gte {
                d.version > v
            } else {
                d.version >= v
            };
            if stale {
                return Err(conflict(
                    self,
                    name,
                    format!(
                        "[{id}]: version conflict, current version [{}] is higher or equal to the one provided [{v}]",
                        d.version
                    ),
                ));
            }
        }
        let primary_term = self.primary_term;
        let next_version = |cur: Option<&Doc>| {
            op.version
                .unwrap_or(cur.map_or(1, |d| d.version.saturating_add(1)))
        };
        match op.kind {
            OpKind::Create | OpKind::Index => {
                super::fields::check_document(&self.mappings, &op.source)?;
                if matches!(op.kind, OpKind::Create) {
                    if let Some(d) = current {
                        return Err(conflict(
                            self,
                            name,
                            format!(
                                "[{id}]: version conflict, document already exists (current version [{}])",
                                d.version
                            ),
                        ));
                    }
                }
                let version = next_version(current);
                let created = current.is_none();
                let seq_no = self.next_seq_no;
                self.next_seq_no += 1;
                self.docs.insert(
                    op.id,
                    Doc {
                        source: op.source,
                        seq_no,
                        primary_term,
                        version,
                        routing: op.routing,
                    },
                );
                Ok(Written {
                    result: if created { "created" } else { "updated" },
                    status: if created { 201 } else { 200 },
                    version,
                    seq_no,
                    primary_term,
                })
            }
            OpKind::Delete => {
                let version = next_version(current);
                let seq_no = self.next_seq_no;
                self.next_seq_no += 1;
                let found = self.docs.remove(id).is_some();
                Ok(Written {
                    result: if found { "deleted" } else { "not_found" },
                    status: if found { 200 } else { 404 },
                    version,
                    seq_no,
                    primary_term,
                })
            }
            OpKind::Update {
                doc,
                upsert,
                doc_as_upsert,
                detect_noop,
            } => {
                let new_source = match current {
                    Some(d) => {
                        let mut v: Value = serde_json::from_slice(&d.source).map_err(|e| {
                            EsError::new(500, "exception", format!("stored source unreadable: {e}"))
                        })?;
                        let before = v.clone();
                        if let Some(doc) = &doc {
                            merge(&mut v, doc);
                        }
                        if detect_noop && v == before {
                            return Ok(Written {
                                result: "noop",
                                status: 200,
                                version: d.version,
                                seq_no: d.seq_no,
                                primary_term: d.primary_term,
                            });
                        }
                        v
                    }
                    None => match (upsert, doc_as_upsert, doc) {
                        (Some(u), _, _) => u,
                        (None, true, Some(d)) => d,
                        _ => {
                            return Err(EsError::new(
                                404,
                                "document_missing_exception",
                                format!("[_doc][{id}]: document missing"),
                            )
                            .with("index_uuid", self.uuid.clone())
                            .with("shard", "0")
                            .with("index", name));
                        }
                    },
                };
                let version = next_version(current);
                let created = current.is_none();
                let routing = op
                    .routing
                    .or_else(|| current.and_then(|d| d.routing.clone()));
                let seq_no = self.next_seq_no;
                self.next_seq_no += 1;
                self.docs.insert(
                    op.id,
                    Doc {
                        source: Bytes::from(serde_json::to_vec(&new_source).unwrap_or_default()),
                        seq_no,
                        primary_term,
                        version,
                        routing,
                    },
                );
                Ok(Written {
                    result: if created { "created" } else { "updated" },
                    status: if created { 201 } else { 200 },
                    version,
                    seq_no,
                    primary_term,
                })
            }
        }
    }
}

fn merge_key(target: &mut Value, from: &Value, key: &str) {
    if let Some(v) = from.get(key) {
        merge(target, v);
    }
}

/// Settings flattened to dotted keys with string (or array of strings) values; `null` removes a
/// key. Errors when `settings` is neither an object nor null.
pub(crate) fn flatten(settings: &Value) -> Result<BTreeMap<String, Value>, EsError> {
    fn walk(prefix: &str, v: &Value, out: &mut BTreeMap<String, Value>) {
        match v {
            Value::Object(m) => {
                for (k, v) in m {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&key, v, out);
                }
            }
            Value::Null => {
                out.remove(prefix);
            }
            Value::Array(a) => {
                let items = a.iter().map(|x| Value::String(scalar_string(x))).collect();
                out.insert(prefix.to_string(), Value::Array(items));
            }
            other => {
                out.insert(prefix.to_string(), Value::String(scalar_string(other)));
            }
        }
    }
    if !(settings.is_object() || settings.is_null()) {
        return Err(EsError::new(
            400,
            "settings_exception",
            "Failed to load settings from [settings]: expected an object",
        ));
    }
    let mut flat = BTreeMap::new();
    walk("", settings, &mut flat);
    Ok(flat)
}

/// Settings as Elasticsearch stores them: flat `index.*` keys with string values.
pub(crate) fn flatten_settings(settings: &Value) -> Result<BTreeMap<String, Value>, EsError> {
    Ok(flatten(settings)?
        .into_iter()
        .map(|(k, v)| {
            if k.starts_with("index.") {
                (k, v)
            } else {
                (format!("index.{k}"), v)
            }
        })
        .collect())
}

fn scalar_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Flat keys → nested objects (`index.a.b` → `{"index":{"a":{"b":..}}}`).
pub(crate) fn nest_settings(flat: &BTreeMap<String, Value>) -> Value {
    let mut root = Map::new();
    for (k, v) in flat {
        let parts: Vec<&str> = k.split('.').collect();
        let mut cur = &mut root;
        for p in &parts[..parts.len() - 1] {
            let entry = cur
                .entry(p.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if !entry.is_object() {
                *entry = Value::Object(Map::new());
            }
            cur = entry.as_object_mut().expect("just made an object");
        }
        cur.insert(parts[parts.len() - 1].to_string(), v.clone());
    }
    Value::Object(root)
}

/// Settings that only the cluster itself may set.
const PRIVATE_SETTINGS: &[&str] = &[
    "index.uuid",
    "index.version.created",
    "index.version.upgraded",
    "index.provided_name",
    "index.creation_date",
    "index.routing_num_shards",
];

pub(crate) fn check_settings(
    flat: &BTreeMap<String, Value>,
    dialect: &Dialect,
) -> Result<(), EsError> {
    for k in flat.keys() {
        super::fields::check_setting(k, dialect)?;
        if PRIVATE_SETTINGS.contains(&k.as_str()) || k.starts_with("index.version.") {
            return Err(EsError::bad_request(format!(
                "private index setting [{k}] can not be set explicitly"
            )));
        }
    }
    Ok(())
}

const ROOT_MAPPING_KEYS: &[&str] = &[
    "properties",
    "dynamic",
    "_source",
    "_meta",
    "_routing",
    "dynamic_templates",
    "date_detection",
    "numeric_detection",
    "dynamic_date_formats",
    "runtime",
    "_field_names",
    "enabled",
    "_data_stream_timestamp",
    "subobjects",
    "_size",
    "_doc_count",
];

fn mapper_error(reason: String) -> EsError {
    EsError::new(400, "mapper_parsing_exception", reason)
}

fn check_properties(props: &Value, path: &str, dialect: &Dialect) -> Result<(), EsError> {
    let Some(m) = props.as_object() else {
        return Ok(());
    };
    for (name, field) in m {
        let full = if path.is_empty() {
            name.clone()
        } else {
            format!("{path}.{name}")
        };
        super::fields::check_field(name, &full, field, dialect)?;
        if let Some(p) = field.get("properties") {
            check_properties(p, &full, dialect)?;
        }
        if let Some(f) = field.get("fields") {
            check_properties(f, &full, dialect)?;
        }
    }
    Ok(())
}

fn check_root_mapping(root: &Value, typed: bool, dialect: &Dialect) -> Result<(), EsError> {
    let Some(m) = root.as_object() else {
        return Err(mapper_error(
            "Failed to parse mapping: expected an object".into(),
        ));
    };
    let mut unsupported = Vec::new();
    for (k, v) in m {
        if k == "_all" && typed {
            if v.get("enabled").and_then(Value::as_bool) == Some(true) {
                return Err(mapper_error(
                    "[_all] is disabled since 6.0: use [copy_to] on mapping fields instead".into(),
                ));
            }
            continue;
        }
        if !ROOT_MAPPING_KEYS.contains(&k.as_str()) {
            unsupported.push(format!("{k} : {v}"));
        }
    }
    if !unsupported.is_empty() {
        return Err(mapper_error(format!(
            "Root mapping definition has unsupported parameters:  [{}]",
            unsupported.join(", ")
        )));
    }
    if let Some(p) = m.get("properties") {
        check_properties(p, "", dialect)?;
    }
    Ok(())
}

/// Validates mappings for the dialect and returns them as stored, with the ES 6 type name.
pub(crate) fn check_mappings(
    index: &str,
    mappings: &Value,
    dialect: &Dialect,
    include_type_name: Option<bool>,
) -> Result<(Value, Option<String>), EsError> {
    let Some(m) = mappings.as_object() else {
        if mappings.is_null() {
            return Ok((json!({}), None));
        }
        return Err(mapper_error(
            "Failed to parse mapping: expected an object".into(),
        ));
    };
    if m.is_empty() {
        return Ok((json!({}), None));
    }
    let looks_typeless = m.keys().any(|k| ROOT_MAPPING_KEYS.contains(&k.as_str()));
    if dialect.typed() {
        if looks_typeless || include_type_name == Some(false) {
            if include_type_name != Some(false) {
                return Err(mapper_error(format!(
                    "Root mapping definition has unsupported parameters (mappings need a type in {}; or pass include_type_name=false)",
                    dialect.number
                )));
            }
            check_root_mapping(mappings, true, dialect)?;
            return Ok((json!({ "_doc": mappings }), Some("_doc".into())));
        }
        if m.len() > 1 && dialect.multi_type() {
            // ES 5.x keeps every type of the index in its mapping. The server holds the
            // documents of the first type only: a write of another type is refused
            // (`Index::apply`), which a real 5.x would accept.
            for body in m.values() {
                check_root_mapping(body, true, dialect)?;
            }
            let first = m.keys().find(|t| *t != "_default_").cloned();
            return Ok((mappings.clone(), first));
        }
        if m.len() > 1 {
            let names: Vec<&str> = m.keys().map(String::as_str).collect();
            return Err(EsError::bad_request(format!(
                "Rejecting mapping update to [{index}] as the final mapping would have more than 1 type: [{}]",
                names.join(", ")
            )));
        }
        let (t, body) = m.iter().next().expect("one entry");
        check_root_mapping(body, true, dialect)?;
        return Ok((mappings.clone(), Some(t.clone())));
    }
    if include_type_name == Some(true) && m.len() == 1 && !looks_typeless {
        let body = m.values().next().expect("one entry");
        check_root_mapping(body, false, dialect)?;
        return Ok((body.clone(), None));
    }
    check_root_mapping(mappings, false, dialect)?;
    Ok((mappings.clone(), None))
}

/// Elasticsearch's index name rules.
pub(crate) fn check_index_name(name: &str) -> Result<(), EsError> {
    let bad = |why: &str| {
        Err(EsError::new(
            400,
            "invalid_index_name_exception",
            format!("Invalid index name [{name}], {why}"),
        )
        .with("index", name))
    };
    if name.is_empty() || name == "." || name == ".." {
        return bad("must not be empty, '.' or '..'");
    }
    if name.len() > 255 {
        return bad("index name is too long");
    }
    if name.chars().any(|c| c.is_uppercase()) {
        return bad("must be lowercase");
    }
    if name.starts_with(['_', '-', '+']) {
        return bad("must not start with '_', '-', or '+'");
    }
    if name.chars().any(|c| {
        matches!(
            c,
            '\\' | '/' | '*' | '?' | '"' | '<' | '>' | '|' | ' ' | ',' | '#' | ':'
        )
    }) {
        return bad(
            "must not contain the following characters [ , \", *, \\, <, |, ,, >, /, ?, #, :]",
        );
    }
    Ok(())
}

/// A data stream's backing index name: `.ds-<stream>-<yyyy.MM.dd>-<generation, 6 digits>`
/// on Elasticsearch 7.11+ (the date of creation, UTC), `.ds-<stream>-<generation>` before
/// and on OpenSearch (see `Dialect::dated_backing_indices`).
pub(crate) fn backing_index_name(stream: &str, generation: u64, dialect: &Dialect) -> String {
    if !dialect.dated_backing_indices() {
        return format!(".ds-{stream}-{generation:06}");
    }
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400) as i64;
    // days since 1970-01-01 → civil date (proleptic Gregorian, H. Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(".ds-{stream}-{year:04}.{month:02}.{day:02}-{generation:06}")
}

/// `*`-only glob matching, as index patterns use. The test server keeps its own matcher
/// rather than the product's `migrate::wildcard`: it must not depend on the code it tests.
pub(crate) fn glob(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let mut rest = name;
    for (i, p) in parts.iter().enumerate() {
        if i == 0 {
            match rest.strip_prefix(p) {
                Some(r) => rest = r,
                None => return false,
            }
        } else if i == parts.len() - 1 {
            return rest.ends_with(p);
        } else {
            match rest.find(p) {
                Some(pos) => rest = &rest[pos + p.len()..],
                None => return false,
            }
        }
    }
    true
}

pub(crate) fn patterns_of(template: &Value) -> Vec<String> {
    match template
        .get("index_patterns")
        .or_else(|| template.get("template"))
    {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

impl State {
    pub fn next_uuid(&mut self) -> String {
        self.uuid_counter += 1;
        // 22 characters like Elasticsearch's base64 UUIDs; deterministic per server
        format!("tk{:020}", self.uuid_counter)
    }

    /// An id for a document written without one (20 characters, like Elasticsearch's).
    pub fn next_auto_id(&mut self) -> String {
        self.uuid_counter += 1;
        format!("auto{:016}", self.uuid_counter)
    }

    /// Creates an index from a create-index body (`settings`, `mappings`, `aliases`), with the
    /// matching templates applied first.
    pub fn create_index(
        &mut self,
        name: &str,
        body: &Value,
        dialect: &Dialect,
        include_type_name: Option<bool>,
    ) -> Result<(), EsError> {
        check_index_name(name)?;
        if let Some(existing) = self.indices.get(name) {
            return Err(EsError::new(
                400,
                "resource_already_exists_exception",
                format!("index [{name}/{}] already exists", existing.uuid),
            )
            .with("index_uuid", existing.uuid.clone())
            .with("index", name));
        }
        if self.indices.values().any(|i| i.aliases.contains_key(name)) {
            return Err(EsError::new(
                400,
                "invalid_index_name_exception",
                format!("Invalid index name [{name}], already exists as alias"),
            )
            .with("index", name));
        }
        if !(body.is_object() || body.is_null()) {
            return Err(EsError::parse("create index body must be an object"));
        }
        for k in body.as_object().into_iter().flat_map(|m| m.keys()) {
            if !["settings", "mappings", "aliases"].contains(&k.as_str()) {
                return Err(EsError::parse(format!(
                    "unknown key [{k}] for create index"
                )));
            }
        }
        let req_settings = flatten_settings(body.get("settings").unwrap_or(&Value::Null))?;
        check_settings(&req_settings, dialect)?;
        let (tpl_settings, mut mappings, mut aliases) = self.template_defaults(name);
        let mut settings = flatten_settings(&tpl_settings)?;
        settings.extend(req_settings);
        if let Some(m) = body.get("mappings") {
            merge(&mut mappings, m);
        }
        let (mappings, type_name) = check_mappings(name, &mappings, dialect, include_type_name)?;
        if let Some(a) = body.get("aliases") {
            if !a.is_object() {
                return Err(EsError::parse("aliases must be an object"));
            }
            // a requested alias replaces a template's alias of the same name whole
            overlay_aliases(&mut aliases, Some(a));
        }
        let aliases: BTreeMap<String, Value> = aliases
            .as_object()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        if let Some(a) = aliases
            .keys()
            .find(|a| self.indices.contains_key(*a) || *a == name)
        {
            return Err(EsError::new(
                400,
                "invalid_alias_name_exception",
                format!("Invalid alias name [{a}]: an index or data stream exists with the same name as the alias"),
            ));
        }
        let uuid = self.next_uuid();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let shards_default = if dialect.typed() { "5" } else { "1" };
        let defaults = [
            ("index.number_of_shards", shards_default.to_string()),
            ("index.number_of_replicas", "1".to_string()),
        ];
        for (k, v) in defaults {
            settings.entry(k.to_string()).or_insert(Value::String(v));
        }
        settings.insert("index.uuid".into(), Value::String(uuid.clone()));
        settings.insert("index.creation_date".into(), Value::String(now.to_string()));
        settings.insert(
            "index.provided_name".into(),
            Value::String(name.to_string()),
        );
        settings.insert(
            "index.version.created".into(),
            Value::String(dialect.version_id().to_string()),
        );
        self.indices.insert(
            name.to_string(),
            Index {
                uuid,
                settings,
                mappings,
                aliases,
                type_name,
                docs: BTreeMap::new(),
                next_seq_no: 0,
                primary_term: 1,
                discarded: 0,
            },
        );
        Ok(())
    }

    /// Names of concrete indices an expression (comma list, `*` wildcards, aliases, `_all`) covers.
    /// Missing concrete names are an error unless `lenient`.
    pub fn resolve(&self, expr: &str, lenient: bool) -> Result<Vec<String>, EsError> {
        self.resolve_expanding(expr, lenient, false)
    }

    /// Whether a wildcard `pattern` reaches index `name`: a hidden index (`index.hidden`,
    /// and in this server every dot-prefixed name) only with `expand_wildcards=hidden`
    /// (`all`), or when both the pattern and the name start with `.` (Elasticsearch's
    /// `IndexAbstractionResolver.isVisibleDueToImplicitHidden`).
    pub fn wildcard_reaches(&self, pattern: &str, name: &str, idx: &Index, hidden: bool) -> bool {
        let is_hidden = name.starts_with('.')
            || idx.settings.get("index.hidden").and_then(Value::as_str) == Some("true");
        let visible = !is_hidden || hidden || (pattern.starts_with('.') && name.starts_with('.'));
        visible && glob(pattern, name)
    }

    /// [`State::resolve`] with `expand_wildcards` including `hidden` when `hidden`.
    pub fn resolve_expanding(
        &self,
        expr: &str,
        lenient: bool,
        hidden: bool,
    ) -> Result<Vec<String>, EsError> {
        let mut out: Vec<String> = Vec::new();
        let push = |n: &String, out: &mut Vec<String>| {
            if !out.contains(n) {
                out.push(n.clone());
            }
        };
        for part in expr.split(',').filter(|p| !p.is_empty()) {
            if let Some(excluded) = part.strip_prefix('-') {
                out.retain(|n| !glob(excluded, n));
                continue;
            }
            if part == "_all" || part.contains('*') {
                let pat = if part == "_all" { "*" } else { part };
                for (name, idx) in &self.indices {
                    if self.wildcard_reaches(pat, name, idx, hidden)
                        || idx.aliases.keys().any(|a| glob(pat, a))
                    {
                        push(name, &mut out);
                    }
                }
                continue;
            }
            if self.indices.contains_key(part) {
                push(&part.to_string(), &mut out);
                continue;
            }
            let mut found = false;
            for (name, idx) in &self.indices {
                if idx.aliases.contains_key(part) {
                    push(name, &mut out);
                    found = true;
                }
            }
            if !found && !lenient {
                return Err(EsError::index_not_found(part));
            }
        }
        Ok(out)
    }

    /// The concrete index a write to `name` goes to (an index, or an alias with one write index).
    pub fn write_target(&self, name: &str) -> Result<Option<String>, EsError> {
        if self.indices.contains_key(name) {
            return Ok(Some(name.to_string()));
        }
        let holders: Vec<(&String, &Index)> = self
            .indices
            .iter()
            .filter(|(_, i)| i.aliases.contains_key(name))
            .collect();
        match holders.len() {
            0 => Ok(None),
            1 => Ok(Some(holders[0].0.clone())),
            _ => {
                let writers: Vec<&String> = holders
                    .iter()
                    .filter(|(_, i)| {
                        i.aliases[name]
                            .get("is_write_index")
                            .and_then(Value::as_bool)
                            == Some(true)
                    })
                    .map(|(n, _)| *n)
                    .collect();
                if writers.len() == 1 {
                    Ok(Some(writers[0].clone()))
                } else {
                    Err(EsError::bad_request(format!(
                        "no write index is defined for alias [{name}]. The write index may be explicitly disabled using is_write_index=false or the alias points to multiple indices without one being designated as a write index"
                    )))
                }
            }
        }
    }

    /// `PUT _data_stream/<name>`: needs a composable template with a `data_stream`
    /// section matching the name; creates the first backing index from it.
    pub fn create_data_stream(&mut self, name: &str, dialect: &Dialect) -> Result<(), EsError> {
        if self.data_streams.contains_key(name) {
            return Err(EsError::new(
                400,
                "resource_already_exists_exception",
                format!("data_stream [{name}] already exists"),
            ));
        }
        check_index_name(name)?;
        if self.indices.contains_key(name)
            || self.indices.values().any(|i| i.aliases.contains_key(name))
        {
            return Err(EsError::bad_request(format!(
                "data stream [{name}] conflicts with an existing index or alias"
            )));
        }
        let template = self
            .index_templates
            .iter()
            .filter(|(_, t)| patterns_of(t).iter().any(|p| glob(p, name)))
            .max_by_key(|(_, t)| t.get("priority").and_then(Value::as_i64).unwrap_or(0))
            .filter(|(_, t)| t.get("data_stream").is_some_and(Value::is_object))
            .map(|(n, t)| (n.clone(), t.clone()));
        let Some((tname, tpl)) = template else {
            return Err(EsError::bad_request(format!(
                "no matching index template found for data stream [{name}]"
            )));
        };
        let timestamp_field = tpl["data_stream"]
            .get("timestamp_field")
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("@timestamp")
            .to_string();
        let backing = self.create_backing_index(name, 1, dialect)?;
        self.data_streams.insert(
            name.to_string(),
            DataStreamState {
                timestamp_field,
                indices: vec![backing],
                template: tname,
            },
        );
        Ok(())
    }

    /// A data stream's backing index of `generation`, from the stream's templates: hidden
    /// (`index.hidden`, as every backing index is), the stream's write index.
    fn create_backing_index(
        &mut self,
        stream: &str,
        generation: u64,
        dialect: &Dialect,
    ) -> Result<String, EsError> {
        let (mut settings, mappings, _) = self.template_defaults(stream);
        if dialect.hidden_indices() {
            merge(&mut settings, &json!({"index": {"hidden": "true"}}));
        }
        let backing = backing_index_name(stream, generation, dialect);
        let body = json!({"settings": settings, "mappings": mappings,
                          "aliases": {stream: {"is_write_index": true}}});
        self.create_index(&backing, &body, dialect, None)?;
        Ok(backing)
    }

    /// `POST <stream>/_rollover` on a data stream: a new backing index of the next
    /// generation becomes the write index; the old ones stay (searched, not written).
    pub fn rollover_data_stream(
        &mut self,
        name: &str,
        dialect: &Dialect,
    ) -> Result<(String, String), EsError> {
        let Some(ds) = self.data_streams.get(name) else {
            return Err(EsError::bad_request(format!(
                "testkit: rollover is implemented for data streams only, and [{name}] is none"
            )));
        };
        let old = ds.indices.last().cloned().unwrap_or_default();
        let generation = ds.indices.len() as u64 + 1;
        if let Some(i) = self.indices.get_mut(&old) {
            i.aliases
                .insert(name.to_string(), json!({"is_write_index": false}));
        }
        let new = self.create_backing_index(name, generation, dialect)?;
        if let Some(ds) = self.data_streams.get_mut(name) {
            ds.indices.push(new.clone());
        }
        Ok((old, new))
    }

    /// The data stream `index` backs, if any.
    pub fn stream_of(&self, index: &str) -> Option<&str> {
        self.data_streams
            .iter()
            .find(|(_, d)| d.indices.iter().any(|i| i == index))
            .map(|(n, _)| n.as_str())
    }

    /// The index template with a `data_stream` section a new name `name` would match (the
    /// highest priority one matching must have the section), when the dialect has streams.
    pub fn stream_template_for(&self, name: &str, dialect: &Dialect) -> bool {
        dialect.data_streams()
            && self
                .index_templates
                .values()
                .filter(|t| patterns_of(t).iter().any(|p| glob(p, name)))
                .max_by_key(|t| t.get("priority").and_then(Value::as_i64).unwrap_or(0))
                .is_some_and(|t| t.get("data_stream").is_some_and(Value::is_object))
    }

    /// A write to data stream `name`: only `create`, with the timestamp field.
    pub fn check_data_stream_write(&self, name: &str, op: &WriteOp) -> Result<(), EsError> {
        let Some(ds) = self.data_streams.get(name) else {
            return Ok(());
        };
        if !matches!(op.kind, OpKind::Create) {
            return Err(EsError::bad_request(format!(
                "only write ops with an op_type of create are allowed in data streams (data stream [{name}])"
            )));
        }
        let doc: Value = serde_json::from_slice(&op.source).unwrap_or(Value::Null);
        let has_ts = ds
            .timestamp_field
            .split('.')
            .try_fold(&doc, |v, k| v.get(k))
            .is_some_and(|v| !v.is_null());
        if !has_ts {
            return Err(EsError::new(
                400,
                "mapper_parsing_exception",
                format!(
                    "data stream timestamp field [{}] is missing",
                    ds.timestamp_field
                ),
            ));
        }
        Ok(())
    }

    /// Settings, mappings and aliases the templates give a new index named `name`.
    pub fn template_defaults(&self, name: &str) -> (Value, Value, Value) {
        let mut settings = json!({});
        let mut mappings = json!({});
        let mut aliases = json!({});
        let composable = self
            .index_templates
            .values()
            .filter(|t| patterns_of(t).iter().any(|p| glob(p, name)))
            .max_by_key(|t| t.get("priority").and_then(Value::as_i64).unwrap_or(0));
        if let Some(t) = composable {
            let mut parts: Vec<&Value> = Vec::new();
            if let Some(Value::Array(names)) = t.get("composed_of") {
                for n in names.iter().filter_map(Value::as_str) {
                    if let Some(c) = self.component_templates.get(n) {
                        parts.push(c);
                    }
                }
            }
            parts.push(t);
            for p in parts {
                if let Some(tpl) = p.get("template") {
                    merge_key(&mut settings, tpl, "settings");
                    merge_key(&mut mappings, tpl, "mappings");
                    overlay_aliases(&mut aliases, tpl.get("aliases"));
                }
            }
            return (settings, mappings, templated_aliases(aliases, name));
        }
        let mut legacy: Vec<&Value> = self
            .legacy_templates
            .values()
            .filter(|t| patterns_of(t).iter().any(|p| glob(p, name)))
            .collect();
        legacy.sort_by_key(|t| t.get("order").and_then(Value::as_i64).unwrap_or(0));
        for t in legacy {
            merge_key(&mut settings, t, "settings");
            merge_key(&mut mappings, t, "mappings");
            overlay_aliases(&mut aliases, t.get("aliases"));
        }
        (settings, mappings, templated_aliases(aliases, name))
    }
}

/// Adds aliases by name: an alias replaces one of the same name whole (its filter, routing and
/// flags are not merged with those of a lower-priority template), as the real servers do.
fn overlay_aliases(aliases: &mut Value, from: Option<&Value>) {
    let (Some(target), Some(Value::Object(from))) = (aliases.as_object_mut(), from) else {
        return;
    };
    for (k, v) in from {
        target.insert(k.clone(), v.clone());
    }
}

/// Template aliases with `{index}` in their name replaced by the name of the index being created,
/// as Elasticsearch and OpenSearch do for legacy and composable templates.
fn templated_aliases(aliases: Value, index: &str) -> Value {
    match aliases {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| (k.replace("{index}", index), v))
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_matches_like_index_patterns() {
        assert!(glob("logs-*", "logs-2024"));
        assert!(glob("*", "x"));
        assert!(glob("a*b*c", "aXXbYYc"));
        assert!(!glob("a*b*c", "aXXbYY"));
        assert!(!glob("logs-*", "metrics"));
        assert!(glob("exact", "exact"));
    }

    #[test]
    fn template_aliases_name_the_new_index() {
        let d = Dialect::new(crate::server::Distribution::OpenSearch, "2.11.0").unwrap();
        let mut st = State::default();
        st.legacy_templates.insert(
            "logs".into(),
            json!({"index_patterns": ["logs-*"], "order": 0,
                   "aliases": {"{index}-alias": {"is_hidden": true}, "all-logs": {}}}),
        );
        st.index_templates.insert(
            "metrics".into(),
            json!({"index_patterns": ["metrics-*"],
                   "template": {"aliases": {"{index}_read": {}, "x{index}y{index}": {}}}}),
        );
        st.create_index("logs-1", &json!({"aliases": {"own": {}}}), &d, None)
            .unwrap();
        st.create_index("metrics-2", &Value::Null, &d, None)
            .unwrap();
        st.create_index("other", &Value::Null, &d, None).unwrap();
        let aliases = |st: &State, i: &str| -> Vec<(String, Value)> {
            st.indices[i]
                .aliases
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        assert_eq!(
            aliases(&st, "logs-1"),
            vec![
                ("all-logs".to_string(), json!({})),
                ("logs-1-alias".to_string(), json!({"is_hidden": true})),
                ("own".to_string(), json!({})),
            ]
        );
        assert_eq!(
            aliases(&st, "metrics-2"),
            vec![
                ("metrics-2_read".to_string(), json!({})),
                ("xmetrics-2ymetrics-2".to_string(), json!({})),
            ]
        );
        assert!(aliases(&st, "other").is_empty());

        // an alias of a higher-order template, or of the request, replaces the whole body
        st.legacy_templates.insert(
            "logs-high".into(),
            json!({"index_patterns": ["logs-*"], "order": 5,
                   "aliases": {"all-logs": {"index_routing": "1"}, "shared": {"is_hidden": true}}}),
        );
        st.legacy_templates.insert(
            "logs-low".into(),
            json!({"index_patterns": ["logs-*"], "order": -1,
                   "aliases": {"all-logs": {"filter": {"term": {"a": 1}}}}}),
        );
        st.create_index(
            "logs-2",
            &json!({"aliases": {"shared": {"search_routing": "2"}}}),
            &d,
            None,
        )
        .unwrap();
        assert_eq!(
            aliases(&st, "logs-2"),
            vec![
                ("all-logs".to_string(), json!({"index_routing": "1"})),
                ("logs-2-alias".to_string(), json!({"is_hidden": true})),
                ("shared".to_string(), json!({"search_routing": "2"})),
            ]
        );
        // the templates keep the placeholder for the next index
        assert!(st.legacy_templates["logs"]["aliases"]
            .get("{index}-alias")
            .is_some());
        // and the placeholder resolves the alias like any other name
        assert_eq!(st.resolve("logs-1-alias", false).unwrap(), vec!["logs-1"]);
    }

    #[test]
    fn settings_flatten_and_nest() {
        let flat =
            flatten_settings(&json!({"number_of_shards": 3, "index": {"refresh_interval": "1s"}}))
                .unwrap();
        assert_eq!(flat["index.number_of_shards"], json!("3"));
        assert_eq!(flat["index.refresh_interval"], json!("1s"));
        assert_eq!(
            nest_settings(&flat),
            json!({"index": {"number_of_shards": "3", "refresh_interval": "1s"}})
        );
    }
}
