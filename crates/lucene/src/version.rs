//! Lucene release versions as recorded in commits and segment infos.

use std::fmt;

/// A Lucene release `major.minor.bugfix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LuceneVersion {
    pub major: u32,
    pub minor: u32,
    pub bugfix: u32,
}

impl LuceneVersion {
    pub const fn new(major: u32, minor: u32, bugfix: u32) -> Self {
        LuceneVersion {
            major,
            minor,
            bugfix,
        }
    }
}

impl fmt::Display for LuceneVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.bugfix)
    }
}
