//! Errors of the coordination crate.

/// What went wrong talking to the store or running the protocol.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("bad coordination store URL {url:?}: {reason}")]
    BadUrl { url: String, reason: String },
    /// The store could not be reached or answered with an error; usually worth a retry.
    #[error("{backend} store: {message}")]
    Store {
        backend: &'static str,
        message: String,
    },
    /// A stored record does not parse.
    #[error("coordination record {id:?} is corrupt: {reason}")]
    Corrupt { id: String, reason: String },
    #[error(
        "clock skew of {skew_ms} ms between this worker and the coordination store exceeds {max_ms} ms; fix the clocks (NTP) and retry"
    )]
    ClockSkew { skew_ms: i64, max_ms: i64 },
    /// A guarded write found another holder (or the item finished): this lease is gone.
    #[error("lease on {id:?} is no longer held by this worker")]
    LeaseLost { id: String },
    #[error("phase {name:?} failed: {reason}")]
    PhaseFailed { name: String, reason: String },
    #[error("invalid argument: {0}")]
    Invalid(String),
}

impl Error {
    pub(crate) fn store(backend: &'static str, e: impl std::fmt::Display) -> Self {
        Error::Store {
            backend,
            message: e.to_string(),
        }
    }

    /// True for errors a retry may cure (network, busy store).
    pub fn is_transient(&self) -> bool {
        matches!(self, Error::Store { .. })
    }
}
