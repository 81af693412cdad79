//! The argument groups and helpers the subcommands share, under their old path while the
//! commands move to [`crate::args`], [`crate::hiargs`], [`crate::ui`].

pub use crate::args::*;
pub use crate::runtime::runtime;
pub use crate::ui::{serve_metrics, TerminalProgress};
