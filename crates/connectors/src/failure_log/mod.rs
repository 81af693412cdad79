//! Source: a failure log, `failure-log://PATH` (the path as written, relative or absolute):
//! the documents it records as refused by the target, sent once more (`rfs redrive`).

use std::path::PathBuf;
use std::sync::Arc;

use super::{blocking, BoxedSource, ConnectError, Context, OpenedSource, Params, SourceConnector};
pub mod location;
pub mod source;

pub use location::FailureLogAt;

pub use source::{FailureLogSource, GROUP, NO_SOURCE, SKIPPED_BY_SOURCE};

pub(super) const SOURCE: SourceConnector = SourceConnector {
    name: "failure-log",
    schemes: &["failure-log"],
    params: &[],
    holds: None,
    open: |url, params, ctx| Box::pin(open(url, params, ctx)),
    identity: None,
    generations: None,
    matched: None,
};

/// The URL naming the failure log at `path`.
pub fn url_of(path: &std::path::Path) -> String {
    format!("failure-log://{}", path.display())
}

async fn open(url: &str, params: &Params, _ctx: &Context) -> Result<OpenedSource, ConnectError> {
    params.refuse_unknown("failure-log", &[])?;
    let path = url
        .split_once("://")
        .map(|(_, p)| PathBuf::from(p))
        .filter(|p| !p.as_os_str().is_empty())
        .ok_or_else(|| ConnectError::new(url, "failure-log://PATH names no file"))?;
    blocking(url, move || {
        // The log's errors name the file.
        let source = FailureLogSource::open(&path).map_err(ConnectError::of)?;
        let duplicates = source.duplicates();
        let notes = if duplicates > 0 {
            vec![format!(
                "{duplicates} records of documents refused more than once (a re-sent batch) are sent once"
            )]
        } else {
            Vec::new()
        };
        Ok(OpenedSource {
            key_check: None,
            source: BoxedSource::new(Arc::new(source)),
            kind: "failure-log",
            key_column: None,
            hints: Default::default(),
            groups: vec![GROUP.to_string()],
            routed: None,
            removed: Vec::new(),
            notes,
            metadata: None,
        })
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::Source;

    #[tokio::test]
    async fn a_failure_log_opens_by_its_url() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.jsonl");
        std::fs::write(&path, b"").unwrap();
        let url = url_of(&path);
        let opened = super::super::open_source(&url, &Params::new(), &Context::default())
            .await
            .unwrap();
        assert_eq!(opened.kind, "failure-log");
        assert_eq!(
            opened.source.identity().get("failure_log"),
            Some(&path.display().to_string())
        );
        assert!(opened.source.downcast::<FailureLogSource>().is_some());
        let e = super::super::open_source("failure-log://", &Params::new(), &Context::default())
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("names no file"), "{e}");
    }
}
