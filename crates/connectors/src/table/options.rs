//! The table source's typed options: what its flags say ([`TableSettings`], in
//! [`crate::Settings::table`]) and the URL's query, parsed once into
//! [`TableConnectOptions`].

use table::{SlotRule, TableOptions};

use super::source::TableSourceOptions;
use crate::{split_query, ConnectError};

/// What a command's flags say about a table source (`rfs table run`, `rfs copy`); the
/// URL's `table=`, `key=` and `slots=` win.
#[derive(Debug, Clone, Default)]
pub struct TableSettings {
    /// The connection: pool, page rows, statement timeout, attempts, columns, filter.
    pub options: TableOptions,
    /// Slots a table is cut into.
    pub slots: Option<u32>,
    /// How a table is cut when not by count (`--slot-by time:WIDTH`; wins over slots).
    pub rule: Option<SlotRule>,
    /// Only rows with keys from this one on / before this one (`--from`, `--until`).
    pub from: Option<String>,
    pub until: Option<String>,
    /// Number the newest slot first (`--order newest-first`).
    pub newest_first: bool,
    /// The table and its key column when a command names them by flags (`table run
    /// --table --key`); the URL's `table=` and `key=` win.
    pub name: Option<String>,
    pub key: Option<String>,
}

/// A table source's options, from its URL and [`TableSettings`].
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
    /// `url`'s `table=`, `key=` and `slots=` (taken out of the connection URL) over what
    /// `settings` say.
    pub fn parse(url: &str, settings: &TableSettings) -> Result<Self, ConnectError> {
        let (conn, table, key, slots) = split(url, settings)?;
        let need = |what: &str| {
            ConnectError::new(
                url,
                format!("a table source needs {what}= in the URL's query"),
            )
        };
        Ok(TableConnectOptions {
            conn,
            table: table.ok_or_else(|| need("table"))?,
            key: key.ok_or_else(|| need("key"))?,
            connection: settings.options.clone(),
            read: TableSourceOptions {
                rule: settings
                    .rule
                    .unwrap_or(SlotRule::Count(slots.unwrap_or(64))),
                from: settings.from.clone(),
                until: settings.until.clone(),
                page_rows: settings.options.page_rows,
                newest_first: settings.newest_first,
            },
        })
    }
}

/// The connection URL (without our parameters), and the table, key and slots it names.
#[allow(clippy::type_complexity)]
fn split(
    url: &str,
    settings: &TableSettings,
) -> Result<(String, Option<String>, Option<String>, Option<u32>), ConnectError> {
    let (base, params) = split_query(url);
    let (mut table, mut key, mut slots) =
        (settings.name.clone(), settings.key.clone(), settings.slots);
    let ours = params
        .iter()
        .any(|(k, _)| matches!(k.as_str(), "table" | "key" | "slots"));
    let mut rest = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in params {
        match k.as_str() {
            "table" => table = Some(v),
            "key" => key = Some(v),
            "slots" => {
                slots = Some(
                    v.parse::<u32>()
                        .ok()
                        .filter(|n| (1..=1_000_000).contains(n))
                        .ok_or_else(|| {
                            ConnectError::new(url, format!("slots={v}: a number from 1 to 1000000"))
                        })?,
                )
            }
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
    fn flags_name_the_table_and_the_url_stays_as_given() {
        let settings = TableSettings {
            name: Some("app.events".into()),
            key: Some("id".into()),
            ..TableSettings::default()
        };
        // Nothing of ours in the URL: the connection URL exactly as written (the table's
        // identity records it).
        let url = "postgres://u:pw@h/db?application_name=rfs%20x&sslrootcert=/ca.pem";
        let o = TableConnectOptions::parse(url, &settings).unwrap();
        assert_eq!(o.conn, url);
        assert_eq!((o.table.as_str(), o.key.as_str()), ("app.events", "id"));
        assert_eq!(o.read.rule, SlotRule::Count(64));
        // The URL's parameters win over the settings and are taken out.
        let o = TableConnectOptions::parse(
            "postgres://h/db?table=t&key=k&slots=8&sslmode=require",
            &settings,
        )
        .unwrap();
        assert_eq!(o.conn, "postgres://h/db?sslmode=require");
        assert_eq!(
            (o.table.as_str(), o.key.as_str(), o.read.rule),
            ("t", "k", SlotRule::Count(8))
        );
        // Without a table or key: refused, the URL shown without its password.
        let e =
            TableConnectOptions::parse("postgres://u:secret@h/db?key=k", &TableSettings::default())
                .unwrap_err()
                .to_string();
        assert!(e.contains("needs table=") && !e.contains("secret"), "{e}");
    }
}
