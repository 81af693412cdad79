//! What identifies a document where a sink writes it, shared by sources and sinks: the
//! sink's key of a document ([`KeyOf`], DynamoDB's), the guard that keeps a program from
//! changing it ([`KeyGuard`]), and what a source can say about its keys before a row is
//! read ([`KeyCheck`], a table's), for a sink's preflight.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use engine::document::{Document, Skip};
use engine::transform::{Shaped, Transform, Unroutable};

use crate::ConnectError;

/// Whether the rows are unique over some columns (`None`: a column is missing).
pub type UniqueFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Option<bool>, ConnectError>> + Send + 'a>>;

/// What a source of rows says about its keys ([`crate::OpenedSource::key_check`]): the
/// columns as they are written, and whether rows are unique over some of them. A sink
/// that writes rows under a key of its own (DynamoDB) checks with it, before a row is
/// read, that no two rows share a key.
pub trait KeyCheck: Send + Sync {
    /// The source's name in messages (the table).
    fn group(&self) -> String;
    /// The name the key column is written as (the default key of a row).
    fn key_attribute(&self) -> String;
    /// The column written as attribute `attr` (`None`: none is).
    fn column_written_as(&self, attr: &str) -> Option<String>;
    /// The names the columns are written as, in order.
    fn written_columns(&self) -> Vec<String>;
    /// Whether the rows are unique over `columns` (a unique index or the primary key covers
    /// them); `None`: the source has no such column.
    fn unique_over<'a>(&'a self, columns: &'a [String]) -> UniqueFuture<'a>;
}

/// What identifies a row where it is written, besides its `_id`: the values of the DynamoDB
/// key attributes as the sink would write them (`None`: the row has none that can be read).
pub type KeyOf = Arc<dyn Fn(&Document) -> Option<String> + Send + Sync>;

/// A program in front of the table's rows must not change what a row is written under:
/// its `_id` (a cluster's or the files' id) and the sink's key (`key_of`, DynamoDB). Rows
/// are unique by the key the run checked (the key column; the key mapping, proved unique
/// in the catalog), but a program's output is not: two rows given one key would overwrite
/// each other, in different batches where no sink can see it. So a row whose outputs
/// change that key, or that yields two documents under one key, is skipped with reason
/// `key_changed` (failure log, exit 7), never delivered. `--allow-key-collisions` lets a
/// program compute keys; then overwrites across batches are not seen (README).
pub struct KeyGuard {
    inner: Arc<dyn Transform>,
    key_of: Option<KeyOf>,
}

impl KeyGuard {
    pub fn new(inner: Arc<dyn Transform>, key_of: Option<KeyOf>) -> KeyGuard {
        KeyGuard { inner, key_of }
    }

    /// Why the outputs of a row of id `id` and key `key` overwrite other rows' (`None`: they
    /// do not).
    fn changed(&self, id: &str, key: &Option<String>, outputs: &[Document]) -> Option<String> {
        let mut seen = std::collections::BTreeSet::new();
        for d in outputs {
            if d.id != id {
                return Some(format!(
                    "the program changed the id {id:?} to {:?}: rows of one id would overwrite each other (--allow-key-collisions writes anyway)",
                    d.id
                ));
            }
            let out_key = match &self.key_of {
                Some(k) => {
                    let out_key = k(d);
                    // No key the sink can write under: it refuses the document itself.
                    if out_key.is_none() {
                        continue;
                    }
                    if out_key != *key {
                        return Some(format!(
                            "the program changed the row's key {} to {}: rows of one key would overwrite each other (--allow-key-collisions writes anyway)",
                            key.as_deref().unwrap_or("(none)"),
                            out_key.as_deref().unwrap_or("(none)")
                        ));
                    }
                    String::new()
                }
                None => d.index.to_string(),
            };
            if !seen.insert(out_key) {
                return Some(format!(
                    "the program yields two documents under the key of row {id:?}: one would overwrite the other"
                ));
            }
        }
        None
    }
}

impl Transform for KeyGuard {
    fn apply(&self, doc: &mut Document) -> Result<(), Unroutable> {
        self.inner.apply(doc)
    }

    fn reshapes(&self) -> bool {
        // Always the checked path: `apply` has no way to refuse a document.
        true
    }

    fn program_identity(&self) -> Option<String> {
        self.inner.program_identity()
    }

    fn apply_all(&self, doc: Document, out: &mut Vec<Document>) -> Result<Shaped, Box<Skip>> {
        let id = doc.id.clone();
        let key = self.key_of.as_ref().and_then(|k| k(&doc));
        let kept = Skip::of(doc.clone(), "key_changed", String::new());
        let start = out.len();
        let shaped = self.inner.apply_all(doc, out)?;
        if let Some(why) = self.changed(&id, &key, &out[start..]) {
            out.truncate(start);
            return Err(Box::new(Skip {
                detail: why,
                ..kept
            }));
        }
        Ok(shaped)
    }
}
