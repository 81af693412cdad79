//! The migration itself: phases guarded by the coordination store, metadata migration,
//! and the document pipeline from snapshot shard to bulk requests with checkpoints.

pub mod metadata;
