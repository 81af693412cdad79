//! Sink: files, `file:///DIR?format=jsonl|bulk` (default jsonl), or a directory path
//! (taken as it is, JSON lines): one file per index.

use std::path::PathBuf;

use super::{
    blocking, split_query, BoxedSink, ConnectError, OpenedLookup, OpenedSink, OpenedSource,
    Settings, SinkConnector,
};
use crate::lookup::files::FileLookup;
use crate::sinks::files::{FileFormat, FileSink, Output};

pub(super) const SINK: SinkConnector = SinkConnector {
    name: "files",
    schemes: &["file", ""],
    open: |url, settings, source| Box::pin(open(url, settings, source)),
    lookup: |url, _settings, _shape| Box::pin(lookup(url)),
};

/// The directory's files (both formats) read once.
async fn lookup(url: &str) -> Result<OpenedLookup, ConnectError> {
    let (dir, _) = location(url)?;
    let u = url.to_string();
    let files = blocking(url, move || {
        FileLookup::load(&dir).map_err(|e| ConnectError::new(&u, e))
    })
    .await?;
    Ok(OpenedLookup {
        lookup: Box::new(files),
        index: None,
    })
}

async fn open(
    url: &str,
    settings: &Settings,
    _source: &OpenedSource,
) -> Result<OpenedSink, ConnectError> {
    let (dir, format) = location(url)?;
    files(url, dir, format, settings)
}

/// The directory and the format a file sink URL names.
fn location(url: &str) -> Result<(PathBuf, FileFormat), ConnectError> {
    if super::scheme(url).is_empty() {
        return Ok((PathBuf::from(url), FileFormat::Jsonl));
    }
    let (base, params) = split_query(url);
    let mut format = FileFormat::Jsonl;
    for (k, v) in params {
        match (k.as_str(), v.as_str()) {
            ("format", "jsonl") => format = FileFormat::Jsonl,
            ("format", "bulk") => format = FileFormat::Bulk,
            (k, v) => {
                return Err(ConnectError::new(
                    url,
                    format!("{k}={v}: a file sink takes format=jsonl or format=bulk"),
                ))
            }
        }
    }
    let dir: PathBuf = url::Url::parse(&base)
        .ok()
        .and_then(|u| u.to_file_path().ok())
        .ok_or_else(|| ConnectError::new(url, "not a local file:///DIR URL"))?;
    Ok((dir, format))
}

fn files(
    url: &str,
    dir: PathBuf,
    format: FileFormat,
    settings: &Settings,
) -> Result<OpenedSink, ConnectError> {
    let mut sink = FileSink::new(Output::Directory(dir), format, settings.batch)
        .map_err(|e| ConnectError::new(url, e))?;
    if let Some(tag) = &settings.file_tag {
        sink = sink.with_tag(tag);
    }
    Ok(OpenedSink {
        sink: BoxedSink::new(sink),
        index: None,
    })
}
