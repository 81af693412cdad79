//! The report of a metadata migration: one item per template or index, with the action
//! taken (or that would be taken), why, and every transformation applied.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use super::convert::Conversion;
use super::ProductVersion;

/// Transformations applied to one item, warnings about it, and what blocks it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Notes {
    pub transformations: Vec<String>,
    pub warnings: Vec<String>,
    /// What cannot be converted for the target: the item is [`Action::Blocked`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blockers: Vec<String>,
    /// Every conversion of a field type, parameter or setting, with the definition before
    /// and after (also summarized in the three lists above).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conversions: Vec<Conversion>,
}

impl Notes {
    pub fn change(&mut self, what: impl Into<String>) {
        self.transformations.push(what.into());
    }

    pub fn warn(&mut self, what: impl Into<String>) {
        let what = what.into();
        tracing::debug!("{what}");
        self.warnings.push(what);
    }

    /// Something the target cannot hold: nothing is created while it stands.
    pub fn block(&mut self, what: impl Into<String>) {
        self.blockers.push(what.into());
    }

    pub fn blocked(&self) -> bool {
        !self.blockers.is_empty()
    }

    pub fn extend(&mut self, other: Notes) {
        self.transformations.extend(other.transformations);
        self.warnings.extend(other.warnings);
        self.blockers.extend(other.blockers);
        self.conversions.extend(other.conversions);
    }
}

/// What kind of object an item is, in creation order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MetadataKind {
    LegacyTemplate,
    ComponentTemplate,
    IndexTemplate,
    /// A data stream (created from its index template; documents written with `create`).
    DataStream,
    Index,
}

impl MetadataKind {
    pub fn label(self) -> &'static str {
        match self {
            MetadataKind::LegacyTemplate => "legacy template",
            MetadataKind::ComponentTemplate => "component template",
            MetadataKind::IndexTemplate => "index template",
            MetadataKind::DataStream => "data stream",
            MetadataKind::Index => "index",
        }
    }
}

/// What happens to an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// Created on the target (or would be, when evaluating).
    Create,
    /// Already on the target: left untouched.
    SkipExists,
    /// Not selected by the allowlists or a system name.
    SkipExcluded,
    /// The target cannot hold it (e.g. component templates on ES 6).
    SkipUnsupported,
    /// It could not be transformed or the target refused it.
    Error,
    /// It uses what the target cannot hold (see the blockers): `migrate` creates nothing
    /// while any item is blocked.
    Blocked,
}

impl Action {
    pub fn label(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::SkipExists => "skip-exists",
            Action::SkipExcluded => "skip-excluded",
            Action::SkipUnsupported => "skip-unsupported",
            Action::Error => "error",
            Action::Blocked => "BLOCKED",
        }
    }
}

/// Whether the item was only planned or actually carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// `evaluate`, or `migrate` for an item that needs no request.
    Planned,
    /// `migrate` created it.
    Created,
    /// `migrate` tried and the target refused it (see the reasons).
    Failed,
}

/// One template or index.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetadataItem {
    pub kind: MetadataKind,
    /// Name on the target.
    pub name: String,
    /// Name in the snapshot when it differs (an index split per mapping type).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_name: Option<String>,
    pub action: Action,
    pub outcome: Outcome,
    pub reasons: Vec<String>,
    #[serde(flatten)]
    pub notes: Notes,
    /// The request body sent (or that would be sent) to create it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
}

impl MetadataItem {
    pub fn new(
        kind: MetadataKind,
        name: impl Into<String>,
        action: Action,
        reason: impl Into<String>,
    ) -> Self {
        MetadataItem {
            kind,
            name: name.into(),
            source_name: None,
            action,
            outcome: Outcome::Planned,
            reasons: vec![reason.into()],
            notes: Notes::default(),
            body: None,
        }
    }
}

/// Counts by action.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub create: usize,
    pub skip_exists: usize,
    pub skip_excluded: usize,
    pub skip_unsupported: usize,
    pub error: usize,
    pub blocked: usize,
}

/// The whole plan (evaluate) or the result (migrate).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// `evaluate` or `migrate`.
    pub mode: &'static str,
    pub source_version: Option<ProductVersion>,
    pub target_version: ProductVersion,
    pub items: Vec<MetadataItem>,
}

impl Report {
    pub fn summary(&self) -> Summary {
        let mut s = Summary::default();
        for i in &self.items {
            match i.action {
                Action::Create => s.create += 1,
                Action::SkipExists => s.skip_exists += 1,
                Action::SkipExcluded => s.skip_excluded += 1,
                Action::SkipUnsupported => s.skip_unsupported += 1,
                Action::Error => s.error += 1,
                Action::Blocked => s.blocked += 1,
            }
        }
        s
    }

    pub fn has_errors(&self) -> bool {
        self.items
            .iter()
            .any(|i| matches!(i.action, Action::Error | Action::Blocked))
    }

    /// Whether an item is blocked by something the target cannot hold.
    pub fn is_blocked(&self) -> bool {
        self.items.iter().any(|i| i.action == Action::Blocked)
    }

    /// Items of one kind and action, by target name.
    pub fn names(&self, kind: MetadataKind, action: Action) -> Vec<&str> {
        self.items
            .iter()
            .filter(|i| i.kind == kind && i.action == action)
            .map(|i| i.name.as_str())
            .collect()
    }

    /// JSON with a summary; bodies included.
    pub fn to_json(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(m) = &mut v {
            m.insert(
                "summary".into(),
                serde_json::to_value(self.summary()).unwrap_or(Value::Null),
            );
        }
        v
    }

    /// A table for people: one line per item, then its reasons, transformations and warnings.
    pub fn to_table(&self) -> String {
        let mut out = String::new();
        let source = self
            .source_version
            .map(|v| v.to_string())
            .unwrap_or_else(|| "unknown version".into());
        let _ = writeln!(
            out,
            "metadata {}: snapshot ({source}) → target ({})",
            self.mode, self.target_version
        );
        let kind_w = self
            .items
            .iter()
            .map(|i| i.kind.label().len())
            .max()
            .unwrap_or(4)
            .max(4);
        let name_w = self
            .items
            .iter()
            .map(|i| i.name.len())
            .max()
            .unwrap_or(4)
            .max(4);
        let _ = writeln!(
            out,
            "{:<kind_w$}  {:<name_w$}  {:<16}  OUTCOME",
            "KIND", "NAME", "ACTION"
        );
        for i in &self.items {
            let outcome = match i.outcome {
                Outcome::Planned => "planned",
                Outcome::Created => "created",
                Outcome::Failed => "failed",
            };
            let _ = writeln!(
                out,
                "{:<kind_w$}  {:<name_w$}  {:<16}  {outcome}",
                i.kind.label(),
                i.name,
                i.action.label()
            );
            if let Some(src) = &i.source_name {
                let _ = writeln!(out, "    from {src}");
            }
            for r in &i.reasons {
                let _ = writeln!(out, "    why: {r}");
            }
            for t in &i.notes.transformations {
                let _ = writeln!(out, "    change: {t}");
            }
            for w in &i.notes.warnings {
                let _ = writeln!(out, "    warning: {w}");
            }
            for b in &i.notes.blockers {
                let _ = writeln!(out, "    BLOCKING: {b}");
            }
            write_conversions(&mut out, &i.notes.conversions);
        }
        let s = self.summary();
        let _ = writeln!(
            out,
            "{} to create, {} existing, {} excluded, {} unsupported, {} errors, {} blocked",
            s.create, s.skip_exists, s.skip_excluded, s.skip_unsupported, s.error, s.blocked
        );
        if s.blocked > 0 {
            let _ = writeln!(
                out,
                "nothing is created while an item is BLOCKED: change the source mapping, or leave those indices and templates out (--index, --index-template, …)"
            );
        }
        out
    }
}

/// Each conversion with its definition before and after, for people.
pub fn write_conversions(out: &mut String, conversions: &[Conversion]) {
    for c in conversions {
        let _ = writeln!(out, "    convert [{}] {}:", c.rule, c.path);
        let _ = writeln!(out, "      before: {}", c.before);
        if c.after.is_null() {
            let _ = writeln!(out, "      after:  (removed)");
        } else {
            let _ = writeln!(out, "      after:  {}", c.after);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_table_and_json() {
        let mut a = MetadataItem::new(
            MetadataKind::Index,
            "posts",
            Action::Create,
            "not on the target",
        );
        a.notes.change("internal settings removed: index.uuid");
        a.notes.warnings.push("mapping type dropped".into());
        let b = MetadataItem::new(
            MetadataKind::LegacyTemplate,
            ".ml-meta",
            Action::SkipExcluded,
            "system",
        );
        let r = Report {
            mode: "evaluate",
            source_version: Some(ProductVersion::es(6, 8)),
            target_version: ProductVersion::os(3, 8),
            items: vec![b, a],
        };
        let s = r.summary();
        assert_eq!((s.create, s.skip_excluded, s.error), (1, 1, 0));
        let t = r.to_table();
        assert!(t.contains("Elasticsearch 6.8"), "{t}");
        assert!(t.contains("posts"));
        assert!(t.contains("change: internal settings removed: index.uuid"));
        assert!(t.contains("1 to create, 0 existing, 1 excluded"));
        let j = r.to_json();
        assert_eq!(j["items"][1]["action"], "create");
        assert_eq!(j["items"][0]["kind"], "legacy_template");
        assert_eq!(
            j["items"][1]["transformations"][0],
            "internal settings removed: index.uuid"
        );
        assert_eq!(j["summary"]["skip_excluded"], 1);
        assert_eq!(r.names(MetadataKind::Index, Action::Create), vec!["posts"]);
    }
}
