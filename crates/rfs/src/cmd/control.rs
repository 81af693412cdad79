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

pub fn run(args: Args, action: &str) -> anyhow::Result<u8> {
    let value = match action {
        "pause" => coordination::Control::Pause,
        "resume" => coordination::Control::Run,
        "stop" => coordination::Control::Stop,
        other => anyhow::bail!("unknown control action {other}"),
    };
    runtime()?.block_on(async move {
        let coord = args
            .store
            .coordinator(coordination::Config::default())
            .await?;
        coord.set_control(value).await?;
        eprintln!("control set to {}", value.as_str());
        Ok(exit::OK)
    })
}
