//! `rfs bench`: benchmarks that print figures, one per line.

use super::bench_coordination;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Lease throughput of a coordination store: N workers acquire and complete M items.
    Coordination(bench_coordination::Args),
}

pub fn run(cmd: Command) -> anyhow::Result<u8> {
    match cmd {
        Command::Coordination(args) => bench_coordination::run(args),
    }
}
