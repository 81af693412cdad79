//! Legacy, component and composable index templates.

#[allow(unused_imports)]
use super::*;

/// Which of the three template APIs: the server's own copy of `product::TemplateKind` (the
/// test server shares no code with what it tests).
#[derive(Clone, Copy)]
pub(super) enum TemplateKind {
    Legacy,
    Component,
    Index,
}

pub(super) fn table(st: &mut State, k: TemplateKind) -> &mut BTreeMap<String, Value> {
    match k {
        TemplateKind::Legacy => &mut st.legacy_templates,
        TemplateKind::Component => &mut st.component_templates,
        TemplateKind::Index => &mut st.index_templates,
    }
}

pub(super) fn select<'a>(
    t: &'a BTreeMap<String, Value>,
    name: &str,
) -> Vec<(&'a String, &'a Value)> {
    t.iter()
        .filter(|(n, _)| name.split(',').any(|p| glob(p, n)))
        .collect()
}

pub(super) fn normalized_settings(v: Option<&Value>, d: &Dialect) -> Result<Value, EsError> {
    let flat = flatten_settings(v.unwrap_or(&Value::Null))?;
    check_settings(&flat, d)?;
    Ok(nest_settings(&flat))
}

pub(super) fn put_legacy_template(c: &Ctx<'_>, name: &str) -> Result<Resp, EsError> {
    let body = c.json()?;
    let d = &c.shared.dialect;
    let patterns = match body.get("index_patterns").or_else(|| body.get("template")) {
        Some(Value::String(s)) => vec![Value::String(s.clone())],
        Some(Value::Array(a)) => a.clone(),
        _ => return Err(validation("index patterns are missing")),
    };
    let mut t = Map::new();
    t.insert(
        "order".into(),
        json!(body.get("order").and_then(Value::as_i64).unwrap_or(0)),
    );
    if let Some(v) = body.get("version") {
        t.insert("version".into(), v.clone());
    }
    t.insert("index_patterns".into(), Value::Array(patterns));
    t.insert(
        "settings".into(),
        normalized_settings(body.get("settings"), d)?,
    );
    let mappings = match body.get("mappings") {
        Some(m) => check_mappings(name, m, d, c.include_type_name())?.0,
        None => json!({}),
    };
    t.insert("mappings".into(), mappings);
    t.insert(
        "aliases".into(),
        body.get("aliases").cloned().unwrap_or(json!({})),
    );
    let mut st = c.state();
    if c.flag("create") == Some(true) && st.legacy_templates.contains_key(name) {
        return Err(EsError::bad_request(format!(
            "index_template [{name}] already exists"
        )));
    }
    st.legacy_templates
        .insert(name.to_string(), Value::Object(t));
    c.ok(200, ack())
}

pub(super) fn get_legacy_templates(c: &Ctx<'_>, name: &str) -> Result<Resp, EsError> {
    let st = c.state();
    let out: Map<String, Value> = select(&st.legacy_templates, name)
        .into_iter()
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    let status = if out.is_empty() && !name.contains('*') {
        404
    } else {
        200
    };
    c.ok(status, Value::Object(out))
}

pub(super) fn checked_template_part(
    c: &Ctx<'_>,
    name: &str,
    body: &Value,
) -> Result<Value, EsError> {
    let mut body = body.clone();
    if let Some(tpl) = body.get_mut("template") {
        if !tpl.is_object() {
            return Err(EsError::parse("[template] must be an object"));
        }
        if tpl.get("settings").is_some() {
            tpl["settings"] = normalized_settings(tpl.get("settings"), &c.shared.dialect)?;
        }
        if let Some(m) = tpl.get("mappings") {
            tpl["mappings"] = check_mappings(name, m, &c.shared.dialect, None)?.0;
        }
    }
    Ok(body)
}

pub(super) fn put_component_template(c: &Ctx<'_>, name: &str) -> Result<Resp, EsError> {
    let body = c.json()?;
    if !body.get("template").is_some_and(Value::is_object) {
        return Err(validation("template is missing"));
    }
    let body = checked_template_part(c, name, &body)?;
    let mut st = c.state();
    if c.flag("create") == Some(true) && st.component_templates.contains_key(name) {
        return Err(EsError::bad_request(format!(
            "component template [{name}] already exists"
        )));
    }
    st.component_templates.insert(name.to_string(), body);
    c.ok(200, ack())
}

pub(super) fn put_index_template(c: &Ctx<'_>, name: &str) -> Result<Resp, EsError> {
    let body = c.json()?;
    if body.get("index_patterns").is_none() {
        return Err(validation("index patterns are missing"));
    }
    let body = checked_template_part(c, name, &body)?;
    let mut st = c.state();
    let missing: Vec<String> = body
        .get("composed_of")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|n| !st.component_templates.contains_key(*n))
        .map(str::to_string)
        .collect();
    if !missing.is_empty() {
        return Err(EsError::new(
            400,
            "invalid_index_template_exception",
            format!(
                "index_template [{name}] invalid, cause [index template [{name}] specifies component templates {missing:?} that do not exist]"
            ),
        ));
    }
    if c.flag("create") == Some(true) && st.index_templates.contains_key(name) {
        return Err(EsError::bad_request(format!(
            "index template [{name}] already exists"
        )));
    }
    st.index_templates.insert(name.to_string(), body);
    c.ok(200, ack())
}

pub(super) fn get_composable(c: &Ctx<'_>, k: TemplateKind, name: &str) -> Result<Resp, EsError> {
    let mut st = c.state();
    let (list_key, item_key, what) = match k {
        TemplateKind::Component => (
            "component_templates",
            "component_template",
            "component template",
        ),
        _ => ("index_templates", "index_template", "index template"),
    };
    let items: Vec<Value> = select(table(&mut st, k), name)
        .into_iter()
        .map(|(n, v)| json!({"name": n, item_key: v}))
        .collect();
    if items.is_empty() && !name.contains('*') {
        return Err(EsError::new(
            404,
            "resource_not_found_exception",
            format!("{what} matching [{name}] not found"),
        ));
    }
    c.ok(200, json!({ list_key: items }))
}

pub(super) fn delete_template(c: &Ctx<'_>, k: TemplateKind, name: &str) -> Result<Resp, EsError> {
    let mut st = c.state();
    if let TemplateKind::Component = k {
        let users: Vec<String> = st
            .index_templates
            .iter()
            .filter(|(_, t)| {
                t.get("composed_of")
                    .and_then(Value::as_array)
                    .is_some_and(|a| a.iter().any(|x| x.as_str() == Some(name)))
            })
            .map(|(n, _)| n.clone())
            .collect();
        if !users.is_empty() {
            return Err(EsError::bad_request(format!(
                "component templates [{name}] cannot be removed as they are still in use by index templates {users:?}"
            )));
        }
    }
    if table(&mut st, k).remove(name).is_none() {
        let kind = match k {
            TemplateKind::Legacy => "index_template_missing_exception",
            _ => "resource_not_found_exception",
        };
        return Err(EsError::new(
            404,
            kind,
            format!("index_template [{name}] missing"),
        ));
    }
    c.ok(200, ack())
}
