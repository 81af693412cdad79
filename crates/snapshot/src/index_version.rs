//! The version an index was created with (`index.version.created`, a snapshot's
//! `version_id`), as an Elasticsearch or OpenSearch cluster writes it.
//!
//! Up to Elasticsearch 8.10 (and in every OpenSearch) the id encodes a release:
//! `major*1_000_000 + minor*10_000 + patch*100 + build` (`7_10_02_99` is 7.10.2;
//! OpenSearch sets bit `0x0800_0000`). From 8.11 on Elasticsearch writes *detached*
//! `IndexVersion` ids instead: the first is `8_500_000`, and each change to how an index
//! is stored takes the next id (`M_NNN_S_PP`: major, a running server number, a
//! subsidiary digit and a patch part). Such an id says which major wrote it, nothing
//! more: `8_512_000` is not "8.51.20" and `9_039_000` is not "9.3.90".
//!
//! So ids are compared as ids ([`IndexVersion::on_or_after`]), never through a release
//! number, and the release behind a detached id is looked up in a table of the ids each
//! release wrote, where it is known.
//!
//! Facts, read in `elastic/elasticsearch`:
//! - the detached ids and their names, the first being `FIRST_DETACHED_INDEX_VERSION =
//!   8_500_000` right after `V_8_10_0 = 8_10_00_99`, and the id layout:
//!   `server/src/main/java/org/elasticsearch/index/IndexVersions.java` at commit
//!   `0024eeaec627406aced6d49e7d424164e1ca3955`;
//! - the id each release writes (`8.11.0,8500003` … `8.17.2,8521000`):
//!   `server/src/main/resources/org/elasticsearch/index/IndexVersions.csv` at commit
//!   `000a4933ca38250d4ede5ff255cdd9c50a72c8f4`; the releases after it (8.18.0 … 8.19.19,
//!   9.0.0 … 9.3.7) from the same file in a mirror of that repository,
//!   `mamh-java/elastic-elasticsearch` at commit
//!   `19c9f614d5ef07786d0cbbe7f397bae03bd6dc62`. Ids past the last release listed there
//!   are shown with their major only.

use std::fmt;

use product::{Distribution, ProductVersion};

/// Bit 27 of a numeric version id marks an OpenSearch release.
const OPENSEARCH_ID_BIT: u32 = 0x0800_0000;

/// An index version id, as `index.version.created` holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IndexVersion(u32);

/// The last id Elasticsearch wrote as a release id (8.10.0; 8.10.x patches wrote
/// `8_10_0x_99`, still below the first detached id).
const LAST_RELEASE_ID_LINE: u32 = 8_10_99_99;

/// `(release, the index version id it writes)` for the releases that write detached ids,
/// from `IndexVersions.csv` (see the module doc). Sorted by id, then release.
const DETACHED_RELEASES: &[((u32, u32, u32), u32)] = &[
    ((8, 11, 0), 8_500_003),
    ((8, 12, 0), 8_500_008),
    ((8, 12, 1), 8_500_010),
    ((8, 13, 0), 8_503_000),
    ((8, 14, 0), 8_505_000),
    ((8, 15, 0), 8_512_000),
    ((8, 16, 0), 8_518_000),
    ((8, 17, 0), 8_521_000),
    ((8, 18, 0), 8_525_000),
    ((8, 19, 0), 8_536_000),
    ((8, 19, 9), 8_537_000),
    ((9, 0, 0), 9_009_000),
    ((9, 1, 0), 9_033_000),
    ((9, 1, 9), 9_033_001),
    ((9, 2, 0), 9_039_001),
    ((9, 2, 2), 9_039_002),
    ((9, 2, 3), 9_039_003),
    ((9, 3, 0), 9_060_000),
    ((9, 3, 3), 9_060_001),
];

impl IndexVersion {
    /// The first detached id (`FIRST_DETACHED_INDEX_VERSION`, written from 8.11 on).
    pub const FIRST_DETACHED: IndexVersion = IndexVersion(8_500_000);
    /// `V8_DEPRECATE_SOURCE_MODE_MAPPER` (8.x line): `_source.mode` in mappings is
    /// deprecated in favour of the `index.mapping.source.mode` setting.
    pub const V8_DEPRECATE_SOURCE_MODE_MAPPER: IndexVersion = IndexVersion(8_521_000);
    /// `DEPRECATE_SOURCE_MODE_MAPPER` (9.x line).
    pub const DEPRECATE_SOURCE_MODE_MAPPER: IndexVersion = IndexVersion(9_003_000);
    /// `SOURCE_MAPPER_MODE_ATTRIBUTE_NOOP`: indices created from here on ignore
    /// `_source.mode` in their mappings; only `index.mapping.source.mode` counts.
    pub const SOURCE_MAPPER_MODE_ATTRIBUTE_NOOP: IndexVersion = IndexVersion(9_007_000);
    /// `EXCLUDE_SOURCE_VECTORS_DEFAULT`: dense vectors left out of `_source` by default.
    pub const EXCLUDE_SOURCE_VECTORS_DEFAULT: IndexVersion = IndexVersion(9_035_000);
    /// `IGNORED_SOURCE_COALESCED_ENTRIES`: `_ignored_source` keeps one value per path.
    pub const IGNORED_SOURCE_COALESCED_ENTRIES: IndexVersion = IndexVersion(9_039_000);

    /// The version with numeric id `id`; `None` for 0 and ids no cluster writes
    /// (wider than 32 bits, or with neither a major nor the OpenSearch bit).
    pub fn from_id(id: u64) -> Option<IndexVersion> {
        let id = u32::try_from(id).ok()?;
        let bare = id & !OPENSEARCH_ID_BIT;
        (bare >= 1_000_000).then_some(IndexVersion(id))
    }

    /// Parses the decimal id a setting holds (`"8512000"`).
    pub fn parse(text: &str) -> Option<IndexVersion> {
        text.trim()
            .parse::<u64>()
            .ok()
            .and_then(IndexVersion::from_id)
    }

    /// The raw id.
    pub fn id(self) -> u32 {
        self.0
    }

    /// Who wrote it.
    pub fn distribution(self) -> Distribution {
        if self.0 & OPENSEARCH_ID_BIT != 0 {
            Distribution::OpenSearch
        } else {
            Distribution::Elasticsearch
        }
    }

    /// An Elasticsearch 8.11+ detached id (not a release id).
    pub fn is_detached(self) -> bool {
        self.distribution() == Distribution::Elasticsearch && self.0 > LAST_RELEASE_ID_LINE
    }

    /// The major release line that wrote it.
    pub fn major(self) -> u32 {
        (self.0 & !OPENSEARCH_ID_BIT) / 1_000_000
    }

    /// Whether this version is `other` or later: the same distribution and an id at least
    /// as large. Versions of different distributions are never ordered.
    pub fn on_or_after(self, other: IndexVersion) -> bool {
        self.distribution() == other.distribution() && self.0 >= other.0
    }

    /// Whether this version is strictly before `other` (same distribution).
    pub fn before(self, other: IndexVersion) -> bool {
        self.distribution() == other.distribution() && self.0 < other.0
    }

    /// The release, exactly, for ids that encode one (Elasticsearch ≤ 8.10, OpenSearch).
    pub fn release(self) -> Option<ProductVersion> {
        if self.is_detached() {
            return None;
        }
        let bare = self.0 & !OPENSEARCH_ID_BIT;
        Some(ProductVersion::new(
            self.distribution(),
            bare / 1_000_000,
            (bare / 10_000) % 100,
            (bare / 100) % 100,
        ))
    }

    /// The release line (`major.minor`) of a detached id, when the table knows it: the
    /// first release whose own id is at least this one (ids between two releases were
    /// only written by development builds of the later one).
    pub fn release_line(self) -> Option<ProductVersion> {
        if let Some(v) = self.release() {
            return Some(ProductVersion::new(v.distribution, v.major, v.minor, 0));
        }
        DETACHED_RELEASES
            .iter()
            .find(|(_, id)| *id >= self.0 && *id / 1_000_000 == self.major())
            .map(|((major, minor, _), _)| ProductVersion::es(*major, *minor))
    }

    /// The earliest release that can have written this id, for the checks that are kept
    /// per release (mapping types, soft deletes, …): the release itself, else its release
    /// line, else the last line known to write ids of this major (8.19 for later 8.x
    /// ids), else the major's first release (`9.0` for any 9.x id).
    pub fn release_floor(self) -> ProductVersion {
        if let Some(v) = self.release() {
            return v;
        }
        if let Some(v) = self.release_line() {
            return v;
        }
        DETACHED_RELEASES
            .iter()
            .rev()
            .find(|(_, id)| *id / 1_000_000 == self.major())
            .map(|((major, minor, _), _)| ProductVersion::es(*major, *minor))
            .unwrap_or_else(|| ProductVersion::es(self.major(), 0))
    }
}

/// `7.10.2` for release ids (`OpenSearch 2.11.0` for OpenSearch); for detached ids the
/// release line when known and the id: `8.15 (index version 8512000)`, else
/// `9.x (index version 9039000)`.
impl fmt::Display for IndexVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(v) = self.release() {
            if v.is_os() {
                return write!(f, "OpenSearch {}", v.number());
            }
            return f.write_str(&v.number());
        }
        match self.release_line() {
            Some(v) => write!(f, "{}.{} (index version {})", v.major, v.minor, self.0),
            None => write!(f, "{}.x (index version {})", self.major(), self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(id: u64) -> IndexVersion {
        IndexVersion::from_id(id).unwrap()
    }

    #[test]
    fn release_ids_decode_as_releases() {
        assert_eq!(
            v(7_100_299).release(),
            Some(ProductVersion::new(Distribution::Elasticsearch, 7, 10, 2))
        );
        assert_eq!(v(8_100_499).to_string(), "8.10.4");
        assert!(!v(8_100_499).is_detached());
        let os = v(u64::from(OPENSEARCH_ID_BIT) | 2_110_099);
        assert_eq!(
            os.release(),
            Some(ProductVersion::new(Distribution::OpenSearch, 2, 11, 0))
        );
        assert_eq!(os.to_string(), "OpenSearch 2.11.0");
        assert!(!os.is_detached());
    }

    #[test]
    fn detached_ids_name_their_release_line() {
        for (id, line) in [
            (8_500_003, (8, 11)),
            (8_500_004, (8, 12)),
            (8_500_010, (8, 12)),
            (8_503_000, (8, 13)),
            (8_504_000, (8, 14)),
            (8_512_000, (8, 15)),
            (8_518_000, (8, 16)),
            (8_521_000, (8, 17)),
        ] {
            let got = v(id).release_line().unwrap();
            assert_eq!((got.major, got.minor), line, "{id}");
            assert!(v(id).is_detached());
            assert_eq!(v(id).release(), None);
        }
        for (id, line) in [
            (8_525_000, (8, 18)),
            (8_536_000, (8, 19)),
            (8_537_000, (8, 19)),
            (9_009_000, (9, 0)),
            (9_033_001, (9, 1)),
            (9_035_000, (9, 2)),
            (9_039_000, (9, 2)),
            (9_039_003, (9, 2)),
            (9_060_001, (9, 3)),
        ] {
            let got = v(id).release_line().unwrap();
            assert_eq!((got.major, got.minor), line, "{id}");
        }
        assert_eq!(v(8_512_000).to_string(), "8.15 (index version 8512000)");
        assert_eq!(v(9_039_000).to_string(), "9.2 (index version 9039000)");
        // Past the table: the major only, never a made-up minor.
        assert_eq!(v(8_540_000).release_line(), None);
        assert_eq!(v(8_540_000).to_string(), "8.x (index version 8540000)");
        assert_eq!(v(8_540_000).release_floor(), ProductVersion::es(8, 19));
        assert_eq!(v(9_070_000).to_string(), "9.x (index version 9070000)");
        assert_eq!(v(9_070_000).release_floor(), ProductVersion::es(9, 3));
        assert_eq!(v(9_070_000).major(), 9);
    }

    #[test]
    fn compared_as_ids() {
        assert!(v(9_039_000).on_or_after(IndexVersion::EXCLUDE_SOURCE_VECTORS_DEFAULT));
        assert!(v(9_035_000).on_or_after(IndexVersion::EXCLUDE_SOURCE_VECTORS_DEFAULT));
        assert!(v(9_034_000).before(IndexVersion::EXCLUDE_SOURCE_VECTORS_DEFAULT));
        // Every 8.x id is before every 9.x id, detached or not.
        assert!(v(8_536_000).before(IndexVersion::SOURCE_MAPPER_MODE_ATTRIBUTE_NOOP));
        assert!(v(8_100_099).before(IndexVersion::FIRST_DETACHED));
        // OpenSearch ids are not ordered against Elasticsearch ones.
        let os = v(u64::from(OPENSEARCH_ID_BIT) | 3_000_099);
        assert!(!os.on_or_after(IndexVersion::FIRST_DETACHED));
        assert!(!os.before(IndexVersion::FIRST_DETACHED));
    }

    #[test]
    fn junk_ids_are_none() {
        assert_eq!(IndexVersion::from_id(0), None);
        assert_eq!(IndexVersion::from_id(12), None);
        assert_eq!(IndexVersion::from_id(u64::MAX), None);
        assert_eq!(IndexVersion::parse("8512000x"), None);
        assert_eq!(IndexVersion::parse(" 8512000 "), Some(v(8_512_000)));
    }
}
