//! S3 requests signed with credentials of the project's shared AWS chain
//! ([`sigv4::CredentialsProvider`]): object_store asks before each request, the provider
//! answers from its cache and refreshes before expiry.

use std::sync::Arc;

use object_store::aws::AwsCredential;
use sigv4::CredentialsProvider;

/// object_store's view of a [`CredentialsProvider`].
#[derive(Debug)]
pub(crate) struct ChainCredentials(pub CredentialsProvider);

#[async_trait::async_trait]
impl object_store::CredentialProvider for ChainCredentials {
    type Credential = AwsCredential;

    async fn get_credential(&self) -> object_store::Result<Arc<AwsCredential>> {
        let c = self
            .0
            .credentials()
            .await
            .map_err(|e| object_store::Error::Generic {
                store: "S3",
                source: Box::new(e),
            })?;
        Ok(Arc::new(AwsCredential {
            key_id: c.access_key_id.clone(),
            secret_key: c.secret_access_key.clone(),
            token: c.session_token.clone(),
        }))
    }
}
