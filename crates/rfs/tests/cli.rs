//! The command line's promises, checked on the real binary with the demo repository
//! (`demo/repository`: `books` 1326 live documents in 2 shards, `reviews` 473 in 1), the
//! testkit server as target and SQLite stores in temporary directories:
//! - numeric flags are range-checked by the parser (exit 2 naming the flag, never a panic);
//! - planted secrets (store and target passwords, keys) never appear in stdout or stderr:
//!   logs in text and JSON, errors of failing connections, status, --help;
//! - the config file goes through the parser (unknown keys, wrong types and bad values are
//!   errors naming the key and the file; flag > environment > file);
//! - `--log-format json`: every stderr line is a JSON object with a level and a message;
//! - the exit codes 3, 4, 5 and 6, and `--metrics-addr` served while a worker runs;
//! - `export --out DIR` keeps files of crafted index names (`../bk`, `.hidden`, `a/b`)
//!   inside DIR, with every document.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use testkit::server::{ServerConfig, TestServer};

mod common;
use common::{demo, finish, rfs, run, sqlite, status, wait_for, Ran, LIVE, SNAPSHOT};

/// Runs `c` until it exits or for at most `limit`, then kills it; its output so far.
fn run_for(mut c: Command, limit: Duration) -> Ran {
    use std::io::Read;
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn rfs");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > limit {
            // Our own child, not yet reaped: its pid cannot belong to anyone else.
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Ran {
        code: status.and_then(|s| s.code()),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
        took: start.elapsed(),
    }
}

/// `rfs documents` on the demo into `target` with the store and failure log in `dir`.
fn documents(dir: &Path, target: &str, extra: &[&str]) -> Command {
    common::documents(&demo(), dir, target, extra)
}

/// The target holds exactly the demo's documents, compared one by one.
fn assert_target_holds_the_demo(target: &TestServer) {
    common::assert_target_holds(target, &LIVE.map(|(index, _)| index));
}

// ------------------------------------------------------------------ numeric flags

/// Minimal arguments that let each command parse, pointing at things that fail fast
/// (a missing repository, an unknown store scheme) so an accepted value ends in exit 1.
fn base(command: &str) -> Vec<String> {
    let v: &[&str] = match command {
        "documents" | "verify" | "metadata" => &[
            "--repo",
            "/nonexistent/repo",
            "--snapshot",
            "s",
            "--target",
            "http://127.0.0.1:1",
            "--store",
            "bogus://x",
        ],
        "run" => &[
            "--repo",
            "/nonexistent/repo",
            "--snapshot",
            "s",
            "--target",
            "http://127.0.0.1:1",
            "--store",
            "bogus://x",
            "--source-cluster",
            "http://127.0.0.1:1",
            "--source-repository",
            "r",
        ],
        "status" => &["--store", "bogus://x"],
        "lucene" => &["/nonexistent/index"],
        "bench" => &["--store", "bogus://x"],
        _ => &[],
    };
    let mut argv: Vec<String> = match command {
        "metadata" => vec!["metadata".into(), "evaluate".into()],
        "lucene" => vec!["lucene".into(), "dump".into()],
        "bench" => vec!["bench".into(), "coordination".into()],
        c => vec![c.into()],
    };
    // `metadata` has no --store.
    let v: Vec<&str> = if command == "metadata" || command == "verify" {
        v[..6].to_vec()
    } else {
        v.to_vec()
    };
    argv.extend(v.iter().map(|s| s.to_string()));
    argv
}

#[test]
fn numeric_flags_are_range_checked_by_the_parser() {
    // (command, flag, values accepted, values refused)
    let u64_max = u64::MAX.to_string();
    let past_u64 = "18446744073709551616";
    let table: Vec<(&str, &str, Vec<&str>, Vec<&str>)> = vec![
        (
            "documents",
            "--max-batch-docs",
            vec!["1", "1000000"],
            vec!["0", "1000001", "-1"],
        ),
        (
            "documents",
            "--max-batch-bytes",
            vec!["1024", "1073741824"],
            vec!["0", "1023", "1073741825"],
        ),
        (
            "documents",
            "--concurrency",
            vec!["1", "256"],
            vec!["0", "257"],
        ),
        (
            "documents",
            "--max-docs-per-sec",
            vec!["0.001", "1000000000"],
            vec!["0", "1000000001", "-5", "NaN", "inf", "fast"],
        ),
        (
            "documents",
            "--max-bytes-per-sec",
            vec!["1", "1000000000000"],
            vec!["0", "1000000000001", "NaN", "-inf"],
        ),
        (
            "documents",
            "--split-docs",
            vec!["1", "2147483647"],
            vec!["0", "2147483648"],
        ),
        (
            "documents",
            "--lease-seconds",
            vec!["1", "86400"],
            vec!["0", "86401", &u64_max, past_u64],
        ),
        (
            "documents",
            "--max-attempts",
            vec!["1", "100"],
            vec!["0", "101", "4294967296"],
        ),
        (
            "documents",
            "--checkpoint-seconds",
            vec!["0.05", "3600"],
            vec!["0", "0.01", "3600.5", "NaN", "1e400"],
        ),
        (
            "documents",
            "--control-seconds",
            vec!["0.05", "60"],
            vec!["0", "60.5", "inf"],
        ),
        (
            "documents",
            "--target-max-attempts",
            vec!["1", "100"],
            vec!["0", "101"],
        ),
        (
            "documents",
            "--target-timeout",
            vec!["1", "3600"],
            vec!["0", "3601", &u64_max],
        ),
        (
            "documents",
            "--bulk-retry-seconds",
            vec!["10", "86400"],
            vec!["0", "9", "86401", &u64_max],
        ),
        (
            "documents",
            "--replicas",
            vec!["0", "100"],
            vec!["101", "-1"],
        ),
        (
            "run",
            "--source-max-attempts",
            vec!["1", "100"],
            vec!["0", "101"],
        ),
        (
            "status",
            "--watch",
            vec!["0.2", "3600"],
            vec!["0", "3601", "NaN"],
        ),
        (
            "verify",
            "--sample",
            vec!["0", "100000"],
            vec!["100001", "-1"],
        ),
        ("metadata", "--replicas", vec!["0", "100"], vec!["101"]),
        (
            "lucene",
            "--from",
            vec!["0", &u64_max],
            vec![past_u64, "-1"],
        ),
        ("lucene", "--to", vec!["0", &u64_max], vec![past_u64]),
        ("bench", "--workers", vec!["1", "10000"], vec!["0", "10001"]),
        (
            "bench",
            "--items",
            vec!["1", "10000000"],
            vec!["0", "10000001"],
        ),
    ];
    for (command, flag, accepted, refused) in &table {
        for value in accepted.iter().chain(refused) {
            let mut c = rfs();
            c.args(base(command)).arg(format!("{flag}={value}"));
            let r = run(c);
            assert!(!r.stderr.contains("panicked"), "{flag}={value}: {r}");
            if refused.contains(value) {
                assert_eq!(r.code, Some(2), "{flag}={value} must be a usage error: {r}");
                assert!(
                    r.stderr.contains(flag),
                    "{flag}={value}: the message names the flag: {r}"
                );
            } else {
                // Parsed; the command then fails on the missing repository or bad store.
                assert_eq!(r.code, Some(1), "{flag}={value} must be accepted: {r}");
            }
        }
    }
    // The ranges are documented in --help.
    let mut c = rfs();
    c.args(["documents", "--help"]);
    let help = run(c).stdout;
    for range in ["1–86400", "0.001–1000000000", "1–256", "0.05–3600"] {
        assert!(help.contains(range), "{range} not in --help:\n{help}");
    }
}

// ------------------------------------------------------------------ secrets

const STORE_SECRET: &str = "StorePw0rd9x";
const TARGET_SECRET: &str = "TargetPw0rd7y";
const TARGET_PASSWORD: &str = "BasicPw0rd5z";
const API_KEY: &str = "ApiKey0rd3w";
const S3_SECRET: &str = "S3Secret0rd1v";
const REDIS_SECRET: &str = "RedisPw0rd8u";
const SECRETS: [&str; 6] = [
    STORE_SECRET,
    TARGET_SECRET,
    TARGET_PASSWORD,
    API_KEY,
    S3_SECRET,
    REDIS_SECRET,
];

fn assert_no_secret(what: &str, r: &Ran) {
    for s in SECRETS {
        assert!(!r.all().contains(s), "{what}: {s} leaked:\n{r}");
    }
}

/// `user:SECRET@` inserted into an `http://host:port` URL.
fn with_userinfo(url: &str, user: &str, secret: &str) -> String {
    url.replacen("://", &format!("://{user}:{secret}@"), 1)
}

#[test]
fn planted_secrets_never_reach_the_output() {
    let Some(pg) = testkit::services::Postgres::start("planted_secrets_never_reach_the_output")
    else {
        return;
    };
    // The test server trusts every connection: the password is sent and ignored.
    let store = pg
        .url()
        .replacen("postgres@", &format!("postgres:{STORE_SECRET}@"), 1);
    assert!(
        store.contains(&format!("//postgres:{STORE_SECRET}@")),
        "{store}"
    );
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let target = with_userinfo(&server.url(), "admin", TARGET_SECRET);
    let dir = tempfile::tempdir().unwrap();
    let secrets_in_env = |c: &mut Command| {
        c.env("RFS_STORE", &store)
            .env("RFS_TARGET", &target)
            .env("RFS_TARGET_PASSWORD", TARGET_PASSWORD)
            .env("RFS_S3_SECRET_ACCESS_KEY", S3_SECRET)
            .env("RFS_SOURCE_API_KEY", API_KEY);
    };

    // A whole migration, settings from the environment, logs at INFO in text, then JSON.
    for format in ["text", "json"] {
        let mut c = rfs();
        secrets_in_env(&mut c);
        c.arg("documents")
            .arg("--repo")
            .arg(demo())
            .args([
                "--snapshot",
                SNAPSHOT,
                "--no-progress",
                "--log-format",
                format,
            ])
            .arg("--failure-log")
            .arg(dir.path().join("failures.jsonl"))
            .current_dir(dir.path());
        let r = run(c);
        assert!(matches!(r.code, Some(0 | 3)), "{r}");
        assert_no_secret(&format!("documents --log-format {format}"), &r);
        // The store and its masked password were logged: the check looked at them.
        assert!(r.stderr.contains("postgres:***@"), "{r}");
    }
    assert_target_holds_the_demo(&server);

    // Status, text and JSON, and verify.
    for json in [false, true] {
        let mut c = rfs();
        secrets_in_env(&mut c);
        c.arg("status").args(json.then_some("--json"));
        let r = run(c);
        assert_eq!(r.code, Some(0), "{r}");
        assert_no_secret("status", &r);
    }
    let mut c = rfs();
    secrets_in_env(&mut c);
    c.arg("verify").arg(demo()).args(["--snapshot", SNAPSHOT]);
    let r = run(c);
    assert_eq!(r.code, Some(0), "{r}");
    assert_no_secret("verify", &r);

    // --help of every command with the secrets in the environment.
    for command in [
        &["--help"][..],
        &["documents", "--help"],
        &["run", "--help"],
        &["status", "--help"],
        &["verify", "--help"],
        &["export", "--help"],
        &["inspect", "--help"],
        &["pause", "--help"],
        &["metadata", "migrate", "--help"],
        &["snapshot", "create", "--help"],
        &["bench", "coordination", "--help"],
    ] {
        let mut c = rfs();
        secrets_in_env(&mut c);
        c.args(command);
        let r = run(c);
        assert_eq!(r.code, Some(0), "{command:?}: {r}");
        assert!(r.stdout.contains("Usage"), "{r}");
        assert_no_secret(&format!("{command:?}"), &r);
    }

    // Failing connections print their errors: a target nobody listens on, in both formats.
    for format in ["text", "json"] {
        let closed = with_userinfo(
            &format!("http://127.0.0.1:{}", testkit::services::free_port()),
            "admin",
            TARGET_SECRET,
        );
        let mut c = rfs();
        c.arg("documents")
            .arg("--repo")
            .arg(demo())
            .args([
                "--snapshot",
                SNAPSHOT,
                "--target",
                &closed,
                "--target-max-attempts",
                "1",
            ])
            .args(["--store", &store, "--log-format", format]);
        let r = run(c);
        assert_eq!(r.code, Some(1), "{r}");
        assert!(
            r.stderr.contains("admin:***@"),
            "the error names the target: {r}"
        );
        assert_no_secret(&format!("closed target, {format}"), &r);
    }

    // A store that refuses the password: Redis with none configured answers AUTH with an
    // error. Whatever rfs prints while it retries (a warning about every 10 s) or when it
    // gives up, the password is not in it.
    if let Some(redis) = testkit::services::Redis::start("planted_secrets_redis") {
        let url = redis
            .url()
            .replacen("://", &format!("://:{REDIS_SECRET}@"), 1);
        let mut c = rfs();
        c.args(["status", "--store", &url]);
        let r = run_for(c, Duration::from_secs(25));
        assert_ne!(r.code, Some(0), "{r}");
        assert!(!r.stderr.trim().is_empty(), "something was said: {r}");
        assert_no_secret("redis store refusing the password", &r);

        // A whole migration with a Redis store that takes the password (issue 15 saw
        // `redis://:PASSWORD@…` at INFO), in both log formats.
        redis.require_password(REDIS_SECRET);
        let redis_target = TestServer::start(ServerConfig::opensearch("2.11.0"));
        for format in ["text", "json"] {
            let mut c = rfs();
            c.arg("documents")
                .arg("--repo")
                .arg(demo())
                .args(["--snapshot", SNAPSHOT, "--target", &redis_target.url()])
                .args(["--store", &url, "--no-progress", "--log-format", format])
                .arg("--failure-log")
                .arg(dir.path().join("redis-failures.jsonl"))
                .current_dir(dir.path());
            let r = run(c);
            assert!(matches!(r.code, Some(0 | 3)), "{r}");
            assert!(
                r.stderr.contains(":***@"),
                "the store was logged, masked: {r}"
            );
            assert_no_secret(&format!("redis store, --log-format {format}"), &r);
        }
        let mut c = rfs();
        c.args(["status", "--store", &url]);
        let r = run(c);
        assert_eq!(r.code, Some(0), "{r}");
        assert_no_secret("status of a redis store", &r);
    }

    // A bad value in a config file, echoed in the error.
    let cfg = dir.path().join("bad.toml");
    std::fs::write(
        &cfg,
        format!("metrics-addr = \"http://u:{STORE_SECRET}@h\"\n"),
    )
    .unwrap();
    let mut c = rfs();
    c.arg("--config").arg(&cfg).arg("status");
    let r = run(c);
    assert_eq!(r.code, Some(2), "{r}");
    assert_no_secret("config file", &r);
}

// ------------------------------------------------------------------ config file

fn inspect_snapshot(config: Option<&Path>, env: Option<&str>, flag: Option<&str>) -> Ran {
    let mut c = rfs();
    c.arg("inspect").arg(demo()).arg("--json");
    if let Some(p) = config {
        c.arg("--config").arg(p);
    }
    if let Some(e) = env {
        c.env("RFS_SNAPSHOT", e);
    }
    if let Some(f) = flag {
        c.args(["--snapshot", f]);
    }
    run(c)
}

#[test]
fn the_config_file_goes_through_the_parser() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let nope = cfg("nope.toml", "snapshot = \"nope\"\n");
    let good = cfg("good.toml", "snapshot = \"demo\"\njson = true\n");

    // The file is used (a snapshot that does not exist fails)…
    let r = inspect_snapshot(Some(&nope), None, None);
    assert_eq!(r.code, Some(1), "{r}");
    assert!(r.stderr.contains("nope"), "{r}");
    let r = inspect_snapshot(Some(&good), None, None);
    assert_eq!(r.code, Some(0), "{r}");
    let v: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["snapshots"][0]["name"], "demo", "{v}");
    // …the environment wins over it, the flag over both.
    let r = inspect_snapshot(Some(&nope), Some("demo"), None);
    assert_eq!(r.code, Some(0), "env > config: {r}");
    let r = inspect_snapshot(Some(&nope), Some("nope"), Some("demo"));
    assert_eq!(r.code, Some(0), "flag > env: {r}");
    // RFS_CONFIG names the file too.
    let mut c = rfs();
    c.arg("inspect").arg(demo()).env("RFS_CONFIG", &nope);
    assert_eq!(run(c).code, Some(1));

    // Mistakes are usage errors naming the key and the file.
    for (name, text, key) in [
        ("unknown.toml", "snapshots = \"demo\"\n", "snapshots"),
        ("type.toml", "json = \"yes\"\n", "json"),
        ("value.toml", "lease-seconds = 0\n", "lease-seconds"),
        ("enum.toml", "multi-type = \"join\"\n", "multi-type"),
        ("syntax.toml", "snapshot = \n", "snapshot"),
    ] {
        let p = cfg(name, text);
        let r = inspect_snapshot(Some(&p), None, None);
        assert_eq!(r.code, Some(2), "{name}: {r}");
        assert!(r.stderr.contains(key), "{name}: key not named: {r}");
        assert!(
            r.stderr.contains(&p.display().to_string()),
            "{name}: file not named: {r}"
        );
    }
    let r = inspect_snapshot(Some(&dir.path().join("missing.toml")), None, None);
    assert_eq!(r.code, Some(2), "{r}");
    assert!(r.stderr.contains("missing.toml"), "{r}");
}

// ------------------------------------------------------------------ JSON logs

/// Every stderr line is a JSON object with a level and a message.
fn assert_json_lines(r: &Ran) -> Vec<Value> {
    let mut lines = Vec::new();
    for line in r.stderr.lines() {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line:?}\n{r}"));
        assert!(v["level"].is_string(), "{line}");
        assert!(v["fields"]["message"].is_string(), "{line}");
        lines.push(v);
    }
    assert!(!lines.is_empty(), "{r}");
    lines
}

#[test]
fn json_logs_are_one_object_per_line() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let r = run(documents(
        dir.path(),
        &server.url(),
        &["--log-format", "json"],
    ));
    assert_eq!(r.code, Some(0), "{r}");
    let lines = assert_json_lines(&r);
    let messages: Vec<&str> = lines
        .iter()
        .map(|v| v["fields"]["message"].as_str().unwrap())
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("migration finished: 1799 documents")),
        "{messages:?}"
    );
    assert_target_holds_the_demo(&server);

    // An error is a JSON line too, at level ERROR, and printed once.
    let mut c = rfs();
    c.args(["inspect", "/nonexistent/repo", "--log-format", "json"]);
    let r = run(c);
    assert_eq!(r.code, Some(1), "{r}");
    let lines = assert_json_lines(&r);
    let errors: Vec<_> = lines.iter().filter(|v| v["level"] == "ERROR").collect();
    assert_eq!(errors.len(), 1, "{r}");
    assert!(errors[0]["fields"]["message"]
        .as_str()
        .unwrap()
        .contains("/nonexistent/repo"));
}

// ------------------------------------------------------------------ exit codes

#[test]
fn exit_3_when_no_work_is_left_and_6_when_verify_finds_a_mismatch() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let r = run(documents(dir.path(), &server.url(), &[]));
    assert_eq!(r.code, Some(0), "{r}");
    assert!(
        r.stderr.contains("migration finished: 1799 documents"),
        "{r}"
    );
    assert_target_holds_the_demo(&server);

    // A second worker finds nothing to do.
    let r = run(documents(dir.path(), &server.url(), &[]));
    assert_eq!(r.code, Some(3), "{r}");
    assert_eq!(status(dir.path())["finished"], true);

    let verify = || {
        let mut c = rfs();
        c.arg("verify").arg(demo()).args([
            "--snapshot",
            SNAPSHOT,
            "--target",
            &server.url(),
            "--all",
            "--json",
        ]);
        run(c)
    };
    let r = verify();
    assert_eq!(r.code, Some(0), "{r}");

    // Delete one document on the target: a mismatch, exit 6.
    let (id, source) = server.documents("books").into_iter().next().unwrap();
    let port = server.addr().port();
    let (code, body) =
        testkit::services::raw_http(port, "DELETE", &format!("/books/_doc/{id}"), &[], b"")
            .unwrap();
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(server.documents("books").len(), 1325);
    let r = verify();
    assert_eq!(r.code, Some(6), "{r}");
    assert!(r.stderr.contains("MISMATCH"), "{r}");
    let report: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(report["ok"], false, "{report}");

    // Put it back: verify passes again; then change its text: exit 6.
    let put = |doc: &Value| {
        let (code, body) = testkit::services::raw_http(
            port,
            "PUT",
            &format!("/books/_doc/{id}"),
            &[("Content-Type", "application/json")],
            doc.to_string().as_bytes(),
        )
        .unwrap();
        assert!(
            matches!(code, 200 | 201),
            "{}",
            String::from_utf8_lossy(&body)
        );
    };
    put(&source);
    assert_eq!(verify().code, Some(0));
    let mut changed = source.clone();
    changed["rfs_test_changed"] = Value::Bool(true);
    put(&changed);
    let r = verify();
    assert_eq!(r.code, Some(6), "{r}");
}

#[test]
fn exit_4_when_work_is_leased_elsewhere_5_after_stop_and_metrics_served() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let metrics_port = testkit::services::free_port();
    let metrics_addr = format!("127.0.0.1:{metrics_port}");
    // A slow worker: one item at a time, two documents per second, one per batch, a
    // lease of an hour.
    let started = Instant::now();
    let slow = documents(
        dir.path(),
        &server.url(),
        &[
            "--parallel",
            "1",
            "--max-docs-per-sec",
            "2",
            "--max-batch-docs",
            "1",
            "--concurrency",
            "1",
            "--lease-seconds",
            "3600",
            "--control-seconds",
            "0.1",
            "--metrics-addr",
            &metrics_addr,
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut slow = Some(slow);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_for("the slow worker's lease", Duration::from_secs(60), || {
            // The store exists once the worker created it; status never creates one.
            dir.path().join("state.db").exists()
                && status(dir.path())["items"]["leased"].as_u64() == Some(1)
        });

        // Its metrics, while it works.
        let mut text = String::new();
        wait_for("documents in the metrics", Duration::from_secs(30), || {
            text = match testkit::services::raw_http(metrics_port, "GET", "/metrics", &[], b"") {
                Ok((200, body)) => String::from_utf8_lossy(&body).into_owned(),
                _ => return false,
            };
            value_of(&text, "rfs_documents_sent_total").is_some_and(|v| v >= 1.0)
        });
        for name in [
            "rfs_documents_sent_total",
            "rfs_bytes_sent_total",
            "rfs_source_bytes_sent_total",
            "rfs_documents_refused_total",
            "rfs_documents_skipped_total",
            "rfs_leases_held",
            "rfs_batches_sent_total",
            "rfs_items_completed_total",
            "rfs_items_handed_off_total",
            "rfs_in_flight_batches",
            "rfs_lease_expiry_seconds",
        ] {
            assert!(text.contains(&format!("# TYPE {name} ")), "{name}:\n{text}");
            assert!(value_of(&text, name).is_some(), "{name}:\n{text}");
        }
        assert!(
            value_of(&text, "rfs_lease_expiry_seconds").unwrap() > 0.0,
            "{text}"
        );

        // Another worker takes the two other items, then finds the last one leased: 4.
        let r = run(documents(dir.path(), &server.url(), &[]));
        assert_eq!(r.code, Some(4), "{r}");
        let s = status(dir.path());
        assert_eq!(s["items"]["done"], 2, "{s:#}");
        assert_eq!(s["items"]["leased"], 1, "{s:#}");
        assert_eq!(s["finished"], false, "{s:#}");

        // rfs stop: the slow worker checkpoints, releases and exits 5…
        let mut c = rfs();
        c.args(["stop", "--store", &sqlite(dir.path())]);
        let r = run(c);
        assert_eq!(r.code, Some(0), "{r}");
        let stopped = finish(slow.take().unwrap(), started);
        assert_eq!(stopped.code, Some(5), "{stopped}");
        // …and a worker started now exits 5 at once.
        let r = run(documents(dir.path(), &server.url(), &[]));
        assert_eq!(r.code, Some(5), "{r}");

        // rfs resume: a worker finishes the last item from its checkpoint.
        let mut c = rfs();
        c.args(["resume", "--store", &sqlite(dir.path())]);
        assert_eq!(run(c).code, Some(0));
        let r = run(documents(dir.path(), &server.url(), &[]));
        assert_eq!(r.code, Some(0), "{r}");
        assert_eq!(status(dir.path())["finished"], true);
        assert_target_holds_the_demo(&server);
    }));
    if let Some(mut child) = slow {
        let _ = child.kill();
        let _ = child.wait();
    }
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

/// The value of an unlabelled Prometheus sample.
fn value_of(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

// ------------------------------------------------------------------ export file names

#[test]
fn export_keeps_crafted_index_names_inside_the_output_directory() {
    use snapshot::write::{write_repository, SnapshotSpec, WriteOptions};
    let work = tempfile::tempdir().unwrap();
    // The demo's indices renamed as an attacker would, plus a copy under a third name.
    let demo_repo = snapshot::Repository::open(
        snapshot::open_blob_store(demo().to_str().unwrap(), &Default::default()).unwrap(),
    )
    .unwrap();
    let mut spec = SnapshotSpec::from_snapshot(&demo_repo.snapshot(SNAPSHOT).unwrap()).unwrap();
    let mut third = spec
        .indices
        .iter()
        .find(|i| i.name == "reviews")
        .unwrap()
        .clone();
    for index in &mut spec.indices {
        index.name = match index.name.as_str() {
            "books" => "../bk".into(),
            "reviews" => ".hidden".into(),
            other => panic!("unexpected index {other}"),
        };
    }
    third.name = "a/b".into();
    spec.indices.push(third);
    let crafted = work.path().join("crafted");
    write_repository(&crafted, &[spec], &WriteOptions::default()).unwrap();

    // The documents as stdout shows them (no file names involved).
    let mut c = rfs();
    c.arg("export").arg(&crafted).args(["--snapshot", SNAPSHOT]);
    let r = run(c);
    assert_eq!(r.code, Some(0), "{r}");
    let mut expected: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in r.stdout.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        expected
            .entry(v["_index"].as_str().unwrap().to_string())
            .or_default()
            .push(line.to_string());
    }
    assert_eq!(expected["../bk"].len(), 1326);
    assert_eq!(expected[".hidden"].len(), 473);
    assert_eq!(expected["a/b"].len(), 473);

    let out = work.path().join("nested").join("out");
    let mut c = rfs();
    c.arg("export")
        .arg(&crafted)
        .args(["--snapshot", SNAPSHOT, "--out"])
        .arg(&out);
    let r = run(c);
    assert_eq!(r.code, Some(0), "{r}");
    // Nothing outside DIR: its parent holds only DIR.
    let beside: Vec<_> = std::fs::read_dir(out.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(beside, ["out"], "{beside:?}");
    // Inside DIR: one plain, visible file per index, holding its documents.
    let mut got: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut files = Vec::new();
    for e in std::fs::read_dir(&out).unwrap() {
        let e = e.unwrap();
        assert!(e.file_type().unwrap().is_file());
        let name = e.file_name().into_string().unwrap();
        assert!(!name.starts_with('.'), "{name}");
        assert!(name.ends_with(".jsonl"), "{name}");
        files.push(name);
        for line in std::fs::read_to_string(e.path()).unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            got.entry(v["_index"].as_str().unwrap().to_string())
                .or_default()
                .push(line.to_string());
        }
    }
    files.sort();
    assert_eq!(files.len(), 3, "{files:?}");
    for name in ["../bk", ".hidden", "a/b"] {
        let file = format!("{}.jsonl", connectors::file_name_for(name));
        assert!(files.contains(&file), "{file} not in {files:?}");
    }
    for lines in expected.values_mut().chain(got.values_mut()) {
        lines.sort();
    }
    assert_eq!(got, expected);
}

/// `rfs bench fleet` on an SQLite store: simulated workers spread over four store clients
/// drain every item with kills and stalls, no item is granted twice, and status (from a
/// client of its own) sees them all done.
#[test]
fn bench_fleet_drains_every_item_without_double_grants() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite://{}", dir.path().join("bench.db").display());
    let out = rfs()
        .args(["bench", "fleet", "--store", &store, "--clear"])
        .args(["--workers", "24", "--items", "300", "--processes", "4"])
        .args(["--work-ms", "20", "--renew-seconds", "0.2"])
        .args(["--kill-rate", "0.02", "--pause-rate", "0.02"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let figures: BTreeMap<&str, &str> = text.lines().filter_map(|l| l.split_once(": ")).collect();
    assert_eq!(figures["processes"], "4", "{text}");
    assert_eq!(figures["double_grants"], "0", "{text}");
    assert_eq!(figures["completions"], "300", "{text}");
    assert_eq!(figures["status_items_done"], "300", "{text}");
    assert!(figures.contains_key("status_during_run_max_ms"), "{text}");
}
