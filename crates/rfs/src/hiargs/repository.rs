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
    /// How the repository is reached: the source end of the connectors' context.
    pub fn context(&self) -> connectors::Context {
        let mut ctx = connectors::Context::default();
        ctx.from.blob = self.blob_options();
        ctx
    }

    /// The object store's credentials and endpoints these flags give.
    pub fn blob_options(&self) -> snapshot::StoreOptions {
        self.gcs.apply(snapshot::StoreOptions {
            s3_region: self.s3_region.clone(),
            s3_endpoint: self.s3_endpoint.clone(),
            s3_access_key_id: self.s3_access_key_id.clone(),
            s3_secret_access_key: self.s3_secret_access_key.clone(),
            ..Default::default()
        })
    }

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
        let opts = self.blob_options();
        let shown = redact::url(location);
        // The store's error names the location.
        let store: Arc<dyn snapshot::BlobStore> =
            snapshot::open_blob_store(location, &opts).context("opening the repository")?;
        snapshot::Repository::open(store).with_context(|| format!("reading repository {shown}"))
    }
}

impl RebuildArgs {
    /// The snapshot-reading parameters these flags give, for whichever source takes them.
    pub fn params(&self, params: &mut connectors::Params) {
        use crate::args::params::{put, put_set};
        put(
            params,
            "--rebuild-source",
            match self.rebuild_source {
                RebuildSource::Auto => "auto",
                RebuildSource::Off => "off",
            },
        );
        put_set(params, "--allow-partial-source", self.allow_partial_source);
        put_set(
            params,
            "--prefer-recovery-source",
            self.prefer_recovery_source,
        );
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
