//! Cluster health, cluster settings, `_cat/indices`.

#[allow(unused_imports)]
use super::*;

pub(super) fn health(c: &Ctx<'_>) -> Result<Resp, EsError> {
    let n = c.state().indices.len();
    c.ok(
        200,
        json!({
            "cluster_name": c.shared.config.cluster_name,
            "status": "green",
            "timed_out": false,
            "number_of_nodes": 1,
            "number_of_data_nodes": 1,
            "active_primary_shards": n,
            "active_shards": n,
            "relocating_shards": 0,
            "initializing_shards": 0,
            "unassigned_shards": 0,
            "delayed_unassigned_shards": 0,
            "number_of_pending_tasks": 0,
            "number_of_in_flight_fetch": 0,
            "task_max_waiting_in_queue_millis": 0,
            "active_shards_percent_as_number": 100.0
        }),
    )
}

/// Cluster-level defaults reported by `GET _cluster/settings?include_defaults=true`.
pub(super) fn cluster_defaults(c: &Ctx<'_>) -> BTreeMap<String, Value> {
    let cfg = &c.shared.config;
    let size = |b: usize| {
        let units = [(1usize << 30, "gb"), (1 << 20, "mb"), (1 << 10, "kb")];
        units
            .iter()
            .find(|(u, _)| b >= *u && b.is_multiple_of(*u))
            .map_or_else(|| format!("{b}b"), |(u, s)| format!("{}{s}", b / u))
    };
    [
        ("cluster.name", cfg.cluster_name.clone()),
        ("http.compression", cfg.http_compression.to_string()),
        ("http.compression_level", "3".to_string()),
        ("http.max_content_length", size(cfg.max_content_length)),
        ("cluster.max_shards_per_node", "1000".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), Value::String(v)))
    .collect()
}

pub(super) fn cluster_settings_json(c: &Ctx<'_>, flat: &BTreeMap<String, Value>) -> Value {
    if c.flag("flat_settings") == Some(true) {
        Value::Object(flat.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
    } else {
        nest_settings(flat)
    }
}

pub(super) fn get_cluster_settings(c: &Ctx<'_>) -> Result<Resp, EsError> {
    let st = c.state();
    let mut out = Map::new();
    out.insert(
        "persistent".into(),
        cluster_settings_json(c, &st.persistent_settings),
    );
    out.insert(
        "transient".into(),
        cluster_settings_json(c, &st.transient_settings),
    );
    if c.flag("include_defaults") == Some(true) {
        let mut defaults = cluster_defaults(c);
        defaults.retain(|k, _| {
            !st.persistent_settings.contains_key(k) && !st.transient_settings.contains_key(k)
        });
        out.insert("defaults".into(), cluster_settings_json(c, &defaults));
    }
    c.ok(200, Value::Object(out))
}

/// Node-level settings that `PUT _cluster/settings` refuses.
pub(super) fn static_cluster_setting(k: &str) -> bool {
    ["http.", "transport.", "path.", "node.", "network."]
        .iter()
        .any(|p| k.starts_with(p))
        || k == "cluster.name"
}

pub(super) fn put_cluster_settings(c: &Ctx<'_>) -> Result<Resp, EsError> {
    let body = c.json()?;
    let Some(m) = body.as_object() else {
        return Err(validation("no settings to update"));
    };
    let mut updates = Vec::new();
    for (k, v) in m {
        if k != "persistent" && k != "transient" {
            return Err(EsError::parse(format!(
                "request body contains unknown key [{k}]"
            )));
        }
        // `null` values remove keys: keep them as nulls for the update
        let mut flat = BTreeMap::new();
        collect_cluster_updates("", v, &mut flat)?;
        if let Some(bad) = flat.keys().find(|k| static_cluster_setting(k)) {
            return Err(EsError::bad_request(format!(
                "{k} setting [{bad}], not dynamically updateable"
            )));
        }
        updates.push((k.clone(), flat));
    }
    if updates.iter().all(|(_, f)| f.is_empty()) {
        return Err(validation("no settings to update"));
    }
    let mut st = c.state();
    let mut out = Map::new();
    out.insert("acknowledged".into(), json!(true));
    out.insert("persistent".into(), json!({}));
    out.insert("transient".into(), json!({}));
    for (scope, flat) in updates {
        let target = if scope == "persistent" {
            &mut st.persistent_settings
        } else {
            &mut st.transient_settings
        };
        let mut applied = BTreeMap::new();
        for (k, v) in flat {
            if v.is_null() {
                target.remove(&k);
            } else {
                target.insert(k.clone(), v.clone());
                applied.insert(k, v);
            }
        }
        out.insert(scope, cluster_settings_json(c, &applied));
    }
    c.ok(200, Value::Object(out))
}

/// Flattens one `persistent`/`transient` object, keeping `null` leaves (they remove a key).
pub(super) fn collect_cluster_updates(
    prefix: &str,
    v: &Value,
    out: &mut BTreeMap<String, Value>,
) -> Result<(), EsError> {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                collect_cluster_updates(&key, v, out)?;
            }
        }
        _ if prefix.is_empty() => {
            return Err(EsError::new(
                400,
                "settings_exception",
                "Failed to load settings: expected an object",
            ))
        }
        Value::Null => {
            out.insert(prefix.to_string(), Value::Null);
        }
        Value::String(s) => {
            out.insert(prefix.to_string(), Value::String(s.clone()));
        }
        Value::Array(a) => {
            let items = a
                .iter()
                .map(|x| match x {
                    Value::String(s) => Value::String(s.clone()),
                    other => Value::String(other.to_string()),
                })
                .collect();
            out.insert(prefix.to_string(), Value::Array(items));
        }
        other => {
            out.insert(prefix.to_string(), Value::String(other.to_string()));
        }
    }
    Ok(())
}

pub(super) fn cat_indices(c: &Ctx<'_>, idx: Option<&str>) -> Result<Resp, EsError> {
    let hidden = super::resolve::expand_hidden(c)?;
    let st = c.state();
    let targets = st.resolve_expanding(idx.unwrap_or("_all"), false, hidden)?;
    let rows: Vec<Value> = targets
        .iter()
        .map(|n| {
            let i = &st.indices[n];
            let setting = |k: &str| i.settings.get(k).and_then(Value::as_str).unwrap_or("1").to_string();
            json!({
                "health": "green", "status": "open", "index": n, "uuid": i.uuid,
                "pri": setting("index.number_of_shards"), "rep": setting("index.number_of_replicas"),
                "docs.count": i.doc_count().to_string(), "docs.deleted": "0",
            })
        })
        .collect();
    if c.q("format") == Some("json") {
        return c.ok(200, Value::Array(rows));
    }
    let mut text = String::new();
    for r in rows {
        text.push_str(&format!(
            "green open {} {} {} {} {} 0\n",
            r["index"].as_str().unwrap_or(""),
            r["uuid"].as_str().unwrap_or(""),
            r["pri"].as_str().unwrap_or(""),
            r["rep"].as_str().unwrap_or(""),
            r["docs.count"].as_str().unwrap_or("")
        ));
    }
    let mut resp = respond(c.shared, 200, text.into_bytes());
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=UTF-8"),
    );
    Ok(resp)
}
