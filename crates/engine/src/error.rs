//! Errors that cross the ports, typed by what the worker must do about them. The message
//! says where (file, table, key) and why; an adapter error underneath (a snapshot error
//! with its Lucene cause) is kept as its [`std::error::Error::source`], never also copied
//! into the message, so text meant to be complete (a failure reason) is the whole chain:
//! [`redact::chain`]. An adapter error that has no cause of its own and says everything
//! (a cluster or DynamoDB answer) may be the message instead.

use std::sync::Arc;

/// The adapter error under a port error, shared so that the port error stays `Clone`.
pub type Cause = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// What a failure means for the worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Nothing will work until an operator acts (credentials refused, a configuration that
    /// cannot work, a failure log that cannot be written): the worker stops with the
    /// message and spends no work-item attempt.
    Fatal,
    /// This attempt at this item failed (a corrupt or missing file, a target that stayed
    /// down past the retry budget): the item is retried later with backoff, and FAILED
    /// after its attempts run out; other items go on.
    Item,
    /// This item can never be read as it is (a format or feature the reader does not
    /// support): retrying cannot help, so the item is FAILED at this attempt, with the
    /// reason; other items go on.
    Permanent,
}

/// A source could not read a partition.
#[derive(Debug, Clone)]
pub struct SourceError {
    pub severity: Severity,
    /// Names the file, table or key, and says why (the cause, if any, is `cause`).
    pub message: String,
    /// The source's own coverage check failed at the end of a read: what it handed over
    /// does not add up to what its range holds. Nothing of the read is taken as done (the
    /// item goes back to where the read started), so that a retry checks it all again.
    pub coverage: bool,
    /// The adapter's error underneath, when there is one.
    pub cause: Option<Cause>,
}

impl std::fmt::Display for SourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SourceError {
    /// The adapter's error itself (not the `Arc` around it), so callers can downcast it.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        let cause: &(dyn std::error::Error + 'static) = self.cause.as_deref()?;
        Some(cause)
    }
}

impl SourceError {
    pub fn item(message: impl Into<String>) -> Self {
        SourceError {
            severity: Severity::Item,
            message: message.into(),
            coverage: false,
            cause: None,
        }
    }

    /// The same error, caused by `cause` (kept as its source).
    pub fn caused_by(self, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        SourceError {
            cause: Some(Arc::new(cause)),
            ..self
        }
    }

    /// A failure no retry can heal (see [`Severity::Permanent`]).
    pub fn permanent(message: impl Into<String>) -> Self {
        SourceError {
            severity: Severity::Permanent,
            ..SourceError::item(message)
        }
    }

    pub fn fatal(message: impl Into<String>) -> Self {
        SourceError {
            severity: Severity::Fatal,
            ..SourceError::item(message)
        }
    }

    /// A read whose documents and skips do not add up to what its range holds (see
    /// [`SourceError::coverage`]): the item fails and goes back to the read's start.
    pub fn coverage(message: impl Into<String>) -> Self {
        SourceError {
            coverage: true,
            ..SourceError::item(message)
        }
    }
}

/// A sink could not deliver a batch (its documents are neither delivered nor refused).
#[derive(Debug, Clone)]
pub struct SinkError {
    pub severity: Severity,
    pub message: String,
    /// The adapter's error underneath, when there is one.
    pub cause: Option<Cause>,
}

impl std::fmt::Display for SinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SinkError {
    /// The adapter's error itself (not the `Arc` around it), so callers can downcast it.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        let cause: &(dyn std::error::Error + 'static) = self.cause.as_deref()?;
        Some(cause)
    }
}

impl SinkError {
    pub fn item(message: impl Into<String>) -> Self {
        SinkError {
            severity: Severity::Item,
            message: message.into(),
            cause: None,
        }
    }

    pub fn fatal(message: impl Into<String>) -> Self {
        SinkError {
            severity: Severity::Fatal,
            ..SinkError::item(message)
        }
    }

    /// The same error, caused by `cause` (kept as its source).
    pub fn caused_by(self, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        SinkError {
            cause: Some(Arc::new(cause)),
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn the_cause_is_kept_as_the_source() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let e = SinkError::item("sending to http://h:9200").caused_by(io);
        assert_eq!(e.to_string(), "sending to http://h:9200");
        assert_eq!(redact::chain(&e), "sending to http://h:9200: refused");
        let source = e.source().expect("a source");
        assert_eq!(source.to_string(), "refused");
        let io = source
            .downcast_ref::<std::io::Error>()
            .expect("the io::Error");
        assert_eq!(io.kind(), std::io::ErrorKind::ConnectionRefused);
        let s = SourceError::fatal("table t: x").caused_by(std::fmt::Error);
        assert_eq!(s.severity, Severity::Fatal);
        assert!(s.source().is_some_and(|c| c.is::<std::fmt::Error>()));
        assert!(SourceError::item("y").source().is_none());
    }
}
