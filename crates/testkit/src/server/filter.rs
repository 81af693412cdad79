//! The `filter_path` response filter: comma-separated dotted paths, `*` globs within a name, `**`
//! for any number of levels, `\.` for a dot inside a name, and `-path` to exclude instead of
//! include. Like the real servers, a path segment only ever matches one whole property name: a
//! flat key such as `http.compression` (from `flat_settings=true`) is matched by `http\.compression`
//! or `*`, never by `http.compression`. Arrays do not consume a segment; objects and arrays left
//! empty by the filter are dropped; a response with nothing left is `{}`.

use serde_json::{Map, Value};

use super::state::glob;

/// A parsed `filter_path` parameter.
#[derive(Debug, Default)]
pub(crate) struct FilterPath {
    includes: Vec<Vec<String>>,
    excludes: Vec<Vec<String>>,
}

/// Splits one path on unescaped dots, turning `\.` into a literal dot.
fn segments(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'.') => {
                cur.push('.');
                chars.next();
            }
            '.' => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

impl FilterPath {
    /// Parses the parameter; `None` when it holds no path.
    pub fn parse(param: &str) -> Option<FilterPath> {
        let mut f = FilterPath::default();
        for p in param.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match p.strip_prefix('-') {
                Some(x) if !x.is_empty() => f.excludes.push(segments(x)),
                Some(_) => {}
                None => f.includes.push(segments(p)),
            }
        }
        (!f.includes.is_empty() || !f.excludes.is_empty()).then_some(f)
    }

    /// The filtered response.
    pub fn apply(&self, v: Value) -> Value {
        let mut v = Some(v);
        if !self.excludes.is_empty() {
            let states: Vec<&[String]> = self.excludes.iter().map(Vec::as_slice).collect();
            v = v.and_then(|v| exclude(v, &states));
        }
        if !self.includes.is_empty() {
            let states: Vec<&[String]> = self.includes.iter().map(Vec::as_slice).collect();
            v = v.and_then(|v| include(v, &states));
        }
        v.unwrap_or_else(|| Value::Object(Map::new()))
    }
}

/// What the include paths keep of the value found at one path.
#[derive(Clone, Debug)]
pub(crate) enum Keep {
    /// The whole value.
    All,
    /// Nothing of it.
    Nothing,
    /// The parts of an object or array the remaining paths select (a scalar: nothing).
    Part(Vec<Vec<String>>),
}

impl Keep {
    /// Whether anything may be kept.
    pub fn any(&self) -> bool {
        !matches!(self, Keep::Nothing)
    }

    /// Whether the whole value is kept (what a scalar needs).
    pub fn all(&self) -> bool {
        matches!(self, Keep::All)
    }

    /// The kept part of the value at this path; `None` when nothing is left.
    pub fn apply(&self, v: Value) -> Option<Value> {
        match self {
            Keep::All => Some(v),
            Keep::Nothing => None,
            Keep::Part(states) => {
                let states: Vec<&[String]> = states.iter().map(Vec::as_slice).collect();
                include(v, &states)
            }
        }
    }
}

impl FilterPath {
    /// Whether there are no `-path` exclusions (then [`FilterPath::pick`] describes the filter).
    pub fn include_only(&self) -> bool {
        self.excludes.is_empty()
    }

    /// What the include paths keep of the value at `path` (property names from the root; arrays
    /// do not count as levels), so a writer can filter while it writes.
    pub fn pick(&self, path: &[&str]) -> Keep {
        let mut states: Vec<&[String]> = self.includes.iter().map(Vec::as_slice).collect();
        for name in path {
            let mut next = Vec::new();
            if step(&states, name, &mut next) {
                return Keep::All;
            }
            if next.is_empty() {
                return Keep::Nothing;
            }
            states = next;
        }
        Keep::Part(states.into_iter().map(<[String]>::to_vec).collect())
    }
}

/// What remains of the paths after a property named `name`: `true` when one path ends there.
fn step<'a>(states: &[&'a [String]], name: &str, next: &mut Vec<&'a [String]>) -> bool {
    let mut full = false;
    for s in states {
        full |= step_one(s, name, next);
    }
    // `**` keeps itself at every level: without this, `**.**.**…` would multiply the states
    next.sort_unstable();
    next.dedup();
    full
}

fn step_one<'a>(s: &'a [String], name: &str, next: &mut Vec<&'a [String]>) -> bool {
    let Some((first, rest)) = s.split_first() else {
        return false;
    };
    if first == "**" {
        if rest.is_empty() {
            return true;
        }
        // `**` stays for deeper levels, or matches no level at all
        next.push(s);
        return step_one(rest, name, next);
    }
    if !glob(first, name) {
        return false;
    }
    if rest.is_empty() {
        return true;
    }
    next.push(rest);
    false
}

fn include(v: Value, states: &[&[String]]) -> Option<Value> {
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, child) in m {
                let mut next = Vec::new();
                if step(states, &k, &mut next) {
                    out.insert(k, child);
                } else if !next.is_empty() {
                    if let Some(c) = include(child, &next) {
                        out.insert(k, c);
                    }
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Value::Array(a) => {
            let out: Vec<Value> = a.into_iter().filter_map(|x| include(x, states)).collect();
            (!out.is_empty()).then_some(Value::Array(out))
        }
        // a scalar is kept only when a path ends on its property
        _ => None,
    }
}

fn exclude(v: Value, states: &[&[String]]) -> Option<Value> {
    match v {
        Value::Object(m) => {
            let was_empty = m.is_empty();
            let mut out = Map::new();
            for (k, child) in m {
                let mut next = Vec::new();
                if step(states, &k, &mut next) {
                    continue;
                }
                if next.is_empty() {
                    out.insert(k, child);
                } else if let Some(c) = exclude(child, &next) {
                    out.insert(k, c);
                }
            }
            (was_empty || !out.is_empty()).then_some(Value::Object(out))
        }
        Value::Array(a) => Some(Value::Array(
            a.into_iter().filter_map(|x| exclude(x, states)).collect(),
        )),
        other => Some(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(p: &str, v: Value) -> Value {
        FilterPath::parse(p).expect("a filter").apply(v)
    }

    #[test]
    fn includes_paths_globs_and_double_wildcards() {
        let bulk = json!({"took": 3, "errors": false, "items": [
            {"index": {"_index": "a", "_id": "1", "status": 201, "result": "created"}},
            {"create": {"_index": "a", "_id": "2", "status": 409, "error": {"type": "x"}}}
        ]});
        assert_eq!(
            f(
                "errors,items.*.status,items.*._id,items.*.error",
                bulk.clone()
            ),
            json!({"errors": false, "items": [
                {"index": {"_id": "1", "status": 201}},
                {"create": {"_id": "2", "status": 409, "error": {"type": "x"}}}
            ]})
        );
        assert_eq!(
            f("items.*.error.type", bulk.clone()),
            json!({"items": [{"create": {"error": {"type": "x"}}}]})
        );
        assert_eq!(
            f("**.status", bulk.clone()),
            json!({"items": [{"index": {"status": 201}}, {"create": {"status": 409}}]})
        );
        assert_eq!(f("took", bulk.clone()), json!({"took": 3}));
        assert_eq!(f("nothing", bulk.clone()), json!({}));
        assert_eq!(f("-items,-took", bulk), json!({"errors": false}));
    }

    #[test]
    fn flat_keys_are_one_name() {
        let nested = json!({"persistent": {}, "defaults": {"http": {"compression": "true", "port": "9200"}}});
        let flat = json!({"persistent": {}, "defaults": {"http.compression": "true", "http.port": "9200"}});
        assert_eq!(
            f("**.http.compression", nested.clone()),
            json!({"defaults": {"http": {"compression": "true"}}})
        );
        assert_eq!(
            f("*.http.compression", nested),
            json!({"defaults": {"http": {"compression": "true"}}})
        );
        // the real servers do not split a flat key on its dots
        assert_eq!(f("**.http.compression", flat.clone()), json!({}));
        assert_eq!(
            f("defaults.http\\.compression", flat.clone()),
            json!({"defaults": {"http.compression": "true"}})
        );
        assert_eq!(
            f("defaults.http*", flat),
            json!({"defaults": {"http.compression": "true", "http.port": "9200"}})
        );
    }

    #[test]
    fn pick_agrees_with_apply() {
        let v = json!({"took": 1, "items": [{"index": {"_id": "1", "status": 201,
            "error": {"type": "x", "reason": "y"}}}]});
        for p in [
            "took",
            "items",
            "items.*._id",
            "items.*.error.type",
            "**.type",
            "nothing",
            "items.index",
        ] {
            let f = FilterPath::parse(p).unwrap();
            let by_pick = {
                let mut out = serde_json::Map::new();
                if f.pick(&["took"]).all() {
                    out.insert("took".into(), json!(1));
                }
                let mut item = serde_json::Map::new();
                for (k, x) in v["items"][0]["index"].as_object().unwrap() {
                    if let Some(x) = f.pick(&["items", "index", k]).apply(x.clone()) {
                        if x.is_object() || f.pick(&["items", "index", k]).all() {
                            item.insert(k.clone(), x);
                        }
                    }
                }
                if !item.is_empty() {
                    out.insert("items".into(), json!([{"index": item}]));
                }
                Value::Object(out)
            };
            assert_eq!(by_pick, f.apply(v.clone()), "{p}");
        }
    }

    #[test]
    fn repeated_double_wildcards_stay_cheap() {
        // 60 levels, each with a scalar the filter drops; 40 `**` in a row before `leaf`
        let (mut v, mut want) = (json!({"leaf": 1}), json!({"leaf": 1}));
        for _ in 0..60 {
            v = json!({"a": [v], "x": 2});
            want = json!({"a": [want]});
        }
        let p = vec!["**"; 40].join(".") + ".leaf";
        // without merging equal states this would need 40^60 of them
        assert_eq!(f(&p, v), want);
    }

    #[test]
    fn empty_parameters_filter_nothing() {
        assert!(FilterPath::parse("").is_none());
        assert!(FilterPath::parse(" , ,").is_none());
        assert!(FilterPath::parse("-").is_none());
    }
}
