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
    /// The store refused for a reason no retry cures (wrong password or user, no such
    /// database, directory or file, a read-only file, an untrusted certificate, no
    /// permission): said at once, never retried.
    #[error("{backend} store: {message}")]
    Refused {
        backend: &'static str,
        message: String,
    },
    /// The store holds another migration (recorded by the first worker of that one).
    #[error(
        "this coordination store belongs to another migration ({stored}); this worker is for {ours}: use another store, or give every worker of one migration the same --migration NAME"
    )]
    OtherMigration { stored: String, ours: String },
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

    pub(crate) fn refused(backend: &'static str, e: impl std::fmt::Display) -> Self {
        Error::Refused {
            backend,
            message: e.to_string(),
        }
    }

    /// True for errors a retry may cure (network, busy store).
    pub fn is_transient(&self) -> bool {
        matches!(self, Error::Store { .. })
    }
}
