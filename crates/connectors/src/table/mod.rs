//! Source: a PostgreSQL table, `postgres://user:pw@host/db?table=T&key=COLUMN[&slots=N]`
//! (other parameters such as `sslmode` go to the connection). Rows are read in key order,
//! cut into slots of equal row counts; each row is a document whose id is its key.
//! Settings add what flags say: the table and key (`table run --table --key`), slots by
//! time, key bounds, slot order.

use std::sync::Arc;

use super::{split_query, BoxedSource, ConnectError, OpenedSource, Settings, SourceConnector};
use crate::hints::hints_of;

pub mod source;

pub use source::{KeyGuard, KeyOf, TableSource, TableSourceOptions};

pub(super) const SOURCE: SourceConnector = SourceConnector {
    name: "table",
    schemes: &["postgres", "postgresql"],
    holds: None,
    open: |url, settings| Box::pin(open(url, settings)),
    identity: None,
};

/// The connection URL (without our parameters), and the table, key and slots it names.
#[allow(clippy::type_complexity)]
fn parse(
    url: &str,
    settings: &Settings,
) -> Result<(String, Option<String>, Option<String>, Option<u32>), ConnectError> {
    let (base, params) = split_query(url);
    let (mut table, mut key, mut slots) = (
        settings.table_name.clone(),
        settings.table_key.clone(),
        settings.table_slots,
    );
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

async fn open(url: &str, settings: &Settings) -> Result<OpenedSource, ConnectError> {
    let (conn, table, key, slots) = parse(url, settings)?;
    let need = |what: &str| {
        ConnectError::new(
            url,
            format!("a table source needs {what}= in the URL's query"),
        )
    };
    let table = table.ok_or_else(|| need("table"))?;
    let key = key.ok_or_else(|| need("key"))?;
    // The table's errors name it and its database (without secrets).
    let t = ::table::Table::open(&conn, &table, &key, settings.table.clone())
        .await
        .map_err(|e| ConnectError::caused(url, e))?;
    let source = TableSource::new(
        Arc::new(t),
        TableSourceOptions {
            rule: settings
                .table_rule
                .unwrap_or(::table::SlotRule::Count(slots.unwrap_or(64))),
            from: settings.table_from.clone(),
            until: settings.table_until.clone(),
            page_rows: settings.table.page_rows,
            newest_first: settings.table_newest_first,
        },
    )
    .await
    .map_err(|e| ConnectError::caused(url, e))?;
    Ok(OpenedSource {
        key_column: Some(source.key_attribute()),
        hints: hints_of(&source.columns()),
        groups: vec![source.group().to_string()],
        kind: "table",
        source: BoxedSource::new(Arc::new(source)),
        routed: None,
        removed: Vec::new(),
        notes: Vec::new(),
        metadata: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_name_the_table_and_the_url_stays_as_given() {
        let settings = Settings {
            table_name: Some("app.events".into()),
            table_key: Some("id".into()),
            ..Settings::default()
        };
        // Nothing of ours in the URL: the connection URL exactly as written (the table's
        // identity records it).
        let url = "postgres://u:pw@h/db?application_name=rfs%20x&sslrootcert=/ca.pem";
        let (conn, table, key, slots) = parse(url, &settings).unwrap();
        assert_eq!(conn, url);
        assert_eq!(table.as_deref(), Some("app.events"));
        assert_eq!(key.as_deref(), Some("id"));
        assert_eq!(slots, None);
        // The URL's parameters win over the settings and are taken out.
        let (conn, table, key, slots) = parse(
            "postgres://h/db?table=t&key=k&slots=8&sslmode=require",
            &settings,
        )
        .unwrap();
        assert_eq!(conn, "postgres://h/db?sslmode=require");
        assert_eq!(
            (table.as_deref(), key.as_deref(), slots),
            (Some("t"), Some("k"), Some(8))
        );
    }
}
