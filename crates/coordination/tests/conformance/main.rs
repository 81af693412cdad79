//! One conformance suite and one contention test, run against every backend: SQLite (a
//! temporary file), PostgreSQL and Redis (real servers from `testkit::services`) and an
//! index on `osmem-server`.

mod contention;
mod suite;

use std::sync::Arc;

use coordination::{open_store, Store};
use suite::{Factory, StoreFuture};

fn factory(make_url: impl Fn(&str) -> String + Send + Sync + 'static) -> Factory {
    Arc::new(move |ns: String| -> StoreFuture {
        let url = make_url(&ns.to_lowercase());
        Box::pin(async move {
            let store: Arc<dyn Store> = open_store(&url)
                .await
                .unwrap_or_else(|e| panic!("open {url}: {e}"));
            store
        })
    })
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
    suite::run_all("memory", &memory_factory()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conformance_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    suite::run_all("sqlite", &sqlite_factory(dir.path())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conformance_postgres() {
    let Some(pg) = testkit::services::Postgres::start("conformance_postgres") else {
        return;
    };
    let base = pg.url();
    suite::run_all("postgres", &factory(move |ns| format!("{base}?table={ns}"))).await;
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
    // Without TLS the server refuses the connection.
    let e = first_use(format!("{base}?table=plain")).await.unwrap_err();
    assert!(e.to_string().contains("pg_hba.conf"), "{e}");
    // With TLS but without the private CA, the certificate is not trusted.
    let e = first_use(format!("{base}?sslmode=require&table=untrusted"))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("certificate"), "{e}");
    // sslrootcert without TLS is a mistake, said at once.
    let e = first_use(format!("{base}?sslrootcert={ca}"))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("sslmode=require"), "{e}");
    suite::run_all(
        "postgres-tls",
        &factory(move |ns| format!("{base}?sslmode=require&sslrootcert={ca}&table={ns}")),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conformance_redis() {
    let Some(redis) = testkit::services::Redis::start("conformance_redis") else {
        return;
    };
    let base = redis.url();
    suite::run_all("redis", &factory(move |ns| format!("{base}?prefix={ns}"))).await;
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
    let plain = base.replacen("rediss://", "redis://", 1);
    let Err(e) = open_store(&format!("{plain}?cacert={ca}")).await else {
        panic!("cacert without TLS was accepted");
    };
    assert!(e.to_string().contains("rediss://"), "{e}");
    suite::run_all(
        "redis-tls",
        &factory(move |ns| format!("{base}?cacert={ca}&prefix={ns}")),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conformance_osmem() {
    let Some(os) = testkit::services::Osmem::start("conformance_osmem") else {
        return;
    };
    let base = os.url();
    suite::run_all("osmem", &factory(move |ns| format!("{base}/{ns}"))).await;
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

fn testkit_factory(server: &testkit::server::TestServer) -> Factory {
    let base = server.url();
    factory(move |ns| format!("{base}/{ns}"))
}

/// The project's own test server speaking Elasticsearch 6 (typed endpoints).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conformance_testkit_es6() {
    use testkit::server::{ServerConfig, TestServer};
    let server = TestServer::start(ServerConfig::elasticsearch("6.8.23"));
    suite::run_all("testkit-es6", &testkit_factory(&server)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conformance_testkit_es8() {
    use testkit::server::{ServerConfig, TestServer};
    let server = TestServer::start(ServerConfig::elasticsearch("8.15.0"));
    suite::run_all("testkit-es8", &testkit_factory(&server)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conformance_testkit_opensearch() {
    use testkit::server::{ServerConfig, TestServer};
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    suite::run_all("testkit-os2", &testkit_factory(&server)).await;
}

/// Contention through a cluster that answers some requests with 429/500/503 or drops the
/// connection: retries and lost answers must not break the protocol.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contention_testkit_with_faults() {
    use testkit::server::{Faults, ServerConfig, TestServer};
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let f = testkit_factory(&server);
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
