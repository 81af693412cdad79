//! The repository's snapshots as `rfs run --follow` orders them
//! ([`engine::generations::outlook`]): each with its state and when it was started.
//!
//! The start time comes from the repository data (`start_time_millis`, Elasticsearch
//! 7.14+), else from the snapshot's own `snap-<uuid>.dat` (read once per snapshot and
//! remembered: a completed snapshot never changes).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use engine::generations::Listed;

use super::{blocking, without_snapshot, ConnectError, Context};
use crate::{Generations, OpenFuture};

/// Lists one repository again and again.
#[derive(Clone)]
pub(super) struct SnapshotLister {
    location: String,
    blob: ::snapshot::StoreOptions,
    /// uuid → start time read from the snapshot's info.
    starts: Arc<Mutex<HashMap<String, Option<i64>>>>,
}

impl SnapshotLister {
    /// The repository at `location` (its `#snapshot=` fragment ignored), opened with the
    /// source end's store options of `ctx`.
    pub fn new(location: &str, ctx: &Context) -> SnapshotLister {
        SnapshotLister {
            location: without_snapshot(location).0.to_string(),
            blob: ctx.from.blob.clone(),
            starts: Arc::default(),
        }
    }

    /// The snapshots the repository lists now (its newest repository data).
    pub async fn list(&self) -> Result<Vec<Listed>, ConnectError> {
        let me = self.clone();
        blocking(&redact::url(&self.location), move || me.list_blocking()).await
    }

    fn list_blocking(&self) -> Result<Vec<Listed>, ConnectError> {
        let shown = redact::url(&self.location);
        let store = ::snapshot::open_blob_store(&self.location, &self.blob)
            .map_err(|e| ConnectError::context("opening the repository", e))?;
        let repo = ::snapshot::Repository::open(store)
            .map_err(|e| ConnectError::context(format!("reading repository {shown}"), e))?;
        let mut out = Vec::with_capacity(repo.snapshots().len());
        for entry in repo.snapshots() {
            let start_ms = match entry.start_time_millis {
                Some(t) => Some(t),
                None => self.start_from_info(&repo, &entry.name, &entry.uuid)?,
            };
            out.push(Listed {
                name: entry.name.clone(),
                uuid: entry.uuid.clone(),
                state: entry.state.map(|s| s.as_str().to_string()),
                start_ms,
            });
        }
        Ok(out)
    }

    /// The start time in the snapshot's own info, remembered by uuid.
    fn start_from_info(
        &self,
        repo: &::snapshot::Repository,
        name: &str,
        uuid: &str,
    ) -> Result<Option<i64>, ConnectError> {
        let lock = || self.starts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = lock().get(uuid) {
            return Ok(*t);
        }
        let snap = repo.snapshot(name).map_err(|e| {
            let shown = redact::url(&self.location);
            ConnectError::context(format!("snapshot {name} in {shown}"), e)
        })?;
        let t = snap.info().start_time;
        lock().insert(uuid.to_string(), t);
        Ok(t)
    }
}

impl Generations for SnapshotLister {
    fn list(&self) -> OpenFuture<'_, Vec<Listed>> {
        Box::pin(SnapshotLister::list(self))
    }
}

#[cfg(test)]
mod tests {
    use snapshot::append::append_snapshot;
    use snapshot::write::{write_repository, SnapshotSpec, WriteOptions};

    use super::*;

    /// The writer takes `a` at T and appends `b` an hour later: both listed, SUCCESS,
    /// with the start times of their infos (7.10: none in the repository data).
    #[tokio::test]
    async fn lists_each_snapshot_with_its_state_and_start() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        write_repository(&repo, &[SnapshotSpec::new("a")], &WriteOptions::default()).unwrap();
        let lister = SnapshotLister::new(&repo.display().to_string(), &Context::default());
        let first = lister.list().await.unwrap();
        assert_eq!(first.len(), 1);
        append_snapshot(&repo, &SnapshotSpec::new("b"), &WriteOptions::default()).unwrap();
        let listed = lister.list().await.unwrap();
        let names: Vec<&str> = listed.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(listed[0], first[0], "a is listed the same again");
        for l in &listed {
            assert_eq!(l.state.as_deref(), Some("SUCCESS"), "{l:?}");
        }
        let (a, b) = (listed[0].start_ms.unwrap(), listed[1].start_ms.unwrap());
        assert!(b > a, "b was taken after a: {a} {b}");
        assert_ne!(listed[0].uuid, listed[1].uuid);
    }
}
