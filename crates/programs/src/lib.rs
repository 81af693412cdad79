//! Document programs: what turns a source document into the documents a target gets.
//! [`routes`]: the naming transforms (the snapshot's type routes and renames, a rename of
//! every index, every document into one index); [`program`]: jq programs; [`field_edits`]:
//! the fast path for programs that only set, rename or delete fields; [`javascript`] and
//! [`jmespath_program`] and [`transformer_config`]: the reference tool's JavaScript and
//! JMESPath transforms and their config; [`reshape`]: a program composed with the naming
//! transform (filter, explode, rename fields, route); [`spec`]: the one entry from a
//! command's options to a program, its identity and its transform.

pub mod field_edits;
pub mod javascript;
pub mod jmespath_program;
pub mod program;
pub mod reshape;
pub mod routes;
pub mod spec;
pub mod transformer_config;

pub use spec::{Program, ProgramError, ProgramSpec};
