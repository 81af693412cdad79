//! Lookup on a cluster: documents by `_mget` (with their routing), compared JSON-equal by
//! `_source`; per index a `_count` after a refresh. An index whose mapping disables
//! `_source` returns none: each document must be found, and where the mapping has fields
//! whose doc values the target returns exactly (see [`super::doc_values`]) those values are
//! compared with the document's — the lookup says so ([`Keeps`]), never calling content
//! the target does not keep a difference.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use cluster::{encode_segment, Client, ClusterError, Method};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::{doc_values, id_scroll};
use crate::lookup::{Held, Keeps, Lookup, LookupError, LookupFuture, Wanted};
use engine::lookup::exact::Exact;
use engine::lookup::ids::IdRuns;
use engine::lookup::Compared;

/// Documents of a cluster's indices.
pub struct MgetLookup {
    client: Client,
    /// Per index prepared: what can be compared on it (`None`: it does not exist).
    indices: Mutex<HashMap<String, Option<OnTarget>>>,
}

/// What can be compared on one target index.
#[derive(Debug, Clone)]
struct OnTarget {
    compared: Compared,
    /// The fields compared through doc values (an index without `_source`).
    doc_values: Arc<Vec<doc_values::Field>>,
    /// Fields left out of that comparison, with why.
    left_out: Arc<Vec<String>>,
    /// Vector fields, compared element by element (see [`engine::lookup::vectors`]).
    vectors: Arc<Vec<engine::lookup::vectors::VectorPath>>,
}

impl MgetLookup {
    pub fn new(client: Client) -> Self {
        MgetLookup {
            client,
            indices: Mutex::new(HashMap::new()),
        }
    }

    fn error(&self, e: ClusterError) -> LookupError {
        LookupError::Cluster {
            target: redact::url(self.client.base_url()),
            source: Box::new(e),
        }
    }

    fn list_error(&self, e: id_scroll::ListError) -> LookupError {
        match e {
            id_scroll::ListError::Cluster(e) => self.error(e),
            id_scroll::ListError::Answer(why) => LookupError::Answer {
                target: redact::url(self.client.base_url()),
                why,
            },
            id_scroll::ListError::Spill(e) => LookupError::Spill(e),
        }
    }

    fn on(&self, index: &str) -> Option<OnTarget> {
        self.indices
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(index)
            .cloned()
            .flatten()
    }
}

impl Lookup for MgetLookup {
    fn prepare<'a>(&'a self, index: &'a str) -> LookupFuture<'a, Option<Keeps>> {
        Box::pin(async move {
            let on = refresh(&self.client, index)
                .await
                .map_err(|e| self.error(e))?;
            let keeps = on.as_ref().map(|o| Keeps {
                compared: o.compared,
                doc_value_fields: o.doc_values.iter().map(|f| f.path.clone()).collect(),
                doc_values_left_out: o.left_out.to_vec(),
                vector_fields: o.vectors.to_vec(),
            });
            self.indices
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(index.to_string(), on);
            Ok(keeps)
        })
    }

    fn fetch<'a>(
        &'a self,
        index: &'a str,
        docs: &'a [Wanted],
        _content: bool,
    ) -> LookupFuture<'a, Vec<Held>> {
        Box::pin(async move {
            let on = self.on(index);
            compare(&self.client, index, docs, on.as_ref())
                .await
                .map_err(|e| match e {
                    Failed::Cluster(e) => self.error(e),
                    Failed::Answer(why) => LookupError::Answer {
                        target: redact::url(self.client.base_url()),
                        why,
                    },
                })
        })
    }

    fn list_ids<'a>(&'a self, index: &'a str, into: &'a mut IdRuns) -> LookupFuture<'a, bool> {
        Box::pin(async move {
            if !self
                .client
                .index_exists(index)
                .await
                .map_err(|e| self.error(e))?
            {
                return Ok(true);
            }
            match id_scroll::list(&self.client, index, into).await {
                Ok(_) => Ok(true),
                Err(e) => Err(self.list_error(e)),
            }
        })
    }

    fn each_source<'a>(
        &'a self,
        index: &'a str,
        each: &'a mut (dyn FnMut(&[u8]) + Send),
    ) -> LookupFuture<'a, bool> {
        Box::pin(async move {
            if !self
                .client
                .index_exists(index)
                .await
                .map_err(|e| self.error(e))?
            {
                return Ok(true);
            }
            match id_scroll::sources(&self.client, index, each).await {
                Ok(_) => Ok(true),
                Err(e) => Err(self.list_error(e)),
            }
        })
    }

    fn count<'a>(&'a self, index: &'a str) -> LookupFuture<'a, Option<u64>> {
        Box::pin(async move {
            self.client
                .count(index)
                .await
                .map(Some)
                .map_err(|e| self.error(e))
        })
    }

    fn describe(&self) -> String {
        redact::url(self.client.base_url())
    }
}

enum Failed {
    Cluster(ClusterError),
    Answer(String),
}

impl From<ClusterError> for Failed {
    fn from(e: ClusterError) -> Self {
        Failed::Cluster(e)
    }
}

/// Refreshes `index` and learns from its mapping what can be compared on it; `None` when
/// it does not exist.
async fn refresh(client: &Client, index: &str) -> Result<Option<OnTarget>, ClusterError> {
    if !client.index_exists(index).await? {
        return Ok(None);
    }
    client.refresh(index).await?;
    let path = format!("/{}/_mapping", encode_segment(index));
    let body: Value = client
        .request(Method::GET, &path, None)
        .await?
        .error_for_status()?
        .json()?;
    if keeps_source(&body) {
        return Ok(Some(OnTarget {
            compared: Compared::Documents,
            doc_values: Arc::default(),
            left_out: Arc::default(),
            vectors: Arc::new(engine::lookup::vectors::fields(&body)),
        }));
    }
    let fields = doc_values::fields(&body);
    let left_out = doc_values::left_out(&body);
    Ok(Some(OnTarget {
        compared: if fields.is_empty() {
            Compared::CountAndIds
        } else {
            Compared::CountIdsAndDocValues
        },
        doc_values: Arc::new(fields),
        left_out: Arc::new(left_out),
        vectors: Arc::default(),
    }))
}

/// Whether every index of a `GET INDEX/_mapping` answer (an alias or a data stream may
/// answer for several; Elasticsearch 6 nests each mapping under its type) keeps `_source`.
pub fn keeps_source(mapping_answer: &Value) -> bool {
    let disabled = |root: &Value| {
        root.pointer("/_source/enabled")
            .is_some_and(|e| e == &Value::Bool(false) || e == "false")
    };
    let Some(indices) = mapping_answer.as_object() else {
        return true;
    };
    !indices.values().any(|i| {
        let Some(m) = i.get("mappings") else {
            return false;
        };
        disabled(m)
            || m.as_object().is_some_and(|types| {
                types
                    .iter()
                    .any(|(k, t)| !k.starts_with('_') && k != "properties" && disabled(t))
            })
    })
}

/// Fetches `batch` by id (with routing): each `_source` as held; on an index without
/// `_source`, whether each is found, and its doc values compared.
async fn compare(
    client: &Client,
    index: &str,
    batch: &[Wanted],
    on: Option<&OnTarget>,
) -> Result<Vec<Held>, Failed> {
    if batch.is_empty() {
        return Ok(Vec::new());
    }
    let compared = on.map_or(Compared::Documents, |o| o.compared);
    let docs: Vec<Value> = batch
        .iter()
        .map(|d| match &d.routing {
            Some(r) => json!({ "_id": d.id, "routing": r }),
            None => json!({ "_id": d.id }),
        })
        .collect();
    let path = format!("/{}/_mget", encode_segment(index));
    let by_id = compared != Compared::Documents;
    let resp = client
        .request(Method::POST, &path, Some(&json!({ "docs": docs })))
        .await?;
    let resp = resp.error_for_status()?;
    // Read with each `_source` kept as its JSON text: a `Value` would turn its numbers
    // into floats (see [`engine::lookup::exact`]).
    let body: MgetAnswer = resp.json()?;
    let got = body.docs;
    if got.len() != batch.len() {
        return Err(Failed::Answer(format!(
            "{path}: asked for {} documents, got {}",
            batch.len(),
            got.len()
        )));
    }
    let mut out = Vec::with_capacity(batch.len());
    let mut found_ids: Vec<(usize, &Wanted)> = Vec::new();
    for (at, (want, have)) in batch.iter().zip(got).enumerate() {
        if !have.found {
            out.push(Held::Absent);
        } else if by_id {
            found_ids.push((at, want));
            out.push(Held::Present);
        } else {
            match have.source {
                Some(s) => match Exact::from_raw(&s) {
                    Ok(s) => out.push(Held::Holds(s)),
                    Err(e) => out.push(Held::Differs(format!("the target's _source: {e}"))),
                },
                None => out.push(Held::Differs("no _source returned".into())),
            }
        }
    }
    match on {
        Some(on) if !on.doc_values.is_empty() && !found_ids.is_empty() => {
            compare_doc_values(client, index, &found_ids, &on.doc_values, &mut out).await?;
        }
        _ => {}
    }
    Ok(out)
}

/// An `_mget` answer, each `_source` as its JSON text.
#[derive(serde::Deserialize)]
struct MgetAnswer {
    #[serde(default)]
    docs: Vec<MgetDoc>,
}

#[derive(serde::Deserialize)]
struct MgetDoc {
    /// Absent on a per-document error: not found.
    #[serde(default)]
    found: bool,
    #[serde(rename = "_source")]
    source: Option<Box<RawValue>>,
}

/// Asks the doc values of `fields` for `found` (documents the target holds) and compares
/// them with what each rebuilt document holds.
async fn compare_doc_values(
    client: &Client,
    index: &str,
    found: &[(usize, &Wanted)],
    fields: &[doc_values::Field],
    out: &mut [Held],
) -> Result<(), ClusterError> {
    let ids: Vec<&str> = found.iter().map(|(_, d)| d.id.as_str()).collect();
    let body = client
        .search(index, &doc_values::request(&ids, fields))
        .await?;
    let mut by_id: BTreeMap<&str, &Value> = BTreeMap::new();
    for h in body
        .pointer("/hits/hits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(id) = h.get("_id").and_then(Value::as_str) {
            by_id.insert(id, h.get("fields").unwrap_or(&Value::Null));
        }
    }
    for (at, want) in found {
        let source: Value = match serde_json::from_slice(&want.source) {
            Ok(s) => s,
            Err(_) => Value::Null,
        };
        let got = by_id.get(want.id.as_str()).copied();
        if let Some(field) = doc_values::first_difference(fields, &source, got) {
            tracing::info!(index, id = %want.id, field, "doc values differ from the rebuilt document");
            out[*at] = Held::DocValuesDiffer(field.to_string());
        }
    }
    Ok(())
}
