//! Which indices and templates a command migrates, how they are renamed and how
//! multi-type indices are mapped.

/// Which indices and templates, and how multi-type indices are mapped.
#[derive(Debug, Clone, clap::Args)]
pub struct FilterArgs {
    /// Indices to migrate: exact names, `*`/`?` wildcards or `regex:PATTERN`; repeatable
    /// or comma-separated. Default: every index except system and dot indices.
    #[arg(
        long = "index",
        env = "RFS_INDEX",
        value_delimiter = ',',
        value_name = "NAME"
    )]
    pub index: Vec<String>,
    /// Legacy templates to migrate (names or `regex:`); default: all non-system ones.
    #[arg(
        long = "legacy-template",
        env = "RFS_LEGACY_TEMPLATE",
        value_delimiter = ',',
        value_name = "NAME"
    )]
    pub legacy_template: Vec<String>,
    /// Component templates to migrate.
    #[arg(
        long = "component-template",
        env = "RFS_COMPONENT_TEMPLATE",
        value_delimiter = ',',
        value_name = "NAME"
    )]
    pub component_template: Vec<String>,
    /// Composable index templates to migrate.
    #[arg(
        long = "index-template",
        env = "RFS_INDEX_TEMPLATE",
        value_delimiter = ',',
        value_name = "NAME"
    )]
    pub index_template: Vec<String>,
    /// Replace every index's number_of_replicas (0–100).
    #[arg(long, env = "RFS_REPLICAS", value_name = "N", value_parser = clap::value_parser!(u32).range(0..=100))]
    pub replicas: Option<u32>,
    /// ES ≤ 6 indices with several mapping types: `merge` into one index or `split` into
    /// `<index>_<type>` indices.
    #[arg(long, env = "RFS_MULTI_TYPE", value_enum, default_value_t = MultiType::Merge)]
    pub multi_type: MultiType,
    /// Create index OLD as NEW on the target (and send its documents there); repeatable or
    /// comma-separated `OLD=NEW`. Applied before --index-prefix/--index-suffix.
    #[arg(
        long = "rename",
        env = "RFS_RENAME",
        value_delimiter = ',',
        value_name = "OLD=NEW"
    )]
    pub rename: Vec<String>,
    /// Where the documents of one mapping type of an ES ≤ 6 index go: `INDEX/TYPE=TARGET`,
    /// or `INDEX/TYPE=` to leave that type out (its documents are counted as skipped);
    /// repeatable or comma-separated. Other types follow --multi-type.
    #[arg(
        long = "type-route",
        env = "RFS_TYPE_ROUTE",
        value_delimiter = ',',
        value_name = "INDEX/TYPE=TARGET"
    )]
    pub type_route: Vec<String>,
    /// Put this before every target index name (templates and aliases keep theirs).
    #[arg(
        long,
        env = "RFS_INDEX_PREFIX",
        default_value = "",
        value_name = "TEXT"
    )]
    pub index_prefix: String,
    /// Put this after every target index name.
    #[arg(
        long,
        env = "RFS_INDEX_SUFFIX",
        default_value = "",
        value_name = "TEXT"
    )]
    pub index_suffix: String,
    /// The k-NN engine of vector fields converted for OpenSearch (`dense_vector` →
    /// `knn_vector`, or an engine the target refuses). Default: by target version — lucene
    /// on OpenSearch 2.2+ (faiss for inner product before 2.13), nmslib before 2.2, never
    /// nmslib on 3.x. A field the chosen engine cannot hold on the target is BLOCKED.
    #[arg(long, env = "RFS_KNN_ENGINE", value_enum, value_name = "ENGINE")]
    pub knn_engine: Option<KnnEngineArg>,
    /// Indices whose snapshot mapping has `_source: {enabled: false}`: `keep` creates them
    /// so on the target (faithful: the target returns no documents, `verify` compares
    /// counts, ids and the doc values of keyword, number and boolean fields); `enable` stores `_source` on the target, so the documents rebuilt
    /// from doc values and stored fields can be read back and verified whole — more disk:
    /// about their JSON size, compressed by the target's codec.
    #[arg(long, env = "RFS_TARGET_SOURCE", value_enum, default_value_t = TargetSource::Keep, value_name = "MODE")]
    pub target_source: TargetSource,
    /// What becomes of the snapshot's data streams: `data-streams` creates each on the
    /// target from its index template (which must be migrated too) and writes the
    /// documents of its backing indices to it with `create`; `indices` creates every
    /// backing index as a plain index, with the stream's name as an alias over them.
    #[arg(long, env = "RFS_DATA_STREAMS", value_enum, default_value_t = DataStreamsArg::DataStreams, value_name = "MODE")]
    pub data_streams: DataStreamsArg,
    #[command(flatten)]
    pub transform: super::TransformArgs,
}

/// `--data-streams`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DataStreamsArg {
    /// Data streams on the target (Elasticsearch 7.9+, OpenSearch).
    DataStreams,
    /// Backing indices as plain indices, the stream's name as an alias.
    Indices,
}

/// `--knn-engine`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KnnEngineArg {
    /// Lucene's HNSW (OpenSearch 2.2+): filtering during search, smaller deployments.
    Lucene,
    /// Faiss (HNSW, quantization, binary vectors): large deployments.
    Faiss,
    /// NMSLIB (deprecated; refused for new indices by OpenSearch 3).
    Nmslib,
}

/// `--target-source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TargetSource {
    /// The target index keeps the snapshot's mapping: `_source` stays disabled.
    Keep,
    /// `_source` is stored on the target: the rebuilt documents are retrievable.
    Enable,
}

/// `--multi-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MultiType {
    /// Every mapping type into one index.
    Merge,
    /// One `<index>_<type>` index per mapping type.
    Split,
}
