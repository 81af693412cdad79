//! Sources: where documents come from ([`engine::source::Source`] implementations).

pub mod cluster;
pub mod delta;
pub mod failure_log;
pub mod jsonl;
pub mod snapshot;
pub mod table;
