//! The command line's argument groups, shared by the subcommands. They only describe and
//! validate flags: every flag has an `RFS_*` environment variable and a config-file key (its
//! long name), every numeric flag a range checked by the parser, and every flag that can
//! hold a secret (a password, a key, a URL with `user:password@`) hides its environment
//! value in `--help` and is masked by the structs' `Debug`. [`crate::hiargs`] turns them
//! into the libraries' values, each in one place.

mod connection;
pub mod params;
mod parsers;
mod repository;
mod selection;
mod transform;
mod worker;

pub use connection::*;
pub use parsers::*;
pub use repository::*;
pub use selection::*;
pub use transform::*;
pub use worker::*;
