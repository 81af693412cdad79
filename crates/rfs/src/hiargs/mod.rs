//! The argument groups of [`crate::args`] turned into what the libraries take: a cluster
//! client's configuration, an open repository, snapshot or store, the job's options, the
//! metadata migration's options; and [`Parts`], the one place a command's source, sink and
//! lookups are opened. Each conversion lives here once; the commands call these and
//! orchestrate.

mod connection;
mod job;
mod parts;
mod repository;
mod selection;
mod store;
mod transform;

pub(crate) use job::process_tag;
pub use parts::Parts;
