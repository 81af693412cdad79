//! The conformance suite: every case takes a store factory (a fresh namespace per call) and
//! checks one property of the store primitives or of the protocol on that store.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use coordination::{
    open_existing_store, Acquired, Config, Control, Coordinator, CrashPoint, Error, HandOff,
    Identity, ItemFate, ItemSummary, KeeperStep, Lease, PhaseClaim, Position, Progress, Record,
    RecordKind, RecordState, Store, WorkItem,
};

pub type StoreFuture = Pin<Box<dyn Future<Output = Arc<dyn Store>> + Send>>;
/// Opens the backend under test in a namespace of its own.
pub type Factory = Arc<dyn Fn(String) -> StoreFuture + Send + Sync>;
/// The URL of the backend under test for a namespace (none for the in-process store).
pub type UrlOf = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// Short durations for tests.
pub fn config(lease_ms: u64) -> Config {
    Config {
        initial_lease: Duration::from_millis(lease_ms),
        renew_every: Duration::ZERO,
        max_lease: Duration::from_secs(60),
        max_attempts: 4,
        max_clock_skew: Duration::from_secs(5),
        phase_lease: Duration::from_millis(lease_ms),
        keeper_lease: Duration::from_millis(lease_ms),
        poll_interval: Duration::from_millis(20),
        local_clock_offset_ms: 0,
    }
}

pub async fn run_all(backend: &str, f: &Factory, url_of: Option<UrlOf>) {
    macro_rules! case {
        ($name:ident) => {{
            let t = std::time::Instant::now();
            $name(f, &format!("{}_{}", stringify!($name), std::process::id())).await;
            eprintln!("{backend}: {} ok ({:?})", stringify!($name), t.elapsed());
        }};
    }
    case!(atomic_create);
    case!(compare_and_set);
    case!(candidate_query);
    case!(setup_is_idempotent);
    case!(one_lease_at_a_time);
    case!(expiry_and_takeover);
    case!(expired_before_fresh);
    case!(release_frees_at_once);
    case!(heartbeat_renewal);
    case!(heartbeat_lapse_and_takeover);
    case!(fleet_rate_windows);
    case!(exponent_growth);
    case!(failed_after_max_attempts);
    case!(failed_after_expired_leases);
    case!(clock_skew_is_rejected);
    case!(checkpoint_survives_crash);
    case!(successor_protocol_with_crashes);
    case!(split_ranges);
    case!(control_record);
    case!(phases);
    case!(keeper_takeover);
    case!(status_counts);
    case!(status_aggregates_match_the_items);
    case!(identity_record);
    if let Some(url_of) = url_of {
        let ns = format!("existing_only_{}", std::process::id());
        existing_only(f, &url_of, &ns).await;
        eprintln!("{backend}: existing_only ok");
    }
}

fn identity(pairs: &[(&str, &str)]) -> Identity {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The first worker records the migration's identity; the same identity is accepted
/// again, another one is refused naming both; of first workers racing with different
/// identities exactly one wins and the store holds its identity.
async fn identity_record(f: &Factory, ns: &str) {
    let store = f(ns.into()).await;
    let a = Coordinator::new(store.clone(), config(1000));
    let b = Coordinator::new(store.clone(), config(1000));
    assert_eq!(a.identity().await.unwrap(), None);
    let first = identity(&[
        ("repository", "/r/a"),
        ("snapshot", "s1"),
        ("target", "http://t"),
    ]);
    a.claim_identity(&first).await.unwrap();
    b.claim_identity(&first).await.unwrap();
    a.claim_identity(&first).await.unwrap();
    assert_eq!(b.identity().await.unwrap(), Some(first.clone()));
    let other = identity(&[
        ("repository", "/r/b"),
        ("snapshot", "s1"),
        ("target", "http://t"),
    ]);
    match b.claim_identity(&other).await {
        Err(Error::OtherMigration { stored, ours }) => {
            assert!(stored.contains("repository=/r/a"), "{stored}");
            assert!(ours.contains("repository=/r/b"), "{ours}");
        }
        other => panic!("expected OtherMigration, got {other:?}"),
    }
    // A key more (a delta's `since`, a name) is another migration too.
    let mut more = first.clone();
    more.insert("since".into(), "s0".into());
    assert!(matches!(
        a.claim_identity(&more).await,
        Err(Error::OtherMigration { .. })
    ));
    assert_eq!(a.status().await.unwrap().identity, Some(first));

    // Racing first workers on a fresh namespace.
    let store = f(format!("{ns}_race")).await;
    let claims = (0..6).map(|i| {
        let c = Coordinator::new(store.clone(), config(1000));
        async move {
            let id = identity(&[("migration", &format!("m{i}"))]);
            (id.clone(), c.claim_identity(&id).await)
        }
    });
    let results = futures_join_all(claims).await;
    let winners: Vec<&Identity> = results
        .iter()
        .filter(|(_, r)| r.is_ok())
        .map(|(id, _)| id)
        .collect();
    assert_eq!(winners.len(), 1, "{results:?}");
    let stored = Coordinator::new(store.clone(), config(1000))
        .identity()
        .await
        .unwrap();
    assert_eq!(stored.as_ref(), Some(winners[0]));
    for (_, r) in &results {
        if let Err(e) = r {
            assert!(matches!(e, Error::OtherMigration { .. }), "{e}");
            assert!(!e.is_transient());
        }
    }
}

/// Runs the futures at once and returns their outputs in order.
async fn futures_join_all<F: Future + Send + 'static>(
    futs: impl Iterator<Item = F>,
) -> Vec<F::Output>
where
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futs.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.expect("task"));
    }
    out
}

/// Opening for reading only: a namespace that does not exist is refused at once (not a
/// transient error to retry) and nothing is created; one that a worker created opens.
async fn existing_only(f: &Factory, url_of: &UrlOf, ns: &str) {
    let absent = url_of(&format!("{ns}_absent"));
    for _ in 0..2 {
        let t = std::time::Instant::now();
        match open_existing_store(&absent).await {
            Err(e @ Error::Refused { .. }) => {
                assert!(!e.is_transient());
                assert!(e.to_string().contains("nothing was created"), "{e}");
            }
            Err(e) => panic!("{absent}: expected a refusal, got {e}"),
            Ok(_) => panic!("{absent}: opened a store that does not exist"),
        }
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    }
    let store = f(format!("{ns}_present")).await;
    let c = Coordinator::new(store, config(1000));
    c.claim_identity(&identity(&[("migration", "present")]))
        .await
        .unwrap();
    let existing = open_existing_store(&url_of(&format!("{ns}_present")))
        .await
        .unwrap_or_else(|e| panic!("opening an existing store: {e}"));
    let seen = Coordinator::new(existing, config(1000))
        .identity()
        .await
        .unwrap();
    assert_eq!(seen, Some(identity(&[("migration", "present")])));
}

/// A cursor: every document up to `last` acknowledged.
fn acked(last: u64) -> Option<Position> {
    Some(Position::Doc(last))
}

/// The first doc number after a cursor.
fn next_doc(c: &Option<Position>) -> u64 {
    c.as_ref().and_then(Position::doc).map_or(0, |d| d + 1)
}

async fn lease(c: &Coordinator) -> Lease {
    match c.acquire().await.expect("acquire") {
        Acquired::Lease(l) => l,
        other => panic!("expected a lease, got {other:?}"),
    }
}

fn rec(id: &str) -> Record {
    let mut r = Record::item(&WorkItem::whole("i", 0), 0, "test");
    r.id = id.to_string();
    r
}

async fn atomic_create(f: &Factory, ns: &str) {
    let store = f(ns.into()).await;
    let mut tasks = Vec::new();
    for i in 0..16 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut r = rec("same");
            r.creator = format!("w{i}");
            store.create(&r).await.unwrap().map(|_| r.creator)
        }));
    }
    let mut winners = Vec::new();
    for t in tasks {
        if let Some(w) = t.await.unwrap() {
            winners.push(w);
        }
    }
    assert_eq!(winners.len(), 1, "exactly one create wins: {winners:?}");
    let (got, _) = store.get("same").await.unwrap().unwrap();
    assert_eq!(got.creator, winners[0], "the stored record is the winner's");
    assert!(store.get("absent").await.unwrap().is_none());
    let many: Vec<Record> = (0..30).map(|i| rec(&format!("m{i}"))).collect();
    assert_eq!(store.create_many(&many).await.unwrap(), 30);
    assert_eq!(
        store.create_many(&many).await.unwrap(),
        0,
        "second bulk create is a no-op"
    );
    let mut mixed = many[..5].to_vec();
    mixed.push(rec("m30"));
    assert_eq!(store.create_many(&mixed).await.unwrap(), 1);
    assert_eq!(store.list(RecordKind::Item).await.unwrap().len(), 32);
}

async fn compare_and_set(f: &Factory, ns: &str) {
    let store = f(ns.into()).await;
    let v1 = store.create(&rec("x")).await.unwrap().unwrap();
    let (mut r, v) = store.get("x").await.unwrap().unwrap();
    assert_eq!(v, v1);
    r.cursor = acked(5);
    let v2 = store
        .update(&r, v1)
        .await
        .unwrap()
        .expect("update at the current version");
    assert_ne!(v2, v1);
    r.cursor = acked(6);
    assert!(
        store.update(&r, v1).await.unwrap().is_none(),
        "stale version conflicts"
    );
    let (now, vnow) = store.get("x").await.unwrap().unwrap();
    assert_eq!(
        now.cursor,
        acked(5),
        "the conflicting write changed nothing"
    );
    assert_eq!(vnow, v2);
    // Many writers on one version: one wins.
    let mut tasks = Vec::new();
    for i in 0..16u64 {
        let store = store.clone();
        let mut r = now.clone();
        r.docs_done = i;
        tasks.push(tokio::spawn(async move {
            store.update(&r, v2).await.unwrap().map(|_| i)
        }));
    }
    let mut wins = Vec::new();
    for t in tasks {
        wins.extend(t.await.unwrap());
    }
    assert_eq!(wins.len(), 1, "one compare-and-set wins: {wins:?}");
    assert_eq!(store.get("x").await.unwrap().unwrap().0.docs_done, wins[0]);
    assert!(
        store.update(&rec("nope"), v1).await.unwrap().is_none(),
        "update of a missing record"
    );
}

async fn candidate_query(f: &Factory, ns: &str) {
    let store = f(ns.into()).await;
    let now = store.now().await.unwrap();
    let mut recs = Vec::new();
    for i in 0..40 {
        recs.push(rec(&format!("free{i:02}")));
    }
    let mut leased = rec("leased");
    leased.expiry = now + 60_000;
    let mut expired = rec("expired");
    expired.expiry = now - 1000;
    let mut done = rec("done");
    done.state = RecordState::Done;
    let mut failed = rec("failed");
    failed.state = RecordState::Failed;
    let mut phase = Record::new("phase:x", RecordKind::Phase, "t");
    phase.expiry = 0;
    recs.extend([leased, expired, done, failed, phase]);
    store.create_many(&recs).await.unwrap();
    let mut firsts = std::collections::HashSet::new();
    let mut seen = std::collections::HashSet::new();
    for _ in 0..20 {
        let c = store.candidates(now, 8).await.unwrap();
        assert_eq!(c.len(), 8);
        assert_eq!(c[0].0.id, "expired", "the expired lease comes first");
        for (r, _) in &c[1..] {
            assert!(r.id.starts_with("free"), "not a candidate: {}", r.id);
            seen.insert(r.id.clone());
        }
        firsts.insert(c[1].0.id.clone());
    }
    assert!(
        firsts.len() >= 3,
        "fresh candidates are randomised: {firsts:?}"
    );
    assert!(
        seen.len() >= 16,
        "candidates spread over the items: {}",
        seen.len()
    );
    let all = store.candidates(now, 100).await.unwrap();
    assert_eq!(all.len(), 41, "40 free items and the expired one");
    // Versions returned by the query are usable for compare-and-set.
    let (mut r, v) = all.into_iter().next().unwrap();
    r.expiry = now + 60_000;
    assert!(store.update(&r, v).await.unwrap().is_some());
    assert_eq!(store.earliest_open_expiry().await.unwrap(), Some(0));
}

async fn setup_is_idempotent(f: &Factory, ns: &str) {
    let store = f(ns.into()).await;
    let items: Vec<WorkItem> = (0..50).map(|s| WorkItem::whole("logs", s)).collect();
    let a = Coordinator::new(store.clone(), config(1000));
    let b = Coordinator::new(store.clone(), config(1000));
    assert!(!a.is_setup_done().await.unwrap());
    let (ra, rb) = tokio::join!(a.setup(&items), b.setup(&items));
    assert_eq!(ra.unwrap() + rb.unwrap(), 50, "each item created once");
    assert_eq!(a.setup(&items).await.unwrap(), 0);
    assert!(b.is_setup_done().await.unwrap());
    let listed = store.list(RecordKind::Item).await.unwrap();
    assert_eq!(listed.len(), 50);
    assert!(listed.iter().any(|r| r.id == "logs__7__0"));
    let bad = WorkItem {
        group: "x".into(),
        part: 0,
        after: acked(9),
        until: Some(Position::Doc(10)),
        extent: None,
    };
    assert!(matches!(a.setup(&[bad]).await, Err(Error::Invalid(_))));
}

async fn one_lease_at_a_time(f: &Factory, ns: &str) {
    let store = f(ns.into()).await;
    let c = Coordinator::new(store, config(5000));
    c.setup(&[WorkItem::whole("a", 0), WorkItem::whole("a", 1)])
        .await
        .unwrap();
    let l = lease(&c).await;
    assert!(matches!(c.acquire().await, Err(Error::Invalid(_))));
    l.release().await.unwrap();
    let l = lease(&c).await;
    l.complete(&Progress::default()).await.unwrap();
}

async fn expiry_and_takeover(f: &Factory, ns: &str) {
    let store = f(ns.into()).await;
    let a = Coordinator::new(store.clone(), config(1000));
    let b = Coordinator::new(store.clone(), config(1000));
    a.setup(&[WorkItem::whole("a", 0)]).await.unwrap();
    let mut la = lease(&a).await;
    assert_eq!(la.duration(), Duration::from_millis(1000));
    let next = match b.acquire().await.unwrap() {
        Acquired::AllLeasedElsewhere { next_expiry, wait } => {
            assert!(wait <= Duration::from_millis(1000));
            next_expiry
        }
        other => panic!("expected AllLeasedElsewhere, got {other:?}"),
    };
    assert_eq!(next, la.expires_at_ms());
    la.checkpoint(&Progress {
        cursor: acked(9),
        docs: 10,
        bytes: 100,
        sent_ahead: 20,
        ..Progress::default()
    })
    .await
    .unwrap();
    // Wait for the store clock to pass the expiry.
    while store.now().await.unwrap() <= la.expires_at_ms() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let lb = lease(&b).await;
    assert_eq!(lb.id(), la.id());
    assert_eq!(
        *lb.cursor(),
        acked(9),
        "takeover resumes after the checkpoint"
    );
    assert_eq!(lb.attempts(), 2);
    assert_eq!(
        lb.progress().sent_ahead,
        20,
        "what the dead holder sent beyond its checkpoint is the next holder's to count"
    );
    let err = la
        .checkpoint(&Progress {
            cursor: acked(19),
            docs: 20,
            bytes: 200,
            ..Progress::default()
        })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::LeaseLost { .. }), "{err}");
    assert!(matches!(
        la.complete(&Progress::default()).await,
        Err(Error::LeaseLost { .. })
    ));
    let (r, _) = store.get(lb.id()).await.unwrap().unwrap();
    assert_eq!(r.holder.as_deref(), Some(b.worker_id().as_str()));
    assert!(r.last_error.unwrap().contains("expired"));
    let id = lb.id().to_string();
    lb.complete(&Progress {
        cursor: acked(99),
        docs: 100,
        bytes: 1,
        sent_ahead: 5,
        ..Progress::default()
    })
    .await
    .unwrap();
    let (r, _) = store.get(&id).await.unwrap().unwrap();
    assert_eq!(
        r.sent_ahead, 0,
        "a complete item has nothing beyond its cursor"
    );
    assert!(matches!(b.acquire().await.unwrap(), Acquired::NoWorkLeft));
}

/// An item whose lease expired (its holder died) is granted before any never-leased one,
/// however many fresh items wait: the store lists expired leases first, earliest first,
/// and the protocol tries them first.
async fn expired_before_fresh(f: &Factory, ns: &str) {
    let store = f(ns.into()).await;
    let cfg = config(1500);
    let items: Vec<WorkItem> = (0..60).map(|i| WorkItem::whole("x", i)).collect();
    Coordinator::new(store.clone(), cfg.clone())
        .setup(&items)
        .await
        .unwrap();
    // Two workers take an item each and die (the leases are dropped unreleased), the
    // second a little later, so its lease ends later.
    let mut dead = Vec::new();
    for _ in 0..2 {
        let c = Coordinator::new(store.clone(), cfg.clone());
        let l = lease(&c).await;
        dead.push((l.id().to_string(), l.expires_at_ms()));
        drop(l);
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    assert!(dead[0].1 < dead[1].1);
    while store.now().await.unwrap() <= dead[1].1 {
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    // The store's answer: both expired items first, the earlier expiry first (the
    // cluster's search sees the leases after its refresh interval: ask for a while).
    let want = [dead[0].0.as_str(), dead[1].0.as_str()];
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let c = loop {
        let now = store.now().await.unwrap();
        let c = store.candidates(now, 8).await.unwrap();
        let firsts: Vec<&str> = c.iter().take(2).map(|(r, _)| r.id.as_str()).collect();
        if firsts == want || std::time::Instant::now() > deadline {
            assert_eq!(firsts, want);
            break c;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(c.len(), 8);
    assert!(c[2..].iter().all(|(r, _)| r.expiry == 0 && r.attempts == 0));
    // The protocol: the next two acquisitions take exactly the dead workers' items.
    let mut retaken = Vec::new();
    let mut held = Vec::new();
    for _ in 0..2 {
        let c = Coordinator::new(store.clone(), cfg.clone());
        let l = lease(&c).await;
        assert_eq!(l.attempts(), 2, "{} was not a dead worker's item", l.id());
        retaken.push(l.id().to_string());
        held.push(l);
    }
    retaken.sort();
    let mut want: Vec<String> = dead.iter().map(|(id, _)| id.clone()).collect();
    want.sort();
    assert_eq!(retaken, want);
    // With no expired lease left, a fresh item.
    let c = Coordinator::new(store.clone(), cfg.clone());
    assert_eq!(lease(&c).await.attempts(), 1);
}

/// Heartbeat leases: a 60 s work period, a 600 ms lease in the store renewed every 200 ms.
fn heartbeat_config() -> Config {
    let mut cfg = config(60_000);
    cfg.renew_every = Duration::from_millis(200);
    cfg
}

/// A renewed lease outlives its store lease many times over, nobody else gets the item,
/// checkpoints and renewals interleave, and renewals neither count as attempts nor grow
/// the exponent.
async fn heartbeat_renewal(f: &Factory, ns: &str) {
    let store = f(ns.into()).await;
    let a = Coordinator::new(store.clone(), heartbeat_config());
    let b = Coordinator::new(store.clone(), heartbeat_config());
    a.setup(&[WorkItem::whole("a", 0)]).await.unwrap();
    let mut la = lease(&a).await;
    assert_eq!(la.duration(), Duration::from_secs(60), "the work period");
    assert_eq!(la.store_lease(), Duration::from_millis(600));
    assert_eq!(la.renew_every(), Some(Duration::from_millis(200)));
    let first_expiry = store.get(la.id()).await.unwrap().unwrap().0.expiry;
    let now = store.now().await.unwrap();
    assert!(
        first_expiry > now && first_expiry <= now + 700,
        "the store holds the short lease: {first_expiry} vs now {now}"
    );
    let start = std::time::Instant::now();
    let mut docs = 0;
    while start.elapsed() < Duration::from_millis(2000) {
        tokio::time::sleep(Duration::from_millis(150)).await;
        la.renew().await.unwrap();
        docs += 10;
        la.checkpoint(&Progress {
            cursor: acked(docs - 1),
            docs,
            ..Progress::default()
        })
        .await
        .unwrap();
        assert!(
            matches!(
                b.acquire().await.unwrap(),
                Acquired::AllLeasedElsewhere { .. }
            ),
            "a renewed lease is not taken"
        );
        assert!(la.deadline() > std::time::Instant::now());
    }
    assert!(la.renewals() >= 10, "{} renewals", la.renewals());
    let (r, _) = store.get(la.id()).await.unwrap().unwrap();
    assert_eq!(r.attempts, 1, "renewals are not attempts");
    assert_eq!(r.exponent, 1, "renewals do not grow the exponent");
    assert!(r.expiry > first_expiry + 1000, "the expiry moved on");
    assert_eq!(r.holder.as_deref(), Some(a.worker_id().as_str()));
    la.complete(&Progress {
        cursor: acked(docs - 1),
        docs,
        ..Progress::default()
    })
    .await
    .unwrap();
    assert!(matches!(b.acquire().await.unwrap(), Acquired::NoWorkLeft));
}

/// A holder that stops renewing (a SIGKILL) loses the item within one store lease; the
/// next holder's store lease is doubled (the attempt failed), its work period follows the
/// exponent as before, and the old holder's renewals and writes are refused.
async fn heartbeat_lapse_and_takeover(f: &Factory, ns: &str) {
    let store = f(ns.into()).await;
    let a = Coordinator::new(store.clone(), heartbeat_config());
    let b = Coordinator::new(store.clone(), heartbeat_config());
    a.setup(&[WorkItem::whole("a", 0)]).await.unwrap();
    let mut la = lease(&a).await;
    la.renew().await.unwrap();
    let last_renewal = std::time::Instant::now();
    let lb = loop {
        match b.acquire().await.unwrap() {
            Acquired::Lease(l) => break l,
            Acquired::AllLeasedElsewhere { .. } => {
                assert!(
                    last_renewal.elapsed() < Duration::from_millis(1200),
                    "not taken again within 2× the store lease"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Acquired::NoWorkLeft => panic!("no work left"),
        }
    };
    assert!(
        last_renewal.elapsed() >= Duration::from_millis(550),
        "taken before the lease ended: {:?}",
        last_renewal.elapsed()
    );
    assert_eq!(lb.id(), la.id());
    assert_eq!(lb.attempts(), 2);
    assert_eq!(
        lb.store_lease(),
        Duration::from_millis(1200),
        "one failed attempt"
    );
    assert_eq!(
        lb.duration(),
        Duration::from_secs(60),
        "capped at max_lease"
    );
    assert!(matches!(la.renew().await, Err(Error::LeaseLost { .. })));
    assert!(matches!(
        la.checkpoint(&Progress {
            cursor: acked(5),
            docs: 6,
            ..Progress::default()
        })
        .await,
        Err(Error::LeaseLost { .. })
    ));
    let (r, _) = store.get(lb.id()).await.unwrap().unwrap();
    assert_eq!(r.holder.as_deref(), Some(b.worker_id().as_str()));
    assert!(r.last_error.unwrap().contains("expired"));
    lb.complete(&Progress::default()).await.unwrap();
}

/// Eight workers take shares of one fleet-wide limit at once: no window hands out more
/// than its budget, and the budget is used.
async fn fleet_rate_windows(f: &Factory, ns: &str) {
    let store = f(ns.into()).await;
    let until = std::time::Instant::now() + Duration::from_millis(2500);
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let c = Coordinator::new(store.clone(), config(5000));
        tasks.push(tokio::spawn(async move {
            let mut got = Vec::new();
            while std::time::Instant::now() < until {
                let g = c.take_fleet_units("docs", 50.0, 7).await.unwrap();
                if g.units > 0 {
                    got.push((g.window_end_ms, g.units));
                } else {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            got
        }));
    }
    let mut per_window = std::collections::BTreeMap::<i64, u64>::new();
    for t in tasks {
        for (w, n) in t.await.unwrap() {
            *per_window.entry(w).or_default() += n;
        }
    }
    assert!(per_window.len() >= 2, "{per_window:?}");
    for (w, n) in &per_window {
        assert!(*n <= 50, "window ending {w} handed out {n} of 50");
    }
    assert!(
        per_window.values().any(|n| *n >= 43),
        "some window's budget is used up: {per_window:?}"
    );
    let c = Coordinator::new(store.clone(), config(5000));
    assert!(matches!(
        c.take_fleet_units("docs", 0.0, 1).await,
        Err(Error::Invalid(_))
    ));
    // A batch larger than one window's budget is paid over several windows.
    let t = std::time::Instant::now();
    c.wait_fleet_units("bytes", 100.0, 250).await.unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(900),
        "{:?}",
        t.elapsed()
    );
    // A window record nobody can read is an error naming it, never a fresh budget.
    let (mut rec, ver) = store.get("rate:docs").await.unwrap().unwrap();
    rec.data = serde_json::json!("not a window");
    store.update(&rec, ver).await.unwrap().unwrap();
    match c.take_fleet_units("docs", 50.0, 1).await {
        Err(Error::Corrupt { id, .. }) => assert_eq!(id, "rate:docs"),
        other => panic!("an unreadable window record gave {other:?}"),
    }
}

async fn release_frees_at_once(f: &Factory, ns: &str) {
    let store = f(ns.into()).await;
    let a = Coordinator::new(store.clone(), config(60_000));
    let b = Coordinator::new(store.clone(), config(60_000));
    a.setup(&[WorkItem::whole("a", 0)]).await.unwrap();
    let la = lease(&a).await;
    assert!(matches!(
        b.acquire().await.unwrap(),
        Acquired::AllLeasedElsewhere { .. }
    ));
    la.release().await.unwrap();
    let lb = lease(&b).await;
    assert_eq!(lb.exponent(), 1, "released leases still count as attempts");
    lb.complete(&Progress::default()).await.unwrap();
}

async fn exponent_growth(f: &Factory, ns: &str) {
    let store = f(ns.into()).await;
    let mut cfg = config(100);
    cfg.max_attempts = 10;
    cfg.max_lease = Duration::from_millis(800);
    let c = Coordinator::new(store.clone(), cfg);
    c.setup(&[WorkItem::whole("a", 0)]).await.unwrap();
    let mut durations = Vec::new();
    for k in 0..6u32 {
        let l = lease(&c).await;
        assert_eq!(l.exponent(), k);
        assert_eq!(l.attempts(), k + 1);
        let (r, _) = store.get(l.id()).await.unwrap().unwrap();
        assert_eq!(
            r.exponent,
            k + 1,
            "the stored exponent rises on each acquisition"
        );
        assert!(l.early_trigger() < l.deadline());
        durations.push(l.duration().as_millis());
        l.release().await.unwrap();
    }
    assert_eq!(
        durations,
        vec![100, 200, 400, 800, 800, 800],
        "doubling, capped at max_lease"
    );
}

async fn failed_after_max_attempts(f: &Factory, ns: &str) {
    let store = f(ns.into()).await;
    let c = Coordinator::new(store.clone(), config(60_000));
    c.setup(&[WorkItem::whole("bad", 0), WorkItem::whole("good", 0)])
        .await
        .unwrap();
    let mut fates = Vec::new();
    loop {
        let l = match c.acquire().await.unwrap() {
            Acquired::Lease(l) => l,
            Acquired::NoWorkLeft => break,
            other => panic!("{other:?}"),
        };
        if l.item().group == "good" {
            l.complete(&Progress::default()).await.unwrap();
            continue;
        }
        fates.push(l.fail(&format!("boom {}", fates.len() + 1)).await.unwrap());
    }
    use ItemFate::*;
    assert_eq!(fates, vec![WillRetry, WillRetry, WillRetry, Failed]);
    let st = c.status().await.unwrap();
    assert_eq!(st.items.failed, 1);
    assert_eq!(st.items.done, 1);
    assert_eq!(st.failures.len(), 1);
    assert_eq!(st.failures[0].id, "bad__0__0");
    assert_eq!(st.failures[0].attempts, 4);
    assert!(
        st.failures[0].last_error.contains("boom 4"),
        "{}",
        st.failures[0].last_error
    );
}

async fn failed_after_expired_leases(f: &Factory, ns: &str) {
    let store = f(ns.into()).await;
    let mut cfg = config(50);
    cfg.max_attempts = 2;
    cfg.max_lease = Duration::from_millis(100);
    c_crash_until_failed(store, cfg).await;
}

async fn c_crash_until_failed(store: Arc<dyn Store>, cfg: Config) {
    let setup = Coordinator::new(store.clone(), cfg.clone());
    setup.setup(&[WorkItem::whole("crashy", 0)]).await.unwrap();
    let mut crashes = 0;
    loop {
        // Every attempt is a new process that dies holding the lease.
        let c = Coordinator::new(store.clone(), cfg.clone());
        match c.acquire().await.unwrap() {
            Acquired::Lease(l) => {
                crashes += 1;
                drop(l);
            }
            Acquired::AllLeasedElsewhere { wait, .. } => tokio::time::sleep(wait).await,
            Acquired::NoWorkLeft => break,
        }
    }
    assert_eq!(crashes, 2);
    let st = setup.status().await.unwrap();
    assert_eq!(st.items.failed, 1);
    assert!(
        st.failures[0].last_error.contains("expired"),
        "{:?}",
        st.failures
    );
}

async fn clock_skew_is_rejected(f: &Factory, ns: &str) {
    let store = f(ns.into()).await;
    let mut cfg = config(1000);
    cfg.local_clock_offset_ms = 60_000;
    let skewed = Coordinator::new(store.clone(), cfg.clone());
    let ok = Coordinator::new(store.clone(), config(1000));
    ok.setup(&[WorkItem::whole("a", 0)]).await.unwrap();
    let err = skewed.acquire().await.unwrap_err();
    match err {
        Error::ClockSkew { skew_ms, max_ms } => {
            assert!((skew_ms + 60_000).abs() < 5_000, "{skew_ms}");
            assert_eq!(max_ms, 5_000);
        }
        other => panic!("expected ClockSkew, got {other}"),
    }
    cfg.local_clock_offset_ms = -60_000;
    assert!(matches!(
        Coordinator::new(store.clone(), cfg)
            .try_claim_phase("p")
            .await,
        Err(Error::ClockSkew { .. })
    ));
    // The rejected attempt left the item untouched.
    let l = lease(&ok).await;
    assert_eq!(l.attempts(), 1);
}

async fn checkpoint_survives_crash(f: &Factory, ns: &str) {
    let store = f(ns.into()).await;
    let cfg = config(300);
    let a = Coordinator::new(store.clone(), cfg.clone());
    a.setup(&[WorkItem::whole("a", 0)]).await.unwrap();
    let mut l = lease(&a).await;
    let p = Progress {
        cursor: acked(4241),
        docs: 4000,
        bytes: 123_456,
        refused: 17,
        skipped: 3,
        reasons: [
            ("refused:mapper_parsing_exception".to_string(), 17),
            ("skipped:no_source".to_string(), 3),
        ]
        .into(),
        covered: 4020,
        sent_ahead: 13,
    };
    l.checkpoint(&p).await.unwrap();
    drop(l); // kill -9
    let b = Coordinator::new(store, cfg);
    let l = loop {
        match b.acquire().await.unwrap() {
            Acquired::Lease(l) => break l,
            Acquired::AllLeasedElsewhere { wait, .. } => tokio::time::sleep(wait).await,
            Acquired::NoWorkLeft => panic!("work lost"),
        }
    };
    let got = l.progress();
    assert_eq!(got, p, "the checkpoint survived the crash");
    l.complete(&got).await.unwrap();
    let st = b.status().await.unwrap();
    assert_eq!(
        (st.docs_done, st.docs_refused, st.docs_skipped),
        (4000, 17, 3)
    );
    assert_eq!(st.per_group["a"].docs_refused, 17);
    assert_eq!(st.per_group["a"].docs_skipped, 3);
    assert_eq!(st.reasons["refused:mapper_parsing_exception"], 17);
    assert_eq!(st.reasons["skipped:no_source"], 3);
    // What the item covered survived too: the end is marked with counts that add up.
    let KeeperStep::Finished(st) = b.keeper_step().await.unwrap() else {
        panic!("the only item is complete: the keeper marks the end")
    };
    assert_eq!(st.accounting, None, "{:?}", st.accounting);
}

/// Drive every open item of `index` to the end (`total` docs per shard), 300 docs per lease,
/// handing off in between; waits out other holders' leases.
async fn finish_all(store: &Arc<dyn Store>, cfg: &Config, total: u64) {
    loop {
        let c = Coordinator::new(store.clone(), cfg.clone());
        match c.acquire().await.unwrap() {
            Acquired::Lease(l) => {
                let end = l
                    .item()
                    .until
                    .as_ref()
                    .and_then(Position::doc)
                    .unwrap_or(total);
                let from = next_doc(&l.item().after);
                let next = (next_doc(l.cursor()) + 300).min(end);
                let p = Progress {
                    cursor: acked(next - 1),
                    docs: next - from,
                    bytes: 0,
                    ..Progress::default()
                };
                if next == end {
                    l.complete(&p).await.unwrap();
                } else {
                    let h = l.hand_off(&p, 0.05).await.unwrap();
                    assert!(matches!(h, HandOff::Successor(_)), "{h:?}");
                }
            }
            Acquired::AllLeasedElsewhere { wait, .. } => tokio::time::sleep(wait).await,
            Acquired::NoWorkLeft => return,
        }
    }
}

/// The items of one shard range form one chain of completed items from `first` to `last`.
async fn assert_one_chain(store: &Arc<dyn Store>, index: &str, first: u64, last: u64) {
    let items: Vec<Record> = store
        .list(RecordKind::Item)
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.group == index && next_doc(&r.after) >= first && next_doc(&r.after) < last)
        .collect();
    let by_id: std::collections::HashMap<&str, &Record> =
        items.iter().map(|r| (r.id.as_str(), r)).collect();
    let root = first.checked_sub(1).map(Position::Doc);
    let mut cur = *by_id
        .get(coordination::item_id(index, 0, &root).as_str())
        .expect("root item");
    let mut visited = 1;
    loop {
        assert_eq!(cur.state, RecordState::Done, "{} not done: {cur:?}", cur.id);
        match cur.successors.as_slice() {
            [] => {
                assert_eq!(
                    cur.cursor,
                    acked(last - 1),
                    "the chain ends at the last document"
                );
                break;
            }
            [s] => {
                let next = by_id
                    .get(s.as_str())
                    .unwrap_or_else(|| panic!("missing successor {s}"));
                assert_eq!(
                    next.after, cur.cursor,
                    "successor starts after the parent's cursor"
                );
                assert!(next_doc(&next.after) > next_doc(&cur.after));
                cur = next;
                visited += 1;
            }
            many => panic!("more than one successor: {many:?}"),
        }
    }
    assert_eq!(visited, items.len(), "no orphan items: {items:#?}");
}

async fn successor_protocol_with_crashes(f: &Factory, ns: &str) {
    let points = [
        None,
        Some(CrashPoint::BeforeRecordSuccessor),
        Some(CrashPoint::AfterRecordSuccessor),
        Some(CrashPoint::AfterCreateSuccessor),
        Some(CrashPoint::AfterCompleteParent),
    ];
    for (i, point) in points.into_iter().enumerate() {
        let store = f(format!("{ns}_{i}")).await;
        let cfg = config(300);
        let a = Coordinator::new(store.clone(), cfg.clone());
        a.setup(&[WorkItem::whole("idx", 0)]).await.unwrap();
        let mut l = lease(&a).await;
        l.checkpoint(&Progress {
            cursor: acked(99),
            docs: 100,
            bytes: 0,
            ..Progress::default()
        })
        .await
        .unwrap();
        let p = Progress {
            cursor: acked(399),
            docs: 400,
            bytes: 0,
            ..Progress::default()
        };
        let h = match point {
            None => l.hand_off(&p, 0.2).await.unwrap(),
            Some(pt) => l.hand_off_crashing(&p, 0.2, pt).await.unwrap(),
        };
        assert_eq!(h, HandOff::Successor("idx__0__400".into()));
        if point.is_none() {
            // Setup took 20 % of the lease: the successor's lease grows (exponent 0 → 1).
            let (s, _) = store.get("idx__0__400").await.unwrap().unwrap();
            assert_eq!(s.exponent, 1);
            assert_eq!(s.after, acked(399));
            let (parent, _) = store.get("idx__0__0").await.unwrap().unwrap();
            assert_eq!(parent.state, RecordState::Done);
            assert_eq!(parent.successors, vec!["idx__0__400".to_string()]);
        }
        if point == Some(CrashPoint::AfterRecordSuccessor) {
            assert!(store.get("idx__0__400").await.unwrap().is_none());
        }
        finish_all(&store, &cfg, 1000).await;
        assert_one_chain(&store, "idx", 0, 1000).await;
    }
    // Lease sizing in the other direction, and no-progress hand-offs.
    let store = f(format!("{ns}_sizing")).await;
    let mut cfg = config(60_000);
    cfg.max_attempts = 10;
    let c = Coordinator::new(store.clone(), cfg);
    c.setup(&[WorkItem::whole("s", 0)]).await.unwrap();
    let l = lease(&c).await;
    l.release().await.unwrap();
    let l = lease(&c).await; // exponent 1
    assert_eq!(
        l.hand_off(&Progress::default(), 0.01).await.unwrap(),
        HandOff::Released
    );
    let l = lease(&c).await; // exponent 2
    assert_eq!(l.exponent(), 2);
    let p = Progress {
        cursor: acked(9),
        docs: 10,
        bytes: 0,
        ..Progress::default()
    };
    assert_eq!(
        l.hand_off(&p, 0.01).await.unwrap(),
        HandOff::Successor("s__0__10".into())
    );
    let (s, _) = store.get("s__0__10").await.unwrap().unwrap();
    assert_eq!(s.exponent, 1, "quick setup shrinks the successor's lease");
}

async fn split_ranges(f: &Factory, ns: &str) {
    let store = f(ns.into()).await;
    let cfg = config(2000);
    let c = Coordinator::new(store.clone(), cfg.clone());
    let ranges = [(0, 500), (500, 1000)];
    let items: Vec<WorkItem> = ranges
        .iter()
        .map(|&(a, b): &(u64, u64)| WorkItem {
            group: "big".into(),
            part: 0,
            after: a.checked_sub(1).map(Position::Doc),
            until: Some(Position::Doc(b)),
            extent: None,
        })
        .collect();
    c.setup(&items).await.unwrap();
    let l = lease(&c).await;
    let to = l.item().until.as_ref().and_then(Position::doc).unwrap();
    // A cursor past the range is refused (and this worker then "crashes").
    assert!(matches!(
        l.hand_off(
            &Progress {
                cursor: acked(to),
                docs: 0,
                bytes: 0,
                ..Progress::default()
            },
            0.05
        )
        .await,
        Err(Error::Invalid(_))
    ));
    let l = match c.acquire().await {
        Err(Error::Invalid(_)) => panic!("lease slot not freed"),
        Ok(Acquired::Lease(l)) => l,
        other => panic!("{other:?}"),
    };
    // A hand-off at the range's end is a completion.
    let item = l.item();
    let (start, end) = (
        next_doc(&item.after),
        item.until.as_ref().and_then(Position::doc).unwrap(),
    );
    let h = l
        .hand_off(
            &Progress {
                cursor: acked(end - 1),
                docs: end - start,
                bytes: 0,
                ..Progress::default()
            },
            0.05,
        )
        .await
        .unwrap();
    assert_eq!(h, HandOff::Completed);
    finish_all(&store, &cfg, 1000).await;
    for (a, b) in ranges {
        assert_one_chain(&store, "big", a, b).await;
    }
}

async fn control_record(f: &Factory, ns: &str) {
    let store = f(ns.into()).await;
    let a = Coordinator::new(store.clone(), config(1000));
    let b = Coordinator::new(store.clone(), config(1000));
    assert_eq!(a.control().await.unwrap(), Control::Run);
    a.set_control(Control::Pause).await.unwrap();
    assert_eq!(b.control().await.unwrap(), Control::Pause);
    b.set_control(Control::Stop).await.unwrap();
    assert_eq!(a.control().await.unwrap(), Control::Stop);
    let (r1, r2) = tokio::join!(a.set_control(Control::Run), b.set_control(Control::Run));
    r1.unwrap();
    r2.unwrap();
    assert_eq!(a.control().await.unwrap(), Control::Run);
    assert_eq!("pause".parse::<Control>().unwrap(), Control::Pause);
    assert!("jump".parse::<Control>().is_err());
}

async fn phases(f: &Factory, ns: &str) {
    let store = f(ns.into()).await;
    let cfg = config(400);
    let a = Coordinator::new(store.clone(), cfg.clone());
    let b = Coordinator::new(store.clone(), cfg.clone());
    // One does it, the other waits for the result.
    assert_eq!(
        a.try_claim_phase("metadata").await.unwrap(),
        PhaseClaim::Claimed
    );
    assert_eq!(
        a.try_claim_phase("metadata").await.unwrap(),
        PhaseClaim::Claimed
    );
    assert!(matches!(
        b.try_claim_phase("metadata").await.unwrap(),
        PhaseClaim::Busy { .. }
    ));
    let waiter = {
        let b = b.clone();
        tokio::spawn(async move { b.wait_phase("metadata").await })
    };
    a.renew_phase("metadata").await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    a.complete_phase("metadata", serde_json::json!({"templates": 3}))
        .await
        .unwrap();
    let got = waiter.await.unwrap().unwrap();
    assert_eq!(got, PhaseClaim::Done(serde_json::json!({"templates": 3})));
    assert!(matches!(
        b.complete_phase("metadata", serde_json::Value::Null).await,
        Err(Error::LeaseLost { .. })
    ));
    // The holder dies: a waiter takes the phase over after the lease.
    assert_eq!(
        a.try_claim_phase("snapshot").await.unwrap(),
        PhaseClaim::Claimed
    );
    let c = Coordinator::new(store.clone(), cfg.clone());
    assert_eq!(c.wait_phase("snapshot").await.unwrap(), PhaseClaim::Claimed);
    assert!(matches!(
        a.complete_phase("snapshot", serde_json::Value::Null).await,
        Err(Error::LeaseLost { .. })
    ));
    c.complete_phase("snapshot", serde_json::Value::Null)
        .await
        .unwrap();
    // Failing phases end FAILED after max attempts.
    let mut claims = 0;
    let err = loop {
        match b.try_claim_phase("indices").await {
            Ok(PhaseClaim::Claimed) => {
                claims += 1;
                b.fail_phase("indices", &format!("no target {claims}"))
                    .await
                    .unwrap();
            }
            Ok(other) => panic!("{other:?}"),
            Err(e) => break e,
        }
    };
    assert_eq!(claims, 4);
    match err {
        Error::PhaseFailed { name, reason } => {
            assert_eq!(name, "indices");
            assert!(reason.contains("no target 4"), "{reason}");
        }
        other => panic!("{other}"),
    }
    let st = a.status().await.unwrap();
    let names: Vec<(&str, &str)> = st
        .phases
        .iter()
        .map(|p| (p.name.as_str(), p.state.as_str()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("indices", "failed"),
            ("metadata", "done"),
            ("snapshot", "done")
        ]
    );
}

async fn keeper_takeover(f: &Factory, ns: &str) {
    let store = f(ns.into()).await;
    let cfg = config(400);
    let a = Coordinator::new(store.clone(), cfg.clone());
    let b = Coordinator::new(store.clone(), cfg.clone());
    a.setup(&[WorkItem::whole("k", 0), WorkItem::whole("k", 1)])
        .await
        .unwrap();
    assert!(matches!(
        a.keeper_step().await.unwrap(),
        KeeperStep::Keeping(_)
    ));
    assert!(matches!(
        a.keeper_step().await.unwrap(),
        KeeperStep::Keeping(_)
    ));
    match b.keeper_step().await.unwrap() {
        KeeperStep::NotKeeper { holder, .. } => assert_eq!(holder, a.worker_id().as_str()),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        a.status().await.unwrap().keeper.unwrap().0,
        a.worker_id().as_str()
    );
    // `a` dies; after its lease `b` takes over.
    let took = loop {
        match b.keeper_step().await.unwrap() {
            KeeperStep::Keeping(st) => break st,
            KeeperStep::NotKeeper { .. } => tokio::time::sleep(Duration::from_millis(50)).await,
            KeeperStep::Finished(_) => panic!("not finished yet"),
        }
    };
    assert_eq!(took.items.waiting, 2);
    assert!(matches!(
        a.keeper_step().await.unwrap(),
        KeeperStep::NotKeeper { .. }
    ));
    for _ in 0..2 {
        let l = lease(&b).await;
        l.complete(&Progress {
            cursor: acked(4),
            docs: 5,
            bytes: 50,
            ..Progress::default()
        })
        .await
        .unwrap();
    }
    match b.keeper_step().await.unwrap() {
        KeeperStep::Finished(st) => {
            assert!(st.finished);
            assert_eq!(st.items.done, 2);
            assert_eq!(st.docs_done, 10);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        a.keeper_step().await.unwrap(),
        KeeperStep::Finished(_)
    ));
    assert!(a.status().await.unwrap().finished);
}

async fn status_counts(f: &Factory, ns: &str) {
    let store = f(ns.into()).await;
    let cfg = config(60_000);
    let c = Coordinator::new(store.clone(), cfg.clone());
    let d = Coordinator::new(store.clone(), cfg.clone());
    c.setup(&[
        WorkItem::whole("a", 0),
        WorkItem::whole("a", 1),
        WorkItem::whole("b", 0),
        WorkItem::whole("b", 1),
    ])
    .await
    .unwrap();
    let l = lease(&c).await;
    let first = l.item();
    l.complete(&Progress {
        cursor: acked(9),
        docs: 7,
        bytes: 700,
        ..Progress::default()
    })
    .await
    .unwrap();
    let _held = lease(&d).await;
    let st = c.status().await.unwrap();
    assert!(st.setup_done);
    assert!(!st.finished);
    assert_eq!(st.control, Control::Run);
    assert_eq!(st.items.total, 4);
    assert_eq!(
        (
            st.items.done,
            st.items.leased,
            st.items.waiting,
            st.items.failed
        ),
        (1, 1, 2, 0)
    );
    assert_eq!((st.docs_done, st.bytes_done), (7, 700));
    let ix = &st.per_group[&first.group];
    assert_eq!((ix.items.total, ix.items.done, ix.docs_done), (2, 1, 7));
    assert_eq!(st.per_group.len(), 2);
    assert_eq!(st.leases.len(), 1, "the held lease is listed");
    assert_eq!(st.leases[0].holder, d.worker_id().as_str());
    serde_json::to_string(&st).unwrap();
}

/// The store's item summary (GROUP BY on PostgreSQL, counters on Redis) equals a fold of
/// every item, through every kind of write: creation, leases held and expired, checkpoints,
/// refused documents by reason, completion, a release, FAILED, a successor hand-off.
async fn status_aggregates_match_the_items(f: &Factory, ns: &str) {
    let store = f(ns.into()).await;
    let mut cfg = config(2000);
    cfg.max_attempts = 1;
    let c = Coordinator::new(store.clone(), cfg.clone());
    let items: Vec<WorkItem> = (0..6)
        .map(|i| WorkItem::whole(if i % 2 == 0 { "even" } else { "odd|x" }, i))
        .collect();
    c.setup(&items).await.unwrap();
    let check = |what: &'static str| {
        let store = store.clone();
        async move {
            let now = store.now().await.unwrap();
            let agg = store.item_summary(now).await.unwrap();
            let fold = ItemSummary::fold(now, store.list(RecordKind::Item).await.unwrap());
            assert_eq!(agg.totals, fold.totals, "{what}");
            let ids = |s: &ItemSummary| {
                let mut v: Vec<String> = s.notable.iter().map(|r| r.id.clone()).collect();
                v.sort();
                v
            };
            assert_eq!(ids(&agg), ids(&fold), "{what}");
        }
    };
    check("fresh").await;
    // Completed with refused documents by reason.
    let l = lease(&c).await;
    let mut reasons = std::collections::BTreeMap::new();
    reasons.insert("refused:mapper_parsing_exception".to_string(), 2);
    l.complete(&Progress {
        cursor: acked(9),
        docs: 8,
        bytes: 800,
        refused: 2,
        skipped: 0,
        reasons,
        covered: 10,
        sent_ahead: 0,
    })
    .await
    .unwrap();
    check("completed with reasons").await;
    // Failed for good (one attempt allowed).
    let l = lease(&c).await;
    assert_eq!(l.fail("boom").await.unwrap(), ItemFate::Failed);
    check("failed").await;
    // Handed off to a successor mid-way.
    let l = lease(&c).await;
    let succ = l
        .hand_off(
            &Progress {
                cursor: acked(4),
                docs: 5,
                bytes: 50,
                ..Progress::default()
            },
            0.05,
        )
        .await
        .unwrap();
    assert!(matches!(succ, HandOff::Successor(_)));
    check("handed off").await;
    // Held with a checkpoint, and another one held then left to expire.
    let d = Coordinator::new(store.clone(), cfg.clone());
    let mut held = lease(&d).await;
    let at = held.cursor().clone();
    held.checkpoint(&Progress {
        cursor: at,
        docs: 3,
        bytes: 30,
        ..Progress::default()
    })
    .await
    .unwrap();
    check("held").await;
    let e = Coordinator::new(store.clone(), cfg.clone());
    let dead = lease(&e).await;
    let end = dead.expires_at_ms().max(held.expires_at_ms());
    drop(dead);
    while store.now().await.unwrap() <= end {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    check("expired").await;
    let st = c.status().await.unwrap();
    assert_eq!(st.items.total, 7, "six items and a successor");
    assert_eq!((st.items.done, st.items.failed), (2, 1));
    assert_eq!(st.items.leased, 0);
    assert_eq!(st.docs_done, 8 + 5 + 3);
    assert_eq!(st.docs_refused, 2);
    assert_eq!(st.reasons["refused:mapper_parsing_exception"], 2);
    assert_eq!(st.failures.len(), 1);
    assert!(st.per_group.contains_key("odd|x"));
}
