//! `rfs status --serve` in a real browser: two `rfs run` workers migrate the demo
//! repository into the test server (throttled so the run can be watched, three documents
//! refused by the target), headless Chromium opens the page through chromedriver, and the
//! test reads what the page shows: the numbers equal `rfs status --json`, the Pause button
//! pauses every worker (and the page says so), Resume lets the run finish at 100 %.
//! Screenshots go to `target/tmp/dashboard/`.
//!
//! A second test plants a password in a PostgreSQL store URL and a token in the
//! environment, fetches every endpoint and the page, and looks for both in everything the
//! server sends or prints — also while the store is down, when the page must say so.
//!
//! Chromium and chromedriver: Debian `chromium` and `chromium-driver`
//! (`scripts/install-test-deps`), or `RFS_CHROMIUM` / `RFS_CHROMEDRIVER`. Missing, the
//! browser parts skip with a message; under `CI=true` they fail.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};
use testkit::server::{Faults, ServerConfig, TestServer};

const DEMO_SNAPSHOT: &str = "demo";
/// Live documents of the demo snapshot, per index.
const DEMO_LIVE: &[(&str, u64)] = &[("books", 1326), ("reviews", 473)];
/// Documents the target refuses (a 400 `mapper_parsing_exception` each).
const REFUSED: &[&str] = &["book:00007", "book:00100", "review:00005"];

fn demo_repo() -> PathBuf {
    testkit::fixtures::workspace_root().join("demo/repository")
}

fn live_total() -> u64 {
    DEMO_LIVE.iter().map(|(_, n)| n).sum()
}

/// Live documents less the refused ones.
fn delivered_total() -> u64 {
    live_total() - REFUSED.len() as u64
}

/// `rfs` without any `RFS_*` variable of the environment the tests run in.
fn rfs() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rfs"));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("RFS_") {
            c.env_remove(k);
        }
    }
    c.env("RFS_LOG", "warn");
    c
}

/// Child processes killed (with their process group) when the test ends, however it ends.
struct Procs(Vec<Child>);

impl Procs {
    fn spawn(&mut self, mut cmd: Command) -> usize {
        cmd.process_group(0);
        self.0.push(cmd.spawn().expect("spawn"));
        self.0.len() - 1
    }
}

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            if let Ok(None) = c.try_wait() {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(c.id() as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
                let _ = c.wait();
            }
        }
    }
}

/// Starts `rfs status --serve 127.0.0.1:0 …` and returns its URL (from its first line).
fn serve(procs: &mut Procs, mut cmd: Command, stdout_log: &Path) -> String {
    cmd.stdout(Stdio::piped());
    let i = procs.spawn(cmd);
    let out = procs.0[i].stdout.take().unwrap();
    let mut lines = BufReader::new(out).lines();
    let first = lines
        .next()
        .expect("rfs status --serve printed nothing")
        .unwrap();
    let url = first
        .strip_prefix("dashboard on ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_string();
    // Keep draining stdout into a file so the server never blocks on a full pipe.
    let path = stdout_log.to_path_buf();
    std::thread::spawn(move || {
        let mut text = format!("{first}\n");
        for l in lines.map_while(Result::ok) {
            text.push_str(&l);
            text.push('\n');
            let _ = std::fs::write(&path, &text);
        }
        let _ = std::fs::write(&path, &text);
    });
    url
}

fn status_json(store: &str, failure_logs: &[PathBuf]) -> Value {
    let mut c = rfs();
    c.args(["status", "--json", "--store", store]);
    for f in failure_logs {
        c.arg("--failure-log").arg(f);
    }
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "rfs status --json: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

// ---- the browser -------------------------------------------------------------------

struct Browser {
    client: Client,
    _driver: Procs,
    _profile: tempfile::TempDir,
}

fn find_program(env: &str, candidates: &[&str]) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env) {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    for c in candidates {
        let p = Path::new(c);
        if p.is_absolute() {
            if p.is_file() {
                return Some(p.to_path_buf());
            }
        } else if let Some(dir) = std::env::var_os("PATH")
            .and_then(|path| std::env::split_paths(&path).find(|d| d.join(c).is_file()))
        {
            return Some(dir.join(c));
        }
    }
    None
}

impl Browser {
    /// Headless Chromium through chromedriver on a free port; `None` (skip) when either is
    /// missing outside CI.
    async fn start(test: &str) -> Option<Browser> {
        let chromium = find_program(
            "RFS_CHROMIUM",
            &["/usr/lib/chromium/chromium", "chromium", "chromium-browser"],
        );
        let driver = find_program("RFS_CHROMEDRIVER", &["chromedriver"]);
        let (Some(chromium), Some(driver)) = (chromium, driver) else {
            // testkit's one skip helper: counted as skipped (not passed), a failure in CI.
            testkit::fixtures::skip(
                test,
                "Chromium or chromedriver not found (Debian chromium and chromium-driver; run scripts/install-test-deps, or set RFS_CHROMIUM/RFS_CHROMEDRIVER)",
            );
            return None;
        };
        let profile = tempfile::Builder::new()
            .prefix("rfs-chromium-")
            .tempdir()
            .unwrap();
        let mut procs = Procs(Vec::new());
        let mut last_err = String::new();
        for _ in 0..3 {
            let port = testkit::services::free_port();
            let log = std::fs::File::create(profile.path().join("chromedriver.log")).unwrap();
            let mut cmd = Command::new(&driver);
            cmd.arg(format!("--port={port}"))
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log);
            procs.spawn(cmd);
            let url = format!("http://127.0.0.1:{port}");
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline
                && std::net::TcpStream::connect(("127.0.0.1", port)).is_err()
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let mut caps = serde_json::Map::new();
            caps.insert(
                "goog:chromeOptions".into(),
                json!({
                    "binary": chromium,
                    "args": [
                        "--headless",
                        "--no-sandbox",
                        "--disable-gpu",
                        "--disable-quic",
                        "--no-first-run",
                        "--disable-background-networking",
                        "--disable-component-update",
                        "--disable-sync",
                        "--disable-dev-shm-usage",
                        "--window-size=1280,1500",
                        format!("--user-data-dir={}", profile.path().join("profile").display()),
                    ],
                }),
            );
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(caps)
                .connect(&url)
                .await
            {
                Ok(client) => {
                    return Some(Browser {
                        client,
                        _driver: procs,
                        _profile: profile,
                    })
                }
                Err(e) => last_err = e.to_string(),
            }
        }
        panic!(
            "{test}: no WebDriver session: {last_err}\n{}",
            std::fs::read_to_string(profile.path().join("chromedriver.log")).unwrap_or_default()
        );
    }

    async fn close(self) {
        let _ = self.client.close().await;
    }

    /// What the page shows, read from its DOM text.
    async fn read(&self) -> Page {
        let v = self
            .client
            .execute(
                r##"
                const t = (id) => { const e = document.getElementById(id); return e ? e.textContent : null; };
                const groups = {};
                document.querySelectorAll("#indices tr[data-group]").forEach((tr) => {
                    groups[tr.getAttribute("data-group")] = tr.children[2].textContent;
                });
                const items = {};
                document.querySelectorAll("#item-counts span[id^='items-']").forEach((s) => {
                    items[s.id.slice(6)] = s.querySelector("b").textContent;
                });
                const newest = [];
                document.querySelectorAll("#newest tr").forEach((tr, i) => {
                    if (i > 0 && tr.children.length >= 4) newest.push([tr.children[2].textContent, tr.children[3].textContent]);
                });
                const banner = document.getElementById("banner");
                return {
                    state: t("state"), docs_done: t("docs-done"), live_docs: t("live-docs"),
                    percent: t("percent"), control: t("control"), note: t("control-note"),
                    migration: t("migration"),
                    banner: banner.hidden ? "" : banner.textContent,
                    groups, items, newest,
                };
                "##,
                vec![],
            )
            .await
            .expect("read the page");
        serde_json::from_value(v).expect("page reading")
    }

    /// Reads the page until `ok` holds, for at most `secs`.
    async fn wait_for(&self, secs: u64, what: &str, ok: impl Fn(&Page) -> bool) -> Page {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let p = self.read().await;
            if ok(&p) {
                return p;
            }
            assert!(
                Instant::now() < deadline,
                "the page never showed {what}; it shows {p:#?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn click(&self, id: &str) {
        let b = self.client.find(Locator::Id(id)).await.unwrap();
        assert!(b.is_enabled().await.unwrap(), "button {id} is disabled");
        b.click().await.unwrap();
    }

    async fn screenshot(&self, name: &str) -> PathBuf {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("dashboard");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, self.client.screenshot().await.unwrap()).unwrap();
        eprintln!("screenshot: {}", path.display());
        path
    }
}

#[derive(Debug, Clone, serde::Deserialize)]
struct Page {
    state: String,
    docs_done: String,
    live_docs: String,
    percent: String,
    control: String,
    note: String,
    /// The migration the store belongs to, as the header shows it.
    migration: String,
    banner: String,
    groups: BTreeMap<String, String>,
    items: BTreeMap<String, String>,
    /// (id, error type) of the newest refused documents.
    newest: Vec<(String, String)>,
}

/// "1,326" → 1326.
fn number(s: &str) -> Option<u64> {
    let digits: String = s.chars().filter(|c| c.is_ascii_digit()).collect();
    (!digits.is_empty() && s.chars().all(|c| c.is_ascii_digit() || c == ','))
        .then(|| digits.parse().ok())
        .flatten()
}

/// The figures of the page and of `rfs status --json` that must be equal, side by side;
/// `None` when they are.
fn differences(page: &Page, status: &Value) -> Option<String> {
    let mut pairs: Vec<(String, Option<u64>, Option<u64>)> = vec![
        (
            "docs_done".into(),
            number(&page.docs_done),
            status["docs_done"].as_u64(),
        ),
        (
            "live_docs".into(),
            number(&page.live_docs),
            status["live_docs"].as_u64(),
        ),
    ];
    for k in ["total", "done", "leased", "waiting", "failed"] {
        pairs.push((
            format!("items.{k}"),
            page.items.get(k).and_then(|s| number(s)),
            status["items"][k].as_u64(),
        ));
    }
    let per = status["per_index"].as_object().cloned().unwrap_or_default();
    for (name, p) in &per {
        pairs.push((
            format!("{name}.docs_done"),
            page.groups.get(name).and_then(|s| number(s)),
            p["docs_done"].as_u64(),
        ));
    }
    let mut diffs: Vec<String> = pairs
        .into_iter()
        .filter(|(_, shown, want)| shown != want)
        .map(|(what, shown, want)| format!("{what}: page {shown:?}, status {want:?}"))
        .collect();
    if per.len() != page.groups.len() {
        diffs.push(format!(
            "indices: page {:?}, status {:?}",
            page.groups.keys(),
            per.keys()
        ));
    }
    if status["control"].as_str() != Some(page.control.as_str()) {
        diffs.push(format!(
            "control: page {:?}, status {}",
            page.control, status["control"]
        ));
    }
    // The migration's identity, as `rfs status` prints it (key=value in key order).
    let identity = status["migration"].as_object().map(|m| {
        m.iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("?")))
            .collect::<Vec<_>>()
            .join(", ")
    });
    match identity {
        Some(id) if id == page.migration => {}
        None if page.migration == "(identity not recorded yet)" => {}
        other => diffs.push(format!(
            "migration: page {:?}, status {other:?}",
            page.migration
        )),
    }
    (!diffs.is_empty()).then(|| diffs.join("; "))
}

/// Waits until the page and `rfs status --json` agree (the page trails the store by up to
/// one reading, so a running migration needs a moment without a checkpoint).
async fn until_equal(browser: &Browser, store: &str, logs: &[PathBuf], secs: u64) -> (Page, Value) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let before = browser.read().await;
        let status = status_json(store, logs);
        let after = browser.read().await;
        for p in [before, after] {
            if differences(&p, &status).is_none() {
                return (p, status);
            }
        }
        let p = browser.read().await;
        assert!(
            Instant::now() < deadline,
            "the page never equalled rfs status --json: {}\nstatus: {status:#}",
            differences(&p, &status).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

fn logs_text(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| {
            format!(
                "--- {}\n{}",
                p.display(),
                std::fs::read_to_string(p).unwrap_or_default()
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_follows_a_migration_and_pauses_it_from_the_browser() {
    let Some(browser) = Browser::start("dashboard_follows_a_migration").await else {
        return;
    };
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    target.set_faults(Faults {
        failing_ids: REFUSED.iter().map(|s| s.to_string()).collect(),
        ..Faults::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite://{}", dir.path().join("state.db").display());
    let failure_logs: Vec<PathBuf> = (0..2)
        .map(|i| dir.path().join(format!("failures-{i}.jsonl")))
        .collect();
    let worker_logs: Vec<PathBuf> = (0..2)
        .map(|i| dir.path().join(format!("worker-{i}.log")))
        .collect();

    let mut procs = Procs(Vec::new());
    // The page server first: it must cope with a store that has no migration yet.
    let mut status_cmd = rfs();
    status_cmd
        .args([
            "status",
            "--serve",
            "127.0.0.1:0",
            "--serve-interval",
            "0.5",
        ])
        .args(["--store", &store])
        .stderr(std::fs::File::create(dir.path().join("serve.log")).unwrap());
    for f in &failure_logs {
        status_cmd.arg("--failure-log").arg(f);
    }
    let url = serve(&mut procs, status_cmd, &dir.path().join("serve.out"));

    // Two workers, 20 documents/s each: about 45 s for the 1799 documents.
    let mut workers = Vec::new();
    for i in 0..2 {
        let log = std::fs::File::create(&worker_logs[i]).unwrap();
        let mut c = rfs();
        c.arg("run")
            .arg("--repo")
            .arg(demo_repo())
            .args(["--snapshot", DEMO_SNAPSHOT, "--target", &target.url()])
            .args(["--store", &store])
            .arg("--failure-log")
            .arg(&failure_logs[i])
            .args(["--max-docs-per-sec", "20", "--max-batch-docs", "10"])
            .args(["--checkpoint-seconds", "2", "--control-seconds", "0.2"])
            .arg("--no-progress")
            .env("RFS_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        workers.push(procs.spawn(c));
    }

    browser.client.goto(&url).await.unwrap();
    // Running, with documents moving and the totals known.
    browser
        .wait_for(60, "a running migration", |p| {
            p.state == "RUNNING"
                && number(&p.docs_done).is_some_and(|d| d > 0)
                && number(&p.live_docs).is_some()
        })
        .await;
    let (page, status) = until_equal(&browser, &store, &failure_logs, 30).await;
    assert_eq!(number(&page.live_docs), Some(live_total()), "{page:#?}");
    assert_eq!(
        status["finished"], false,
        "the run ended too soon to be watched: {status:#}"
    );
    // Let the rate chart gather a few seconds, then keep a picture of the running page.
    tokio::time::sleep(Duration::from_secs(4)).await;
    browser.screenshot("dashboard-running.png").await;

    // Pause from the page: every worker checkpoints, releases its item and waits.
    browser.click("pause").await;
    let paused = browser
        .wait_for(60, "PAUSED", |p| p.state == "PAUSED")
        .await;
    assert_eq!(paused.control, "PAUSE");
    assert!(
        paused.note.contains("Every worker has paused"),
        "{paused:#?}"
    );
    let (page, status) = until_equal(&browser, &store, &failure_logs, 20).await;
    assert_eq!(status["control"], "PAUSE");
    assert_eq!(status["items"]["leased"], 0, "{status:#}");
    let done_at_pause = status["docs_done"].as_u64().unwrap();
    assert!(
        done_at_pause < live_total(),
        "the run finished before it could be paused: {status:#}"
    );
    // Nothing reaches the target while paused, and no worker has exited.
    let before = target.total_doc_count();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        target.total_doc_count(),
        before,
        "documents written while paused"
    );
    for &w in &workers {
        assert!(
            procs.0[w].try_wait().unwrap().is_none(),
            "a worker exited while paused:\n{}",
            logs_text(&worker_logs)
        );
    }
    // Each worker says it is paused (between items, or at a checkpoint inside one).
    let deadline = Instant::now() + Duration::from_secs(20);
    while !worker_logs.iter().all(|l| {
        std::fs::read_to_string(l)
            .unwrap_or_default()
            .contains("paused")
    }) {
        assert!(
            Instant::now() < deadline,
            "not every worker logged its pause:\n{}",
            logs_text(&worker_logs)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(differences(&browser.read().await, &status), None);
    browser.screenshot("dashboard-paused.png").await;
    drop(page);

    // Resume from the page; the run finishes at 100 %.
    browser.click("resume").await;
    browser
        .wait_for(20, "RUN after resume", |p| p.control == "RUN")
        .await;
    let done = browser
        .wait_for(180, "FINISHED", |p| p.state == "FINISHED")
        .await;
    // Done means delivered: the refused documents keep the run below 100 %.
    assert_eq!(done.percent, "(99.8 %)", "{done:#?}");
    assert_eq!(number(&done.docs_done), Some(delivered_total()));
    for &w in &workers {
        let code = procs.0[w].wait().unwrap();
        // 7: finished, but some documents were not delivered.
        assert_eq!(
            code.code(),
            Some(7),
            "worker: {code}\n{}",
            logs_text(&worker_logs)
        );
    }
    let (page, status) = until_equal(&browser, &store, &failure_logs, 20).await;
    assert_eq!(status["finished"], true, "{status:#}");
    assert_eq!(status["docs_done"].as_u64(), Some(delivered_total()));
    assert_eq!(status["docs_refused"].as_u64(), Some(REFUSED.len() as u64));
    assert_eq!(status["items"]["done"], status["items"]["total"]);
    for (index, live) in DEMO_LIVE {
        let refused = REFUSED
            .iter()
            .filter(|id| index.starts_with(id.split(':').next().unwrap()))
            .count() as u64;
        assert_eq!(
            number(&page.groups[*index]),
            Some(*live - refused),
            "{page:#?}"
        );
    }
    // The target (read directly) holds every live document but the refused ones.
    assert_eq!(
        target.total_doc_count(),
        live_total() - REFUSED.len() as u64
    );
    // The refused documents are listed with their reason.
    let page = browser
        .wait_for(10, "the refused documents", |p| {
            p.newest.len() == REFUSED.len()
        })
        .await;
    let mut shown: Vec<&str> = page.newest.iter().map(|(id, _)| id.as_str()).collect();
    shown.sort();
    assert_eq!(shown, REFUSED);
    assert!(page
        .newest
        .iter()
        .all(|(_, t)| t == "mapper_parsing_exception"));
    browser.screenshot("dashboard-finished.png").await;
    browser.close().await;
}

/// Status code, and the headers and body as text.
async fn fetch(resp: reqwest::Response) -> (u16, String) {
    let status = resp.status().as_u16();
    let head = format!("{:?}", resp.headers());
    let body = resp.text().await.unwrap();
    (status, format!("{head}\n{body}\n"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_never_shows_a_secret() {
    const PASSWORD: &str = "Pl4nted-store-pw";
    const TOKEN: &str = "tok-0123456789-never-shown";
    let Some(mut pg) = testkit::services::Postgres::start("dashboard_never_shows_a_secret") else {
        return;
    };
    // The test PostgreSQL trusts every local connection, so any password is accepted.
    let store = pg
        .url()
        .replacen("postgres@", &format!("postgres:{PASSWORD}@"), 1);
    assert!(store.contains(PASSWORD));
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    target.set_faults(Faults {
        failing_ids: REFUSED.iter().map(|s| s.to_string()).collect(),
        ..Faults::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let failure_log = dir.path().join("failures.jsonl");
    let out = rfs()
        .arg("run")
        .arg("--repo")
        .arg(demo_repo())
        .args(["--snapshot", DEMO_SNAPSHOT, "--target", &target.url()])
        .args(["--store", &store])
        .arg("--failure-log")
        .arg(&failure_log)
        .arg("--no-progress")
        .output()
        .unwrap();
    // 7: finished, with the refused documents not delivered.
    assert_eq!(
        out.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A failure-log line that quotes the secret, as a careless error message might.
    let mut log = std::fs::read_to_string(&failure_log).unwrap();
    log.push_str(
        &json!({
            "time": "2030-01-01T00:00:00Z", "index": "books", "id": "planted", "status": 500,
            "error_type": "planted_error", "attempts": 1,
            "reason": format!("store postgres://postgres:{PASSWORD}@db/x said {PASSWORD}"),
        })
        .to_string(),
    );
    log.push('\n');
    std::fs::write(&failure_log, log).unwrap();

    let mut procs = Procs(Vec::new());
    let serve_err = dir.path().join("serve.log");
    let serve_out = dir.path().join("serve.out");
    let mut c = rfs();
    c.args([
        "status",
        "--serve",
        "127.0.0.1:0",
        "--serve-interval",
        "0.3",
    ])
    .args(["--store", &store])
    .arg("--failure-log")
    .arg(&failure_log)
    .env("RFS_SERVE_TOKEN", TOKEN)
    .env("RFS_LOG", "info")
    .stderr(std::fs::File::create(&serve_err).unwrap());
    let url = serve(&mut procs, c, &serve_out);
    let http = reqwest::Client::new();
    let mut seen = String::new();
    let wait_status = Instant::now() + Duration::from_secs(30);
    let api = loop {
        let (code, text) = fetch(http.get(format!("{url}api/status")).send().await.unwrap()).await;
        if code == 200 {
            break text;
        }
        assert!(Instant::now() < wait_status, "no status: {code} {text}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    seen.push_str(&api);

    // /api/status is the JSON of `rfs status --json` (but for the rates, which a single
    // `status` cannot measure).
    let mut served: Value = http
        .get(format!("{url}api/status"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut cli = status_json(&store, std::slice::from_ref(&failure_log));
    for v in [&mut served, &mut cli] {
        for k in ["docs_per_sec", "bytes_per_sec", "eta_seconds"] {
            v.as_object_mut().unwrap().remove(k);
        }
        // The keeper record moves on; the rest is settled once the run is finished.
        v.as_object_mut().unwrap().remove("keeper");
    }
    assert_eq!(served["finished"], true);
    assert_eq!(
        served["failed_documents_by_type"],
        json!({"mapper_parsing_exception": 3, "planted_error": 1})
    );
    // The only difference allowed: the password the CLI never puts in a status either.
    assert_eq!(served, cli);

    for path in [
        "",
        "index.html",
        "app.js",
        "style.css",
        "favicon.svg",
        "api/dashboard",
        "api/nope",
    ] {
        let (code, text) = fetch(http.get(format!("{url}{path}")).send().await.unwrap()).await;
        assert!(code == 200 || path == "api/nope", "{path}: {code}");
        seen.push_str(&text);
    }
    let dash: Value = http
        .get(format!("{url}api/dashboard"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        dash["control"]["allowed"], false,
        "no token sent: no control"
    );
    assert_eq!(
        dash["store"],
        format!("postgres://127.0.0.1:{}/postgres", pg.port())
    );
    let planted = dash["failures"]["newest"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == "planted")
        .expect("the planted entry")
        .clone();
    assert_eq!(
        planted["reason"],
        "store postgres://postgres:***@db/x said ***"
    );

    // Control: refused without the token, cross-origin, or without the custom header.
    let control = |token: Option<&str>, origin: Option<&str>, header: bool| {
        let mut r = http
            .post(format!("{url}api/control"))
            .header("content-type", "application/json")
            .body(r#"{"control":"RUN"}"#);
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        if header {
            r = r.header("x-rfs-request", "test");
        }
        r.send()
    };
    let same_origin = url.trim_end_matches('/').to_string();
    for (token, origin, header, want) in [
        (None, None, true, 401),
        (Some("wrong-token-0123456789"), None, true, 401),
        (Some(TOKEN), Some("http://evil.example"), true, 403),
        (Some(TOKEN), Some(same_origin.as_str()), false, 403),
        (Some(TOKEN), Some(same_origin.as_str()), true, 200),
    ] {
        let (code, text) = fetch(control(token, origin, header).await.unwrap()).await;
        assert_eq!(
            code, want,
            "token {token:?} origin {origin:?} header {header}: {text}"
        );
        seen.push_str(&text);
    }
    // Reads with the token from this host work too.
    let (code, text) = fetch(
        http.get(format!("{url}api/dashboard"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(code, 200);
    assert!(text.contains(r#""allowed":true"#), "{text}");
    seen.push_str(&text);

    // The page in the browser, if there is one.
    let browser = Browser::start("dashboard_never_shows_a_secret").await;
    if let Some(b) = &browser {
        b.client.goto(&url).await.unwrap();
        b.wait_for(20, "FINISHED", |p| p.state == "FINISHED").await;
        seen.push_str(&b.client.source().await.unwrap());
    }

    // The store goes away: the API and the page say so, without the password.
    pg.stop();
    let deadline = Instant::now() + Duration::from_secs(60);
    let (code, text) = loop {
        let (code, text) = fetch(http.get(format!("{url}api/status")).send().await.unwrap()).await;
        if code == 503 {
            break (code, text);
        }
        assert!(
            Instant::now() < deadline,
            "the store is down but status says {code}: {text}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(code, 503);
    assert!(text.contains("coordination store unreachable"), "{text}");
    seen.push_str(&text);
    let (_, text) = fetch(
        http.get(format!("{url}api/dashboard"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    let down: Value = serde_json::from_str(text.split_once('\n').unwrap().1).unwrap();
    assert!(down["error"]["message"].is_string(), "{down:#}");
    assert_eq!(
        down["status"]["finished"], true,
        "the last reading stays: {down:#}"
    );
    seen.push_str(&text);
    if let Some(b) = &browser {
        let p = b
            .wait_for(20, "the store error", |p| {
                p.banner.contains("Cannot read the coordination store")
            })
            .await;
        assert!(p.banner.contains("the figures below are from"), "{p:#?}");
        b.screenshot("dashboard-store-down.png").await;
        seen.push_str(&b.client.source().await.unwrap());
    }
    // And recovers when it is back.
    pg.start_again();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (code, text) = fetch(http.get(format!("{url}api/status")).send().await.unwrap()).await;
        if code == 200 {
            seen.push_str(&text);
            break;
        }
        assert!(Instant::now() < deadline, "no recovery: {code} {text}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    if let Some(b) = browser {
        b.wait_for(20, "the banner gone", |p| p.banner.is_empty())
            .await;
        seen.push_str(&b.client.source().await.unwrap());
        b.close().await;
    }

    // --help with the token in the environment.
    let help = rfs()
        .args(["status", "--help"])
        .env("RFS_SERVE_TOKEN", TOKEN)
        .output()
        .unwrap();
    seen.push_str(&String::from_utf8_lossy(&help.stdout));
    // A bad token is refused without being echoed.
    let bad = rfs()
        .args([
            "status",
            "--serve",
            "127.0.0.1:0",
            "--serve-token",
            "short-Pl4nted",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("--serve-token"), "{err}");
    assert!(!err.contains("short-Pl4nted"), "{err}");

    drop(procs);
    seen.push_str(&std::fs::read_to_string(&serve_err).unwrap());
    seen.push_str(&std::fs::read_to_string(&serve_out).unwrap_or_default());
    for secret in [PASSWORD, TOKEN] {
        assert!(
            !seen.contains(secret),
            "{secret:?} was shown:\n{}",
            seen.lines()
                .filter(|l| l.contains(secret))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    // Everything above was really collected.
    assert!(seen.contains("rfs migration") && seen.contains("mapper_parsing_exception"));
}
