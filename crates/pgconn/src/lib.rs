//! How rfs connects to PostgreSQL, for every crate that does (the coordination store, the
//! table source): `sslmode=require` in the URL means TLS with a verified server
//! certificate, trusting the public web roots and the PEM file of `sslrootcert=`; any
//! other mode is a plain connection, as libpq's default `prefer` is against a server
//! without TLS.
//!
//! ```
//! let c = pgconn::Connector::for_config(&"host=db sslmode=disable".parse().unwrap(), None).unwrap();
//! assert!(!c.is_tls());
//! ```

use std::sync::Arc;

use tokio_postgres::config::SslMode;

/// Why a connection cannot be set up (the caller adds the redacted URL).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Error(pub String);

/// What wraps the TCP stream: nothing, or rustls.
#[derive(Clone)]
pub enum Connector {
    Plain(tokio_postgres::NoTls),
    Tls(tokio_postgres_rustls::MakeRustlsConnect),
}

impl Connector {
    /// The connector `config` asks for: TLS for `sslmode=require`, with the certificates of
    /// `root_cert` (a PEM file) trusted besides the public roots.
    pub fn for_config(
        config: &tokio_postgres::Config,
        root_cert: Option<&str>,
    ) -> Result<Connector, Error> {
        if config.get_ssl_mode() == SslMode::Require {
            return Ok(Connector::Tls(tls_connector(root_cert)?));
        }
        if root_cert.is_some() {
            return Err(Error(
                "sslrootcert is only used with sslmode=require".into(),
            ));
        }
        Ok(Connector::Plain(tokio_postgres::NoTls))
    }

    pub fn is_tls(&self) -> bool {
        matches!(self, Connector::Tls(_))
    }
}

/// A rustls connector trusting the public web roots and, if given, the PEM certificates of
/// `root_cert`.
pub fn tls_connector(
    root_cert: Option<&str>,
) -> Result<tokio_postgres_rustls::MakeRustlsConnect, Error> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let bad = |reason: String| Error(reason);
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = root_cert {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
            .and_then(|it| it.collect::<Result<_, _>>())
            .map_err(|e| bad(format!("sslrootcert {path}: {e}")))?;
        if certs.is_empty() {
            return Err(bad(format!("sslrootcert {path}: no PEM certificate in it")));
        }
        for c in certs {
            roots
                .add(c)
                .map_err(|e| bad(format!("sslrootcert {path}: {e}")))?;
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| bad(format!("TLS setup: {e}")))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// The server's code and message for a database error; otherwise the error with its causes
/// (tokio-postgres' own Display hides both behind "db error" or a bare "error connecting").
pub fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{}: {}", db.code().code(), db.message());
    }
    let mut msg = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        msg.push_str(&format!(": {c}"));
        cause = c.source();
    }
    msg
}

/// Takes query parameter `name` out of `url`, for what tokio-postgres (or another client)
/// does not know, such as `sslrootcert=`: the URL without it (and without `?` when nothing
/// is left) and its value, the last one where it is given twice.
pub fn take_param(url: &str, name: &str) -> Result<(String, Option<String>), url::ParseError> {
    let mut u = url::Url::parse(url)?;
    let mut value = None;
    let kept: Vec<(String, String)> = u
        .query_pairs()
        .filter_map(|(k, v)| {
            if k == name {
                value = Some(v.into_owned());
                None
            } else {
                Some((k.into_owned(), v.into_owned()))
            }
        })
        .collect();
    if kept.is_empty() {
        u.set_query(None);
    } else {
        u.query_pairs_mut().clear().extend_pairs(kept);
    }
    Ok((u.to_string(), value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_param_is_taken_out_and_the_rest_kept() {
        let (u, v) = take_param(
            "postgres://u:p@h:5/db?sslrootcert=/ca%201.pem&sslmode=require",
            "sslrootcert",
        )
        .unwrap();
        assert_eq!(u, "postgres://u:p@h:5/db?sslmode=require");
        assert_eq!(v.as_deref(), Some("/ca 1.pem"));
        let (u, v) = take_param("postgres://h/db?table=a&table=b", "table").unwrap();
        assert_eq!((u.as_str(), v.as_deref()), ("postgres://h/db", Some("b")));
        let (u, v) = take_param("redis://h:1/0", "prefix").unwrap();
        assert_eq!((u.as_str(), v), ("redis://h:1/0", None));
        assert!(take_param("host=h dbname=d", "sslrootcert").is_err());
    }

    #[test]
    fn modes_pick_the_connector() {
        let cfg = |s: &str| s.parse::<tokio_postgres::Config>().unwrap();
        assert!(Connector::for_config(&cfg("host=h sslmode=require"), None)
            .unwrap()
            .is_tls());
        assert!(!Connector::for_config(&cfg("host=h"), None)
            .unwrap()
            .is_tls());
        let e = Connector::for_config(&cfg("host=h"), Some("/x.pem"))
            .err()
            .unwrap();
        assert!(e.0.contains("sslrootcert"));
        let e = Connector::for_config(&cfg("host=h sslmode=require"), Some("/nonexistent.pem"))
            .err()
            .unwrap();
        assert!(e.0.contains("/nonexistent.pem"), "{e}");
    }
}
