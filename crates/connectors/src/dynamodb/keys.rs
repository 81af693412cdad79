//! DynamoDB's key helpers: what identifies a row where the sink writes it.

use std::sync::Arc;

use engine::document::Document;

use crate::keys::KeyOf;

/// The [`KeyOf`] of a DynamoDB sink: the key attributes `attrs` of the item a document
/// becomes (converted as the sink converts it, with `hints`). `None` when the item has no
/// such key (an attribute missing, empty or of another type than the key's): the sink
/// refuses that document itself (`missing_key`, `key_type_mismatch`), it overwrites none.
pub fn dynamo_key_of(hints: dynamo::ColumnHints, attrs: Vec<String>) -> KeyOf {
    Arc::new(move |doc: &Document| {
        let item = dynamo::row_to_item(&doc.source, &hints).ok()?;
        let mut parts = Vec::with_capacity(attrs.len());
        for a in &attrs {
            let want = hints.get(a).map_or(dynamo::KeyType::S, |h| h.key_type());
            let text = match (item.get(a)?, want) {
                (dynamo::AttributeValue::S(v), dynamo::KeyType::S) => v.clone(),
                (dynamo::AttributeValue::N(v), dynamo::KeyType::N) => v.clone(),
                (dynamo::AttributeValue::B(v), dynamo::KeyType::B) => format!("{v:?}"),
                _ => return None,
            };
            if text.is_empty() {
                return None;
            }
            parts.push(format!("{a}={text}"));
        }
        Some(parts.join(", "))
    })
}
