//! The async runtime a command runs on.

use anyhow::Context;

/// A multi-threaded runtime for a command.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}
