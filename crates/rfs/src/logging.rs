//! Logging setup and what the commands say on stderr: human-readable text, or one JSON
//! object per line (`--log-format json`, where [`say!`] messages become INFO events so
//! that every stderr line is JSON). Every line passes through [`redact::text`] first, so
//! a password inside a URL never reaches the terminal or a log pipeline, whichever crate
//! logged it.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// For people: one line per event.
    Text,
    /// For log pipelines: one JSON object per line, messages of the commands included.
    Json,
}

static JSON: AtomicBool = AtomicBool::new(false);

pub fn init(format: LogFormat, verbose: u8, quiet: bool) {
    let default = match (quiet, verbose) {
        (true, _) => "warn",
        (false, 0) => "info",
        (false, 1) => "debug",
        (false, _) => "trace",
    };
    let filter = EnvFilter::try_from_env("RFS_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    // Colours only on a terminal, and never when NO_COLOR is set (https://no-color.org).
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let builder = tracing_subscriber::fmt()
        .with_ansi(ansi)
        .with_env_filter(filter)
        .with_writer(RedactedStderr);
    JSON.store(format == LogFormat::Json, Ordering::Relaxed);
    let _ = match format {
        LogFormat::Json => builder.json().with_current_span(false).try_init(),
        LogFormat::Text => builder.with_target(false).try_init(),
    };
}

/// Whether logs are JSON lines.
pub fn json() -> bool {
    JSON.load(Ordering::Relaxed)
}

/// A message of a command for the operator (a summary, a report table): a plain line on
/// stderr, or an INFO event in JSON mode. Secrets in URLs are masked either way.
pub fn say(message: &str) {
    if json() {
        tracing::info!(target: "rfs", "{message}");
    } else {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{}", redact::text(message));
    }
}

/// `eprintln!` for command output that must respect `--log-format` (see [`say`]).
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::logging::say(&format!($($arg)*))
    };
}

/// The subscriber's writer: each event is collected whole, masked, then written to stderr
/// in one call.
struct RedactedStderr;

impl<'a> MakeWriter<'a> for RedactedStderr {
    type Writer = RedactedEvent;

    fn make_writer(&'a self) -> RedactedEvent {
        RedactedEvent(Vec::with_capacity(256))
    }
}

struct RedactedEvent(Vec<u8>);

impl Write for RedactedEvent {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for RedactedEvent {
    fn drop(&mut self) {
        if self.0.is_empty() {
            return;
        }
        let text = String::from_utf8_lossy(&self.0);
        let _ = std::io::stderr()
            .lock()
            .write_all(redact::text(&text).as_bytes());
    }
}
