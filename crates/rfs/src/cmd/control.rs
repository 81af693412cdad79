//! `rfs pause|resume|stop`: set the fleet's control record. Workers read it between
//! batches: PAUSE finishes in-flight batches, checkpoints, releases and waits; STOP does
//! the same and exits with code 5; RESUME lets paused workers continue. The store must
//! exist (a mistyped path is an error, not a new store nobody reads); the migration it
//! belongs to is said.

use crate::args::StoreArgs;
use crate::exit;
use crate::runtime::runtime;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub store: StoreArgs,
}

pub fn run(args: Args, value: coordination::Control) -> anyhow::Result<u8> {
    runtime()?.block_on(async move {
        let coord = args
            .store
            .existing_coordinator(coordination::Config::default())
            .await?;
        coord.set_control(value).await?;
        let migration = coord.identity().await?;
        crate::say!(
            "control set to {} for migration {}",
            value.as_str(),
            migration.as_ref().map_or(
                "(not recorded yet)".to_string(),
                coordination::identity_display
            )
        );
        Ok(exit::OK)
    })
}
