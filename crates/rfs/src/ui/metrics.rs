//! The Prometheus endpoint of a worker.

use std::sync::Arc;

/// Serves Prometheus metrics on `addr` in the background.
pub fn serve_metrics(addr: std::net::SocketAddr, metrics: &Arc<engine::Metrics>) {
    let m = metrics.clone();
    tokio::spawn(async move {
        if let Err(e) = engine::metrics::serve(addr, m).await {
            tracing::error!("metrics server on {addr}: {e}");
        }
    });
}
