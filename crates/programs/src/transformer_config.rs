//! The reference tool's `--doc-transformer-config`: a JSON list of providers, each
//! `{"ProviderName": {…its configuration…}}`, applied in order. Supported:
//! `JsonJSTransformerProvider` with `initializationScript` or `initializationScriptFile`
//! and `bindingsObject` (a JSON text, as the reference tool takes it, or an object), and
//! `JsonJMESPathTransformerProvider` with `{"script": "…"}` or a list of such objects
//! (see [`crate::jmespath_program`]), and `TypeMappingSanitizationTransformerProvider`,
//! which is no document program: its rules ([`metadata::TypeMapping`]) become the type
//! routes of a snapshot migration, expanded for the snapshot's `(index, type)` pairs
//! before any document is read (at most one per list; wherever it stands in the list, the
//! other providers see each document before its type route applies, with its source
//! index and `_type`). Any other provider is an error naming it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::javascript::JsProgram;
use crate::jmespath_program::JmesProgram;
use crate::program::RunError;
use crate::reshape::DocumentProgram;
use engine::document::Document;
use metadata::type_mapping::{TypeMapping, TypeMappingError, PROVIDER as TYPE_MAPPING};

/// What is wrong with a transformer configuration. Each message starts with where the
/// configuration came from (a flag, a file).
#[derive(Debug, thiserror::Error)]
pub enum TransformerConfigError {
    /// The configuration is not JSON.
    #[error("{origin}: not JSON")]
    NotJson {
        origin: String,
        #[source]
        source: serde_json::Error,
    },
    /// The JSON is neither a list nor one provider object.
    #[error("{origin}: expected a list of {{\"Provider\": {{…}}}} objects")]
    NotAList { origin: String },
    /// The list is empty.
    #[error("{origin}: the list of transformers is empty")]
    Empty { origin: String },
    /// An entry (counted from 1) is not an object with one key.
    #[error("{origin}: entry {entry}: expected one {{\"Provider\": {{…}}}} object")]
    NotAProvider { origin: String, entry: usize },
    /// An entry (counted from 1) names a provider rfs does not have.
    #[error(
        "{origin}: entry {entry}: provider {provider} is not supported by rfs (supported: \
         {JAVASCRIPT}, {JMESPATH}, {TYPE_MAPPING}; a jq program with --transform does the rest)"
    )]
    Unsupported {
        origin: String,
        entry: usize,
        provider: String,
    },
    /// The configuration of a provider's entry (counted from 1) is wrong.
    #[error("{origin}: entry {entry} ({provider})")]
    Provider {
        origin: String,
        entry: usize,
        provider: String,
        #[source]
        source: ProviderError,
    },
}

/// What is wrong with the configuration of one provider.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("expected an object with initializationScript and bindingsObject")]
    NotAnObject,
    /// The named key is not a string.
    #[error("{0} must be a string")]
    NotAString(&'static str),
    #[error("initializationScriptFile {}", path.display())]
    ScriptFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "initializationResourcePath names a resource inside the reference \
         tool's Java archive, which rfs does not have: copy the script to a \
         file and give it as initializationScriptFile"
    )]
    ResourcePath,
    #[error("one of initializationScript, initializationScriptFile is needed")]
    NoScript,
    /// More than one of the script keys (named) is given.
    #[error("only one of {} may be given", .0.join(", "))]
    ManyScripts(Vec<&'static str>),
    #[error("bindingsObject is missing (\"{{}}\" for none)")]
    NoBindings,
    #[error("bindingsObject must be a JSON text or an object")]
    BadBindings,
    #[error("script must be a string (a JMESPath expression)")]
    ScriptNotAString,
    /// A JMESPath entry has another key than `script`.
    #[error("unknown key {key:?}: {JMESPATH_USAGE}")]
    UnknownKey { key: String },
    #[error("{JMESPATH_USAGE}")]
    JmesPathUsage,
    /// The script or expression does not compile.
    #[error(transparent)]
    Compile(RunError),
    /// The type mapping provider's configuration is wrong.
    #[error(transparent)]
    TypeMapping(TypeMappingError),
    /// A file of `providerConfigFiles` / `providerConfigDirs` cannot be read.
    #[error("{}", path.display())]
    ConfigFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Such a file, for a key read as JSON, is not JSON.
    #[error("{}: not JSON", path.display())]
    ConfigFileJson {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// `providerConfigDirs` / `providerConfigFiles` is not shaped as the reference tool
    /// takes it (the text says how).
    #[error("{0}")]
    ConfigFiles(&'static str),
    /// A second type mapping provider in one list.
    #[error("only one {TYPE_MAPPING} may be given: its rules are one routing table")]
    SecondTypeMapping,
}

const JMESPATH_USAGE: &str = "expected {\"script\": \"EXPRESSION\"} or a list of such objects";

pub const JAVASCRIPT: &str = "JsonJSTransformerProvider";
pub const JMESPATH: &str = "JsonJMESPathTransformerProvider";

/// What a configuration describes: a document program (the providers that are one, in
/// order), the type mapping provider's rules, or both.
pub struct Parsed {
    pub program: Option<Arc<dyn DocumentProgram>>,
    pub type_mapping: Option<TypeMapping>,
}

/// Reads a configuration. `base` resolves relative script files.
pub fn parse(text: &str, origin: &str, base: &Path) -> Result<Parsed, TransformerConfigError> {
    let origin = || origin.to_string();
    let v: Value =
        serde_json::from_str(text).map_err(|source| TransformerConfigError::NotJson {
            origin: origin(),
            source,
        })?;
    let entries = match v {
        Value::Array(a) => a,
        one @ Value::Object(_) => vec![one],
        _ => return Err(TransformerConfigError::NotAList { origin: origin() }),
    };
    if entries.is_empty() {
        return Err(TransformerConfigError::Empty { origin: origin() });
    }
    let mut chain: Vec<Arc<dyn DocumentProgram>> = Vec::new();
    let mut type_mapping = None;
    for (i, entry) in entries.iter().enumerate() {
        let Some(obj) = entry.as_object().filter(|o| o.len() == 1) else {
            return Err(TransformerConfigError::NotAProvider {
                origin: origin(),
                entry: i + 1,
            });
        };
        let (provider, config) = obj.iter().next().expect("one key");
        let in_entry = |source: ProviderError| TransformerConfigError::Provider {
            origin: origin(),
            entry: i + 1,
            provider: provider.clone(),
            source,
        };
        let program: Arc<dyn DocumentProgram> = match provider.as_str() {
            JAVASCRIPT => Arc::new(javascript(config, base).map_err(in_entry)?),
            JMESPATH => Arc::new(jmespath(config).map_err(in_entry)?),
            TYPE_MAPPING => {
                if type_mapping.is_some() {
                    return Err(in_entry(ProviderError::SecondTypeMapping));
                }
                let config = file_backed(config, base).map_err(in_entry)?;
                type_mapping = Some(
                    TypeMapping::from_config(&config)
                        .map_err(|e| in_entry(ProviderError::TypeMapping(e)))?,
                );
                continue;
            }
            other => {
                return Err(TransformerConfigError::Unsupported {
                    origin: origin(),
                    entry: i + 1,
                    provider: other.to_string(),
                })
            }
        };
        chain.push(program);
    }
    let program: Option<Arc<dyn DocumentProgram>> = match chain.len() {
        0 => None,
        1 => chain.pop(),
        _ => Some(Arc::new(Chain(chain))),
    };
    Ok(Parsed {
        program,
        type_mapping,
    })
}

fn javascript(config: &Value, base: &Path) -> Result<JsProgram, ProviderError> {
    let c = config.as_object().ok_or(ProviderError::NotAnObject)?;
    let sources: Vec<&'static str> = [
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
            .ok_or(ProviderError::NotAString("initializationScript"))?
            .to_string(),
        ["initializationScriptFile"] => {
            let f = c["initializationScriptFile"]
                .as_str()
                .ok_or(ProviderError::NotAString("initializationScriptFile"))?;
            let path = base.join(f);
            std::fs::read_to_string(&path)
                .map_err(|source| ProviderError::ScriptFile { path, source })?
        }
        ["initializationResourcePath"] => return Err(ProviderError::ResourcePath),
        [] => return Err(ProviderError::NoScript),
        _ => return Err(ProviderError::ManyScripts(sources)),
    };
    let bindings = match c.get("bindingsObject") {
        None => return Err(ProviderError::NoBindings),
        Some(Value::String(s)) => s.clone(),
        Some(v @ Value::Object(_)) => v.to_string(),
        Some(_) => return Err(ProviderError::BadBindings),
    };
    JsProgram::new(script, bindings).map_err(ProviderError::Compile)
}

/// The provider's configuration with its file-backed values read in, as the reference
/// tool's loader does (`TransformationLoader.resolveProviderConfig`): every regular file
/// of each `providerConfigDirs` directory (by file name; the key is the file name), then
/// each `providerConfigFiles` key's file, then the inline keys, the later winning. A
/// path is `"…"` or `{"path": "…"}`, relative to `base`. The keys this provider reads
/// (`staticMappings`, `regexMappings`, `featureFlags`, `sourceProperties`) are read as
/// JSON, any other as text.
fn file_backed(config: &Value, base: &Path) -> Result<Value, ProviderError> {
    const DIRS: &str = "providerConfigDirs";
    const FILES: &str = "providerConfigFiles";
    let Some(c) = config.as_object() else {
        return Ok(config.clone());
    };
    if !c.contains_key(DIRS) && !c.contains_key(FILES) {
        return Ok(config.clone());
    }
    let path_of = |v: &Value| -> Option<PathBuf> {
        let p = match v {
            Value::String(p) => p,
            Value::Object(o) => o.get("path")?.as_str()?,
            _ => return None,
        };
        Some(base.join(p))
    };
    let read = |key: &str, path: PathBuf| -> Result<Value, ProviderError> {
        let text = std::fs::read_to_string(&path).map_err(|source| ProviderError::ConfigFile {
            path: path.clone(),
            source,
        })?;
        if matches!(
            key,
            "staticMappings" | "regexMappings" | "featureFlags" | "sourceProperties"
        ) {
            serde_json::from_str(&text)
                .map_err(|source| ProviderError::ConfigFileJson { path, source })
        } else {
            Ok(Value::String(text))
        }
    };
    let mut out = serde_json::Map::new();
    match c.get(DIRS) {
        None | Some(Value::Null) => {}
        Some(Value::Array(dirs)) => {
            for d in dirs {
                let dir = path_of(d).ok_or(ProviderError::ConfigFiles(
                    "providerConfigDirs: each entry must be a path or {\"path\": …}",
                ))?;
                let listing =
                    std::fs::read_dir(&dir).map_err(|source| ProviderError::ConfigFile {
                        path: dir.clone(),
                        source,
                    })?;
                let mut files = Vec::new();
                for e in listing {
                    let e = e.map_err(|source| ProviderError::ConfigFile {
                        path: dir.clone(),
                        source,
                    })?;
                    if e.path().is_file() {
                        files.push(e.path());
                    }
                }
                files.sort_by_key(|f| f.file_name().map(|n| n.to_os_string()));
                for f in files {
                    let key = f
                        .file_name()
                        .map(|n| n.to_string_lossy().to_string())
                        .unwrap_or_default();
                    let v = read(&key, f)?;
                    out.insert(key, v);
                }
            }
        }
        Some(_) => {
            return Err(ProviderError::ConfigFiles(
                "providerConfigDirs must be a list",
            ))
        }
    }
    match c.get(FILES) {
        None | Some(Value::Null) => {}
        Some(Value::Object(files)) => {
            for (key, f) in files {
                let path = path_of(f).ok_or(ProviderError::ConfigFiles(
                    "providerConfigFiles: each value must be a path or {\"path\": …}",
                ))?;
                let v = read(key, path)?;
                out.insert(key.clone(), v);
            }
        }
        Some(_) => {
            return Err(ProviderError::ConfigFiles(
                "providerConfigFiles must be an object of key → path",
            ))
        }
    }
    for (k, v) in c {
        if k != DIRS && k != FILES {
            out.insert(k.clone(), v.clone());
        }
    }
    Ok(Value::Object(out))
}

/// `{"script": "…"}` or a list of such objects (each with that one key), as the reference
/// tool takes them.
fn jmespath(config: &Value) -> Result<JmesProgram, ProviderError> {
    let one = |c: &Value| -> Result<String, ProviderError> {
        match c.as_object() {
            Some(o) if o.len() == 1 => match o.get("script") {
                Some(Value::String(s)) => Ok(s.clone()),
                Some(_) => Err(ProviderError::ScriptNotAString),
                None => Err(ProviderError::UnknownKey {
                    key: o.keys().next().expect("one").clone(),
                }),
            },
            _ => Err(ProviderError::JmesPathUsage),
        }
    };
    let scripts = match config {
        Value::Array(list) if !list.is_empty() => list.iter().map(one).collect::<Result<_, _>>()?,
        Value::Object(_) => vec![one(config)?],
        _ => return Err(ProviderError::JmesPathUsage),
    };
    JmesProgram::new(&scripts).map_err(ProviderError::Compile)
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
        let p = parse(config, "--doc-transformer-config", dir.path())
            .unwrap()
            .program
            .unwrap();
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
        let p = parse(config, "--doc-transformer-config", Path::new("."))
            .unwrap()
            .program
            .unwrap();
        let mut out = Vec::new();
        p.reshape(&doc(), &mut out).unwrap();
        let v: Value = serde_json::from_slice(&out[0].source).unwrap();
        assert_eq!(v, serde_json::json!({"a": 2, "b": "x"}));
    }

    const TYPE_MAPPING_ENTRY: &str = r#"{"TypeMappingSanitizationTransformerProvider": {
        "staticMappings": {"a": {"t1": "x", "t2": "x"}},
        "regexMappings": [{"sourceIndexPattern": "(b.*)", "sourceTypePattern": "(.*)", "targetIndexPattern": "$1-$2"}],
        "sourceProperties": {"version": {"major": 6, "minor": 8}}}}"#;

    #[test]
    fn the_type_mapping_provider_is_routes_not_a_program() {
        let base = Path::new(".");
        // Alone: no document program, only its rules.
        let p = parse(&format!("[{TYPE_MAPPING_ENTRY}]"), "F", base).unwrap();
        assert!(p.program.is_none());
        let rules = p.type_mapping.unwrap();
        assert_eq!(rules.target("a", "t1").as_deref(), Some("x"));
        assert_eq!(rules.target("a", "t3"), None);
        assert_eq!(rules.target("b1", "doc").as_deref(), Some("b1-doc"));
        assert_eq!(rules.target("c", "doc"), None);
        // With another provider, before or after it: both parts.
        let jmes = r#"{"JsonJMESPathTransformerProvider": {"script": "[*].merge(@, {document: merge(document, {b: 'x'})})"}}"#;
        for config in [
            format!("[{TYPE_MAPPING_ENTRY}, {jmes}]"),
            format!("[{jmes}, {TYPE_MAPPING_ENTRY}]"),
        ] {
            let p = parse(&config, "F", base).unwrap();
            assert!(p.type_mapping.is_some());
            let mut out = Vec::new();
            p.program.unwrap().reshape(&doc(), &mut out).unwrap();
            let v: Value = serde_json::from_slice(&out[0].source).unwrap();
            assert_eq!(v, serde_json::json!({"a": 1, "b": "x"}));
        }
        // Twice: an error naming the second entry.
        let e = parse(
            &format!("[{TYPE_MAPPING_ENTRY}, {TYPE_MAPPING_ENTRY}]"),
            "F",
            base,
        )
        .err()
        .unwrap();
        assert!(matches!(
            &e,
            TransformerConfigError::Provider {
                entry: 2,
                source: ProviderError::SecondTypeMapping,
                ..
            }
        ));
        // A bad configuration names the provider and what is wrong.
        let e = parse(
            r#"[{"TypeMappingSanitizationTransformerProvider": {"staticMappings": {}}}]"#,
            "F",
            base,
        )
        .err()
        .unwrap();
        let text = chain(&e);
        assert!(
            text.contains("TypeMappingSanitizationTransformerProvider")
                && text.contains("sourceProperties is required"),
            "{text}"
        );
    }

    /// `providerConfigDirs` and `providerConfigFiles` are read as the reference tool's
    /// loader reads them, relative to the configuration's file; inline keys win.
    #[test]
    fn type_mapping_values_from_files() {
        let dir = tempfile::tempdir().unwrap();
        let mounted = dir.path().join("mounted");
        std::fs::create_dir(&mounted).unwrap();
        std::fs::write(
            mounted.join("regexMappings"),
            r#"[{"sourceIndexPattern": "(.*)", "sourceTypePattern": "(.*)", "targetIndexPattern": "$1_$2"}]"#,
        )
        .unwrap();
        std::fs::write(mounted.join("notes.txt"), "not JSON, not read as JSON").unwrap();
        std::fs::write(
            dir.path().join("static.json"),
            r#"{"a": {"t": "from-file"}, "b": {"t": "from-file"}}"#,
        )
        .unwrap();
        let config = r#"[{"TypeMappingSanitizationTransformerProvider": {
            "providerConfigDirs": [{"path": "mounted"}],
            "providerConfigFiles": {"staticMappings": {"path": "static.json"}},
            "sourceProperties": {"version": "ES 5.6"}}}]"#;
        let rules = parse(config, "F", dir.path())
            .unwrap()
            .type_mapping
            .unwrap();
        assert_eq!(rules.target("a", "t").as_deref(), Some("from-file"));
        assert_eq!(rules.target("c", "t").as_deref(), Some("c_t"));
        // An inline key wins over its file.
        let config = config.replace(
            r#""sourceProperties""#,
            r#""staticMappings": {"a": {"t": "inline"}}, "sourceProperties""#,
        );
        let rules = parse(&config, "F", dir.path())
            .unwrap()
            .type_mapping
            .unwrap();
        assert_eq!(rules.target("a", "t").as_deref(), Some("inline"));
        assert_eq!(rules.target("b", "t").as_deref(), Some("b_t"));
        // A missing file is named.
        let bad = r#"[{"TypeMappingSanitizationTransformerProvider": {
            "providerConfigFiles": {"staticMappings": "nope.json"},
            "sourceProperties": {"version": {"major": 5}}}}]"#;
        let e = parse(bad, "F", dir.path()).err().unwrap();
        assert!(chain(&e).contains("nope.json"), "{}", chain(&e));
    }

    /// `e` and its causes, joined by ": " as the binary prints them.
    fn chain(e: &dyn std::error::Error) -> String {
        let mut out = e.to_string();
        let mut next = e.source();
        while let Some(c) = next {
            out.push_str(": ");
            out.push_str(&c.to_string());
            next = c.source();
        }
        out
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
        // What is wrong with the entry is its cause.
        assert!(matches!(
            &e,
            TransformerConfigError::Provider {
                source: ProviderError::NoBindings,
                ..
            }
        ));
        assert!(chain(&e).contains("bindingsObject"), "{e}");
        let e = parse(
            r#"[{"JsonJSTransformerProvider": {"initializationResourcePath": "x.js", "bindingsObject": "{}"}}]"#,
            "F",
            base,
        )
        .err()
        .unwrap();
        assert!(chain(&e).contains("initializationScriptFile"), "{e}");
        assert!(parse("[]", "F", base).is_err());
        assert!(parse("{nope", "F", base).is_err());
    }
}
