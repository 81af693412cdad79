//! A fleet's failure log in object storage (`--failure-log s3://bucket/prefix/`), which
//! outlives the pods that write it: three `rfs run` workers move three indices into the
//! test server, which refuses every document whose id ends in `3`; one worker is SIGKILLed
//! after it has written a part. Read back independently (the parts as s3rver stores them
//! on its disk, gunzipped and parsed here), the prefix holds every refused live document,
//! from all three workers (the killed one's parts included); `rfs status --json` and the
//! dashboard's `/api/dashboard` count them from the whole prefix; once the target accepts
//! them, `rfs redrive --failure-log s3://…` delivers them all, and the target then holds
//! every live document as the fixture's golden output has it.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::Value;
use testkit::server::{Faults, ServerConfig, TestServer};

mod common;
use common::{log_tails, lucene_repository, show};

const SNAPSHOT: &str = "s3log";
const BUCKET: &str = "logs";
const INDICES: [(&str, &str); 3] = [
    ("a", "l10-best_speed-nocfs-soft"),
    ("b", "l8-best_speed-nocfs-nosoft"),
    ("c", "l10-best_compression-cfs-nosoft"),
];

/// `_id` → `_source` of the live documents of a generated fixture (its golden output).
/// The fixture stores each id's text (`doc-00000001`) as the raw bytes of Lucene's `_id`
/// field; Elasticsearch reads such bytes as an id that was base64 (URL-safe, unpadded),
/// so the document's `_id` is that encoding of the text.
fn golden(fixtures: &Path, fixture: &str) -> BTreeMap<String, Value> {
    let path = fixtures
        .join("lucene/generated")
        .join(format!("{fixture}.golden.jsonl"));
    let text = std::fs::read_to_string(&path).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut out = BTreeMap::new();
    for line in text.lines().skip(1) {
        let v: Value = serde_json::from_str(line).unwrap();
        let field = |name: &str| {
            let f = v["fields"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["name"] == name)
                .unwrap();
            b64.decode(f["value"].as_str().unwrap()).unwrap()
        };
        let id = URL_SAFE_NO_PAD.encode(field("_id"));
        let source: Value = serde_json::from_slice(&field("_source")).unwrap();
        out.insert(id, source);
    }
    out
}

/// Every failure-log part under `prefix` in s3rver's data directory, read without rfs:
/// writer directory → records of its parts.
fn parts_on_disk(data: &Path, prefix: &str) -> BTreeMap<String, Vec<Value>> {
    let root = data.join(BUCKET).join(prefix);
    let mut out: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let Ok(writers) = std::fs::read_dir(&root) else {
        return out;
    };
    for w in writers {
        let w = w.unwrap().path();
        if !w.is_dir() {
            continue;
        }
        let writer = w.file_name().unwrap().to_string_lossy().into_owned();
        let mut names: Vec<PathBuf> = std::fs::read_dir(&w)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".ndjson.gz._S3rver_object"))
            // s3rver streams a PUT's body into the object file and writes the metadata
            // once the body is whole: an upload cut by the SIGKILL leaves a truncated
            // object without metadata, which no S3 listing or GET returns.
            .filter(|p| {
                let base = p.to_string_lossy();
                let base = base.trim_end_matches("._S3rver_object");
                PathBuf::from(format!("{base}._S3rver_metadata.json")).exists()
            })
            .collect();
        names.sort();
        let records = out.entry(writer).or_default();
        for p in names {
            let mut text = String::new();
            flate2::read::GzDecoder::new(std::fs::File::open(&p).unwrap())
                .read_to_string(&mut text)
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                records.push(serde_json::from_str(line).unwrap());
            }
        }
    }
    out
}

struct Workers(Vec<Option<Child>>);

impl Drop for Workers {
    fn drop(&mut self) {
        for c in self.0.iter_mut().flatten() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn get_json(url: &str) -> Value {
    reqwest::blocking::get(url).unwrap().json().unwrap()
}

#[test]
fn a_fleets_failure_log_in_s3_is_read_whole_by_status_the_dashboard_and_redrive() {
    let test = "failure_log_s3";
    let Some(fixtures) = testkit::fixtures::require_fixtures(test) else {
        return;
    };
    let Some(s3) = testkit::services::S3rver::start(test) else {
        return;
    };
    s3.create_bucket(BUCKET);
    let work = tempfile::tempdir().unwrap();
    let repo = work.path().join("repo");
    let live = lucene_repository(&fixtures, &repo, SNAPSHOT, &INDICES);

    // Every id ending in 3 is refused; what is live of them must end up in the log.
    let failing: BTreeSet<String> = (0..=2000)
        .map(|n| format!("doc-{n:08}"))
        .filter(|text| text.ends_with('3'))
        .map(|text| URL_SAFE_NO_PAD.encode(text))
        .collect();
    let golden: BTreeMap<&str, BTreeMap<String, Value>> = INDICES
        .iter()
        .map(|(ix, fx)| (*ix, golden(&fixtures, fx)))
        .collect();
    for (ix, docs) in &golden {
        assert_eq!(
            docs.len() as u64,
            live[*ix],
            "{ix}: golden output and expectedLive"
        );
    }
    let want_refused: BTreeSet<(String, String)> = golden
        .iter()
        .flat_map(|(ix, docs)| {
            docs.keys()
                .filter(|id| failing.contains(*id))
                .map(|id| (ix.to_string(), id.clone()))
        })
        .collect();
    assert!(want_refused.len() > 300, "{}", want_refused.len());

    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    server.set_faults(Faults {
        failing_ids: failing.clone(),
        bulk_only: true,
        ..Faults::default()
    });
    let prefix = "fleet/failures";
    let log_url = format!(
        "s3://{BUCKET}/{prefix}/?endpoint={}&region={}",
        s3.endpoint(),
        s3.region()
    );
    let store = format!("sqlite://{}", work.path().join("state.db").display());
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_rfs"));
    let aws = |c: &mut Command| {
        c.env("AWS_ACCESS_KEY_ID", s3.access_key())
            .env("AWS_SECRET_ACCESS_KEY", s3.secret_key())
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_PROFILE")
            .env_remove("RFS_FAILURE_LOG");
    };
    let spawn = |slot: usize| {
        let log = std::fs::File::create(work.path().join(format!("worker-{slot}.log"))).unwrap();
        let mut c = Command::new(&bin);
        c.arg("run")
            .arg("--repo")
            .arg(&repo)
            .args(["--snapshot", SNAPSHOT, "--target", &server.url()])
            .args(["--store", &store, "--failure-log", &log_url])
            .args(["--lease-seconds", "600", "--renew-seconds", "1"])
            .args(["--checkpoint-seconds", "0.3", "--control-seconds", "0.2"])
            .args(["--max-batch-docs", "25", "--max-docs-per-sec", "150"])
            .args(["--parallel", "1", "--max-attempts", "20", "--no-progress"])
            .env("RFS_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        aws(&mut c);
        c.spawn().expect("spawn rfs run")
    };
    let mut workers = Workers((0..3).map(|slot| Some(spawn(slot))).collect());

    // Kill the worker whose parts appear first, once it has written two.
    let data = s3.data_dir();
    let started = Instant::now();
    let killed_writer = loop {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no worker wrote two parts in time\n{}",
            log_tails(work.path())
        );
        std::thread::sleep(Duration::from_millis(100));
        let parts = parts_on_disk(&data, prefix);
        let Some((writer, _)) = parts.iter().find(|(_, r)| r.len() >= 2) else {
            continue;
        };
        // The writer's name holds the process id: `HOST-PID-TAG`.
        let slot = (0..3).find(|&s| {
            let pid = workers.0[s].as_ref().unwrap().id();
            writer.contains(&format!("-{pid}-"))
        });
        let Some(slot) = slot else { continue };
        let mut child = workers.0[slot].take().unwrap();
        child.kill().unwrap(); // SIGKILL
        let _ = child.wait();
        break writer.clone();
    };

    // The other two finish the work (the killed worker's item once its lease is out):
    // exit 7, documents not delivered.
    for (slot, w) in workers.0.iter_mut().enumerate() {
        let Some(c) = w else { continue };
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            if let Some(st) = c.try_wait().unwrap() {
                assert_eq!(
                    st.code(),
                    Some(7),
                    "worker {slot}\n{}",
                    log_tails(work.path())
                );
                break;
            }
            assert!(
                Instant::now() < deadline,
                "worker {slot} did not finish\n{}",
                log_tails(work.path())
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        *w = None;
    }

    // Read independently: every refused live document is in the prefix, nothing else.
    let parts = parts_on_disk(&data, prefix);
    assert!(
        parts.contains_key(&killed_writer) && parts[&killed_writer].len() >= 2,
        "the killed worker's parts are kept: {:?}",
        parts.keys().collect::<Vec<_>>()
    );
    let writers_with_parts = parts.values().filter(|r| !r.is_empty()).count();
    assert!(
        writers_with_parts >= 2,
        "{:?}",
        parts.keys().collect::<Vec<_>>()
    );
    let mut logged = BTreeSet::new();
    let mut records = 0u64;
    for r in parts.values().flatten() {
        records += 1;
        assert_eq!(r["stage"], "target", "{r}");
        assert_eq!(r["error_type"], "mapper_parsing_exception", "{r}");
        let (ix, id) = (r["index"].as_str().unwrap(), r["id"].as_str().unwrap());
        // With the document's source, so that it can be re-driven.
        assert_eq!(r["source"], golden[ix][id], "{ix}/{id}");
        logged.insert((ix.to_string(), id.to_string()));
    }
    assert_eq!(logged, want_refused);

    // `rfs status` counts the whole prefix (a re-sent batch's refusals are in it twice).
    let st = Command::new(&bin)
        .args([
            "status",
            "--json",
            "--store",
            &store,
            "--failure-log",
            &log_url,
        ])
        .env("AWS_ACCESS_KEY_ID", s3.access_key())
        .env("AWS_SECRET_ACCESS_KEY", s3.secret_key())
        .output()
        .unwrap();
    assert!(st.status.success(), "{}", show(&st));
    let v: Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!(
        v["failed_documents_by_type"]["mapper_parsing_exception"], records,
        "{v}"
    );
    // No secret from the URL's query or the environment in what status prints.
    let printed = String::from_utf8_lossy(&st.stdout) + String::from_utf8_lossy(&st.stderr);
    assert!(!printed.contains(s3.secret_key()), "{printed}");

    // The dashboard too.
    let mut serve = Command::new(&bin);
    serve
        .args(["status", "--serve", "127.0.0.1:0", "--store", &store])
        .args(["--failure-log", &log_url])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    aws(&mut serve);
    let mut dash = Workers(vec![Some(serve.spawn().unwrap())]);
    let out = dash.0[0].as_mut().unwrap().stdout.take().unwrap();
    let first = BufReader::new(out).lines().next().unwrap().unwrap();
    let url = first
        .strip_prefix("dashboard on ")
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let d = get_json(&format!("{url}/api/dashboard"));
        if d["failures"]["by_type"]["mapper_parsing_exception"] == records {
            let newest = d["failures"]["newest"].as_array().unwrap();
            assert!(!newest.is_empty(), "{d}");
            let e = &newest[0];
            let key = (
                e["index"].as_str().unwrap().to_string(),
                e["id"].as_str().unwrap().to_string(),
            );
            assert!(want_refused.contains(&key), "{e}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the dashboard never counted the prefix: {d}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    drop(dash);

    // The cause fixed, a re-drive of the prefix delivers every refused document once.
    server.set_faults(Faults::default());
    let mut redrive = Command::new(&bin);
    redrive
        .args([
            "redrive",
            "--failure-log",
            &log_url,
            "--target",
            &server.url(),
        ])
        .env("RFS_LOG", "info");
    aws(&mut redrive);
    let out = redrive.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let said = show(&out);
    assert!(
        said.contains(&format!(
            "{} documents delivered, 0 refused again",
            want_refused.len()
        )),
        "{said}"
    );
    for (ix, docs) in &golden {
        let held = server.documents(ix);
        assert_eq!(held.len(), docs.len(), "{ix}");
        for (id, source) in docs {
            assert_eq!(held.get(id), Some(source), "{ix}/{id}");
        }
    }
}
