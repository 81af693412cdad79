//! Elasticsearch-shaped error bodies: `{"error":{"root_cause":[..],"type","reason",..},"status"}`.

use serde_json::{json, Map, Value};

/// One API error: HTTP status, exception type, reason and optional extra fields.
#[derive(Clone, Debug)]
pub(crate) struct EsError {
    pub status: u16,
    pub kind: String,
    pub reason: String,
    pub extra: Map<String, Value>,
}

impl EsError {
    pub fn new(status: u16, kind: &str, reason: impl Into<String>) -> EsError {
        EsError {
            status,
            kind: kind.to_string(),
            reason: reason.into(),
            extra: Map::new(),
        }
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> EsError {
        self.extra.insert(key.to_string(), value.into());
        self
    }

    pub fn bad_request(reason: impl Into<String>) -> EsError {
        EsError::new(400, "illegal_argument_exception", reason)
    }

    pub fn parse(reason: impl Into<String>) -> EsError {
        EsError::new(400, "parsing_exception", reason)
    }

    pub fn index_not_found(index: &str) -> EsError {
        EsError::new(404, "index_not_found_exception", "no such index")
            .with("resource.type", "index_or_alias")
            .with("resource.id", index)
            .with("index", index)
    }

    /// The `error` object (without `status`), as in bulk items.
    pub fn cause(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), Value::String(self.kind.clone()));
        m.insert("reason".into(), Value::String(self.reason.clone()));
        for (k, v) in &self.extra {
            m.insert(k.clone(), v.clone());
        }
        Value::Object(m)
    }

    /// The whole response body.
    pub fn body(&self) -> Value {
        let cause = self.cause();
        let mut error = cause.as_object().cloned().unwrap_or_default();
        // an error that names its own root causes (a wrapped shard failure) keeps them
        error.entry("root_cause").or_insert_with(|| json!([cause]));
        json!({"error": Value::Object(error), "status": self.status})
    }
}
