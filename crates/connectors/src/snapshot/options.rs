//! The snapshot source's typed options, parsed once from its URL's `#snapshot=` and its
//! parameters.

use super::source::SnapshotOptions;
use crate::{ConnectError, Context, Params};

/// The parameters a snapshot source takes.
pub(super) const PARAMS: &[&str] = &[
    "snapshot",
    "since",
    "any-state",
    "split-docs",
    "verify-checksums",
    "rebuild-source",
    "allow-partial-source",
    "prefer-recovery-source",
];

/// A snapshot source's options.
#[derive(Debug, Clone)]
pub(super) struct Options {
    /// The snapshot read (`snapshot=`; the URL's `#snapshot=` wins).
    pub snapshot: Option<String>,
    /// A delta: only what changed since this earlier snapshot (`since=`).
    pub since: Option<String>,
    /// Read the snapshot whatever its state (`any-state=true`: shards are checked one by
    /// one); default: only a restorable one.
    pub any_state: bool,
    pub read: SnapshotOptions,
}

impl Options {
    /// `params` (any other key refused) with the URL's `#snapshot=` fragment over
    /// `snapshot=`.
    pub fn parse(url: &str, params: &Params, _ctx: &Context) -> Result<Self, ConnectError> {
        params.refuse_unknown("snapshot", PARAMS)?;
        let fragment = super::without_snapshot(url).1;
        let from_url = crate::split_query(&format!("x#{fragment}"))
            .1
            .into_iter()
            .find(|(k, _)| k == "snapshot")
            .map(|(_, v)| v);
        let rebuild = snapshot::RebuildOptions {
            mode: match params.get("rebuild-source") {
                None | Some("auto") => snapshot::RebuildMode::Auto,
                Some("off") => snapshot::RebuildMode::Off,
                Some(v) => return Err(params.bad("rebuild-source", v, "auto or off")),
            },
            allow_partial: params.flag("allow-partial-source")?.unwrap_or(false),
            prefer_recovery_source: params.flag("prefer-recovery-source")?.unwrap_or(false),
        };
        Ok(Options {
            snapshot: from_url.or_else(|| params.get("snapshot").map(str::to_string)),
            since: params.get("since").map(str::to_string),
            any_state: params.flag("any-state")?.unwrap_or(false),
            read: SnapshotOptions {
                split_docs: params.parsed("split-docs", "a whole number of documents")?,
                verify_checksums: params.flag("verify-checksums")?.unwrap_or(false),
                rebuild,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fragment_wins_and_unknown_keys_are_refused() {
        let ctx = Context::default();
        let p = Params::new()
            .with("snapshot", "s2")
            .with("since", "s0")
            .with("split-docs", "1000")
            .with("verify-checksums", "true")
            .with("rebuild-source", "off");
        let o = Options::parse("/repo#snapshot=s1", &p, &ctx).unwrap();
        assert_eq!(o.snapshot.as_deref(), Some("s1"));
        assert_eq!(o.since.as_deref(), Some("s0"));
        assert_eq!(o.read.split_docs, Some(1000));
        assert!(o.read.verify_checksums && !o.any_state);
        assert_eq!(o.read.rebuild.mode, snapshot::RebuildMode::Off);
        let o = Options::parse("/repo", &p, &ctx).unwrap();
        assert_eq!(o.snapshot.as_deref(), Some("s2"));
        let e = Options::parse("/repo", &Params::new().with("slices", "2"), &ctx)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("slices: the snapshot connector takes no such parameter"),
            "{e}"
        );
        let e = Options::parse("/repo", &Params::new().with("split-docs", "x"), &ctx)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "split-docs x: a whole number of documents");
    }
}
