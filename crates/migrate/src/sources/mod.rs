//! Sources: where documents come from ([`crate::source::Source`] implementations).

pub mod snapshot;
pub mod table;
