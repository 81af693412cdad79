//! Metadata migration: templates (legacy, then component, then composable index
//! templates) and indices (settings, mappings, aliases) read from a snapshot and created
//! on the target, transformed for the target's version. Nothing that exists on the
//! target is modified; every item is reported with its action, reasons and changes.
//!
//! The work is split in a pure part — [`plan`] turns [`SourceMetadata`] into [`MetadataItem`]s
//! with request bodies — and a part that talks to the target: [`evaluate`] checks what
//! exists (GET/HEAD only), [`migrate`] also creates what is missing.
//!
//! [`names`] holds the target index names (renames, prefix, suffix) the plan and the
//! document transforms share; [`vectors`] the vector values a target needs rewritten;
//! [`wildcard`] the `*`/`?` name patterns every command and the plan match.
//!
//! ```no_run
//! # async fn f(client: &cluster::Client, source: &metadata::SourceMetadata) -> Result<(), metadata::MetadataError> {
//! use metadata::{migrate, Options};
//! let report = migrate(source, client, &Options::default()).await?;
//! println!("{}", report.to_table());
//! # Ok(()) }
//! ```

mod aliases;
mod apply;
mod build;
pub mod convert;
mod error;
mod filter;
mod mappings;
pub mod names;
pub mod plan;
mod routing;
mod settings;
mod source;
pub mod type_mapping;
pub mod vectors;
pub mod wildcard;

pub use aliases::AliasError;
pub use apply::{evaluate, migrate, target_version};
pub use build::{
    convert_definition, plan, split_index_name, DataStreamMode, DefinitionError, Options,
    ParseDataStreamModeError, TypeRouteError,
};
pub use convert::{
    Conversion, ConversionSeverity, ConvertOptions, KnnEngine, KnnEngineError, ParseKnnEngineError,
};
pub use error::MetadataError;
pub use filter::{is_system_index, is_system_template, Allowlist};
pub use mappings::{MappingsError, MergeError, MultiTypeMode, ParseMultiTypeModeError};
pub use names::{Naming, RenameError};
pub use plan::{Action, MetadataItem, MetadataKind, Notes, Outcome, Report, Summary};
pub use product::{Distribution, ProductVersion};
pub use routing::{DocumentRouting, TYPELESS};
pub use source::{DataStreamInfo, SourceIndex, SourceMetadata};
pub use type_mapping::{TypeMapping, TypeMappingError};
