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

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conformance_redis() {
    let Some(redis) = testkit::services::Redis::start("conformance_redis") else {
        return;
    };
    let base = redis.url();
    suite::run_all("redis", &factory(move |ns| format!("{base}?prefix={ns}"))).await;
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
