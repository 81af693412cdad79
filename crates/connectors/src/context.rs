//! What every connector of a command shares, built once by the binary's argument layer:
//! how each end is reached (its cluster client, its object-store credentials), batch
//! limits, parallelism, rates, requests in flight, the throttle budget, this process's
//! tag, and what the command reads of any source. What only one connector takes is one
//! of its [`crate::Params`], never a field here.

use std::time::Duration;

use engine::sink::BatchLimits;

/// The shared part of every connector's options.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// How the source is reached.
    pub from: End,
    /// How the sink is reached.
    pub to: End,
    /// The documents and bytes of one batch, for every sink.
    pub batch: BatchLimits,
    /// How `_bulk` requests are sent (requests in flight, rates, retry budget,
    /// `--create-only` as `op_type` `create`, server-generated ids). A DynamoDB sink
    /// refuses `create` (it overwrites items of the same key).
    pub bulk: cluster::BulkOptions,
    /// Work items this process runs at once; 0: the connector's own default (a table
    /// source's connection pool: this plus 2).
    pub parallel: usize,
    /// Requests in flight at most (DynamoDB's `BatchWriteItem`).
    pub max_in_flight: usize,
    /// This process's rates, for every sink.
    pub rates: Rates,
    /// How long a throttled batch is retried (what the lease allows); `None`: the retry
    /// policy's attempts only.
    pub throttle_budget: Option<Duration>,
    /// A source of rows into a sink that writes them under a key of its own: write even
    /// when that key mapping is not unique in the source (`--allow-key-collisions`).
    pub allow_key_collisions: bool,
    /// This process's name among a fleet's writers (a files sink's `<index>.<tag>.jsonl`).
    pub process_tag: Option<String>,
    /// The sink's name in the migration identity where stores recorded another than its
    /// URL. `None`: the URL's (without credentials).
    pub identity_name: Option<String>,
    /// What the command reads of a source that can say it.
    pub read: Reading,
}

/// How one end is reached.
#[derive(Debug, Clone, Default)]
pub struct End {
    /// An `http(s)://` end's client as the command's flags set it up (authentication,
    /// TLS, client certificates, attempts, timeout, gzip). Its `urls` are not used (the
    /// URL says where); basic auth from the URL's userinfo applies when its `auth` is
    /// `None`. `None`: the URL's userinfo, [`End::tls`] and the client's defaults.
    pub client: Option<cluster::ClientConfig>,
    /// TLS of an `https://` end without a client of the flags.
    pub tls: cluster::TlsConfig,
    /// Credentials and endpoints of an object-store end (`s3://`, `gs://`, `az://`).
    pub blob: ::snapshot::StoreOptions,
}

/// Documents and bytes per second of this process; `None`: unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Rates {
    pub docs_per_sec: Option<f64>,
    pub bytes_per_sec: Option<f64>,
}

/// What a command reads of a source that can say it.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    /// Snapshot sources: route documents as the metadata migration names the target's
    /// indices (`--index`, `--rename`, prefix, suffix, type routes) and read only the
    /// indices it includes (`run`, `documents`); see [`crate::OpenedSource::routed`].
    pub routing: Option<metadata::Options>,
    /// Snapshot sources: only the indices this `--index` list names (exact names, `*`/`?`
    /// wildcards, `regex:`; `rfs export --index`; none matching is an error); empty:
    /// every index.
    pub index_patterns: Vec<String>,
    /// Snapshot and live-cluster sources: also read the definitions of the indices read
    /// (settings, mappings, aliases; a snapshot's templates too) into
    /// [`crate::OpenedSource::metadata`] (`rfs copy --create-metadata`).
    pub metadata: bool,
    /// The source's groups the command copies (`--index`/`--exclude-index` applied), for
    /// a sink that makes something per group before any document: a `_bulk` sink creates
    /// only the data streams of a live source whose backing indices are among them.
    /// `None`: every group.
    pub chosen: Option<Vec<String>>,
    /// The target names the command gives the source's indices (`--rename`,
    /// `--index-prefix`, `--index-suffix`): a `_bulk` sink refuses to create a live
    /// source's data stream under another name. `None`: each keeps its own.
    pub naming: Option<metadata::Naming>,
}
