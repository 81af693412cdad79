//! One conformance suite and one contention test, run against every backend: SQLite (a
//! temporary file), PostgreSQL and Redis (real servers from `testkit::services`) and an
//! index on `osmem-server`.

mod contention;
mod suite;

use std::sync::Arc;

use coordination::{open_store, Error, Store};
use suite::{Factory, StoreFuture, UrlOf};

fn factory(make_url: impl Fn(&str) -> String + Send + Sync + 'static) -> Factory {
    factory_and_urls(make_url).0
}

/// A factory and the URL of each namespace (for the read-only open checks).
fn factory_and_urls(
    make_url: impl Fn(&str) -> String + Send + Sync + 'static,
) -> (Factory, Option<UrlOf>) {
    let make_url: UrlOf = Arc::new(move |ns: &str| make_url(&ns.to_lowercase()));
    let urls = make_url.clone();
    let f: Factory = Arc::new(move |ns: String| -> StoreFuture {
        let url = make_url(&ns);
        Box::pin(async move {
            let store: Arc<dyn Store> = open_store(&url)
                .await
                .unwrap_or_else(|e| panic!("open {url}: {e}"));
            store
        })
    });
    (f, Some(urls))
}

fn sqlite_factory(dir: &std::path::Path) -> Factory {
    let dir = dir.to_path_buf();
    factory(move |ns| format!("sqlite://{}/{ns}.db", dir.display()))
}

/// One in-process store per namespace, shared by every handle opened on it.
fn memory_factory() -> Factory {
    let stores: Arc<std::sync::Mutex<std::collections::HashMap<String, Arc<dyn Store>>>> =
        Arc::default();
    Arc::new(move |ns: String| -> StoreFuture {
        let store = stores
            .lock()
            .unwrap()
            .entry(ns)
            .or_insert_with(|| Arc::new(coordination::MemoryStore::new()))
            .clone();
        Box::pin(async move { store })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conformance_memory() {
    suite::run_all("memory", &memory_factory(), None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conformance_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let (f, urls) = factory_and_urls(move |ns| format!("sqlite://{}/{ns}.db", d.display()));
    suite::run_all("sqlite", &f, urls).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conformance_postgres() {
    let Some(pg) = testkit::services::Postgres::start("conformance_postgres") else {
        return;
    };
    let base = pg.url();
    let (f, urls) = factory_and_urls(move |ns| format!("{base}?table={ns}"));
    suite::run_all("postgres", &f, urls).await;
}

/// PostgreSQL that accepts TCP connections only over TLS, with a private CA: the store
/// connects with `sslmode=require&sslrootcert=`, and refuses a server it cannot verify.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conformance_postgres_tls() {
    let Some(pg) = testkit::services::Postgres::start_tls("conformance_postgres_tls") else {
        return;
    };
    let base = pg.url();
    let ca = pg.ca_file().display().to_string();
    let first_use = |url: String| async move {
        match open_store(&url).await {
            Ok(store) => store.now().await.map(|_| ()),
            Err(e) => Err(e),
        }
    };
    // Without TLS the server refuses the connection (for good: not retried).
    let e = first_use(format!("{base}?table=plain")).await.unwrap_err();
    assert!(e.to_string().contains("pg_hba.conf"), "{e}");
    assert!(!e.is_transient(), "{e}");
    // With TLS but without the private CA, the certificate is not trusted.
    let e = first_use(format!("{base}?sslmode=require&table=untrusted"))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("certificate"), "{e}");
    assert!(!e.is_transient(), "{e}");
    // sslrootcert without TLS is a mistake, said at once.
    let e = first_use(format!("{base}?sslrootcert={ca}"))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("sslmode=require"), "{e}");
    let (f, urls) =
        factory_and_urls(move |ns| format!("{base}?sslmode=require&sslrootcert={ca}&table={ns}"));
    suite::run_all("postgres-tls", &f, urls).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conformance_redis() {
    let Some(redis) = testkit::services::Redis::start("conformance_redis") else {
        return;
    };
    let base = redis.url();
    let (f, urls) = factory_and_urls(move |ns| format!("{base}?prefix={ns}"));
    suite::run_all("redis", &f, urls).await;
}

/// Redis that speaks only TLS, with a private CA: `rediss://…?cacert=`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conformance_redis_tls() {
    let Some(redis) = testkit::services::Redis::start_tls("conformance_redis_tls") else {
        return;
    };
    let base = redis.url();
    assert!(base.starts_with("rediss://"));
    let ca = redis.ca_file().display().to_string();
    // The server's CA is not among the system's roots: refused.
    let untrusted = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        open_store(&format!("{base}?prefix=untrusted")),
    )
    .await
    .expect("refused in time");
    let Err(e) = untrusted else {
        panic!("an unverified server was accepted");
    };
    assert!(e.to_string().to_lowercase().contains("certificate"), "{e}");
    assert!(
        !e.is_transient(),
        "an untrusted certificate is not retried: {e}"
    );
    let plain = base.replacen("rediss://", "redis://", 1);
    let Err(e) = open_store(&format!("{plain}?cacert={ca}")).await else {
        panic!("cacert without TLS was accepted");
    };
    assert!(e.to_string().contains("rediss://"), "{e}");
    let (f, urls) = factory_and_urls(move |ns| format!("{base}?cacert={ca}&prefix={ns}"));
    suite::run_all("redis-tls", &f, urls).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conformance_osmem() {
    let Some(os) = testkit::services::Osmem::start("conformance_osmem") else {
        return;
    };
    let base = os.url();
    let (f, urls) = factory_and_urls(move |ns| format!("{base}/{ns}"));
    suite::run_all("osmem", &f, urls).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contention_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    contention::run("sqlite", &sqlite_factory(dir.path()), 2000, 400).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contention_postgres() {
    let Some(pg) = testkit::services::Postgres::start("contention_postgres") else {
        return;
    };
    let base = pg.url();
    contention::run(
        "postgres",
        &factory(move |ns| format!("{base}?table={ns}")),
        2000,
        400,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contention_redis() {
    let Some(redis) = testkit::services::Redis::start("contention_redis") else {
        return;
    };
    let base = redis.url();
    contention::run(
        "redis",
        &factory(move |ns| format!("{base}?prefix={ns}")),
        2000,
        400,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contention_osmem() {
    let Some(os) = testkit::services::Osmem::start("contention_osmem") else {
        return;
    };
    let base = os.url();
    // osmem-server answers a few thousand requests per second: fewer items, longer leases.
    contention::run(
        "osmem",
        &factory(move |ns| format!("{base}/{ns}")),
        300,
        2000,
    )
    .await;
}

/// 64 workers in 4 separate processes sharing one SQLite file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contention_sqlite_processes() {
    contention::run_processes().await;
}

/// The child side of `contention_sqlite_processes`; does nothing unless started by it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contention_sqlite_child() {
    contention::child().await;
}

fn testkit_factory(server: &testkit::server::TestServer) -> (Factory, Option<UrlOf>) {
    let base = server.url();
    factory_and_urls(move |ns| format!("{base}/{ns}"))
}

/// The project's own test server speaking Elasticsearch 6 (typed endpoints).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conformance_testkit_es6() {
    use testkit::server::{ServerConfig, TestServer};
    let server = TestServer::start(ServerConfig::elasticsearch("6.8.23"));
    let (f, urls) = testkit_factory(&server);
    suite::run_all("testkit-es6", &f, urls).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conformance_testkit_es8() {
    use testkit::server::{ServerConfig, TestServer};
    let server = TestServer::start(ServerConfig::elasticsearch("8.15.0"));
    let (f, urls) = testkit_factory(&server);
    suite::run_all("testkit-es8", &f, urls).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conformance_testkit_opensearch() {
    use testkit::server::{ServerConfig, TestServer};
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let (f, urls) = testkit_factory(&server);
    suite::run_all("testkit-os2", &f, urls).await;
}

/// Contention through a cluster that answers some requests with 429/500/503 or drops the
/// connection: retries and lost answers must not break the protocol.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contention_testkit_with_faults() {
    use testkit::server::{Faults, ServerConfig, TestServer};
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let (f, _) = testkit_factory(&server);
    let store = f("warmup".into()).await;
    drop(store);
    server.set_faults(Faults {
        reject_429: 0.01,
        retry_after_secs: 0,
        error_500: 0.01,
        error_503: 0.01,
        drop_connection: 0.01,
        ..Faults::default()
    });
    contention::run("testkit-faults", &f, 500, 1000).await;
}

/// Opens `url` and reads the clock: the first use of a store.
async fn first_use(url: &str) -> Result<(), Error> {
    let store = open_store(url).await?;
    store.now().await.map(|_| ())
}

/// `url` is refused at once (not a transient error that a worker would retry for minutes)
/// with a message containing `expect` and no password.
async fn assert_refused(url: &str, expect: &str, write: bool) {
    let t = std::time::Instant::now();
    let r = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        first_use(url).await?;
        if write {
            let c = coordination::Coordinator::new(open_store(url).await?, Default::default());
            c.claim_identity(&[("migration".to_string(), "x".to_string())].into())
                .await?;
        }
        Ok::<(), Error>(())
    })
    .await
    .unwrap_or_else(|_| panic!("{url}: not refused within 20 s"));
    let e = r.expect_err(url);
    assert!(matches!(e, Error::Refused { .. }), "{url}: {e:?}");
    assert!(!e.is_transient(), "{url}: {e}");
    let text = e.to_string();
    assert!(text.contains(expect), "{url}: {text}");
    assert!(!text.contains("Wr0ngPw"), "{text}");
    assert!(
        t.elapsed() < std::time::Duration::from_secs(10),
        "{url}: {:?}",
        t.elapsed()
    );
}

/// Issue 15: permanent store errors were retried for two minutes. A wrong password, a
/// missing database, directory or file, a file that is not a database and a read-only
/// file are refused at once with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permanent_errors_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    assert_refused(
        &format!("sqlite://{d}/no/such/dir/state.db"),
        "unable to open",
        false,
    )
    .await;
    std::fs::write(
        dir.path().join("text.db"),
        "not a database, just text ".repeat(100),
    )
    .unwrap();
    assert_refused(&format!("sqlite://{d}/text.db"), "not a database", false).await;
    // A store opened read-only (an SQLite URI): the first write is refused.
    let made = format!("{d}/made.db");
    first_use(&format!("sqlite://{made}")).await.unwrap();
    assert_refused(&format!("sqlite://file:{made}?mode=ro"), "readonly", true).await;

    if let Some(pg) = testkit::services::Postgres::start("permanent_errors_postgres") {
        pg.require_password("Right0ne");
        let port = pg.port();
        let with = |pw: &str, db: &str| format!("postgres://postgres:{pw}@127.0.0.1:{port}/{db}");
        first_use(&with("Right0ne", "postgres")).await.unwrap();
        assert_refused(&with("Wr0ngPw", "postgres"), "28P01", false).await;
        assert_refused(&with("Right0ne", "nosuchdb"), "3D000", false).await;
    }
    if let Some(redis) = testkit::services::Redis::start("permanent_errors_redis") {
        redis.require_password("Right0ne");
        let base = redis.url();
        first_use(&base.replacen("://", "://:Right0ne@", 1))
            .await
            .unwrap();
        assert_refused(
            &base.replacen("://", "://:Wr0ngPw@", 1),
            "authentication failed",
            false,
        )
        .await;
        assert_refused(&base, "NOAUTH", false).await;
    }
}

/// A PostgreSQL store call never waits forever: with the table locked by another session,
/// a read ends with a transient error after `timeout=1` (the server cancels it), and the
/// store works again once the lock is gone. `timeout=` out of range is a bad URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_calls_time_out() {
    let Some(pg) = testkit::services::Postgres::start("postgres_calls_time_out") else {
        return;
    };
    let url = format!("{}?table=bounded&timeout=1", pg.url());
    let store = open_store(&url).await.unwrap();
    let rec = coordination::Record::new("x", coordination::RecordKind::Item, "me");
    store.create(&rec).await.unwrap();
    let (locker, conn) = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    locker
        .batch_execute("BEGIN; LOCK TABLE bounded IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    // Well under the default 30 s: the URL's own bound is what ended the wait.
    let r = tokio::time::timeout(std::time::Duration::from_secs(20), store.get("x"))
        .await
        .expect("a store call behind a lock waited 20 s");
    let e = r.expect_err("a read behind an exclusive lock cannot succeed");
    assert!(e.is_transient(), "{e:?}");
    assert!(e.to_string().contains("57014"), "{e}");
    locker.batch_execute("ROLLBACK").await.unwrap();
    assert!(store.get("x").await.unwrap().is_some());
    for bad in ["timeout=0", "timeout=3601", "timeout=soon"] {
        let e = open_store(&format!("{}?table=bounded&{bad}", pg.url()))
            .await
            .err()
            .unwrap_or_else(|| panic!("{bad} accepted"));
        assert!(matches!(e, Error::BadUrl { .. }), "{bad}: {e:?}");
        assert!(e.to_string().contains("timeout="), "{e}");
    }
}

/// Items in three states, one done with counts and a reason, as a status reads them.
async fn some_items(url: &str) -> String {
    use coordination::{Acquired, Coordinator, Progress, WorkItem};
    let store = open_store(url).await.unwrap();
    let cfg = coordination::Config {
        renew_every: std::time::Duration::ZERO,
        ..coordination::Config::default()
    };
    let c = Coordinator::new(store.clone(), cfg);
    c.setup(&[
        WorkItem::whole("a", 0),
        WorkItem::whole("b", 0),
        WorkItem::whole("c", 0),
    ])
    .await
    .unwrap();
    let Acquired::Lease(l) = c.acquire().await.unwrap() else {
        panic!("no lease")
    };
    let p = Progress {
        docs: 7,
        bytes: 700,
        refused: 2,
        skipped: 1,
        reasons: [("mapper_parsing_exception".to_string(), 2)].into(),
        ..Progress::default()
    };
    l.complete(&p).await.unwrap();
    let Acquired::Lease(l) = c.acquire().await.unwrap() else {
        panic!("no lease")
    };
    drop(l);
    summary(url).await
}

/// What `rfs status` takes from the store: totals and the items it lists, as text.
async fn summary(url: &str) -> String {
    let store = coordination::open_existing_store(url).await.unwrap();
    let s = store
        .item_summary(store.now().await.unwrap())
        .await
        .unwrap();
    let mut notable: Vec<_> = s.notable.iter().map(|r| r.id.clone()).collect();
    notable.sort();
    format!("{:?} {notable:?}", s.totals)
}

/// Stores written by an earlier version (a PostgreSQL table without the status columns, a
/// Redis prefix without the status counters) give the same status: read as they are, then
/// after a worker of this version opened them (PostgreSQL adds and fills the columns).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn older_stores_give_the_same_status() {
    if let Some(pg) = testkit::services::Postgres::start("older_stores_postgres") {
        let url = format!("{}?table=older", pg.url());
        let now = some_items(&url).await;
        assert!(now.contains("docs: 7"), "{now}");
        let (raw, conn) = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        raw.batch_execute(
            "ALTER TABLE older DROP COLUMN grp, DROP COLUMN docs, DROP COLUMN bytes,
                DROP COLUMN refused, DROP COLUMN skipped, DROP COLUMN held, DROP COLUMN listed",
        )
        .await
        .unwrap();
        assert_eq!(summary(&url).await, now, "an earlier table read as it is");
        open_store(&url).await.unwrap();
        let cols: i64 = raw
            .query_one(
                "SELECT count(*) FROM information_schema.columns WHERE table_name = 'older'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(cols, 14, "the status columns are added back");
        assert_eq!(summary(&url).await, now, "after the upgrade");
    }
    if let Some(redis) = testkit::services::Redis::start("older_stores_redis") {
        let url = format!("{}?prefix=older", redis.url());
        let now = some_items(&url).await;
        assert!(now.contains("docs: 7"), "{now}");
        let client = redis::Client::open(redis.url()).unwrap();
        let mut c = client.get_multiplexed_async_connection().await.unwrap();
        let removed: i64 = redis::cmd("DEL")
            .arg("{older}:agg")
            .arg("{older}:listed")
            .arg("{older}:aggv")
            .query_async(&mut c)
            .await
            .unwrap();
        assert_eq!(removed, 3, "the counters this version keeps were there");
        assert_eq!(
            summary(&url).await,
            now,
            "an earlier prefix read item by item"
        );
    }
}
