//! The work-item protocol over a [`Store`]: setup, acquisition with exponentially growing
//! leases, checkpoints, completion, the successor hand-off, release and failure.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::seq::SliceRandom;
use rand::Rng;

use std::collections::BTreeMap;

use crate::position::{cursor_display, Cursor, Position};
use crate::record::{
    item_id, Record, RecordKind, RecordState, Revision, WorkItem, POSSIBLE_DUPLICATES,
};
use crate::store::{system_now_ms, Store};
use crate::Error;

/// How many candidates one acquisition round looks at.
const CANDIDATES: usize = 8;
/// Id of the record that says setup has created every work item.
pub(crate) const SETUP_ID: &str = "phase:items_setup";

/// Protocol settings. The defaults suit production; tests shrink the durations.
#[derive(Debug, Clone)]
pub struct Config {
    /// First lease on an item; each acquisition doubles the next one. With heartbeats
    /// (`renew_every` > 0) this is the item's *work period* (the early trigger and the
    /// successor hand-off follow it) while the lease in the store is the short heartbeat
    /// lease, renewed as long as the worker works.
    pub initial_lease: Duration,
    /// Heartbeat: renew the lease in the store this often while working (zero: no
    /// heartbeat, the lease is `initial_lease` × 2^exponent and never renewed). The lease
    /// in the store is then min(3 × `renew_every`, `initial_lease`) × 2^(earlier attempts
    /// of the item): it grows with attempts that ended without finishing, not with
    /// renewals, and a worker that dies loses its item within one such lease.
    pub renew_every: Duration,
    /// Upper bound of any item lease.
    pub max_lease: Duration,
    /// Acquisitions allowed per item before it becomes FAILED.
    pub max_attempts: u32,
    /// Largest tolerated difference between this worker's clock and the store's.
    pub max_clock_skew: Duration,
    /// First lease on a phase ("snapshot", "metadata", …); doubles per attempt.
    pub phase_lease: Duration,
    /// The keeper's lease; the keeper renews it on every step.
    pub keeper_lease: Duration,
    /// How often waiting workers look at the store again.
    pub poll_interval: Duration,
    /// Added to this machine's clock. Only for tests that simulate a skewed worker.
    pub local_clock_offset_ms: i64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            initial_lease: Duration::from_secs(600),
            renew_every: Duration::from_secs(10),
            max_lease: Duration::from_secs(24 * 3600),
            max_attempts: 8,
            max_clock_skew: Duration::from_secs(15),
            phase_lease: Duration::from_secs(600),
            keeper_lease: Duration::from_secs(30),
            poll_interval: Duration::from_secs(1),
            local_clock_offset_ms: 0,
        }
    }
}

/// Worker identity: host name, process id and a random part, so two processes on one host
/// (or a restarted process) never share an id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WorkerId(String);

impl WorkerId {
    pub fn new() -> Self {
        let host = gethostname::gethostname().to_string_lossy().into_owned();
        let host = if host.is_empty() { "host".into() } else { host };
        WorkerId(format!(
            "{host}-{}-{:08x}",
            std::process::id(),
            rand::thread_rng().gen::<u32>()
        ))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for WorkerId {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Display for WorkerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One worker's handle on the shared protocol. Cheap to clone; clones share the worker id
/// and the one-lease-at-a-time rule.
#[derive(Clone)]
pub struct Coordinator {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) worker: WorkerId,
    pub(crate) config: Config,
    holding: AtomicBool,
}

/// Result of [`Coordinator::acquire`].
#[derive(Debug)]
pub enum Acquired {
    /// This worker now holds the lease.
    Lease(Lease),
    /// Every item is complete or FAILED.
    NoWorkLeft,
    /// Open items exist but all are leased; the first lease ends at `next_expiry`
    /// (store milliseconds since the epoch), `wait` from now.
    AllLeasedElsewhere { next_expiry: i64, wait: Duration },
}

/// Position and totals reported by the worker. `cursor` is the last acknowledged position:
/// every document of the item up to it is delivered, refused or skipped. The counts are
/// totals for the whole item up to the cursor (not increments): `docs` delivered (`bytes`
/// of them), `refused` by the target and `skipped` by the source or transform (each in a
/// failure log), and the refused and skipped ones by reason.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Progress {
    pub cursor: Cursor,
    pub docs: u64,
    pub bytes: u64,
    pub refused: u64,
    pub skipped: u64,
    pub reasons: BTreeMap<String, u64>,
    /// Inputs the source handed over up to the cursor (documents and skips) plus the
    /// further outputs of exploded inputs: what `docs + refused + skipped + filtered`
    /// must add up to (checked for the whole migration when it finishes).
    pub covered: u64,
    /// Documents sent beyond the cursor whose fate is unknown (see
    /// [`Record::sent_ahead`]): non-zero only for a sink that stores a resent document
    /// twice, written before they are sent.
    pub sent_ahead: u64,
}

impl Progress {
    /// Counts the documents sent beyond the cursor by an earlier run (`sent_ahead`) as
    /// possible duplicates, under [`POSSIBLE_DUPLICATES`] — whoever goes on from the
    /// cursor sends them again — and clears the mark. Returns how many.
    pub fn count_resent(&mut self) -> u64 {
        let n = std::mem::take(&mut self.sent_ahead);
        if n > 0 {
            *self
                .reasons
                .entry(POSSIBLE_DUPLICATES.to_string())
                .or_default() += n;
        }
        n
    }

    /// The documents counted as possible duplicates so far.
    pub fn possible_duplicates(&self) -> u64 {
        self.reasons.get(POSSIBLE_DUPLICATES).copied().unwrap_or(0)
    }

    fn apply(&self, r: &mut Record) {
        r.covered = Some(self.covered);
        r.sent_ahead = self.sent_ahead;
        r.cursor = self.cursor.clone();
        r.docs_done = self.docs;
        r.bytes_done = self.bytes;
        r.docs_refused = self.refused;
        r.docs_skipped = self.skipped;
        r.reasons = self.reasons.clone();
    }
}

/// What [`Lease::hand_off`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandOff {
    /// The successor item `id` covers the rest; this item is complete.
    Successor(String),
    /// The cursor reached the item's end: it is simply complete.
    Completed,
    /// No progress past the item's start: the lease was released instead.
    Released,
}

/// What [`Lease::fail`] did to the item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemFate {
    /// Released; another attempt will come.
    WillRetry,
    /// The last attempt was used: the item is FAILED.
    Failed,
}

/// Test hook: where [`Lease::hand_off_crashing`] stops, as if the process died there.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashPoint {
    BeforeRecordSuccessor,
    AfterRecordSuccessor,
    AfterCreateSuccessor,
    AfterCompleteParent,
}

/// A held lease on one work item. Dropping it without `complete`, `hand_off`, `release` or
/// `fail` leaves the lease to expire (what a crash does).
pub struct Lease {
    coord: Coordinator,
    rec: Box<Record>,
    version: Revision,
    exponent: u32,
    duration: Duration,
    acquired: Instant,
    /// The lease in the store, from `renewed` (= `duration` without heartbeat).
    store_len: Duration,
    /// When the last successful renewal (or the acquisition) was sent, on this clock.
    renewed: Instant,
    /// The store's clock minus this machine's, measured at acquisition.
    clock_offset_ms: i64,
    renewals: u64,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("id", &self.rec.id)
            .field("holder", &self.rec.holder)
            .field("expiry", &self.rec.expiry)
            .field("duration", &self.duration)
            .field("store_lease", &self.store_len)
            .finish()
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.coord.inner.holding.store(false, Ordering::SeqCst);
    }
}

impl Coordinator {
    /// A coordinator with a fresh [`WorkerId`].
    pub fn new(store: Arc<dyn Store>, config: Config) -> Self {
        Self::with_worker_id(store, config, WorkerId::new())
    }

    pub fn with_worker_id(store: Arc<dyn Store>, config: Config, worker: WorkerId) -> Self {
        Coordinator {
            inner: Arc::new(Inner {
                store,
                worker,
                config,
                holding: AtomicBool::new(false),
            }),
        }
    }

    pub fn worker_id(&self) -> &WorkerId {
        &self.inner.worker
    }

    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    pub(crate) fn me(&self) -> &str {
        self.inner.worker.as_str()
    }

    /// This worker's clock (ms since the epoch), including the test offset.
    pub fn local_now(&self) -> i64 {
        system_now_ms() + self.inner.config.local_clock_offset_ms
    }

    /// The store's clock, after checking it against ours: [`Error::ClockSkew`] when they
    /// differ by more than `max_clock_skew`.
    pub async fn checked_now(&self) -> Result<i64, Error> {
        let before = self.local_now();
        let now = retry(|| self.inner.store.now()).await?;
        let after = self.local_now();
        let skew = now - (before + after) / 2;
        let max = self.inner.config.max_clock_skew.as_millis() as i64;
        if skew.abs() > max + (after - before) / 2 {
            return Err(Error::ClockSkew {
                skew_ms: skew,
                max_ms: max,
            });
        }
        Ok(now)
    }

    /// Create every work item that does not exist yet (any worker may run this, any number
    /// of times), then record that setup is done. Returns how many items were created.
    pub async fn setup(&self, items: &[WorkItem]) -> Result<usize, Error> {
        for it in items {
            if let (Some(Position::Doc(until)), after) = (&it.until, &it.after) {
                let first = match after {
                    None => 0,
                    Some(Position::Doc(a)) => a.saturating_add(1),
                    Some(Position::Key(_)) => u64::MAX,
                };
                if *until <= first {
                    return Err(Error::Invalid(format!(
                        "work item {} ends at {until}, before it starts",
                        it.id()
                    )));
                }
            }
        }
        let recs: Vec<Record> = items
            .iter()
            .map(|it| Record::item(it, 0, self.me()))
            .collect();
        let created = retry(|| self.inner.store.create_many(&recs)).await?;
        let mut done = Record::new(SETUP_ID, RecordKind::Phase, self.me());
        done.state = RecordState::Done;
        done.completed_at = Some(self.inner.store.now().await?);
        done.data = serde_json::json!({ "items": items.len() });
        retry(|| self.inner.store.create(&done)).await?;
        Ok(created)
    }

    /// True once some worker finished [`Coordinator::setup`].
    pub async fn is_setup_done(&self) -> Result<bool, Error> {
        Ok(retry(|| self.inner.store.get(SETUP_ID))
            .await?
            .is_some_and(|(r, _)| r.state == RecordState::Done))
    }

    /// The lease written to the store for an acquisition: without heartbeat the work
    /// period itself; with heartbeat min(3 × renew_every, initial_lease) doubled for each
    /// earlier attempt of the item (one that expired, failed or was released).
    fn store_lease_len(&self, duration: Duration, earlier_attempts: u32) -> Duration {
        let cfg = &self.inner.config;
        if cfg.renew_every.is_zero() {
            return duration;
        }
        let base = cfg.renew_every.saturating_mul(3).min(cfg.initial_lease);
        self.lease_len(base, earlier_attempts)
    }

    fn lease_len(&self, base: Duration, exponent: u32) -> Duration {
        let factor = 1u32 << exponent.min(30);
        base.saturating_mul(factor)
            .min(self.inner.config.max_lease.max(base))
    }

    /// Lease a random available item: never leased, released, or with an expired lease.
    /// Items out of attempts become FAILED on the way; a parent whose holder died during
    /// the hand-off is finished first.
    pub async fn acquire(&self) -> Result<Acquired, Error> {
        if self.inner.holding.swap(true, Ordering::SeqCst) {
            return Err(Error::Invalid(
                "this worker already holds a lease; one at a time".into(),
            ));
        }
        let out = self.acquire_inner().await;
        if !matches!(out, Ok(Acquired::Lease(_))) {
            self.inner.holding.store(false, Ordering::SeqCst);
        }
        out
    }

    async fn acquire_inner(&self) -> Result<Acquired, Error> {
        let store = &self.inner.store;
        let cfg = &self.inner.config;
        let mut rounds = 0u32;
        loop {
            rounds += 1;
            let t0 = Instant::now();
            // Taken before the store's clock is read: the offset errs towards a later
            // expiry in the store than on this clock, never an earlier one.
            let local_before = self.local_now();
            let now = self.checked_now().await?;
            let mut cands = retry(|| store.candidates(now, CANDIDATES)).await?;
            if cands.is_empty() {
                match retry(|| store.earliest_open_expiry()).await? {
                    None => return Ok(Acquired::NoWorkLeft),
                    Some(t) if t > now => {
                        return Ok(Acquired::AllLeasedElsewhere {
                            next_expiry: t,
                            wait: Duration::from_millis((t - now) as u64),
                        })
                    }
                    // Freed between the two reads: look again (a few times).
                    Some(_) if rounds < 20 => {
                        backoff(rounds).await;
                        continue;
                    }
                    Some(t) => {
                        return Ok(Acquired::AllLeasedElsewhere {
                            next_expiry: t,
                            wait: cfg.poll_interval,
                        })
                    }
                }
            }
            // Racing workers try the candidates in different orders, but an item whose
            // lease expired (its holder died) before any fresh one, so that it is taken
            // again within about one lease even when every worker is busy.
            cands.shuffle(&mut rand::thread_rng());
            cands.sort_by_key(|(r, _)| r.expiry <= 0);
            for (rec, ver) in cands {
                if !rec.is_candidate() || rec.expiry > now {
                    continue;
                }
                if rec.attempts >= cfg.max_attempts {
                    self.mark_failed(rec, ver).await?;
                    continue;
                }
                let exponent = rec.exponent;
                let duration = self.lease_len(cfg.initial_lease, exponent);
                let store_len = self.store_lease_len(duration, rec.attempts);
                let mut new = rec.clone();
                if let Some(h) = &rec.holder {
                    if rec.expiry > 0 {
                        new.last_error =
                            Some(format!("lease of {h} expired before the item was finished"));
                    }
                }
                new.holder = Some(self.me().to_string());
                new.expiry = now + store_len.as_millis() as i64;
                new.exponent = exponent.saturating_add(1);
                new.attempts = rec.attempts.saturating_add(1);
                let Some(version) = cas(store.as_ref(), &new, ver).await? else {
                    continue;
                };
                let lease = Lease {
                    coord: self.clone(),
                    rec: Box::new(new),
                    version,
                    exponent,
                    duration,
                    acquired: t0,
                    store_len,
                    renewed: t0,
                    clock_offset_ms: now - local_before,
                    renewals: 0,
                };
                if !lease.rec.successors.is_empty() {
                    // The previous holder died mid hand-off: finish steps 2 and 3.
                    tracing::info!(item = %lease.rec.id, "finishing an interrupted hand-off");
                    let mut lease = lease;
                    lease.create_successors().await?;
                    match lease.finish_parent().await {
                        // Took so long that the lease moved on: the new holder finishes it.
                        Ok(()) | Err(Error::LeaseLost { .. }) => {}
                        Err(e) => return Err(e),
                    }
                    // `lease` drops here; keep holding the one-lease slot for this call.
                    self.inner.holding.store(true, Ordering::SeqCst);
                    continue;
                }
                tracing::debug!(item = %lease.rec.id, ?duration, "lease acquired");
                return Ok(Acquired::Lease(lease));
            }
            backoff(rounds).await;
        }
    }

    async fn mark_failed(&self, rec: Record, ver: Revision) -> Result<(), Error> {
        let mut new = rec;
        new.state = RecordState::Failed;
        new.holder = None;
        new.expiry = 0;
        let reason = new
            .last_error
            .take()
            .unwrap_or_else(|| "no error recorded".into());
        new.last_error = Some(format!(
            "gave up after {} attempts; last error: {reason}",
            new.attempts
        ));
        new.completed_at = Some(self.inner.store.now().await?);
        if cas(self.inner.store.as_ref(), &new, ver).await?.is_some() {
            tracing::warn!(item = %new.id, error = ?new.last_error, "work item FAILED");
        }
        Ok(())
    }
}

impl Lease {
    pub fn id(&self) -> &str {
        &self.rec.id
    }

    pub fn item(&self) -> WorkItem {
        self.rec.work_item()
    }

    /// The last acknowledged position: read strictly after it.
    pub fn cursor(&self) -> &Cursor {
        &self.rec.cursor
    }

    /// Where earlier holders got to, and their counts.
    pub fn progress(&self) -> Progress {
        Progress {
            cursor: self.rec.cursor.clone(),
            docs: self.rec.docs_done,
            bytes: self.rec.bytes_done,
            refused: self.rec.docs_refused,
            skipped: self.rec.docs_skipped,
            reasons: self.rec.reasons.clone(),
            // An item written by an rfs that did not keep it: its counts as they are.
            covered: self.rec.covered.unwrap_or_else(|| self.rec.accounted()),
            sent_ahead: self.rec.sent_ahead,
        }
    }

    /// Acquisitions of this item so far, this one included.
    pub fn attempts(&self) -> u32 {
        self.rec.attempts
    }

    /// Exponent this lease was sized with (duration = initial × 2^exponent).
    pub fn exponent(&self) -> u32 {
        self.exponent
    }

    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// Lease end on the store's clock (ms since the epoch).
    pub fn expires_at_ms(&self) -> i64 {
        self.rec.expiry
    }

    /// Lease end on this process' monotonic clock (measured from before the store's clock
    /// was read, or before the last renewal was sent, so it errs early). Nothing may be
    /// written for the item after it unless a renewal moved it.
    pub fn deadline(&self) -> Instant {
        self.renewed + self.store_len
    }

    /// The lease written to the store at acquisition and at each renewal.
    pub fn store_lease(&self) -> Duration {
        self.store_len
    }

    /// How often to renew this lease: `None` without heartbeat, otherwise
    /// min(`renew_every`, a third of the store lease).
    pub fn renew_every(&self) -> Option<Duration> {
        let every = self.coord.inner.config.renew_every;
        (!every.is_zero()).then(|| every.min(self.store_len / 3))
    }

    /// Successful renewals of this lease so far.
    pub fn renewals(&self) -> u64 {
        self.renewals
    }

    /// Heartbeat: push the lease end to one store lease from now, guarded by the holder and
    /// the revision this lease last wrote (its fencing token). [`Error::LeaseLost`] when
    /// another worker took the item; then stop writing at once. The exponent and the
    /// attempt count are not touched: renewals do not make the next lease longer.
    pub async fn renew(&mut self) -> Result<(), Error> {
        let sent = Instant::now();
        // The store's clock, from ours and the offset seen at acquisition: one round trip.
        let now = self.coord.local_now() + self.clock_offset_ms;
        let expiry = now + self.store_len.as_millis() as i64;
        self.guarded(|r| r.expiry = r.expiry.max(expiry)).await?;
        self.renewed = sent;
        self.renewals += 1;
        Ok(())
    }

    /// When to stop sending and hand off: max(0.75 × lease, lease − 4 min 30 s).
    pub fn early_trigger(&self) -> Instant {
        self.acquired + early_trigger_after(self.duration)
    }

    /// Persist progress into the item (guarded by lease holder).
    pub async fn checkpoint(&mut self, p: &Progress) -> Result<(), Error> {
        self.check_cursor(&p.cursor)?;
        self.guarded(|r| p.apply(r)).await
    }

    /// Every document of the item is done: mark it complete (guarded by lease holder).
    pub async fn complete(mut self, p: &Progress) -> Result<(), Error> {
        self.check_cursor(&p.cursor)?;
        let now = self.coord.inner.store.now().await?;
        self.guarded(|r| {
            p.apply(r);
            // Every document of the item is acknowledged: nothing is sent again.
            r.sent_ahead = 0;
            r.state = RecordState::Done;
            r.expiry = 0;
            r.completed_at = Some(now);
        })
        .await
    }

    /// Give the lease back without finishing; the exponent keeps its growth.
    pub async fn release(mut self) -> Result<(), Error> {
        self.guarded(|r| {
            r.holder = None;
            r.expiry = 0;
        })
        .await
    }

    /// Record `reason` and release; on the last allowed attempt the item becomes FAILED.
    pub async fn fail(mut self, reason: &str) -> Result<ItemFate, Error> {
        let max = self.coord.inner.config.max_attempts;
        let fate = if self.rec.attempts >= max {
            ItemFate::Failed
        } else {
            ItemFate::WillRetry
        };
        let now = self.coord.inner.store.now().await?;
        let reason = reason.to_string();
        self.guarded(|r| {
            r.holder = None;
            r.expiry = 0;
            if fate == ItemFate::Failed {
                r.state = RecordState::Failed;
                r.completed_at = Some(now);
                r.last_error = Some(format!(
                    "gave up after {} attempts; last error: {reason}",
                    r.attempts
                ));
            } else {
                r.last_error = Some(reason);
            }
        })
        .await?;
        Ok(fate)
    }

    /// Record `reason` and mark the item FAILED now, whatever attempts it has left: for a
    /// failure no retry can heal (a format the reader does not support).
    pub async fn fail_permanently(mut self, reason: &str) -> Result<(), Error> {
        let now = self.coord.inner.store.now().await?;
        let reason = reason.to_string();
        self.guarded(|r| {
            r.holder = None;
            r.expiry = 0;
            r.state = RecordState::Failed;
            r.completed_at = Some(now);
            r.last_error = Some(format!(
                "failed at attempt {} without retry (a retry cannot succeed): {reason}",
                r.attempts
            ));
        })
        .await
    }

    /// The successor protocol: record the successor id on this item, create the successor
    /// (starting at `p.cursor`) if absent, mark this item complete. `setup_fraction` is the
    /// share of the lease spent before the first document was read; it sizes the
    /// successor's lease (< 2.5 % → exponent − 1, > 10 % → exponent + 1).
    pub async fn hand_off(self, p: &Progress, setup_fraction: f64) -> Result<HandOff, Error> {
        self.hand_off_until(p, setup_fraction, None).await
    }

    /// Test hook: run the hand-off and "crash" at `crash` (the lease is dropped unreleased).
    #[doc(hidden)]
    pub async fn hand_off_crashing(
        self,
        p: &Progress,
        setup_fraction: f64,
        crash: CrashPoint,
    ) -> Result<HandOff, Error> {
        self.hand_off_until(p, setup_fraction, Some(crash)).await
    }

    async fn hand_off_until(
        mut self,
        p: &Progress,
        setup_fraction: f64,
        crash: Option<CrashPoint>,
    ) -> Result<HandOff, Error> {
        self.check_cursor(&p.cursor)?;
        if p.cursor == self.rec.after {
            self.release().await?;
            return Ok(HandOff::Released);
        }
        if let (Some(Position::Doc(c)), Some(Position::Doc(until))) = (&p.cursor, &self.rec.until) {
            if c.saturating_add(1) >= *until {
                self.complete(p).await?;
                return Ok(HandOff::Completed);
            }
        }
        let succ = item_id(&self.rec.group, self.rec.part, &p.cursor);
        let exponent = successor_exponent(self.exponent, setup_fraction);
        if crash == Some(CrashPoint::BeforeRecordSuccessor) {
            return Ok(HandOff::Successor(succ));
        }
        // Documents sent beyond the cursor go again with the successor, which starts at
        // the cursor as a new item: counted on the parent now.
        let mut p = p.clone();
        let resent = p.count_resent();
        if resent > 0 {
            tracing::warn!(
                item = %self.rec.id,
                "{resent} document(s) sent beyond the cursor go again with the successor: counted as possible duplicates (the target writes without ids)"
            );
        }
        // Step 1: record the successor on the parent (guarded by lease holder).
        let succ_id = succ.clone();
        self.guarded(|r| {
            r.successors = vec![succ_id];
            p.apply(r);
            r.data = serde_json::json!({ "successor_exponent": exponent });
        })
        .await?;
        if crash == Some(CrashPoint::AfterRecordSuccessor) {
            return Ok(HandOff::Successor(succ));
        }
        // Step 2: create the successor if absent.
        self.create_successors().await?;
        if crash == Some(CrashPoint::AfterCreateSuccessor) {
            return Ok(HandOff::Successor(succ));
        }
        // Step 3: mark the parent complete (guarded by lease holder).
        self.finish_parent().await?;
        Ok(HandOff::Successor(succ))
    }

    /// Step 2 of the hand-off, from what step 1 recorded on the parent.
    async fn create_successors(&mut self) -> Result<(), Error> {
        let exponent = self
            .rec
            .data
            .get("successor_exponent")
            .and_then(|e| e.as_u64())
            .unwrap_or(0) as u32;
        let item = WorkItem {
            group: self.rec.group.clone(),
            part: self.rec.part,
            after: self.rec.cursor.clone(),
            until: self.rec.until.clone(),
            extent: self.rec.extent.clone(),
        };
        if !self.rec.successors.contains(&item.id()) {
            return Err(Error::Corrupt {
                id: self.rec.id.clone(),
                reason: format!(
                    "recorded successors {:?} do not match cursor {}",
                    self.rec.successors,
                    cursor_display(&self.rec.cursor)
                ),
            });
        }
        let rec = Record::item(&item, exponent, self.coord.me());
        retry(|| self.coord.inner.store.create(&rec)).await?;
        Ok(())
    }

    /// Step 3 of the hand-off.
    async fn finish_parent(&mut self) -> Result<(), Error> {
        let now = self.coord.inner.store.now().await?;
        self.guarded(|r| {
            r.state = RecordState::Done;
            r.expiry = 0;
            r.completed_at = Some(now);
        })
        .await
    }

    /// A cursor must lie in the item: at or after `after`, before `until`, and of the same
    /// kind (doc numbers are checked; keys are ordered only by their source).
    fn check_cursor(&self, cursor: &Cursor) -> Result<(), Error> {
        let (after, until) = (&self.rec.after, &self.rec.until);
        let ok = match cursor {
            None => after.is_none(),
            Some(Position::Doc(c)) => {
                let from_ok = match after {
                    None => true,
                    Some(Position::Doc(a)) => c >= a,
                    Some(Position::Key(_)) => false,
                };
                let until_ok = match until {
                    None => true,
                    Some(Position::Doc(u)) => c < u,
                    Some(Position::Key(_)) => false,
                };
                from_ok && until_ok
            }
            Some(Position::Key(_)) => {
                !matches!(after, Some(Position::Doc(_))) && !matches!(until, Some(Position::Doc(_)))
            }
        };
        if ok {
            Ok(())
        } else {
            Err(Error::Invalid(format!(
                "cursor {} is outside work item {} (after {}, until {})",
                cursor_display(cursor),
                self.rec.id,
                cursor_display(after),
                until
                    .as_ref()
                    .map_or_else(|| "the end".to_string(), ToString::to_string)
            )))
        }
    }

    /// Apply `f` to the item if this lease still holds it (holder and attempt unchanged).
    async fn guarded(&mut self, f: impl FnOnce(&mut Record)) -> Result<(), Error> {
        let store = self.coord.inner.store.clone();
        let mut new = (*self.rec).clone();
        f(&mut new);
        let mut version = self.version;
        for _ in 0..3 {
            if let Some(v) = cas(store.as_ref(), &new, version).await? {
                *self.rec = new;
                self.version = v;
                return Ok(());
            }
            // Conflict: still ours (and open)? Then only the version moved; try again.
            match retry(|| store.get(&self.rec.id)).await? {
                Some((cur, v))
                    if cur.holder == self.rec.holder
                        && cur.attempts == self.rec.attempts
                        && cur.state == RecordState::Open =>
                {
                    version = v;
                }
                _ => break,
            }
        }
        Err(Error::LeaseLost {
            id: self.rec.id.clone(),
        })
    }
}

/// max(0.75 × lease, lease − 4 min 30 s).
pub fn early_trigger_after(lease: Duration) -> Duration {
    let three_quarters = lease.mul_f64(0.75);
    let minus = lease.saturating_sub(Duration::from_secs(270));
    three_quarters.max(minus)
}

/// The lease-sizing rule: setup under 2.5 % of the lease → exponent − 1 (not below 0),
/// over 10 % → exponent + 1, otherwise unchanged.
pub fn successor_exponent(exponent: u32, setup_fraction: f64) -> u32 {
    if setup_fraction < 0.025 {
        exponent.saturating_sub(1)
    } else if setup_fraction > 0.10 {
        exponent.saturating_add(1)
    } else {
        exponent
    }
}

/// Compare-and-set that survives a lost answer: after a transient error, a conflict is
/// checked against the stored record (our write may have landed).
pub(crate) async fn cas(
    store: &dyn Store,
    new: &Record,
    expected: Revision,
) -> Result<Option<Revision>, Error> {
    let mut had_error = false;
    let mut attempt = 0u32;
    loop {
        match store.update(new, expected).await {
            Ok(Some(v)) => return Ok(Some(v)),
            Ok(None) => {
                if had_error {
                    if let Some((cur, v)) = retry(|| store.get(&new.id)).await? {
                        if cur == *new {
                            return Ok(Some(v));
                        }
                    }
                }
                return Ok(None);
            }
            Err(e) if e.is_transient() && attempt + 1 < store_call_policy().max_attempts => {
                tracing::debug!("retrying update of {}: {e}", new.id);
                had_error = true;
                attempt += 1;
                tokio::time::sleep(store_call_policy().delay(attempt, None)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// How a store call is retried on transient errors: 6 attempts, waits from 10 ms doubling
/// to 100 ms with jitter (about a quarter of a second in all). Longer outages are the
/// caller's to ride out (the worker's store retries).
pub(crate) fn store_call_policy() -> pacing::RetryPolicy {
    pacing::RetryPolicy {
        max_attempts: 6,
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(100),
        ..pacing::RetryPolicy::default()
    }
}

/// Retry an idempotent store call on transient errors ([`store_call_policy`]).
pub(crate) async fn retry<T, F, Fut>(f: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    use backon::Retryable;
    f.retry(store_call_policy().waits())
        .when(Error::is_transient)
        .notify(|e, _| tracing::debug!("retrying store call: {e}"))
        .await
}

/// A short random pause between rounds of a lost compare-and-set race (not a retry of an
/// error): grows with `round` (1 ms … ~100 ms) so that contenders spread out.
pub(crate) async fn backoff(round: u32) {
    let cap = 1u64 << round.min(7);
    let ms = rand::thread_rng().gen_range(0..=cap.min(100));
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn early_trigger_rule() {
        let m = Duration::from_secs(60);
        assert_eq!(early_trigger_after(10 * m), Duration::from_secs(450));
        assert_eq!(early_trigger_after(60 * m), Duration::from_secs(3600 - 270));
        assert_eq!(early_trigger_after(4 * m), Duration::from_secs(180));
        assert_eq!(
            early_trigger_after(Duration::from_millis(100)),
            Duration::from_millis(75)
        );
    }

    #[test]
    fn lease_sizing_rule() {
        assert_eq!(successor_exponent(3, 0.01), 2);
        assert_eq!(successor_exponent(0, 0.01), 0);
        assert_eq!(successor_exponent(3, 0.05), 3);
        assert_eq!(successor_exponent(3, 0.2), 4);
    }
}
