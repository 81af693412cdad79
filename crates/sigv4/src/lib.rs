//! AWS Signature Version 4 for every client of the project that talks to AWS: the
//! OpenSearch target client (`es`, `aoss`) and the DynamoDB client (`dynamodb`).
//!
//! - [`provider`]: credentials from the AWS SDKs' default chain (environment, profiles
//!   with assume-role, `credential_process` and SSO, web identity, container and instance
//!   credentials), cached and refreshed, never shown in errors or logs.
//! - [`credentials`]: the credentials a signature uses, and the region the usual AWS way
//!   (environment, then the profile in `~/.aws/config`).
//! - [`sign`]: the signature of one request, every intermediate step exposed for tests;
//!   [`Signer`] adds the headers to a request.
//! - [`UtcTime`]: the calendar fields of an instant (`x-amz-date`, RFC 3339).
//!
//! ```no_run
//! let signer = sigv4::Signer {
//!     credentials: sigv4::AwsCredentials {
//!         access_key_id: "AKIDSIGNEXAMPLE".into(),
//!         secret_access_key: "not-a-real-secret".into(),
//!         session_token: None,
//!     },
//!     region: sigv4::region()?.unwrap_or_else(|| "us-east-1".into()),
//!     service: "dynamodb",
//! };
//! let headers = signer.headers(std::time::SystemTime::now(), "POST", "dynamodb.us-east-1.amazonaws.com", ("/", ""), b"{}");
//! # Ok::<(), sigv4::CredentialsError>(())
//! ```

mod clock;
pub mod credentials;
pub mod provider;
pub mod sign;

pub use clock::UtcTime;
pub use credentials::{region, region_from_env, AwsCredentials, CredentialsError};
pub use provider::{CredentialsProvider, ProviderError};
pub use sign::{sha256_hex, sign, signed_headers, ProvidedSigner, Signature, Signer, SigningInput};
