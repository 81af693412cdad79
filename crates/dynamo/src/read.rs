//! Reading items back, for verification: `GetItem`, `BatchGetItem` (unprocessed keys sent
//! again), `Scan` one segment of a parallel scan at a time, and counting (a whole table by
//! parallel scan, one partition by `Query`).

use serde_json::{json, Map, Value};

use crate::client::Client;
use crate::error::DynamoError;
use crate::value::{item_from_wire, write_item, AttributeValue, Item};

/// Most keys in one `BatchGetItem`.
pub const MAX_BATCH_GET: usize = 100;

/// One page of a scan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanPage {
    pub items: Vec<Item>,
    /// Items counted (equals `items.len()` unless only counting).
    pub count: u64,
    /// Where the next page starts; `None` after the last page of the segment.
    pub last_key: Option<Item>,
}

/// What to scan.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// `Segment` of `TotalSegments` (parallel scan); `None`: the whole table.
    pub segment: Option<(u32, u32)>,
    /// Count only (`Select: COUNT`): no items come back.
    pub count_only: bool,
    /// Consistent reads (twice the cost).
    pub consistent: bool,
    /// Items per page (DynamoDB stops at 1 MB anyway).
    pub limit: Option<u32>,
}

fn item_json(item: &Item) -> Value {
    let mut buf = Vec::new();
    write_item(item, &mut buf);
    serde_json::from_slice(&buf).unwrap_or_default()
}

fn items_of(v: Option<&Value>, operation: &'static str) -> Result<Vec<Item>, DynamoError> {
    let Some(list) = v.and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    list.iter()
        .map(|i| {
            item_from_wire(i).map_err(|e| DynamoError::Response {
                operation,
                reason: redact::chain(&e),
            })
        })
        .collect()
}

impl Client {
    /// The item with `key` (exactly the key attributes), or `None`.
    pub async fn get_item(
        &self,
        table: &str,
        key: &Item,
        consistent: bool,
    ) -> Result<Option<Item>, DynamoError> {
        let v = self
            .call_json(
                "GetItem",
                &json!({"TableName": table, "Key": item_json(key), "ConsistentRead": consistent}),
            )
            .await?;
        match v.get("Item") {
            None => Ok(None),
            Some(i) => item_from_wire(i)
                .map(Some)
                .map_err(|e| DynamoError::Response {
                    operation: "GetItem",
                    reason: redact::chain(&e),
                }),
        }
    }

    /// The items with these keys that exist, in no particular order; keys DynamoDB leaves
    /// unprocessed are asked again (with the client's retry policy). The keys must be
    /// distinct.
    pub async fn batch_get(
        &self,
        table: &str,
        keys: &[Item],
        consistent: bool,
    ) -> Result<Vec<Item>, DynamoError> {
        self.batch_get_projected(table, keys, consistent, None)
            .await
    }

    /// [`Client::batch_get`] returning only the named attributes of each item (all of them
    /// with `None`): existence checks read the key attributes alone.
    pub async fn batch_get_projected(
        &self,
        table: &str,
        keys: &[Item],
        consistent: bool,
        attributes: Option<&[&str]>,
    ) -> Result<Vec<Item>, DynamoError> {
        let mut request = json!({"ConsistentRead": consistent});
        if let Some(attributes) = attributes {
            let names: Map<String, Value> = attributes
                .iter()
                .enumerate()
                .map(|(i, a)| (format!("#a{i}"), json!(a)))
                .collect();
            let projection: Vec<String> = (0..attributes.len()).map(|i| format!("#a{i}")).collect();
            request["ProjectionExpression"] = json!(projection.join(","));
            request["ExpressionAttributeNames"] = Value::Object(names);
        }
        let mut found = Vec::new();
        for chunk in keys.chunks(MAX_BATCH_GET) {
            let mut pending: Vec<Value> = chunk.iter().map(item_json).collect();
            let mut attempt = 0;
            while !pending.is_empty() {
                attempt += 1;
                let mut this = request.clone();
                this["Keys"] = Value::Array(pending);
                let v = self
                    .call_json("BatchGetItem", &json!({"RequestItems": {table: this}}))
                    .await?;
                found.extend(items_of(
                    v.pointer("/Responses").and_then(|r| r.get(table)),
                    "BatchGetItem",
                )?);
                pending = v
                    .get("UnprocessedKeys")
                    .and_then(|u| u.get(table))
                    .and_then(|t| t.get("Keys"))
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                if !pending.is_empty() {
                    let policy = &self.inner.retry;
                    if attempt >= policy.max_attempts {
                        return Err(DynamoError::RetriesExhausted {
                            operation: "BatchGetItem",
                            attempts: attempt,
                            last: format!("{} keys left unprocessed", pending.len()),
                        });
                    }
                    tokio::time::sleep(policy.delay(attempt, None)).await;
                }
            }
        }
        Ok(found)
    }

    /// One page of a scan, starting after `start`.
    pub async fn scan_page(
        &self,
        table: &str,
        scan: &Scan,
        start: Option<&Item>,
    ) -> Result<ScanPage, DynamoError> {
        let mut body = Map::new();
        body.insert("TableName".into(), json!(table));
        if let Some((segment, total)) = scan.segment {
            body.insert("Segment".into(), json!(segment));
            body.insert("TotalSegments".into(), json!(total));
        }
        if scan.count_only {
            body.insert("Select".into(), json!("COUNT"));
        }
        if scan.consistent {
            body.insert("ConsistentRead".into(), json!(true));
        }
        if let Some(l) = scan.limit {
            body.insert("Limit".into(), json!(l));
        }
        if let Some(k) = start {
            body.insert("ExclusiveStartKey".into(), item_json(k));
        }
        let v = self.call_json("Scan", &Value::Object(body)).await?;
        let items = items_of(v.get("Items"), "Scan")?;
        let last_key = match v.get("LastEvaluatedKey") {
            Some(k) => Some(item_from_wire(k).map_err(|e| DynamoError::Response {
                operation: "Scan",
                reason: redact::chain(&e),
            })?),
            None => None,
        };
        Ok(ScanPage {
            count: v
                .get("Count")
                .and_then(Value::as_u64)
                .unwrap_or(items.len() as u64),
            items,
            last_key,
        })
    }

    /// Every item of the scan (all pages).
    pub async fn scan_all(&self, table: &str, scan: &Scan) -> Result<Vec<Item>, DynamoError> {
        let mut out = Vec::new();
        let mut start = None;
        loop {
            let page = self.scan_page(table, scan, start.as_ref()).await?;
            out.extend(page.items);
            match page.last_key {
                Some(k) => start = Some(k),
                None => return Ok(out),
            }
        }
    }

    /// Items whose partition key `attribute` is `value` (a `Query` that only counts, all
    /// pages).
    pub async fn query_count(
        &self,
        table: &str,
        attribute: &str,
        value: &AttributeValue,
    ) -> Result<u64, DynamoError> {
        let mut wire = Vec::new();
        value.write_wire(&mut wire);
        let value: Value = serde_json::from_slice(&wire).unwrap_or_default();
        let mut total = 0;
        let mut start: Option<Value> = None;
        loop {
            let mut body = json!({
                "TableName": table,
                "KeyConditionExpression": "#k = :v",
                "ExpressionAttributeNames": {"#k": attribute},
                "ExpressionAttributeValues": {":v": value},
                "Select": "COUNT",
                "ConsistentRead": true,
            });
            if let Some(k) = start.take() {
                body["ExclusiveStartKey"] = k;
            }
            let v = self.call_json("Query", &body).await?;
            total += v.get("Count").and_then(Value::as_u64).unwrap_or(0);
            match v.get("LastEvaluatedKey") {
                Some(k) => start = Some(k.clone()),
                None => return Ok(total),
            }
        }
    }

    /// Items in the table, counted by a parallel scan of `segments` segments.
    pub async fn count_items(&self, table: &str, segments: u32) -> Result<u64, DynamoError> {
        let segments = segments.max(1);
        let counts = futures::future::join_all((0..segments).map(|s| async move {
            let scan = Scan {
                segment: Some((s, segments)),
                count_only: true,
                ..Scan::default()
            };
            let mut total = 0;
            let mut start = None;
            loop {
                let page = self.scan_page(table, &scan, start.as_ref()).await?;
                total += page.count;
                match page.last_key {
                    Some(k) => start = Some(k),
                    None => return Ok::<u64, DynamoError>(total),
                }
            }
        }))
        .await;
        counts.into_iter().sum()
    }
}
