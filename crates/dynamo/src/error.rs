//! Errors of the DynamoDB client, typed by what the caller can do about them. No error
//! holds a secret: messages from the service are cut before any canonical request they
//! quote (it would show a session token), URLs are redacted, and credentials never enter.

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DynamoError {
    /// The client cannot work as configured (no region, no credentials, bad endpoint, an
    /// unusable table or key mapping).
    #[error("DynamoDB configuration: {0}")]
    Config(String),

    /// The service refused the request, and sending it again cannot help.
    #[error("DynamoDB {operation}: HTTP {status} {error_type}: {message}")]
    Rejected {
        operation: &'static str,
        status: u16,
        /// `ValidationException`, `ResourceNotFoundException`, `AccessDeniedException`, …
        error_type: String,
        message: String,
    },

    /// Throttling, server errors or lost connections until the retries ran out.
    #[error("DynamoDB {operation}: gave up after {attempts} attempts: {last}")]
    RetriesExhausted {
        operation: &'static str,
        attempts: u32,
        last: String,
    },

    /// The service answered success with a body the API does not promise.
    #[error("DynamoDB {operation}: unexpected response: {reason}")]
    Response {
        operation: &'static str,
        reason: String,
    },
}

impl DynamoError {
    /// The service's error type, when it named one.
    pub fn error_type(&self) -> Option<&str> {
        match self {
            DynamoError::Rejected { error_type, .. } => Some(error_type),
            _ => None,
        }
    }

    /// Nothing will work until an operator acts: the configuration, refused credentials
    /// or permissions, a table that does not exist.
    pub fn is_fatal(&self) -> bool {
        match self {
            DynamoError::Config(_) => true,
            DynamoError::Rejected { error_type, .. } => {
                matches!(class_of(0, error_type), Class::Auth)
                    || error_type == "ResourceNotFoundException"
            }
            _ => false,
        }
    }
}

/// What an error answer means for the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// Too fast: slow down (halve concurrency) and retry.
    Throttled,
    /// The service failed (5xx) or the connection was lost: retry.
    Retry,
    /// Credentials or permissions refused.
    Auth,
    /// The request itself is wrong.
    Permanent,
}

/// Classifies an error answer by the service's error type (and HTTP status).
pub(crate) fn class_of(status: u16, error_type: &str) -> Class {
    match error_type {
        "ThrottlingException"
        | "ProvisionedThroughputExceededException"
        | "RequestLimitExceeded"
        | "LimitExceededException"
        | "TooManyRequestsException" => Class::Throttled,
        "InternalServerError"
        | "InternalFailure"
        | "ServiceUnavailable"
        | "ServiceUnavailableException" => Class::Retry,
        "UnrecognizedClientException"
        | "InvalidSignatureException"
        | "IncompleteSignatureException"
        | "MissingAuthenticationTokenException"
        | "MissingAuthenticationToken"
        | "AccessDeniedException"
        | "ExpiredTokenException"
        | "InvalidClientTokenId"
        | "SignatureDoesNotMatch" => Class::Auth,
        _ if status == 429 => Class::Throttled,
        _ if status >= 500 => Class::Retry,
        _ if status == 401 || status == 403 => Class::Auth,
        _ => Class::Permanent,
    }
}

/// The error type and message of an error answer: `{"__type":"com.amazonaws…#Name",
/// "message":"…"}` (`Message` in some services), cleaned for display.
pub(crate) fn parse_error_body(body: &[u8]) -> (String, String) {
    let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let error_type = v
        .get("__type")
        .and_then(|t| t.as_str())
        .map(|t| t.rsplit('#').next().unwrap_or(t).to_string())
        .unwrap_or_default();
    let message = v
        .get("message")
        .or_else(|| v.get("Message"))
        .and_then(|m| m.as_str())
        .map(str::to_string)
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned());
    (error_type, clean_message(&message))
}

/// Longest message kept from the service.
const MAX_MESSAGE: usize = 500;

/// A message from the service made safe to show: cut before a quoted canonical request
/// or string to sign (they hold signed header values such as a session token), URLs
/// redacted, and bounded in length.
pub(crate) fn clean_message(message: &str) -> String {
    let lower = message.to_ascii_lowercase();
    let cut = [
        "canonical string",
        "string-to-sign",
        "string to sign",
        "x-amz-security-token",
    ]
    .iter()
    .filter_map(|m| lower.find(m))
    .min()
    .unwrap_or(message.len());
    let mut end = cut.min(MAX_MESSAGE);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    let mut m = redact::text(message[..end].trim_end()).into_owned();
    if end < message.len() {
        m.push_str(" […]");
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_answers_are_classified() {
        let c = |t: &str| class_of(400, t);
        assert_eq!(c("ThrottlingException"), Class::Throttled);
        assert_eq!(
            c("ProvisionedThroughputExceededException"),
            Class::Throttled
        );
        assert_eq!(c("RequestLimitExceeded"), Class::Throttled);
        assert_eq!(c("ValidationException"), Class::Permanent);
        assert_eq!(c("ResourceNotFoundException"), Class::Permanent);
        assert_eq!(c("UnrecognizedClientException"), Class::Auth);
        assert_eq!(class_of(500, "InternalServerError"), Class::Retry);
        assert_eq!(class_of(503, ""), Class::Retry);
        assert_eq!(class_of(403, ""), Class::Auth);
        let fatal = |t: &str| {
            DynamoError::Rejected {
                operation: "PutItem",
                status: 400,
                error_type: t.into(),
                message: String::new(),
            }
            .is_fatal()
        };
        assert!(fatal("AccessDeniedException") && fatal("ResourceNotFoundException"));
        assert!(!fatal("ValidationException"));
    }

    #[test]
    fn messages_lose_what_could_hold_a_secret() {
        let body = br#"{"__type":"com.amazon.coral.service#InvalidSignatureException","message":"The request signature we calculated does not match the signature you provided. The Canonical String for this request should have been\n'POST\n/\n\nhost:x\nx-amz-security-token:SECRETTOKEN\n'"}"#;
        let (t, m) = parse_error_body(body);
        assert_eq!(t, "InvalidSignatureException");
        assert!(!m.contains("SECRETTOKEN") && m.ends_with("[…]"), "{m}");
        let (t, m) = parse_error_body(
            br#"{"__type":"x#ValidationException","Message":"see https://u:pw@h/x"}"#,
        );
        assert_eq!(t, "ValidationException");
        assert!(!m.contains("pw"), "{m}");
        let long = format!(r#"{{"__type":"A","message":"{}"}}"#, "é".repeat(400));
        assert!(parse_error_body(long.as_bytes()).1.len() <= MAX_MESSAGE + 6);
        let (t, m) = parse_error_body(b"<html>bad gateway</html>");
        assert_eq!((t.as_str(), m.as_str()), ("", "<html>bad gateway</html>"));
    }
}
