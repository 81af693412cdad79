//! Source: JSON-lines files (what `rfs export` writes: `*.jsonl`, `*.ndjson`, compressed
//! `.gz`/`.zst`, in a local directory's sub-directories too) in a directory or an
//! object-store prefix — the same URLs as a snapshot repository, told apart by content.

use std::sync::Arc;

use super::{blocking, BoxedSource, ConnectError, Context, OpenedSource, Params, SourceConnector};
mod options;
pub mod source;

use source::holds_lines;
pub use source::{JsonlOptions, JsonlSource};

pub(super) const SOURCE: SourceConnector = SourceConnector {
    name: "jsonl",
    schemes: ::snapshot::SCHEMES,
    params: options::PARAMS,
    holds: Some(holds),
    open: |url, params, ctx| Box::pin(open(url, params, ctx)),
    identity: None,
    generations: None,
    matched: None,
};

/// The location without a `#snapshot=` fragment.
fn location(url: &str) -> &str {
    super::snapshot::without_snapshot(url).0
}

fn holds(url: &str, ctx: &Context) -> bool {
    let Ok(store) = ::snapshot::open_blob_store(location(url), &ctx.from.blob) else {
        return false;
    };
    !super::snapshot::is_repository(store.as_ref()) && holds_lines(store.as_ref())
}

async fn open(url: &str, params: &Params, ctx: &Context) -> Result<OpenedSource, ConnectError> {
    let (u, opts, jsonl) = (
        location(url).to_string(),
        ctx.from.blob.clone(),
        options::parse(params, ctx)?,
    );
    let url2 = url.to_string();
    blocking(url, move || {
        let store =
            ::snapshot::open_blob_store(&u, &opts).map_err(|e| ConnectError::new(&url2, e))?;
        let source = JsonlSource::open(store, jsonl).map_err(|e| ConnectError::new(&url2, e))?;
        let groups = source.files().iter().map(|(n, _)| n.clone()).collect();
        Ok(OpenedSource {
            key_check: None,
            source: BoxedSource::new(Arc::new(source)),
            kind: "jsonl",
            key_column: None,
            hints: Default::default(),
            groups,
            routed: None,
            removed: Vec::new(),
            notes: Vec::new(),
            metadata: None,
        })
    })
    .await
}
