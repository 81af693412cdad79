//! Sources: where documents come from ([`crate::source::Source`] implementations).

pub mod delta;
pub mod snapshot;
pub mod table;
