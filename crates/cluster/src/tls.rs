//! TLS for a target given a CA file (`--target-ca`): the public web roots plus the file's
//! certificates, and one more rule. A server whose certificate is itself in the file (a
//! self-signed certificate, often marked as a CA, which the certificate-path rules refuse
//! as a server's own) is trusted as the operator gave it: the exact certificate, for the
//! names it was issued for, within its validity period.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};

/// Why a TLS client configuration cannot be built (the cause is said in the message: the
/// caller keeps it as text).
#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsSetupError {
    #[error("TLS verifier: {0}")]
    Verifier(rustls::client::VerifierBuilderError),
    #[error("TLS setup: {0}")]
    Setup(rustls::Error),
    #[error("client certificate or key not usable: {0}")]
    ClientAuth(rustls::Error),
}

/// A rustls client configuration trusting the public roots and `cas`, with the client
/// certificate chain and key for mutual TLS when given.
pub(crate) fn client_config(
    cas: Vec<CertificateDer<'static>>,
    client: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
) -> Result<rustls::ClientConfig, TlsSetupError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for c in &cas {
        // A certificate that cannot be a trust anchor may still be a pinned server's own.
        let _ = roots.add(c.clone());
    }
    let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(TlsSetupError::Verifier)?;
    let verifier = Arc::new(GivenCertificates { inner, given: cas });
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsSetupError::Setup)?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match client {
        Some((chain, key)) => builder
            .with_client_auth_cert(chain, key)
            .map_err(TlsSetupError::ClientAuth)?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// The web-PKI rules, and the operator's own certificates taken as given.
#[derive(Debug)]
struct GivenCertificates {
    inner: Arc<WebPkiServerVerifier>,
    given: Vec<CertificateDer<'static>>,
}

impl ServerCertVerifier for GivenCertificates {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let checked = self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        match checked {
            Ok(v) => Ok(v),
            // Time and name are checked before the path rules: those failures stand.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::Expired
                | CertificateError::ExpiredContext { .. }
                | CertificateError::NotValidYet
                | CertificateError::NotValidYetContext { .. }
                | CertificateError::NotValidForName
                | CertificateError::NotValidForNameContext { .. },
            )) => checked,
            Err(e) if self.given.iter().any(|g| g.as_ref() == end_entity.as_ref()) => {
                let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
                rustls::client::verify_server_name(&parsed, server_name)?;
                tracing::debug!("server certificate is one of the CA file's own ({e})");
                Ok(ServerCertVerified::assertion())
            }
            Err(e) => Err(e),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
