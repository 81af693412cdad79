//! Index creation, deletion, mappings and settings.

#[allow(unused_imports)]
use super::*;

pub(super) fn get_data_streams(c: &Ctx<'_>, name: &str) -> Result<Resp, EsError> {
    let st = c.state();
    let streams: Vec<Value> = st
        .data_streams
        .iter()
        .filter(|(n, _)| name.split(',').any(|p| glob(p, n)))
        .map(|(n, ds)| {
            let indices: Vec<Value> = ds
                .indices
                .iter()
                .map(|i| json!({"index_name": i, "index_uuid": st.indices.get(i).map(|x| x.uuid.clone())}))
                .collect();
            json!({"name": n, "timestamp_field": {"name": ds.timestamp_field}, "indices": indices,
                   "generation": ds.indices.len(), "status": "GREEN", "template": ds.template})
        })
        .collect();
    if streams.is_empty() && !name.contains('*') {
        return Err(EsError::new(
            404,
            "index_not_found_exception",
            format!("no such index [{name}]"),
        ));
    }
    c.ok(200, json!({"data_streams": streams}))
}

pub(super) fn create_index(c: &Ctx<'_>, idx: &str) -> Result<Resp, EsError> {
    let body = c.json()?;
    c.state()
        .create_index(idx, &body, &c.shared.dialect, c.include_type_name())?;
    c.ok(
        200,
        json!({"acknowledged": true, "shards_acknowledged": true, "index": idx}),
    )
}

pub(super) fn settings_json(c: &Ctx<'_>, flat: &BTreeMap<String, Value>) -> Value {
    if c.flag("flat_settings") == Some(true) {
        Value::Object(flat.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
    } else {
        nest_settings(flat)
    }
}

pub(super) fn aliases_json(a: &BTreeMap<String, Value>) -> Value {
    Value::Object(a.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
}

pub(super) fn get_index(c: &Ctx<'_>, idx: &str) -> Result<Resp, EsError> {
    let st = c.state();
    let targets = st.resolve(idx, false)?;
    let mut out = Map::new();
    for n in &targets {
        let i = &st.indices[n];
        out.insert(
            n.clone(),
            json!({
                "aliases": aliases_json(&i.aliases),
                "mappings": i.mappings,
                "settings": settings_json(c, &i.settings),
            }),
        );
    }
    if targets.is_empty() && !idx.contains('*') && idx != "_all" {
        return Err(EsError::index_not_found(idx));
    }
    c.ok(200, Value::Object(out))
}

pub(super) fn delete_index(c: &Ctx<'_>, idx: &str) -> Result<Resp, EsError> {
    let mut st = c.state();
    let mut targets = Vec::new();
    for part in idx.split(',') {
        if part.contains('*') || part == "_all" {
            targets.extend(st.resolve(part, true)?);
        } else if st.indices.contains_key(part) {
            targets.push(part.to_string());
        } else {
            return Err(EsError::index_not_found(part));
        }
    }
    for t in targets {
        st.indices.remove(&t);
    }
    c.ok(200, ack())
}

pub(super) fn get_mappings(c: &Ctx<'_>, idx: &str) -> Result<Resp, EsError> {
    let st = c.state();
    let out: Map<String, Value> = st
        .resolve(idx, false)?
        .into_iter()
        .map(|n| {
            let m = st.indices[&n].mappings.clone();
            (n, json!({ "mappings": m }))
        })
        .collect();
    c.ok(200, Value::Object(out))
}

pub(super) fn put_mapping(c: &Ctx<'_>, idx: &str, t: Option<&str>) -> Result<Resp, EsError> {
    let body = c.json()?;
    let d = &c.shared.dialect;
    let mut st = c.state();
    let targets = st.resolve(idx, false)?;
    for n in &targets {
        let index = st.indices.get_mut(n).expect("resolved");
        let body = match (d.typed(), t) {
            (true, Some(t)) if body.get(t).is_none() => json!({ t: body }),
            (true, None) => match &index.type_name {
                Some(t) if body.get(t).is_none() => json!({ t: body }),
                _ => body.clone(),
            },
            _ => body.clone(),
        };
        let mut merged = index.mappings.clone();
        merge(&mut merged, &body);
        let (checked, type_name) = check_mappings(n, &merged, d, None)?;
        let was = index.source_enabled();
        let now = source_enabled(
            &checked,
            type_name.as_deref().or(index.type_name.as_deref()),
        );
        if was != now {
            // `_source.enabled` is fixed when the index is created (either way)
            return Err(EsError::new(
                400,
                "illegal_argument_exception",
                format!(
                    "Mapper for [_source] conflicts with existing mapper:\n\tCannot update parameter [enabled] from [{was}] to [{now}]"
                ),
            ));
        }
        index.mappings = checked;
        if type_name.is_some() {
            index.type_name = type_name;
        }
    }
    c.ok(200, ack())
}

pub(super) fn get_settings(c: &Ctx<'_>, idx: &str) -> Result<Resp, EsError> {
    let hidden = super::resolve::expand_hidden(c)?;
    let st = c.state();
    let out: Map<String, Value> = st
        .resolve_expanding(idx, false, hidden)?
        .into_iter()
        .map(|n| {
            let s = settings_json(c, &st.indices[&n].settings);
            (n, json!({ "settings": s }))
        })
        .collect();
    c.ok(200, Value::Object(out))
}

pub(super) fn put_settings(c: &Ctx<'_>, idx: &str) -> Result<Resp, EsError> {
    let body = c.json()?;
    let flat = flatten_settings(body.get("settings").unwrap_or(&body))?;
    check_settings(&flat, &c.shared.dialect)?;
    let static_keys: Vec<&String> = flat
        .keys()
        .filter(|k| {
            [
                "index.number_of_shards",
                "index.codec",
                "index.number_of_routing_shards",
            ]
            .contains(&k.as_str())
        })
        .collect();
    if !static_keys.is_empty() {
        return Err(EsError::bad_request(format!(
            "Can't update non dynamic settings [{static_keys:?}] for open indices"
        )));
    }
    let mut st = c.state();
    for n in st.resolve(idx, false)? {
        st.indices
            .get_mut(&n)
            .expect("resolved")
            .settings
            .extend(flat.clone());
    }
    c.ok(200, ack())
}
