//! `rfs` — Reindex-from-Snapshot. One binary, one subcommand per job; this file only
//! parses the command line, sets up logging and dispatches to `cmd::*`.

mod args;
mod cmd;
mod config;
mod dashboard;
mod error_line;
mod exit;
mod failure_logs;
mod hiargs;
mod logging;
mod runtime;
mod ui;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// mimalloc rather than the system allocator: every document allocates its id and
/// `_source` and frees them after its batch is acknowledged, and with glibc's allocator
/// that churn cost a worker about a fifth of its CPU (`scripts/bench-e2e`: about 400 MB/s
/// of `_source` per core with glibc, 510–650 with mimalloc).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (its position in `mi_option_e` of the bundled
/// mimalloc.h, v2 and v3 alike; the Rust bindings name no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Freed memory goes back to the system after 1 s instead of mimalloc's 10 ms: a worker
/// frees a batch's megabytes and allocates the next one's within milliseconds, and each
/// purge made the kernel hand out (and zero) fresh pages again — 9 % of a worker's
/// profile in `clear_page_erms`; with `--parallel 8`, 0.85 s of system time against 0.24 s
/// on a million documents (`scripts/bench-e2e`'s shard).
fn keep_freed_memory_briefly() {
    // SAFETY: `mi_option_set` only stores an integer in mimalloc's option table (it
    // takes no pointers); it is called first thing in `main`, before any other thread.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 1000) }
}

/// No transparent huge pages for this process. With them, the first write to a fresh
/// 2 MB region makes the kernel zero all of it, and memory freed in parts stays resident
/// in whole huge pages: a batch buffer reserved for 8 MB and filled with 450 KB cost a
/// 2 MB zeroing per batch. Measured with `scripts/bench-e2e`'s 1 KB shard, `--parallel 8`:
/// peak RSS 339–358 → 178–196 MB, system time 1.2–1.5 → 0.5 s; CPU time of one worker
/// unchanged. Best effort: a kernel without the setting leaves things as they were.
fn no_transparent_huge_pages() {
    // A refusal costs only memory and speed, never correctness: not worth a line on
    // every start.
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_thp_disable(true);
}

/// Move snapshots, live clusters, JSON lines and tables into clusters, files or DynamoDB.
///
/// `rfs run` reads an Elasticsearch/OpenSearch snapshot repository in place (disk, S3, GCS,
/// Azure), recreates templates and indices on a target of any version, and re-indexes every
/// live document with its original `_id` through `_bulk`. `rfs copy --from URL --to URL`
/// takes any source (a snapshot, a live cluster, JSON-lines files, a PostgreSQL table) into
/// any sink (a cluster, files, DynamoDB); `rfs table run` copies a table slot by slot; `run`
/// and `table run` shape documents on the way by a program. Any number of identical
/// processes share the work through a coordination store (SQLite file, PostgreSQL, Redis,
/// or an index on a cluster); `rfs status` says what was delivered of the source's totals,
/// `rfs verify` checks the target.
///
/// Every flag can also be set by an `RFS_*` environment variable (shown in each
/// command's --help) or by a key of the TOML file given with --config: the key is the
/// flag's long name (`target = "http://localhost:9200"`, `max-docs-per-sec = 500`,
/// `index = ["a", "b"]`, `no-progress = true`). Flags win over the environment, the
/// environment over the config file. An unknown key, a wrong type or a value the flag
/// refuses is an error naming the key and the file (exit code 2); a key that belongs to
/// another command is checked and left out.
///
/// Numeric flags are range-checked (each --help gives the range); passwords and URLs with
/// `user:password@` are masked in logs, errors, status and --help.
///
/// Exit codes: 0 done; 1 fatal error; 2 usage error (also: the store belongs to another
/// migration); 3 no work left for this worker; 4 all remaining work is leased by other
/// workers; 5 stopped (by `rfs stop`, SIGTERM or Ctrl-C, after checkpointing);
/// 6 `rfs verify` found a mismatch; 7 the migration finished but documents were refused by
/// the target or skipped (see `rfs status` and the failure log; `rfs redrive` re-sends them).
#[derive(Debug, Parser)]
#[command(name = "rfs", version, propagate_version = true, max_term_width = 100)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Args)]
struct GlobalArgs {
    /// TOML file whose keys (flag long names) give defaults for every flag.
    #[arg(long, global = true, env = "RFS_CONFIG", value_name = "FILE")]
    config: Option<std::path::PathBuf>,
    /// Log format: `text` for people, `json` for log pipelines (one object per line on
    /// stderr, the commands' own messages included).
    #[arg(long, global = true, env = "RFS_LOG_FORMAT", value_enum, default_value_t = logging::LogFormat::Text)]
    log_format: logging::LogFormat,
    /// More log output (-v debug, -vv trace; RFS_VERBOSE=N). `RFS_LOG` takes a full filter
    /// (`rfs=debug,cluster=trace`).
    #[arg(short, long, global = true, env = "RFS_VERBOSE", action = clap::ArgAction::Count)]
    verbose: u8,
    /// Only warnings and errors.
    #[arg(short, long, global = true, env = "RFS_QUIET")]
    quiet: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// What is in a snapshot repository: snapshots, indices, shards, doc counts, codecs, templates.
    Inspect(cmd::inspect::Args),
    /// Write every live document of a snapshot as JSON lines or bulk requests; no cluster needed.
    Export(cmd::export::Args),
    /// Create a snapshot on a source cluster (deterministic name) and wait for it.
    #[command(subcommand)]
    Snapshot(cmd::snapshot::Command),
    /// Templates and indices: `evaluate` shows what would be done, `migrate` does it.
    #[command(subcommand)]
    Metadata(cmd::metadata::Command),
    /// A worker: lease document work items and stream their shards into the target until none is left.
    Documents(cmd::documents::Args),
    /// The whole migration, every phase guarded by the store: start N copies anywhere.
    Run(cmd::run::Args),
    /// Fleet-wide progress: items by state, documents and bytes done, rate, ETA, failures.
    Status(cmd::status::Args),
    /// Ask every worker to finish its in-flight batches, checkpoint, release and wait.
    Pause(cmd::control::Args),
    /// Let paused workers continue.
    Resume(cmd::control::Args),
    /// Ask every worker to finish its in-flight batches, checkpoint, release and exit (code 5).
    Stop(cmd::control::Args),
    /// Send the documents a failure log says the target refused once more (after a fix).
    Redrive(cmd::redrive::Args),
    /// Compare target and snapshot: live counts per index and sampled documents by id.
    Verify(cmd::verify::Args),
    /// A PostgreSQL table into an index, files or DynamoDB, slot by slot, by a fleet; and its
    /// verification.
    #[command(subcommand)]
    Table(cmd::table::Command),
    /// Any source into any sink by URL: a snapshot, JSON lines or a table into a cluster,
    /// files or DynamoDB; start N copies anywhere with the same flags.
    Copy(cmd::copy::Args),
    /// Try a document program (`--transform`) on JSON lines: what each document becomes.
    #[command(subcommand)]
    Transform(cmd::transform::Command),
    /// Read Lucene index directories directly (debugging and format checks).
    #[command(subcommand)]
    Lucene(cmd::lucene::LuceneCommand),
    /// Benchmarks that print figures.
    #[command(subcommand)]
    Bench(cmd::bench::Command),
}

fn main() -> ExitCode {
    no_transparent_huge_pages();
    keep_freed_memory_briefly();
    quiet_broken_pipe();
    let cli = match parse(std::env::args_os().collect()) {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    logging::init(cli.global.log_format, cli.global.verbose, cli.global.quiet);
    let result = match cli.command {
        Command::Inspect(a) => cmd::inspect::run(a),
        Command::Export(a) => cmd::export::run(a),
        Command::Snapshot(c) => cmd::snapshot::run(c),
        Command::Metadata(c) => cmd::metadata::run(c),
        Command::Documents(a) => cmd::documents::run(a),
        Command::Run(a) => cmd::run::run(a),
        Command::Status(a) => cmd::status::run(a),
        Command::Pause(a) => cmd::control::run(a, coordination::Control::Pause),
        Command::Resume(a) => cmd::control::run(a, coordination::Control::Run),
        Command::Stop(a) => cmd::control::run(a, coordination::Control::Stop),
        Command::Verify(a) => cmd::verify::run(a),
        Command::Table(c) => cmd::table::run(c),
        Command::Redrive(a) => cmd::redrive::run(a),
        Command::Copy(a) => cmd::copy::run(a),
        Command::Transform(c) => cmd::transform::run(c),
        Command::Lucene(c) => cmd::lucene::run(c),
        Command::Bench(c) => cmd::bench::run(c),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // One line, each cause once; every cause in full with -v.
            let line = error_line::render(&e, cli.global.verbose > 0);
            if logging::json() {
                tracing::error!("{line}");
            } else {
                // Once, on stderr, masked like every log line.
                eprintln!("error: {}", redact::text(&line));
            }
            ExitCode::from(error_line::exit_code(&e))
        }
    }
}

/// Output into a pipe whose reader has gone (`rfs inspect REPO | head`) ends the process
/// quietly with 141 (128 + SIGPIPE, as a shell reports other tools), not with the panic
/// message `println!` gives.
fn quiet_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

/// The command line with the config file's keys added ([`config::apply`]), parsed. Usage
/// errors, --help and --version are printed here (masked: an `[env: …]` value or an
/// echoed argument never shows a password) and give the exit code.
fn parse(argv: Vec<std::ffi::OsString>) -> Result<Cli, ExitCode> {
    let argv = config::apply(Cli::command(), argv).map_err(|e| {
        eprintln!("error: {}", redact::text(&e.to_string()));
        ExitCode::from(exit::USAGE)
    })?;
    Cli::command()
        .try_get_matches_from(argv)
        .and_then(|m| Cli::from_arg_matches(&m))
        .map_err(|e| {
            use std::io::{IsTerminal, Write};
            let styled = e.render();
            let (text, terminal) = if e.use_stderr() {
                (
                    &mut std::io::stderr() as &mut dyn Write,
                    std::io::stderr().is_terminal(),
                )
            } else {
                (
                    &mut std::io::stdout() as &mut dyn Write,
                    std::io::stdout().is_terminal(),
                )
            };
            let rendered = if terminal {
                styled.ansi().to_string()
            } else {
                styled.to_string()
            };
            let _ = text.write_all(redact::text(&rendered).as_bytes());
            let _ = text.flush();
            ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(exit::USAGE))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command of the tree with its path (`rfs documents`, `rfs lucene dump`, …).
    fn commands() -> Vec<(String, clap::Command)> {
        fn walk(path: String, cmd: &clap::Command, out: &mut Vec<(String, clap::Command)>) {
            out.push((path.clone(), cmd.clone()));
            for c in cmd.get_subcommands() {
                walk(format!("{path} {}", c.get_name()), c, out);
            }
        }
        let mut cmd = Cli::command();
        cmd.build();
        let mut out = Vec::new();
        walk("rfs".into(), &cmd, &mut out);
        out
    }

    #[test]
    fn every_flag_has_an_rfs_variable() {
        let mut missing = Vec::new();
        let mut seen = 0;
        for (path, cmd) in commands() {
            for arg in cmd.get_arguments() {
                let Some(long) = arg.get_long() else { continue };
                if matches!(long, "help" | "version" | "config") {
                    continue;
                }
                seen += 1;
                match arg.get_env().and_then(|e| e.to_str()) {
                    Some(env) if env.starts_with("RFS_") => {}
                    other => missing.push(format!("{path} --{long}: {other:?}")),
                }
            }
        }
        assert!(seen > 100, "walked only {seen} flags");
        assert!(
            missing.is_empty(),
            "flags without an RFS_* variable:\n{}",
            missing.join("\n")
        );
    }

    /// A flag that can hold a secret: a password, a key, a user name, or a URL (which may
    /// carry `user:password@` or a signature).
    fn may_hold_a_secret(arg: &clap::Arg) -> bool {
        let long = arg.get_long().unwrap_or_default();
        let value_name = arg
            .get_value_names()
            .and_then(|v| v.first())
            .map(|v| v.to_string())
            .unwrap_or_default();
        matches!(
            value_name.as_str(),
            "URL" | "REPO" | "PASSWORD" | "KEY" | "SECRET" | "USER"
        ) || ["password", "api-key", "secret", "access-key", "username"]
            .iter()
            .any(|w| long.contains(w))
    }

    #[test]
    fn secret_flags_hide_their_environment_values() {
        let mut shown = Vec::new();
        let mut hidden = 0;
        for (path, cmd) in commands() {
            for arg in cmd.get_arguments() {
                if arg.get_env().is_some() && may_hold_a_secret(arg) {
                    if arg.is_hide_env_values_set() {
                        hidden += 1;
                    } else {
                        shown.push(format!("{path} --{}", arg.get_long().unwrap_or_default()));
                    }
                }
            }
        }
        assert!(
            shown.is_empty(),
            "env values shown in --help:\n{}",
            shown.join("\n")
        );
        assert!(hidden > 30, "only {hidden} secret flags found");
    }

    #[test]
    fn debug_of_the_arguments_masks_secrets() {
        let cli = Cli::try_parse_from([
            "rfs",
            "run",
            "--repo",
            "s3://b/p?X-Amz-Signature=SIGSECRET",
            "--snapshot",
            "s",
            "--s3-access-key-id",
            "AKIDSECRET",
            "--s3-secret-access-key",
            "S3SECRET",
            "--target",
            "https://elastic:TGTSECRET@h:9200",
            "--target-password",
            "PWSECRET",
            "--target-api-key",
            "APISECRET",
            "--store",
            "postgres://rfs:STORESECRET@db/rfs",
            "--source-cluster",
            "https://u:SRCSECRET@src:9200",
            "--source-repository",
            "r",
            "--source-password",
            "SRCPWSECRET",
            "--source-api-key",
            "SRCAPISECRET",
        ])
        .unwrap();
        let debug = format!("{cli:?} {cli:#?}");
        for secret in [
            "SIGSECRET",
            "AKIDSECRET",
            "S3SECRET",
            "TGTSECRET",
            "PWSECRET",
            "APISECRET",
            "STORESECRET",
            "SRCSECRET",
            "SRCPWSECRET",
            "SRCAPISECRET",
        ] {
            assert!(!debug.contains(secret), "{secret} in {debug}");
        }
        // What is not secret stays visible.
        assert!(debug.contains("https://elastic:***@h:9200"), "{debug}");
        assert!(debug.contains("postgres://rfs:***@db/rfs"), "{debug}");
    }

    fn worker_args(extra: &[&str]) -> args::WorkerArgs {
        let mut argv = vec![
            "rfs",
            "documents",
            "--repo",
            "r",
            "--snapshot",
            "s",
            "--target",
            "t",
        ];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Documents(a) => a.worker,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn worker_settings_at_their_limits_make_valid_durations() {
        for extra in [
            &[
                "--lease-seconds",
                "86400",
                "--renew-seconds",
                "3600",
                "--checkpoint-seconds",
                "3600",
                "--control-seconds",
                "60",
                "--max-attempts",
                "100",
                "--max-docs-per-sec",
                "1000000000",
                "--max-bytes-per-sec",
                "1000000000000",
                "--concurrency",
                "256",
                "--max-batch-docs",
                "1000000",
                "--max-batch-bytes",
                "1073741824",
            ][..],
            &[
                "--lease-seconds",
                "1",
                "--renew-seconds",
                "0",
                "--checkpoint-seconds",
                "0.05",
                "--control-seconds",
                "0.05",
                "--max-attempts",
                "1",
                "--max-docs-per-sec",
                "0.001",
                "--max-bytes-per-sec",
                "1",
                "--concurrency",
                "1",
                "--max-batch-docs",
                "1",
                "--max-batch-bytes",
                "1024",
            ][..],
        ] {
            let w = worker_args(extra);
            let c = w.coordination_config();
            assert!(c.initial_lease >= std::time::Duration::from_secs(1));
            assert!(c.renew_every <= std::time::Duration::from_secs(3600));
            assert!(c.keeper_lease <= std::time::Duration::from_secs(30));
            assert!(c.keeper_lease >= std::time::Duration::from_secs(3));
            let o = w.job_options(false).worker;
            assert!(o.pipeline.checkpoint_every <= std::time::Duration::from_secs(3600));
            assert!(o.pipeline.control_every >= std::time::Duration::from_millis(50));
            assert!(o.poll <= std::time::Duration::from_secs(5));
        }
        // Out-of-range values that reach the struct another way are clamped, not a panic.
        let mut w = worker_args(&[]);
        w.lease_seconds = u64::MAX;
        w.checkpoint_seconds = f64::MAX;
        w.control_seconds = f64::NAN;
        let c = w.coordination_config();
        assert_eq!(c.initial_lease, std::time::Duration::from_secs(86_400));
        assert_eq!(
            c.renew_every,
            std::time::Duration::from_secs(10),
            "heartbeat on by default"
        );
        w.renew_seconds = f64::NAN;
        assert!(w.coordination_config().renew_every.is_zero());
        let j = w.job_options(true);
        assert!(j.memory_budget >= 2 * w.max_batch_bytes * j.parallel);
        let o = j.worker;
        assert_eq!(
            o.pipeline.checkpoint_every,
            std::time::Duration::from_secs(3600)
        );
        assert_eq!(
            o.pipeline.control_every,
            std::time::Duration::from_millis(50)
        );
    }
}
