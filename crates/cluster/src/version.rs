//! What the target is (distribution and version, from `GET /`) and which API dialect it speaks.

use std::fmt;

use serde_json::Value;

/// Which product answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Distribution {
    Elasticsearch,
    OpenSearch,
}

/// `major.minor.patch`; pre-release suffixes (`-SNAPSHOT`, `-rc1`) are dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl Version {
    pub const fn new(major: u32, minor: u32, patch: u32) -> Version {
        Version {
            major,
            minor,
            patch,
        }
    }

    /// Parse `7.10.2`, `8.11.0-SNAPSHOT`, `2.11`.
    pub fn parse(s: &str) -> Option<Version> {
        let core = s.split(['-', '+']).next()?;
        let mut parts = core.split('.');
        let major = parts.next()?.trim().parse().ok()?;
        let minor = parts.next().map_or(Some(0), |p| p.parse().ok())?;
        let patch = parts.next().map_or(Some(0), |p| p.parse().ok())?;
        Some(Version::new(major, minor, patch))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// How documents are addressed: with a mapping type (ES ≤ 6) or without.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// `_type` in bulk action lines and `/{index}/{type}/{id}` document paths (ES 5, 6).
    Typed,
    /// `/{index}/_doc/{id}` and no `_type` (ES 7+, every OpenSearch).
    Typeless,
}

/// The detected target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub distribution: Distribution,
    pub version: Version,
    /// OpenSearch Serverless (`aoss`): no `GET /`, no explicit ids on some collection types.
    pub serverless: bool,
}

impl Target {
    pub fn new(distribution: Distribution, version: Version) -> Target {
        Target {
            distribution,
            version,
            serverless: false,
        }
    }

    /// Read the body of `GET /`.
    pub fn from_root(root: &Value) -> Option<Target> {
        let v = root.get("version")?;
        let version = Version::parse(v.get("number")?.as_str()?)?;
        let distribution = match v.get("distribution").and_then(Value::as_str) {
            Some(d) if d.eq_ignore_ascii_case("opensearch") => Distribution::OpenSearch,
            _ => Distribution::Elasticsearch,
        };
        Some(Target::new(distribution, version))
    }

    pub fn dialect(&self) -> Dialect {
        match self.distribution {
            Distribution::Elasticsearch if self.version.major < 7 => Dialect::Typed,
            _ => Dialect::Typeless,
        }
    }

    /// `_component_template` and `_index_template` exist (ES ≥ 7.8, every OpenSearch).
    pub fn supports_composable_templates(&self) -> bool {
        match self.distribution {
            Distribution::OpenSearch => true,
            Distribution::Elasticsearch => self.version >= Version::new(7, 8, 0),
        }
    }

    /// Bulk metadata keys lost their leading underscore in ES 6 (`routing`, `version`).
    pub(crate) fn underscored_bulk_keys(&self) -> bool {
        self.distribution == Distribution::Elasticsearch && self.version.major < 6
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.distribution {
            Distribution::Elasticsearch => "Elasticsearch",
            Distribution::OpenSearch => "OpenSearch",
        };
        write!(f, "{name} {}", self.version)?;
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
            Target::new(Distribution::OpenSearch, Version::new(2, 11, 1))
        );
        assert_eq!(t.dialect(), Dialect::Typeless);
        assert!(t.supports_composable_templates());

        let es6 = json!({"version":{"number":"6.8.23","build_flavor":"default"},"tagline":"You Know, for Search"});
        let t = Target::from_root(&es6).unwrap();
        assert_eq!(t.distribution, Distribution::Elasticsearch);
        assert_eq!(t.dialect(), Dialect::Typed);
        assert!(!t.supports_composable_templates());
        assert!(!t.underscored_bulk_keys());

        let es8 = json!({"version":{"number":"8.12.0-SNAPSHOT"}});
        let t = Target::from_root(&es8).unwrap();
        assert_eq!(t.version, Version::new(8, 12, 0));
        assert_eq!(t.dialect(), Dialect::Typeless);
        assert_eq!(t.to_string(), "Elasticsearch 8.12.0");

        assert!(Target::from_root(&json!({"version":{"number":"x"}})).is_none());
        assert!(Target::from_root(&json!({})).is_none());
    }

    #[test]
    fn parses_versions() {
        assert_eq!(Version::parse("7.10"), Some(Version::new(7, 10, 0)));
        assert_eq!(Version::parse("5.6.16+build"), Some(Version::new(5, 6, 16)));
        assert_eq!(Version::parse(""), None);
        assert!(Version::new(7, 8, 0) > Version::new(7, 7, 9));
    }
}
