//! Repository locations: a path or `file:///…`, `s3://bucket/base_path`, `gs://bucket/base`,
//! `az://container/base`. S3 settings come from options (CLI flags), the URI query
//! (`?region=…&endpoint=…`), then the standard AWS environment variables. GCS settings
//! likewise: an endpoint from options, `?endpoint=`, then `STORAGE_EMULATOR_HOST`; the
//! credentials from a service-account file (options, then `GOOGLE_SERVICE_ACCOUNT`…) or
//! the usual Google sources. An endpoint with no service account is taken as an emulator
//! (fake-gcs-server, …): its requests carry no token.

use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;

use crate::blob::{BlobStore, LocalStore};
use crate::error::{BlobError, Result};
use crate::object::ObjectStoreBlobs;

/// The URL schemes [`open_blob_store`] accepts (`""`: a plain path, no scheme). Connectors
/// that read a blob store take their scheme lists from here, so that every command
/// accepts the same locations.
pub const SCHEMES: &[&str] = &["", "file", "s3", "gs", "gcs", "az", "azure", "abfs"];

/// Object-store settings that override the URI query and the environment.
#[derive(Debug, Clone, Default)]
pub struct BlobStoreOptions {
    pub s3_region: Option<String>,
    /// Custom endpoint (MinIO, s3rver, …); implies path-style requests.
    pub s3_endpoint: Option<String>,
    pub s3_access_key_id: Option<String>,
    pub s3_secret_access_key: Option<String>,
    pub s3_session_token: Option<String>,
    /// GCS-compatible endpoint (an emulator such as fake-gcs-server), e.g.
    /// `http://127.0.0.1:4443`; a bare `host:port` is taken as `http://`.
    pub gcs_endpoint: Option<String>,
    /// Path of a GCS service-account JSON file (replaces the environment's credentials).
    pub gcs_service_account: Option<String>,
    /// Read-ahead window for remote files (bytes); default 8 MiB.
    pub read_ahead: Option<u64>,
}

fn split_bucket(rest: &str) -> (&str, &str) {
    match rest.split_once('/') {
        Some((b, p)) => (b, p.trim_matches('/')),
        None => (rest, ""),
    }
}

/// An environment variable that is set and not empty.
fn env_var(k: &str) -> Option<String> {
    std::env::var(k).ok().filter(|v| !v.is_empty())
}

/// The GCS client builder for `bucket`. With an `endpoint`, object_store takes the base
/// URL only from a service-account key (`gcs_base_url`): the given service-account file
/// (else `GOOGLE_SERVICE_ACCOUNT`, `GOOGLE_SERVICE_ACCOUNT_PATH`) with that field added,
/// else an anonymous key with `disable_oauth` (an emulator). Errors name the store
/// (`shown`) and the file, never its content.
fn gcs_builder(
    shown: &str,
    bucket: &str,
    endpoint: Option<&str>,
    service_account: Option<&str>,
) -> Result<GoogleCloudStorageBuilder> {
    let Some(endpoint) = endpoint else {
        let b = match service_account {
            Some(path) => GoogleCloudStorageBuilder::new().with_service_account_path(path),
            None => GoogleCloudStorageBuilder::from_env(),
        };
        return Ok(b.with_bucket_name(bucket));
    };
    let base = if endpoint.contains("://") {
        endpoint.trim_end_matches('/').to_string()
    } else {
        format!("http://{}", endpoint.trim_end_matches('/'))
    };
    let file = service_account
        .map(str::to_string)
        .or_else(|| env_var("GOOGLE_SERVICE_ACCOUNT"))
        .or_else(|| env_var("GOOGLE_SERVICE_ACCOUNT_PATH"));
    let mut key = match &file {
        Some(path) => {
            let bytes = std::fs::read(path).map_err(|e| {
                BlobError::config_caused(
                    shown,
                    format!("cannot read the GCS service account {path}"),
                    e,
                )
            })?;
            // serde_json's messages give a line and column, never the text read.
            match serde_json::from_slice::<serde_json::Value>(&bytes) {
                Ok(serde_json::Value::Object(m)) => m,
                Ok(_) => {
                    return Err(BlobError::config(
                        shown,
                        format!("GCS service account {path}: not a JSON object"),
                    ))
                }
                Err(e) => {
                    return Err(BlobError::config_caused(
                        shown,
                        format!("GCS service account {path}: not valid JSON"),
                        e,
                    ))
                }
            }
        }
        None => {
            let mut m = serde_json::Map::new();
            for field in ["private_key", "private_key_id", "client_email"] {
                m.insert(field.into(), "".into());
            }
            m.insert("disable_oauth".into(), true.into());
            m
        }
    };
    key.insert("gcs_base_url".into(), base.clone().into());
    Ok(GoogleCloudStorageBuilder::new()
        .with_bucket_name(bucket)
        .with_service_account_key(serde_json::Value::Object(key).to_string())
        .with_client_options(
            object_store::ClientOptions::new().with_allow_http(base.starts_with("http://")),
        ))
}

/// Opens the blob store for repository location `uri`.
/// Its scheme must be one of [`SCHEMES`].
pub fn open_blob_store(uri: &str, opts: &BlobStoreOptions) -> Result<Arc<dyn BlobStore>> {
    if let Some(path) = uri.strip_prefix("file://") {
        return Ok(Arc::new(LocalStore::open(path)?));
    }
    let Some((scheme, rest)) = uri.split_once("://") else {
        return Ok(Arc::new(LocalStore::open(uri)?));
    };
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let params: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let param = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let (bucket, base) = split_bucket(rest);
    if bucket.is_empty() {
        return Err(BlobError::config(
            redact::url(uri),
            "no bucket in the repository URI",
        ));
    }
    // For messages: no query (it may hold a secret key), no userinfo.
    let shown = redact::url(&format!("{scheme}://{bucket}/{base}"));
    let build_error = |e: object_store::Error| {
        BlobError::config_caused(
            shown.as_str(),
            "cannot configure the object-store client",
            e,
        )
    };
    let mut aws_credentials = None;
    let store: Arc<dyn object_store::ObjectStore> = match scheme {
        "s3" => {
            let env = env_var;
            let mut b = AmazonS3Builder::from_env().with_bucket_name(bucket);
            let region = opts
                .s3_region
                .clone()
                .or_else(|| param("region"))
                .or_else(|| env("AWS_REGION"))
                .or_else(|| env("AWS_DEFAULT_REGION"))
                .unwrap_or_else(|| "us-east-1".into());
            b = b.with_region(region);
            let endpoint = opts
                .s3_endpoint
                .clone()
                .or_else(|| param("endpoint"))
                .or_else(|| env("AWS_ENDPOINT_URL_S3"))
                .or_else(|| env("AWS_ENDPOINT_URL"));
            if let Some(ep) = endpoint {
                b = b
                    .with_allow_http(ep.starts_with("http://"))
                    .with_virtual_hosted_style_request(false)
                    .with_endpoint(ep);
            }
            let key = opts
                .s3_access_key_id
                .clone()
                .or_else(|| param("access_key_id"));
            let secret = opts
                .s3_secret_access_key
                .clone()
                .or_else(|| param("secret_access_key"));
            // Keys given as options or in the URI, else the shared AWS chain (environment,
            // profile, web identity, container, instance metadata), refreshed before expiry.
            let provider =
                match (key, secret) {
                    (Some(k), Some(s)) => sigv4::CredentialsProvider::fixed(
                        sigv4::AwsCredentials {
                            access_key_id: k,
                            secret_access_key: s,
                            session_token: opts.s3_session_token.clone(),
                        },
                        "--s3-access-key-id / --s3-secret-access-key",
                    ),
                    (None, None) => sigv4::CredentialsProvider::shared(),
                    _ => return Err(BlobError::config(
                        shown.as_str(),
                        "an S3 access key id needs its secret access key, and the other way round",
                    )),
                };
            b = b.with_credentials(Arc::new(crate::aws::ChainCredentials(provider.clone())));
            aws_credentials = Some(provider);
            Arc::new(b.build().map_err(build_error)?)
        }
        "gs" | "gcs" => {
            let endpoint = opts
                .gcs_endpoint
                .clone()
                .or_else(|| param("endpoint"))
                .or_else(|| env_var("STORAGE_EMULATOR_HOST"));
            Arc::new(
                gcs_builder(
                    &shown,
                    bucket,
                    endpoint.as_deref(),
                    opts.gcs_service_account.as_deref(),
                )?
                .build()
                .map_err(build_error)?,
            )
        }
        "az" | "azure" | "abfs" => Arc::new(
            MicrosoftAzureBuilder::from_env()
                .with_container_name(bucket)
                .build()
                .map_err(build_error)?,
        ),
        other => {
            return Err(BlobError::config(
                redact::url(uri),
                format!(
                "unknown repository scheme {other:?} (use a path, file://, s3://, gs:// or az://)"
            ),
            ))
        }
    };
    let mut blobs = ObjectStoreBlobs::new(store, shown, base)?;
    if let Some(p) = aws_credentials {
        blobs = blobs.with_aws_credentials(p);
    }
    if let Some(w) = opts.read_ahead {
        blobs = blobs.with_read_ahead(w, crate::object::DEFAULT_WINDOWS);
    }
    Ok(Arc::new(blobs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().display().to_string();
        assert_eq!(
            open_blob_store(&p, &Default::default()).unwrap().location(),
            p
        );
        assert_eq!(
            open_blob_store(&format!("file://{p}"), &Default::default())
                .unwrap()
                .location(),
            p
        );
        let s = open_blob_store(
            "s3://bucket/base/path?region=eu-west-1&endpoint=http://127.0.0.1:1",
            &BlobStoreOptions {
                s3_access_key_id: Some("a".into()),
                s3_secret_access_key: Some("b".into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(s.location(), "s3://bucket/base/path");
        let g = open_blob_store(
            "gs://bucket/base?endpoint=http://127.0.0.1:1",
            &Default::default(),
        )
        .unwrap();
        assert_eq!(g.location(), "gs://bucket/base");
        let g = open_blob_store(
            "gs://bucket",
            &BlobStoreOptions {
                gcs_endpoint: Some("127.0.0.1:1".into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(g.location(), "gs://bucket/");
        assert!(open_blob_store("ftp://x/y", &Default::default()).is_err());
        assert!(open_blob_store("/definitely/not/here", &Default::default()).is_err());
    }

    #[test]
    fn a_bad_gcs_service_account_is_named_without_its_content() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.json").display().to_string();
        let opts = |path: &str| BlobStoreOptions {
            gcs_endpoint: Some("http://127.0.0.1:1".into()),
            gcs_service_account: Some(path.into()),
            ..Default::default()
        };
        let e = open_blob_store("gs://b/r", &opts(&missing))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains(&missing) && e.contains("gs://b/r"), "{e}");
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, r#"{"private_key": "PRIVATE-KEY-TEXT", "#).unwrap();
        let bad = bad.display().to_string();
        let e = open_blob_store("gs://b/r", &opts(&bad))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains(&bad) && !e.contains("PRIVATE-KEY-TEXT"), "{e}");
        // A key file with an endpoint: its base URL added, its fields kept.
        let good = dir.path().join("good.json");
        std::fs::write(
            &good,
            r#"{"private_key": "x", "private_key_id": "y", "client_email": "z@e", "disable_oauth": true}"#,
        )
        .unwrap();
        assert!(open_blob_store("gs://b/r", &opts(&good.display().to_string())).is_ok());
    }
}
