//! Issue 25, adversarial: the demo repository's `reviews` shard (real Lucene 8.8 segments)
//! with one byte changed anywhere in its files, migrated by the job over a SQLite store into
//! an in-memory sink, cut into arbitrary `--split-docs` items, with a send failing once at
//! an arbitrary batch so that the item is retried and resumes after its checkpoint. A
//! migration that ends with no failed item, nothing skipped and nothing refused (what
//! `rfs run` reports as exit 0) has delivered every document exactly as the snapshot holds
//! it; whatever the outcome, no changed document ever reaches the sink.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use connectors::snapshot::{SnapshotOptions, SnapshotSource};
use coordination::Config;
use engine::{
    Delivered, Document, FailureLog, Job, JobOptions, PipelineOptions, Refusal, Sink, SinkError,
    SinkWriter, WorkerOptions,
};
use programs::routes::Rename;
use proptest::prelude::*;

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../demo/repository")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

fn open(repo: &Path) -> snapshot::Snapshot {
    let store = Arc::new(snapshot::LocalStore::open(repo).unwrap());
    snapshot::Repository::open(store)
        .unwrap()
        .snapshot("demo")
        .unwrap()
}

/// The documents of `reviews` as the undamaged snapshot holds them.
fn clean() -> &'static BTreeMap<String, Bytes> {
    static CLEAN: std::sync::OnceLock<BTreeMap<String, Bytes>> = std::sync::OnceLock::new();
    CLEAN.get_or_init(|| {
        let ix = open(&demo()).index("reviews").unwrap();
        let mut out = BTreeMap::new();
        for shard in 0..ix.number_of_shards() {
            let s = ix.open_shard(shard).unwrap();
            let reader = snapshot::ShardReader::open(&s).unwrap();
            for d in reader.documents(0..reader.max_doc()).unwrap() {
                let d = d.unwrap();
                assert!(out.insert(d.id, d.source).is_none());
            }
        }
        out
    })
}

/// The data blobs of shard 0 of `reviews` in `repo`, sorted.
fn blobs(repo: &Path) -> Vec<PathBuf> {
    let ix = open(repo).index("reviews").unwrap();
    let dir = repo.join(ix.shard_dir(0));
    let mut out: Vec<PathBuf> = ix
        .open_shard(0)
        .unwrap()
        .directory()
        .file_infos()
        .filter(|f| !f.is_virtual())
        .map(|f| dir.join(&f.name))
        .collect();
    out.sort();
    out
}

/// Keeps every document it is sent; the `fail_at`-th send (0-based) fails once.
struct Collect {
    got: Mutex<Vec<(String, Bytes)>>,
    sends: AtomicUsize,
    fail_at: Option<usize>,
}

struct W(Vec<Document>);
impl SinkWriter for W {
    type Batch = Vec<Document>;
    fn push(&mut self, doc: Document) -> Result<Option<Vec<Document>>, Box<Refusal>> {
        self.0.push(doc);
        Ok((self.0.len() >= 16).then(|| std::mem::take(&mut self.0)))
    }
    fn finish(&mut self) -> Option<Vec<Document>> {
        (!self.0.is_empty()).then(|| std::mem::take(&mut self.0))
    }
    fn size(b: &Vec<Document>) -> usize {
        b.len() * 200
    }
}

impl Sink for Collect {
    type Writer = W;
    fn writer(&self) -> W {
        W(Vec::new())
    }
    async fn send(&self, docs: Vec<Document>) -> Result<Delivered, SinkError> {
        let n = self.sends.fetch_add(1, Ordering::SeqCst);
        if Some(n) == self.fail_at {
            return Err(SinkError::item("the target went away (once)"));
        }
        let delivered = docs.len() as u64;
        self.got
            .lock()
            .unwrap()
            .extend(docs.into_iter().map(|d| (d.id, d.source)));
        Ok(Delivered {
            possible_duplicates: 0,
            delivered,
            bytes: delivered,
            source_bytes: delivered,
            refused: Vec::new(),
            pressure: Vec::new(),
        })
    }
    fn identity(&self) -> String {
        "memory".into()
    }
}

fn options() -> JobOptions {
    JobOptions {
        parallel: 2,
        worker: WorkerOptions {
            pipeline: PipelineOptions {
                read_ahead: 2,
                in_flight: 2,
                checkpoint_every: Duration::from_millis(5),
                control_every: Duration::from_millis(5),
                skips_per_chunk: 100,
                stop_grace: Duration::from_secs(5),
            },
            wait_for_leases: true,
            poll: Duration::from_millis(10),
            max_items: None,
            failed_item_pause: Duration::from_millis(5),
        },
        coordination: Config {
            initial_lease: Duration::from_secs(30),
            max_attempts: 3,
            poll_interval: Duration::from_millis(10),
            keeper_lease: Duration::from_secs(2),
            ..Config::default()
        },
        memory_budget: 1 << 20,
        migration: None,
        fleet_limits: Default::default(),
    }
}

/// One case: byte `at` (modulo the blob's length) of blob `blob` (modulo their number)
/// xor `mask`, the shard cut every `split` doc ids, the `fail_at`-th send failing once.
fn case(blob: usize, at: usize, mask: u8, split: u64, fail_at: Option<usize>) {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    copy_dir(&demo(), &repo);
    let all = blobs(&repo);
    let path = &all[blob % all.len()];
    let mut bytes = std::fs::read(path).unwrap();
    let at = at % bytes.len();
    bytes[at] ^= mask;
    std::fs::write(path, &bytes).unwrap();
    let what = format!(
        "{} byte {at} ^ {mask:#04x}, split {split}, fail at {fail_at:?}",
        path.file_name().unwrap().to_string_lossy()
    );

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let sink = Arc::new(Collect {
        got: Mutex::new(Vec::new()),
        sends: AtomicUsize::new(0),
        fail_at,
    });
    let source = SnapshotSource::new(
        open(&repo),
        vec!["reviews".to_string()],
        SnapshotOptions {
            split_docs: Some(split),
            verify_checksums: true,
            ..SnapshotOptions::default()
        },
    );
    let url = format!("sqlite://{}", tmp.path().join("state.db").display());
    let report = rt.block_on(async {
        Job::new(
            Arc::new(source),
            Arc::new(Rename::default()),
            sink.clone(),
            coordination::open_store(&url).await.unwrap(),
            Arc::new(FailureLog::open(tmp.path().join("failures.jsonl")).unwrap()),
            options(),
        )
        .run()
        .await
    });
    let got = sink.got.lock().unwrap();
    let clean = clean();
    // never a changed document, whatever happened
    for (id, source) in got.iter() {
        assert_eq!(clean.get(id), Some(source), "{what}: {id} differs");
    }
    // the exit-0 equivalent: every document, as the snapshot holds it
    let Ok(report) = report else { return };
    let Some(st) = report.status else { return };
    if st.items.failed == 0 && st.docs_skipped == 0 && st.docs_refused == 0 {
        let ids: BTreeSet<&String> = got.iter().map(|(id, _)| id).collect();
        assert_eq!(
            ids,
            clean.keys().collect::<BTreeSet<_>>(),
            "{what}: a clean end without every document"
        );
        assert_eq!(st.docs_done, clean.len() as u64, "{what}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn one_changed_byte_anywhere_never_ends_clean_with_a_changed_document(
        blob in 0usize..64,
        at in 0usize..1_000_000,
        mask in 1u8..=255,
        split in 5u64..400,
        fail_at in proptest::option::of(0usize..20),
    ) {
        case(blob, at, mask, split, fail_at);
    }
}

/// The cases that matter most, always run: bytes inside the stored fields (byte 20000 of
/// the largest compound blob, where a flip once changed a word silently) with small splits
/// and a failed send, so that items start inside and after the damaged segment.
#[test]
fn damaged_stored_fields_in_split_and_resumed_items() {
    let all = blobs(&demo());
    let largest = (0..all.len())
        .max_by_key(|&i| std::fs::metadata(&all[i]).unwrap().len())
        .unwrap();
    for (split, fail_at) in [(7, None), (40, Some(1)), (100, Some(3)), (1000, Some(0))] {
        for mask in [0x01, 0x20] {
            case(largest, 20_000, mask, split, fail_at);
        }
    }
}
