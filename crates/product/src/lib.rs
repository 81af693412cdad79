//! What an Elasticsearch or OpenSearch release is — its distribution and version number —
//! however it reaches us (a snapshot's numeric version id, a cluster's `GET /`, a label such
//! as `es-8.15` on the command line), and what each release line accepts. One type for the
//! source and the target alike; Lucene's own versions live in `lucene`.

use std::fmt;

/// Who built the release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Distribution {
    Elasticsearch,
    OpenSearch,
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Distribution::Elasticsearch => "Elasticsearch",
            Distribution::OpenSearch => "OpenSearch",
        })
    }
}

/// The three kinds of templates a cluster holds (and a snapshot's global metadata).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TemplateKind {
    /// `_template` (legacy index templates, every version; may carry typed mappings).
    Legacy,
    /// `_component_template` (ES ≥ 7.8, OpenSearch).
    Component,
    /// `_index_template` (composable, ES ≥ 7.8, OpenSearch).
    Index,
}

impl TemplateKind {
    /// The REST endpoint of this kind (`_template`, `_component_template`,
    /// `_index_template`).
    pub fn endpoint(self) -> &'static str {
        match self {
            TemplateKind::Legacy => "_template",
            TemplateKind::Component => "_component_template",
            TemplateKind::Index => "_index_template",
        }
    }
}

/// Why a release label (`es-8.15`) does not parse; each names the label.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    #[error("{0:?}: expected es-MAJOR.MINOR or os-MAJOR.MINOR (e.g. es-8.15, os-2.19)")]
    Shape(String),
    #[error("{label:?}: unknown product {product:?} (es or os)")]
    Product { label: String, product: String },
    #[error("{label:?}: {number:?} is not a version number")]
    Number { label: String, number: String },
    #[error("{label:?}: no such {distribution} release line")]
    ReleaseLine {
        label: String,
        distribution: Distribution,
    },
}

/// A release: distribution and `major.minor.patch` (pre-release suffixes dropped).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct ProductVersion {
    pub distribution: Distribution,
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

/// Bit 27 of a numeric version id marks an OpenSearch release.
const OPENSEARCH_ID_BIT: u64 = 0x0800_0000;

impl ProductVersion {
    pub const fn new(distribution: Distribution, major: u32, minor: u32, patch: u32) -> Self {
        ProductVersion {
            distribution,
            major,
            minor,
            patch,
        }
    }

    /// Elasticsearch `major.minor`.
    pub const fn es(major: u32, minor: u32) -> Self {
        ProductVersion::new(Distribution::Elasticsearch, major, minor, 0)
    }

    /// OpenSearch `major.minor`.
    pub const fn os(major: u32, minor: u32) -> Self {
        ProductVersion::new(Distribution::OpenSearch, major, minor, 0)
    }

    /// Parses `7.10.2`, `8.11.0-SNAPSHOT`, `2.11` as a release of `distribution`.
    pub fn parse(distribution: Distribution, text: &str) -> Option<Self> {
        let core = text.trim().split(['-', '+']).next()?;
        let mut parts = core.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next().map_or(Some(0), |p| p.parse().ok())?;
        let patch = parts.next().map_or(Some(0), |p| p.parse().ok())?;
        Some(ProductVersion::new(distribution, major, minor, patch))
    }

    /// Decodes a numeric version id, `major*1_000_000 + minor*10_000 + patch*100 + build`
    /// (`7100299` is Elasticsearch 7.10.2); ids with bit `0x08000000` set are OpenSearch
    /// releases. `None` for ids that name no release (major 0, out of range).
    ///
    /// Elasticsearch 8.11+ writes `IndexVersion` ids instead (`8_500_000` and up in the 8.x
    /// line), which do not encode the release: those decode as 8.11.0, the first release
    /// that wrote them. Ids of the 9.x line keep the right major.
    pub fn from_id(id: u64) -> Option<Self> {
        if Self::is_index_version_id(id) {
            return Some(ProductVersion::es(8, 11));
        }
        let (distribution, id) = if id & OPENSEARCH_ID_BIT != 0 {
            (Distribution::OpenSearch, id & !OPENSEARCH_ID_BIT)
        } else {
            (Distribution::Elasticsearch, id)
        };
        let major = u32::try_from(id / 1_000_000).ok()?;
        let minor = ((id / 10_000) % 100) as u32;
        let patch = ((id / 100) % 100) as u32;
        (major > 0).then_some(ProductVersion::new(distribution, major, minor, patch))
    }

    /// Whether `id` is an Elasticsearch 8.11+ `IndexVersion` id rather than a release id.
    pub fn is_index_version_id(id: u64) -> bool {
        id & OPENSEARCH_ID_BIT == 0 && (8_500_000..9_000_000).contains(&id)
    }

    /// Parses `es-8.15`, `os-2.19`, `elasticsearch-7.10.2`, `opensearch-3`: a release
    /// named on the command line.
    pub fn parse_labeled(text: &str) -> Result<Self, LabelError> {
        let t = text.trim();
        let (d, number) = t
            .split_once('-')
            .ok_or_else(|| LabelError::Shape(t.to_string()))?;
        let distribution = match d.to_ascii_lowercase().as_str() {
            "es" | "elasticsearch" => Distribution::Elasticsearch,
            "os" | "opensearch" => Distribution::OpenSearch,
            other => {
                return Err(LabelError::Product {
                    label: t.to_string(),
                    product: other.to_string(),
                })
            }
        };
        let v = ProductVersion::parse(distribution, number)
            .filter(|v| v.major > 0)
            .ok_or_else(|| LabelError::Number {
                label: t.to_string(),
                number: number.to_string(),
            })?;
        let known = match distribution {
            Distribution::Elasticsearch => (1..=9).contains(&v.major),
            Distribution::OpenSearch => (1..=3).contains(&v.major),
        };
        if !known {
            return Err(LabelError::ReleaseLine {
                label: t.to_string(),
                distribution,
            });
        }
        Ok(v)
    }

    /// The number alone, `major.minor.patch` (`7.10.2`), as clusters report it.
    pub fn number(&self) -> String {
        format!("{}.{}.{}", self.major, self.minor, self.patch)
    }

    /// OpenSearch, any version.
    pub fn is_os(&self) -> bool {
        self.distribution == Distribution::OpenSearch
    }

    /// Elasticsearch, any version.
    pub fn is_es(&self) -> bool {
        self.distribution == Distribution::Elasticsearch
    }

    /// Elasticsearch `major.minor` or later.
    pub fn at_least_es(&self, major: u32, minor: u32) -> bool {
        self.is_es() && (self.major, self.minor) >= (major, minor)
    }

    /// OpenSearch `major.minor` or later.
    pub fn at_least_os(&self, major: u32, minor: u32) -> bool {
        self.is_os() && (self.major, self.minor) >= (major, minor)
    }

    /// Elasticsearch before `major`: the release lines of mapping types (ES ≤ 6) and of
    /// underscored bulk metadata (ES ≤ 5) are `es_before(7)` and `es_before(6)`.
    pub fn es_before(&self, major: u32) -> bool {
        self.is_es() && self.major < major
    }

    /// Data streams: Elasticsearch 7.9+, every OpenSearch.
    pub fn supports_data_streams(&self) -> bool {
        self.is_os() || self.at_least_es(7, 9)
    }

    /// Whether mappings are wrapped in a type name (`{"_doc": {...}}`): Elasticsearch ≤ 6.
    pub fn typed_mappings(&self) -> bool {
        self.es_before(7)
    }

    /// The type name to create on a typed target (Elasticsearch 6.2+ accepts `_doc`).
    pub fn default_type_name(&self) -> &'static str {
        if self.is_es() && (self.major, self.minor) < (6, 2) {
            "doc"
        } else {
            "_doc"
        }
    }

    /// Composable index templates and component templates: Elasticsearch 7.8+, every
    /// OpenSearch.
    pub fn supports_composable_templates(&self) -> bool {
        self.is_os() || self.at_least_es(7, 8)
    }

    /// `index.number_of_routing_shards`: Elasticsearch 6.1+, every OpenSearch.
    pub fn supports_routing_shards(&self) -> bool {
        self.is_os() || self.at_least_es(6, 1)
    }

    /// Creating an index with `index.soft_deletes.enabled: false` is refused by
    /// Elasticsearch 8+ and OpenSearch 2+.
    pub fn rejects_soft_deletes_disabled(&self) -> bool {
        self.at_least_os(2, 0) || self.at_least_es(8, 0)
    }

    /// `is_write_index` on aliases: Elasticsearch 6.4+, every OpenSearch.
    pub fn supports_write_index_alias(&self) -> bool {
        self.is_os() || self.at_least_es(6, 4)
    }

    /// `is_hidden` on aliases: Elasticsearch 7.7+, every OpenSearch.
    pub fn supports_hidden_alias(&self) -> bool {
        self.is_os() || self.at_least_es(7, 7)
    }

    /// `_field_names: {enabled: false}` is refused by Elasticsearch 8+.
    pub fn rejects_field_names_disabled(&self) -> bool {
        self.at_least_es(8, 0)
    }
}

/// `Elasticsearch 7.10.2`, `OpenSearch 2.11` (the patch level when it is not 0).
impl fmt::Display for ProductVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}.{}", self.distribution, self.major, self.minor)?;
        if self.patch != 0 {
            write!(f, ".{}", self.patch)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_decode() {
        assert_eq!(
            ProductVersion::from_id(7_100_299),
            Some(ProductVersion::new(Distribution::Elasticsearch, 7, 10, 2))
        );
        assert_eq!(
            ProductVersion::from_id(5_061_699)
                .map(|v| v.to_string())
                .as_deref(),
            Some("Elasticsearch 5.6.16")
        );
        assert_eq!(
            ProductVersion::from_id(0x0800_0000 | 2_110_099),
            Some(ProductVersion::os(2, 11))
        );
        assert_eq!(
            ProductVersion::from_id(8_512_000),
            Some(ProductVersion::es(8, 11))
        );
        assert!(ProductVersion::is_index_version_id(8_512_000));
        assert!(!ProductVersion::is_index_version_id(8_110_099));
        assert_eq!(ProductVersion::from_id(12), None);
        assert_eq!(
            ProductVersion::from_id(7_100_299).unwrap().number(),
            "7.10.2"
        );
        assert_eq!(ProductVersion::from_id(u64::MAX), None);
    }

    #[test]
    fn numbers_parse() {
        let es = Distribution::Elasticsearch;
        assert_eq!(
            ProductVersion::parse(es, "8.11.0-SNAPSHOT"),
            Some(ProductVersion::es(8, 11))
        );
        assert_eq!(
            ProductVersion::parse(es, "7.10.2"),
            Some(ProductVersion::new(es, 7, 10, 2))
        );
        assert_eq!(
            ProductVersion::parse(es, "2"),
            Some(ProductVersion::es(2, 0))
        );
        assert_eq!(ProductVersion::parse(es, "x.1"), None);
        assert_eq!(ProductVersion::os(3, 8).to_string(), "OpenSearch 3.8");
    }

    #[test]
    fn labeled_versions() {
        assert_eq!(
            ProductVersion::parse_labeled("es-8.15").unwrap(),
            ProductVersion::es(8, 15)
        );
        assert_eq!(
            ProductVersion::parse_labeled("os-2.19").unwrap(),
            ProductVersion::os(2, 19)
        );
        assert_eq!(
            ProductVersion::parse_labeled("OpenSearch-3").unwrap(),
            ProductVersion::os(3, 0)
        );
        assert_eq!(
            ProductVersion::parse_labeled("elasticsearch-7.10.2").unwrap(),
            ProductVersion::new(Distribution::Elasticsearch, 7, 10, 2)
        );
        for bad in ["8.15", "solr-9", "es-x", "os-7.1", "es-"] {
            assert!(ProductVersion::parse_labeled(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn what_releases_accept() {
        assert!(ProductVersion::es(6, 8).typed_mappings());
        assert!(!ProductVersion::es(7, 0).typed_mappings());
        assert!(!ProductVersion::os(1, 0).typed_mappings());
        assert_eq!(ProductVersion::es(6, 1).default_type_name(), "doc");
        assert_eq!(ProductVersion::es(6, 8).default_type_name(), "_doc");
        assert!(ProductVersion::es(7, 8).supports_composable_templates());
        assert!(!ProductVersion::es(7, 7).supports_composable_templates());
        assert!(ProductVersion::os(2, 0).rejects_soft_deletes_disabled());
        assert!(!ProductVersion::os(1, 3).rejects_soft_deletes_disabled());
        assert!(ProductVersion::es(5, 6).es_before(6));
        assert!(!ProductVersion::os(1, 0).es_before(6));
    }
}
