//! One module per subcommand (or group of subcommands).

pub mod bench;
pub mod bench_coordination;
pub mod bench_fleet;
pub mod control;
pub mod copy;
pub mod documents;
pub mod engine;
pub mod export;
pub mod inspect;
pub mod inspect_vectors;
pub mod lucene;
pub mod metadata;
pub mod redrive;
pub mod run;
pub mod run_follow;
pub mod selection;
pub mod snapshot;
pub mod status;
pub mod status_snapshot_follow;
pub mod table;
pub mod transform;
pub mod verify;
