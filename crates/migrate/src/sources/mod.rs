//! Sources: where documents come from ([`crate::source::Source`] implementations).

pub mod cluster;
pub mod delta;
pub mod jsonl;
pub mod snapshot;
pub mod table;
