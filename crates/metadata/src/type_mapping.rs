//! The reference tool's `TypeMappingSanitizationTransformerProvider` (its usual transform
//! for Elasticsearch ≤ 6 sources): a table of where the documents of each
//! `(source index, mapping type)` pair go. rfs does not run it per document: every pair
//! is known from the snapshot's metadata, so [`crate::Options::with_type_mapping`]
//! expands the rules once into exact type routes (the ones `--type-route` gives), which
//! the metadata plan and the document routing then share.
//!
//! The semantics follow the reference implementation (opensearch-migrations), read from:
//! - `transformation/transformationPlugins/jsonMessageTransformers/jsonTypeMappingsSanitizationTransformerProvider/src/main/java/org/opensearch/migrations/transform/TypeMappingSanitizationTransformerProvider.java`:
//!   the configuration is an object with `staticMappings`, `regexMappings`, `featureFlags`
//!   and `sourceProperties`; `sourceProperties` is the one required key.
//! - `transformation/transformationPlugins/jsonMessageTransformers/jsonTypeMappingsSanitizationTransformer/src/main/java/org/opensearch/migrations/transform/TypeMappingsSanitizationTransformer.java`:
//!   without `regexMappings` the rule list is one rule, index `(.+)`, type `(.+)`, target
//!   `$1` — every type of an index into an index of the index's own name (its README still
//!   describes an older per-type default; the code is what runs).
//! - `transformation/standardJavascriptTransforms/src/typeMappingsSanitizer.js`
//!   (`convertSourceIndexToTarget`, `convertSourceIndexToTargetViaRegex`,
//!   `processMetadataRequest`, `processBulkIndex`, `main`):
//!   * an index named in `staticMappings` is decided there alone: its type's entry is the
//!     target, a type without an entry is dropped (regex rules are not consulted for it);
//!   * other indices go through `regexMappings` in list order, the first match winning:
//!     `^<sourceIndexPattern>/<sourceTypePattern>$` is matched against `<index>/<type>`,
//!     so the index pattern's groups are numbered first, and the target is
//!     `targetIndexPattern` with JavaScript's `String.replace` substitutions (`$1`…`$99`,
//!     `$<name>`, `$&`, `$$`);
//!   * no match, or an empty target, drops the pair's documents (and its mapping);
//!   * a document without `_type` (Elasticsearch 7+), and a metadata item with no types,
//!     is looked up as type `_doc`;
//!   * several types of one index sent to one target become one index whose mapping is
//!     the union of theirs (rfs merges them as `--multi-type merge` does);
//!   * `main` refuses a context without `sourceProperties.version.major`; `featureFlags`
//!     gate only the replayer's HTTP request rewrites, not backfill.
//!
//! Differences, on purpose: the patterns are compiled by Rust's `regex` crate, which has
//! no look-around or back-references (such a pattern is an error naming its rule, never a
//! silent mismatch); keys the provider does not read are ignored, as there, but with a
//! warning.

use std::collections::BTreeMap;

use regex::Regex;
use serde_json::Value;

/// The provider's name, as the configuration lists it.
pub const PROVIDER: &str = "TypeMappingSanitizationTransformerProvider";

/// What is wrong with the provider's configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TypeMappingError {
    #[error(
        "expected an object with sourceProperties (required), staticMappings, regexMappings, featureFlags"
    )]
    NotAnObject,
    #[error(
        "sourceProperties is required: {{\"version\": {{\"major\": N, \"minor\": N}}}}, the source cluster's version"
    )]
    NoSourceProperties,
    /// `sourceProperties` has no positive integer `version.major` (or a bad `minor`).
    #[error("sourceProperties: {0}")]
    BadSourceProperties(String),
    /// `staticMappings` is not `{index: {type: target}}`; the text says where.
    #[error("staticMappings: {0}")]
    BadStatic(String),
    /// `regexMappings` is not a list of rules; the text says where.
    #[error("regexMappings: {0}")]
    BadRegexList(String),
    /// A rule (counted from 1) lacks one of its three string keys, or has another.
    #[error("regexMappings entry {entry}: {detail}")]
    BadRule { entry: usize, detail: String },
    /// A rule's patterns (joined as matched) do not compile.
    #[error("regexMappings entry {entry}: pattern {pattern:?}: {detail}")]
    BadPattern {
        entry: usize,
        pattern: String,
        detail: String,
    },
    #[error("featureFlags must be an object")]
    BadFeatureFlags,
}

/// One `regexMappings` rule, compiled.
#[derive(Debug, Clone)]
struct Rule {
    /// `^<index pattern>/<type pattern>$`.
    regex: Regex,
    target: String,
}

/// The provider's rules: where the documents (and the mapping) of each
/// `(index, type)` pair go.
#[derive(Debug, Clone)]
pub struct TypeMapping {
    static_mappings: BTreeMap<String, BTreeMap<String, String>>,
    rules: Vec<Rule>,
}

impl TypeMapping {
    /// Reads the provider's configuration (the value under its name in the list).
    pub fn from_config(config: &Value) -> Result<TypeMapping, TypeMappingError> {
        let c = config.as_object().ok_or(TypeMappingError::NotAnObject)?;
        for k in c.keys() {
            if !matches!(
                k.as_str(),
                "staticMappings" | "regexMappings" | "sourceProperties" | "featureFlags"
            ) {
                // The reference tool reads only its four keys (files of a
                // providerConfigDirs directory come in under their file names).
                tracing::warn!("{PROVIDER}: key {k:?} ignored, as the reference tool ignores it");
            }
        }
        source_properties(c.get("sourceProperties"))?;
        match c.get("featureFlags") {
            None | Some(Value::Null) | Some(Value::Object(_)) => {}
            Some(_) => return Err(TypeMappingError::BadFeatureFlags),
        }
        let static_mappings = match c.get("staticMappings") {
            None | Some(Value::Null) => BTreeMap::new(),
            Some(v) => static_mappings(v)?,
        };
        let rules = match c.get("regexMappings") {
            // The reference tool's default: every type of an index into the index's name.
            None | Some(Value::Null) => vec![Rule {
                regex: Regex::new("^(.+)/(.+)$").expect("a valid pattern"),
                target: "$1".into(),
            }],
            Some(Value::Array(list)) => list
                .iter()
                .enumerate()
                .map(|(i, r)| rule(i + 1, r))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(TypeMappingError::BadRegexList(
                "expected a list of {sourceIndexPattern, sourceTypePattern, targetIndexPattern}"
                    .into(),
            )),
        };
        Ok(TypeMapping {
            static_mappings,
            rules,
        })
    }

    /// Where the documents of `doc_type` in `index` go (`_doc` for an index without
    /// types), or `None` when they are left out.
    pub fn target(&self, index: &str, doc_type: &str) -> Option<String> {
        let target = match self.static_mappings.get(index) {
            Some(types) => types.get(doc_type).cloned(),
            None => {
                let joined = format!("{index}/{doc_type}");
                self.rules.iter().find_map(|r| {
                    r.regex
                        .captures(&joined)
                        .map(|c| substitute(&r.target, &c, &r.regex))
                })
            }
        };
        target.filter(|t| !t.is_empty())
    }
}

fn source_properties(v: Option<&Value>) -> Result<(), TypeMappingError> {
    let bad = |s: &str| Err(TypeMappingError::BadSourceProperties(s.to_string()));
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Err(TypeMappingError::NoSourceProperties);
    };
    // The reference tool's workflow writes the version as text too ("ES 7.10").
    if let Some(text) = v.get("version").and_then(Value::as_str) {
        let major = Regex::new(r"(\d+)(?:\.\d+)?")
            .expect("a valid pattern")
            .captures(text)
            .and_then(|c| c[1].parse::<u64>().ok());
        return match major {
            Some(m) if m > 0 => Ok(()),
            _ => bad("version must be {\"major\": N, \"minor\": N} or text such as \"ES 7.10\""),
        };
    }
    let Some(version) = v.get("version").and_then(Value::as_object) else {
        return bad("expected {\"version\": {\"major\": N, \"minor\": N}}");
    };
    match version.get("major").and_then(Value::as_u64) {
        Some(m) if m > 0 => {}
        _ => return bad("version.major must be a positive integer"),
    }
    match version.get("minor") {
        None | Some(Value::Null) => {}
        Some(m) if m.as_u64().is_some() => {}
        Some(_) => return bad("version.minor must be an integer"),
    }
    Ok(())
}

fn static_mappings(
    v: &Value,
) -> Result<BTreeMap<String, BTreeMap<String, String>>, TypeMappingError> {
    let bad = |s: String| TypeMappingError::BadStatic(s);
    let top = v
        .as_object()
        .ok_or_else(|| bad("expected {\"INDEX\": {\"TYPE\": \"TARGET\"}}".into()))?;
    let mut out = BTreeMap::new();
    for (index, types) in top {
        let types = types.as_object().ok_or_else(|| {
            bad(format!(
                "{index}: expected an object of type → target index"
            ))
        })?;
        let mut m = BTreeMap::new();
        for (t, target) in types {
            let target = target
                .as_str()
                .ok_or_else(|| bad(format!("{index}.{t}: the target index must be a string")))?;
            m.insert(t.clone(), target.to_string());
        }
        out.insert(index.clone(), m);
    }
    Ok(out)
}

fn rule(entry: usize, v: &Value) -> Result<Rule, TypeMappingError> {
    let bad = |detail: String| TypeMappingError::BadRule { entry, detail };
    let o = v.as_object().ok_or_else(|| {
        bad("expected {sourceIndexPattern, sourceTypePattern, targetIndexPattern}".into())
    })?;
    const KEYS: [&str; 3] = [
        "sourceIndexPattern",
        "sourceTypePattern",
        "targetIndexPattern",
    ];
    if let Some(k) = o.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(bad(format!("unknown key {k:?}")));
    }
    let get = |k: &str| {
        o.get(k)
            .and_then(Value::as_str)
            .ok_or_else(|| bad(format!("{k} must be a string")))
    };
    let (index, ty, target) = (get(KEYS[0])?, get(KEYS[1])?, get(KEYS[2])?);
    let pattern = format!("^{index}/{ty}$");
    let regex = Regex::new(&pattern).map_err(|e| TypeMappingError::BadPattern {
        entry,
        pattern: pattern.clone(),
        detail: e.to_string(),
    })?;
    Ok(Rule {
        regex,
        target: target.to_string(),
    })
}

/// `template` with JavaScript's `String.prototype.replace` substitutions for a match
/// that covers the whole input (ECMAScript `GetSubstitution`): `$$` → `$`; `$&` → the
/// match; `` $` `` and `$'` → the (empty) text before and after it; `$n` / `$nn` → group
/// n (1–99; two digits when that group exists, else one), empty when it did not
/// participate, the text kept as is when there is no such group (`$0` included);
/// `$<name>` → the named group (empty when it did not participate or does not exist),
/// kept as is when the pattern has no named groups or the `>` is missing.
fn substitute(template: &str, caps: &regex::Captures<'_>, regex: &Regex) -> String {
    let groups = caps.len() - 1;
    let has_names = regex.capture_names().flatten().next().is_some();
    let group = |i: usize| caps.get(i).map_or("", |m| m.as_str());
    let b = template.as_bytes();
    let mut out = String::with_capacity(template.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'$' || i + 1 >= b.len() {
            let ch = template[i..].chars().next().expect("in bounds");
            out.push(ch);
            i += ch.len_utf8();
            continue;
        }
        match b[i + 1] {
            b'$' => {
                out.push('$');
                i += 2;
            }
            b'&' => {
                out.push_str(group(0));
                i += 2;
            }
            b'`' | b'\'' => i += 2,
            d if d.is_ascii_digit() => {
                let one = usize::from(d - b'0');
                let two = b
                    .get(i + 2)
                    .filter(|c| c.is_ascii_digit())
                    .map(|c| one * 10 + usize::from(c - b'0'));
                match two {
                    Some(n) if (1..=groups).contains(&n) => {
                        out.push_str(group(n));
                        i += 3;
                    }
                    _ if (1..=groups).contains(&one) => {
                        out.push_str(group(one));
                        i += 2;
                    }
                    _ => {
                        out.push('$');
                        i += 1;
                    }
                }
            }
            b'<' if has_names => match template[i + 2..].find('>') {
                Some(end) => {
                    let name = &template[i + 2..i + 2 + end];
                    out.push_str(caps.name(name).map_or("", |m| m.as_str()));
                    i += 2 + end + 1;
                }
                None => {
                    out.push('$');
                    i += 1;
                }
            },
            _ => {
                out.push('$');
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tm(v: Value) -> TypeMapping {
        TypeMapping::from_config(&v).unwrap()
    }

    const SP: &str = r#"{"version": {"major": 5, "minor": 6}}"#;

    fn with(mut v: Value) -> Value {
        v["sourceProperties"] = serde_json::from_str(SP).unwrap();
        v
    }

    #[test]
    fn static_mappings_decide_their_indices_alone() {
        let t = tm(with(json!({
            "staticMappings": {"activity": {"user": "users", "post": "posts"}, "gone": {}},
            "regexMappings": [{"sourceIndexPattern": "(.*)", "sourceTypePattern": "(.*)", "targetIndexPattern": "$1_$2"}]
        })));
        assert_eq!(t.target("activity", "user").as_deref(), Some("users"));
        assert_eq!(t.target("activity", "post").as_deref(), Some("posts"));
        // A type the index's entry does not list is dropped: the regex rules are not
        // consulted for an index named in staticMappings.
        assert_eq!(t.target("activity", "comment"), None);
        assert_eq!(t.target("gone", "anything"), None);
        // Other indices go through the rules.
        assert_eq!(t.target("other", "doc").as_deref(), Some("other_doc"));
    }

    #[test]
    fn regex_rules_in_order_with_group_references() {
        let t = tm(with(json!({"regexMappings": [
            {"sourceIndexPattern": "time-(.*)", "sourceTypePattern": "(cpu)", "targetIndexPattern": "time-$1-$2"},
            {"sourceIndexPattern": "(.*)", "sourceTypePattern": "(.*)-(cpu)", "targetIndexPattern": "$2-$3-$1"},
            {"sourceIndexPattern": "(logs)", "sourceTypePattern": ".*", "targetIndexPattern": "$1"}
        ]})));
        assert_eq!(
            t.target("time-nov11", "cpu").as_deref(),
            Some("time-nov11-cpu")
        );
        assert_eq!(
            t.target("time-nov11", "host123-cpu").as_deref(),
            Some("host123-cpu-time-nov11")
        );
        assert_eq!(t.target("logs", "access").as_deref(), Some("logs"));
        // The whole `index/type` must match: nothing matches → dropped.
        assert_eq!(t.target("logs2", "access"), None);
        assert_eq!(t.target("time-nov11", "mem"), None);
    }

    #[test]
    fn without_regex_mappings_every_type_merges_into_its_index() {
        let t = tm(with(json!({"staticMappings": {"a": {"t1": "x"}}})));
        assert_eq!(t.target("b", "t1").as_deref(), Some("b"));
        assert_eq!(t.target("b", "t2").as_deref(), Some("b"));
        assert_eq!(t.target("b", "_doc").as_deref(), Some("b"));
        assert_eq!(t.target("a", "t2"), None);
        // An empty list is no rule at all: everything not static is dropped.
        let t = tm(with(json!({"regexMappings": []})));
        assert_eq!(t.target("b", "t1"), None);
    }

    #[test]
    fn javascript_substitutions() {
        let t = tm(with(json!({"regexMappings": [
            {"sourceIndexPattern": "(?<ix>[a-z]+)(\\d*)", "sourceTypePattern": "(x)?(t)", "targetIndexPattern": "$<ix>-$2-$3$4-$$-$0-$9-$&-$<nope>-$`$'"}
        ]})));
        assert_eq!(
            t.target("ab12", "t").as_deref(),
            Some("ab-12-t-$-$0-$9-ab12/t--")
        );
        // `$10` with fewer than ten groups is group 1 then "0"; `$01` is group 1.
        let t = tm(with(json!({"regexMappings": [
            {"sourceIndexPattern": "(.+)", "sourceTypePattern": ".+", "targetIndexPattern": "$10_$01"}
        ]})));
        assert_eq!(t.target("i", "t").as_deref(), Some("i0_i"));
        // Without named groups `$<` stays as written; an empty target drops the pair.
        let t = tm(with(json!({
            "staticMappings": {"e": {"t": ""}},
            "regexMappings": [
            {"sourceIndexPattern": "(.+)", "sourceTypePattern": ".+", "targetIndexPattern": "$<x>$1"}
        ]})));
        assert_eq!(t.target("i", "t").as_deref(), Some("$<x>i"));
        assert_eq!(t.target("e", "t"), None);
    }

    #[test]
    fn bad_configurations_are_named() {
        let err = |v: Value| TypeMapping::from_config(&v).unwrap_err();
        assert_eq!(err(json!({})), TypeMappingError::NoSourceProperties);
        assert_eq!(err(json!([])), TypeMappingError::NotAnObject);
        assert!(matches!(
            err(json!({"sourceProperties": {"version": {"major": 0}}})),
            TypeMappingError::BadSourceProperties(_)
        ));
        // Unknown keys are ignored (with a warning), as the reference tool ignores them.
        assert!(TypeMapping::from_config(&with(json!({"staticMappings.json": "…"}))).is_ok());
        // The version as the reference tool's workflow writes it.
        let text = |v: &str| {
            TypeMapping::from_config(&json!({"sourceProperties": {"version": v}})).is_ok()
        };
        assert!(text("ES 7.10") && text("6.8") && !text("ES") && !text("0.9"));
        let e = err(with(json!({"staticMappings": {"a": {"t": 1}}})));
        assert!(e.to_string().contains("a.t"), "{e}");
        let e = err(with(json!({"regexMappings": [
            {"sourceIndexPattern": "a", "sourceTypePattern": "b", "targetIndexPattern": "c"},
            {"sourceIndexPattern": "a", "targetIndexPattern": "c"}
        ]})));
        assert_eq!(
            e,
            TypeMappingError::BadRule {
                entry: 2,
                detail: "sourceTypePattern must be a string".into()
            }
        );
        let e = err(with(json!({"regexMappings": [
            {"sourceIndexPattern": "(?=a)", "sourceTypePattern": "b", "targetIndexPattern": "c"}
        ]})));
        assert!(
            matches!(&e, TypeMappingError::BadPattern { entry: 1, pattern, .. } if pattern == "^(?=a)/b$"),
            "{e}"
        );
        assert_eq!(
            err(with(json!({"featureFlags": 1}))),
            TypeMappingError::BadFeatureFlags
        );
        assert!(
            TypeMapping::from_config(&with(json!({"featureFlags": {"rewrite_bulk": true}})))
                .is_ok()
        );
    }
}
