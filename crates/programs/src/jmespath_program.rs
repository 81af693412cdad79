//! The reference tool's JMESPath document transforms (`JsonJMESPathTransformerProvider`
//! in `--doc-transformer-config`), evaluated with the `jmespath` crate.
//!
//! Its configuration is `{"script": "EXPRESSION"}` or a list of such objects, each with
//! that one key; the expressions run one after the other, each on the previous one's
//! result. As in the reference tool, the first expression is applied to a *list* of
//! documents in the bulk-operation shape of [`crate::javascript`] (rfs passes a list of
//! one), and the last result must be a list of such documents: empty filters the input
//! (`filtered:program`), several explode it. Anything else — `null` (a path that matched
//! nothing), an object, a scalar — is that document's `transform_error`, where the
//! reference tool would stop the batch.
//!
//! ```
//! use programs::jmespath_program::JmesProgram;
//! let p = JmesProgram::new(&["[?document.n > `1`]".to_string()]).unwrap();
//! assert_eq!(p.expressions(), 1);
//! ```

use serde_json::Value;

use crate::javascript::{push_reference_outputs, to_reference};
use crate::program::RunError;
use crate::reshape::DocumentProgram;
use engine::document::Document;

/// One or more compiled JMESPath expressions, applied in order.
pub struct JmesProgram {
    exprs: Vec<jmespath::Expression<'static>>,
}

impl std::fmt::Debug for JmesProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.exprs.iter().map(|e| e.as_str()))
            .finish()
    }
}

impl JmesProgram {
    /// Compiles each expression; an error names the one (1-based) that does not parse.
    pub fn new(scripts: &[String]) -> Result<JmesProgram, RunError> {
        if scripts.is_empty() {
            return Err(RunError("no JMESPath expression".into()));
        }
        let exprs = scripts
            .iter()
            .enumerate()
            .map(|(i, s)| {
                jmespath::compile(s).map_err(|e| {
                    RunError(format!("script {}: not a JMESPath expression: {e}", i + 1))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(JmesProgram { exprs })
    }

    /// How many expressions run in a row.
    pub fn expressions(&self) -> usize {
        self.exprs.len()
    }

    /// Runs the expressions on one JSON value, returning the last result.
    pub fn search(&self, input: Value) -> Result<Value, RunError> {
        let mut current = input;
        for (i, e) in self.exprs.iter().enumerate() {
            let out = e.search(&current).map_err(|err| {
                let which = if self.exprs.len() > 1 {
                    format!("script {}: ", i + 1)
                } else {
                    String::new()
                };
                RunError(format!("{which}{err}"))
            })?;
            current = serde_json::to_value(&*out)
                .map_err(|err| RunError(format!("the expression's result: {err}")))?;
        }
        Ok(current)
    }
}

impl DocumentProgram for JmesProgram {
    fn reshape(&self, doc: &Document, out: &mut Vec<Document>) -> Result<Option<String>, RunError> {
        let input = Value::Array(vec![to_reference(doc)?]);
        let result = self.search(input)?;
        if !result.is_array() {
            let what = match &result {
                Value::Null => "null (a path that matched nothing?)",
                Value::Object(_) => "an object",
                _ => "a scalar",
            };
            return Err(RunError(format!(
                "the JMESPath result is {what}; a list of documents is expected (the \
                 expression is applied to a list of documents, e.g. `[*].{{…}}` or `[?…]`)"
            )));
        }
        push_reference_outputs(doc, result, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coordination::Position;
    use engine::document::Op;

    fn doc(n: i64) -> Document {
        Document {
            position: Position::Doc(1),
            op: Op::Index,
            index: "books".into(),
            id: "7".into(),
            doc_type: None,
            routing: Some("r".into()),
            source: bytes::Bytes::from(format!(r#"{{"title":"T","n":{n},"tmp":1}}"#)),
        }
    }

    fn run(p: &JmesProgram, d: &Document) -> Result<Vec<Document>, RunError> {
        let mut out = Vec::new();
        p.reshape(d, &mut out)?;
        Ok(out)
    }

    #[test]
    fn reshapes_filters_and_routes_like_the_reference() {
        let p = JmesProgram::new(&[
            "[?document.n != `2`]".to_string(),
            "[*].{operation_type: operation_type, operation: merge(operation, {_index: 'books_new'}), \
             document: {title: document.title, n: document.n, copy: document.title}}"
                .to_string(),
        ])
        .unwrap();
        let out = run(&p, &doc(1)).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(&*out[0].index, "books_new");
        assert_eq!(out[0].id, "7");
        assert_eq!(out[0].routing.as_deref(), Some("r"));
        let v: Value = serde_json::from_slice(&out[0].source).unwrap();
        assert_eq!(v, serde_json::json!({"title": "T", "n": 1, "copy": "T"}));
        assert!(run(&p, &doc(2)).unwrap().is_empty(), "filtered");
    }

    #[test]
    fn explodes_into_two_documents() {
        let p = JmesProgram::new(&["[*].[merge(@, {operation: merge(operation, {_id: join('-', [operation._id, 'a'])})}), \
             merge(@, {operation: merge(operation, {_id: join('-', [operation._id, 'b'])})})] | []"
            .to_string()])
        .unwrap();
        let out = run(&p, &doc(1)).unwrap();
        let ids: Vec<&str> = out.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, ["7-a", "7-b"]);
    }

    #[test]
    fn results_that_are_not_lists_and_bad_expressions_are_errors() {
        let p = JmesProgram::new(&["[0].document".to_string()]).unwrap();
        let e = run(&p, &doc(1)).unwrap_err();
        assert!(e.0.contains("an object"), "{e}");
        let p = JmesProgram::new(&["nosuchfield".to_string()]).unwrap();
        let e = run(&p, &doc(1)).unwrap_err();
        assert!(e.0.contains("null"), "{e}");
        let p = JmesProgram::new(&["[*].{document: `1`}".to_string()]).unwrap();
        let e = run(&p, &doc(1)).unwrap_err();
        assert!(e.0.contains("document must be an object"), "{e}");
        let e = JmesProgram::new(&["[?".to_string()]).unwrap_err();
        assert!(e.0.contains("script 1"), "{e}");
        let p = JmesProgram::new(&["abs(@)".to_string()]).unwrap();
        assert!(run(&p, &doc(1)).is_err());
    }
}
