//! Which indices and templates are migrated: allowlists of exact names, `*`/`?` wildcards
//! and regular expressions, and the default exclusion of system and dot-prefixed names.
//! Every command's `--index` is such a list, so it means the same everywhere.

use regex::Regex;

use super::MetadataError;

/// Exact names, wildcard patterns and anchored regular expressions. An empty allowlist
/// allows every non-system name; a non-empty one allows exactly what it matches (system
/// names too).
#[derive(Debug, Clone, Default)]
pub struct Allowlist {
    exact: Vec<String>,
    /// Entries holding `*` or `?` (which no index or template name can hold).
    wildcards: Vec<String>,
    patterns: Vec<Regex>,
}

impl Allowlist {
    /// Parses entries: `regex:PATTERN` (or `/PATTERN/`) is a regular expression that must
    /// match the whole name; an entry with `*` or `?` is a wildcard pattern
    /// ([`crate::wildcard`]); anything else is an exact name.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Self, MetadataError> {
        let mut list = Allowlist::default();
        for entry in entries {
            let entry = entry.as_ref().trim();
            if entry.is_empty() {
                continue;
            }
            let pattern = entry.strip_prefix("regex:").or_else(|| {
                entry
                    .strip_prefix('/')
                    .and_then(|e| e.strip_suffix('/'))
                    .filter(|p| !p.is_empty())
            });
            match pattern {
                Some(p) => {
                    let re = Regex::new(&format!("^(?:{p})$")).map_err(|e| {
                        MetadataError::Options(format!("allowlist regex `{p}`: {e}"))
                    })?;
                    list.patterns.push(re);
                }
                None if entry.contains(['*', '?']) => list.wildcards.push(entry.to_string()),
                None => list.exact.push(entry.to_string()),
            }
        }
        Ok(list)
    }

    pub fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.wildcards.is_empty() && self.patterns.is_empty()
    }

    /// Whether `name` is listed (exactly, by a wildcard or by a regular expression).
    pub fn matches(&self, name: &str) -> bool {
        self.exact.iter().any(|e| e == name)
            || self
                .wildcards
                .iter()
                .any(|w| crate::wildcard::matches(w, name))
            || self.patterns.iter().any(|p| p.is_match(name))
    }
}

/// The outcome of filtering one name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Include(&'static str),
    Exclude(&'static str),
}

/// Built-in templates of Elasticsearch (X-Pack, Beats/Logstash, data-stream defaults) that
/// carry no user data and would clash with the target's own.
const SYSTEM_TEMPLATE_NAMES: &[&str] = &[
    "security-index-template",
    "security_audit_log",
    "watches",
    "triggered_watches",
    "logstash-index-template",
    "ilm-history",
    "slm-history",
    "logs",
    "metrics",
    "synthetics",
    "logs-mappings",
    "logs-settings",
    "metrics-mappings",
    "metrics-settings",
    "synthetics-mappings",
    "synthetics-settings",
    "kibana_index_template",
];

/// Whether an index name is a system or hidden index by naming convention.
pub fn is_system_index(name: &str) -> bool {
    name.starts_with('.')
}

/// Whether a template name belongs to the source cluster's own machinery.
pub fn is_system_template(name: &str) -> bool {
    name.starts_with('.') || SYSTEM_TEMPLATE_NAMES.contains(&name)
}

/// Applies an allowlist and the system-name rule.
pub fn decide(list: &Allowlist, name: &str, system: bool) -> Decision {
    if list.is_empty() {
        if system {
            Decision::Exclude(
                "system or dot-prefixed name (list it in the allowlist to include it)",
            )
        } else {
            Decision::Include("no allowlist given")
        }
    } else if list.matches(name) {
        Decision::Include("in the allowlist")
    } else {
        Decision::Exclude("not in the allowlist")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_and_regex() {
        let l = Allowlist::parse(&["posts", "regex:logs-\\d+", "/a.c/", ""]).unwrap();
        assert!(l.matches("posts"));
        assert!(!l.matches("posts2"));
        assert!(l.matches("logs-2024"));
        assert!(!l.matches("xlogs-2024"), "patterns are anchored");
        assert!(l.matches("abc"));
        assert!(!l.matches("abcd"));
        assert!(Allowlist::parse(&["regex:("]).is_err());
        let w = Allowlist::parse(&["logs-*", "p?sts"]).unwrap();
        assert!(w.matches("logs-2024") && w.matches("posts") && w.matches("pasts"));
        assert!(!w.matches("logs") && !w.matches("metrics") && !w.matches("ppsts2"));
    }

    #[test]
    fn system_names_excluded_unless_listed() {
        let empty = Allowlist::default();
        assert!(matches!(
            decide(&empty, ".kibana", true),
            Decision::Exclude(_)
        ));
        assert!(matches!(
            decide(&empty, "posts", false),
            Decision::Include(_)
        ));
        let l = Allowlist::parse(&[".kibana"]).unwrap();
        assert!(matches!(decide(&l, ".kibana", true), Decision::Include(_)));
        assert!(matches!(decide(&l, "posts", false), Decision::Exclude(_)));
        assert!(is_system_template("logs-settings"));
        assert!(is_system_template(".ml-meta"));
        assert!(!is_system_template("posts_index_template"));
        assert!(is_system_index(".ds-logs-000001"));
    }
}
