//! The coordination store as an operator meets it (issue 15, finding 2 and the store
//! weak spots), on the real binary with the demo repository and the testkit server:
//! - a store belongs to one migration: its identity (repository, snapshot, target, or
//!   `--migration NAME`) is recorded by the first worker; a worker of another migration
//!   exits 2 naming both, before leasing anything, also while the first one runs;
//!   `rfs status` and `rfs pause` say which migration the store holds;
//! - errors no retry cures (a missing directory, a file that is not a database, a wrong
//!   password) end the command at once with the reason, for workers and `rfs status`;
//! - commands that only read a store (`status`, the dashboard) or set its control record
//!   never create one: a mistyped path is an error, and no file appears.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;
use testkit::server::{ServerConfig, TestServer};

/// `rfs documents` of the demo copy at `repo` into `server`, store in `dir`.
fn worker(repo: &Path, dir: &Path, server: &TestServer, extra: &[&str]) -> Ran {
    run(documents(repo, dir, &server.url(), extra))
}

#[test]
fn a_store_belongs_to_one_migration() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let first = run(documents(&demo(), dir.path(), &server.url(), &[]));
    assert_eq!(first.code, Some(0), "{first}");
    assert_target_holds(&server, &["books", "reviews"]);

    // The store says what it is for.
    let st = status(dir.path());
    let canonical = std::fs::canonicalize(demo()).unwrap().display().to_string();
    let m = &st["migration"];
    assert_eq!(m["kind"], "snapshot", "{st:#}");
    assert_eq!(m["repository"], Value::String(canonical.clone()), "{st:#}");
    assert_eq!(m["snapshot"], SNAPSHOT, "{st:#}");
    assert_eq!(m["target"], Value::String(server.url()), "{st:#}");
    let mut c = rfs();
    c.args(["status", "--store", &sqlite(dir.path())]);
    let text = run(c);
    assert!(
        text.stdout.contains(&format!(
            "migration: kind=snapshot, repository={canonical}, snapshot=demo"
        )),
        "{text}"
    );

    // The same repository under another spelling is the same migration (nothing left: 3).
    let dotted = format!("{}/.", demo().display());
    let again = run(documents(
        Path::new(&dotted),
        dir.path(),
        &server.url(),
        &[],
    ));
    assert_eq!(again.code, Some(3), "{again}");

    // Another repository (a copy elsewhere) with the same store: refused, exit 2, naming
    // both, and nothing was leased, sent or changed.
    let other = tempfile::tempdir().unwrap();
    copy_demo(&other.path().join("repo"));
    let other_repo = other.path().join("repo");
    let bulks = server.stats().bulk_requests;
    let before = status(dir.path());
    for extra in [&[][..], &["--migration", "nightly"][..]] {
        let r = worker(&other_repo, dir.path(), &server, extra);
        assert_eq!(r.code, Some(2), "{r}");
        assert!(r.stderr.contains("belongs to another migration"), "{r}");
        assert!(
            r.stderr.contains(&canonical),
            "the store's migration is named: {r}"
        );
        assert!(r.took < Duration::from_secs(30), "{r}");
        assert_eq!(
            r.stderr.lines().filter(|l| l.contains("error:")).count(),
            1,
            "{r}"
        );
    }
    let r = worker(&other_repo, dir.path(), &server, &[]);
    assert!(
        r.stderr.contains(
            &std::fs::canonicalize(&other_repo)
                .unwrap()
                .display()
                .to_string()
        ),
        "this worker's migration is named too: {r}"
    );
    assert_eq!(server.stats().bulk_requests, bulks, "nothing was sent");
    let after = status(dir.path());
    for key in ["items", "docs_done", "migration", "phases", "failed_items"] {
        assert_eq!(before[key], after[key], "{key} changed");
    }

    // `rfs pause` names the migration whose workers it pauses.
    let mut c = rfs();
    c.args(["pause", "--store", &sqlite(dir.path())]);
    let r = run(c);
    assert_eq!(r.code, Some(0), "{r}");
    assert!(
        r.stderr.contains(&format!(
            "control set to PAUSE for migration kind=snapshot, repository={canonical}"
        )),
        "{r}"
    );
}

#[test]
fn a_named_migration_is_its_name() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let r = worker(
        &demo(),
        dir.path(),
        &server,
        &["--migration", "move books", "--index", "books"],
    );
    assert_eq!(r.code, Some(0), "{r}");
    assert_eq!(
        status(dir.path())["migration"],
        serde_json::json!({"migration": "move books"})
    );
    // Another place of the repository, same name: one migration (nothing left to do).
    let copy = tempfile::tempdir().unwrap();
    copy_demo(copy.path());
    let r = worker(
        copy.path(),
        dir.path(),
        &server,
        &["--migration", "move books", "--index", "books"],
    );
    assert_eq!(r.code, Some(3), "{r}");
    // Without the name: another migration.
    let r = worker(&demo(), dir.path(), &server, &["--index", "books"]);
    assert_eq!(r.code, Some(2), "{r}");
    assert!(r.stderr.contains("migration=move books"), "{r}");
    // The name is checked by the parser.
    for bad in ["", &"x".repeat(101), "a\u{7}b"] {
        let r = worker(&demo(), dir.path(), &server, &["--migration", bad]);
        assert_eq!(r.code, Some(2), "{bad:?}: {r}");
        assert!(r.stderr.contains("--migration"), "{r}");
    }
}

/// While a slow worker of migration A holds an item, a worker of migration B on the same
/// store exits 2 at once: A's items keep their holder and attempts, and A finishes.
#[test]
fn a_worker_of_another_migration_leaves_running_items_alone() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let slow_args = [
        "--max-docs-per-sec",
        "4",
        "--max-batch-docs",
        "2",
        "--concurrency",
        "1",
        "--parallel",
        "1",
        "--lease-seconds",
        "3600",
        "--control-seconds",
        "0.1",
    ];
    let started = Instant::now();
    let slow = documents(&demo(), dir.path(), &server.url(), &slow_args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut slow = Reaped(Some(slow));
    wait_for("the slow worker's lease", Duration::from_secs(60), || {
        try_status(dir.path()).is_some_and(|s| s["items"]["leased"].as_u64() == Some(1))
    });
    let before = status(dir.path());

    let other = tempfile::tempdir().unwrap();
    copy_demo(other.path());
    let r = worker(other.path(), dir.path(), &server, &["--parallel", "3"]);
    assert_eq!(r.code, Some(2), "{r}");
    assert!(r.stderr.contains("belongs to another migration"), "{r}");

    let after = status(dir.path());
    assert_eq!(after["items"]["leased"], 1, "{after:#}");
    assert_eq!(
        after["items"]["waiting"], before["items"]["waiting"],
        "{after:#}"
    );
    assert_eq!(after["failed_items"], Value::Array(vec![]), "{after:#}");
    let (l0, l1) = (&before["leases"][0], &after["leases"][0]);
    assert_eq!((&l0["id"], &l0["holder"]), (&l1["id"], &l1["holder"]));
    assert_eq!(l1["attempts"], 1, "{after:#}");

    // A goes on undisturbed: stop it, then finish with a fast worker of A.
    let mut c = rfs();
    c.args(["stop", "--store", &sqlite(dir.path())]);
    assert_eq!(run(c).code, Some(0));
    let stopped = finish(slow.0.take().unwrap(), started);
    assert_eq!(stopped.code, Some(5), "{stopped}");
    let mut c = rfs();
    c.args(["resume", "--store", &sqlite(dir.path())]);
    assert_eq!(run(c).code, Some(0));
    let r = worker(&demo(), dir.path(), &server, &[]);
    assert_eq!(r.code, Some(0), "{r}");
    let st = status(dir.path());
    assert_eq!(st["finished"], true, "{st:#}");
    assert_eq!(st["failed_items"], Value::Array(vec![]), "{st:#}");
    assert_target_holds(&server, &["books", "reviews"]);
}

/// Runs `args` and checks it ends at once (not after minutes of retries) with code 1 and
/// a message containing `expect`.
fn refused_at_once(args: &[&str], expect: &str) -> Ran {
    let mut c = rfs();
    c.args(args);
    let r = run(c);
    assert_eq!(r.code, Some(1), "{args:?}: {r}");
    assert!(r.stderr.contains(expect), "{args:?}: {r}");
    assert!(
        r.took < Duration::from_secs(15),
        "{args:?} took {:?}: {r}",
        r.took
    );
    assert!(!r.stderr.contains("retrying"), "{args:?}: {r}");
    r
}

#[test]
fn permanent_store_errors_end_the_command_at_once_and_reading_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let typo = format!("sqlite://{}/typo.db", d.display());
    let deep = format!("sqlite://{}/no/such/dir/state.db", d.display());
    // Read-only and control commands on a store that does not exist: an error, no file.
    refused_at_once(&["status", "--store", &typo], "no such file");
    refused_at_once(&["status", "--json", "--store", &deep], "no such file");
    for control in ["pause", "resume", "stop"] {
        refused_at_once(&[control, "--store", &typo], "nothing was created");
    }
    // A file that is not a store: said, not taken for an empty migration.
    let text = d.join("notes.db");
    std::fs::write(&text, "these are notes, not a database\n".repeat(64)).unwrap();
    refused_at_once(
        &["status", "--store", &format!("sqlite://{}", text.display())],
        "not a database",
    );
    // A worker whose store directory does not exist.
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let r = run(documents_with_store(&demo(), d, &deep, &server.url(), &[]));
    assert_eq!(r.code, Some(1), "{r}");
    assert!(r.stderr.contains("unable to open"), "{r}");
    assert!(r.took < Duration::from_secs(15), "{r}");
    // The dashboard on a mistyped store: it serves the error, and creates nothing.
    let port = testkit::services::free_port();
    let dash = rfs()
        .args([
            "status",
            "--serve",
            &format!("127.0.0.1:{port}"),
            "--store",
            &typo,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _dash = Reaped(Some(dash));
    let mut answer = String::new();
    wait_for(
        "the dashboard's answer",
        Duration::from_secs(30),
        || match testkit::services::raw_http(port, "GET", "/api/dashboard", &[], b"") {
            Ok((_, body)) => {
                answer = String::from_utf8_lossy(&body).into_owned();
                answer.contains("no such file")
            }
            Err(_) => false,
        },
    );
    let left: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left, ["notes.db"], "something was created: {left:?}");

    // A wrong password: PostgreSQL and Redis refuse it; said at once, password masked.
    if let Some(pg) = testkit::services::Postgres::start("permanent_store_errors_postgres") {
        pg.require_password("Right0ne");
        let wrong = pg.url().replacen("postgres@", "postgres:Wr0ngPw@", 1);
        for args in [
            &["status", "--store", &wrong][..],
            &["pause", "--store", &wrong][..],
        ] {
            let r = refused_at_once(args, "28P01");
            assert!(!r.all().contains("Wr0ngPw"), "{r}");
        }
        let r = run(documents_with_store(&demo(), d, &wrong, &server.url(), &[]));
        assert_eq!(r.code, Some(1), "{r}");
        assert!(r.stderr.contains("password authentication failed"), "{r}");
        assert!(r.took < Duration::from_secs(15), "{r}");
        assert!(!r.all().contains("Wr0ngPw"), "{r}");
    }
    if let Some(redis) = testkit::services::Redis::start("permanent_store_errors_redis") {
        redis.require_password("Right0ne");
        let wrong = redis.url().replacen("://", "://:Wr0ngPw@", 1);
        let r = refused_at_once(&["status", "--store", &wrong], "authentication failed");
        assert!(!r.all().contains("Wr0ngPw"), "{r}");
    }
}

/// A store that goes away for a few seconds (a PostgreSQL restart) is waited for, not an
/// error: the worker goes on and finishes, and says so at WARN a few times, not at every
/// tick (issue 15: long waits logged at the default level, rate-limited).
#[test]
fn a_store_restart_is_waited_for_and_said_a_few_times() {
    let Some(mut pg) = testkit::services::Postgres::start("a_store_restart_is_waited_for") else {
        return;
    };
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let worker = documents_with_store(
        &demo(),
        dir.path(),
        &pg.url(),
        &server.url(),
        &[
            "--max-docs-per-sec",
            "150",
            "--max-batch-docs",
            "20",
            "--parallel",
            "2",
            "--control-seconds",
            "0.1",
            "--checkpoint-seconds",
            "0.2",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut worker = Reaped(Some(worker));
    wait_for("documents on the target", Duration::from_secs(60), || {
        server.total_doc_count() >= 100
    });
    pg.stop();
    std::thread::sleep(Duration::from_secs(6));
    pg.start_again();
    let r = finish(worker.0.take().unwrap(), started);
    assert_eq!(r.code, Some(0), "{r}");
    assert_target_holds(&server, &["books", "reviews"]);
    let warned: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| {
            l.contains("WARN")
                && (l.contains("control record")
                    || l.contains("checkpoint failed")
                    || l.contains("coordination store unavailable"))
        })
        .collect();
    assert!(!warned.is_empty(), "the outage was not said: {r}");
    eprintln!(
        "{} warnings during the outage:\n{}",
        warned.len(),
        warned.join("\n")
    );
    // Per item worker and kind of call: the first line, then one per 10 s at most.
    assert!(warned.len() <= 12, "{} lines: {r}", warned.len());
}

/// `rfs verify --store` shows the migration the store holds and refuses (exit 2) to
/// verify another one against it.
#[test]
fn verify_shows_the_stores_migration_and_refuses_another() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let r = worker(&demo(), dir.path(), &server, &[]);
    assert_eq!(r.code, Some(0), "{r}");
    let verify = |repo: &Path| {
        let mut c = rfs();
        c.arg("verify")
            .arg(repo)
            .args(["--snapshot", SNAPSHOT, "--target", &server.url()])
            .args(["--store", &sqlite(dir.path())]);
        run(c)
    };
    let r = verify(&demo());
    assert_eq!(r.code, Some(0), "{r}");
    let canonical = std::fs::canonicalize(demo()).unwrap().display().to_string();
    assert!(
        r.stderr.contains(&format!(
            "holds migration kind=snapshot, repository={canonical}"
        )),
        "{r}"
    );
    let other = tempfile::tempdir().unwrap();
    copy_demo(other.path());
    let r = verify(other.path());
    assert_eq!(r.code, Some(2), "{r}");
    assert!(r.stderr.contains("belongs to another migration"), "{r}");
}
