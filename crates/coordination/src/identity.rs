//! The migration's identity: what a store is for (what is copied where, or a name the
//! operator chose), recorded by the first worker of a migration. A worker of another
//! migration is refused before it touches anything, so one store never mixes two
//! migrations. The identity is a map of short keys (`repository`, `snapshot`, `target`,
//! `migration`, …) so that new kinds of sources add keys without changing the record.

use std::collections::BTreeMap;

use crate::coordinator::{retry, Coordinator};
use crate::record::{Record, RecordKind, RecordState};
use crate::Error;

const IDENTITY_ID: &str = "migration";

/// What a migration copies where: short keys and values, never a secret.
pub type Identity = BTreeMap<String, String>;

/// `key=value` pairs separated by commas, in key order (for messages and `rfs status`).
pub fn identity_display(id: &Identity) -> String {
    if id.is_empty() {
        return "(no identity)".into();
    }
    id.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn parse(rec: &Record) -> Result<Identity, Error> {
    serde_json::from_value(rec.data.clone()).map_err(|e| Error::Corrupt {
        id: rec.id.clone(),
        reason: format!("migration identity: {e}"),
    })
}

impl Coordinator {
    /// Records `identity` as the store's if it has none yet (create-if-absent: of racing
    /// first workers one wins), and checks it against the recorded one otherwise:
    /// [`Error::OtherMigration`] names both when they differ.
    pub async fn claim_identity(&self, identity: &Identity) -> Result<(), Error> {
        let store = self.inner.store.as_ref();
        loop {
            if let Some(stored) = self.identity().await? {
                if stored == *identity {
                    return Ok(());
                }
                return Err(Error::OtherMigration {
                    stored: identity_display(&stored),
                    ours: identity_display(identity),
                });
            }
            let mut rec = Record::new(IDENTITY_ID, RecordKind::Migration, self.me());
            rec.state = RecordState::Done;
            rec.data = serde_json::to_value(identity).unwrap_or_default();
            rec.completed_at = Some(retry(|| store.now()).await?);
            if retry(|| store.create(&rec)).await?.is_some() {
                tracing::info!(
                    migration = %identity_display(identity),
                    "recorded the migration's identity in the store"
                );
                return Ok(());
            }
            // Someone else recorded one first (or our write landed before an error): compare.
        }
    }

    /// The identity recorded in the store, if any.
    pub async fn identity(&self) -> Result<Option<Identity>, Error> {
        match retry(|| self.inner.store.get(IDENTITY_ID)).await? {
            Some((rec, _)) => Ok(Some(parse(&rec)?)),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_is_shown_as_sorted_pairs() {
        let mut id = Identity::new();
        id.insert("snapshot".into(), "s1".into());
        id.insert("repository".into(), "/r".into());
        assert_eq!(identity_display(&id), "repository=/r, snapshot=s1");
        assert_eq!(identity_display(&Identity::new()), "(no identity)");
    }
}
