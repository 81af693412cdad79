//! `rfs status`: fleet-wide progress read from the coordination store — items by state,
//! documents (a table's rows) and bytes done out of the source's totals, rate and ETA, refused documents
//! (fleet-wide from the store; by type from the failure logs given), failed items,
//! and progress per index. `--watch` redraws every few seconds; `--json` prints one object;
//! `--serve ADDR` serves a live web page of the same (see `crate::dashboard`).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use engine::coverage::{Verdict, NESTED_PREFIX};
use engine::phases::read_totals;
use engine::Totals;
use serde_json::{json, Value};

use crate::args::{float_in, StoreArgs};
use crate::exit;
use crate::failure_logs::FailureLogs;
use crate::runtime::runtime;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Redraw every SECS seconds until the migration is finished (0.2–3600, default 5).
    #[arg(
        long,
        env = "RFS_WATCH",
        value_name = "SECS",
        num_args = 0..=1,
        default_missing_value = "5",
        value_parser = float_in(0.2, 3600.0)
    )]
    pub watch: Option<f64>,
    /// One JSON object (per refresh with --watch) instead of text.
    #[arg(long, env = "RFS_JSON")]
    pub json: bool,
    /// The failure log(s) to summarise by error type (JSON lines written by workers).
    #[arg(
        long,
        env = "RFS_FAILURE_LOG",
        default_value = "rfs-failures.jsonl",
        value_name = "FILE"
    )]
    pub failure_log: Vec<PathBuf>,
    /// Serve a live web page of the migration on ADDR (`127.0.0.1:8080`; port 0 picks a
    /// free port) instead of printing: progress per index, rate chart, ETA, items and
    /// their holders, failures, and pause / resume / stop buttons. `GET /api/status`
    /// answers the JSON of --json.
    #[arg(long, env = "RFS_SERVE", value_name = "ADDR", conflicts_with_all = ["watch", "json"])]
    pub serve: Option<SocketAddr>,
    /// With --serve: the token that allows pause / resume / stop (from any host) and
    /// reads from other hosts, sent as `Authorization: Bearer TOKEN` (the page asks for
    /// it, or takes it from `#token=TOKEN` at the end of its URL). Without a token,
    /// control is allowed only from this host. 16 to 256 visible ASCII characters.
    #[arg(
        long,
        env = "RFS_SERVE_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN",
        value_parser = crate::dashboard::TokenParser
    )]
    pub serve_token: Option<crate::dashboard::Token>,
    /// With --serve: seconds between reads of the store (0.2 to 3600).
    #[arg(
        long,
        env = "RFS_SERVE_INTERVAL",
        default_value_t = 2.0,
        value_name = "SECS",
        value_parser = crate::dashboard::parse_interval
    )]
    pub serve_interval: f64,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    if let Some(addr) = args.serve {
        return serve(args, addr);
    }
    runtime()?.block_on(async move {
        // Read-only: a store that does not exist is an error, never created.
        let coord = args
            .store
            .existing_coordinator(coordination::Config::default())
            .await?;
        let mut last: Option<(Instant, u64, u64)> = None;
        let mut logs = FailureLogs::new(&args.failure_log, 0);
        loop {
            // Large migrations (100,000 table slots): the keeper's summary, at most a
            // keeper period old, instead of reading every item.
            let status = coord.status_summary(Duration::from_secs(60)).await?;
            let totals = read_totals(&coord).await?;
            let now = Instant::now();
            let rate = match last {
                Some((t, docs, bytes)) => {
                    let secs = now.duration_since(t).as_secs_f64().max(0.001);
                    Some((
                        status.docs_done.saturating_sub(docs) as f64 / secs,
                        status.bytes_done.saturating_sub(bytes) as f64 / secs,
                    ))
                }
                None => None,
            };
            last = Some((now, status.docs_done, status.bytes_done));
            logs.refresh();
            let failures = logs.by_type();
            let mut view = render_json(&status, totals.as_ref(), rate, &failures);
            let snapshot_follow = super::status_snapshot_follow::read(
                coord.store().as_ref(),
                status.control.as_str(),
            )
            .await?;
            // Only a repository followed has it (the dashboard's view, which does not read
            // it, stays the same as this one otherwise).
            if !snapshot_follow.is_null() {
                view["snapshot_follow"] = snapshot_follow;
            }
            // Errors recorded by workers may hold a URL: masked like every log line.
            if args.json {
                println!("{}", redact::text(&view.to_string()));
            } else {
                if args.watch.is_some() {
                    print!("\x1b[2J\x1b[H");
                }
                print!("{}", redact::text(&render_text(&view)));
                print!(
                    "{}",
                    redact::text(&super::status_snapshot_follow::to_text(
                        &view["snapshot_follow"]
                    ))
                );
            }
            match args.watch {
                Some(secs) if !status.finished => {
                    tokio::time::sleep(Duration::from_secs_f64(secs.clamp(0.2, 3600.0))).await
                }
                _ => break,
            }
        }
        Ok(exit::OK)
    })
}

/// `rfs status --serve`: the page server, until the process is ended.
fn serve(args: Args, addr: SocketAddr) -> anyhow::Result<u8> {
    let url = args.store.store.clone();
    let open: crate::dashboard::Opener = Box::new(move || {
        let url = url.clone();
        Box::pin(async move {
            let store = coordination::open_existing_store(&url).await?;
            Ok(coordination::Coordinator::new(
                store,
                coordination::Config::default(),
            ))
        })
    });
    let opts = crate::dashboard::Options {
        addr,
        token: args.serve_token.map(crate::dashboard::Token::into_inner),
        interval: Duration::from_secs_f64(args.serve_interval),
        store_url: args.store.store,
        failure_logs: args.failure_log,
    };
    runtime()?.block_on(crate::dashboard::serve(opts, open))?;
    Ok(exit::OK)
}

/// The JSON object of `rfs status --json`, also served as the dashboard's `/api/status`.
pub(crate) fn render_json(
    s: &coordination::Status,
    totals: Option<&Totals>,
    rate: Option<(f64, f64)>,
    failures: &BTreeMap<String, u64>,
) -> Value {
    // `failures`: refused documents by type, read from failure-log files on this machine.
    let live = totals.map(|t| t.docs);
    // Documents a transform program left out are counted under `filtered:<reason>` keys:
    // accounted for, not undelivered.
    let (filtered_by_reason, undelivered_by_reason): (BTreeMap<_, _>, BTreeMap<_, _>) = s
        .reasons
        .iter()
        .filter(|(k, _)| !k.starts_with(NESTED_PREFIX))
        .map(|(k, v)| (k.clone(), *v))
        .partition(|(k, _)| k.starts_with("filtered:"));
    // Each index held against the source's own total, as the plan recorded it.
    let coverage = totals.map(|t| engine::coverage::check(t, &s.per_group));
    let coverage_of = |name: &str| coverage.iter().flatten().find(|c| c.group == name).cloned();
    let filtered: u64 = filtered_by_reason.values().sum();
    let accounted = s.docs_done + s.docs_refused + s.docs_skipped + filtered;
    let remaining = live.map(|l| l.saturating_sub(accounted));
    let eta = match (rate, remaining) {
        (Some((r, _)), Some(rem)) if r > 0.0 => Some(rem as f64 / r),
        _ => None,
    };
    let mut per_index = serde_json::Map::new();
    let names: std::collections::BTreeSet<&String> = s
        .per_group
        .keys()
        .chain(totals.map(|t| t.groups.keys()).into_iter().flatten())
        .collect();
    for name in names {
        let p = s.per_group.get(name).cloned().unwrap_or_default();
        let t = totals.and_then(|t| t.groups.get(name));
        let c = coverage_of(name);
        per_index.insert(
            name.clone(),
            json!({
                "items": p.items,
                "docs_done": p.docs_done,
                "docs_refused": p.docs_refused,
                "docs_skipped": p.docs_skipped,
                "bytes_done": p.bytes_done,
                "live_docs": t.map(|t| t.docs),
                "shards": t.map(|t| t.parts),
                "broken_shards": t.map(|t| t.broken.clone()),
                "delta": t.and_then(|t| t.delta.clone()),
                "source_total": c.as_ref().map(|c| json!({
                    "docs": c.total,
                    "count": c.count,
                    "accounted": c.accounted,
                    "nested": c.nested,
                    "verdict": c.verdict,
                    "message": c.describe(),
                })),
            }),
        );
    }
    // A delta: what it sends and what it leaves, summed over the indices.
    let delta = totals.filter(|t| t.since.is_some()).map(|t| {
        let mut sum = engine::DeltaTotals::default();
        let mut created = Vec::new();
        // Ids deleted, known once every item of the index is done: what it sent beyond
        // the documents it indexed.
        let mut deleted = Some(0u64);
        for (name, g) in &t.groups {
            match &g.delta {
                Some(d) => {
                    sum.add(d);
                    let p = s.per_group.get(name).cloned().unwrap_or_default();
                    let sent = p.docs_done + p.docs_refused + p.docs_skipped;
                    deleted = deleted
                        .filter(|_| p.items.done + p.items.failed == p.items.total)
                        .map(|n| n + sent.saturating_sub(d.index));
                }
                None => created.push(name.clone()),
            }
        }
        json!({
            "since": t.since,
            "totals": sum,
            "deleted": deleted,
            "created_indices": created,
            "removed_indices": t.removed,
        })
    });
    json!({
        "migration": s.identity,
        "finished": s.finished,
        "setup_done": s.setup_done,
        "control": s.control.as_str(),
        "items": s.items,
        "docs_done": s.docs_done,
        "docs_refused": s.docs_refused,
        "docs_skipped": s.docs_skipped,
        "docs_filtered": filtered,
        "undelivered_by_reason": undelivered_by_reason
            .iter()
            .filter(|(k, _)| !k.starts_with("sink:") && k.as_str() != coordination::POSSIBLE_DUPLICATES)
            .collect::<BTreeMap<_, _>>(),
        // Documents sent again after a takeover to a target that writes without ids: at
        // most that many are stored twice (`rfs verify --server-generated-ids` counts them).
        "possible_duplicates": s.possible_duplicates(),
        "filtered_by_reason": filtered_by_reason,
        // How hard the target pushed back (DynamoDB throttling, unprocessed writes, retries).
        "sink_pushback": undelivered_by_reason
            .iter()
            .filter_map(|(k, v)| k.strip_prefix("sink:").map(|k| (k, v)))
            .collect::<BTreeMap<_, _>>(),
        "bytes_done": s.bytes_done,
        "live_docs": live,
        "snapshot_bytes": totals.map(|t| t.bytes),
        "docs_per_sec": rate.map(|r| r.0),
        "bytes_per_sec": rate.map(|r| r.1),
        "eta_seconds": eta,
        "failed_items": s.failures,
        "failed_documents_by_type": failures,
        "phases": s.phases,
        "follow": follow_json(&s.phases),
        "keeper": s.keeper.as_ref().map(|(h, e)| json!({"holder": h, "expiry": e})),
        "per_index": per_index,
        "leases": s.leases,
        "delta": delta,
        // Against the source's own totals: `proved` (exact totals, or each item's count
        // proved), `estimated` (equal to estimates), `differs` (named in `totals_differ`),
        // `pending`, `unchecked` (no total recorded).
        "source_totals": coverage.as_ref().map(|c| source_totals_verdict(c)),
        "totals_differ": coverage.iter().flatten()
            .filter(|c| c.verdict == Verdict::Differs)
            .map(|c| json!({"index": c.group, "count": c.count, "total": c.total,
                "accounted": c.accounted, "nested": c.nested, "message": c.describe()}))
            .collect::<Vec<_>>(),
        "accounting_mismatch": s.accounting.as_ref().map(|m| json!({
            "message": m.message(),
            "items": m.items,
            "covered": m.covered,
            "accounted": m.accounted(),
            "wrong_items": m.wrong_items,
        })),
    })
}

/// WAL a slot may keep before `status` warns that it fills the source's disk.
const RETAINED_WARN_BYTES: u64 = 1 << 30;

/// The follower's state (`--follow`) from the `follow` phase: what it applied, its lag,
/// the log the source keeps for it and how to drop the feed; `null` without a follower.
fn follow_json(phases: &[coordination::PhaseStatus]) -> Value {
    let Some(p) = phases
        .iter()
        .find(|p| p.name == engine::follow::PHASE_FOLLOW)
    else {
        return Value::Null;
    };
    let Some(f) = p
        .data
        .clone()
        .and_then(|d| serde_json::from_value::<engine::follow::FollowState>(d).ok())
    else {
        return Value::Null;
    };
    let state = match (p.state.as_str(), &p.holder) {
        ("failed", _) => "failed",
        (_, Some(_)) => "following",
        // A follower stopped on an error an operator must act on (a column added):
        // the next process started takes over from the saved round.
        (_, None) if f.error.is_some() => "halted",
        _ => "stopped",
    };
    let retained = f.retained_bytes();
    let warning = retained
        .filter(|b| *b >= RETAINED_WARN_BYTES)
        .map(|b| format!(
            "the source keeps {} of WAL for this migration's slot {}: it grows while nobody follows; drop the slot when the migration is done: {}",
            human_bytes(b as f64), f.name, f.drop_hint
        ));
    json!({
        "state": state,
        "holder": p.holder,
        "name": f.name,
        "source": f.source,
        "applied": f.applied,
        "changes": f.applied.changes(),
        "superseded": f.superseded,
        "outside": f.outside,
        "rounds": f.rounds,
        "delivered": f.delivered,
        "refused": f.refused,
        "skipped": f.skipped,
        "lag_bytes": f.lag_bytes(),
        "behind_seconds": f.behind_seconds(),
        "retained_bytes": retained,
        "caught_up": f.caught_up,
        "newest_applied_ms": f.newest_applied_ms,
        "updated_ms": f.updated_ms,
        "error": f.error.clone().or_else(|| p.last_error.clone()),
        "warning": warning,
        "drop": f.drop_hint,
    })
}

/// One word for the migration against the source's totals: the worst of its indices.
fn source_totals_verdict(c: &[engine::coverage::GroupCoverage]) -> &'static str {
    let has = |v: Verdict| c.iter().any(|g| g.verdict == v);
    if has(Verdict::Differs) {
        "differs"
    } else if has(Verdict::Pending) {
        "pending"
    } else if has(Verdict::Unchecked) {
        "unchecked"
    } else if has(Verdict::MatchesEstimate) {
        "estimated"
    } else {
        "proved"
    }
}

/// What the text calls the things a migration moves, by the kind its identity records: a
/// table's rows in slots, a snapshot's documents in shards, other sources' documents.
struct Words {
    /// "documents" / "rows", and the same in capitals for the alarm lines.
    unit: &'static str,
    unit_caps: &'static str,
    /// "items" / "slots", one of them, and the capitals of the alarm lines.
    items: &'static str,
    item: &'static str,
    items_caps: &'static str,
    /// "index" / "table": the per-group table's header.
    group: &'static str,
    /// "live docs" / "rows (est.)": the per-group total's header.
    total: &'static str,
    /// How the source's size is named after the bytes sent.
    holds: &'static str,
}

impl Words {
    fn of(v: &Value) -> Words {
        match v["migration"]["kind"].as_str() {
            Some("table") => Words {
                unit: "rows",
                unit_caps: "ROWS",
                items: "slots",
                item: "slot",
                items_caps: "SLOTS",
                group: "table",
                total: "rows (est.)",
                holds: "the table holds about",
            },
            kind => {
                // Snapshots (and identities written before they named a kind) count live
                // docs of a snapshot; other sources their own documents.
                let snapshot = kind.is_none_or(|k| k == "snapshot");
                Words {
                    unit: "documents",
                    unit_caps: "DOCUMENTS",
                    items: "items",
                    item: "item",
                    items_caps: "WORK ITEMS",
                    group: "index",
                    total: if snapshot { "live docs" } else { "source docs" },
                    holds: if snapshot {
                        "the snapshot holds"
                    } else {
                        "the source holds"
                    },
                }
            }
        }
    }
}

fn render_text(v: &Value) -> String {
    let w = Words::of(v);
    let unit = w.unit;
    let n = |k: &str| v.get(k).and_then(Value::as_u64);
    let items = &v["items"];
    let i = |k: &str| items.get(k).and_then(Value::as_u64).unwrap_or(0);
    let mut out = String::new();
    let not_delivered = n("docs_refused").unwrap_or(0) + n("docs_skipped").unwrap_or(0);
    let failed_items = i("failed");
    // "FINISHED" alone only when every document reached the target.
    let state = match (
        v["finished"].as_bool() == Some(true),
        not_delivered,
        failed_items,
    ) {
        (false, _, _) => "running".to_string(),
        // Every item's counts add up: still, every document only when they also equal
        // the source's own totals.
        (true, 0, 0) => match v["source_totals"].as_str() {
            Some("differs") => format!("FINISHED, BUT THE SOURCE'S TOTALS DO NOT MATCH (see below): not proved that every {} was delivered", singular(unit)),
            Some("estimated") => format!("FINISHED: every {} delivered (against the source's estimated totals)", singular(unit)),
            Some("proved") => format!("FINISHED: every {} delivered", singular(unit)),
            _ => format!("FINISHED: every {} delivered (by the {}' own counts; no source total recorded)", singular(unit), w.items),
        },
        (true, nd, 0) => format!("FINISHED WITH {nd} {} NOT DELIVERED", w.unit_caps),
        (true, 0, f) => format!("FINISHED WITH {f} FAILED {}", w.items_caps),
        (true, nd, f) => {
            format!(
                "FINISHED WITH {f} FAILED {} AND {nd} {} NOT DELIVERED",
                w.items_caps,
                w.unit_caps
            )
        }
    };
    let state = if v["accounting_mismatch"].is_object() {
        format!("{state}; COUNTS DO NOT ADD UP")
    } else {
        state
    };
    let identity = v["migration"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("?")))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_else(|| "(identity not recorded yet)".into());
    out.push_str(&format!("migration: {identity}\n"));
    out.push_str(&format!(
        "state: {state}   control: {}\n",
        v["control"].as_str().unwrap_or("?")
    ));
    if let Some(m) = v["accounting_mismatch"]["message"].as_str() {
        out.push_str(&format!("ACCOUNTING: {m}\n"));
    }
    for d in v["totals_differ"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "TOTAL DIFFERS: {}\n",
            d["message"].as_str().unwrap_or("?")
        ));
    }
    for p in v["phases"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "  phase {:<10} {}\n",
            p["name"].as_str().unwrap_or("?"),
            p["state"].as_str().unwrap_or("?")
        ));
    }
    let f = &v["follow"];
    if f.is_object() {
        let a = &f["applied"];
        let u = |v: &Value| v.as_u64().unwrap_or(0);
        out.push_str(&format!(
            "follow {} ({}): {} changes applied ({} inserts, {} updates, {} deletes, {} key changes), {} delivered, {} refused, {} skipped\n",
            f["state"].as_str().unwrap_or("?"),
            f["name"].as_str().unwrap_or("?"),
            u(&f["changes"]),
            u(&a["inserts"]),
            u(&a["updates"]),
            u(&a["deletes"]),
            u(&a["key_changes"]),
            u(&f["delivered"]),
            u(&f["refused"]),
            u(&f["skipped"]),
        ));
        out.push_str(&format!(
            "  lag: {} of WAL, {} behind the newest commit; the slot keeps {} of WAL\n",
            f["lag_bytes"]
                .as_u64()
                .map_or("?".into(), |b| human_bytes(b as f64)),
            f["behind_seconds"]
                .as_i64()
                .map_or("?".into(), |s| human_duration(s as f64)),
            f["retained_bytes"]
                .as_u64()
                .map_or("?".into(), |b| human_bytes(b as f64)),
        ));
        if let Some(e) = f["error"].as_str() {
            if f["state"] == "halted" {
                out.push_str(&format!(
                    "  FOLLOW HALTED (start a follower again once this is dealt with): {e}\n"
                ));
            } else {
                out.push_str(&format!("  FOLLOW FAILED: {e}\n"));
            }
        }
        if let Some(w) = f["warning"].as_str() {
            out.push_str(&format!("  WARNING: {w}\n"));
        }
        out.push_str(&format!(
            "  when the migration is over, drop the slot: {}\n",
            f["drop"].as_str().unwrap_or("?")
        ));
    }
    out.push_str(&format!(
        "{}: {} total, {} done, {} leased, {} waiting, {} FAILED\n",
        w.items,
        i("total"),
        i("done"),
        i("leased"),
        i("waiting"),
        i("failed")
    ));
    let docs = n("docs_done").unwrap_or(0);
    let (refused, skipped) = (
        n("docs_refused").unwrap_or(0),
        n("docs_skipped").unwrap_or(0),
    );
    let filtered = n("docs_filtered").unwrap_or(0);
    let accounted = docs + refused + skipped + filtered;
    let is_delta = v.get("delta").is_some_and(|d| !d.is_null());
    match n("live_docs") {
        Some(planned) if is_delta => out.push_str(&format!(
            "{unit}: {docs} delivered, {refused} refused, {skipped} skipped: {accounted} operations of at most {planned}\n"
        )),
        Some(live) if live > 0 => out.push_str(&format!(
            "{unit}: {docs} of {live} delivered ({:.1} %), {refused} refused, {skipped} skipped ({accounted} of {live} accounted for)\n",
            100.0 * docs as f64 / live as f64
        )),
        _ => out.push_str(&format!(
            "{unit}: {docs} delivered, {refused} refused, {skipped} skipped\n"
        )),
    }
    if let Some(d) = v.get("delta").filter(|d| !d.is_null()) {
        let t = &d["totals"];
        let g = |k: &str| t.get(k).and_then(Value::as_u64).unwrap_or(0);
        out.push_str(&format!(
            "delta since snapshot {}: operations to send: {} documents to index and at most {} to delete (an updated document is re-indexed, not deleted)\n",
            d["since"].as_str().unwrap_or("?"),
            g("index"),
            g("delete_at_most")
        ));
        out.push_str(&format!(
            "  really changed: {} documents new or updated{}{}; {} unchanged and not sent ({} of them found in merged segments by _seq_no)\n",
            g("index") - g("unproven").min(g("index")),
            d["deleted"]
                .as_u64()
                .map(|n| format!(", {n} deleted"))
                .unwrap_or_default(),
            if g("unproven") > 0 {
                format!(
                    ", plus {} sent again from merged segments without _seq_no (unchanged or not)",
                    g("unproven")
                )
            } else {
                String::new()
            },
            g("unchanged"),
            g("matched")
        ));
        for (key, what) in [
            ("created_indices", "created since (sent whole)"),
            (
                "removed_indices",
                "deleted since (see --delete-removed-indices)",
            ),
        ] {
            let names: Vec<&str> = d[key]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if !names.is_empty() {
                out.push_str(&format!("  indices {what}: {}\n", names.join(", ")));
            }
        }
    }
    if filtered > 0 {
        out.push_str(&format!(
            "filtered by the transform: {filtered} {unit} (not failures):\n"
        ));
        for (reason, c) in v["filtered_by_reason"].as_object().into_iter().flatten() {
            out.push_str(&format!("  {reason}: {c}\n"));
        }
    }
    if refused + skipped > 0 {
        out.push_str(&format!(
            "NOT DELIVERED: {} {unit} (in the workers' failure logs):\n",
            refused + skipped
        ));
        for (reason, c) in v["undelivered_by_reason"].as_object().into_iter().flatten() {
            out.push_str(&format!("  {reason}: {c}\n"));
        }
    }
    if let Some(d) = n("possible_duplicates").filter(|d| *d > 0) {
        out.push_str(&format!("{}\n", possible_duplicates_line(d)));
    }
    if let Some(p) = v["sink_pushback"].as_object().filter(|p| !p.is_empty()) {
        let parts: Vec<String> = p.iter().map(|(k, c)| format!("{k} {c}")).collect();
        out.push_str(&format!("target pushback: {}\n", parts.join(", ")));
    }
    out.push_str(&format!(
        "bytes: {} sent{}\n",
        human_bytes(n("bytes_done").unwrap_or(0) as f64),
        n("snapshot_bytes")
            .map(|b| format!(" ({} {})", w.holds, human_bytes(b as f64)))
            .unwrap_or_default()
    ));
    if let Some(r) = v["docs_per_sec"].as_f64() {
        out.push_str(&format!(
            "rate: {:.0} {}/s, {}/s",
            r,
            if unit == "rows" { "rows" } else { "docs" },
            human_bytes(v["bytes_per_sec"].as_f64().unwrap_or(0.0))
        ));
        match v["eta_seconds"].as_f64() {
            Some(eta) => out.push_str(&format!(", ETA {}\n", human_duration(eta))),
            None => out.push('\n'),
        }
    }
    if let Some(f) = v["failed_documents_by_type"]
        .as_object()
        .filter(|f| !f.is_empty())
    {
        out.push_str(&format!("failed {unit} by type:\n"));
        for (t, c) in f {
            out.push_str(&format!("  {t}: {c}\n"));
        }
    }
    for f in v["failed_items"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "FAILED {} {}: {}\n",
            w.item,
            f["id"].as_str().unwrap_or("?"),
            f["last_error"].as_str().unwrap_or("")
        ));
    }
    out.push_str(&format!(
        "{:<40} {:>11} {:>12} {:>12} {:>8} {:>8}\n",
        w.group,
        if unit == "rows" {
            "slots done"
        } else {
            "items done"
        },
        if unit == "rows" {
            "rows done"
        } else {
            "docs done"
        },
        w.total,
        "refused",
        "skipped"
    ));
    for (name, p) in v["per_index"].as_object().into_iter().flatten() {
        out.push_str(&format!(
            "{:<40} {:>5}/{:<5} {:>12} {:>12} {:>8} {:>8}\n",
            name,
            p["items"]["done"].as_u64().unwrap_or(0),
            p["items"]["total"].as_u64().unwrap_or(0),
            p["docs_done"].as_u64().unwrap_or(0),
            p["live_docs"]
                .as_u64()
                .map_or("?".to_string(), |l| l.to_string()),
            p["docs_refused"].as_u64().unwrap_or(0),
            p["docs_skipped"].as_u64().unwrap_or(0)
        ));
    }
    out
}

/// What `rfs status` and the end of a run say of documents sent again to a target that
/// writes without ids.
pub(crate) fn possible_duplicates_line(n: u64) -> String {
    format!(
        "possible duplicates (id-less target, sent again after a takeover or an unanswered request): {n} — rfs verify --server-generated-ids counts them exactly"
    )
}

/// "documents" → "document", "work items" → "work item", "rows" → "row".
fn singular(plural: &str) -> &str {
    plural.strip_suffix('s').unwrap_or(plural)
}

fn human_bytes(b: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", units[u])
}

fn human_duration(secs: f64) -> String {
    let s = secs.round() as u64;
    format!("{}h{:02}m{:02}s", s / 3600, (s / 60) % 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finished(kind: &str) -> Value {
        json!({
            "migration": {"kind": kind, "source": "x"},
            "finished": true,
            "control": "run",
            "items": {"total": 4, "done": 3, "leased": 0, "waiting": 0, "failed": 1},
            "docs_done": 90, "docs_refused": 0, "docs_skipped": 0, "docs_filtered": 0,
            "live_docs": 100, "bytes_done": 2048, "snapshot_bytes": 4096,
            "failed_items": [{"id": "events__3", "last_error": "gone"}],
            "per_index": {"events": {"items": {"done": 3, "total": 4}, "docs_done": 90,
                "live_docs": 100, "docs_refused": 0, "docs_skipped": 0}},
        })
    }

    /// The text of a finished migration of `kind`, holding every one of `parts`.
    fn text_holding(kind: &str, parts: &[&str]) -> String {
        let text = render_text(&finished(kind));
        for part in parts {
            assert!(text.contains(part), "{part:?} in:\n{text}");
        }
        text
    }

    #[test]
    fn a_table_is_spoken_of_in_rows_and_slots() {
        let text = text_holding(
            "table",
            &[
                "state: FINISHED WITH 1 FAILED SLOTS",
                "slots: 4 total, 3 done, 0 leased, 0 waiting, 1 FAILED",
                "rows: 90 of 100 delivered (90.0 %)",
                "(the table holds about 4.0 KiB)",
                "FAILED slot events__3: gone",
            ],
        );
        assert!(text.lines().any(|l| l.starts_with("table ")
            && l.contains("slots done")
            && l.contains("rows done")
            && l.contains("rows (est.)")));
        for word in ["document", "snapshot", "docs", "item"] {
            assert!(!text.contains(word), "{word:?} in:\n{text}");
        }
    }

    #[test]
    fn possible_duplicates_are_said_only_when_there_are_some() {
        let mut v = finished("snapshot");
        assert!(!render_text(&v).contains("possible duplicates"));
        v["possible_duplicates"] = json!(0);
        assert!(!render_text(&v).contains("possible duplicates"));
        v["possible_duplicates"] = json!(37);
        text_of(&v, &["possible duplicates (id-less target, sent again after a takeover or an unanswered request): 37 — rfs verify --server-generated-ids counts them exactly"]);
    }

    fn text_of(v: &Value, parts: &[&str]) {
        let text = render_text(v);
        for part in parts {
            assert!(text.contains(part), "{part:?} in:\n{text}");
        }
    }

    #[test]
    fn a_snapshot_is_spoken_of_in_documents_and_items() {
        let text = text_holding(
            "snapshot",
            &[
                "state: FINISHED WITH 1 FAILED WORK ITEMS",
                "items: 4 total",
                "documents: 90 of 100 delivered",
                "(the snapshot holds 4.0 KiB)",
                "FAILED item events__3: gone",
            ],
        );
        assert!(!text.contains("rows"), "{text}");
        text_holding("cluster", &["(the source holds 4.0 KiB)", "source docs"]);
    }
}
