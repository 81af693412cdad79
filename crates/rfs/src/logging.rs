//! Logging setup: human-readable text on stderr, or one JSON object per line.

use tracing_subscriber::EnvFilter;

pub fn init(format: &str, verbose: u8, quiet: bool) {
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
        .with_writer(std::io::stderr);
    let _ = if format == "json" {
        builder.json().with_current_span(false).try_init()
    } else {
        builder.with_target(false).try_init()
    };
}
