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
mod sampler;

use std::ffi::OsStr;
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
    let shared = Arc::new(sampler::DashboardState {
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

/// The dashboard token; never printed (its `Debug` is masked).
#[derive(Clone)]
pub struct Token(String);

impl Token {
    pub fn into_inner(self) -> String {
        self.0
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(***)")
    }
}

/// Checks a token without ever echoing it (clap's own errors quote the value).
#[derive(Debug, Clone, Copy)]
pub struct TokenParser;

impl clap::builder::TypedValueParser for TokenParser {
    type Value = Token;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<Token, clap::Error> {
        value
            .to_str()
            .filter(|s| (16..=256).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_graphic()))
            .map(|s| Token(s.to_string()))
            .ok_or_else(|| {
                clap::Error::raw(
                    clap::error::ErrorKind::InvalidValue,
                    "--serve-token must be 16 to 256 visible ASCII characters (the value given is not shown)\n",
                )
                .with_cmd(cmd)
            })
    }
}

/// `--serve-interval`: seconds from 0.2 to 3600.
pub fn parse_interval(s: &str) -> anyhow::Result<f64> {
    match s.parse::<f64>() {
        Ok(v) if (0.2..=3600.0).contains(&v) => Ok(v),
        _ => anyhow::bail!("{s:?}: expected seconds from 0.2 to 3600"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::builder::TypedValueParser;

    #[test]
    fn the_interval_is_range_checked() {
        assert_eq!(parse_interval("2").unwrap(), 2.0);
        assert_eq!(parse_interval("0.2").unwrap(), 0.2);
        for bad in ["0.1", "3601", "nan", "inf", "-1", "x"] {
            assert!(parse_interval(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_bad_token_is_refused_without_being_shown() {
        let cmd = clap::Command::new("rfs");
        let ok = TokenParser
            .parse_ref(&cmd, None, OsStr::new("0123456789abcdef"))
            .unwrap();
        assert_eq!(format!("{ok:?}"), "Token(***)");
        assert_eq!(ok.into_inner(), "0123456789abcdef");
        for bad in ["short-secret", "with a space 0123456789", &"x".repeat(257)] {
            let e = TokenParser
                .parse_ref(&cmd, None, OsStr::new(bad))
                .unwrap_err()
                .to_string();
            assert!(e.contains("--serve-token"), "{e}");
            assert!(!e.contains(bad), "{e}");
        }
    }
}
