//! Sinks: where documents go ([`crate::sink::Sink`] implementations).

pub mod bulk;
pub mod files;
