//! The one entry from a command's options to a document program: where the program comes
//! from ([`ProgramSpec`]: jq text or file, the reference tool's transformer config or
//! file), read once ([`Program`]), compiled (jq programs that only edit fields take the
//! fast path of [`crate::field_edits`]), its digest for the migration's identity, and the
//! [`Transform`] it makes in front of a naming transform.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use engine::document::{Document, Skip};
use engine::transform::{Shaped, Transform, Unroutable};

use crate::field_edits::FieldEdits;
use crate::program::{CompileError, JqProgram};
use crate::reshape::{DocumentProgram, Reshape};
use crate::transformer_config::{self, Parsed, TransformerConfigError};
use metadata::type_mapping::PROVIDER as TYPE_MAPPING;
use metadata::TypeMapping;

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
    /// The configuration holds the type mapping provider where nothing routes mapping
    /// types (only a snapshot migration does).
    #[error(
        "{origin}: {TYPE_MAPPING} routes the mapping types of a snapshot's indices; it \
         applies to rfs run, documents, metadata and verify with --repo, not here"
    )]
    TypeMappingNotHere { origin: String },
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

    /// The compiled program, where mapping types are not routed: a configuration with the
    /// type mapping provider is an error here (see [`Program::compile_routed`]).
    pub fn compile(&self) -> Result<Arc<dyn DocumentProgram>, ProgramError> {
        match self.compile_routed()? {
            Parsed {
                program: Some(p),
                type_mapping: None,
            } => Ok(p),
            _ => Err(ProgramError::TypeMappingNotHere {
                origin: self.origin.clone(),
            }),
        }
    }

    /// The type mapping provider's rules of a transformer configuration, if it has them.
    pub fn type_mapping(&self) -> Result<Option<TypeMapping>, ProgramError> {
        Ok(self.compile_routed()?.type_mapping)
    }

    /// The compiled program (`None` when the configuration only holds the type mapping
    /// provider) and the type mapping provider's rules, for a snapshot migration, whose
    /// routes apply them. A jq program of the common forms (fields set, computed, updated
    /// or deleted at any depth, conditions, `_index` set) runs on the raw `_source`
    /// without building the document ([`FieldEdits`]).
    pub fn compile_routed(&self) -> Result<Parsed, ProgramError> {
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
                Ok(Parsed {
                    program: Some(match FieldEdits::recognise(p.clone()) {
                        Some(fast) => {
                            tracing::debug!(?fast, "the program runs on raw sources");
                            Arc::new(fast)
                        }
                        None => p,
                    }),
                    type_mapping: None,
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

    /// [`Program::wrap`] for a snapshot migration, whose routes (`then`) already apply
    /// the type mapping provider's rules: `then` unchanged but for the identity when
    /// there is no other program.
    pub fn wrap_routed(
        &self,
        then: Arc<dyn Transform>,
    ) -> Result<Arc<dyn Transform>, ProgramError> {
        Ok(match self.compile_routed()?.program {
            Some(p) => Arc::new(Reshape::new(p, then).with_identity(Some(self.identity()))),
            // The configuration is still part of the migration's identity.
            None => Arc::new(Identified {
                then,
                identity: self.identity(),
            }),
        })
    }
}

/// A transform unchanged but for the program identity it reports: a configuration that
/// only routes mapping types changes no document, yet names the migration.
struct Identified {
    then: Arc<dyn Transform>,
    identity: String,
}

impl Transform for Identified {
    fn apply(&self, doc: &mut Document) -> Result<(), Unroutable> {
        self.then.apply(doc)
    }

    fn reshapes(&self) -> bool {
        self.then.reshapes()
    }

    fn program_identity(&self) -> Option<String> {
        Some(self.identity.clone())
    }

    fn apply_all(&self, doc: Document, out: &mut Vec<Document>) -> Result<Shaped, Box<Skip>> {
        self.then.apply_all(doc, out)
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

        // The type mapping provider only where types are routed.
        let tm = ProgramSpec::TransformerConfig(
            r#"[{"TypeMappingSanitizationTransformerProvider": {"sourceProperties": {"version": {"major": 5}}}}]"#
                .into(),
        )
        .load()
        .unwrap();
        let e = tm.compile().err().unwrap();
        assert!(matches!(e, ProgramError::TypeMappingNotHere { .. }), "{e}");
        assert!(tm.type_mapping().unwrap().is_some());
        let parsed = tm.compile_routed().unwrap();
        assert!(parsed.program.is_none() && parsed.type_mapping.is_some());
        struct Keep;
        impl Transform for Keep {
            fn apply(&self, _: &mut Document) -> Result<(), Unroutable> {
                Ok(())
            }
        }
        let t = tm.wrap_routed(Arc::new(Keep)).unwrap();
        assert_eq!(t.program_identity(), Some(tm.identity()));
        assert!(!t.reshapes());

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
