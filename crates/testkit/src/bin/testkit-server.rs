//! `testkit-server`: the testkit Elasticsearch/OpenSearch-API test server as a process, for tests
//! that kill and restart other processes around it. Prints its URL on the first line of stdout and
//! `admin <URL>` on the second, then serves until killed. Faults can be changed at run time with
//! `POST /_testkit/faults` and `POST /_testkit/down` (on either URL).

use std::collections::BTreeSet;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use testkit::server::{CollectionType, Distribution, Faults, ServerConfig, TestServer};

#[derive(Parser, Debug)]
#[command(
    name = "testkit-server",
    about = "Elasticsearch/OpenSearch-API test server with fault injection"
)]
struct Args {
    /// Product to report: elasticsearch or opensearch.
    #[arg(long, default_value = "opensearch")]
    distribution: Distribution,
    /// Version to report and whose dialect to speak (e.g. 6.8.23, 7.10.2, 8.15.0, 2.11.0).
    #[arg(long = "server-version", default_value = "2.11.0")]
    server_version: String,
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Seed of the fault-injection random generator.
    #[arg(long)]
    seed: Option<u64>,
    /// Accept index/create operations without keeping the documents (a benchmark sink).
    #[arg(long)]
    discard_documents: bool,
    /// Repository directory copied into a registered fs repository when a snapshot is created.
    #[arg(long)]
    snapshot_source: Option<PathBuf>,
    /// Milliseconds a snapshot started without wait_for_completion stays IN_PROGRESS.
    #[arg(long, default_value_t = 300)]
    snapshot_duration_ms: u64,
    /// Largest accepted request body in bytes (after gzip decoding).
    #[arg(long, default_value_t = 100 * 1024 * 1024)]
    max_content_length: usize,
    /// Refuse writes to indices that do not exist instead of creating them.
    #[arg(long)]
    no_auto_create_index: bool,
    /// Report `http.compression: true` in `GET _cluster/settings?include_defaults` (clients in
    /// automatic mode then gzip their request bodies).
    #[arg(long)]
    http_compression: bool,
    /// Play an OpenSearch Serverless collection of this type (search, timeseries,
    /// vectorsearch): in timeseries and vectorsearch, writes naming a document id are refused.
    #[arg(long, env = "TESTKIT_SERVERLESS", value_name = "COLLECTION_TYPE")]
    serverless: Option<CollectionType>,
    /// Probability of a whole-request 429 with Retry-After.
    #[arg(long, default_value_t = 0.0)]
    reject_429: f64,
    /// Retry-After seconds on those 429s.
    #[arg(long, default_value_t = 0)]
    retry_after_secs: u64,
    /// Probability of a 500.
    #[arg(long, default_value_t = 0.0)]
    error_500: f64,
    /// Probability of a 503.
    #[arg(long, default_value_t = 0.0)]
    error_503: f64,
    /// Probability of each _bulk item failing with 429 es_rejected_execution_exception.
    #[arg(long, default_value_t = 0.0)]
    bulk_item_429: f64,
    /// Probability of each _bulk item failing with 503 unavailable_shards_exception.
    #[arg(long, default_value_t = 0.0)]
    bulk_item_503: f64,
    /// Added latency per request in milliseconds.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// Extra random latency, up to this many milliseconds.
    #[arg(long, default_value_t = 0)]
    latency_jitter_ms: u64,
    /// Added latency after a request is handled, before it is answered, in milliseconds.
    #[arg(long, default_value_t = 0)]
    answer_delay_ms: u64,
    /// Probability of closing the connection without a response.
    #[arg(long, default_value_t = 0.0)]
    drop_connection: f64,
    /// A document id that always fails with mapper_parsing_exception (repeatable).
    #[arg(long = "failing-id")]
    failing_ids: Vec<String>,
    /// An index whose bulk writes fail with 403 cluster_block_exception (repeatable).
    #[arg(long = "write-blocked")]
    write_blocked: Vec<String>,
    /// Apply the whole-request faults to _bulk requests only.
    #[arg(long)]
    bulk_only: bool,
    /// Exit when the process with this id is gone (so a killed test leaves no server behind).
    #[arg(long)]
    parent_pid: Option<u32>,
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let config = ServerConfig {
        distribution: a.distribution,
        version: a.server_version,
        listen: a.listen,
        threads: a.threads,
        seed: a.seed,
        discard_documents: a.discard_documents,
        snapshot_source: a.snapshot_source,
        snapshot_duration: Duration::from_millis(a.snapshot_duration_ms),
        max_content_length: a.max_content_length,
        auto_create_index: !a.no_auto_create_index,
        http_compression: a.http_compression,
        serverless: a.serverless,
        faults: Faults {
            reject_429: a.reject_429,
            retry_after_secs: a.retry_after_secs,
            error_500: a.error_500,
            error_503: a.error_503,
            bulk_item_429: a.bulk_item_429,
            bulk_item_503: a.bulk_item_503,
            latency_ms: a.latency_ms,
            latency_jitter_ms: a.latency_jitter_ms,
            answer_delay_ms: a.answer_delay_ms,
            drop_connection: a.drop_connection,
            failing_ids: a.failing_ids.into_iter().collect::<BTreeSet<_>>(),
            bulk_only: a.bulk_only,
            write_blocked: a.write_blocked.into_iter().collect::<BTreeSet<_>>(),
            expire_scrolls: 0,
            scroll_shard_failures: 0,
            pit_shard_failures: 0,
            timed_out_pages: 0,
        },
        ..ServerConfig::default()
    };
    let server = TestServer::try_start(config).context("starting the test server")?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", server.url())?;
    writeln!(out, "admin {}", server.admin_url())?;
    out.flush()?;
    drop(out);
    match a.parent_pid {
        Some(pid) => {
            let proc_dir = PathBuf::from(format!("/proc/{pid}"));
            while proc_dir.exists() {
                std::thread::sleep(Duration::from_millis(200));
            }
            server.shutdown();
            Ok(())
        }
        None => loop {
            std::thread::park();
        },
    }
}
