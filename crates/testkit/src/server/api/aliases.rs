//! Aliases: reads, `_aliases` actions, single alias writes.

#[allow(unused_imports)]
use super::*;

pub(super) fn get_aliases(c: &Ctx<'_>, idx: &str, name: Option<&str>) -> Result<Resp, EsError> {
    let st = c.state();
    let targets = st.resolve(idx, false)?;
    let mut out = Map::new();
    for n in targets {
        let i = &st.indices[&n];
        let selected: BTreeMap<String, Value> = i
            .aliases
            .iter()
            .filter(|(a, _)| name.is_none_or(|p| p.split(',').any(|p| glob(p, a))))
            .map(|(a, v)| (a.clone(), v.clone()))
            .collect();
        if name.is_some() && selected.is_empty() {
            continue;
        }
        out.insert(n, json!({ "aliases": aliases_json(&selected) }));
    }
    if let Some(name) = name {
        if out.is_empty() {
            return c.ok(
                404,
                json!({"error": format!("alias [{name}] missing"), "status": 404}),
            );
        }
    }
    c.ok(200, Value::Object(out))
}

pub(super) fn alias_body(v: &Value) -> Value {
    let mut m = Map::new();
    for k in [
        "filter",
        "routing",
        "index_routing",
        "search_routing",
        "is_write_index",
        "is_hidden",
    ] {
        if let Some(x) = v.get(k) {
            m.insert(k.to_string(), x.clone());
        }
    }
    if let Some(r) = m.remove("routing") {
        m.insert("index_routing".into(), r.clone());
        m.insert("search_routing".into(), r);
    }
    Value::Object(m)
}

pub(super) fn names(v: &Value, one: &str, many: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(s) = v.get(one).and_then(Value::as_str) {
        out.push(s.to_string());
    }
    if let Some(a) = v.get(many).and_then(Value::as_array) {
        out.extend(a.iter().filter_map(Value::as_str).map(str::to_string));
    }
    out
}

pub(super) fn alias_actions(c: &Ctx<'_>) -> Result<Resp, EsError> {
    let body = c.json()?;
    let actions = body
        .get("actions")
        .and_then(Value::as_array)
        .ok_or_else(|| validation("no actions specified"))?;
    let mut st = c.state();
    for a in actions {
        let (kind, spec) = a
            .as_object()
            .and_then(|m| m.iter().next())
            .ok_or_else(|| EsError::parse("malformed alias action"))?;
        let mut indices = Vec::new();
        for i in names(spec, "index", "indices") {
            indices.extend(st.resolve(&i, false)?);
        }
        match kind.as_str() {
            "add" => {
                for alias in names(spec, "alias", "aliases") {
                    for i in &indices {
                        st.indices
                            .get_mut(i)
                            .expect("resolved")
                            .aliases
                            .insert(alias.clone(), alias_body(spec));
                    }
                }
            }
            "remove" => {
                for alias in names(spec, "alias", "aliases") {
                    let mut found = false;
                    for i in &indices {
                        found |= st
                            .indices
                            .get_mut(i)
                            .expect("resolved")
                            .aliases
                            .remove(&alias)
                            .is_some();
                    }
                    if !found {
                        return Err(EsError::new(
                            404,
                            "aliases_not_found_exception",
                            format!("aliases [{alias}] missing"),
                        ));
                    }
                }
            }
            "remove_index" => {
                for i in indices {
                    st.indices.remove(&i);
                }
            }
            other => return Err(EsError::parse(format!("unknown alias action [{other}]"))),
        }
    }
    c.ok(200, ack())
}

pub(super) fn put_alias(c: &Ctx<'_>, idx: &str, name: &str) -> Result<Resp, EsError> {
    let body = c.json()?;
    let mut st = c.state();
    for i in st.resolve(idx, false)? {
        st.indices
            .get_mut(&i)
            .expect("resolved")
            .aliases
            .insert(name.to_string(), alias_body(&body));
    }
    c.ok(200, ack())
}

pub(super) fn delete_alias(c: &Ctx<'_>, idx: &str, name: &str) -> Result<Resp, EsError> {
    let mut st = c.state();
    let mut found = false;
    for i in st.resolve(idx, false)? {
        found |= st
            .indices
            .get_mut(&i)
            .expect("resolved")
            .aliases
            .remove(name)
            .is_some();
    }
    if !found {
        return Err(EsError::new(
            404,
            "aliases_not_found_exception",
            format!("aliases [{name}] missing"),
        ));
    }
    c.ok(200, ack())
}
