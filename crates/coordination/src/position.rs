//! Positions inside a partition of work, and the one cursor type built from them.
//!
//! A [`Position`] is where a document sits in its partition: a shard-global Lucene doc id
//! (or any other `u64` that only grows along the partition) or a table key in the source's
//! own text encoding. The protocol never orders keys itself: only the source that wrote
//! them compares them. A [`Cursor`] is always the *last acknowledged* position — `None`
//! before anything was acknowledged — in the store, in the pipeline and in the sources.

use serde::{Deserialize, Serialize};

/// Where a document sits in its partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Position {
    /// A document number that grows along the partition (a shard-global Lucene doc id).
    Doc(u64),
    /// A key in the source's text encoding (a table's key column).
    Key(String),
}

/// The last acknowledged position of a partition; `None`: nothing acknowledged yet.
///
/// Readers resume strictly *after* it; a successor work item starts after it.
pub type Cursor = Option<Position>;

impl Position {
    /// The doc number, for document-numbered partitions.
    pub fn doc(&self) -> Option<u64> {
        match self {
            Position::Doc(d) => Some(*d),
            Position::Key(_) => None,
        }
    }

    /// The key, for key-ordered partitions.
    pub fn key(&self) -> Option<&str> {
        match self {
            Position::Key(k) => Some(k),
            Position::Doc(_) => None,
        }
    }
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Position::Doc(d) => write!(f, "{d}"),
            Position::Key(k) => write!(f, "{k:?}"),
        }
    }
}

/// A cursor for messages: `start` before anything was acknowledged.
pub fn cursor_display(c: &Cursor) -> String {
    c.as_ref()
        .map_or_else(|| "start".to_string(), Position::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_serialise_as_plain_json() {
        assert_eq!(serde_json::to_string(&Position::Doc(7)).unwrap(), "7");
        assert_eq!(
            serde_json::to_string(&Position::Key("01HX".into())).unwrap(),
            "\"01HX\""
        );
        let c: Cursor = serde_json::from_str("null").unwrap();
        assert_eq!(c, None);
        let c: Cursor = serde_json::from_str("12").unwrap();
        assert_eq!(c, Some(Position::Doc(12)));
        let c: Cursor = serde_json::from_str("\"k\"").unwrap();
        assert_eq!(c, Some(Position::Key("k".into())));
        assert_eq!(cursor_display(&None), "start");
    }
}
