//! Versions of the source snapshot and the target cluster, and what each target accepts.

use std::fmt;

/// Who built the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Distribution {
    Elasticsearch,
    OpenSearch,
}

/// A distribution and its major.minor version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Version {
    pub distribution: Distribution,
    pub major: u32,
    pub minor: u32,
}

impl Version {
    pub const fn es(major: u32, minor: u32) -> Self {
        Version {
            distribution: Distribution::Elasticsearch,
            major,
            minor,
        }
    }

    pub const fn os(major: u32, minor: u32) -> Self {
        Version {
            distribution: Distribution::OpenSearch,
            major,
            minor,
        }
    }

    /// Parses `"7.10.2"` as an Elasticsearch version (snapshots record ES-style numbers;
    /// OpenSearch-written ones are decoded to OpenSearch by the caller).
    pub fn parse(distribution: Distribution, text: &str) -> Option<Self> {
        let mut parts = text.trim().split(['.', '-']);
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next().and_then(|m| m.parse().ok()).unwrap_or(0);
        Some(Version {
            distribution,
            major,
            minor,
        })
    }

    /// Decodes a numeric version id (`7100299` = 7.10.2); ids with the OpenSearch bit
    /// `0x08000000` set are OpenSearch versions.
    pub fn from_id(id: u64) -> Option<Self> {
        const OS_MASK: u64 = 0x0800_0000;
        let (distribution, id) = if id & OS_MASK != 0 {
            (Distribution::OpenSearch, id & !OS_MASK)
        } else {
            (Distribution::Elasticsearch, id)
        };
        let major = u32::try_from(id / 1_000_000).ok()?;
        let minor = u32::try_from((id / 10_000) % 100).ok()?;
        (major > 0).then_some(Version {
            distribution,
            major,
            minor,
        })
    }

    /// Parses `es-8.15`, `os-2.19`, `elasticsearch-7.10.2`, `opensearch-3`: what
    /// `rfs metadata convert --from/--to` take.
    pub fn parse_labeled(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let (d, number) = t.split_once('-').ok_or_else(|| {
            format!("{t:?}: expected es-MAJOR.MINOR or os-MAJOR.MINOR (e.g. es-8.15, os-2.19)")
        })?;
        let distribution = match d.to_ascii_lowercase().as_str() {
            "es" | "elasticsearch" => Distribution::Elasticsearch,
            "os" | "opensearch" => Distribution::OpenSearch,
            other => return Err(format!("{t:?}: unknown product {other:?} (es or os)")),
        };
        let v = Version::parse(distribution, number)
            .filter(|v| v.major > 0)
            .ok_or_else(|| format!("{t:?}: {number:?} is not a version number"))?;
        let known = match distribution {
            Distribution::Elasticsearch => (1..=9).contains(&v.major),
            Distribution::OpenSearch => (1..=3).contains(&v.major),
        };
        if !known {
            return Err(format!(
                "{t:?}: no such {} release line",
                v.distribution_name()
            ));
        }
        Ok(v)
    }

    fn distribution_name(&self) -> &'static str {
        match self.distribution {
            Distribution::Elasticsearch => "Elasticsearch",
            Distribution::OpenSearch => "OpenSearch",
        }
    }

    /// Elasticsearch `major.minor` or later.
    pub fn at_least_es(&self, major: u32, minor: u32) -> bool {
        self.distribution == Distribution::Elasticsearch
            && (self.major, self.minor) >= (major, minor)
    }

    /// OpenSearch `major.minor` or later.
    pub fn at_least_os(&self, major: u32, minor: u32) -> bool {
        self.is_os() && (self.major, self.minor) >= (major, minor)
    }

    /// OpenSearch, any version.
    pub fn is_os(&self) -> bool {
        self.distribution == Distribution::OpenSearch
    }

    /// Elasticsearch, any version.
    pub fn is_es(&self) -> bool {
        self.distribution == Distribution::Elasticsearch
    }

    /// Data streams: Elasticsearch 7.9+, every OpenSearch.
    pub fn supports_data_streams(&self) -> bool {
        self.is_os() || self.at_least_es(7, 9)
    }

    /// Whether the target wants mappings wrapped in a type name (`{"_doc": {...}}`): ES 6.
    pub fn typed_mappings(&self) -> bool {
        self.distribution == Distribution::Elasticsearch && self.major <= 6
    }

    /// The type name to create on a typed target (ES 6.2+ accepts `_doc`).
    pub fn default_type_name(&self) -> &'static str {
        if self.distribution == Distribution::Elasticsearch && (self.major, self.minor) < (6, 2) {
            "doc"
        } else {
            "_doc"
        }
    }

    /// Composable index templates and component templates: ES 7.8+, every OpenSearch.
    pub fn supports_composable_templates(&self) -> bool {
        self.is_os() || self.at_least_es(7, 8)
    }

    /// `index.number_of_routing_shards`: ES 6.1+, every OpenSearch.
    pub fn supports_routing_shards(&self) -> bool {
        self.is_os() || self.at_least_es(6, 1)
    }

    /// Creating an index with `index.soft_deletes.enabled: false` is refused by ES 8+ and
    /// OpenSearch 2+.
    pub fn rejects_soft_deletes_disabled(&self) -> bool {
        (self.is_os() && self.major >= 2) || self.at_least_es(8, 0)
    }

    /// `is_write_index` on aliases: ES 6.4+, every OpenSearch.
    pub fn supports_write_index_alias(&self) -> bool {
        self.is_os() || self.at_least_es(6, 4)
    }

    /// `is_hidden` on aliases: ES 7.7+, every OpenSearch.
    pub fn supports_hidden_alias(&self) -> bool {
        self.is_os() || self.at_least_es(7, 7)
    }

    /// `_field_names: {enabled: false}` is refused by ES 8+.
    pub fn rejects_field_names_disabled(&self) -> bool {
        self.at_least_es(8, 0)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = match self.distribution {
            Distribution::Elasticsearch => "Elasticsearch",
            Distribution::OpenSearch => "OpenSearch",
        };
        write!(f, "{d} {}.{}", self.major, self.minor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_decode() {
        assert_eq!(Version::from_id(7_100_299), Some(Version::es(7, 10)));
        assert_eq!(Version::from_id(5_061_699), Some(Version::es(5, 6)));
        assert_eq!(
            Version::from_id(0x0800_0000 | 2_110_099),
            Some(Version::os(2, 11))
        );
        assert_eq!(Version::from_id(12), None);
    }

    #[test]
    fn parse_and_capabilities() {
        let v = Version::parse(Distribution::Elasticsearch, "6.8.24").unwrap();
        assert_eq!(v, Version::es(6, 8));
        assert!(v.typed_mappings());
        assert!(!v.supports_composable_templates());
        assert!(Version::es(7, 8).supports_composable_templates());
        assert!(!Version::es(7, 7).supports_composable_templates());
        assert!(Version::os(1, 0).supports_composable_templates());
        assert!(Version::os(2, 0).rejects_soft_deletes_disabled());
        assert!(!Version::os(1, 3).rejects_soft_deletes_disabled());
        assert_eq!(Version::es(6, 1).default_type_name(), "doc");
        assert_eq!(Version::es(6, 8).default_type_name(), "_doc");
        assert_eq!(Version::os(3, 8).to_string(), "OpenSearch 3.8");
    }

    #[test]
    fn labeled_versions() {
        assert_eq!(
            Version::parse_labeled("es-8.15").unwrap(),
            Version::es(8, 15)
        );
        assert_eq!(
            Version::parse_labeled("os-2.19").unwrap(),
            Version::os(2, 19)
        );
        assert_eq!(
            Version::parse_labeled("OpenSearch-3").unwrap(),
            Version::os(3, 0)
        );
        assert_eq!(
            Version::parse_labeled("elasticsearch-7.10.2").unwrap(),
            Version::es(7, 10)
        );
        for bad in ["8.15", "solr-9", "es-x", "os-7.1", "es-"] {
            assert!(Version::parse_labeled(bad).is_err(), "{bad}");
        }
    }
}
