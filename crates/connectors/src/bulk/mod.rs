//! Sink: a cluster through `_bulk`, `http(s)://[user:pw@]host:port[/INDEX]` (every
//! document into INDEX when the path names one; else each keeps its index). What a URL
//! cannot say (API keys, SigV4, client certificates, attempts, timeouts, gzip) comes from
//! the sink end's client in the [`crate::Context`]; with `path=base` the path is a prefix.

use super::{
    BoxedSink, ConnectError, Context, OpenedLookup, OpenedSink, OpenedSource, Params,
    SinkConnector, SourceShape,
};
use crate::client::{client_config, with_flags};
use crate::cluster::{stream_metadata, ClusterSource, LiveStream};
use options::PathIs;

mod dates;
pub mod doc_values;
mod id_scroll;
pub mod lookup;
mod options;
pub mod sink;

pub use lookup::MgetLookup;
pub use sink::{BatchLimits, BulkSink};

pub(super) const SINK: SinkConnector = SinkConnector {
    name: "bulk",
    schemes: &["http", "https"],
    params: options::PARAMS,
    open: |url, params, ctx, source| Box::pin(open(url, params, ctx, source)),
    lookup: |url, params, ctx, shape| Box::pin(lookup(url, params, ctx, shape)),
    identity: |url, params, ctx| {
        let path = options::parse(params, ctx)?;
        Ok(engine::job::identity_location(&sink_identity(
            url, path, ctx,
        )?))
    },
};

/// `_mget` on the cluster (into the URL's index when it names one).
async fn lookup(
    url: &str,
    params: &Params,
    ctx: &Context,
    _shape: &SourceShape,
) -> Result<OpenedLookup, ConnectError> {
    // Reached as the sink reaches it (the flags' client, a base path).
    let (config, index) = configured(url, options::parse(params, ctx)?, ctx)?;
    let client = cluster::Client::connect(config)
        .await
        .map_err(|e| ConnectError::new(url, e))?;
    Ok(OpenedLookup {
        key_of: None,
        lookup: Box::new(MgetLookup::new(client)),
        index,
    })
}

/// What the sink names its target by in a migration's identity (before
/// [`engine::job::identity_location`]): with `path=index`, `BASE/INDEX` (the index
/// decoded); else the context's `identity_name`, else the URL without credentials.
fn sink_identity(url: &str, path: PathIs, ctx: &Context) -> Result<String, ConnectError> {
    if path == PathIs::Index {
        let (base, index) = named_index(url)?;
        return Ok(format!("{}/{index}", redact::url(&base)));
    }
    Ok(ctx
        .identity_name
        .clone()
        .unwrap_or_else(|| redact::url(url)))
}

/// A URL whose path must end with the index (`path=index`): the URL
/// without it and its query (credentials kept), and the index, decoded.
fn named_index(url: &str) -> Result<(String, String), ConnectError> {
    let mut u = url::Url::parse(url).map_err(|e| ConnectError::new(url, e))?;
    let index = u
        .path_segments()
        .and_then(|mut p| p.next_back().map(str::to_string))
        .filter(|i| !i.is_empty())
        .ok_or_else(|| {
            ConnectError::new(
                url,
                "name the index as the URL's path (http://host:9200/INDEX)",
            )
        })?;
    let index = redact::percent_decode(&index).into_owned();
    let path = u.path().to_string();
    let base_path = path[..path.len() - path.rsplit('/').next().unwrap_or("").len()]
        .trim_end_matches('/')
        .to_string();
    u.set_path(&base_path);
    u.set_query(None);
    Ok((u.to_string().trim_end_matches('/').to_string(), index))
}

/// [`client_config`] with what the context and `path` add: the client the command's flags
/// set up, the whole path as the base.
fn configured(
    url: &str,
    path: PathIs,
    ctx: &Context,
) -> Result<(cluster::ClientConfig, Option<String>), ConnectError> {
    if path == PathIs::Index {
        named_index(url)?;
    }
    let (mut config, mut index) = client_config(url, &ctx.to.tls)?;
    if path == PathIs::Base {
        let mut u = url::Url::parse(url).map_err(|e| ConnectError::new(url, e))?;
        let _ = u.set_username("");
        let _ = u.set_password(None);
        u.set_query(None);
        u.set_fragment(None);
        config.urls = vec![u.to_string().trim_end_matches('/').to_string()];
        index = None;
    }
    Ok((with_flags(config, ctx.to.client.as_ref()), index))
}

async fn open(
    url: &str,
    params: &Params,
    ctx: &Context,
    source: &OpenedSource,
) -> Result<OpenedSink, ConnectError> {
    let path = options::parse(params, ctx)?;
    let (config, index) = configured(url, path, ctx)?;
    let client = cluster::Client::connect(config)
        .await
        .map_err(|e| ConnectError::caused(url, e))?;
    // A live cluster's data streams stay data streams (unless the URL names one index
    // for everything): created first, then written with `create`.
    let streams = match (&index, source.source.downcast::<ClusterSource>()) {
        (None, Some(live)) if !live.data_streams().is_empty() => {
            let chosen = chosen_streams(url, &live, &ctx.read)?;
            if chosen.is_empty() {
                Vec::new()
            } else {
                create_streams(url, &client, *live.version(), &chosen).await?
            }
        }
        _ => Vec::new(),
    };
    let target_client = client.clone();
    let sender = cluster::BulkSender::new(client, ctx.bulk.clone())
        .map_err(|e| ConnectError::new(url, e))?;
    if sender.encoder().server_generated_ids() {
        tracing::warn!(
            "target: documents are sent without their _id, the target generates ids \
             (--server-generated-ids): a re-sent batch (a worker killed mid-batch, a request \
             whose answer was lost) can store documents twice; `rfs verify` counts them"
        );
    }
    Ok(OpenedSink {
        key_of: None,
        sink: BoxedSink::new(
            BulkSink::new(sender, ctx.batch, sink_identity(url, path, ctx)?)
                .with_create_only(streams),
        ),
        index,
        target_client: Some(target_client),
    })
}

/// The live source's data streams the command copies: those with a backing index among
/// the chosen groups (an excluded stream is not created); refused, naming it, when the
/// command would rename one (a data stream is created under its own name, and documents
/// written under another would make an ordinary index of that name).
fn chosen_streams(
    url: &str,
    live: &ClusterSource,
    read: &crate::Reading,
) -> Result<Vec<LiveStream>, ConnectError> {
    let mut out = Vec::new();
    for s in live.data_streams() {
        let copied = read
            .chosen
            .as_ref()
            .is_none_or(|c| s.backing.iter().any(|b| c.contains(b)));
        if !copied {
            tracing::info!(
                "data stream {}: left out, not created on the target",
                s.name
            );
            continue;
        }
        if let Some(naming) = &read.naming {
            let target = naming.target(&s.name);
            if target != s.name {
                return Err(ConnectError::new(
                    url,
                    format!(
                        "data stream {name} would be renamed to {target}: a data stream is created on the target under its own name; copy it without --rename/--index-prefix/--index-suffix, or leave its backing indices out (--exclude-index '.ds-{name}-*')",
                        name = s.name
                    ),
                ));
            }
        }
        out.push(s.clone());
    }
    Ok(out)
}

/// Creates the live source's data streams on the target as the snapshot path does
/// (`metadata::migrate`: their component and index templates converted for the target,
/// then `PUT _data_stream`; what exists is left alone). Any item refused or BLOCKED (a
/// target without data streams) stops the copy before a document is sent, naming it.
async fn create_streams(
    url: &str,
    client: &cluster::Client,
    version: cluster::ProductVersion,
    streams: &[LiveStream],
) -> Result<Vec<String>, ConnectError> {
    use metadata::{self, Action, Allowlist, Options, Outcome};
    let source = stream_metadata(version, streams);
    let list =
        |names: Vec<&String>| Allowlist::parse(&names).map_err(|e| ConnectError::new(url, e));
    let options = Options {
        indices: list(streams.iter().map(|s| &s.name).collect())?,
        index_templates: list(source.index_templates.iter().map(|(n, _)| n).collect())?,
        component_templates: list(source.component_templates.iter().map(|(n, _)| n).collect())?,
        ..Options::default()
    };
    let report = metadata::migrate(&source, client, &options)
        .await
        .map_err(|e| ConnectError::new(url, format!("creating the data streams: {e}")))?;
    let failed: Vec<String> = report
        .items
        .iter()
        .filter(|i| {
            matches!(i.action, Action::Error | Action::Blocked) || i.outcome == Outcome::Failed
        })
        .map(|i| format!("{} {}: {}", i.kind.label(), i.name, i.reasons.join("; ")))
        .collect();
    if !failed.is_empty() {
        return Err(ConnectError::new(
            url,
            format!(
                "the source's data streams cannot be created on the target: {}",
                failed.join(" | ")
            ),
        ));
    }
    for i in &report.items {
        tracing::info!(
            "target: {} {}: {}",
            i.kind.label(),
            i.name,
            i.action.label()
        );
    }
    Ok(streams.iter().map(|s| s.name.clone()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_the_index_and_credentials() {
        let tls = cluster::TlsConfig::default();
        let (c, i) = client_config("http://u:p%40ss@h:9200/events", &tls).unwrap();
        assert_eq!(c.urls, vec!["http://h:9200".to_string()]);
        assert_eq!(i.as_deref(), Some("events"));
        assert!(
            matches!(c.auth, cluster::Auth::Basic { ref username, ref password } if username == "u" && password == "p@ss")
        );
        let (c, i) = client_config("https://h/proxy/ev%20x", &tls).unwrap();
        assert_eq!(c.urls, vec!["https://h/proxy".to_string()]);
        assert_eq!(i.as_deref(), Some("ev x"));
        let (c, i) = client_config("http://h:9200/", &tls).unwrap();
        assert_eq!(c.urls, vec!["http://h:9200".to_string()]);
        assert_eq!(i, None);
    }

    #[test]
    fn the_context_says_what_urls_cannot() {
        let mut flags = cluster::ClientConfig::new("");
        flags.urls.clear();
        flags.auth = cluster::Auth::ApiKey("secret-key".into());
        flags.retry.max_attempts = 3;
        let mut ctx = Context::default();
        ctx.to.client = Some(flags);
        let (c, i) = configured("https://u:pw@h:9200/proxy/es/?x=1", PathIs::Base, &ctx).unwrap();
        assert_eq!(c.urls, vec!["https://h:9200/proxy/es".to_string()]);
        assert_eq!(i, None);
        assert!(matches!(c.auth, cluster::Auth::ApiKey(ref k) if k == "secret-key"));
        assert_eq!(c.retry.max_attempts, 3);
        let shown = format!("{ctx:?}");
        assert!(!shown.contains("secret-key"), "{shown}");
        // Without an auth of their own the flags keep the URL's user.
        let mut flags = cluster::ClientConfig::new("");
        flags.urls.clear();
        let mut ctx = Context::default();
        ctx.to.client = Some(flags);
        let (c, i) = configured("http://u:p%40ss@h:9200/events", PathIs::MaybeIndex, &ctx).unwrap();
        assert_eq!(i.as_deref(), Some("events"));
        assert!(
            matches!(c.auth, cluster::Auth::Basic { ref username, ref password } if username == "u" && password == "p@ss")
        );
    }
}
