//! The connector registry: sources and sinks named by URL. Each connector is one folder
//! with a `SOURCE` or `SINK` entry, registered by one line in [`SOURCES`] or [`SINKS`]; a
//! command opens whatever the URLs name and runs one `Job<BoxedSource, BoxedSink>`. Every
//! sink also opens a [`Lookup`] on what it wrote ([`open_lookup`]), for `rfs verify`.
//!
//! | scheme | reads | writes |
//! |---|---|---|
//! | a path, `file://`, `s3://`, `gs://`, `az://` | a snapshot repository (`--snapshot` or `#snapshot=NAME`), or `*.jsonl` files (told apart by content) | — |
//! | `file:///DIR?format=jsonl\|bulk`, a directory path (as `--to`) | — | one file per index |
//! | `postgres://…?table=T&key=K` | a table | — |
//! | `http(s)://[user:pw@]host:port/INDEX-PATTERN` (as `--from`) | a live cluster, sliced point in time (sliced scroll before ES 7.10 / OpenSearch 2.4) | — |
//! | `http(s)://[user:pw@]host:port[/INDEX]` | — | `_bulk` (all into INDEX when given) |
//! | `dynamodb://TABLE?region=R&endpoint=URL` | — | one item per document |
//! | `failure-log://PATH` | the documents a failure log says were refused (`rfs redrive`) | — |
// Without `parts`, what only this crate's tests and examples use of a connector is
// unreachable from outside; it is not dead.
#![cfg_attr(not(feature = "parts"), allow(dead_code, unused_imports))]

/// The connectors themselves: private to the registry, so that the compiler — not
/// discipline — keeps a command from reaching past [`SOURCES`]/[`SINKS`] into a part. The
/// `parts` feature opens them for this crate's own tests, examples and benchmarks (a
/// dev-dependency of the crate on itself turns it on); `rfs` never enables it, so
/// `cargo build -p rfs` fails on any `connectors::<part>::` path.
macro_rules! parts {
    ($($part:ident),* $(,)?) => {$(
        #[cfg(feature = "parts")]
        pub mod $part;
        #[cfg(not(feature = "parts"))]
        mod $part;
    )*};
}
parts!(bulk, cluster, dynamodb, files, jsonl, snapshot, table);

/// A failure log is a file format that commands read and write (`rfs status`, `redrive`,
/// the dashboard), besides the source that re-reads its documents.
pub mod failure_log;

/// Names of the files a files sink writes (`<index>.jsonl`), for what reads them back.
pub use files::file_name_for;

mod client;
mod context;
pub mod hints;
pub mod keys;
mod params;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

pub use context::{Context, End, Rates, Reading};
pub use engine::boxed::{self, BoxedBatch, BoxedSink, BoxedSource, BoxedWriter};
/// The port every sink's lookup implements (what `rfs verify` asks a target).
pub use engine::lookup;
pub use params::{parse_pair, Param, Params};

pub use keys::{KeyCheck, KeyGuard, KeyOf};

use crate::lookup::Lookup;
use engine::transform::Transform;

/// A connector could not be opened; the message names the URL (without secrets) or the
/// file, and why; the error of the part below is its source, not repeated in the message.
#[derive(Debug)]
pub struct ConnectError {
    /// Empty when the cause names what failed itself and is shown in its place (see
    /// [`ConnectError::of`]).
    pub message: String,
    /// The error of the part below (the database, the cluster client, the store), when
    /// there is one.
    pub cause: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.cause {
            Some(cause) if self.message.is_empty() => cause.fmt(f),
            _ => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        let cause: &(dyn std::error::Error + 'static) = self.cause.as_deref()?;
        if self.message.is_empty() {
            cause.source()
        } else {
            Some(cause)
        }
    }
}

impl ConnectError {
    pub fn new(url: &str, why: impl std::fmt::Display) -> Self {
        ConnectError {
            message: format!("{}: {why}", redact::url(url)),
            cause: None,
        }
    }

    /// The connector at `url` (named without secrets) could not be opened because of
    /// `cause`, kept as the error's source.
    pub fn caused(url: &str, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        ConnectError {
            message: redact::url(url),
            cause: Some(Box::new(cause)),
        }
    }

    /// An error that names what failed itself (a file, a URL without secrets), kept whole
    /// with its causes: it says what `e` says (like `#[error(transparent)]`).
    pub fn of(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        ConnectError {
            message: String::new(),
            cause: Some(Box::new(e)),
        }
    }

    /// `message` (naming what failed) with the error underneath.
    pub fn context(
        message: impl Into<String>,
        e: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        ConnectError {
            message: message.into(),
            cause: Some(Box::new(e)),
        }
    }

    /// A message that names what failed itself.
    pub fn message(message: impl Into<String>) -> Self {
        ConnectError {
            message: message.into(),
            cause: None,
        }
    }
}

/// What a source connector opened.
pub struct OpenedSource {
    pub source: BoxedSource,
    /// `snapshot`, `jsonl`, `table`.
    pub kind: &'static str,
    /// A table's key column (DynamoDB's partition key unless mapped otherwise); `None`:
    /// documents, keyed by `_id`.
    pub key_column: Option<String>,
    /// A table's column shapes.
    pub hints: ::dynamo::ColumnHints,
    /// The source's groups (indices, files, the table), for renaming.
    pub groups: Vec<String>,
    /// A snapshot opened with [`Reading::routing`]: its metadata, where each document
    /// goes, the indices deleted since the earlier snapshot of a delta.
    pub routed: Option<Routed>,
    /// A delta (its `since` parameter): the groups of the earlier snapshot that this one no
    /// longer has.
    pub removed: Vec<String>,
    /// What the operator should be told about the source once it is open (a failure
    /// log's documents refused more than once, sent once).
    pub notes: Vec<String>,
    /// With [`Reading::metadata`]: the source's index definitions (and a snapshot's
    /// templates), as metadata migration takes them; `None` for a source without any
    /// (JSON lines, a table, a failure log).
    pub metadata: Option<metadata::SourceMetadata>,
    /// What a source of rows says about its keys (a table), for a sink that writes rows
    /// under a key of its own to check before a row is read (DynamoDB: the key mapping
    /// unique in the table); `None`: documents, keyed by `_id`.
    pub key_check: Option<Arc<dyn KeyCheck>>,
}

/// A snapshot source routed as the metadata migration names the target's indices.
pub struct Routed {
    pub metadata: metadata::SourceMetadata,
    /// The routes and renames of each document.
    pub transform: Arc<dyn Transform>,
    /// A delta (its `since` parameter): indices of the earlier snapshot that this one does
    /// not have, each with the target indices its documents went to.
    pub removed: Vec<(String, Vec<String>)>,
}

impl OpenedSource {
    /// What a lookup needs to know of this source.
    pub fn shape(&self) -> SourceShape {
        SourceShape {
            key_column: self.key_column.clone(),
            hints: self.hints.clone(),
        }
    }
}

/// What a sink (and a lookup on it) needs to know of the source: a table's key column and
/// column shapes; `key_column` `None`: documents, keyed by `_id`.
#[derive(Debug, Clone, Default)]
pub struct SourceShape {
    pub key_column: Option<String>,
    pub hints: ::dynamo::ColumnHints,
}

/// What a sink connector opened to look documents up.
pub struct OpenedLookup {
    pub lookup: Box<dyn Lookup>,
    /// Every document went into this index (an index named in the sink URL).
    pub index: Option<String>,
    /// The key a row is written under besides its `_id`, as the sink writes it (DynamoDB's
    /// key attributes, for a source with a key column); `None`: the `_id` alone.
    pub key_of: Option<KeyOf>,
}

impl OpenedLookup {
    /// The transform between the source and this target, as [`OpenedSink::transform`].
    pub fn transform(&self) -> Arc<dyn Transform> {
        programs::routes::into_index(self.index.as_deref())
    }
}

/// What a sink connector opened.
pub struct OpenedSink {
    pub sink: BoxedSink,
    /// Every document into this index (an index named in the sink URL).
    pub index: Option<String>,
    /// A client of the target cluster (a `_bulk` sink), for what a command asks the
    /// target besides documents: templates and indices, refreshes, counts.
    pub target_client: Option<::cluster::Client>,
    /// The key a row is written under besides its `_id` (see [`OpenedLookup::key_of`]).
    pub key_of: Option<KeyOf>,
}

impl OpenedSink {
    /// The transform between `source` and this sink: all into the sink's index when it
    /// names one, else each document keeps its index.
    pub fn transform(&self) -> Arc<dyn Transform> {
        programs::routes::into_index(self.index.as_deref())
    }
}

pub type OpenFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, ConnectError>> + Send + 'a>>;

/// A source by URL.
#[derive(Debug)]
pub struct SourceConnector {
    pub name: &'static str,
    /// URL schemes it reads (`""`: a plain path).
    pub schemes: &'static [&'static str],
    /// The parameters it takes ([`Params`]); the registry refuses any other, naming the
    /// connector that takes it.
    pub params: &'static [&'static str],
    /// When several connectors read a scheme: whether this one holds the URL (by its
    /// content; blocking). `None`: every URL of its schemes.
    pub holds: Option<fn(&str, &Context) -> bool>,
    pub open: for<'a> fn(&'a str, &'a Params, &'a Context) -> OpenFuture<'a, OpenedSource>,
    /// The source's part of the migration identity without opening it (a snapshot that
    /// is yet to be taken); `None`: only an opened source can say.
    pub identity: Option<SourceIdentity>,
    /// The generations the source lists again and again (a repository's snapshots, for
    /// `rfs run --follow`); `None`: a source that has no newer generations to follow.
    pub generations: Option<OpenGenerations>,
    /// Every group the URL matches, each with its document count, by a request of its
    /// own rather than the source's listing (`rfs verify --from` names what the source
    /// left out); `None`: a source whose groups are what it reads.
    pub matched: Option<MatchedGroups>,
}

/// The generations of a source, listed again and again: a snapshot repository's
/// snapshots as `rfs run --follow` orders them ([`engine::generations::outlook`]).
pub trait Generations: Send + Sync {
    /// What the source lists now.
    fn list(&self) -> OpenFuture<'_, Vec<engine::generations::Listed>>;
}

/// Opens the [`Generations`] of the source at a URL.
pub type OpenGenerations =
    fn(&str, &Params, &Context) -> Result<Box<dyn Generations>, ConnectError>;

/// Every group a source URL matches with its document count (see
/// [`SourceConnector::matched`]).
pub type MatchedGroups =
    for<'a> fn(&'a str, &'a Params, &'a Context) -> OpenFuture<'a, Vec<(String, u64)>>;

/// The source's part of the migration identity, from its URL and parameters.
pub type SourceIdentity =
    fn(&str, &Params, &Context) -> Result<std::collections::BTreeMap<String, String>, ConnectError>;

/// A sink by URL.
#[derive(Debug)]
pub struct SinkConnector {
    pub name: &'static str,
    pub schemes: &'static [&'static str],
    /// The parameters it takes ([`Params`]); the registry refuses any other, naming the
    /// sink that takes it.
    pub params: &'static [&'static str],
    pub open: for<'a> fn(
        &'a str,
        &'a Params,
        &'a Context,
        &'a OpenedSource,
    ) -> OpenFuture<'a, OpenedSink>,
    /// A lookup on what the sink wrote (verify), for documents of a source of that shape.
    pub lookup: for<'a> fn(
        &'a str,
        &'a Params,
        &'a Context,
        &'a SourceShape,
    ) -> OpenFuture<'a, OpenedLookup>,
    /// The sink's name in a migration's identity, exactly as the sink opened on the same
    /// URL and options records it (`Sink::identity`), without connecting.
    pub identity: fn(&str, &Params, &Context) -> Result<String, ConnectError>,
}

/// Every source, in the order they are asked.
pub static SOURCES: &[SourceConnector] = &[
    jsonl::SOURCE,
    snapshot::SOURCE,
    table::SOURCE,
    cluster::SOURCE,
    failure_log::SOURCE,
];

/// Every sink.
pub static SINKS: &[SinkConnector] = &[bulk::SINK, files::SINK, dynamodb::SINK];

/// The URL's scheme, lower case; `""` for a plain path.
pub fn scheme(url: &str) -> String {
    match url.split_once("://") {
        Some((s, _))
            if !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')) =>
        {
            s.to_ascii_lowercase()
        }
        _ => String::new(),
    }
}

/// The source connector for `url`.
pub fn source_for(url: &str, ctx: &Context) -> Result<&'static SourceConnector, ConnectError> {
    let s = scheme(url);
    let mut known = false;
    for c in SOURCES {
        if !c.schemes.contains(&s.as_str()) {
            continue;
        }
        known = true;
        if c.holds.is_none_or(|h| h(url, ctx)) {
            return Ok(c);
        }
    }
    // An object store that cannot even be listed (credentials refused, …) says why.
    let unlisted = if known && !matches!(s.as_str(), "" | "file") {
        snapshot::listing_error(url, ctx)
    } else {
        None
    };
    Err(ConnectError::new(
        url,
        if let Some(why) = unlisted {
            format!("cannot list the location: {why}")
        } else if known {
            "neither a snapshot repository (no index-N or index.latest) nor a directory of *.jsonl files".to_string()
        } else {
            format!(
                "no source reads {}:// URLs ({})",
                shown_scheme(&s),
                schemes_of(SOURCES.iter().map(|c| c.schemes))
            )
        },
    ))
}

/// The parameters connector `name` (a `kind`: source or sink) takes out of `params`:
/// those it does not take but which were only offered are left out; any other is refused,
/// naming the connector that takes it (`--create-table applies to a dynamodb:// sink
/// only`), else the ones this one takes.
fn fitting<'a>(
    name: &str,
    kind: &str,
    params: &Params,
    all: impl Iterator<Item = (&'a str, &'a [&'a str], &'a [&'a str])> + Clone,
) -> Result<Params, ConnectError> {
    let Some((_, _, known)) = all.clone().find(|(n, _, _)| *n == name) else {
        return Ok(Params::new());
    };
    for p in params.iter() {
        if p.offered || known.contains(&p.key.as_str()) {
            continue;
        }
        let shown = params.shown(&p.key);
        if let Some((other, schemes, _)) = all
            .clone()
            .find(|(n, _, takes)| *n != name && takes.contains(&p.key.as_str()))
        {
            let which = match schemes.first() {
                Some(s) if !s.is_empty() => format!("{s}://"),
                _ => other.to_string(),
            };
            return Err(ConnectError::message(format!(
                "{shown} applies to a {which} {kind} only"
            )));
        }
        return Err(ConnectError::message(format!(
            "{shown}: the {name} {kind} takes no such parameter ({})",
            params::takes(known)
        )));
    }
    Ok(params.only(known))
}

fn source_params(c: &SourceConnector, params: &Params) -> Result<Params, ConnectError> {
    fitting(
        c.name,
        "source",
        params,
        SOURCES.iter().map(|c| (c.name, c.schemes, c.params)),
    )
}

fn sink_params(c: &SinkConnector, params: &Params) -> Result<Params, ConnectError> {
    fitting(
        c.name,
        "sink",
        params,
        SINKS.iter().map(|c| (c.name, c.schemes, c.params)),
    )
}

/// The sink connector for `url`, and the parameters it takes (any other refused).
fn sink_with(url: &str, params: &Params) -> Result<(&'static SinkConnector, Params), ConnectError> {
    let chosen = sink_for(url)?;
    Ok((chosen, sink_params(chosen, params)?))
}

/// The sink connector for `url`.
pub fn sink_for(url: &str) -> Result<&'static SinkConnector, ConnectError> {
    let s = scheme(url);
    SINKS
        .iter()
        .find(|c| c.schemes.contains(&s.as_str()))
        .ok_or_else(|| {
            ConnectError::new(
                url,
                format!(
                    "no sink writes {}:// URLs ({})",
                    shown_scheme(&s),
                    schemes_of(SINKS.iter().map(|c| c.schemes))
                ),
            )
        })
}

fn shown_scheme(s: &str) -> &str {
    if s.is_empty() {
        "path"
    } else {
        s
    }
}

fn schemes_of<'a>(all: impl Iterator<Item = &'a [&'a str]>) -> String {
    let mut v: Vec<&str> = all
        .flatten()
        .map(|s| if s.is_empty() { "a path" } else { s })
        .collect();
    v.dedup();
    v.join(", ")
}

/// Opens the source `url` names, with `params` (those it does not take refused, or left
/// out when only offered).
pub async fn open_source(
    url: &str,
    params: &Params,
    ctx: &Context,
) -> Result<OpenedSource, ConnectError> {
    let (u, c2) = (url.to_string(), ctx.clone());
    let c = blocking(url, move || source_for(&u, &c2)).await?;
    let params = source_params(c, params)?;
    (c.open)(url, &params, ctx).await
}

fn source_named(name: &str, url: &str) -> Result<&'static SourceConnector, ConnectError> {
    SOURCES
        .iter()
        .find(|c| c.name == name)
        .ok_or_else(|| ConnectError::new(url, format!("no source connector named {name}")))
}

/// Opens `url` with the source connector named `name`, for a command whose flag says
/// what kind of source it names (`--repo` is a snapshot repository): that connector's
/// errors rather than a guess by content.
pub async fn open_source_as(
    name: &str,
    url: &str,
    params: &Params,
    ctx: &Context,
) -> Result<OpenedSource, ConnectError> {
    let c = source_named(name, url)?;
    let params = source_params(c, params)?;
    (c.open)(url, &params, ctx).await
}

/// The identity source connector `name` gives `url` without opening it (to check a store
/// is this migration's before the source exists).
pub fn source_identity_as(
    name: &str,
    url: &str,
    params: &Params,
    ctx: &Context,
) -> Result<std::collections::BTreeMap<String, String>, ConnectError> {
    let c = source_named(name, url)?;
    let identity = c.identity.ok_or_else(|| {
        ConnectError::new(
            url,
            format!("a {name} source says its identity once opened"),
        )
    })?;
    identity(url, &source_params(c, params)?, ctx)
}

/// The generations of `url` as source connector `name` lists them (`rfs run --follow`:
/// the repository's snapshots, again and again); refused for a connector without any.
pub fn open_generations_as(
    name: &str,
    url: &str,
    params: &Params,
    ctx: &Context,
) -> Result<Box<dyn Generations>, ConnectError> {
    let c = source_named(name, url)?;
    let open = c.generations.ok_or_else(|| {
        ConnectError::new(
            url,
            format!("a {name} source has no newer generations to follow"),
        )
    })?;
    open(url, &source_params(c, params)?, ctx)
}

/// Every group `url` matches as source connector `name` asks by a request of its own,
/// each with its document count; `None`: the connector's groups are what it reads.
pub async fn matched_groups(
    name: &str,
    url: &str,
    params: &Params,
    ctx: &Context,
) -> Result<Option<Vec<(String, u64)>>, ConnectError> {
    let c = source_named(name, url)?;
    let Some(matched) = c.matched else {
        return Ok(None);
    };
    let params = source_params(c, params)?;
    Ok(Some(matched(url, &params, ctx).await?))
}

/// Opens the sink `url` names, for documents of `source`.
pub async fn open_sink(
    url: &str,
    params: &Params,
    ctx: &Context,
    source: &OpenedSource,
) -> Result<OpenedSink, ConnectError> {
    let (c, params) = sink_with(url, params)?;
    (c.open)(url, &params, ctx, source).await
}

/// Opens a lookup on what the sink `url` names holds, for documents of a source of
/// `shape` (verify).
pub async fn open_lookup(
    url: &str,
    params: &Params,
    ctx: &Context,
    shape: &SourceShape,
) -> Result<OpenedLookup, ConnectError> {
    let (c, params) = sink_with(url, params)?;
    (c.lookup)(url, &params, ctx, shape).await
}

/// The name the sink `url` names records in a migration's identity, as the sink opened
/// with these parameters records it (`rfs verify --store`, `rfs table verify --store`
/// compare it with the store's before looking anything up).
pub fn sink_identity(url: &str, params: &Params, ctx: &Context) -> Result<String, ConnectError> {
    let (c, params) = sink_with(url, params)?;
    (c.identity)(url, &params, ctx)
}

/// `key=value` parameters of a URL's query, percent-decoded, and the URL without them.
pub(crate) fn split_query(url: &str) -> (String, Vec<(String, String)>) {
    let (base, frag) = url
        .split_once('#')
        .map_or((url, None), |(a, b)| (a, Some(b)));
    let (base, query) = base.split_once('?').unwrap_or((base, ""));
    let mut params: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    if let Some(f) = frag {
        params.extend(url::form_urlencoded::parse(f.as_bytes()).into_owned());
    }
    (base.to_string(), params)
}

/// Runs blocking work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    url: &str,
    f: impl FnOnce() -> Result<T, ConnectError> + Send + 'static,
) -> Result<T, ConnectError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ConnectError::new(url, e))?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none() -> Params {
        Params::new()
    }

    #[test]
    fn schemes_choose_connectors() {
        let s = Context::default();
        assert_eq!(sink_for("http://h:9200").unwrap().name, "bulk");
        assert_eq!(sink_for("HTTPS://u:pw@h/ix").unwrap().name, "bulk");
        assert_eq!(sink_for("file:///tmp/x?format=bulk").unwrap().name, "files");
        assert_eq!(sink_for("./out").unwrap().name, "files");
        assert_eq!(
            sink_for("dynamodb://tab?region=r").unwrap().name,
            "dynamodb"
        );
        let e = sink_for("ftp://u:secret@h/x").unwrap_err().to_string();
        assert!(
            e.contains("no sink writes ftp://") && !e.contains("secret"),
            "{e}"
        );
        assert_eq!(
            source_for("failure-log://logs/f.jsonl", &s).unwrap().name,
            "failure-log"
        );
        assert_eq!(
            source_for("postgres://u:pw@h/db?table=t&key=id", &s)
                .unwrap()
                .name,
            "table"
        );
        let e = source_for("mysql://u:secret@h/db", &s)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("no source reads mysql://") && !e.contains("secret"),
            "{e}"
        );
    }

    #[test]
    fn directories_are_told_apart_by_content() {
        let s = Context::default();
        let repo = tempfile::tempdir().unwrap();
        std::fs::write(repo.path().join("index-3"), b"{}").unwrap();
        let url = format!("file://{}", repo.path().display());
        assert_eq!(source_for(&url, &s).unwrap().name, "snapshot");
        let lines = tempfile::tempdir().unwrap();
        std::fs::write(lines.path().join("a.jsonl"), b"").unwrap();
        let path = lines.path().display().to_string();
        assert_eq!(source_for(&path, &s).unwrap().name, "jsonl");
        let empty = tempfile::tempdir().unwrap();
        let e = source_for(&empty.path().display().to_string(), &s)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("neither a snapshot repository"), "{e}");
    }

    #[test]
    fn sink_identities_are_the_sinks_own_without_secrets() {
        let s = Context::default();
        assert_eq!(
            sink_identity("http://u:secret@Host:9200/", &none(), &s).unwrap(),
            engine::job::identity_location("http://host:9200")
        );
        let named = Context {
            identity_name: Some("https://h:9200/ev".into()),
            ..Context::default()
        };
        assert_eq!(
            sink_identity("https://u:secret@h:9200/ev", &none(), &named).unwrap(),
            engine::job::identity_location("https://h:9200/ev")
        );
        assert_eq!(
            sink_identity("file:///tmp/out?format=bulk", &none(), &s).unwrap(),
            "/tmp/out"
        );
        assert_eq!(sink_identity("out/dir", &none(), &s).unwrap(), "out/dir");
        let d = "dynamodb://docs?region=r&endpoint=http%3A%2F%2Fh%3A1";
        assert_eq!(
            sink_identity(d, &none(), &s).unwrap(),
            crate::dynamodb::DynamoUrl::parse(d).unwrap().display()
        );
        let e = sink_identity("ftp://u:secret@h/x", &none(), &s)
            .unwrap_err()
            .to_string();
        assert!(!e.contains("secret"), "{e}");
    }

    /// What `rfs table run --sink` tells apart (formerly its own `SinkUrl`), through the
    /// registry: an `http(s)://` sink must name its index, recorded decoded after the base;
    /// files and DynamoDB; an unknown scheme; no password in any error.
    #[test]
    fn table_sinks_parse_through_the_registry() {
        // Offered: the files and DynamoDB sinks leave it out.
        let mut named = Params::new();
        named.offer("--sink", "path", "index");
        let s = Context::default();
        assert_eq!(
            sink_identity("http://u:pw@h:9200/events", &named, &s).unwrap(),
            engine::job::identity_location(&format!(
                "{}/events",
                redact::url("http://u:pw@h:9200")
            ))
        );
        assert_eq!(
            sink_identity("https://h/prefix/ev%20x", &named, &s).unwrap(),
            engine::job::identity_location("https://h/prefix/ev x")
        );
        let e = sink_identity("http://u:secret@h:9200/", &named, &s)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("name the index as the URL's path") && !e.contains("secret"),
            "{e}"
        );
        assert_eq!(
            sink_identity("file:///tmp/out", &named, &s).unwrap(),
            "/tmp/out"
        );
        assert_eq!(sink_identity("out", &named, &s).unwrap(), "out");
        let e = sink_identity("ftp://u:secret@h/x", &named, &s)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no sink writes ftp://") && !e.contains("secret"),
            "{e}"
        );
        let d = "dynamodb://events?region=us-east-1&partition-key=room";
        assert_eq!(
            sink_identity(d, &named, &s).unwrap(),
            crate::dynamodb::DynamoUrl::parse(d).unwrap().display()
        );
        let e = sink_identity("dynamodb://t?region=us-east-1", &named, &s)
            .unwrap_err()
            .to_string();
        assert!(e.contains("3 to 255"), "{e}");
    }

    /// A parameter only another connector takes is refused naming that connector; one no
    /// connector takes, naming what this one takes; an offered one is left out.
    #[test]
    fn parameters_are_refused_by_connectors_that_do_not_take_them() {
        let s = Context::default();
        let mut p = Params::new();
        p.set_by("--create-table", "create-table", "true");
        for url in ["http://u:secret@h:9200/ev", "out/dir", "file:///tmp/out"] {
            let e = sink_identity(url, &p, &s).unwrap_err().to_string();
            assert!(
                e.contains("--create-table applies to a dynamodb:// sink only")
                    && !e.contains("secret"),
                "{e}"
            );
        }
        let p = Params::new().with("bogus", "1");
        let e = sink_identity("out/dir", &p, &s).unwrap_err().to_string();
        assert_eq!(
            e,
            "bogus: the files sink takes no such parameter (it takes format)"
        );
        let mut p = Params::new();
        p.offer("--slices", "slices", "8");
        assert_eq!(sink_identity("out/dir", &p, &s).unwrap(), "out/dir");
        let c = SOURCES.iter().find(|c| c.name == "jsonl").unwrap();
        assert!(source_params(c, &p).unwrap().is_empty());
        let c = SOURCES.iter().find(|c| c.name == "cluster").unwrap();
        assert_eq!(source_params(c, &p).unwrap().get("slices"), Some("8"));
        let mut p = Params::new();
        p.set_by("--slices", "slices", "8");
        let c = SOURCES.iter().find(|c| c.name == "table").unwrap();
        let e = source_params(c, &p).unwrap_err().to_string();
        assert_eq!(e, "--slices applies to a http:// source only");
    }

    #[test]
    fn queries_split() {
        let (b, p) = split_query("s3://b/p?region=x&endpoint=http%3A%2F%2Fh#snapshot=s1");
        assert_eq!(b, "s3://b/p");
        assert_eq!(
            p,
            vec![
                ("region".into(), "x".into()),
                ("endpoint".into(), "http://h".into()),
                ("snapshot".into(), "s1".into())
            ]
        );
    }
}
