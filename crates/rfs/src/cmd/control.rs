//! `rfs pause|resume|stop`: set the fleet's control record.

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args, action: &str) -> anyhow::Result<u8> {
    anyhow::bail!("`rfs {action}` is not built yet")
}
