//! The one entry from a command's options to a document program: where the program comes
//! from ([`ProgramSpec`]: jq text or file, the reference tool's transformer config or
//! file), read once ([`Program`]), compiled (jq programs that only edit fields take the
//! fast path of [`crate::field_edits`]), its digest for the migration's identity, and the
//! [`Transform`] it makes in front of a naming transform.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use engine::transform::Transform;

use crate::field_edits::FieldEdits;
use crate::program::{CompileError, JqProgram};
use crate::reshape::{DocumentProgram, Reshape};
use crate::transformer_config::{self, TransformerConfigError};

/// Where a document program comes from, as a command names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProgramSpec {
    /// A jq program's text (`--transform`).
    Jq(String),
    /// A file holding a jq program (`--transform-file`).
    JqFile(PathBuf),
    /// The reference tool's transformer configuration, JSON (`--doc-transformer-config`);
    /// scripts it names are found from the working directory.
    TransformerConfig(String),
    /// A file holding such a configuration (`--doc-transformer-config-file`); scripts it
    /// names are found beside it.
    TransformerConfigFile(PathBuf),
}

/// A program that could not be read or compiled; the message names the option or file.
#[derive(Debug, thiserror::Error)]
pub enum ProgramError {
    #[error("{origin}")]
    Read {
        origin: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{origin}")]
    Jq {
        origin: String,
        #[source]
        source: CompileError,
    },
    #[error(transparent)]
    Config(#[from] TransformerConfigError),
}

/// What kind of program a text is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Jq,
    /// Script files the configuration names are found from `base`.
    TransformerConfig {
        base: PathBuf,
    },
}

/// A program's text, read once from where its spec says, with where it came from.
#[derive(Debug, Clone)]
pub struct Program {
    kind: Kind,
    text: String,
    /// The option (and file) the text came from, for errors.
    origin: String,
}

impl ProgramSpec {
    /// The flag this spec is given by.
    fn flag(&self) -> &'static str {
        match self {
            ProgramSpec::Jq(_) => "--transform",
            ProgramSpec::JqFile(_) => "--transform-file",
            ProgramSpec::TransformerConfig(_) => "--doc-transformer-config",
            ProgramSpec::TransformerConfigFile(_) => "--doc-transformer-config-file",
        }
    }

    /// Reads the program's text (a file's, or the text given).
    pub fn load(&self) -> Result<Program, ProgramError> {
        let flag = self.flag();
        let read = |f: &Path| {
            let origin = format!("{flag} {}", f.display());
            match std::fs::read_to_string(f) {
                Ok(text) => Ok((text, origin)),
                Err(source) => Err(ProgramError::Read { origin, source }),
            }
        };
        let ((text, origin), kind) = match self {
            ProgramSpec::Jq(t) => ((t.clone(), flag.to_string()), Kind::Jq),
            ProgramSpec::JqFile(f) => (read(f)?, Kind::Jq),
            ProgramSpec::TransformerConfig(t) => (
                (t.clone(), flag.to_string()),
                Kind::TransformerConfig {
                    base: std::env::current_dir().unwrap_or_default(),
                },
            ),
            ProgramSpec::TransformerConfigFile(f) => (
                read(f)?,
                Kind::TransformerConfig {
                    base: f.parent().map(PathBuf::from).unwrap_or_default(),
                },
            ),
        };
        Ok(Program { kind, text, origin })
    }
}

impl Program {
    /// The program's digest for the migration's identity: its kind and its text as given
    /// (a config file's text, not the scripts it names).
    pub fn identity(&self) -> String {
        let kind = match self.kind {
            Kind::Jq => "jq",
            Kind::TransformerConfig { .. } => "doc-transformer-config",
        };
        engine::job::program_digest(kind, &self.text)
    }

    /// The compiled program. A jq program of the common forms (fields set, computed,
    /// updated or deleted at any depth, conditions, `_index` set) runs on the raw `_source`
    /// without building the document ([`FieldEdits`]).
    pub fn compile(&self) -> Result<Arc<dyn DocumentProgram>, ProgramError> {
        match &self.kind {
            Kind::TransformerConfig { base } => {
                Ok(transformer_config::parse(&self.text, &self.origin, base)?)
            }
            Kind::Jq => {
                let p = Arc::new(JqProgram::compile(&self.text).map_err(|source| {
                    ProgramError::Jq {
                        origin: self.origin.clone(),
                        source,
                    }
                })?);
                Ok(match FieldEdits::recognise(p.clone()) {
                    Some(fast) => {
                        tracing::debug!(?fast, "the program runs on raw sources");
                        Arc::new(fast)
                    }
                    None => p,
                })
            }
        }
    }

    /// `then` (a naming transform) with the program in front of it, carrying the
    /// program's identity.
    pub fn wrap(&self, then: Arc<dyn Transform>) -> Result<Arc<dyn Transform>, ProgramError> {
        Ok(Arc::new(
            Reshape::new(self.compile()?, then).with_identity(Some(self.identity())),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_is_read_once_and_names_its_origin() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p.jq");
        std::fs::write(&f, "._source.x = 1").unwrap();
        let from_file = ProgramSpec::JqFile(f.clone()).load().unwrap();
        let inline = ProgramSpec::Jq("._source.x = 1".into()).load().unwrap();
        assert_eq!(from_file.identity(), inline.identity());
        assert!(from_file.identity().starts_with("jq:"));
        let config = ProgramSpec::TransformerConfig("._source.x = 1".into())
            .load()
            .unwrap();
        assert_ne!(config.identity(), inline.identity());
        assert!(inline.compile().is_ok());

        let missing = dir.path().join("missing.jq");
        let e = ProgramSpec::JqFile(missing.clone()).load().unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("--transform-file {}", missing.display())
        );
        assert!(std::error::Error::source(&e).is_some());

        let e = ProgramSpec::Jq("._source.x = ".into())
            .load()
            .unwrap()
            .compile()
            .err()
            .unwrap();
        assert_eq!(e.to_string(), "--transform");
        assert!(std::error::Error::source(&e)
            .unwrap()
            .to_string()
            .starts_with("jq program: "));

        let e = ProgramSpec::TransformerConfig("[]".into())
            .load()
            .unwrap()
            .compile()
            .err()
            .unwrap();
        assert!(
            e.to_string().starts_with("--doc-transformer-config: "),
            "{e}"
        );
    }
}
