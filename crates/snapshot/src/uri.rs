//! Repository locations: a path or `file:///…`, `s3://bucket/base_path`, `gs://bucket/base`,
//! `az://container/base`. S3 settings come from options (CLI flags), the URI query
//! (`?region=…&endpoint=…`), then the standard AWS environment variables.

use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;

use crate::blob::{BlobStore, LocalStore};
use crate::error::{Error, Result};
use crate::object::ObjectStoreBlobs;

/// Object-store settings that override the URI query and the environment.
#[derive(Debug, Clone, Default)]
pub struct StoreOptions {
    pub s3_region: Option<String>,
    /// Custom endpoint (MinIO, s3rver, …); implies path-style requests.
    pub s3_endpoint: Option<String>,
    pub s3_access_key_id: Option<String>,
    pub s3_secret_access_key: Option<String>,
    pub s3_session_token: Option<String>,
    /// Read-ahead window for remote files (bytes); default 8 MiB.
    pub read_ahead: Option<u64>,
}

fn split_bucket(rest: &str) -> (&str, &str) {
    match rest.split_once('/') {
        Some((b, p)) => (b, p.trim_matches('/')),
        None => (rest, ""),
    }
}

/// Opens the blob store for repository location `uri`.
pub fn open_blob_store(uri: &str, opts: &StoreOptions) -> Result<Arc<dyn BlobStore>> {
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
        return Err(Error::Config(format!(
            "{uri}: no bucket in the repository URI"
        )));
    }
    let shown = format!("{scheme}://{bucket}/{base}");
    let store: Arc<dyn object_store::ObjectStore> = match scheme {
        "s3" => {
            let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
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
            if let Some(k) = opts.s3_access_key_id.clone().or_else(|| param("access_key_id")) {
                b = b.with_access_key_id(k);
            }
            if let Some(s) = opts
                .s3_secret_access_key
                .clone()
                .or_else(|| param("secret_access_key"))
            {
                b = b.with_secret_access_key(s);
            }
            if let Some(t) = opts.s3_session_token.clone() {
                b = b.with_token(t);
            }
            Arc::new(
                b.build()
                    .map_err(|e| Error::Config(format!("{shown}: {e}")))?,
            )
        }
        "gs" | "gcs" => Arc::new(
            GoogleCloudStorageBuilder::from_env()
                .with_bucket_name(bucket)
                .build()
                .map_err(|e| Error::Config(format!("{shown}: {e}")))?,
        ),
        "az" | "azure" | "abfs" => Arc::new(
            MicrosoftAzureBuilder::from_env()
                .with_container_name(bucket)
                .build()
                .map_err(|e| Error::Config(format!("{shown}: {e}")))?,
        ),
        other => {
            return Err(Error::Config(format!(
                "{uri}: unknown repository scheme {other:?} (use a path, file://, s3://, gs:// or az://)"
            )))
        }
    };
    let mut blobs = ObjectStoreBlobs::new(store, shown, base)?;
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
            &StoreOptions {
                s3_access_key_id: Some("a".into()),
                s3_secret_access_key: Some("b".into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(s.location(), "s3://bucket/base/path");
        assert!(open_blob_store("ftp://x/y", &Default::default()).is_err());
        assert!(open_blob_store("/definitely/not/here", &Default::default()).is_err());
    }
}
