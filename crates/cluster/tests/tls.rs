//! TLS against a local server with certificates made here: a custom CA, mutual TLS,
//! rejection without the CA or without a client certificate, `insecure`, and a server
//! certificate that is self-signed and its own CA, trusted through the CA file.
//! The server is the project's test server behind a TLS acceptor that requires client certificates.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use cluster::{
    BulkDoc, BulkOptions, BulkSender, Client, ClientConfig, ClusterError, Distribution,
    RequestCompression, RetryPolicy,
};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use testkit::server::{ServerConfig, TestServer};
use tokio::net::{TcpListener, TcpStream};

struct Pki {
    dir: tempfile::TempDir,
    ca_der: CertificateDer<'static>,
    server_chain: Vec<CertificateDer<'static>>,
    server_key: PrivatePkcs8KeyDer<'static>,
}

impl Pki {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn make_pki() -> Pki {
    let dir = tempfile::tempdir().unwrap();
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "rfs test CA");
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);

    let server_key = KeyPair::generate().unwrap();
    let mut sp =
        CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
    sp.distinguished_name
        .push(DnType::CommonName, "test server");
    sp.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let server_cert = sp.signed_by(&server_key, &issuer).unwrap();

    let client_key = KeyPair::generate().unwrap();
    let mut cp = CertificateParams::new(Vec::<String>::new()).unwrap();
    cp.distinguished_name.push(DnType::CommonName, "rfs client");
    cp.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let client_cert = cp.signed_by(&client_key, &issuer).unwrap();

    std::fs::write(dir.path().join("ca.pem"), ca_cert.pem()).unwrap();
    std::fs::write(dir.path().join("client.pem"), client_cert.pem()).unwrap();
    std::fs::write(dir.path().join("client.key"), client_key.serialize_pem()).unwrap();
    // A CA the server does not use, to check that trusting the wrong CA fails.
    let other_key = KeyPair::generate().unwrap();
    let mut other = CertificateParams::new(Vec::<String>::new()).unwrap();
    other.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    std::fs::write(
        dir.path().join("other-ca.pem"),
        other.self_signed(&other_key).unwrap().pem(),
    )
    .unwrap();

    Pki {
        ca_der: ca_cert.der().clone(),
        server_chain: vec![server_cert.der().clone()],
        server_key: PrivatePkcs8KeyDer::from(server_key.serialize_der()),
        dir,
    }
}

/// Terminate TLS (client certificate required) and forward the plain bytes to `backend`.
async fn tls_front(pki: &Pki, backend: std::net::SocketAddr) -> u16 {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.add(pki.ca_der.clone()).unwrap();
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            pki.server_chain.clone(),
            PrivateKeyDer::Pkcs8(pki.server_key.clone_key()),
        )
        .unwrap();
    serve_tls(config, backend).await
}

/// Terminate TLS with `config` and forward the plain bytes to `backend`; the port.
async fn serve_tls(config: rustls::ServerConfig, backend: std::net::SocketAddr) -> u16 {
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let Ok(mut plain) = TcpStream::connect(backend).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    port
}

fn config(
    port: u16,
    ca: Option<&Path>,
    client: Option<(&Path, &Path)>,
    insecure: bool,
) -> ClientConfig {
    let mut c = ClientConfig::new(format!("https://127.0.0.1:{port}"));
    c.tls.ca_file = ca.map(Path::to_path_buf);
    if let Some((cert, key)) = client {
        c.tls.client_cert = Some(cert.to_path_buf());
        c.tls.client_key = Some(key.to_path_buf());
    }
    c.tls.insecure = insecure;
    c.compression = RequestCompression::Off;
    c.retry = RetryPolicy::none();
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_ca_mutual_tls_and_insecure() {
    let pki = make_pki();
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let port = tls_front(&pki, server.addr()).await;
    let (ca, other_ca) = (pki.path("ca.pem"), pki.path("other-ca.pem"));
    let client_id = (pki.path("client.pem"), pki.path("client.key"));
    let client_id = Some((client_id.0.as_path(), client_id.1.as_path()));

    // Custom CA and client certificate: detection and a bulk request go through.
    let client = Client::connect(config(port, Some(&ca), client_id, false))
        .await
        .unwrap();
    assert_eq!(
        client.target().unwrap().distribution(),
        Distribution::OpenSearch
    );
    let sender = BulkSender::new(client, BulkOptions::default()).unwrap();
    let docs = (0..10)
        .map(|i| BulkDoc::new("tls", i.to_string(), Bytes::from(format!("{{\"n\":{i}}}"))))
        .collect();
    let out = sender.send(docs).await.unwrap();
    assert_eq!(out.indexed, 10);
    let stored = server.documents("tls");
    assert_eq!(stored.len(), 10);
    for i in 0..10 {
        assert_eq!(stored[&i.to_string()], serde_json::json!({ "n": i }));
    }

    // Without the CA the server certificate is not trusted.
    let e = Client::connect(config(port, None, client_id, false))
        .await
        .unwrap_err();
    assert!(matches!(e, ClusterError::Transport { .. }), "{e}");
    assert!(e.to_string().to_lowercase().contains("certificate"), "{e}");
    // Trusting another CA does not help.
    let e = Client::connect(config(port, Some(&other_ca), client_id, false))
        .await
        .unwrap_err();
    assert!(e.to_string().to_lowercase().contains("certificate"), "{e}");

    // The server requires a client certificate.
    let e = Client::connect(config(port, Some(&ca), None, false))
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            ClusterError::Transport { .. } | ClusterError::RetriesExhausted { .. }
        ),
        "{e}"
    );

    // insecure accepts the unknown server certificate; the client certificate is still sent.
    let client = Client::connect(config(port, None, client_id, true))
        .await
        .unwrap();
    assert_eq!(client.count("tls").await.unwrap(), 10);
    // …but insecure does not replace the client certificate the server demands.
    assert!(Client::connect(config(port, None, None, true))
        .await
        .is_err());
}

/// A self-signed certificate for `names`, marked as a CA (as `openssl req -x509` makes
/// them), as PEM and DER with its key.
fn self_signed_ca(
    names: &[&str],
) -> (String, CertificateDer<'static>, PrivatePkcs8KeyDer<'static>) {
    self_signed_ca_with(names, |_| {})
}

/// [`self_signed_ca`] with `adjust` applied to the parameters (e.g. a validity period).
fn self_signed_ca_with(
    names: &[&str],
    adjust: impl FnOnce(&mut CertificateParams),
) -> (String, CertificateDer<'static>, PrivatePkcs8KeyDer<'static>) {
    let key = KeyPair::generate().unwrap();
    let mut p =
        CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    adjust(&mut p);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name
        .push(DnType::CommonName, "self-signed test server");
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    let cert = p.self_signed(&key).unwrap();
    (
        cert.pem(),
        cert.der().clone(),
        PrivatePkcs8KeyDer::from(key.serialize_der()),
    )
}

async fn self_signed_front(
    der: &CertificateDer<'static>,
    key: &PrivatePkcs8KeyDer<'static>,
    backend: std::net::SocketAddr,
) -> u16 {
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![der.clone()], PrivateKeyDer::Pkcs8(key.clone_key()))
    .unwrap();
    serve_tls(config, backend).await
}

/// Issue 15: a self-signed certificate that is its own CA could not be trusted through
/// `--target-ca` (the path rules refuse a CA certificate as a server's own). Given in the
/// CA file it is trusted, for its own names only; another self-signed certificate is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn self_signed_certificate_that_is_its_own_ca_is_trusted_through_the_ca_file() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let (pem, der, key) = self_signed_ca(&["127.0.0.1", "localhost"]);
    let port = self_signed_front(&der, &key, server.addr()).await;
    let file = dir.path().join("self.pem");
    std::fs::write(&file, &pem).unwrap();

    let client = Client::connect(config(port, Some(&file), None, false))
        .await
        .unwrap_or_else(|e| panic!("the certificate given in the CA file is trusted: {e}"));
    let sender = BulkSender::new(client.clone(), BulkOptions::default()).unwrap();
    let docs = (0..5)
        .map(|i| BulkDoc::new("self", i.to_string(), Bytes::from(format!("{{\"n\":{i}}}"))))
        .collect();
    assert_eq!(sender.send(docs).await.unwrap().indexed, 5);
    assert_eq!(client.count("self").await.unwrap(), 5);
    let stored = server.documents("self");
    for i in 0..5 {
        assert_eq!(stored[&i.to_string()], serde_json::json!({ "n": i }));
    }

    // Without the file, or with another self-signed certificate in it: not trusted.
    let e = Client::connect(config(port, None, None, false))
        .await
        .unwrap_err();
    assert!(e.to_string().to_lowercase().contains("certificate"), "{e}");
    let (other_pem, _, _) = self_signed_ca(&["127.0.0.1", "localhost"]);
    let other = dir.path().join("other.pem");
    std::fs::write(&other, &other_pem).unwrap();
    let e = Client::connect(config(port, Some(&other), None, false))
        .await
        .unwrap_err();
    assert!(e.to_string().to_lowercase().contains("certificate"), "{e}");

    // The given certificate counts for the names it was issued for only.
    let (elsewhere_pem, elsewhere_der, elsewhere_key) = self_signed_ca(&["search.example"]);
    let port = self_signed_front(&elsewhere_der, &elsewhere_key, server.addr()).await;
    let elsewhere = dir.path().join("elsewhere.pem");
    std::fs::write(&elsewhere, &elsewhere_pem).unwrap();
    let e = Client::connect(config(port, Some(&elsewhere), None, false))
        .await
        .unwrap_err();
    assert!(e.to_string().to_lowercase().contains("certificate"), "{e}");

    // …and within its validity period only: an expired one given in the file is refused.
    let (expired_pem, expired_der, expired_key) =
        self_signed_ca_with(&["127.0.0.1", "localhost"], |p| {
            p.not_before = rcgen::date_time_ymd(2001, 1, 1);
            p.not_after = rcgen::date_time_ymd(2002, 1, 1);
        });
    let port = self_signed_front(&expired_der, &expired_key, server.addr()).await;
    let expired = dir.path().join("expired.pem");
    std::fs::write(&expired, &expired_pem).unwrap();
    let e = Client::connect(config(port, Some(&expired), None, false))
        .await
        .unwrap_err();
    assert!(e.to_string().to_lowercase().contains("expired"), "{e}");
}
