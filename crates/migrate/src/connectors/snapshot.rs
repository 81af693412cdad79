//! Source: a snapshot repository (a path, `file://`, `s3://`, `gs://`, `az://`; the
//! snapshot from `#snapshot=NAME` or `--snapshot`), every index of the snapshot.

use std::sync::Arc;

use super::{
    blocking, split_query, BoxedSource, ConnectError, OpenedSource, Settings, SourceConnector,
};
use crate::sources::snapshot::SnapshotSource;

pub(super) const SOURCE: SourceConnector = SourceConnector {
    name: "snapshot",
    schemes: &["", "file", "s3", "gs", "az"],
    holds: Some(holds),
    open: |url, settings| Box::pin(open(url, settings)),
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

fn holds(url: &str, settings: &Settings) -> bool {
    let location = url.split_once('#').map_or(url, |(a, _)| a);
    ::snapshot::open_blob_store(location, &settings.store_options)
        .is_ok_and(|s| is_repository(s.as_ref()))
}

async fn open(url: &str, settings: &Settings) -> Result<OpenedSource, ConnectError> {
    let (location, fragment) = url.split_once('#').unwrap_or((url, ""));
    let from_url = split_query(&format!("x#{fragment}"))
        .1
        .into_iter()
        .find(|(k, _)| k == "snapshot")
        .map(|(_, v)| v);
    let name = from_url
        .or_else(|| settings.snapshot.clone())
        .ok_or_else(|| {
            ConnectError::new(
                url,
                "a repository source needs the snapshot: --snapshot NAME or #snapshot=NAME",
            )
        })?;
    let (location, url2) = (location.to_string(), url.to_string());
    let (store_opts, opts) = (
        settings.store_options.clone(),
        settings.snapshot_options.clone(),
    );
    blocking(url, move || {
        let err = |e: ::snapshot::Error| ConnectError::new(&url2, e);
        let store = ::snapshot::open_blob_store(&location, &store_opts).map_err(err)?;
        let repo = ::snapshot::Repository::open(store).map_err(err)?;
        let snap = repo
            .snapshot(&name)
            .map_err(|e| ConnectError::new(&url2, format!("snapshot {name}: {e}")))?;
        if let Some(state) = snap.state() {
            if !state.is_restorable() {
                return Err(ConnectError::new(
                    &url2,
                    format!("snapshot {name} is {state}: it holds no readable data"),
                ));
            }
        }
        let groups = snap.index_names();
        let source = SnapshotSource::new(snap, groups.clone(), opts);
        Ok(OpenedSource {
            source: BoxedSource::new(Arc::new(source)),
            kind: "snapshot",
            key_column: None,
            hints: Default::default(),
            groups,
        })
    })
    .await
}
