//! Source: a snapshot repository (a path, `file://`, `s3://`, `gs://`, `az://`; the
//! snapshot from `#snapshot=NAME` or its `snapshot` parameter), every index of the
//! snapshot; or, as the context's [`crate::Reading`] says, the indices chosen by patterns
//! or routed as the metadata migration names them; and a delta since an earlier snapshot
//! (`since`).

use std::sync::Arc;

use super::{
    blocking, BoxedSource, ConnectError, Context, OpenedSource, Params, Routed, SourceConnector,
};
mod delta;
mod follow;
mod options;
pub mod source;

use options::Options;

pub use source::{SnapshotOptions, SnapshotSource};

pub(super) const SOURCE: SourceConnector = SourceConnector {
    name: "snapshot",
    schemes: ::snapshot::SCHEMES,
    params: options::PARAMS,
    holds: Some(holds),
    open: |url, params, ctx| Box::pin(open(url, params, ctx)),
    identity: Some(|url, params, ctx| {
        let o = Options::parse(url, params, ctx)?;
        Ok(SnapshotSource::identity_of(
            url,
            params.get("snapshot").unwrap_or_default(),
            o.since.as_deref(),
        ))
    }),
    generations: Some(|url, _, ctx| Ok(Box::new(follow::SnapshotLister::new(url, ctx)))),
    matched: None,
};

/// A repository has `index-N` or `index.latest` at its root.
pub(super) fn is_repository(store: &dyn ::snapshot::BlobStore) -> bool {
    store.list("", "index").is_ok_and(|blobs| {
        blobs.iter().any(|b| {
            b.name == "index.latest"
                || b.name
                    .strip_prefix("index-")
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()))
        })
    })
}

/// The location and its `#snapshot=NAME` fragment (empty without one). Only that fragment
/// is cut: a `#` anywhere else belongs to the path (a directory may be named `a#b`).
pub(super) fn without_snapshot(url: &str) -> (&str, &str) {
    match url.rfind("#snapshot=") {
        Some(at) => (&url[..at], &url[at + 1..]),
        None => (url, ""),
    }
}

/// Why the store at `url` cannot be listed, when it cannot (credentials refused, the
/// bucket unreachable), with the causes: such a location is not "empty", and must not be
/// reported as holding neither a repository nor JSON lines.
pub(super) fn listing_error(url: &str, ctx: &Context) -> Option<String> {
    let chain = |e: &dyn std::error::Error| {
        let mut out = e.to_string();
        let mut next = e.source();
        while let Some(cause) = next {
            let text = cause.to_string();
            if !out.contains(&text) {
                out.push_str(": ");
                out.push_str(&text);
            }
            next = cause.source();
        }
        out
    };
    let store = match ::snapshot::open_blob_store(without_snapshot(url).0, &ctx.from.blob) {
        Ok(s) => s,
        Err(e) => return Some(chain(&e)),
    };
    store.list("", "").err().map(|e| chain(&e))
}

fn holds(url: &str, ctx: &Context) -> bool {
    let location = without_snapshot(url).0;
    ::snapshot::open_blob_store(location, &ctx.from.blob).is_ok_and(|s| is_repository(s.as_ref()))
}

async fn open(url: &str, params: &Params, ctx: &Context) -> Result<OpenedSource, ConnectError> {
    let location = without_snapshot(url).0;
    let options = Options::parse(url, params, ctx)?;
    let name = options.snapshot.clone().ok_or_else(|| {
        ConnectError::new(
            url,
            "a repository source needs the snapshot: --snapshot NAME or #snapshot=NAME",
        )
    })?;
    let (location, ctx) = (location.to_string(), ctx.clone());
    blocking(url, move || open_blocking(&location, &name, &options, &ctx)).await
}

/// Opens the repository and the snapshot, chooses and routes its indices, and reads a
/// delta's earlier snapshot.
fn open_blocking(
    location: &str,
    name: &str,
    options: &Options,
    ctx: &Context,
) -> Result<OpenedSource, ConnectError> {
    let shown = redact::url(location);
    let store = ::snapshot::open_blob_store(location, &ctx.from.blob)
        .map_err(|e| ConnectError::context("opening the repository", e))?;
    let repo = ::snapshot::Repository::open(store)
        .map_err(|e| ConnectError::context(format!("reading repository {shown}"), e))?;
    let snap = repo
        .snapshot(name)
        .map_err(|e| ConnectError::context(format!("snapshot {name} in {shown}"), e))?;
    if !options.any_state {
        readable(&snap, "")?;
    }
    let (groups, routing) = chosen(&snap, ctx, true)?;
    let metadata = match (&routing, ctx.read.metadata) {
        (Some((metadata, _, _)), true) => Some(metadata.clone()),
        (None, true) => {
            Some(metadata::SourceMetadata::from_snapshot(&snap).map_err(ConnectError::of)?)
        }
        (_, false) => None,
    };
    let mut source = SnapshotSource::new(snap.clone(), groups.clone(), options.read.clone());
    let mut removed = Vec::new();
    let mut removed_groups = Vec::new();
    if let Some(since) = &options.since {
        if since == snap.name() {
            return Err(ConnectError::message(format!(
                "--since {since} names the snapshot being read; give the earlier one"
            )));
        }
        let old = repo
            .snapshot(since)
            .map_err(|e| ConnectError::context(format!("--since: snapshot {since}"), e))?;
        readable(&old, "--since: ")?;
        let (old_groups, old_routing) = chosen(&old, ctx, false)?;
        source = source.since(old, old_groups);
        removed_groups = source.removed_indices();
        if let Some((_, _, old_routing)) = &old_routing {
            for index in source.removed_indices() {
                let targets = old_routing
                    .targets_of(&index)
                    .into_iter()
                    .map(str::to_string)
                    .collect();
                removed.push((index, targets));
            }
        }
    }
    let routed = routing.map(|(metadata, transform, _)| Routed {
        metadata,
        transform,
        removed,
    });
    Ok(OpenedSource {
        key_check: None,
        source: BoxedSource::new(Arc::new(source)),
        kind: "snapshot",
        key_column: None,
        hints: Default::default(),
        groups,
        routed,
        removed: removed_groups,
        notes: Vec::new(),
        metadata,
    })
}

/// A snapshot that holds data (not FAILED, not in progress).
fn readable(snap: &::snapshot::Snapshot, prefix: &str) -> Result<(), ConnectError> {
    match snap.state() {
        Some(state) if !state.is_restorable() => Err(ConnectError::message(format!(
            "{prefix}snapshot {} is {state}: it holds no readable data",
            snap.name()
        ))),
        _ => Ok(()),
    }
}

type Routing = (
    metadata::SourceMetadata,
    Arc<dyn engine::transform::Transform>,
    metadata::DocumentRouting,
);

/// The indices of `snap` the context chooses (routed: those the routing includes; else
/// those matching the patterns; `strict`: at least one), and the routing.
fn chosen(
    snap: &::snapshot::Snapshot,
    ctx: &Context,
    strict: bool,
) -> Result<(Vec<String>, Option<Routing>), ConnectError> {
    let all = snap.index_names();
    if let Some(options) = &ctx.read.routing {
        let metadata = metadata::SourceMetadata::from_snapshot(snap).map_err(ConnectError::of)?;
        // The type mapping provider's rules become exact routes for this snapshot's pairs.
        let options = options
            .with_type_mapping(&metadata)
            .map_err(ConnectError::of)?;
        let routing = metadata::DocumentRouting::new(&metadata, &options);
        let mut indices: Vec<String> = all.into_iter().filter(|n| routing.includes(n)).collect();
        failure_stores(snap, options.indices.is_empty(), &mut indices, strict);
        let routes: Arc<dyn engine::transform::Transform> =
            Arc::new(programs::routes::Routes::new(&routing, &indices));
        return Ok((indices, Some((metadata, routes, routing))));
    }
    let patterns = &ctx.read.index_patterns;
    let allow = metadata::Allowlist::parse(patterns).map_err(ConnectError::of)?;
    let mut indices: Vec<String> = all
        .into_iter()
        .filter(|n| allow.is_empty() || allow.matches(n))
        .collect();
    failure_stores(snap, allow.is_empty(), &mut indices, strict);
    if strict && indices.is_empty() && !patterns.is_empty() {
        return Err(ConnectError::message(format!(
            "no index of snapshot {} matches {patterns:?}",
            snap.name()
        )));
    }
    Ok((indices, None))
}

/// Failure-store indices (`.fs-…`, Elasticsearch 8.15+, listed as a data stream's
/// `failure_indices`) hold the documents the stream refused at ingestion, wrapped with
/// the error (elastic.co docs, "Failure store": "a secondary set of indices inside a data
/// stream, dedicated to storing failed documents"; searched apart with the `::failures`
/// selector, never with the stream's own data). Without a list of indices (`unlisted`)
/// they are left out; a list that names one migrates it as an ordinary index of that
/// name. Either way each one is named: `warn` (the snapshot being read, not a delta's
/// earlier one) logs a WARN for each left out whose data stream is read or when no list
/// was given, and an INFO for each migrated.
fn failure_stores(
    snap: &::snapshot::Snapshot,
    unlisted: bool,
    indices: &mut Vec<String>,
    warn: bool,
) {
    let Ok(global) = snap.global_metadata() else {
        return;
    };
    for ds in global.data_streams.values() {
        for name in &ds.failure_indices {
            if unlisted {
                indices.retain(|i| i != name);
            }
            if !warn {
                continue;
            }
            if indices.contains(name) {
                tracing::info!(
                    index = %name,
                    "failure store of data stream {}: migrated as an ordinary index of this name (its documents are the ones the stream refused, not written into the stream)",
                    ds.name
                );
            } else if unlisted || ds.indices.iter().any(|b| indices.contains(b)) {
                tracing::warn!(
                    index = %name,
                    "left out: the failure store of data stream {} (documents the stream refused at ingestion, not part of its data); list it (--index '{name}') to migrate it as an ordinary index",
                    ds.name
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::without_snapshot;

    #[test]
    fn only_the_snapshot_fragment_is_cut() {
        assert_eq!(
            without_snapshot("/repos/a#b#snapshot=s1"),
            ("/repos/a#b", "snapshot=s1")
        );
        assert_eq!(without_snapshot("/repos/a#b"), ("/repos/a#b", ""));
        assert_eq!(
            without_snapshot("s3://bucket/p#snapshot=x"),
            ("s3://bucket/p", "snapshot=x")
        );
    }
}
