//! `rfs pause|resume|stop`: set the fleet's control record. Workers read it between
//! batches: PAUSE finishes in-flight batches, checkpoints, releases and waits; STOP does
//! the same and exits with code 5; RESUME lets paused workers continue.

use super::common::{runtime, StoreArgs};
use crate::exit;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub store: StoreArgs,
}

pub fn run(args: Args, value: coordination::Control) -> anyhow::Result<u8> {
    runtime()?.block_on(async move {
        let coord = args
            .store
            .coordinator(coordination::Config::default())
            .await?;
        coord.set_control(value).await?;
        crate::say!("control set to {}", value.as_str());
        Ok(exit::OK)
    })
}
