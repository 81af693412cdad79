//! The document program's flags turned into a program, its identity and its transform,
//! through [`programs::ProgramSpec`], the programs' one entry.

use std::sync::Arc;

use engine::transform::Transform;
use programs::reshape::DocumentProgram;

use crate::args::TransformArgs;

impl TransformArgs {
    /// The spec of the program, with --js-engine chosen for the JavaScript ones it compiles.
    fn spec_for_compiling(&self) -> anyhow::Result<Option<programs::ProgramSpec>> {
        // Empty: arguments built in code (`TransformArgs::default()`).
        let engine = match self.js_engine.as_str() {
            "" => programs::javascript::JsEngine::Auto,
            e => e.parse().map_err(|e| anyhow::anyhow!("--js-engine: {e}"))?,
        };
        programs::javascript::set_default_engine(engine);
        Ok(self.spec())
    }

    /// The compiled program of a snapshot migration, if any (a transformer configuration
    /// that only holds the type mapping provider has none: its rules are routes).
    pub fn program(&self) -> anyhow::Result<Option<Arc<dyn DocumentProgram>>> {
        match self.spec_for_compiling()? {
            Some(spec) => Ok(spec.load()?.compile_routed()?.program),
            None => Ok(None),
        }
    }

    /// The reference tool's `TypeMappingSanitizationTransformerProvider` rules of
    /// --doc-transformer-config(-file), if it lists that provider.
    pub fn type_mapping(&self) -> anyhow::Result<Option<metadata::TypeMapping>> {
        match self.spec_for_compiling()? {
            Some(spec) => Ok(spec.load()?.type_mapping()?),
            None => Ok(None),
        }
    }

    /// [`TransformArgs::wrap`] for a snapshot migration, whose routes (`then`) apply the
    /// type mapping provider's rules.
    pub fn wrap_routed(&self, then: Arc<dyn Transform>) -> anyhow::Result<Arc<dyn Transform>> {
        match self.spec_for_compiling()? {
            Some(spec) => Ok(spec.load()?.wrap_routed(then)?),
            None => Ok(then),
        }
    }

    /// The program's digest for the migration's identity, or `None` without a program.
    pub fn identity(&self) -> anyhow::Result<Option<String>> {
        match self.spec() {
            Some(spec) => Ok(Some(spec.load()?.identity())),
            None => Ok(None),
        }
    }

    /// `then` with the program in front of it (or `then` alone without a program: the
    /// pipeline's fast path stays as it is).
    pub fn wrap(&self, then: Arc<dyn Transform>) -> anyhow::Result<Arc<dyn Transform>> {
        match self.spec_for_compiling()? {
            Some(spec) => Ok(spec.load()?.wrap(then)?),
            None => Ok(then),
        }
    }
}
