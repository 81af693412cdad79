//! Selection flags turned into the metadata migration's options and the naming of target
//! indices.

use metadata::{Allowlist, MultiTypeMode};

use crate::args::{DataStreamsArg, FilterArgs, KnnEngineArg, MultiType, TargetSource};

impl From<KnnEngineArg> for metadata::KnnEngine {
    fn from(e: KnnEngineArg) -> Self {
        match e {
            KnnEngineArg::Lucene => metadata::KnnEngine::Lucene,
            KnnEngineArg::Faiss => metadata::KnnEngine::Faiss,
            KnnEngineArg::Nmslib => metadata::KnnEngine::Nmslib,
        }
    }
}

impl From<MultiType> for MultiTypeMode {
    fn from(m: MultiType) -> MultiTypeMode {
        match m {
            MultiType::Merge => MultiTypeMode::Merge,
            MultiType::Split => MultiTypeMode::Split,
        }
    }
}

impl FilterArgs {
    pub fn options(&self) -> anyhow::Result<metadata::Options> {
        Ok(metadata::Options {
            indices: Allowlist::parse(&self.index)?,
            legacy_templates: Allowlist::parse(&self.legacy_template)?,
            component_templates: Allowlist::parse(&self.component_template)?,
            index_templates: Allowlist::parse(&self.index_template)?,
            replicas: self.replicas,
            multi_type_mode: self.multi_type.into(),
            naming: self.naming()?,
            type_routes: metadata::Options::parse_type_routes(&self.type_route)?,
            // Expanded for the snapshot's (index, type) pairs where it is read.
            type_mapping: self.transform.type_mapping()?.map(std::sync::Arc::new),
            mapped_types: Default::default(),
            convert: metadata::ConvertOptions {
                knn_engine: self.knn_engine.map(Into::into),
                enable_source: self.target_source == TargetSource::Enable,
            },
            data_streams: match self.data_streams {
                DataStreamsArg::DataStreams => metadata::DataStreamMode::DataStreams,
                DataStreamsArg::Indices => metadata::DataStreamMode::Indices,
            },
            // Set from the target client (a Serverless target) by `metadata::evaluate`.
            serverless: false,
        })
    }

    /// Target index names from --rename, --index-prefix and --index-suffix.
    pub fn naming(&self) -> anyhow::Result<metadata::Naming> {
        Ok(metadata::Naming {
            renames: metadata::Naming::parse_renames(&self.rename)?,
            prefix: self.index_prefix.clone(),
            suffix: self.index_suffix.clone(),
        })
    }
}
