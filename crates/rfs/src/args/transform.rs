//! `--transform` / `--transform-file` / `--doc-transformer-config(-file)`: the document
//! program of every command that moves or verifies documents.

use std::path::PathBuf;

use programs::ProgramSpec;

/// The document program of a migration.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TransformArgs {
    /// A jq program applied to every document, seen as
    /// `{"_index","_id","_type"?,"_routing","op","_source"}` with the source index name.
    /// It may change any field, `_index`, `_id` or `_routing`; yield nothing to filter the
    /// document out (counted as `filtered:program`, or `filtered:REASON` for an output
    /// `{"_filtered":"REASON"}`), or several documents (each with its own `_id`). An error
    /// is a `transform_error` in the failure log. Renames, prefixes and type routes apply
    /// to documents whose `_index` the program leaves alone. Try it with `rfs transform
    /// test`. Example: `._source.title |= ascii_downcase | del(._source.tmp)`.
    #[arg(
        long,
        env = "RFS_TRANSFORM",
        value_name = "PROGRAM",
        conflicts_with = "transform_file"
    )]
    pub transform: Option<String>,
    /// The --transform program read from a file.
    #[arg(long, env = "RFS_TRANSFORM_FILE", value_name = "FILE.jq")]
    pub transform_file: Option<PathBuf>,
    /// The reference tool's transformer configuration (JSON), so its transforms move over
    /// unchanged: `[{"JsonJSTransformerProvider": {"initializationScript": "…",
    /// "bindingsObject": "{}"}}]` (or `initializationScriptFile`). The script evaluates to
    /// `main(bindings)`, which returns a function from a list of documents
    /// `{operation_type, operation: {_index, _id, routing}, document}` (as Maps) to a list.
    /// Or JMESPath: `[{"JsonJMESPathTransformerProvider": {"script": "[?document.n > `1`]"}}]`
    /// (a list of `{"script"}` runs them in a row), applied to that list of documents; the
    /// result must be a list. `TypeMappingSanitizationTransformerProvider`
    /// (`staticMappings`, `regexMappings`, `sourceProperties`) becomes type routes, as
    /// --type-route gives them, for every (index, type) pair of the snapshot: types sent to
    /// one index are merged, a pair no rule routes is skipped as `type_mapping`. Other
    /// providers are refused by name.
    #[arg(
        long,
        env = "RFS_DOC_TRANSFORMER_CONFIG",
        value_name = "JSON",
        conflicts_with_all = ["transform", "transform_file", "doc_transformer_config_file"]
    )]
    pub doc_transformer_config: Option<String>,
    /// --doc-transformer-config read from a file (script files in it are found relative
    /// to the file).
    #[arg(
        long,
        env = "RFS_DOC_TRANSFORMER_CONFIG_FILE",
        value_name = "FILE.json",
        conflicts_with_all = ["transform", "transform_file"]
    )]
    pub doc_transformer_config_file: Option<PathBuf>,
    /// What runs the JavaScript transforms of --doc-transformer-config: `node` (V8, in a
    /// `node` child process per reader thread, given a batch of documents per call;
    /// RFS_NODE names the binary, else `node` on the PATH, 18 or later), `quickjs`
    /// (embedded, one document per call, several times slower) or `auto` (node when a
    /// usable one is found). The outputs are the same, and so is the migration's identity.
    #[arg(
        long,
        env = "RFS_JS_ENGINE",
        value_name = "ENGINE",
        default_value = "auto",
        value_parser = ["auto", "node", "quickjs"]
    )]
    pub js_engine: String,
}

impl TransformArgs {
    /// `true` when a program is given.
    pub fn is_set(&self) -> bool {
        self.spec().is_some()
    }

    /// Where the program comes from (the parser lets at most one of the flags through).
    pub fn spec(&self) -> Option<ProgramSpec> {
        if let Some(t) = &self.doc_transformer_config {
            Some(ProgramSpec::TransformerConfig(t.clone()))
        } else if let Some(f) = &self.doc_transformer_config_file {
            Some(ProgramSpec::TransformerConfigFile(f.clone()))
        } else if let Some(t) = &self.transform {
            Some(ProgramSpec::Jq(t.clone()))
        } else {
            self.transform_file.clone().map(ProgramSpec::JqFile)
        }
    }
}
