//! Before a row is read: a DynamoDB key mapping must be unique in a table source.

use super::sink::DynamoUrl;
use crate::keys::KeyCheck;
use crate::ConnectError;

/// A DynamoDB key mapping must be unique in the table, or rows of one key overwrite
/// each other; refused before a row is read unless `allow_key_collisions`
/// (`--allow-key-collisions`). The key attributes are names in the rows as written (after
/// `--columns`), so what is checked is the column written under each: `--columns
/// id=event_id,tenant=id` puts `tenant` in attribute `id`. The default partition key is
/// the key column's written name. `rfs table run` and `rfs copy` from a table into
/// DynamoDB both check it here, when the sink opens.
pub async fn check_key_unique(
    url: &DynamoUrl,
    source: &dyn KeyCheck,
    allow_key_collisions: bool,
) -> Result<(), ConnectError> {
    let bail = |m: String| Err(ConnectError::message(m));
    let group = source.group();
    let partition = url
        .partition_key
        .clone()
        .unwrap_or_else(|| source.key_attribute());
    let attrs: Vec<(&str, &str)> = std::iter::once(("partition key", partition.as_str()))
        .chain(url.sort_key.as_deref().map(|s| ("sort key", s)))
        .collect();
    let mut columns: Vec<String> = Vec::new();
    let mut shown = Vec::new();
    let mut absent = Vec::new();
    for (role, attr) in &attrs {
        match source.column_written_as(attr) {
            Some(c) if c == *attr => {
                shown.push(format!("{role} {attr}"));
                columns.push(c);
            }
            Some(c) => {
                shown.push(format!("{role} {attr} (column {c})"));
                columns.push(c);
            }
            None => {
                shown.push(format!("{role} {attr}"));
                absent.push(*attr);
            }
        }
    }
    let shown = shown.join(", ");
    let written = source.written_columns();
    if !absent.is_empty() {
        if allow_key_collisions {
            tracing::warn!(
                table = %group,
                "the DynamoDB key ({shown}) names attributes no column is written as ({}): rows without them are refused as missing_key, a program that sets them may give rows one key (--allow-key-collisions)",
                absent.join(", ")
            );
            return Ok(());
        }
        return bail(format!(
            "the DynamoDB key ({shown}) names {} that no column of table {} is written as (written: {}): list the column in --columns, or map the key with --partition-key/--sort-key",
            absent.join(", "),
            group,
            written.join(", ")
        ));
    }
    match source.unique_over(&columns).await? {
        None => bail(format!(
            "the DynamoDB key mapping ({shown}) names a column that table {group} does not have"
        )),
        Some(true) => Ok(()),
        Some(false) if allow_key_collisions => {
            tracing::warn!(
                table = %group,
                "the DynamoDB key ({shown}) is not unique in the table: rows of one key overwrite each other; those overwritten inside one batch are refused as key_collision, those across batches cannot be seen (--allow-key-collisions)"
            );
            Ok(())
        }
        Some(false) => bail(format!(
            "the DynamoDB key ({shown}) is not unique in table {group}: no unique index or primary key covers {}, so rows with equal keys would overwrite each other and be lost. Map a unique key (e.g. add --sort-key {}), or pass --allow-key-collisions to write anyway",
            columns.join(", "),
            source.key_attribute()
        )),
    }
}
