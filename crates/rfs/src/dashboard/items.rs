//! Work items as the page lists them: the leased ones with their holders and lease
//! expiry, the waiting ones (an expired lease first: its worker is gone or stuck), the
//! FAILED ones with their last error, and how many items each worker holds. Each list is
//! cut at a limit, with the full count beside it.

use std::collections::BTreeMap;

use coordination::{Record, RecordState};
use serde_json::{json, Value};

/// The items view of `records` (work items) at store time `now`, at most `cap` per list.
pub fn view(records: &[Record], now: i64, cap: usize) -> Value {
    let mut leased: Vec<&Record> = Vec::new();
    let mut waiting: Vec<&Record> = Vec::new();
    let mut failed: Vec<&Record> = Vec::new();
    let mut done = 0usize;
    let mut holders: BTreeMap<&str, usize> = BTreeMap::new();
    for r in records {
        match r.state {
            RecordState::Done => done += 1,
            RecordState::Failed => failed.push(r),
            RecordState::Open => match r.holder.as_deref() {
                Some(h) if r.expiry > now => {
                    leased.push(r);
                    *holders.entry(h).or_insert(0) += 1;
                }
                _ => waiting.push(r),
            },
        }
    }
    leased.sort_by(|a, b| a.expiry.cmp(&b.expiry).then_with(|| a.id.cmp(&b.id)));
    // Abandoned leases (a holder, expired) first, then by id.
    waiting.sort_by(|a, b| {
        b.holder
            .is_some()
            .cmp(&a.holder.is_some())
            .then_with(|| a.id.cmp(&b.id))
    });
    failed.sort_by(|a, b| a.id.cmp(&b.id));
    let item = |r: &Record| {
        json!({
            "id": r.id,
            "index": r.group,
            "shard": r.part,
            "holder": r.holder,
            "expiry": (r.expiry > 0).then_some(r.expiry),
            "attempts": r.attempts,
            "docs_done": r.docs_done,
            "bytes_done": r.bytes_done,
            "last_error": r.last_error,
        })
    };
    let list = |v: &[&Record]| v.iter().take(cap).map(|r| item(r)).collect::<Vec<_>>();
    let mut by_holder: Vec<(&str, usize)> = holders.into_iter().collect();
    by_holder.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    json!({
        "store_now": now,
        "leased": list(&leased),
        "leased_total": leased.len(),
        "waiting": list(&waiting),
        "waiting_total": waiting.len(),
        "failed": list(&failed),
        "failed_total": failed.len(),
        "done_total": done,
        "holders": by_holder
            .iter()
            .take(cap)
            .map(|(h, n)| json!({"holder": h, "items": n}))
            .collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use coordination::{RecordKind, WorkItem};

    fn item(shard: u32, state: RecordState, holder: Option<&str>, expiry: i64) -> Record {
        let mut r = Record::item(&WorkItem::whole("logs", shard), 0, "test");
        r.state = state;
        r.holder = holder.map(str::to_string);
        r.expiry = expiry;
        r.attempts = 1;
        assert_eq!(r.kind, RecordKind::Item);
        r
    }

    #[test]
    fn items_by_state_with_holders_and_expiry() {
        let mut failed = item(4, RecordState::Failed, None, 0);
        failed.last_error = Some("target said no".into());
        let records = vec![
            item(0, RecordState::Open, Some("w1"), 2000),
            item(1, RecordState::Open, Some("w2"), 1500),
            item(2, RecordState::Open, Some("w3"), 900), // expired: waiting
            item(3, RecordState::Open, None, 0),
            failed,
            item(5, RecordState::Done, None, 0),
            item(6, RecordState::Open, Some("w1"), 3000),
        ];
        let v = view(&records, 1000, 2);
        assert_eq!(v["leased_total"], 3);
        // Soonest expiry first; cut at 2.
        let leased: Vec<_> = v["leased"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| (i["holder"].as_str().unwrap(), i["expiry"].as_i64().unwrap()))
            .collect();
        assert_eq!(leased, [("w2", 1500), ("w1", 2000)]);
        assert_eq!(v["waiting_total"], 2);
        assert_eq!(v["waiting"][0]["shard"], 2, "an expired lease comes first");
        assert_eq!(v["waiting"][1]["expiry"], Value::Null);
        assert_eq!(v["failed_total"], 1);
        assert_eq!(v["failed"][0]["last_error"], "target said no");
        assert_eq!(v["done_total"], 1);
        assert_eq!(
            v["holders"],
            json!([{"holder": "w1", "items": 2}, {"holder": "w2", "items": 1}])
        );
    }
}
