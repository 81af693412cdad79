//! Source: a PostgreSQL table, `postgres://user:pw@host/db?table=T&key=COLUMN[&slots=N]`
//! (other parameters such as `sslmode` go to the connection). Rows are read in key order,
//! cut into slots of equal row counts; each row is a document whose id is its key.

use std::sync::Arc;

use super::{split_query, BoxedSource, ConnectError, OpenedSource, Settings, SourceConnector};
use crate::sinks::dynamo::hints_of;
use crate::sources::table::{TableSource, TableSourceOptions};

pub(super) const SOURCE: SourceConnector = SourceConnector {
    name: "table",
    schemes: &["postgres", "postgresql"],
    holds: None,
    open: |url, settings| Box::pin(open(url, settings)),
};

/// The connection URL (without our parameters), and the table, key and slots it names.
#[allow(clippy::type_complexity)]
fn parse(
    url: &str,
    settings: &Settings,
) -> Result<(String, Option<String>, Option<String>, Option<u32>), ConnectError> {
    let (base, params) = split_query(url);
    let (mut table, mut key, mut slots) = (None, None, settings.table_slots);
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
    let conn = if rest.is_empty() {
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
    let t = ::table::Table::open(&conn, &table, &key, settings.table.clone())
        .await
        .map_err(|e| ConnectError::caused(url, e))?;
    let source = TableSource::new(
        Arc::new(t),
        TableSourceOptions {
            rule: ::table::SlotRule::Count(slots.unwrap_or(64)),
            from: None,
            until: None,
            page_rows: settings.table.page_rows,
            newest_first: false,
        },
    )
    .await
    .map_err(|e| ConnectError::caused(url, e))?;
    Ok(OpenedSource {
        key_column: Some(source.table().schema().key_column().name.clone()),
        hints: hints_of(&source.columns()),
        groups: vec![source.group().to_string()],
        kind: "table",
        source: BoxedSource::new(Arc::new(source)),
    })
}
