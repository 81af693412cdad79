//! Typed calls for indices, templates, documents, search and snapshots.

use std::time::Duration;

use serde_json::{json, Value};

use crate::client::{encode_segment as enc, Client, Method, Response};
use crate::error::ClusterError;
use crate::version::DocAddressing;

/// What a create call found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    Created,
    /// It existed already and was left untouched.
    AlreadyExists,
}

pub use product::TemplateKind;

/// A stored document as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    pub index: String,
    pub id: String,
    pub source: Option<Value>,
    pub routing: Option<String>,
    pub version: Option<i64>,
    pub seq_no: Option<i64>,
    pub primary_term: Option<i64>,
}

impl Doc {
    fn from_json(v: &Value) -> Option<Doc> {
        if v.get("found").and_then(Value::as_bool) != Some(true) {
            return None;
        }
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let i = |k: &str| v.get(k).and_then(Value::as_i64);
        Some(Doc {
            index: s("_index").unwrap_or_default(),
            id: s("_id").unwrap_or_default(),
            source: v.get("_source").cloned(),
            routing: s("_routing"),
            version: i("_version"),
            seq_no: i("_seq_no"),
            primary_term: i("_primary_term"),
        })
    }
}

impl Client {
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Response, ClusterError> {
        self.request(method, path, body).await
    }

    async fn ok_json(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, ClusterError> {
        self.call(method, path, body)
            .await?
            .error_for_status()?
            .json()
    }

    /// `None` on 404, the JSON body on 2xx, an error otherwise.
    async fn get_optional(&self, path: &str) -> Result<Option<Value>, ClusterError> {
        let r = self.call(Method::GET, path, None).await?;
        if r.status == 404 {
            return Ok(None);
        }
        r.error_for_status()?.json().map(Some)
    }

    fn created_or_exists(r: Response) -> Result<Created, ClusterError> {
        if r.is_success() {
            return Ok(Created::Created);
        }
        let err = r.to_error();
        let exists = err.error_type() == Some("resource_already_exists_exception")
            || (r.status == 400 && err.to_string().contains("already exists"));
        if exists {
            Ok(Created::AlreadyExists)
        } else {
            Err(err)
        }
    }

    // ---- indices ---------------------------------------------------------------------

    pub async fn index_exists(&self, index: &str) -> Result<bool, ClusterError> {
        let r = self
            .call(Method::HEAD, &format!("/{}", enc(index)), None)
            .await?;
        match r.status {
            200..=299 => Ok(true),
            404 => Ok(false),
            _ => Err(r.to_error()),
        }
    }

    /// The index's definition (`settings`, `mappings`, `aliases`), or `None` if absent.
    pub async fn get_index(&self, index: &str) -> Result<Option<Value>, ClusterError> {
        let v = self.get_optional(&format!("/{}", enc(index))).await?;
        Ok(v.and_then(|mut v| v.get_mut(index).map(Value::take)))
    }

    /// Create an index with a body of `settings`, `mappings` and `aliases`. An existing
    /// index is left alone and reported as [`Created::AlreadyExists`].
    pub async fn create_index(&self, index: &str, body: &Value) -> Result<Created, ClusterError> {
        let r = self
            .call(Method::PUT, &format!("/{}", enc(index)), Some(body))
            .await?;
        Client::created_or_exists(r)
    }

    // ---- data streams (Elasticsearch 7.9+, OpenSearch) -------------------------------

    /// Whether data stream `name` exists.
    pub async fn data_stream_exists(&self, name: &str) -> Result<bool, ClusterError> {
        Ok(self
            .get_optional(&format!("/_data_stream/{}", enc(name)))
            .await?
            .is_some())
    }

    /// Create data stream `name` (a matching index template with a `data_stream` section
    /// must exist). An existing one is reported as [`Created::AlreadyExists`].
    pub async fn create_data_stream(&self, name: &str) -> Result<Created, ClusterError> {
        let r = self
            .call(Method::PUT, &format!("/_data_stream/{}", enc(name)), None)
            .await?;
        Client::created_or_exists(r)
    }

    pub async fn delete_index(&self, index: &str) -> Result<(), ClusterError> {
        self.ok_json(Method::DELETE, &format!("/{}", enc(index)), None)
            .await
            .map(drop)
    }

    pub async fn refresh(&self, index: &str) -> Result<(), ClusterError> {
        self.ok_json(Method::POST, &format!("/{}/_refresh", enc(index)), None)
            .await
            .map(drop)
    }

    pub async fn count(&self, index: &str) -> Result<u64, ClusterError> {
        let path = format!("/{}/_count", enc(index));
        let v = self.ok_json(Method::GET, &path, None).await?;
        v.get("count")
            .and_then(Value::as_u64)
            .ok_or_else(|| ClusterError::Response {
                method: "GET".into(),
                url: path,
                reason: format!("no count in {v}"),
            })
    }

    // ---- templates -------------------------------------------------------------------

    /// A template's definition (the body one would PUT), or `None` if absent.
    pub async fn get_template(
        &self,
        kind: TemplateKind,
        name: &str,
    ) -> Result<Option<Value>, ClusterError> {
        let Some(mut v) = self
            .get_optional(&format!("/{}/{}", kind.endpoint(), enc(name)))
            .await?
        else {
            return Ok(None);
        };
        let found = match kind {
            TemplateKind::Legacy => v.get_mut(name).map(Value::take),
            TemplateKind::Component | TemplateKind::Index => {
                let (list, field) = match kind {
                    TemplateKind::Component => ("component_templates", "component_template"),
                    _ => ("index_templates", "index_template"),
                };
                v.get_mut(list)
                    .and_then(Value::as_array_mut)
                    .and_then(|a| {
                        a.iter_mut()
                            .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
                    })
                    .and_then(|t| t.get_mut(field).map(Value::take))
            }
        };
        Ok(found)
    }

    pub async fn template_exists(
        &self,
        kind: TemplateKind,
        name: &str,
    ) -> Result<bool, ClusterError> {
        Ok(self.get_template(kind, name).await?.is_some())
    }

    /// Create a template unless one with that name exists (`create=true`: never overwritten).
    pub async fn put_template(
        &self,
        kind: TemplateKind,
        name: &str,
        body: &Value,
    ) -> Result<Created, ClusterError> {
        let path = format!("/{}/{}?create=true", kind.endpoint(), enc(name));
        let r = self.call(Method::PUT, &path, Some(body)).await?;
        Client::created_or_exists(r)
    }

    // ---- documents and search ----------------------------------------------------------

    /// One document by id, `None` if absent.
    pub async fn get_doc(&self, index: &str, id: &str) -> Result<Option<Doc>, ClusterError> {
        if self.target().map(|t| t.dialect()) == Some(DocAddressing::Typed) {
            // Typed targets need the type in the path; `_mget` finds the id in any type.
            return Ok(self.mget(index, &[id]).await?.pop().flatten());
        }
        let v = self
            .get_optional(&format!("/{}/_doc/{}", enc(index), enc(id)))
            .await?;
        Ok(v.as_ref().and_then(Doc::from_json))
    }

    /// Documents by id, in the order asked; `None` for ids not found.
    pub async fn mget(&self, index: &str, ids: &[&str]) -> Result<Vec<Option<Doc>>, ClusterError> {
        let docs: Vec<Value> = ids.iter().map(|id| json!({ "_id": id })).collect();
        let path = format!("/{}/_mget", enc(index));
        let v = self
            .ok_json(Method::POST, &path, Some(&json!({ "docs": docs })))
            .await?;
        let out: Vec<Option<Doc>> = v
            .get("docs")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(Doc::from_json).collect())
            .unwrap_or_default();
        if out.len() != ids.len() {
            return Err(ClusterError::Response {
                method: "POST".into(),
                url: path,
                reason: format!("asked for {} documents, got {}", ids.len(), out.len()),
            });
        }
        Ok(out)
    }

    /// `_search` with a request body; returns the whole response.
    pub async fn search(&self, index: &str, body: &Value) -> Result<Value, ClusterError> {
        self.ok_json(
            Method::POST,
            &format!("/{}/_search", enc(index)),
            Some(body),
        )
        .await
    }

    // ---- snapshots ---------------------------------------------------------------------

    /// Register a shared-filesystem repository at `location` (must be in `path.repo`).
    pub async fn register_fs_repository(
        &self,
        repo: &str,
        location: &str,
    ) -> Result<(), ClusterError> {
        let body = json!({ "type": "fs", "settings": { "location": location } });
        self.ok_json(
            Method::PUT,
            &format!("/_snapshot/{}", enc(repo)),
            Some(&body),
        )
        .await
        .map(drop)
    }

    /// Snapshot every index (global state included); with `wait`, returns when it finished.
    pub async fn create_snapshot(
        &self,
        repo: &str,
        name: &str,
        wait: bool,
    ) -> Result<Value, ClusterError> {
        self.create_snapshot_with(
            repo,
            name,
            &json!({ "indices": "*", "include_global_state": true }),
            wait,
        )
        .await
    }

    /// Snapshot with an explicit body (`indices`, `include_global_state`, …).
    pub async fn create_snapshot_with(
        &self,
        repo: &str,
        name: &str,
        body: &Value,
        wait: bool,
    ) -> Result<Value, ClusterError> {
        let path = format!(
            "/_snapshot/{}/{}?wait_for_completion={wait}",
            enc(repo),
            enc(name)
        );
        let body = bytes::Bytes::from(serde_json::to_vec(body).expect("JSON values serialise"));
        // Waiting can take far longer than a normal request.
        let timeout = wait.then_some(Duration::from_secs(24 * 3600));
        self.execute(Method::PUT, &path, Some(body), timeout)
            .await?
            .error_for_status()?
            .json()
    }

    /// `GET _snapshot/{repo}/{name}/_status`.
    pub async fn snapshot_status(&self, repo: &str, name: &str) -> Result<Value, ClusterError> {
        self.ok_json(
            Method::GET,
            &format!("/_snapshot/{}/{}/_status", enc(repo), enc(name)),
            None,
        )
        .await
    }

    /// The snapshot's info (`state`, `indices`, …), or `None` if absent.
    pub async fn get_snapshot(
        &self,
        repo: &str,
        name: &str,
    ) -> Result<Option<Value>, ClusterError> {
        let v = self
            .get_optional(&format!("/_snapshot/{}/{}", enc(repo), enc(name)))
            .await?;
        Ok(v.and_then(|mut v| {
            v.get_mut("snapshots")
                .and_then(Value::as_array_mut)
                .and_then(|a| a.first_mut().map(Value::take))
        }))
    }
}
