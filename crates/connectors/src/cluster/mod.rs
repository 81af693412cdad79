//! Source: a live cluster, `http(s)://[user:pw@]host:port/INDEX-PATTERN` (comma-separated
//! patterns allowed): sliced point-in-time reads (sliced scroll on clusters without points in
//! time), one work item per index and slice. Authentication and TLS beyond the URL's
//! userinfo come from the source end's client in the [`crate::Context`] (`rfs copy --from-*`).

use std::sync::Arc;

use super::{BoxedSource, ConnectError, Context, OpenedSource, Params, SourceConnector};
mod listing;
mod options;
pub mod source;

pub use source::{stream_metadata, LeftOut, LiveStream};
pub use source::{ClusterSource, ClusterSourceOptions};

pub(super) const SOURCE: SourceConnector = SourceConnector {
    name: "cluster",
    schemes: &["http", "https"],
    params: options::PARAMS,
    holds: None,
    open: |url, params, ctx| Box::pin(open(url, params, ctx)),
    identity: None,
    generations: None,
    matched: Some(|url, _, ctx| Box::pin(matched(url, ctx))),
};

async fn open(url: &str, params: &Params, ctx: &Context) -> Result<OpenedSource, ConnectError> {
    let read = options::parse(params, ctx)?;
    let (config, pattern) = crate::client::client_config(url, &ctx.from.tls)?;
    let config = crate::client::with_flags(config, ctx.from.client.as_ref());
    let pattern = pattern.ok_or_else(|| {
        ConnectError::new(
            url,
            "name the indices as the URL's path (http://host:9200/logs-*)",
        )
    })?;
    let location = redact::url(config.urls.first().map(String::as_str).unwrap_or(url));
    let client = cluster::Client::new(config).map_err(|e| ConnectError::new(url, e))?;
    let source = ClusterSource::open(client, location, &pattern, read)
        .await
        .map_err(|e| ConnectError::caused(url, e))?;
    let groups = source.indices().iter().map(|(i, _)| i.clone()).collect();
    let metadata = if ctx.read.metadata {
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

/// Every index the URL's pattern matches, hidden ones included, with its document count,
/// by verify's own request ([`listing`]), with the client of the context's flags.
async fn matched(url: &str, ctx: &Context) -> Result<Vec<(String, u64)>, ConnectError> {
    let (client, pattern) =
        listing::cluster_of(url, ctx.from.client.as_ref()).map_err(ConnectError::of)?;
    listing::matched_indices(&client, &pattern)
        .await
        .map_err(ConnectError::of)
}
