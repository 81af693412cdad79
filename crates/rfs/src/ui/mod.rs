//! What a worker shows while it runs: a progress bar on a terminal, Prometheus metrics.

mod metrics;
mod progress;

pub use metrics::serve_metrics;
pub use progress::TerminalProgress;
