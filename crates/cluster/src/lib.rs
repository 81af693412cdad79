//! An HTTP client for Elasticsearch and OpenSearch targets: version detection and
//! dialects, authentication, templates and indices, and bulk indexing with per-item
//! retries and a failure log.
