//! Sink: files, `file:///DIR?format=jsonl|bulk` (default jsonl), or a directory path
//! (taken as it is; the format from its `format` parameter, else JSON lines): one file
//! per index; `-` writes to stdout.

use std::path::PathBuf;

use super::{
    blocking, split_query, BoxedSink, ConnectError, Context, OpenedLookup, OpenedSink,
    OpenedSource, Params, SinkConnector,
};
pub mod lookup;
mod names;
pub mod sink;

pub use lookup::FileLookup;
pub use names::file_name_for;
pub use sink::{FileFormat, FileSink, Output};

pub(super) const SINK: SinkConnector = SinkConnector {
    name: "files",
    schemes: &["file", ""],
    params: PARAMS,
    open: |url, params, ctx, source| Box::pin(open(url, params, ctx, source)),
    lookup: |url, params, _ctx, _shape| Box::pin(lookup(url, params)),
    identity: |url, params, _ctx| Ok(location(url, params)?.0.identity()),
};

/// The parameters a files sink takes: `format`, `jsonl` or `bulk` (a `file://` URL's own
/// `format=` wins).
const PARAMS: &[&str] = &["format"];

/// The directory's files (both formats) read once.
async fn lookup(url: &str, params: &Params) -> Result<OpenedLookup, ConnectError> {
    let dir = match location(url, params)?.0 {
        Output::Directory(dir) => dir,
        Output::Stdout => {
            return Err(ConnectError::new(
                url,
                "what went to stdout cannot be looked up: name the directory",
            ))
        }
    };
    let u = url.to_string();
    let files = blocking(url, move || {
        FileLookup::load(&dir).map_err(|e| ConnectError::new(&u, e))
    })
    .await?;
    Ok(OpenedLookup {
        key_of: None,
        lookup: Box::new(files),
        index: None,
    })
}

async fn open(
    url: &str,
    params: &Params,
    ctx: &Context,
    _source: &OpenedSource,
) -> Result<OpenedSink, ConnectError> {
    let (output, format) = location(url, params)?;
    files(output, format, ctx)
}

/// Where a file sink URL writes, and in which format (the URL's `format=`, else the
/// parameter's, else JSON lines); any other parameter refused.
fn location(url: &str, params: &Params) -> Result<(Output, FileFormat), ConnectError> {
    params.refuse_unknown("files", PARAMS)?;
    let given = match params.get("format") {
        None | Some("jsonl") => FileFormat::Jsonl,
        Some("bulk") => FileFormat::Bulk,
        Some(v) => return Err(params.bad("format", v, "jsonl or bulk")),
    };
    if super::scheme(url).is_empty() {
        let format = given;
        let output = if url == "-" {
            Output::Stdout
        } else if url.trim().is_empty() {
            return Err(ConnectError::new(
                url,
                "an empty path names no directory: give a directory (or file:///DIR, or - for stdout)",
            ));
        } else {
            Output::Directory(PathBuf::from(url))
        };
        return Ok((output, format));
    }
    let (base, query) = split_query(url);
    // `file://` with nothing after it would be the root directory: never meant.
    let path = base.split_once("://").map_or("", |(_, p)| p);
    if path.is_empty() || path == "localhost" {
        return Err(ConnectError::new(
            url,
            "file:// names no directory: give file:///DIR (three slashes, an absolute path) or a directory path",
        ));
    }
    let mut format = given;
    for (k, v) in query {
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
    Ok((Output::Directory(dir), format))
}

fn files(output: Output, format: FileFormat, ctx: &Context) -> Result<OpenedSink, ConnectError> {
    // The sink's errors name the directory.
    let mut sink = FileSink::new(output, format, ctx.batch)
        .map_err(ConnectError::of)?
        .with_rates(ctx.rates.docs_per_sec, ctx.rates.bytes_per_sec);
    if let Some(tag) = &ctx.process_tag {
        sink = sink.with_tag(tag);
    }
    Ok(OpenedSink {
        key_of: None,
        sink: BoxedSink::new(sink),
        index: None,
        target_client: None,
    })
}
