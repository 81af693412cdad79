//! `rfs bench`.

#[derive(Debug, clap::Subcommand)]
pub enum Command {}

pub fn run(_cmd: Command) -> anyhow::Result<u8> {
    anyhow::bail!("`rfs bench` is not built yet")
}
