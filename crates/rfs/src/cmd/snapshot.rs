//! `rfs snapshot`.

#[derive(Debug, clap::Subcommand)]
pub enum Command {}

pub fn run(_cmd: Command) -> anyhow::Result<u8> {
    anyhow::bail!("`rfs snapshot` is not built yet")
}
