//! Elasticsearch/OpenSearch snapshot repositories, read in place (local disk or object
//! stores): repository data, snapshot and index metadata, shards as Lucene directories,
//! and Elasticsearch documents (`_id`, `_source`, `_routing`, `_type`) decoded from them.
