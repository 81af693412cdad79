//! The engine's crates under the paths the binary and the tests used before the split:
//! [`engine`] (the job, the pipeline and the ports), [`metadata`] (templates and indices),
//! [`programs`] (document programs and naming transforms), [`verify`] (the verifier) and
//! [`connectors`] (every source, sink and lookup, by URL). New code names those crates;
//! this one goes once nothing names it.

pub use engine::*;

pub use connectors::{self, naming, sinks, sources};
pub use metadata::{self, vectors, wildcard, Naming, RenameError};
pub use programs::{
    field_edits, javascript, jmespath_program, program, reshape, transformer_config,
};

/// The lookup port and every sink's lookup.
pub mod lookup {
    pub use connectors::lookup::*;
}

/// The transform port and the naming transforms.
pub mod transform {
    pub use engine::transform::*;
    pub use metadata::names::*;
    pub use programs::routes::*;
}

/// The verifier, and its own listing of a live cluster's indices.
pub mod verify {
    pub use ::verify::*;

    /// The cluster connector's listing of a live cluster's indices, and what of it the
    /// migration did not read.
    pub mod listing {
        pub use ::verify::{left_out, LeftOut};
        pub use connectors::listing::*;
    }
}
