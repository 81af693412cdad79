//! What the target is (distribution and version, from `GET /`) and which API dialect it speaks.

use std::fmt;

use serde_json::Value;

pub use product::{Distribution, ProductVersion};

/// How documents are addressed: with a mapping type (ES ≤ 6) or without.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocAddressing {
    /// `_type` in bulk action lines and `/{index}/{type}/{id}` document paths (ES 5, 6).
    Typed,
    /// `/{index}/_doc/{id}` and no `_type` (ES 7+, every OpenSearch).
    Typeless,
}

/// The detected target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub version: ProductVersion,
    /// OpenSearch Serverless (`aoss`): no `GET /`, no explicit ids on some collection types.
    pub serverless: bool,
}

impl Target {
    pub fn new(version: ProductVersion) -> Target {
        Target {
            version,
            serverless: false,
        }
    }

    pub fn distribution(&self) -> Distribution {
        self.version.distribution
    }

    /// Read the body of `GET /`.
    pub fn from_root(root: &Value) -> Option<Target> {
        let v = root.get("version")?;
        let distribution = match v.get("distribution").and_then(Value::as_str) {
            Some(d) if d.eq_ignore_ascii_case("opensearch") => Distribution::OpenSearch,
            _ => Distribution::Elasticsearch,
        };
        let version = ProductVersion::parse(distribution, v.get("number")?.as_str()?)?;
        Some(Target::new(version))
    }

    pub fn dialect(&self) -> DocAddressing {
        if self.version.es_before(7) {
            DocAddressing::Typed
        } else {
            DocAddressing::Typeless
        }
    }

    /// `_component_template` and `_index_template` exist (ES ≥ 7.8, every OpenSearch).
    pub fn supports_composable_templates(&self) -> bool {
        self.version.supports_composable_templates()
    }

    /// Bulk metadata keys lost their leading underscore in ES 6 (`routing`, `version`).
    pub(crate) fn underscored_bulk_keys(&self) -> bool {
        self.version.es_before(6)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The whole number as the cluster gave it (`8.12.0`, not `8.12`).
        write!(f, "{} {}", self.version.distribution, self.version.number())?;
        if self.serverless {
            write!(f, " (serverless)")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_root_documents() {
        let os = json!({"name":"n","version":{"distribution":"opensearch","number":"2.11.1","lucene_version":"9.7.0"}});
        let t = Target::from_root(&os).unwrap();
        assert_eq!(
            t,
            Target::new(ProductVersion::new(Distribution::OpenSearch, 2, 11, 1))
        );
        assert_eq!(t.dialect(), DocAddressing::Typeless);
        assert!(t.supports_composable_templates());

        let es6 = json!({"version":{"number":"6.8.23","build_flavor":"default"},"tagline":"You Know, for Search"});
        let t = Target::from_root(&es6).unwrap();
        assert_eq!(t.distribution(), Distribution::Elasticsearch);
        assert_eq!(t.dialect(), DocAddressing::Typed);
        assert!(!t.supports_composable_templates());
        assert!(!t.underscored_bulk_keys());

        let es8 = json!({"version":{"number":"8.12.0-SNAPSHOT"}});
        let t = Target::from_root(&es8).unwrap();
        assert_eq!(t.version, ProductVersion::es(8, 12));
        assert_eq!(t.dialect(), DocAddressing::Typeless);
        assert_eq!(t.to_string(), "Elasticsearch 8.12.0");

        assert!(Target::from_root(&json!({"version":{"number":"x"}})).is_none());
        assert!(Target::from_root(&json!({})).is_none());
    }
}
