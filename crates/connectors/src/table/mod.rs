//! Source: a PostgreSQL table, `postgres://user:pw@host/db?table=T&key=COLUMN[&slots=N]`
//! (other parameters such as `sslmode` go to the connection). Rows are read in key order,
//! cut into slots of equal row counts; each row is a document whose id is its key.
//! Its parameters add what flags say: the table and key (`table run --table --key`), slots
//! by time, key bounds, slot order, page rows, columns, a filter.

use std::sync::Arc;

use super::{BoxedSource, ConnectError, Context, OpenedSource, Params, SourceConnector};
use crate::hints::hints_of;

pub mod follow;
mod options;
pub mod source;

pub use options::TableConnectOptions;
pub use source::{TableSource, TableSourceOptions};

pub(super) const SOURCE: SourceConnector = SourceConnector {
    name: "table",
    schemes: &["postgres", "postgresql"],
    params: options::PARAMS,
    holds: None,
    open: |url, params, ctx| Box::pin(open(url, params, ctx)),
    identity: None,
    generations: None,
    matched: None,
};

async fn open(url: &str, params: &Params, ctx: &Context) -> Result<OpenedSource, ConnectError> {
    let o = TableConnectOptions::parse(url, params, ctx)?;
    // The table's errors name it and its database (without secrets).
    let t = ::table::Table::open(&o.conn, &o.table, &o.key, o.connection)
        .await
        .map_err(|e| ConnectError::caused(url, e))?;
    let source = TableSource::new(Arc::new(t), o.read)
        .await
        .map_err(|e| ConnectError::caused(url, e))?;
    let source = Arc::new(source);
    Ok(OpenedSource {
        key_check: Some(source.clone()),
        key_column: Some(source.key_attribute()),
        hints: hints_of(&source.columns()),
        groups: vec![source.group().to_string()],
        kind: "table",
        source: BoxedSource::new(source),
        routed: None,
        removed: Vec::new(),
        notes: Vec::new(),
        metadata: None,
    })
}
