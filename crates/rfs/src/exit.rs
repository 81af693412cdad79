//! Process exit codes (documented in `rfs --help` and the README).

/// The command did all it was asked; for `run`, the migration is finished.
#[allow(dead_code)]
pub const OK: u8 = 0;
/// An error stopped the command.
pub const FATAL: u8 = 1;
/// The command line or config file is wrong.
pub const USAGE: u8 = 2;
/// This worker found no work left to do (every item is complete or failed).
#[allow(dead_code)]
pub const NO_WORK_LEFT: u8 = 3;
/// Work remains but every remaining item is leased by another worker.
#[allow(dead_code)]
pub const LEASED_ELSEWHERE: u8 = 4;
/// The fleet was told to stop (`rfs stop`).
#[allow(dead_code)]
pub const STOPPED: u8 = 5;
/// `rfs verify` found documents missing, extra or different.
#[allow(dead_code)]
pub const VERIFY_MISMATCH: u8 = 6;
/// The migration finished, but documents were refused by the target or skipped by the
/// source (each in a failure log, counted in `rfs status`).
pub const NOT_DELIVERED: u8 = 7;
