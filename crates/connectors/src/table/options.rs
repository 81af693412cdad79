//! The table source's typed options: the URL's `table=`, `key=` and `slots=` (taken out of
//! the connection URL) over its parameters, parsed once into [`TableConnectOptions`].

use std::time::Duration;

use table::{SlotRule, TableOptions};

use super::source::TableSourceOptions;
use crate::{split_query, ConnectError, Context, Params};

/// The parameters a table source takes (the URL's own `table=`, `key=`, `slots=` win).
pub(super) const PARAMS: &[&str] = &[
    "table",
    "key",
    "slots",
    "slot-by",
    "from",
    "until",
    "order",
    "page-rows",
    "statement-timeout",
    "source-attempts",
    "columns",
    "where",
];

/// A table source's options, from its URL and parameters.
#[derive(Debug, Clone)]
pub struct TableConnectOptions {
    /// The connection URL without our parameters (exactly as given when it has none: the
    /// table's identity records it).
    pub conn: String,
    pub table: String,
    pub key: String,
    pub connection: TableOptions,
    pub read: TableSourceOptions,
}

impl TableConnectOptions {
    /// `url`'s `table=`, `key=` and `slots=` (taken out of the connection URL) over
    /// `params` (any other key refused); the connection pool from the context's
    /// parallelism (plus 2).
    pub fn parse(url: &str, params: &Params, ctx: &Context) -> Result<Self, ConnectError> {
        params.refuse_unknown("table", PARAMS)?;
        let (conn, table, key, slots) = split(url, params)?;
        let need = |what: &str| {
            ConnectError::new(
                url,
                format!("a table source needs {what}= in the URL's query"),
            )
        };
        let defaults = TableOptions::default();
        let number = |k: &str, lo: u64, hi: u64| -> Result<Option<u64>, ConnectError> {
            let what = format!("a number from {lo} to {hi}");
            match params.parsed::<u64>(k, &what)? {
                Some(n) if !(lo..=hi).contains(&n) => Err(params.bad(k, &n.to_string(), &what)),
                n => Ok(n),
            }
        };
        let filter = params.get("where").map(str::to_string);
        if let Some(w) = &filter {
            let shown = params.shown("where");
            if w.trim().is_empty() {
                return Err(ConnectError::message(format!("{shown} is empty")));
            }
            if w.contains(';') {
                return Err(ConnectError::message(format!(
                    "{shown} holds one predicate, without `;`"
                )));
            }
        }
        let rule =
            match params.get("slot-by") {
                Some(v) => Some(SlotRule::parse_time(v).map_err(|e| {
                    ConnectError::message(format!("{}: {e}", params.shown("slot-by")))
                })?),
                None => None,
            };
        let newest_first = match params.get("order") {
            None | Some("oldest-first") => false,
            Some("newest-first") => true,
            Some(v) => return Err(params.bad("order", v, "oldest-first or newest-first")),
        };
        let page_rows = number("page-rows", 1, 100_000)?.map_or(defaults.page_rows, |n| n as u32);
        let connection = TableOptions {
            page_rows,
            statement_timeout: number("statement-timeout", 1, 86_400)?
                .map_or(defaults.statement_timeout, Duration::from_secs),
            attempts: number("source-attempts", 1, 1000)?.map_or(defaults.attempts, |n| n as usize),
            pool_size: if ctx.parallel == 0 {
                defaults.pool_size
            } else {
                ctx.parallel + 2
            },
            columns: params.get("columns").map(columns).unwrap_or_default(),
            filter,
            ..defaults
        };
        Ok(TableConnectOptions {
            conn,
            table: table.ok_or_else(|| need("table"))?,
            key: key.ok_or_else(|| need("key"))?,
            connection,
            read: TableSourceOptions {
                rule: rule.unwrap_or(SlotRule::Count(slots.unwrap_or(64))),
                from: params.get("from").map(str::to_string),
                until: params.get("until").map(str::to_string),
                page_rows,
                newest_first,
            },
        })
    }
}

/// `columns=id,title,body=text`: each `COLUMN` or `COLUMN=NAME`.
fn columns(v: &str) -> Vec<(String, String)> {
    v.split(',')
        .filter(|c| !c.trim().is_empty())
        .map(|c| {
            let (col, name) = c.split_once('=').unwrap_or((c, c));
            (col.trim().to_string(), name.trim().to_string())
        })
        .collect()
}

/// The connection URL (without our parameters), and the table, key and slots it names
/// (over the parameters').
#[allow(clippy::type_complexity)]
fn split(
    url: &str,
    params: &Params,
) -> Result<(String, Option<String>, Option<String>, Option<u32>), ConnectError> {
    let slots_of = |v: &str, shown: &str| {
        v.parse::<u32>()
            .ok()
            .filter(|n| (1..=1_000_000).contains(n))
            .ok_or_else(|| {
                ConnectError::new(url, format!("{shown}={v}: a number from 1 to 1000000"))
            })
    };
    let (base, query) = split_query(url);
    let (mut table, mut key) = (
        params.get("table").map(str::to_string),
        params.get("key").map(str::to_string),
    );
    let mut slots = match params.get("slots") {
        Some(v) => Some(slots_of(v, &params.shown("slots"))?),
        None => None,
    };
    let ours = query
        .iter()
        .any(|(k, _)| matches!(k.as_str(), "table" | "key" | "slots"));
    let mut rest = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in query {
        match k.as_str() {
            "table" => table = Some(v),
            "key" => key = Some(v),
            "slots" => slots = Some(slots_of(&v, "slots")?),
            _ => {
                rest.append_pair(&k, &v);
            }
        }
    }
    let rest = rest.finish();
    let conn = if !ours {
        // Nothing of ours to take out: the connection URL exactly as given.
        url.to_string()
    } else if rest.is_empty() {
        base
    } else {
        format!("{base}?{rest}")
    };
    Ok((conn, table, key, slots))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_name_the_table_and_the_url_stays_as_given() {
        let ctx = Context::default();
        let params = Params::new().with("table", "app.events").with("key", "id");
        // Nothing of ours in the URL: the connection URL exactly as written (the table's
        // identity records it).
        let url = "postgres://u:pw@h/db?application_name=rfs%20x&sslrootcert=/ca.pem";
        let o = TableConnectOptions::parse(url, &params, &ctx).unwrap();
        assert_eq!(o.conn, url);
        assert_eq!((o.table.as_str(), o.key.as_str()), ("app.events", "id"));
        assert_eq!(o.read.rule, SlotRule::Count(64));
        assert_eq!(o.connection.pool_size, TableOptions::default().pool_size);
        // The URL's parameters win over the others and are taken out.
        let o = TableConnectOptions::parse(
            "postgres://h/db?table=t&key=k&slots=8&sslmode=require",
            &params,
            &Context {
                parallel: 3,
                ..Context::default()
            },
        )
        .unwrap();
        assert_eq!(o.conn, "postgres://h/db?sslmode=require");
        assert_eq!(
            (o.table.as_str(), o.key.as_str(), o.read.rule),
            ("t", "k", SlotRule::Count(8))
        );
        assert_eq!(o.connection.pool_size, 5);
        // Every parameter, parsed once.
        let mut p = params.clone();
        p.set("slot-by", "time:2h")
            .set("from", "2024-01-01")
            .set("order", "newest-first")
            .set("page-rows", "7")
            .set("statement-timeout", "9")
            .set("source-attempts", "1")
            .set("columns", "id,title,body=text")
            .set("where", "deleted_at IS NULL");
        let o = TableConnectOptions::parse("postgres://h/db", &p, &ctx).unwrap();
        assert_eq!(
            o.read.rule,
            SlotRule::Time {
                width_ms: 7_200_000
            }
        );
        assert!(o.read.newest_first && o.read.page_rows == 7);
        assert_eq!(o.read.from.as_deref(), Some("2024-01-01"));
        assert_eq!(o.connection.statement_timeout, Duration::from_secs(9));
        assert_eq!(o.connection.attempts, 1);
        assert_eq!(
            o.connection.columns,
            vec![
                ("id".to_string(), "id".to_string()),
                ("title".into(), "title".into()),
                ("body".into(), "text".into())
            ]
        );
        assert_eq!(o.connection.filter.as_deref(), Some("deleted_at IS NULL"));
        // Without a table or key: refused, the URL shown without its password.
        let e = TableConnectOptions::parse("postgres://u:secret@h/db?key=k", &Params::new(), &ctx)
            .unwrap_err()
            .to_string();
        assert!(e.contains("needs table=") && !e.contains("secret"), "{e}");
        let mut p = params.clone();
        p.set_by("--where", "where", "a = 1; DROP TABLE t");
        let e = TableConnectOptions::parse("postgres://h/db", &p, &ctx)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "--where holds one predicate, without `;`");
        let e = TableConnectOptions::parse(
            "postgres://h/db",
            &params.clone().with("slices", "2"),
            &ctx,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("slices: the table connector takes no such parameter"),
            "{e}"
        );
    }
}
