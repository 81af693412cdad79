//! The document program's flags turned into a program, its identity and its transform,
//! through [`programs::ProgramSpec`], the programs' one entry.

use std::sync::Arc;

use engine::transform::Transform;
use programs::reshape::DocumentProgram;

use crate::args::TransformArgs;

impl TransformArgs {
    /// The compiled program, if any.
    pub fn program(&self) -> anyhow::Result<Option<Arc<dyn DocumentProgram>>> {
        match self.spec() {
            Some(spec) => Ok(Some(spec.load()?.compile()?)),
            None => Ok(None),
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
        match self.spec() {
            Some(spec) => Ok(spec.load()?.wrap(then)?),
            None => Ok(then),
        }
    }
}
