//! `rfs copy --index` / `--exclude-index`: which groups of a source are copied (a
//! snapshot's or a live cluster's indices, JSON-lines files by their names, a table).
//! The source is opened as usual; its plan keeps only the items of the chosen groups, so
//! status and coverage count nothing of a group left out as missing. Each group left out
//! is logged with its reason when the copy starts and named again at its end. The
//! selection is part of the migration's identity (only when given: a copy without it
//! keeps the identity it had), so a worker with another selection is refused rather than
//! copying what the store's plan says.

use std::collections::BTreeMap;

use connectors::BoxedSource;
use coordination::{Cursor, WorkItem};
use engine::document::Read;
use engine::error::SourceError;
use engine::source::{Plan, Source};
use metadata::Allowlist;

/// The groups to copy: those `include` lists (all when empty), less those `exclude` lists.
pub struct Selection {
    include: Allowlist,
    exclude: Allowlist,
    include_text: Vec<String>,
    exclude_text: Vec<String>,
}

impl Selection {
    /// `--index` and `--exclude-index` as given (exact names, `*`/`?` wildcards,
    /// `regex:PATTERN`); `None` when both are empty.
    pub fn parse(include: &[String], exclude: &[String]) -> anyhow::Result<Option<Selection>> {
        if include.is_empty() && exclude.is_empty() {
            return Ok(None);
        }
        Ok(Some(Selection {
            include: Allowlist::parse(include).map_err(|e| anyhow::anyhow!("--index: {e}"))?,
            exclude: Allowlist::parse(exclude)
                .map_err(|e| anyhow::anyhow!("--exclude-index: {e}"))?,
            include_text: include.to_vec(),
            exclude_text: exclude.to_vec(),
        }))
    }

    /// Why `group` is left out, or `None` when it is copied.
    pub fn why_left_out(&self, group: &str) -> Option<&'static str> {
        if self.exclude.matches(group) {
            Some("excluded by --exclude-index")
        } else if !self.include.is_empty() && !self.include.matches(group) {
            Some("not named by --index")
        } else {
            None
        }
    }

    /// `source` (whose groups are `groups`) reduced to the chosen groups; its
    /// `left_out` adds the groups left out, each with why (`group: reason`). None chosen
    /// is an error naming the patterns.
    pub fn apply(self, source: BoxedSource, groups: &[String]) -> anyhow::Result<BoxedSource> {
        let left_out: Vec<String> = groups
            .iter()
            .filter_map(|g| self.why_left_out(g).map(|why| format!("{g}: {why}")))
            .collect();
        if !groups.is_empty() && left_out.len() == groups.len() {
            anyhow::bail!(
                "--index {:?} / --exclude-index {:?} leave none of the source's {} group(s) to copy ({})",
                self.include_text.join(","),
                self.exclude_text.join(","),
                groups.len(),
                shown(groups)
            );
        }
        for l in &left_out {
            tracing::warn!("left out of the copy: {l}");
        }
        Ok(BoxedSource::new(std::sync::Arc::new(Selected {
            inner: source,
            selection: self,
            left_out,
        })))
    }
}

/// At most ten names, then how many more.
fn shown(names: &[String]) -> String {
    let mut s = names
        .iter()
        .take(10)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > 10 {
        s.push_str(&format!(", … {} more", names.len() - 10));
    }
    s
}

/// A source read only in the groups its selection chooses.
struct Selected {
    inner: BoxedSource,
    selection: Selection,
    /// The source's groups the selection leaves out, each with why.
    left_out: Vec<String>,
}

impl Source for Selected {
    fn identity(&self) -> BTreeMap<String, String> {
        let mut id = self.inner.identity();
        if !self.selection.include_text.is_empty() {
            id.insert("index".into(), self.selection.include_text.join(","));
        }
        if !self.selection.exclude_text.is_empty() {
            id.insert(
                "exclude-index".into(),
                self.selection.exclude_text.join(","),
            );
        }
        id
    }

    fn plan(&self) -> Result<Plan, SourceError> {
        let mut plan = self.inner.plan()?;
        plan.items
            .retain(|i| self.selection.why_left_out(&i.group).is_none());
        let t = &mut plan.totals;
        t.groups
            .retain(|g, _| self.selection.why_left_out(g).is_none());
        t.docs = t.groups.values().map(|g| g.docs).sum();
        t.bytes = t.groups.values().map(|g| g.bytes).sum();
        t.items = plan.items.len();
        Ok(plan)
    }

    fn read(
        &self,
        item: &WorkItem,
        after: &Cursor,
        emit: &mut dyn FnMut(Read) -> bool,
    ) -> Result<(), SourceError> {
        self.inner.read(item, after, emit)
    }

    fn exact_totals(&self) -> bool {
        self.inner.exact_totals()
    }

    fn left_out(&self) -> Vec<String> {
        let mut l = self.inner.left_out();
        l.extend(self.left_out.iter().cloned());
        l
    }

    fn read_counting_nested(
        &self,
        item: &WorkItem,
        after: &Cursor,
        emit: &mut dyn FnMut(Read) -> bool,
        nested: &mut u64,
    ) -> Result<(), SourceError> {
        self.inner.read_counting_nested(item, after, emit, nested)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_chosen_by_index_and_exclude_index() {
        let s = Selection::parse(&["logs-*".into(), "books".into()], &["logs-old*".into()])
            .unwrap()
            .unwrap();
        assert_eq!(s.why_left_out("books"), None);
        assert_eq!(s.why_left_out("logs-2024"), None);
        assert_eq!(
            s.why_left_out("logs-old-1"),
            Some("excluded by --exclude-index")
        );
        assert_eq!(s.why_left_out("reviews"), Some("not named by --index"));
        let only_out = Selection::parse(&[], &["regex:re.*".into()])
            .unwrap()
            .unwrap();
        assert_eq!(only_out.why_left_out("books"), None);
        assert_eq!(
            only_out.why_left_out("reviews"),
            Some("excluded by --exclude-index")
        );
        assert!(Selection::parse(&[], &[]).unwrap().is_none());
    }
}
