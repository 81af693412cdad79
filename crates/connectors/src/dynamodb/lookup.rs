//! Lookup in a DynamoDB table: each document is converted as the DynamoDB sink converts it
//! (the same column hints; documents rather than rows gain `_id` and `_index`), its key read
//! from the item, the items fetched by `BatchGetItem` (consistent reads; key attributes
//! only when just checking existence) and compared in wire form with numbers canonical —
//! so a difference names the attribute and both values. The count is a `Scan` count: of
//! the whole table for rows, of the items whose `_index` is the index for documents.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::lookup::{ExpectedError, Held, Keeps, Lookup, LookupError, LookupFuture, Wanted};
use engine::lookup::exact::Exact;
use engine::lookup::ids::IdRuns;

/// Items of one DynamoDB table.
pub struct DynamoLookup {
    client: ::dynamo::Client,
    table: String,
    key: ::dynamo::KeySchema,
    hints: ::dynamo::ColumnHints,
    /// Documents (items gain `_id` and `_index`), not a table's rows.
    documents: bool,
}

impl DynamoLookup {
    /// Items of `table` (whose key is `key`), documents converted with `hints`; with
    /// `documents`, as the sink writes documents (`_id` and `_index` added).
    pub fn new(
        client: ::dynamo::Client,
        table: impl Into<String>,
        key: ::dynamo::KeySchema,
        hints: ::dynamo::ColumnHints,
        documents: bool,
    ) -> Self {
        DynamoLookup {
            client,
            table: table.into(),
            key,
            hints,
            documents,
        }
    }

    /// The item the sink writes for `doc` sent to `index`.
    fn item(&self, index: &str, doc: &Wanted) -> Result<::dynamo::Item, ExpectedError> {
        let mut item =
            ::dynamo::row_to_item(&doc.source, &self.hints).map_err(ExpectedError::Item)?;
        if self.documents {
            item.insert("_id".into(), ::dynamo::AttributeValue::S(doc.id.clone()));
            item.insert(
                "_index".into(),
                ::dynamo::AttributeValue::S(index.to_string()),
            );
        }
        Ok(item)
    }

    fn error(&self, e: ::dynamo::DynamoError) -> LookupError {
        LookupError::Dynamo {
            target: self.describe(),
            source: Box::new(e),
        }
    }

    /// Items whose `_index` is `index` (a counting `Scan` with a filter, all pages).
    async fn count_of_index(&self, index: &str) -> Result<u64, LookupError> {
        let mut total = 0;
        let mut start: Option<Value> = None;
        loop {
            let mut body = json!({
                "TableName": self.table,
                "Select": "COUNT",
                "ConsistentRead": true,
                "FilterExpression": "#i = :v",
                "ExpressionAttributeNames": {"#i": "_index"},
                "ExpressionAttributeValues": {":v": {"S": index}},
            });
            if let Some(k) = start.take() {
                body["ExclusiveStartKey"] = k;
            }
            let v = self
                .client
                .call_json("Scan", &body)
                .await
                .map_err(|e| self.error(e))?;
            total += v.get("Count").and_then(Value::as_u64).unwrap_or(0);
            match v.get("LastEvaluatedKey") {
                Some(k) => start = Some(k.clone()),
                None => return Ok(total),
            }
        }
    }
}

impl DynamoLookup {
    /// The `_id` of every item whose `_index` is `index` (a projecting `Scan`, all pages,
    /// consistent reads): documents only.
    async fn ids_of_index(&self, index: &str, into: &mut IdRuns) -> Result<(), LookupError> {
        let mut start: Option<Value> = None;
        loop {
            let mut body = json!({
                "TableName": self.table,
                "ConsistentRead": true,
                "ProjectionExpression": "#d",
                "FilterExpression": "#i = :v",
                "ExpressionAttributeNames": {"#i": "_index", "#d": "_id"},
                "ExpressionAttributeValues": {":v": {"S": index}},
            });
            if let Some(k) = start.take() {
                body["ExclusiveStartKey"] = k;
            }
            let v = self
                .client
                .call_json("Scan", &body)
                .await
                .map_err(|e| self.error(e))?;
            for item in v
                .get("Items")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let id = item
                    .pointer("/_id/S")
                    .and_then(Value::as_str)
                    .ok_or_else(|| LookupError::Answer {
                        target: self.describe(),
                        why: format!("an item of {index} without a string _id"),
                    })?;
                into.push(id.to_string()).map_err(LookupError::Spill)?;
            }
            match v.get("LastEvaluatedKey") {
                Some(k) => start = Some(k.clone()),
                None => return Ok(()),
            }
        }
    }
}

impl Lookup for DynamoLookup {
    fn prepare<'a>(&'a self, _index: &'a str) -> LookupFuture<'a, Option<Keeps>> {
        // The table was checked when the lookup was opened.
        Box::pin(async move { Ok(Some(Keeps::default())) })
    }

    fn fetch<'a>(
        &'a self,
        index: &'a str,
        docs: &'a [Wanted],
        content: bool,
    ) -> LookupFuture<'a, Vec<Held>> {
        Box::pin(async move {
            // Key signature → the documents with that item key (more than one when the
            // key mapping is not unique: one item then stands for several).
            let mut wanted: HashMap<Vec<u8>, Vec<usize>> = HashMap::with_capacity(docs.len());
            let mut keys: Vec<::dynamo::Item> = Vec::with_capacity(docs.len());
            for (at, d) in docs.iter().enumerate() {
                let key = match self
                    .item(index, d)
                    .and_then(|item| self.key.key_of(&item).map_err(ExpectedError::Key))
                {
                    Ok(k) => k,
                    Err(e) => {
                        // Not in the target: the sink refused it into the failure log.
                        tracing::warn!(id = %d.id, "{}", redact::Chain(&e));
                        continue;
                    }
                };
                let entry = wanted.entry(self.key.signature(&key)).or_default();
                if entry.is_empty() {
                    keys.push(key);
                }
                entry.push(at);
            }
            let names: Vec<&str> = self.key.attributes().map(|a| a.name.as_str()).collect();
            let items = self
                .client
                .batch_get_projected(
                    &self.table,
                    &keys,
                    true,
                    (!content).then_some(names.as_slice()),
                )
                .await
                .map_err(|e| self.error(e))?;
            let mut out = vec![Held::Absent; docs.len()];
            for item in items {
                let key = self.key.key_of(&item).map_err(|e| LookupError::Answer {
                    target: self.describe(),
                    why: format!("an item without its key: {e}"),
                })?;
                let Some(sources) = wanted.get(&self.key.signature(&key)) else {
                    continue;
                };
                let held = if content {
                    Held::Holds(Exact::from_value(&::dynamo::canonical_json(&item)))
                } else {
                    Held::Present
                };
                for &at in sources {
                    out[at] = held.clone();
                }
            }
            Ok(out)
        })
    }

    fn expected(&self, index: &str, doc: &Wanted) -> Result<Exact, ExpectedError> {
        // The wire form holds numbers as strings (`{"N": "…"}`), canonical: exact.
        self.item(index, doc)
            .map(|i| Exact::from_value(&::dynamo::canonical_json(&i)))
    }

    fn list_ids<'a>(&'a self, index: &'a str, into: &'a mut IdRuns) -> LookupFuture<'a, bool> {
        Box::pin(async move {
            if !self.documents {
                // A table's rows are items addressed by their key, not by `_id`.
                return Ok(false);
            }
            self.ids_of_index(index, into).await.map(|()| true)
        })
    }

    fn count<'a>(&'a self, index: &'a str) -> LookupFuture<'a, Option<u64>> {
        Box::pin(async move {
            if self.documents {
                return self.count_of_index(index).await.map(Some);
            }
            self.client
                .count_items(&self.table, 4)
                .await
                .map(Some)
                .map_err(|e| self.error(e))
        })
    }

    fn describe(&self) -> String {
        format!(
            "DynamoDB table {} at {}",
            self.table,
            self.client.endpoint()
        )
    }
}
