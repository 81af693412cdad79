//! Source: a live cluster, `http(s)://[user:pw@]host:port/INDEX-PATTERN` (comma-separated
//! patterns allowed): sliced point-in-time reads (sliced scroll on clusters without points in
//! time), one work item per index and slice. Authentication and TLS beyond the URL's
//! userinfo come from `Settings::source_client` (`rfs copy --from-*`).

use std::sync::Arc;

use super::{BoxedSource, ConnectError, OpenedSource, Settings, SourceConnector};
pub mod listing;
pub mod source;

pub use source::{stream_metadata, LeftOut, LiveStream};
pub use source::{ClusterSource, ClusterSourceOptions};

pub(super) const SOURCE: SourceConnector = SourceConnector {
    name: "cluster",
    schemes: &["http", "https"],
    holds: None,
    open: |url, settings| Box::pin(open(url, settings)),
    identity: None,
};

async fn open(url: &str, settings: &Settings) -> Result<OpenedSource, ConnectError> {
    let (config, pattern) = crate::client::client_config(url, &Default::default())?;
    let config = crate::client::with_flags(config, settings.source_client.as_ref());
    let pattern = pattern.ok_or_else(|| {
        ConnectError::new(
            url,
            "name the indices as the URL's path (http://host:9200/logs-*)",
        )
    })?;
    let location = redact::url(config.urls.first().map(String::as_str).unwrap_or(url));
    let client = cluster::Client::new(config).map_err(|e| ConnectError::new(url, e))?;
    let source = ClusterSource::open(client, location, &pattern, settings.cluster.clone())
        .await
        .map_err(|e| ConnectError::caused(url, e))?;
    let groups = source.indices().iter().map(|(i, _)| i.clone()).collect();
    let metadata = if settings.metadata {
        Some(
            source
                .index_metadata()
                .await
                .map_err(|e| ConnectError::caused(url, e))?,
        )
    } else {
        None
    };
    Ok(OpenedSource {
        key_check: None,
        source: BoxedSource::new(Arc::new(source)),
        kind: "cluster",
        key_column: None,
        hints: Default::default(),
        groups,
        routed: None,
        removed: Vec::new(),
        notes: Vec::new(),
        metadata,
    })
}
