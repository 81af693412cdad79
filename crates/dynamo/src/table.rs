//! Tables: `DescribeTable`, `CreateTable` (on-demand billing) and waiting until ACTIVE.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::client::Client;
use crate::error::DynamoError;
use crate::item::{KeyAttribute, KeySchema, KeyType};

/// What `DescribeTable` says about a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDescription {
    pub name: String,
    /// `CREATING`, `ACTIVE`, `UPDATING`, `DELETING`, …
    pub status: String,
    pub key: KeySchema,
    /// DynamoDB's item count (refreshed about every six hours by AWS; exact on test servers).
    pub item_count: Option<u64>,
}

impl Client {
    /// The table, or `None` when it does not exist.
    pub async fn describe_table(
        &self,
        table: &str,
    ) -> Result<Option<TableDescription>, DynamoError> {
        match self
            .call_json("DescribeTable", &json!({ "TableName": table }))
            .await
        {
            Ok(v) => parse_description(&v).map(Some),
            Err(e) if e.error_type() == Some("ResourceNotFoundException") => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Creates the table with on-demand billing; a table created meanwhile by someone else
    /// (`ResourceInUseException`) is not an error. Does not wait (see [`Client::wait_active`]).
    pub async fn create_table(&self, table: &str, key: &KeySchema) -> Result<(), DynamoError> {
        let mut defs = vec![
            json!({"AttributeName": key.partition.name, "AttributeType": key.partition.key_type.as_str()}),
        ];
        let mut schema = vec![json!({"AttributeName": key.partition.name, "KeyType": "HASH"})];
        if let Some(s) = &key.sort {
            defs.push(json!({"AttributeName": s.name, "AttributeType": s.key_type.as_str()}));
            schema.push(json!({"AttributeName": s.name, "KeyType": "RANGE"}));
        }
        let body = json!({
            "TableName": table,
            "BillingMode": "PAY_PER_REQUEST",
            "AttributeDefinitions": defs,
            "KeySchema": schema,
        });
        match self.call_json("CreateTable", &body).await {
            Ok(_) => Ok(()),
            Err(e) if e.error_type() == Some("ResourceInUseException") => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Polls `DescribeTable` until the table is ACTIVE, for at most `timeout`.
    pub async fn wait_active(
        &self,
        table: &str,
        timeout: Duration,
    ) -> Result<TableDescription, DynamoError> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.describe_table(table).await? {
                Some(d) if d.status == "ACTIVE" => return Ok(d),
                Some(d) if d.status == "DELETING" => {
                    return Err(DynamoError::Config(format!(
                        "table {table} is being deleted"
                    )))
                }
                seen => {
                    if Instant::now() >= deadline {
                        let status = seen.map_or("missing".to_string(), |d| d.status);
                        return Err(DynamoError::Config(format!(
                            "table {table} is not ACTIVE after {timeout:?} (status {status})"
                        )));
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

fn parse_description(v: &Value) -> Result<TableDescription, DynamoError> {
    let bad = |reason: &str| DynamoError::Response {
        operation: "DescribeTable",
        reason: reason.to_string(),
    };
    let t = v.get("Table").ok_or_else(|| bad("no Table"))?;
    let s = |k: &str| t.get(k).and_then(Value::as_str);
    let type_of = |name: &str| -> Result<KeyType, DynamoError> {
        t.get("AttributeDefinitions")
            .and_then(Value::as_array)
            .and_then(|defs| {
                defs.iter()
                    .find(|d| d.get("AttributeName").and_then(Value::as_str) == Some(name))
            })
            .and_then(|d| d.get("AttributeType").and_then(Value::as_str))
            .and_then(KeyType::parse)
            .ok_or_else(|| bad(&format!("no S/N/B attribute definition for key {name:?}")))
    };
    let mut partition = None;
    let mut sort = None;
    for k in t
        .get("KeySchema")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no KeySchema"))?
    {
        let name = k
            .get("AttributeName")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("a key without AttributeName"))?;
        let attr = KeyAttribute {
            name: name.to_string(),
            key_type: type_of(name)?,
        };
        match k.get("KeyType").and_then(Value::as_str) {
            Some("HASH") => partition = Some(attr),
            Some("RANGE") => sort = Some(attr),
            _ => return Err(bad("a key that is neither HASH nor RANGE")),
        }
    }
    Ok(TableDescription {
        name: s("TableName").unwrap_or_default().to_string(),
        status: s("TableStatus").unwrap_or_default().to_string(),
        key: KeySchema {
            partition: partition.ok_or_else(|| bad("no HASH key"))?,
            sort,
        },
        item_count: t.get("ItemCount").and_then(Value::as_u64),
    })
}
