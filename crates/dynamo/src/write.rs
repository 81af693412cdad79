//! Writing items: each write framed once into its wire form, then sent in `BatchWriteItem`
//! requests of up to 25 writes and 16 MB of body (measured on the wire form, escapes
//! included), several in flight under the client's AIMD limit.
//!
//! - Writes DynamoDB returns in `UnprocessedItems`, throttling errors, 5xx answers and lost
//!   connections: the writes still pending are sent again after a backoff with jitter;
//!   throttling (and unprocessed writes) halves the concurrency limit.
//! - A `ValidationException` refuses the whole request: the request is split in halves
//!   until the one write it is about is alone, and that write is refused with the message.
//! - Two writes of one key in the same request are an error in DynamoDB: of the writes of a
//!   key in one call to [`BatchWriter::write`], only the last is sent (the earlier ones would
//!   be overwritten by it anyway) and they count as written.
//! - Other errors (credentials, a missing table) end the call with the error.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use bytes::Bytes;

use crate::client::Client;
use crate::error::{Class, DynamoError};
use crate::item::{ConvertError, KeySchema};
use crate::value::{item_from_wire, write_item, write_json_string, Item};

/// Most writes in one `BatchWriteItem`.
pub const MAX_BATCH_WRITES: usize = 25;

/// Most bytes of one `BatchWriteItem` request body: DynamoDB takes up to 16 MB, counted
/// here on the wire form (escapes included: a 400 KB item of control characters is six
/// times that once escaped), with room for the request's framing.
pub const MAX_REQUEST_BYTES: usize = (16 << 20) - (64 << 10);

/// One write in its wire form, with the key it writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteRequest {
    body: Bytes,
    key: Box<[u8]>,
    delete: bool,
}

impl WriteRequest {
    /// `{"PutRequest":{"Item":…}}`: `item` must hold the table's key.
    pub fn put(item: &Item, schema: &KeySchema) -> Result<WriteRequest, ConvertError> {
        let key = schema.key_of(item)?;
        let mut body = Vec::with_capacity(64);
        body.extend_from_slice(br#"{"PutRequest":{"Item":"#);
        write_item(item, &mut body);
        body.extend_from_slice(b"}}");
        Ok(WriteRequest {
            body: body.into(),
            key: schema.signature(&key).into(),
            delete: false,
        })
    }

    /// `{"DeleteRequest":{"Key":…}}` of the key held by `item` (other attributes are ignored).
    pub fn delete(item: &Item, schema: &KeySchema) -> Result<WriteRequest, ConvertError> {
        let key = schema.key_of(item)?;
        let mut body = Vec::with_capacity(64);
        body.extend_from_slice(br#"{"DeleteRequest":{"Key":"#);
        write_item(&key, &mut body);
        body.extend_from_slice(b"}}");
        Ok(WriteRequest {
            body: body.into(),
            key: schema.signature(&key).into(),
            delete: true,
        })
    }

    /// Bytes of the wire form.
    pub fn len(&self) -> usize {
        self.body.len()
    }

    pub fn is_empty(&self) -> bool {
        self.body.is_empty()
    }

    pub fn is_delete(&self) -> bool {
        self.delete
    }

    /// The wire form.
    pub fn body(&self) -> &[u8] {
        &self.body
    }
}

/// A write DynamoDB refused for good.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteRefusal {
    /// Its index in the slice given to [`BatchWriter::write`].
    pub index: usize,
    pub error_type: String,
    pub reason: String,
    /// Times it was sent.
    pub attempts: u32,
}

/// What became of the writes of one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteOutcome {
    /// Writes DynamoDB acknowledged, superseded ones included.
    pub written: usize,
    /// Writes not sent because a later write of the same key was (counted in `written`).
    pub superseded: usize,
    /// Each of those as (its index, the index of the write of its key that was sent), in
    /// index order: a caller that must not count them as written refuses them.
    pub superseded_by: Vec<(usize, usize)>,
    pub refused: Vec<WriteRefusal>,
    /// Bytes of the writes' wire forms (each counted once).
    pub bytes: u64,
    /// Answers of this call that throttled (errors, or writes left unprocessed).
    pub throttled: u64,
    /// Writes of this call returned unprocessed (and sent again).
    pub unprocessed: u64,
    /// Requests of this call sent again.
    pub retries: u64,
}

/// Writes items into one table.
#[derive(Clone)]
pub struct BatchWriter {
    client: Client,
    table: String,
    /// `"table":[` framed once.
    head: Bytes,
    schema: KeySchema,
}

impl BatchWriter {
    pub fn new(client: Client, table: impl Into<String>, schema: KeySchema) -> BatchWriter {
        let table = table.into();
        let mut head = br#"{"RequestItems":{"#.to_vec();
        write_json_string(&table, &mut head);
        head.extend_from_slice(b":[");
        BatchWriter {
            client,
            table,
            head: head.into(),
            schema,
        }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    pub fn schema(&self) -> &KeySchema {
        &self.schema
    }

    /// Sends `requests` and returns when each is written or refused; an `Err` means some
    /// may not be written (retries ran out, credentials refused, the table is gone).
    pub async fn write(&self, requests: &[WriteRequest]) -> Result<WriteOutcome, DynamoError> {
        let mut last: HashMap<&[u8], usize> = HashMap::with_capacity(requests.len());
        for (i, r) in requests.iter().enumerate() {
            last.insert(&r.key, i);
        }
        let live: Vec<usize> = (0..requests.len())
            .filter(|i| last.get(&*requests[*i].key) == Some(i))
            .collect();
        let superseded_by: Vec<(usize, usize)> = requests
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let last = last.get(&*r.key).copied()?;
                (last != i).then_some((i, last))
            })
            .collect();
        let mut outcome = WriteOutcome {
            superseded: requests.len() - live.len(),
            superseded_by,
            bytes: live.iter().map(|i| requests[*i].len() as u64).sum(),
            ..WriteOutcome::default()
        };
        let chunks = self
            .requests_of(&live, requests)
            .into_iter()
            .map(|c| self.write_chunk(c, requests));
        let mut error: Option<DynamoError> = None;
        for r in futures::future::join_all(chunks).await {
            match r {
                Ok((refused, p)) => {
                    outcome.refused.extend(refused);
                    outcome.throttled += p.throttled;
                    outcome.unprocessed += p.unprocessed;
                    outcome.retries += p.retries;
                }
                // A fatal error says more than a budget that ran out.
                Err(e)
                    if error
                        .as_ref()
                        .is_none_or(|prev| !prev.is_fatal() && e.is_fatal()) =>
                {
                    error = Some(e)
                }
                Err(_) => {}
            }
        }
        if let Some(e) = error {
            return Err(e);
        }
        outcome.refused.sort_by_key(|r| r.index);
        outcome.written = requests.len() - outcome.refused.len();
        Ok(outcome)
    }

    /// `live` cut into requests of at most [`MAX_BATCH_WRITES`] writes and
    /// [`MAX_REQUEST_BYTES`] bytes of body (a write alone over that goes alone: DynamoDB
    /// refuses it, and it is refused by itself).
    fn requests_of(&self, live: &[usize], requests: &[WriteRequest]) -> Vec<Vec<usize>> {
        let framing = self.head.len() + 3;
        let mut out: Vec<Vec<usize>> = Vec::new();
        let mut current: Vec<usize> = Vec::new();
        let mut bytes = framing;
        for &i in live {
            let len = requests[i].len() + 1;
            if !current.is_empty()
                && (current.len() >= MAX_BATCH_WRITES || bytes + len > MAX_REQUEST_BYTES)
            {
                out.push(std::mem::take(&mut current));
                bytes = framing;
            }
            bytes += len;
            current.push(i);
        }
        if !current.is_empty() {
            out.push(current);
        }
        out
    }

    /// Up to 25 writes (indices into `requests`), until written or refused.
    async fn write_chunk(
        &self,
        indices: Vec<usize>,
        requests: &[WriteRequest],
    ) -> Result<(Vec<WriteRefusal>, WriteOutcome), DynamoError> {
        let inner = &self.client.inner;
        // This chunk's pushback (throttled, unprocessed, retries only).
        let mut pushback = WriteOutcome::default();
        let policy = &inner.retry;
        let mut sent: HashMap<usize, u32> = HashMap::new();
        let mut refused = Vec::new();
        // Sub-batches still to write, each with the attempts it has had.
        let mut queue: Vec<(Vec<usize>, u32)> = vec![(indices, 0)];
        // Since when every answer has been throttling (reset by any other answer).
        let mut throttled_since: Option<std::time::Instant> = None;
        while let Some((mut pending, mut tries)) = queue.pop() {
            while !pending.is_empty() {
                tries += 1;
                for i in &pending {
                    *sent.entry(*i).or_default() += 1;
                }
                let body = self.body(&pending, requests);
                let permit = inner.limiter.acquire().await;
                let answer = self.client.send_once("BatchWriteItem", body).await;
                let mut throttled = false;
                let last = match answer {
                    Ok(answer) => {
                        let unprocessed = self.unprocessed(&answer, &pending, requests)?;
                        if unprocessed.is_empty() {
                            permit.succeeded();
                            break;
                        }
                        throttled = true;
                        permit.throttled();
                        inner.stats.throttled.fetch_add(1, Ordering::Relaxed);
                        inner
                            .stats
                            .unprocessed
                            .fetch_add(unprocessed.len() as u64, Ordering::Relaxed);
                        pushback.throttled += 1;
                        pushback.unprocessed += unprocessed.len() as u64;
                        let last = format!(
                            "{} of {} writes left unprocessed",
                            unprocessed.len(),
                            pending.len()
                        );
                        pending = unprocessed;
                        last
                    }
                    Err(f) => match f.class {
                        Class::Throttled | Class::Retry => {
                            if f.class == Class::Throttled {
                                throttled = true;
                                permit.throttled();
                                inner.stats.throttled.fetch_add(1, Ordering::Relaxed);
                                pushback.throttled += 1;
                            }
                            if f.status == 0 {
                                f.message
                            } else {
                                format!("HTTP {} {}: {}", f.status, f.error_type, f.message)
                            }
                        }
                        Class::Permanent if f.error_type == "ValidationException" => {
                            drop(permit);
                            if pending.len() > 1 {
                                inner.stats.splits.fetch_add(1, Ordering::Relaxed);
                                let right = pending.split_off(pending.len() / 2);
                                queue.push((right, 0));
                                queue.push((pending, 0));
                            } else {
                                refused.push(WriteRefusal {
                                    index: pending[0],
                                    error_type: f.error_type,
                                    reason: f.message,
                                    attempts: sent.get(&pending[0]).copied().unwrap_or(1),
                                });
                            }
                            break;
                        }
                        Class::Auth | Class::Permanent => {
                            return Err(f.into_error("BatchWriteItem"))
                        }
                    },
                };
                drop(permit);
                // Throttling is retried for as long as the budget (what the lease allows)
                // lasts; anything else, and throttling without a budget, by attempts.
                let now = std::time::Instant::now();
                let budget = self.client.throttle_budget().filter(|_| throttled);
                if throttled {
                    throttled_since.get_or_insert(now);
                } else {
                    throttled_since = None;
                }
                let exhausted = match (budget, throttled_since) {
                    (Some(b), Some(since)) => now.duration_since(since) >= b,
                    _ => tries >= policy.max_attempts,
                };
                if exhausted {
                    if let (Some(b), Some(since)) = (budget, throttled_since) {
                        tracing::warn!(
                            table = %self.table,
                            "DynamoDB throttled these writes for {} s, as long as the lease allows ({} s): giving up on them ({last}); the work item fails and is tried again later",
                            now.duration_since(since).as_secs(),
                            b.as_secs()
                        );
                    }
                    return Err(DynamoError::RetriesExhausted {
                        operation: "BatchWriteItem",
                        attempts: tries,
                        last,
                    });
                }
                inner.stats.retries.fetch_add(1, Ordering::Relaxed);
                pushback.retries += 1;
                tracing::debug!(table = %self.table, tries, "BatchWriteItem: {last}; retrying");
                self.client.warn_pressure(&self.table, &last);
                // Past the attempts (throttled, within the budget): the longest step.
                let delay = policy.delay(tries.min(policy.max_attempts), None);
                tokio::time::sleep(delay).await;
            }
        }
        Ok((refused, pushback))
    }

    fn body(&self, pending: &[usize], requests: &[WriteRequest]) -> Bytes {
        let len = self.head.len()
            + 3
            + pending
                .iter()
                .map(|i| requests[*i].len() + 1)
                .sum::<usize>();
        let mut body = Vec::with_capacity(len);
        body.extend_from_slice(&self.head);
        for (n, i) in pending.iter().enumerate() {
            if n > 0 {
                body.push(b',');
            }
            body.extend_from_slice(&requests[*i].body);
        }
        body.extend_from_slice(b"]}}");
        body.into()
    }

    /// The writes of `pending` that the answer lists in `UnprocessedItems`.
    fn unprocessed(
        &self,
        answer: &[u8],
        pending: &[usize],
        requests: &[WriteRequest],
    ) -> Result<Vec<usize>, DynamoError> {
        let bad = |reason: String| DynamoError::Response {
            operation: "BatchWriteItem",
            reason,
        };
        let v: serde_json::Value =
            serde_json::from_slice(answer).map_err(|e| bad(format!("not JSON: {e}")))?;
        let Some(list) = v
            .get("UnprocessedItems")
            .and_then(|u| u.get(&self.table))
            .and_then(|l| l.as_array())
            .filter(|l| !l.is_empty())
        else {
            return Ok(Vec::new());
        };
        let by_key: HashMap<&[u8], usize> =
            pending.iter().map(|i| (&*requests[*i].key, *i)).collect();
        let mut out = Vec::with_capacity(list.len());
        for entry in list {
            let wire = entry
                .get("PutRequest")
                .and_then(|p| p.get("Item"))
                .or_else(|| entry.get("DeleteRequest").and_then(|d| d.get("Key")))
                .ok_or_else(|| {
                    bad("an unprocessed entry that is neither a put nor a delete".into())
                })?;
            let item = item_from_wire(wire)
                .map_err(|e| bad(format!("an unprocessed entry: {}", redact::Chain(&e))))?;
            let key = self
                .schema
                .key_of(&item)
                .map_err(|e| bad(format!("an unprocessed entry: {e}")))?;
            let i = by_key
                .get(&*self.schema.signature(&key))
                .ok_or_else(|| bad("an unprocessed entry that was not sent".into()))?;
            out.push(*i);
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }
}
