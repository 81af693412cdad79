//! Target index names: `OLD=NEW` renames, then a prefix and a suffix. The metadata plan
//! names the indices it creates with them, and the document transforms send each document
//! to the same names.

use std::collections::BTreeMap;

/// Why an `OLD=NEW` rename is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenameError {
    #[error("rename {0:?}: expected OLD=NEW")]
    Shape(String),
    #[error("index {0} is renamed twice")]
    Twice(String),
}

/// Target index names: exact renames first, then a prefix and a suffix for every name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Naming {
    pub renames: BTreeMap<String, String>,
    pub prefix: String,
    pub suffix: String,
}

impl Naming {
    /// Parses `OLD=NEW` renames.
    pub fn parse_renames(pairs: &[String]) -> Result<BTreeMap<String, String>, RenameError> {
        let mut out = BTreeMap::new();
        for p in pairs {
            let (old, new) = p
                .split_once('=')
                .filter(|(o, n)| !o.is_empty() && !n.is_empty())
                .ok_or_else(|| RenameError::Shape(p.clone()))?;
            if out.insert(old.to_string(), new.to_string()).is_some() {
                return Err(RenameError::Twice(old.to_string()));
            }
        }
        Ok(out)
    }

    /// The target name of `name`.
    pub fn target(&self, name: &str) -> String {
        let base = self.renames.get(name).map_or(name, String::as_str);
        format!("{}{base}{}", self.prefix, self.suffix)
    }

    pub fn is_identity(&self) -> bool {
        self.renames.is_empty() && self.prefix.is_empty() && self.suffix.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn naming_renames_then_affixes() {
        let n = Naming {
            renames: Naming::parse_renames(&["logs=events".into()]).unwrap(),
            prefix: "new-".into(),
            suffix: "-v2".into(),
        };
        assert_eq!(n.target("logs"), "new-events-v2");
        assert_eq!(n.target("other"), "new-other-v2");
        assert!(Naming::parse_renames(&["x".into()]).is_err());
        assert!(Naming::parse_renames(&["a=b".into(), "a=c".into()]).is_err());
        assert!(Naming::parse_renames(&["=b".into()]).is_err());
    }
}
