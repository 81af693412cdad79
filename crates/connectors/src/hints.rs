//! The column shapes of a row source as the hints of the item mapping ([`dynamo::ColumnHints`]
//! in [`crate::OpenedSource::hints`]): shared by the table source, which says its shapes,
//! and the DynamoDB sink, which converts rows with them.

use dynamo::ColumnHints;
use engine::columns::{ColumnShape, ColumnShapes};

/// A column's shape as the item mapping's hint.
fn hint_of(shape: ColumnShape) -> dynamo::ColumnHint {
    match shape {
        ColumnShape::String => dynamo::ColumnHint::String,
        ColumnShape::Number => dynamo::ColumnHint::Number,
        ColumnShape::Bool => dynamo::ColumnHint::Bool,
        ColumnShape::Binary => dynamo::ColumnHint::Binary,
        ColumnShape::Time => dynamo::ColumnHint::Time,
        ColumnShape::Json => dynamo::ColumnHint::Json,
    }
}

/// A row source's column shapes as the item mapping's hints.
pub fn hints_of(columns: &ColumnShapes) -> ColumnHints {
    columns
        .iter()
        .map(|(name, shape)| (name.clone(), hint_of(*shape)))
        .collect()
}

/// The columns whose hint is a time (compared as instants by verify).
pub fn time_columns(hints: &ColumnHints) -> Vec<String> {
    hints
        .iter()
        .filter(|(_, h)| matches!(h, dynamo::ColumnHint::Time))
        .map(|(name, _)| name.clone())
        .collect()
}
