//! `rfs status --serve ADDR`: a live web page for a running migration, served by the
//! binary itself. One sampler reads the coordination store every few seconds (status,
//! work items, failure logs) and keeps an hour of rate samples; the HTTP server hands
//! that out as JSON to an embedded page, which draws the phases, per-index progress
//! bars, a rate chart, the ETA, the items and their holders, the failures, and offers
//! pause / resume / stop.
//!
//! Endpoints: `GET /` (the page), `GET /api/status` (exactly the JSON of
//! `rfs status --json`, 503 with the error while the store is unreachable),
//! `GET /api/dashboard` (all the page shows), `POST /api/control`
//! (`{"control": "PAUSE" | "RUN" | "STOP"}`; see [`http`] for who may).

mod assets;
mod http;
mod items;
mod rates;
mod redact;
mod sampler;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use anyhow::Context;

pub use sampler::Opener;

/// What `rfs status --serve` was given.
pub struct Options {
    pub addr: SocketAddr,
    /// Needed for control (and for reads from other hosts) when set.
    pub token: Option<String>,
    /// Time between reads of the store.
    pub interval: Duration,
    /// The store URL as given (for its secrets and a safe display form; never shown).
    pub store_url: String,
    pub failure_logs: Vec<PathBuf>,
}

/// Serves the page until the process ends. Prints the page's URL on stdout once listening.
pub async fn serve(opts: Options, open: Opener) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(opts.addr)
        .await
        .with_context(|| format!("listening on {}", opts.addr))?;
    let local = listener.local_addr()?;
    if !local.ip().is_loopback() && opts.token.is_none() {
        tracing::warn!(
            "the dashboard on {local} shows the migration's state to anyone who can reach it; \
             pause/resume/stop only from this host (give --serve-token to allow them elsewhere)"
        );
    }
    let shared = Arc::new(sampler::Shared {
        reading: RwLock::new(sampler::Reading::default()),
        coord: RwLock::new(None),
        wake: tokio::sync::Notify::new(),
        secrets: redact::Secrets::from_url(&opts.store_url),
        interval: opts.interval,
    });
    tokio::spawn(sampler::run(shared.clone(), open, opts.failure_logs));
    let server = Arc::new(http::Server {
        shared,
        token: opts.token,
        store: redact::display_url(&opts.store_url),
    });
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(out, "dashboard on http://{local}/")?;
        out.flush()?;
    }
    tracing::info!("dashboard on http://{local}/");
    http::serve(listener, server).await
}
