//! Which product and version the server pretends to be, and the API dialect that follows.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The product a [`TestServer`](super::TestServer) reports in `GET /`.
///
/// Deliberately the server's own type, not `product::Distribution`: the test server shares no
/// code with what it tests, so a mistake in `product` cannot hide itself in both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Distribution {
    /// Elasticsearch (no `version.distribution` field).
    Elasticsearch,
    /// OpenSearch (`version.distribution: "opensearch"`).
    OpenSearch,
}

impl FromStr for Distribution {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "elasticsearch" | "es" => Ok(Distribution::Elasticsearch),
            "opensearch" | "os" => Ok(Distribution::OpenSearch),
            other => Err(format!(
                "unknown distribution {other:?} (elasticsearch|opensearch)"
            )),
        }
    }
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Distribution::Elasticsearch => "elasticsearch",
            Distribution::OpenSearch => "opensearch",
        })
    }
}

/// A server version number that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad version number {number:?} (want e.g. 7.10.2)")]
pub struct VersionError {
    pub number: String,
    #[source]
    pub cause: std::num::ParseIntError,
}

/// The dialect differences the server honours, derived from distribution and version.
///
/// The server's own reading of a version, not `product::ProductVersion` nor
/// `cluster::DocAddressing`: the test server shares no code with what it tests.
#[derive(Clone, Debug)]
pub(crate) struct Dialect {
    pub distribution: Distribution,
    pub number: String,
    pub major: u32,
    pub minor: u32,
}

impl Dialect {
    pub fn new(distribution: Distribution, number: &str) -> Result<Dialect, VersionError> {
        let mut parts = number.split(['.', '-']);
        let mut next = || -> Result<u32, VersionError> {
            parts
                .next()
                .unwrap_or("0")
                .parse::<u32>()
                .map_err(|cause| VersionError {
                    number: number.to_string(),
                    cause,
                })
        };
        let major = next()?;
        let minor = next()?;
        Ok(Dialect {
            distribution,
            number: number.to_string(),
            major,
            minor,
        })
    }

    fn es(&self) -> bool {
        self.distribution == Distribution::Elasticsearch
    }

    /// Mapping types exist (ES ≤ 6): typed `_bulk`, `hits.total` as a number, `_type` in results.
    pub fn typed(&self) -> bool {
        self.es() && self.major <= 6
    }

    /// An index may hold several mapping types (ES 5.x; 6.0 refuses a second type).
    pub fn multi_type(&self) -> bool {
        self.es() && self.major == 5
    }

    /// The `track_total_hits` search option exists (ES 6.0+, OpenSearch).
    pub fn track_total_hits(&self) -> bool {
        !self.es() || self.major >= 6
    }

    /// The search validation of 7.0 applies: a scroll refuses `size: 0` (ES 7+, OpenSearch).
    pub fn scroll_validation_7(&self) -> bool {
        !self.es() || self.major >= 7
    }

    /// The clear-scroll body's `scroll_id` may be a single string, not only an array
    /// (ES 5.5+, elastic/elasticsearch#24242; OpenSearch).
    pub fn clear_scroll_string_id(&self) -> bool {
        !self.es() || self.major > 5 || self.minor >= 5
    }

    /// `_type` may still appear in `_bulk` metadata and `/idx/TYPE/ID` paths (ES ≤ 7, OpenSearch 1).
    pub fn accepts_types(&self) -> bool {
        if self.es() {
            self.major <= 7
        } else {
            self.major <= 1
        }
    }

    /// Composable (`_index_template`) and `_component_template` APIs: ES ≥ 7.8, OpenSearch.
    pub fn composable_templates(&self) -> bool {
        !self.es() || self.major > 7 || (self.major == 7 && self.minor >= 8)
    }

    /// Data streams (`PUT/GET _data_stream`, `.ds-` backing indices): ES ≥ 7.9, OpenSearch
    /// (every version: forked from 7.10.2).
    pub fn data_streams(&self) -> bool {
        !self.es() || self.major > 7 || (self.major == 7 && self.minor >= 9)
    }

    /// `GET _resolve/index/<expr>`: ES ≥ 7.9 (elastic/elasticsearch rest-api-spec test
    /// `indices.resolve_index/10_basic_resolve.yml`: "resolve index introduced in 7.9"),
    /// OpenSearch 1.0+ (opensearch-project/documentation-website
    /// `_api-reference/index-apis/resolve.md`: "Introduced 1.0"). Before, the path is read
    /// as a document GET on an index named `_resolve` (404 `index_not_found_exception`).
    pub fn resolve_index(&self) -> bool {
        self.data_streams()
    }

    /// Hidden indices (`index.hidden`, `expand_wildcards=hidden`): ES ≥ 7.7, OpenSearch.
    /// Before, `hidden` is no `expand_wildcards` value (400) and `all` is open + closed.
    pub fn hidden_indices(&self) -> bool {
        !self.es() || self.major > 7 || (self.major == 7 && self.minor >= 7)
    }

    /// Backing indices named `.ds-<stream>-<yyyy.MM.dd>-<generation>` (ES ≥ 7.11,
    /// elastic/elasticsearch `DataStream.getDefaultBackingIndexName` with the node
    /// version); before, and on OpenSearch (opensearch-project/OpenSearch `DataStream.java`:
    /// `.ds-%s-%06d`), without the date.
    pub fn dated_backing_indices(&self) -> bool {
        self.es() && (self.major > 7 || (self.major == 7 && self.minor >= 11))
    }

    /// Point in time as Elasticsearch has it (ES ≥ 7.10): `POST /IDX/_pit`, `DELETE /_pit`,
    /// the id as `id`.
    pub fn es_pit(&self) -> bool {
        self.es() && (self.major > 7 || (self.major == 7 && self.minor >= 10))
    }

    /// Point in time as OpenSearch has it (≥ 2.4): `POST /IDX/_search/point_in_time`,
    /// `DELETE /_search/point_in_time`, the id as `pit_id`.
    pub fn os_pit(&self) -> bool {
        !self.es() && (self.major > 2 || (self.major == 2 && self.minor >= 4))
    }

    /// `slice` in a point-in-time search: ES ≥ 7.15 (elastic/elasticsearch#74457, backport
    /// #75162), OpenSearch ≥ 3.3 (its `SearchService` then says "outside of a scroll
    /// context or PIT context"). Before, every shard refuses it: "`slice` cannot be used
    /// outside of a scroll context" (`SearchService.parseSource`).
    pub fn pit_slicing(&self) -> bool {
        if self.es() {
            self.major > 7 || (self.major == 7 && self.minor >= 15)
        } else {
            self.major > 3 || (self.major == 3 && self.minor >= 3)
        }
    }

    /// The `_shard_doc` sort field: ES ≥ 7.12 (elastic/elasticsearch#66093, backport
    /// #66588; made the implicit point-in-time tiebreaker by #68833), OpenSearch 3.x
    /// (`org.opensearch.search.sort.ShardDocSortBuilder`); OpenSearch 2.x has none
    /// (opensearch-project/data-prepper#3374: "2.5+ it is not supported").
    pub fn shard_doc(&self) -> bool {
        if self.es() {
            self.major > 7 || (self.major == 7 && self.minor >= 12)
        } else {
            self.major >= 3
        }
    }

    /// `X-elastic-product: Elasticsearch` header: ES ≥ 7.14.
    pub fn product_header(&self) -> bool {
        self.es() && (self.major > 7 || (self.major == 7 && self.minor >= 14))
    }

    /// The numeric version id stored as `index.version.created` (OpenSearch ids carry a mask bit).
    pub fn version_id(&self) -> u32 {
        let patch = self
            .number
            .split(['.', '-'])
            .nth(2)
            .and_then(|p| p.parse::<u32>().ok())
            .unwrap_or(0);
        let id = self.major * 1_000_000 + self.minor * 10_000 + patch * 100 + 99;
        match self.distribution {
            Distribution::Elasticsearch => id,
            Distribution::OpenSearch => id ^ 0x0800_0000,
        }
    }

    pub fn lucene_version(&self) -> &'static str {
        match (self.distribution, self.major, self.minor) {
            (Distribution::Elasticsearch, 5, _) => "6.6.1",
            (Distribution::Elasticsearch, 6, _) => "7.7.3",
            (Distribution::Elasticsearch, 7, m) if m < 10 => "8.6.0",
            (Distribution::Elasticsearch, 7, _) => "8.11.3",
            (Distribution::Elasticsearch, 8, _) => "9.12.0",
            (Distribution::Elasticsearch, _, _) => "10.2.0",
            (Distribution::OpenSearch, 1, _) => "8.10.1",
            (Distribution::OpenSearch, 2, _) => "9.7.0",
            (Distribution::OpenSearch, _, _) => "10.1.0",
        }
    }

    pub fn tagline(&self) -> &'static str {
        match self.distribution {
            Distribution::Elasticsearch => "You Know, for Search",
            Distribution::OpenSearch => "The OpenSearch Project: https://opensearch.org/",
        }
    }

    pub fn minimum_wire_compatibility(&self) -> &'static str {
        match (self.distribution, self.major) {
            (Distribution::Elasticsearch, 6) => "5.6.0",
            (Distribution::Elasticsearch, 7) => "6.8.0",
            (Distribution::Elasticsearch, 8) => "7.17.0",
            (Distribution::Elasticsearch, m) if m >= 9 => "8.18.0",
            (Distribution::OpenSearch, 1) => "6.8.0",
            (Distribution::OpenSearch, 2) => "7.10.0",
            (Distribution::OpenSearch, _) => "2.19.0",
            _ => "2.4.0",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialects() {
        let es6 = Dialect::new(Distribution::Elasticsearch, "6.8.23").unwrap();
        assert!(es6.typed() && es6.accepts_types() && !es6.composable_templates());
        let es7 = Dialect::new(Distribution::Elasticsearch, "7.10.2").unwrap();
        assert!(!es7.typed() && es7.accepts_types() && es7.composable_templates());
        assert!(!es7.product_header());
        let es8 = Dialect::new(Distribution::Elasticsearch, "8.15.0").unwrap();
        assert!(!es8.accepts_types() && es8.product_header());
        let os1 = Dialect::new(Distribution::OpenSearch, "1.3.20").unwrap();
        assert!(os1.accepts_types() && os1.composable_templates());
        let os2 = Dialect::new(Distribution::OpenSearch, "2.11.0").unwrap();
        assert!(!os2.accepts_types() && !os2.typed());
        assert!(Dialect::new(Distribution::OpenSearch, "x").is_err());
        assert_eq!(
            "OpenSearch".parse::<Distribution>().unwrap(),
            Distribution::OpenSearch
        );
    }
}
