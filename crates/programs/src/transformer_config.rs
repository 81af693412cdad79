//! The reference tool's `--doc-transformer-config`: a JSON list of providers, each
//! `{"ProviderName": {…its configuration…}}`, applied in order. Supported:
//! `JsonJSTransformerProvider` with `initializationScript` or `initializationScriptFile`
//! and `bindingsObject` (a JSON text, as the reference tool takes it, or an object), and
//! `JsonJMESPathTransformerProvider` with `{"script": "…"}` or a list of such objects
//! (see [`crate::jmespath_program`]). Any other provider is an error naming it.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::javascript::JsProgram;
use crate::jmespath_program::JmesProgram;
use crate::program::RunError;
use crate::reshape::DocumentProgram;
use engine::document::Document;

/// What is wrong with a transformer configuration.
#[derive(Debug, thiserror::Error)]
#[error("{origin}: {message}")]
pub struct TransformerConfigError {
    /// Where the configuration came from (a flag, a file).
    pub origin: String,
    pub message: String,
}

pub const JAVASCRIPT: &str = "JsonJSTransformerProvider";
pub const JMESPATH: &str = "JsonJMESPathTransformerProvider";

/// Builds the program a configuration describes. `base` resolves relative script files.
pub fn parse(
    text: &str,
    origin: &str,
    base: &Path,
) -> Result<Arc<dyn DocumentProgram>, TransformerConfigError> {
    let err = |message: String| TransformerConfigError {
        origin: origin.to_string(),
        message,
    };
    let v: Value = serde_json::from_str(text).map_err(|e| err(format!("not JSON: {e}")))?;
    let entries = match v {
        Value::Array(a) => a,
        one @ Value::Object(_) => vec![one],
        _ => return Err(err("expected a list of {\"Provider\": {…}} objects".into())),
    };
    if entries.is_empty() {
        return Err(err("the list of transformers is empty".into()));
    }
    let mut chain: Vec<Arc<dyn DocumentProgram>> = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let Some(obj) = entry.as_object().filter(|o| o.len() == 1) else {
            return Err(err(format!(
                "entry {}: expected one {{\"Provider\": {{…}}}} object",
                i + 1
            )));
        };
        let (provider, config) = obj.iter().next().expect("one key");
        let program: Arc<dyn DocumentProgram> = match provider.as_str() {
            JAVASCRIPT => Arc::new(
                javascript(config, base)
                    .map_err(|m| err(format!("entry {} ({provider}): {m}", i + 1)))?,
            ),
            JMESPATH => Arc::new(
                jmespath(config).map_err(|m| err(format!("entry {} ({provider}): {m}", i + 1)))?,
            ),
            other => {
                return Err(err(format!(
                    "entry {}: provider {other} is not supported by rfs (supported: \
                     {JAVASCRIPT}, {JMESPATH}; a jq program with --transform does the rest)",
                    i + 1
                )))
            }
        };
        chain.push(program);
    }
    Ok(if chain.len() == 1 {
        chain.pop().expect("one")
    } else {
        Arc::new(Chain(chain))
    })
}

fn javascript(config: &Value, base: &Path) -> Result<JsProgram, String> {
    let c = config
        .as_object()
        .ok_or("expected an object with initializationScript and bindingsObject")?;
    let sources: Vec<&str> = [
        "initializationScript",
        "initializationScriptFile",
        "initializationResourcePath",
    ]
    .into_iter()
    .filter(|k| c.contains_key(*k))
    .collect();
    let script = match sources.as_slice() {
        ["initializationScript"] => c["initializationScript"]
            .as_str()
            .ok_or("initializationScript must be a string")?
            .to_string(),
        ["initializationScriptFile"] => {
            let f = c["initializationScriptFile"]
                .as_str()
                .ok_or("initializationScriptFile must be a string")?;
            let path = base.join(f);
            std::fs::read_to_string(&path)
                .map_err(|e| format!("initializationScriptFile {}: {e}", path.display()))?
        }
        ["initializationResourcePath"] => {
            return Err(
                "initializationResourcePath names a resource inside the reference \
                        tool's Java archive, which rfs does not have: copy the script to a \
                        file and give it as initializationScriptFile"
                    .into(),
            )
        }
        [] => return Err("one of initializationScript, initializationScriptFile is needed".into()),
        _ => return Err(format!("only one of {} may be given", sources.join(", "))),
    };
    let bindings = match c.get("bindingsObject") {
        None => return Err("bindingsObject is missing (\"{}\" for none)".into()),
        Some(Value::String(s)) => s.clone(),
        Some(v @ Value::Object(_)) => v.to_string(),
        Some(_) => return Err("bindingsObject must be a JSON text or an object".into()),
    };
    JsProgram::new(script, bindings).map_err(|e| e.0)
}

/// `{"script": "…"}` or a list of such objects (each with that one key), as the reference
/// tool takes them.
fn jmespath(config: &Value) -> Result<JmesProgram, String> {
    const USAGE: &str = "expected {\"script\": \"EXPRESSION\"} or a list of such objects";
    let one = |c: &Value| -> Result<String, String> {
        match c.as_object() {
            Some(o) if o.len() == 1 => match o.get("script") {
                Some(Value::String(s)) => Ok(s.clone()),
                Some(_) => Err("script must be a string (a JMESPath expression)".into()),
                None => Err(format!(
                    "unknown key {:?}: {USAGE}",
                    o.keys().next().expect("one")
                )),
            },
            _ => Err(USAGE.into()),
        }
    };
    let scripts = match config {
        Value::Array(list) if !list.is_empty() => list.iter().map(one).collect::<Result<_, _>>()?,
        Value::Object(_) => vec![one(config)?],
        _ => return Err(USAGE.into()),
    };
    JmesProgram::new(&scripts).map_err(|e| e.0)
}

/// Programs applied in order: each output of one is the input of the next.
struct Chain(Vec<Arc<dyn DocumentProgram>>);

impl DocumentProgram for Chain {
    fn reshape(&self, doc: &Document, out: &mut Vec<Document>) -> Result<Option<String>, RunError> {
        let mut current = vec![doc.clone()];
        let mut filtered = None;
        for p in &self.0 {
            let mut next = Vec::new();
            for d in &current {
                if let Some(r) = p.reshape(d, &mut next)? {
                    filtered = Some(r);
                }
            }
            current = next;
            if current.is_empty() {
                break;
            }
        }
        out.extend(current);
        Ok(filtered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coordination::Position;
    use engine::document::Op;

    fn doc() -> Document {
        Document {
            position: Position::Doc(1),
            op: Op::Index,
            index: "i".into(),
            id: "1".into(),
            doc_type: None,
            routing: None,
            source: bytes::Bytes::from_static(br#"{"a":1}"#),
        }
    }

    #[test]
    fn a_chain_of_javascript_providers() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("two.js"),
            "function main(c) { return (docs) => docs.map(d => { d.get('document').set('b', c.b); return d; }); }\n(() => main)();",
        )
        .unwrap();
        let config = r#"[
          {"JsonJSTransformerProvider": {"initializationScript": "(() => (c) => (docs) => docs.map(d => { d.get('document').set('a', 2); return d; }))()", "bindingsObject": "{}"}},
          {"JsonJSTransformerProvider": {"initializationScriptFile": "two.js", "bindingsObject": {"b": "x"}}}
        ]"#;
        let p = parse(config, "--doc-transformer-config", dir.path()).unwrap();
        let mut out = Vec::new();
        p.reshape(&doc(), &mut out).unwrap();
        let v: Value = serde_json::from_slice(&out[0].source).unwrap();
        assert_eq!(v, serde_json::json!({"a": 2, "b": "x"}));
    }

    #[test]
    fn a_jmespath_provider_after_a_javascript_one() {
        let config = r#"[
          {"JsonJSTransformerProvider": {"initializationScript": "(() => (c) => (docs) => docs.map(d => { d.get('document').set('a', 2); return d; }))()", "bindingsObject": "{}"}},
          {"JsonJMESPathTransformerProvider": [
            {"script": "[?document.a == `2`]"},
            {"script": "[*].merge(@, {document: merge(document, {b: 'x'})})"}
          ]}
        ]"#;
        let p = parse(config, "--doc-transformer-config", Path::new(".")).unwrap();
        let mut out = Vec::new();
        p.reshape(&doc(), &mut out).unwrap();
        let v: Value = serde_json::from_slice(&out[0].source).unwrap();
        assert_eq!(v, serde_json::json!({"a": 2, "b": "x"}));
    }

    #[test]
    fn unsupported_providers_and_bad_configs_are_named() {
        let base = Path::new(".");
        let e = parse(r#"[{"JsonJoltTransformerProvider": {}}]"#, "F", base)
            .err()
            .unwrap();
        assert!(e.to_string().contains("JsonJoltTransformerProvider"), "{e}");
        for bad in [
            r#"{"JsonJMESPathTransformerProvider": {}}"#,
            r#"{"JsonJMESPathTransformerProvider": {"script": 1}}"#,
            r#"{"JsonJMESPathTransformerProvider": {"script": "[?"}}"#,
            r#"{"JsonJMESPathTransformerProvider": [{"script": "@", "x": 1}]}"#,
            r#"{"JsonJMESPathTransformerProvider": []}"#,
        ] {
            let e = parse(bad, "F", base).err().unwrap();
            assert!(
                e.to_string().contains("JsonJMESPathTransformerProvider"),
                "{bad}: {e}"
            );
        }
        let e = parse(
            r#"[{"JsonJSTransformerProvider": {"initializationScript": "1"}}]"#,
            "F",
            base,
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("bindingsObject"), "{e}");
        let e = parse(
            r#"[{"JsonJSTransformerProvider": {"initializationResourcePath": "x.js", "bindingsObject": "{}"}}]"#,
            "F",
            base,
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("initializationScriptFile"), "{e}");
        assert!(parse("[]", "F", base).is_err());
        assert!(parse("{nope", "F", base).is_err());
    }
}
