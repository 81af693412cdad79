//! Where a shard's blobs live. Elasticsearch and OpenSearch before 2.17 put them in
//! `indices/<index id>/<shard>`; OpenSearch 2.17+ can put them under a hashed path
//! component (the repository setting `shard_path_type`, recorded per index in the
//! repository data), and then also writes `snapshot_shard_paths/` blobs that list each
//! shard's directory. Notes and evidence: `docs/specs/opensearch-shard-paths.md`.
//!
//! The hash is FNV-1a (64-bit) over the UTF-8 of the shard number followed by the index
//! id, encoded as one URL-safe base-64 character (the top 6 bits) and the next 14 bits as
//! `0`/`1` digits (`FNV_1A_COMPOSITE_1`), or as the unpadded URL-safe base 64 of all
//! 8 bytes (`FNV_1A_BASE64`).

use std::fmt;

use base64::Engine;
use serde_json::Value;

use crate::error::{Error, Result};

/// The folder of the `snapshot_shard_paths` blobs, at the repository root.
pub const SHARD_PATHS_DIR: &str = "snapshot_shard_paths";

/// How shard directories are laid out (repository data `indices.<name>.shard_path_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ShardPathType {
    /// `<base>/indices/<id>/<shard>` (code 0; every Elasticsearch, OpenSearch by default).
    #[default]
    Fixed,
    /// `<hash>/<base>/indices/<id>/<shard>`: the hash comes before the repository's base
    /// path, so on S3 the blobs are outside the `base_path` prefix (code 1).
    HashedPrefix,
    /// `<base>/<hash>/indices/<id>/<shard>` (code 2).
    HashedInfix,
}

impl ShardPathType {
    /// From the numeric code written in repository data.
    pub fn from_code(code: i64) -> Option<Self> {
        Some(match code {
            0 => Self::Fixed,
            1 => Self::HashedPrefix,
            2 => Self::HashedInfix,
            _ => return None,
        })
    }

    pub fn code(self) -> u8 {
        match self {
            Self::Fixed => 0,
            Self::HashedPrefix => 1,
            Self::HashedInfix => 2,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fixed => "FIXED",
            Self::HashedPrefix => "HASHED_PREFIX",
            Self::HashedInfix => "HASHED_INFIX",
        }
    }
}

impl fmt::Display for ShardPathType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The hash that names a hashed shard path component.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PathHashAlgorithm {
    /// Code 0: the 8 hash bytes (big-endian) in unpadded URL-safe base 64 (11 characters).
    Fnv1aBase64,
    /// Code 1 (what snapshots use): one base-64 character for the top 6 bits, then the
    /// next 14 bits as binary digits (15 characters).
    #[default]
    Fnv1aComposite1,
}

const URL_BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// 64-bit FNV-1a of `bytes`.
pub fn fnv1a_64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl PathHashAlgorithm {
    pub fn from_code(code: i64) -> Option<Self> {
        match code {
            0 => Some(Self::Fnv1aBase64),
            1 => Some(Self::Fnv1aComposite1),
            _ => None,
        }
    }

    pub fn code(self) -> u8 {
        match self {
            Self::Fnv1aBase64 => 0,
            Self::Fnv1aComposite1 => 1,
        }
    }

    /// The path component of shard `shard` of the index with repository id `index_id`.
    pub fn shard_component(self, index_id: &str, shard: u32) -> String {
        let h = fnv1a_64(format!("{shard}{index_id}").as_bytes());
        match self {
            Self::Fnv1aBase64 => {
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(h.to_be_bytes())
            }
            Self::Fnv1aComposite1 => {
                let mut s = String::with_capacity(15);
                s.push(URL_BASE64[(h >> 58) as usize] as char);
                for bit in (44..58).rev() {
                    s.push(if (h >> bit) & 1 == 1 { '1' } else { '0' });
                }
                s
            }
        }
    }
}

/// A shard directory relative to the bucket (or container) root, split in the part
/// inside the repository's base path and whether it lies outside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShardDirLocation {
    /// Relative to the repository root (the store's base path).
    InRepository(String),
    /// Relative to the bucket root, outside the base path (HASHED_PREFIX with a base path).
    InBucket(String),
}

/// Where OpenSearch puts shard `shard` of index `index_id` with `path_type`, for a
/// repository whose base path inside its bucket is `base_path` (`""` for an `fs`
/// repository or a bucket root).
pub fn shard_dir(
    path_type: ShardPathType,
    index_id: &str,
    shard: u32,
    base_path: &str,
) -> ShardDirLocation {
    let fixed = format!("indices/{index_id}/{shard}");
    let hash = || PathHashAlgorithm::Fnv1aComposite1.shard_component(index_id, shard);
    let base = base_path.trim_matches('/');
    match path_type {
        ShardPathType::Fixed => ShardDirLocation::InRepository(fixed),
        ShardPathType::HashedInfix => ShardDirLocation::InRepository(format!("{}/{fixed}", hash())),
        ShardPathType::HashedPrefix if base.is_empty() => {
            ShardDirLocation::InRepository(format!("{}/{fixed}", hash()))
        }
        ShardPathType::HashedPrefix => {
            ShardDirLocation::InBucket(format!("{}/{base}/{fixed}", hash()))
        }
    }
}

/// Maps a path recorded in a `snapshot_shard_paths` blob (relative to the bucket root,
/// with a trailing `/`) to a location, given the repository's base path.
pub fn locate_recorded(path: &str, base_path: &str) -> ShardDirLocation {
    let path = path.trim_matches('/');
    let base = base_path.trim_matches('/');
    if base.is_empty() {
        return ShardDirLocation::InRepository(path.to_string());
    }
    match path.strip_prefix(base).and_then(|r| r.strip_prefix('/')) {
        Some(rest) => ShardDirLocation::InRepository(rest.to_string()),
        None => ShardDirLocation::InBucket(path.to_string()),
    }
}

/// The name of a `snapshot_shard_paths` blob, split: `<index id>#<index name>#<shard
/// count>#<path type>#<hash algorithm>`. Some OpenSearch versions prefix the index id
/// with `snapshot_path_`.
///
/// The separator depends on the release: OpenSearch 2.17 and 2.18 write `.` between the
/// fields (`SnapshotShardPaths.DELIMITER = "."`, opensearch-project/OpenSearch
/// `server/src/main/java/org/opensearch/snapshots/SnapshotShardPaths.java` at commit
/// `0f95c88e3d7205e6832c16877eb075c75216cf9e`; PR #16617 made OpenSearch itself parse
/// such names from the end, as an index name may hold `.`), later releases `#` (the same
/// file at commit `3aa54e593c43b596dabc5f0734e10a0a8f1322d3`). Both are read: with `.`,
/// the index id (base 64, no `.`) is the first field and the last three are the numbers;
/// the name is what lies between.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardPathsName {
    pub index_id: String,
    pub index_name: String,
    pub shard_count: u32,
    pub path_type: ShardPathType,
    pub hash: PathHashAlgorithm,
    /// The listed name when it differs from [`ShardPathsName::blob_name`].
    pub listed: Option<String>,
}

impl ShardPathsName {
    /// Parses a blob name; `None` for names of another form.
    pub fn parse(blob: &str) -> Option<Self> {
        let parts: Vec<&str> = blob.split('#').collect();
        let (id, name, count, ty, hash) = match parts.as_slice() {
            [id, name, count, ty, hash] => (*id, *name, *count, *ty, *hash),
            [_] => {
                // `<id>.<name with dots>.<count>.<type>.<hash>` (OpenSearch 2.17–2.18).
                let mut tail = blob.rsplitn(4, '.');
                let hash = tail.next()?;
                let ty = tail.next()?;
                let count = tail.next()?;
                let (id, name) = tail.next()?.split_once('.')?;
                (id, name, count, ty, hash)
            }
            _ => return None,
        };
        let bare = id.strip_prefix("snapshot_path_").unwrap_or(id);
        if bare.is_empty() || name.is_empty() {
            return None;
        }
        let mut out = ShardPathsName {
            listed: None,
            index_id: bare.to_string(),
            index_name: name.to_string(),
            shard_count: count.parse().ok()?,
            path_type: ShardPathType::from_code(ty.parse().ok()?)?,
            hash: PathHashAlgorithm::from_code(hash.parse().ok()?)?,
        };
        if out.blob_name() != blob {
            out.listed = Some(blob.to_string());
        }
        Some(out)
    }

    /// The name as it was listed (with the `snapshot_path_` prefix when it had one).
    pub fn blob_name_as_listed(&self) -> String {
        match &self.listed {
            Some(n) => n.clone(),
            None => self.blob_name(),
        }
    }

    /// The blob name later OpenSearch releases write (fields separated by `#`).
    pub fn blob_name(&self) -> String {
        self.blob_name_with('#')
    }

    /// The blob name with `separator` between the fields (`.` for OpenSearch 2.17–2.18).
    pub fn blob_name_with(&self, separator: char) -> String {
        let s = separator;
        format!(
            "{}{s}{}{s}{}{s}{}{s}{}",
            self.index_id,
            self.index_name,
            self.shard_count,
            self.path_type.code(),
            self.hash.code()
        )
    }
}

/// The paths of a `snapshot_shard_paths` blob (plain JSON, no envelope), by shard number.
pub fn parse_recorded_paths(blob: &str, bytes: &[u8], index_id: &str) -> Result<Vec<String>> {
    let v: Value = serde_json::from_slice(bytes)
        .map_err(|e| Error::corrupt(blob, format!("shard paths are not JSON: {e}")))?;
    if let Some(id) = v.get("indexId").and_then(Value::as_str) {
        if id != index_id {
            return Err(Error::corrupt(
                blob,
                format!("lists the shard paths of index id {id}, expected {index_id}"),
            ));
        }
    }
    let paths = v
        .get("paths")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::corrupt(blob, "shard paths without a \"paths\" array"))?;
    paths
        .iter()
        .map(|p| {
            p.as_str()
                .map(str::to_string)
                .ok_or_else(|| Error::corrupt(blob, "a shard path is not a string"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Vectors from OpenSearch's own tests (RemoteStoreEnumsTests, read for the facts): index
    // id `dsdkjsu8832njn`, shard 10.
    #[test]
    fn hashes_match_opensearch() {
        assert_eq!(
            PathHashAlgorithm::Fnv1aComposite1.shard_component("dsdkjsu8832njn", 10),
            "_11001000010110"
        );
        assert_eq!(
            PathHashAlgorithm::Fnv1aBase64.shard_component("dsdkjsu8832njn", 10),
            "_yFiSl_VGGM"
        );
        let base = "xjsdhj/ddjsha/yudy7sd/32hdhua7/89jdij";
        assert_eq!(
            shard_dir(ShardPathType::Fixed, "dsdkjsu8832njn", 10, base),
            ShardDirLocation::InRepository("indices/dsdkjsu8832njn/10".into())
        );
        assert_eq!(
            shard_dir(ShardPathType::HashedPrefix, "dsdkjsu8832njn", 10, base),
            ShardDirLocation::InBucket(format!("_11001000010110/{base}/indices/dsdkjsu8832njn/10"))
        );
        assert_eq!(
            shard_dir(ShardPathType::HashedInfix, "dsdkjsu8832njn", 10, base),
            ShardDirLocation::InRepository("_11001000010110/indices/dsdkjsu8832njn/10".into())
        );
        assert_eq!(
            shard_dir(ShardPathType::HashedPrefix, "dsdkjsu8832njn", 10, ""),
            ShardDirLocation::InRepository("_11001000010110/indices/dsdkjsu8832njn/10".into())
        );
    }

    #[test]
    fn recorded_paths_and_names() {
        assert_eq!(
            locate_recorded("h/base/indices/x/0/", "base"),
            ShardDirLocation::InBucket("h/base/indices/x/0".into())
        );
        assert_eq!(
            locate_recorded("base/h/indices/x/0/", "base"),
            ShardDirLocation::InRepository("h/indices/x/0".into())
        );
        assert_eq!(
            locate_recorded("h/indices/x/0/", ""),
            ShardDirLocation::InRepository("h/indices/x/0".into())
        );
        let n = ShardPathsName::parse("snapshot_path_abc#logs#3#1#1").unwrap();
        assert_eq!(
            (n.index_id.as_str(), n.shard_count, n.path_type),
            ("abc", 3, ShardPathType::HashedPrefix)
        );
        assert_eq!(
            ShardPathsName::parse("abc#logs#3#2#1").unwrap().blob_name(),
            "abc#logs#3#2#1"
        );
        assert!(ShardPathsName::parse("abc#logs#3#7#1").is_none());
        assert!(ShardPathsName::parse("abc.logs.3.7.1").is_none());
        assert!(ShardPathsName::parse("abc.3.1.1").is_none());
        let paths = parse_recorded_paths(
            "p",
            br#"{"indexId":"abc","indexName":"logs","number_of_shards":1,"shard_path_type":1,"shard_path_hash_algorithm":1,"paths":["h/indices/abc/0/"]}"#,
            "abc",
        )
        .unwrap();
        assert_eq!(paths, vec!["h/indices/abc/0/"]);
        assert!(parse_recorded_paths("p", br#"{"indexId":"zz","paths":[]}"#, "abc").is_err());
        assert!(parse_recorded_paths("p", b"nope", "abc").is_err());
    }
}
