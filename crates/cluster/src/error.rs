//! The error type of every call into a cluster.

use std::path::PathBuf;

/// Why a call to the target failed. Every variant that comes from a request names the
/// method and URL and says why, so a log line is enough to act on.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The client configuration cannot work (bad URL, missing credentials, …).
    #[error("cluster configuration: {0}")]
    Config(String),

    /// A certificate, key or CA file could not be read or parsed.
    #[error("{path}: {reason}")]
    TlsFile { path: PathBuf, reason: String },

    /// The request never produced a response (connect error, dropped connection, timeout)
    /// and was not retried further.
    #[error("{method} {url}: {reason}")]
    Transport {
        method: String,
        url: String,
        reason: String,
    },

    /// The target answered with a status that cannot succeed on retry.
    #[error("{method} {url}: HTTP {status}{}: {reason}", error_type.as_deref().map(|t| format!(" {t}")).unwrap_or_default())]
    Status {
        method: String,
        url: String,
        status: u16,
        error_type: Option<String>,
        reason: String,
    },

    /// Retries were exhausted; `last` says what the final attempt saw.
    #[error("{method} {url}: gave up after {attempts} attempts: {last}")]
    RetriesExhausted {
        method: String,
        url: String,
        attempts: u32,
        last: String,
    },

    /// The target answered 2xx but the body is not what the API promises.
    #[error("{method} {url}: unexpected response: {reason}")]
    Response {
        method: String,
        url: String,
        reason: String,
    },
}

impl ClusterError {
    /// The HTTP status when the error is a non-success response.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClusterError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// True when retrying cannot help and nothing else will work either: the credentials
    /// are refused (401, 403), or the configuration cannot work. A worker stops on these
    /// instead of spending work-item attempts.
    pub fn is_fatal(&self) -> bool {
        match self {
            ClusterError::Config(_) | ClusterError::TlsFile { .. } => true,
            ClusterError::Status { status, .. } => matches!(status, 401 | 403),
            _ => false,
        }
    }

    /// The Elasticsearch error type (`resource_already_exists_exception`, …) when known.
    pub fn error_type(&self) -> Option<&str> {
        match self {
            ClusterError::Status { error_type, .. } => error_type.as_deref(),
            _ => None,
        }
    }
}
