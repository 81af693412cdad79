//! Verification of a finished migration: per target index, the number of documents the
//! snapshot holds against the target's `_count` after a refresh, and sampled documents
//! (or all of them) fetched by id and compared JSON-equal to the snapshot's `_source`.

use std::collections::BTreeMap;
use std::sync::Arc;

use cluster::{encode_segment, Client, Method};
use rand::Rng;
use serde::Serialize;
use serde_json::{json, Value};
use snapshot::{ShardReader, Snapshot};
use tokio::sync::mpsc;

use crate::metadata::DocumentRouting;

/// How many documents to compare per index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sample {
    /// A uniform random sample of this many documents per target index.
    PerIndex(usize),
    /// Every document.
    All,
}

/// The verdict for one target index.
#[derive(Debug, Clone, Default, Serialize)]
pub struct IndexVerdict {
    pub index: String,
    /// Documents the snapshot holds for this index.
    pub expected: u64,
    /// `_count` on the target after a refresh (`None`: the index does not exist).
    pub target_count: Option<u64>,
    pub compared: u64,
    /// Sampled ids absent from the target (at most 100 listed).
    pub missing: Vec<String>,
    /// Sampled ids whose `_source` differs (at most 100 listed).
    pub different: Vec<String>,
    pub missing_count: u64,
    pub different_count: u64,
}

impl IndexVerdict {
    pub fn ok(&self) -> bool {
        self.target_count == Some(self.expected)
            && self.missing_count == 0
            && self.different_count == 0
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct VerifyReport {
    pub indices: Vec<IndexVerdict>,
}

impl VerifyReport {
    pub fn ok(&self) -> bool {
        self.indices.iter().all(IndexVerdict::ok)
    }

    pub fn to_table(&self) -> String {
        let mut out = format!(
            "{:<40} {:>12} {:>12} {:>9} {:>8} {:>9}  result\n",
            "index", "snapshot", "target", "compared", "missing", "different"
        );
        for v in &self.indices {
            out.push_str(&format!(
                "{:<40} {:>12} {:>12} {:>9} {:>8} {:>9}  {}\n",
                v.index,
                v.expected,
                v.target_count
                    .map_or("absent".to_string(), |c| c.to_string()),
                v.compared,
                v.missing_count,
                v.different_count,
                if v.ok() { "ok" } else { "MISMATCH" }
            ));
            for id in &v.missing {
                out.push_str(&format!("    missing   {id}\n"));
            }
            for id in &v.different {
                out.push_str(&format!("    different {id}\n"));
            }
        }
        out
    }
}

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("snapshot: {0}")]
    Snapshot(#[from] snapshot::Error),
    #[error("target: {0}")]
    Target(#[from] cluster::ClusterError),
    #[error("{0}")]
    Other(String),
}

/// One document read from the snapshot, as the target should hold it.
#[derive(Debug, Clone)]
struct Expected {
    target: Arc<str>,
    id: String,
    routing: Option<String>,
    source: bytes::Bytes,
}

enum Msg {
    Doc(Expected),
    /// The number of documents per target index, at the end.
    Counts(BTreeMap<Arc<str>, u64>),
}

const MGET_CHUNK: usize = 500;
const LISTED: usize = 100;

/// Compares the target with the snapshot.
pub async fn verify(
    snapshot: &Snapshot,
    routing: &DocumentRouting,
    client: &Client,
    sample: Sample,
) -> Result<VerifyReport, VerifyError> {
    let (tx, mut rx) = mpsc::channel::<Result<Msg, VerifyError>>(4 * MGET_CHUNK);
    let reader = {
        let (snapshot, routing) = (snapshot.clone(), routing.clone());
        tokio::task::spawn_blocking(move || {
            if let Err(e) = read_expected(&snapshot, &routing, sample, &tx) {
                let _ = tx.blocking_send(Err(e));
            }
        })
    };
    let mut verdicts: BTreeMap<Arc<str>, IndexVerdict> = BTreeMap::new();
    let mut pending: BTreeMap<Arc<str>, Vec<Expected>> = BTreeMap::new();
    let mut refreshed: BTreeMap<Arc<str>, bool> = BTreeMap::new();
    let mut counts = None;
    while let Some(msg) = rx.recv().await {
        match msg? {
            Msg::Doc(d) => {
                let target = d.target.clone();
                if !refreshed.contains_key(&target) {
                    let exists = refresh(client, &target).await?;
                    refreshed.insert(target.clone(), exists);
                }
                let list = pending.entry(target.clone()).or_default();
                list.push(d);
                if list.len() >= MGET_CHUNK {
                    let batch = std::mem::take(list);
                    let v = verdicts.entry(target.clone()).or_default();
                    compare(client, &target, batch, v).await?;
                }
            }
            Msg::Counts(c) => counts = Some(c),
        }
    }
    reader
        .await
        .map_err(|e| VerifyError::Other(format!("snapshot reader: {e}")))?;
    let counts =
        counts.ok_or_else(|| VerifyError::Other("the snapshot reader stopped early".into()))?;
    for (target, batch) in pending {
        let v = verdicts.entry(target.clone()).or_default();
        compare(client, &target, batch, v).await?;
    }
    let mut report = VerifyReport::default();
    for (target, expected) in counts {
        let mut v = verdicts.remove(&target).unwrap_or_default();
        v.index = target.to_string();
        v.expected = expected;
        let exists = match refreshed.get(&target) {
            Some(e) => *e,
            None => refresh(client, &target).await?,
        };
        v.target_count = if exists {
            Some(client.count(&target).await?)
        } else {
            None
        };
        report.indices.push(v);
    }
    Ok(report)
}

/// Refreshes `index`; false when it does not exist.
async fn refresh(client: &Client, index: &str) -> Result<bool, VerifyError> {
    if !client.index_exists(index).await? {
        return Ok(false);
    }
    client.refresh(index).await?;
    Ok(true)
}

/// Fetches `batch` by id (with routing) and compares each `_source` JSON-equal.
async fn compare(
    client: &Client,
    index: &str,
    batch: Vec<Expected>,
    v: &mut IndexVerdict,
) -> Result<(), VerifyError> {
    if batch.is_empty() {
        return Ok(());
    }
    let docs: Vec<Value> = batch
        .iter()
        .map(|d| match &d.routing {
            Some(r) => json!({ "_id": d.id, "routing": r }),
            None => json!({ "_id": d.id }),
        })
        .collect();
    let path = format!("/{}/_mget", encode_segment(index));
    let resp = client
        .request(Method::POST, &path, Some(&json!({ "docs": docs })))
        .await?;
    let resp = resp.error_for_status()?;
    let body: Value = resp.json()?;
    let got = body
        .get("docs")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if got.len() != batch.len() {
        return Err(VerifyError::Other(format!(
            "{path}: asked for {} documents, got {}",
            batch.len(),
            got.len()
        )));
    }
    for (want, have) in batch.iter().zip(got) {
        v.compared += 1;
        let found = have.get("found").and_then(Value::as_bool).unwrap_or(false);
        if !found {
            v.missing_count += 1;
            if v.missing.len() < LISTED {
                v.missing.push(want.id.clone());
            }
            continue;
        }
        let expected: Result<Value, _> = serde_json::from_slice(&want.source);
        let same = match (expected, have.get("_source")) {
            (Ok(e), Some(h)) => &e == h,
            _ => false,
        };
        if !same {
            v.different_count += 1;
            if v.different.len() < LISTED {
                v.different.push(want.id.clone());
            }
        }
    }
    Ok(())
}

/// Reads every live document of the routed indices; sends the ones to compare and, at
/// the end, the counts per target index.
fn read_expected(
    snapshot: &Snapshot,
    routing: &DocumentRouting,
    sample: Sample,
    tx: &mpsc::Sender<Result<Msg, VerifyError>>,
) -> Result<(), VerifyError> {
    let mut counts: BTreeMap<Arc<str>, u64> = BTreeMap::new();
    let mut reservoirs: BTreeMap<Arc<str>, Vec<Expected>> = BTreeMap::new();
    let mut rng = rand::thread_rng();
    for name in snapshot.index_names() {
        if !routing.includes(&name) {
            continue;
        }
        for t in routing.targets_of(&name) {
            counts.entry(Arc::from(t)).or_insert(0);
        }
        let index = snapshot.index(&name)?;
        for shard_no in 0..index.number_of_shards() {
            if index.shard_failure(shard_no).is_some() {
                continue;
            }
            let shard = index.open_shard(shard_no)?;
            let reader = ShardReader::open(&shard)?;
            for doc in reader.documents(0..reader.max_doc())? {
                let doc = doc?;
                let Some(target) = routing.target_index(&name, doc.doc_type.as_deref()) else {
                    continue;
                };
                let target: Arc<str> = counts
                    .keys()
                    .find(|k| &***k == target)
                    .cloned()
                    .unwrap_or_else(|| Arc::from(target));
                let n = counts.entry(target.clone()).or_insert(0);
                *n += 1;
                let e = Expected {
                    target: target.clone(),
                    id: doc.id,
                    routing: doc.routing,
                    source: doc.source,
                };
                match sample {
                    Sample::All => {
                        if tx.blocking_send(Ok(Msg::Doc(e))).is_err() {
                            return Ok(());
                        }
                    }
                    Sample::PerIndex(k) => {
                        let r = reservoirs.entry(target).or_default();
                        if r.len() < k {
                            r.push(e);
                        } else {
                            let j = rng.gen_range(0..*n) as usize;
                            if j < k {
                                r[j] = e;
                            }
                        }
                    }
                }
            }
        }
    }
    for (_, r) in reservoirs {
        for e in r {
            if tx.blocking_send(Ok(Msg::Doc(e))).is_err() {
                return Ok(());
            }
        }
    }
    let _ = tx.blocking_send(Ok(Msg::Counts(counts)));
    Ok(())
}
