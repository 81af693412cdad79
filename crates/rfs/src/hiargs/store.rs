//! `--store` turned into an open coordination store.

use std::sync::Arc;

use anyhow::Context;

use crate::args::{StoreArgs, TargetArgs};

impl StoreArgs {
    /// The store URL as it may be shown: its password and secret parameters masked.
    pub fn redacted(&self) -> String {
        redact::url(&self.store)
    }

    /// Opens the store (creating it if needed), waiting up to two minutes while it is
    /// unreachable (restarting); a refusal no retry cures (a wrong password, a missing
    /// directory) is an error at once.
    pub async fn open(&self) -> anyhow::Result<Arc<dyn coordination::Store>> {
        engine::worker::with_store_retries(|| coordination::open_store(&self.store))
            .await
            .with_context(|| format!("opening the coordination store {}", self.redacted()))
    }

    /// Opens the store for a worker that writes to `target`: an index on the target
    /// cluster itself (same scheme, host and port) is reached with the target's connection
    /// options (basic or API-key auth, SigV4, CA, client certificate), unless the store
    /// URL carries its own `user:password@`.
    pub async fn open_beside(
        &self,
        target: &TargetArgs,
    ) -> anyhow::Result<Arc<dyn coordination::Store>> {
        let Some(config) = self.on_target(target)? else {
            return self.open().await;
        };
        let (own, index) = coordination::ClusterStore::config_from_url(&self.store)?;
        let config = cluster::ClientConfig {
            urls: own.urls,
            ..config
        };
        let store = engine::worker::with_store_retries(|| {
            coordination::ClusterStore::open_with(config.clone(), &index)
        })
        .await
        .with_context(|| format!("opening the coordination store {}", self.redacted()))?;
        Ok(Arc::new(store))
    }

    /// The target's connection options when the store is an index on the target cluster
    /// and its URL names no user of its own.
    fn on_target(&self, target: &TargetArgs) -> anyhow::Result<Option<cluster::ClientConfig>> {
        let (Ok(store), Ok(t)) = (
            url::Url::parse(&self.store),
            url::Url::parse(&target.target),
        ) else {
            return Ok(None);
        };
        let same = matches!(store.scheme(), "http" | "https")
            && store.username().is_empty()
            && store.scheme() == t.scheme()
            && store.host_str() == t.host_str()
            && store.port_or_known_default() == t.port_or_known_default();
        Ok(if same { Some(target.config()?) } else { None })
    }

    /// Opens the store only if it exists (for commands that read it or set its control
    /// record): a mistyped path is an error, and nothing is created.
    pub async fn open_existing(&self) -> anyhow::Result<Arc<dyn coordination::Store>> {
        engine::worker::with_store_retries(|| coordination::open_existing_store(&self.store))
            .await
            .with_context(|| format!("opening the coordination store {}", self.redacted()))
    }

    /// Opens the existing store and a coordinator on it.
    pub async fn existing_coordinator(
        &self,
        config: coordination::Config,
    ) -> anyhow::Result<coordination::Coordinator> {
        Ok(coordination::Coordinator::new(
            self.open_existing().await?,
            config,
        ))
    }
}
