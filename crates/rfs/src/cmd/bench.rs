//! `rfs bench`: benchmarks that print figures, one per line.

use super::{bench_coordination, bench_fleet};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Lease throughput of a coordination store: N workers acquire and complete M items.
    Coordination(bench_coordination::Args),
    /// A simulated fleet (tasks, not processes) with heartbeat leases, kills and stalls
    /// against a real store: throughput, latencies, drain time, kill-to-retake, status.
    Fleet(bench_fleet::Args),
}

pub fn run(cmd: Command) -> anyhow::Result<u8> {
    match cmd {
        Command::Coordination(args) => bench_coordination::run(args),
        Command::Fleet(args) => bench_fleet::run(args),
    }
}
