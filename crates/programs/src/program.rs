//! jq programs that reshape documents on the way (`--transform`), run with the `jaq`
//! interpreter. A program sees one document as
//! `{"_index", "_id", "_type"?, "_routing", "op", "_source"}` and yields zero or more such
//! objects: zero filters the document out, several explode it (each with its own `_id`).
//!
//! ```
//! use programs::program::JqProgram;
//! let p = JqProgram::compile(".\"_source\".n += 1").unwrap();
//! let out = p.run_json(br#"{"_source":{"n":1}}"#).unwrap();
//! assert_eq!(out, vec![r#"{"_source":{"n":2}}"#.to_string()]);
//! ```

use std::fmt::Write as _;

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{data, unwrap_valr, Compiler, Ctx, Vars};
use jaq_json::Val;

/// A program that could not be compiled, with what was wrong and where.
#[derive(Debug, Clone, thiserror::Error)]
#[error("jq program: {0}")]
pub struct CompileError(pub String);

/// One document the program could not process (a runtime error, a bad output).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RunError(pub String);

/// Outputs one input may produce before the program is stopped with an error (a program
/// that explodes a document without bound is a mistake, not a migration).
pub const MAX_OUTPUTS: usize = 10_000;

type Filter = jaq_core::Filter<data::JustLut<Val>>;

/// A compiled jq program (compiled once; runs on any thread).
pub struct JqProgram {
    filter: Filter,
    text: String,
}

impl std::fmt::Debug for JqProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JqProgram")
            .field("text", &self.text)
            .finish()
    }
}

impl JqProgram {
    /// Parses and compiles `code` with jq's standard library.
    pub fn compile(code: &str) -> Result<JqProgram, CompileError> {
        let defs = jaq_core::defs()
            .chain(jaq_std::defs())
            .chain(jaq_json::defs());
        let funs = jaq_core::funs()
            .chain(jaq_std::funs())
            .chain(jaq_json::funs());
        let loader = Loader::new(defs);
        let arena = Arena::default();
        let modules = loader
            .load(&arena, File { code, path: () })
            .map_err(|errs| {
                let mut msg = String::new();
                for (_, e) in errs {
                    match e {
                        jaq_core::load::Error::Io(v) => {
                            for (path, why) in v {
                                let _ = write!(msg, "cannot load module {path}: {why}; ");
                            }
                        }
                        jaq_core::load::Error::Lex(v) => {
                            for (expect, at) in v {
                                let _ = write!(msg, "expected {expect:?} at {}; ", place(code, at));
                            }
                        }
                        jaq_core::load::Error::Parse(v) => {
                            for (expect, at) in v {
                                let _ = write!(
                                    msg,
                                    "expected {} at {}; ",
                                    expect.as_str(),
                                    place(code, at)
                                );
                            }
                        }
                    }
                }
                CompileError(msg.trim_end_matches("; ").to_string())
            })?;
        let filter = Compiler::default()
            .with_funs(funs)
            .compile(modules)
            .map_err(|errs| {
                let mut msg = String::new();
                for (_, v) in errs {
                    for (name, what) in v {
                        let _ = write!(msg, "undefined {what:?} {name}; ");
                    }
                }
                CompileError(msg.trim_end_matches("; ").to_string())
            })?;
        Ok(JqProgram {
            filter,
            text: code.to_string(),
        })
    }

    /// The program's text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Runs the program on `input`, collecting its outputs (at most [`MAX_OUTPUTS`]).
    pub fn run(&self, input: Val) -> Result<Vec<Val>, RunError> {
        let ctx = Ctx::<data::JustLut<Val>>::new(&self.filter.lut, Vars::new([]));
        let mut out = Vec::new();
        for v in self.filter.id.run((ctx, input)).map(unwrap_valr) {
            match v {
                Ok(v) => out.push(v),
                Err(e) => return Err(RunError(short(&e.to_string()))),
            }
            if out.len() > MAX_OUTPUTS {
                return Err(RunError(format!(
                    "the program yields more than {MAX_OUTPUTS} outputs for one input"
                )));
            }
        }
        Ok(out)
    }

    /// Runs the program on one JSON text and returns its outputs as compact JSON.
    pub fn run_json(&self, input: &[u8]) -> Result<Vec<String>, RunError> {
        let v = parse(input)?;
        Ok(self.run(v)?.iter().map(|v| v.to_string()).collect())
    }
}

/// Parses one JSON value.
pub fn parse(input: &[u8]) -> Result<Val, RunError> {
    jaq_json::read::parse_single(input).map_err(|e| RunError(format!("not JSON: {e}")))
}

/// Where `at` (a slice of `code`) starts, as `line L column C` and a short excerpt.
fn place(code: &str, at: &str) -> String {
    let offset = (at.as_ptr() as usize)
        .checked_sub(code.as_ptr() as usize)
        .filter(|o| *o <= code.len())
        .unwrap_or(code.len());
    let before = &code[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    let excerpt: String = at.chars().take(20).collect();
    if excerpt.is_empty() {
        format!("the end (line {line} column {col})")
    } else {
        format!("line {line} column {col} ({excerpt:?})")
    }
}

/// An error message cut to a length that fits a failure-log line.
fn short(s: &str) -> String {
    const MAX: usize = 300;
    if s.len() <= MAX {
        return s.to_string();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_and_runs_std_functions() {
        let p = JqProgram::compile(r#"{a: (.x | ascii_upcase), n: (.y | length)}"#).unwrap();
        assert_eq!(
            p.run_json(br#"{"x":"ab","y":[1,2,3]}"#).unwrap(),
            vec![r#"{"a":"AB","n":3}"#.to_string()]
        );
    }

    #[test]
    fn zero_and_many_outputs() {
        let p = JqProgram::compile("select(.k == 1)").unwrap();
        assert!(p.run_json(br#"{"k":2}"#).unwrap().is_empty());
        let p = JqProgram::compile(".[]").unwrap();
        assert_eq!(p.run_json(b"[1,2]").unwrap(), vec!["1", "2"]);
    }

    #[test]
    fn syntax_errors_say_where() {
        let e = JqProgram::compile(".a | {b: }").unwrap_err();
        assert!(e.0.contains("line 1"), "{e}");
        let e = JqProgram::compile("nosuchfunction(1)").unwrap_err();
        assert!(e.0.contains("nosuchfunction"), "{e}");
    }

    #[test]
    fn runtime_errors_and_unbounded_outputs_are_errors() {
        let p = JqProgram::compile(r#"error("bad doc")"#).unwrap();
        assert!(p.run_json(b"{}").unwrap_err().0.contains("bad doc"));
        let p = JqProgram::compile("range(100000)").unwrap();
        assert!(p.run_json(b"{}").unwrap_err().0.contains("more than"));
    }

    #[test]
    fn big_numbers_and_unicode_survive() {
        let p = JqProgram::compile(".").unwrap();
        let doc = r#"{"big":123456789012345678901234567890,"f":1.5,"s":"é\n\u0001"}"#;
        let out = p.run_json(doc.as_bytes()).unwrap();
        let a: serde_json::Value = serde_json::from_str(&out[0]).unwrap();
        let b: serde_json::Value = serde_json::from_str(doc).unwrap();
        assert_eq!(a["s"], b["s"]);
        assert_eq!(a["f"], b["f"]);
        assert!(
            out[0].contains("123456789012345678901234567890"),
            "{}",
            out[0]
        );
    }
}
