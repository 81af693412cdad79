//! Repository flags turned into an open repository or snapshot.

use std::sync::Arc;

use anyhow::Context;

use crate::args::{GcsArgs, RebuildArgs, RebuildSource, RepositoryArgs, SourceArgs};

impl GcsArgs {
    /// These settings in `opts`.
    pub fn apply(&self, opts: snapshot::StoreOptions) -> snapshot::StoreOptions {
        snapshot::StoreOptions {
            gcs_endpoint: self.gcs_endpoint.clone(),
            gcs_service_account: self.gcs_service_account.clone(),
            ..opts
        }
    }
}

impl RepositoryArgs {
    /// The repository location: the positional argument, else --repo / RFS_REPO.
    pub fn location(&self) -> anyhow::Result<&str> {
        self.repo_arg
            .as_deref()
            .or(self.repo.as_deref())
            .context("no snapshot repository given (--repo, RFS_REPO or a positional REPO)")
    }

    /// Opens the blob store and reads the repository data.
    pub fn open(&self) -> anyhow::Result<snapshot::Repository> {
        let location = self.location()?;
        let opts = self.gcs.apply(snapshot::StoreOptions {
            s3_region: self.s3_region.clone(),
            s3_endpoint: self.s3_endpoint.clone(),
            s3_access_key_id: self.s3_access_key_id.clone(),
            s3_secret_access_key: self.s3_secret_access_key.clone(),
            ..Default::default()
        });
        let shown = redact::url(location);
        // The store's error names the location.
        let store: Arc<dyn snapshot::BlobStore> =
            snapshot::open_blob_store(location, &opts).context("opening the repository")?;
        snapshot::Repository::open(store).with_context(|| format!("reading repository {shown}"))
    }
}

impl RebuildArgs {
    pub fn options(&self) -> snapshot::RebuildOptions {
        snapshot::RebuildOptions {
            mode: match self.rebuild_source {
                RebuildSource::Auto => snapshot::RebuildMode::Auto,
                RebuildSource::Off => snapshot::RebuildMode::Off,
            },
            allow_partial: self.allow_partial_source,
            prefer_recovery_source: self.prefer_recovery_source,
        }
    }
}

impl SourceArgs {
    pub fn open(&self) -> anyhow::Result<snapshot::Snapshot> {
        let repo = self.repository.open()?;
        repo.snapshot(&self.snapshot).with_context(|| {
            format!(
                "snapshot {} in {}",
                self.snapshot,
                redact::url(self.repository.location().unwrap_or("?"))
            )
        })
    }
}
