//! The parts of a command — its source, its sink, a lookup on a sink, what each says
//! about the migration's identity, and what a command asks of a source besides its
//! documents (its generations, the groups its URL matches) — opened through the connector registry in this one
//! place. A command fills a [`Parts`] with what its flags say (each end's parameters,
//! the shared context) and takes what it opens; no command calls `connectors::open_*`
//! itself.

use std::collections::BTreeMap;

use connectors::{
    ConnectError, Context, Generations, OpenedLookup, OpenedSink, OpenedSource, Params, SourceShape,
};

/// The shared context and each end's parameters of one command.
#[derive(Debug, Clone, Default)]
pub struct Parts {
    pub ctx: Context,
    /// The source's parameters.
    pub from: Params,
    /// The sink's parameters.
    pub to: Params,
}

impl Parts {
    pub fn new(ctx: Context) -> Parts {
        Parts {
            ctx,
            ..Parts::default()
        }
    }

    /// `self` with the source's parameters.
    pub fn from(self, from: Params) -> Parts {
        Parts { from, ..self }
    }

    /// `self` with the sink's parameters.
    pub fn to(self, to: Params) -> Parts {
        Parts { to, ..self }
    }

    /// The source `url` names (the connector chosen by scheme and content).
    pub async fn source(&self, url: &str) -> Result<OpenedSource, ConnectError> {
        connectors::open_source(url, &self.from, &self.ctx).await
    }

    /// `url` opened as a source of connector `name` (a flag that says what it names).
    pub async fn source_as(&self, name: &str, url: &str) -> Result<OpenedSource, ConnectError> {
        connectors::open_source_as(name, url, &self.from, &self.ctx).await
    }

    /// The identity connector `name` gives the source `url` without opening it.
    pub fn source_identity_as(
        &self,
        name: &str,
        url: &str,
    ) -> Result<BTreeMap<String, String>, ConnectError> {
        connectors::source_identity_as(name, url, &self.from, &self.ctx)
    }

    /// The generations connector `name` lists of the source `url`, again and again (`run
    /// --follow`: the repository's snapshots).
    pub fn generations_as(
        &self,
        name: &str,
        url: &str,
    ) -> Result<Box<dyn Generations>, ConnectError> {
        connectors::open_generations_as(name, url, &self.from, &self.ctx)
    }

    /// Every group the source `url` of connector `name` matches, by a request of the
    /// connector's own (`verify --from`); `None`: its groups are what it reads.
    pub async fn matched_groups(
        &self,
        name: &str,
        url: &str,
    ) -> Result<Option<Vec<(String, u64)>>, ConnectError> {
        connectors::matched_groups(name, url, &self.from, &self.ctx).await
    }

    /// The sink `url` names, for documents of `source`.
    pub async fn sink(&self, url: &str, source: &OpenedSource) -> Result<OpenedSink, ConnectError> {
        connectors::open_sink(url, &self.to, &self.ctx, source).await
    }

    /// A lookup on what the sink `url` holds, for documents of a source of `shape`.
    pub async fn lookup(
        &self,
        url: &str,
        shape: &SourceShape,
    ) -> Result<OpenedLookup, ConnectError> {
        connectors::open_lookup(url, &self.to, &self.ctx, shape).await
    }

    /// The sink's name in a migration's identity, as the sink records it.
    pub fn sink_identity(&self, url: &str) -> Result<String, ConnectError> {
        connectors::sink_identity(url, &self.to, &self.ctx)
    }
}
