//! The table as the catalog describes it: columns in order, what each is read as, the key.

use crate::name::TableName;

/// How a column's values are read and rendered (see [`crate::value`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnKind {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    /// Written exactly from PostgreSQL's text form.
    Numeric,
    /// text, varchar, char(n), name.
    Text,
    Uuid,
    Bytea,
    /// timestamp without time zone, taken as UTC.
    Timestamp,
    TimestampTz,
    Date,
    Json,
    Jsonb,
    /// Any other type: its PostgreSQL text form, as a string (arrays, intervals, enums,
    /// inet, …). The name is the catalog's.
    Other(String),
}

impl ColumnKind {
    /// The kind of a built-in type by OID (domains resolved to their base type first).
    pub fn from_oid(oid: u32, type_name: &str) -> ColumnKind {
        match oid {
            16 => ColumnKind::Bool,
            17 => ColumnKind::Bytea,
            19 | 25 | 1042 | 1043 => ColumnKind::Text,
            20 => ColumnKind::Int8,
            21 => ColumnKind::Int2,
            23 => ColumnKind::Int4,
            114 => ColumnKind::Json,
            700 => ColumnKind::Float4,
            701 => ColumnKind::Float8,
            1082 => ColumnKind::Date,
            1114 => ColumnKind::Timestamp,
            1184 => ColumnKind::TimestampTz,
            1700 => ColumnKind::Numeric,
            2950 => ColumnKind::Uuid,
            3802 => ColumnKind::Jsonb,
            _ => ColumnKind::Other(type_name.to_string()),
        }
    }

    /// Whether the value is read in PostgreSQL's text form (`::text`) rather than binary.
    pub fn read_as_text(&self) -> bool {
        matches!(
            self,
            ColumnKind::Numeric | ColumnKind::Json | ColumnKind::Jsonb | ColumnKind::Other(_)
        )
    }

    /// What the value becomes in the row's JSON: for sinks that need more than JSON says
    /// (bytea is a base64 string; numeric is a JSON number written exactly).
    pub fn json_shape(&self) -> &'static str {
        match self {
            ColumnKind::Bool => "bool",
            ColumnKind::Int2
            | ColumnKind::Int4
            | ColumnKind::Int8
            | ColumnKind::Float4
            | ColumnKind::Float8
            | ColumnKind::Numeric => "number",
            ColumnKind::Bytea => "binary",
            ColumnKind::Timestamp | ColumnKind::TimestampTz | ColumnKind::Date => "time",
            ColumnKind::Json | ColumnKind::Jsonb => "json",
            ColumnKind::Text | ColumnKind::Uuid | ColumnKind::Other(_) => "string",
        }
    }
}

/// One column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub kind: ColumnKind,
    /// The type as SQL (`bigint`, `character varying(26)`, `timestamp with time zone`).
    pub sql_type: String,
}

/// A table's columns and key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    /// Schema-qualified, as found in the catalog.
    pub table: TableName,
    pub columns: Vec<Column>,
    /// Index of the key column in `columns`.
    pub key: usize,
    /// The planner's row estimate and the table's size on disk (for status and ETA).
    pub estimated_rows: u64,
    pub estimated_bytes: u64,
}

impl Schema {
    pub fn key_column(&self) -> &Column {
        &self.columns[self.key]
    }
}
