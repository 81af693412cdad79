//! An error with its causes as one text. The rule for errors in rfs: a message says where
//! and why, and its cause is returned by `source()`, never also printed in the message.
//! So text that is stored or logged (a failure reason, a status line, a store record)
//! must walk the chain to say everything: [`chain`] does, and says each part once
//! because no part repeats its cause.

use std::error::Error;
use std::fmt;

/// `e` and its causes, outermost first, joined by `": "` (parts that say nothing are
/// left out), for `format!` and logs: `tracing::warn!("{}", Chain(&e))`.
pub struct Chain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut cause: Option<&(dyn Error + 'static)> = Some(self.0);
        while let Some(e) = cause {
            let text = e.to_string();
            if !text.is_empty() {
                if !first {
                    f.write_str(": ")?;
                }
                f.write_str(&text)?;
                first = false;
            }
            cause = e.source();
        }
        Ok(())
    }
}

/// `e` and its causes as one text (see [`Chain`]): `reading /r/index-0: No such file or
/// directory`.
pub fn chain(e: &(dyn Error + 'static)) -> String {
    Chain(e).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Part(&'static str, Option<Box<Part>>);

    impl fmt::Display for Part {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl Error for Part {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            self.1.as_deref().map(|p| p as &(dyn Error + 'static))
        }
    }

    #[test]
    fn each_cause_is_said_once_outermost_first() {
        let e = Part(
            "reading /r/index-0",
            Some(Box::new(Part(
                "",
                Some(Box::new(Part("No such file or directory", None))),
            ))),
        );
        assert_eq!(chain(&e), "reading /r/index-0: No such file or directory");
        assert_eq!(chain(&Part("alone", None)), "alone");
    }
}
