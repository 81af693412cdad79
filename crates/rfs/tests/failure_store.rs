//! Failure-store indices (issue #42): Elasticsearch 8.15+ keeps the documents a data
//! stream refused at ingestion in `.fs-…` indices, listed in the stream's
//! `failure_indices` (elastic/elasticsearch `DataStream.java`, `FAILURE_INDICES_FIELD`;
//! elastic.co "Failure store": a secondary set of indices inside a data stream, dedicated
//! to failed documents, searched apart with the `::failures` selector). They are not the
//! stream's data: `run` and `export` leave them out unless listed, with a WARN naming
//! each one, its data stream and how to list it; listed, one is migrated as an ordinary
//! index of its name (never into the data stream); `inspect` says so for each.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use serde_json::{json, Map, Value};
use snapshot::write::{
    write_repository, DataStreamSpec, IndexSpec, ShardSource, SnapshotSpec, WriteOptions,
};
use snapshot::TypeMapping;
use testkit::server::{ServerConfig, TestServer};

const SNAPSHOT: &str = "es8-nightly";
const STREAM: &str = "logs-app-default";
const BACKING: &str = ".ds-logs-app-default-2024.01.01-000001";
const FAILURES: &str = ".fs-logs-app-default-2024.01.01-000002";

fn index(name: &str, shard: &Path) -> IndexSpec {
    IndexSpec {
        name: name.into(),
        settings: json!({"index.hidden": "true"})
            .as_object()
            .cloned()
            .unwrap(),
        mappings: vec![TypeMapping {
            doc_type: "_doc".into(),
            mapping: testkit::fixtures::vector_mapping(),
        }],
        aliases: Map::new(),
        shards: vec![ShardSource::Lucene(Arc::new(
            lucene::FsDirectory::open(shard).unwrap(),
        ))],
        extra: Map::new(),
    }
}

/// An Elasticsearch 8.15 snapshot of data stream `logs-app-default`: its backing index
/// holds the documents of vector shard 1, its failure store those of shard 0.
fn write_repository_with_failure_store(dest: &Path) {
    let shards = testkit::fixtures::vector_shards();
    let mut spec = SnapshotSpec::new(SNAPSHOT);
    spec.version_id = 8_512_000;
    spec.index_version = Some(8_512_000);
    spec.indices = vec![index(BACKING, &shards[1].0), index(FAILURES, &shards[0].0)];
    spec.data_streams = vec![DataStreamSpec {
        name: STREAM.into(),
        timestamp_field: "@timestamp".into(),
        indices: vec![BACKING.into()],
    }];
    spec.failure_indices
        .insert(STREAM.into(), vec![FAILURES.into()]);
    spec.index_templates.insert(
        "logs-app".into(),
        json!({"index_patterns": ["logs-app-*"], "data_stream": {}, "priority": 200,
               "template": {"mappings": testkit::fixtures::vector_mapping()}}),
    );
    write_repository(dest, &[spec], &WriteOptions::default()).unwrap();
}

/// The `_id`s of vector shard `n`.
fn ids(n: usize) -> Vec<String> {
    let (_, file) = &testkit::fixtures::vector_shards()[n];
    let mut ids: Vec<String> = std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["_id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    ids.sort();
    ids
}

fn rfs(args: &[&str], repo: &Path, work: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rfs"))
        .env_remove("RFS_CONFIG")
        .env_remove("RFS_INDEX")
        .args(args)
        .arg(repo)
        .current_dir(work)
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn run(repo: &Path, target: &str, work: &Path, extra: &[&str]) -> Output {
    let store = format!("sqlite://{}", work.join("state.db").display());
    let log = work.join("failures.jsonl");
    let mut args = vec![
        "run",
        "--snapshot",
        SNAPSHOT,
        "--target",
        target,
        "--no-progress",
        "--store",
        &store,
        "--failure-log",
        log.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.push("--repo");
    rfs(&args, repo, work)
}

/// The WARN line that names the failure store left out.
fn left_out_warning(all: &str) -> Option<&str> {
    all.lines().find(|l| {
        l.contains("WARN")
            && l.contains(FAILURES)
            && l.contains(&format!("failure store of data stream {STREAM}"))
            && l.contains(&format!("--index '{FAILURES}'"))
    })
}

fn sorted_ids(docs: &BTreeMap<String, Value>) -> Vec<String> {
    docs.keys().cloned().collect()
}

#[test]
fn failure_store_indices_are_left_out_by_name_unless_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    write_repository_with_failure_store(&repo);

    // inspect: the failure store named, with what happens to it
    let out = rfs(&["inspect", "--snapshot", SNAPSHOT], &repo, tmp.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let all = text(&out);
    assert!(
        all.contains(&format!("failure store of data stream {STREAM}"))
            && all.contains("left out unless listed (--index)"),
        "{all}"
    );

    // run, no --index: the stream's documents arrive, the failure store's do not, and a
    // WARN names it
    let server = TestServer::start(ServerConfig::elasticsearch("8.15.3"));
    let work = tmp.path().join("default");
    std::fs::create_dir_all(&work).unwrap();
    let out = run(&repo, &server.url(), &work, &[]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(left_out_warning(&all).is_some(), "{all}");
    let streams = server.data_streams();
    let backing = streams.get(STREAM).unwrap_or_else(|| panic!("{all}"))[0].clone();
    assert_eq!(sorted_ids(&server.documents(&backing)), ids(1));
    assert!(server.index(FAILURES).is_none(), "{all}");
    assert_eq!(server.total_doc_count(), ids(1).len() as u64, "{all}");

    // run, listed: the failure store becomes an ordinary index of its name, every one of
    // its documents in it; the data stream as before
    let server = TestServer::start(ServerConfig::elasticsearch("8.15.3"));
    let work = tmp.path().join("listed");
    std::fs::create_dir_all(&work).unwrap();
    let out = run(
        &repo,
        &server.url(),
        &work,
        &["--index", &format!("{STREAM},{FAILURES}")],
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(left_out_warning(&all).is_none(), "{all}");
    assert_eq!(sorted_ids(&server.documents(FAILURES)), ids(0), "{all}");
    let streams = server.data_streams();
    let backing = streams.get(STREAM).unwrap_or_else(|| panic!("{all}"))[0].clone();
    assert_eq!(sorted_ids(&server.documents(&backing)), ids(1));
    assert!(
        !streams.values().flatten().any(|i| i == FAILURES),
        "{streams:?}"
    );

    // export, no --index: the backing index only, the failure store named in a WARN;
    // listed: its documents under its name
    let export = |extra: &[&str]| {
        let mut args = vec![
            "export",
            "--snapshot",
            SNAPSHOT,
            "--format",
            "jsonl",
            "--out",
            "-",
        ];
        args.extend_from_slice(extra);
        rfs(&args, &repo, tmp.path())
    };
    let by_index = |out: &Output| {
        let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for l in String::from_utf8_lossy(&out.stdout).lines() {
            let v: Value = serde_json::from_str(l).unwrap();
            m.entry(v["_index"].as_str().unwrap().to_string())
                .or_default()
                .push(v["_id"].as_str().unwrap().to_string());
        }
        m.values_mut().for_each(|v| v.sort());
        m
    };
    let out = export(&[]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(left_out_warning(&all).is_some(), "{all}");
    assert_eq!(
        by_index(&out),
        BTreeMap::from([(BACKING.to_string(), ids(1))]),
        "{all}"
    );
    let out = export(&["--index", ".fs-*"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        by_index(&out),
        BTreeMap::from([(FAILURES.to_string(), ids(0))]),
        "{}",
        text(&out)
    );
}
