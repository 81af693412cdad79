//! Connector-specific flags as connector parameters: one table, flag → parameter. The
//! flags stay clap fields (their names, environment variables, help texts and range
//! checks as they are); what they say reaches a connector only as a [`connectors::Params`]
//! entry, so the binary names no connector's option type. A new connector's flag is one
//! row here; any connector's parameter can also be given as `--from-param KEY=VALUE` /
//! `--to-param KEY=VALUE` (`rfs copy`).

use connectors::Params;

/// One flag and the parameter it gives.
pub struct Row {
    pub flag: &'static str,
    pub param: &'static str,
    /// Given to whichever connector takes it and left out for the others (a flag that
    /// its help text says applies to one kind of source, such as copy's `--slices`);
    /// else a connector that does not take it refuses it, naming the flag.
    pub offered: bool,
}

const fn row(flag: &'static str, param: &'static str, offered: bool) -> Row {
    Row {
        flag,
        param,
        offered,
    }
}

/// Every connector-specific flag of every command.
pub const ROWS: &[Row] = &[
    // Snapshot sources.
    row("--snapshot", "snapshot", true),
    row("--since", "since", true),
    row("--split-docs", "split-docs", true),
    row("--no-verify-checksums", "verify-checksums", true),
    row("--rebuild-source", "rebuild-source", true),
    row("--allow-partial-source", "allow-partial-source", true),
    row("--prefer-recovery-source", "prefer-recovery-source", true),
    // JSON-lines sources.
    row("--item-bytes", "item-bytes", true),
    // Live-cluster sources.
    row("--slices", "slices", true),
    // Table sources (`rfs table`).
    row("--table", "table", false),
    row("--key", "key", false),
    row("--slots", "slots", false),
    row("--slot-by", "slot-by", false),
    row("--from", "from", false),
    row("--until", "until", false),
    row("--order", "order", false),
    row("--page-rows", "page-rows", false),
    row("--statement-timeout", "statement-timeout", false),
    row("--source-attempts", "source-attempts", false),
    row("--columns", "columns", false),
    row("--where", "where", false),
    // DynamoDB sinks.
    row("--create-table", "create-table", false),
    row("--partition-key", "partition-key", false),
    row("--sort-key", "sort-key", false),
    // Files sinks.
    row("--format", "format", false),
];

/// `flag`'s parameter with `value` put in `params` (as its row says).
pub fn put(params: &mut Params, flag: &str, value: impl ToString) {
    let Some(r) = ROWS.iter().find(|r| r.flag == flag) else {
        // A flag without a row is a bug of the binary, caught by the tests below.
        debug_assert!(false, "{flag} has no row in args::params::ROWS");
        return;
    };
    if r.offered {
        params.offer(r.flag, r.param, value.to_string());
    } else {
        params.set_by(r.flag, r.param, value.to_string());
    }
}

/// `flag`'s parameter when `value` is given.
pub fn put_some(params: &mut Params, flag: &str, value: Option<impl ToString>) {
    if let Some(v) = value {
        put(params, flag, v);
    }
}

/// `flag`'s parameter (`true`) when set.
pub fn put_set(params: &mut Params, flag: &str, set: bool) {
    if set {
        put(params, flag, true);
    }
}

/// `--from-param`/`--to-param` values (`KEY=VALUE`, each already checked by the parser)
/// put in `params`, after the flags: a parameter given both ways takes this value.
pub fn put_pairs(params: &mut Params, pairs: &[(String, String)]) {
    for (k, v) in pairs {
        params.set(k.clone(), v.clone());
    }
}

/// The value parser of `--from-param` / `--to-param`.
pub fn param_pair(s: &str) -> Result<(String, String), String> {
    connectors::parse_pair(s).map_err(|e| e.to_string())
}

/// `--columns` as the table's `columns` parameter (`id,title,body=text`).
pub fn columns(columns: &[(String, String)]) -> Option<String> {
    (!columns.is_empty()).then(|| {
        columns
            .iter()
            .map(|(c, n)| {
                if c == n {
                    c.clone()
                } else {
                    format!("{c}={n}")
                }
            })
            .collect::<Vec<_>>()
            .join(",")
    })
}

/// `--slot-by` as the table's `slot-by` parameter (`time:WIDTH`, the largest unit that
/// divides the width); `None` for a slot count.
pub fn slot_by(rule: Option<table::SlotRule>) -> Option<String> {
    match rule? {
        table::SlotRule::Time { width_ms } => {
            let (n, unit) = [(86_400_000, "d"), (3_600_000, "h"), (60_000, "m")]
                .into_iter()
                .find(|(u, _)| width_ms % u == 0)
                .map_or((width_ms / 1000, "s"), |(u, unit)| (width_ms / u, unit));
            Some(format!("time:{n}{unit}"))
        }
        table::SlotRule::Count(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_names_a_flag_once() {
        let mut flags: Vec<&str> = ROWS.iter().map(|r| r.flag).collect();
        flags.sort();
        let n = flags.len();
        flags.dedup();
        assert_eq!(flags.len(), n, "a flag with two rows");
        assert!(ROWS
            .iter()
            .all(|r| r.flag.starts_with("--") && !r.param.is_empty()));
    }

    #[test]
    fn values_render_back_as_the_connectors_parse_them() {
        for (s, back) in [
            ("time:1h", "time:1h"),
            ("time:90m", "time:90m"),
            ("time:3650d", "time:3650d"),
            ("time:120s", "time:2m"),
            ("time:7s", "time:7s"),
        ] {
            let rule = table::SlotRule::parse_time(s).unwrap();
            let shown = slot_by(Some(rule)).unwrap();
            assert_eq!(shown, back);
            assert_eq!(table::SlotRule::parse_time(&shown).unwrap(), rule);
        }
        assert_eq!(
            columns(&[("id".into(), "id".into()), ("body".into(), "text".into())]).as_deref(),
            Some("id,body=text")
        );
        let mut p = Params::new();
        put(&mut p, "--slices", 8);
        put(&mut p, "--create-table", true);
        put_pairs(&mut p, &[("slices".into(), "2".into())]);
        assert_eq!(p.get("slices"), Some("2"));
        assert_eq!(p.shown("create-table"), "--create-table");
        assert_eq!(
            param_pair("k=v").unwrap(),
            ("k".to_string(), "v".to_string())
        );
        assert!(param_pair("k").is_err());
    }
}
