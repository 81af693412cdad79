//! A connector's parameters: what a command's own flags (`--snapshot`, `--table`,
//! `--create-table`, …) and `--from-param`/`--to-param KEY=VALUE` say about one end, kept
//! apart from its URL (the URL stays exactly as given: a table's identity records it).
//! Each connector parses them once into its typed options and refuses a key it does not
//! take; the registry names the connector that takes it.

use std::str::FromStr;

use crate::ConnectError;

/// One `key=value`, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub key: String,
    pub value: String,
    /// The flag that gave it (`--create-table`), as errors name it; `None`: given as a
    /// parameter (`--to-param create-table=true`).
    pub flag: Option<String>,
    /// Offered to whichever connector takes it and left out for the others (a flag
    /// documented for one kind of source, such as copy's `--slices` for a live
    /// cluster); else refused by a connector that does not take it.
    pub offered: bool,
}

/// The parameters of one end, in the order given; a key given again replaces the
/// earlier value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params {
    list: Vec<Param>,
}

impl Params {
    pub fn new() -> Self {
        Params::default()
    }

    fn put(&mut self, p: Param) {
        match self.list.iter_mut().find(|q| q.key == p.key) {
            Some(q) => *q = p,
            None => self.list.push(p),
        }
    }

    /// `key=value`, refused by a connector that does not take it.
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.put(Param {
            key: key.into(),
            value: value.into(),
            flag: None,
            offered: false,
        });
        self
    }

    /// `key=value` from `flag`, refused (naming the flag) by a connector that does not
    /// take it.
    pub fn set_by(&mut self, flag: &str, key: &str, value: impl Into<String>) -> &mut Self {
        self.put(Param {
            key: key.into(),
            value: value.into(),
            flag: Some(flag.into()),
            offered: false,
        });
        self
    }

    /// `key=value` from `flag`, for whichever connector takes it (left out for the others).
    pub fn offer(&mut self, flag: &str, key: &str, value: impl Into<String>) -> &mut Self {
        self.put(Param {
            key: key.into(),
            value: value.into(),
            flag: Some(flag.into()),
            offered: true,
        });
        self
    }

    /// `self` with `key=value` (see [`Params::set`]).
    pub fn with(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.set(key, value);
        self
    }

    pub fn iter(&self) -> impl Iterator<Item = &Param> {
        self.list.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.list
            .iter()
            .find(|p| p.key == key)
            .map(|p| p.value.as_str())
    }

    /// How errors name `key`: its flag, else `key`.
    pub fn shown(&self, key: &str) -> String {
        match self.list.iter().find(|p| p.key == key) {
            Some(Param { flag: Some(f), .. }) => f.clone(),
            _ => key.to_string(),
        }
    }

    /// Only the parameters whose keys are in `known` (what the registry passes a
    /// connector once the others are refused or left out).
    pub(crate) fn only(&self, known: &[&str]) -> Params {
        Params {
            list: self
                .list
                .iter()
                .filter(|p| known.contains(&p.key.as_str()))
                .cloned()
                .collect(),
        }
    }

    /// An error naming the first key not in `known`: the `connector` does not take it.
    pub fn refuse_unknown(&self, connector: &str, known: &[&str]) -> Result<(), ConnectError> {
        match self.list.iter().find(|p| !known.contains(&p.key.as_str())) {
            None => Ok(()),
            Some(p) => Err(ConnectError::message(format!(
                "{}: the {connector} connector takes no such parameter ({})",
                self.shown(&p.key),
                takes(known)
            ))),
        }
    }

    /// `key`'s value parsed, or an error naming it and what it must be.
    pub fn parsed<T: FromStr>(&self, key: &str, what: &str) -> Result<Option<T>, ConnectError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| self.bad(key, v, what)),
        }
    }

    /// `key` as `true` or `false` (absent: `None`).
    pub fn flag(&self, key: &str) -> Result<Option<bool>, ConnectError> {
        self.parsed(key, "true or false")
    }

    /// The error for `key`'s `value`, which should be `what`.
    pub fn bad(&self, key: &str, value: &str, what: &str) -> ConnectError {
        ConnectError::message(format!("{} {value}: {what}", self.shown(key)))
    }
}

/// `(it takes a, b, c)`, or that it takes none.
pub(crate) fn takes(known: &[&str]) -> String {
    if known.is_empty() {
        "it takes none".to_string()
    } else {
        format!("it takes {}", known.join(", "))
    }
}

/// `KEY=VALUE` (`--from-param`, `--to-param`): a non-empty key without `=`.
pub fn parse_pair(s: &str) -> Result<(String, String), ConnectError> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(ConnectError::message(format!("{s:?}: expected KEY=VALUE"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_values_win_and_errors_name_the_flag() {
        let mut p = Params::new();
        p.set("slots", "4").set_by("--slots", "slots", "8");
        p.set("table", "t");
        assert_eq!(p.get("slots"), Some("8"));
        assert_eq!(p.iter().count(), 2);
        assert_eq!(p.parsed::<u32>("slots", "a number").unwrap(), Some(8));
        let e = p
            .parsed::<u32>("table", "a number")
            .unwrap_err()
            .to_string();
        assert_eq!(e, "table t: a number");
        let e = p
            .refuse_unknown("files", &["format"])
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "--slots: the files connector takes no such parameter (it takes format)"
        );
        assert!(p.refuse_unknown("table", &["slots", "table"]).is_ok());
        assert_eq!(p.only(&["table"]).iter().count(), 1);
        assert_eq!(
            parse_pair("a=b=c").unwrap(),
            ("a".to_string(), "b=c".to_string())
        );
        assert!(parse_pair("=x").is_err() && parse_pair("novalue").is_err());
    }
}
