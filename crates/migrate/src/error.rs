//! Errors that cross the ports, typed by what the worker must do about them.

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

/// The error a [`SourceError`] or a sink's error came from (shared: the errors are `Clone`).
pub type Cause = std::sync::Arc<dyn std::error::Error + Send + Sync + 'static>;

/// A source could not read a partition.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct SourceError {
    pub severity: Severity,
    /// Names the file, table or key, and says why.
    pub message: String,
    /// The source's own coverage check failed at the end of a read: what it handed over
    /// does not add up to what its range holds. Nothing of the read is taken as done (the
    /// item goes back to where the read started), so that a retry checks it all again.
    pub coverage: bool,
    /// The error of the part below (the repository, the database, the cluster client),
    /// when there is one; `message` already says what it says.
    #[source]
    pub cause: Option<Cause>,
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

    /// The same error, keeping `cause` as its [`std::error::Error::source`].
    pub fn caused_by(self, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        SourceError {
            cause: Some(std::sync::Arc::new(cause)),
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
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct SinkError {
    pub severity: Severity,
    pub message: String,
}

impl SinkError {
    pub fn item(message: impl Into<String>) -> Self {
        SinkError {
            severity: Severity::Item,
            message: message.into(),
        }
    }

    pub fn fatal(message: impl Into<String>) -> Self {
        SinkError {
            severity: Severity::Fatal,
            message: message.into(),
        }
    }
}
