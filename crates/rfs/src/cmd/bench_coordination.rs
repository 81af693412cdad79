//! `rfs bench coordination`: N concurrent workers acquire and complete M work items on a
//! coordination store; prints acquisitions per second, acquisition latency (p50, p99) and
//! the number of double grants found by the lease oracle (must be 0).

use std::time::Duration;

use anyhow::Context;
use coordination::contention::{contention_items, double_grants, run_contention, ContentionConfig};
use coordination::{open_store, Config, Coordinator, RecordKind};

use crate::args::usize_in;

#[derive(clap::Args)]
pub struct Args {
    /// Coordination store URL (sqlite://FILE, postgres://…, redis://…, http(s)://host:port/index).
    /// Use a namespace of its own: the benchmark writes work items there.
    #[arg(long, env = "RFS_STORE", value_name = "URL", hide_env_values = true)]
    store: String,
    /// Concurrent workers (async tasks in this process; 1–10000).
    #[arg(
        long,
        env = "RFS_BENCH_WORKERS",
        default_value_t = 64,
        value_parser = usize_in(1, 10_000)
    )]
    workers: usize,
    /// Work items to create and complete (1–10000000).
    #[arg(
        long,
        env = "RFS_BENCH_ITEMS",
        default_value_t = 2000,
        value_parser = usize_in(1, 10_000_000)
    )]
    items: usize,
    /// Delete every record in the store's namespace first (required when it is not empty).
    #[arg(long, env = "RFS_BENCH_CLEAR")]
    clear: bool,
}

impl std::fmt::Debug for Args {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Args")
            .field("store", &redact::url(&self.store))
            .field("workers", &self.workers)
            .field("items", &self.items)
            .field("clear", &self.clear)
            .finish()
    }
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    if args.workers == 0 || args.items == 0 {
        anyhow::bail!("--workers and --items must be at least 1");
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(bench(args))
}

async fn bench(args: Args) -> anyhow::Result<u8> {
    let store = open_store(&args.store).await?;
    if args.clear {
        store.clear().await?;
    } else if !store.list(RecordKind::Item).await?.is_empty() {
        anyhow::bail!(
            "the store already holds work items; pass --clear to delete them (use a namespace of its own)"
        );
    }
    let protocol = Config {
        // Long enough that no lease expires during the run.
        initial_lease: Duration::from_secs(600),
        ..Config::default()
    };
    let setup = std::time::Instant::now();
    Coordinator::new(store.clone(), protocol.clone())
        .setup(&contention_items(args.items, 1000))
        .await?;
    let setup = setup.elapsed();
    let cfg = ContentionConfig::bench(args.workers, protocol);
    let report = run_contention(store.clone(), &cfg).await?;
    let doubles = double_grants(&report.intervals).len();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("store: {}", store.backend());
    println!("workers: {}", args.workers);
    println!("items: {}", args.items);
    println!("setup_ms: {:.1}", ms(setup));
    println!("acquisitions: {}", report.acquisitions);
    println!("elapsed_ms: {:.1}", ms(report.elapsed));
    println!("acquisitions_per_s: {:.0}", report.per_second());
    println!("acquire_p50_ms: {:.2}", ms(report.quantile(0.5)));
    println!("acquire_p99_ms: {:.2}", ms(report.quantile(0.99)));
    println!("double_grants: {doubles}");
    let st = Coordinator::new(store.clone(), Config::default())
        .status()
        .await?;
    if st.items.done != args.items {
        anyhow::bail!(
            "{} of {} items complete after the run",
            st.items.done,
            args.items
        );
    }
    Ok(if doubles == 0 { 0 } else { crate::exit::FATAL })
}
