//! An in-process store: the records of one process, gone when it exits. For commands that
//! run the engine without a fleet (`rfs export`) and for tests.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use rand::seq::SliceRandom;

use super::{system_now_ms, Store};
use crate::record::{Record, RecordKind, Revision};
use crate::Error;

/// Records in memory, behind one lock.
#[derive(Default)]
pub struct MemoryStore {
    records: Mutex<HashMap<String, (Record, i64)>>,
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Record, i64)>> {
        self.records.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl Store for MemoryStore {
    fn backend(&self) -> &'static str {
        "memory"
    }

    async fn now(&self) -> Result<i64, Error> {
        Ok(system_now_ms())
    }

    async fn create(&self, rec: &Record) -> Result<Option<Revision>, Error> {
        let mut m = self.lock();
        if m.contains_key(&rec.id) {
            return Ok(None);
        }
        m.insert(rec.id.clone(), (rec.clone(), 1));
        Ok(Some(Revision::row(1)))
    }

    async fn create_many(&self, recs: &[Record]) -> Result<usize, Error> {
        let mut m = self.lock();
        let mut n = 0;
        for r in recs {
            if !m.contains_key(&r.id) {
                m.insert(r.id.clone(), (r.clone(), 1));
                n += 1;
            }
        }
        Ok(n)
    }

    async fn get(&self, id: &str) -> Result<Option<(Record, Revision)>, Error> {
        Ok(self
            .lock()
            .get(id)
            .map(|(r, v)| (r.clone(), Revision::row(*v))))
    }

    async fn update(&self, rec: &Record, expected: Revision) -> Result<Option<Revision>, Error> {
        let mut m = self.lock();
        match m.get_mut(&rec.id) {
            Some((r, v)) if *v == expected.seq => {
                *r = rec.clone();
                *v += 1;
                Ok(Some(Revision::row(*v)))
            }
            _ => Ok(None),
        }
    }

    async fn candidates(&self, now: i64, limit: usize) -> Result<Vec<(Record, Revision)>, Error> {
        let m = self.lock();
        let mut out: Vec<(Record, Revision)> = m
            .values()
            .filter(|(r, _)| r.is_candidate() && r.expiry <= now)
            .map(|(r, v)| (r.clone(), Revision::row(*v)))
            .collect();
        out.shuffle(&mut rand::thread_rng());
        // Expired leases first (earliest first), then fresh items in the shuffled order.
        out.sort_by_key(|(r, _)| if r.expiry > 0 { r.expiry } else { i64::MAX });
        out.truncate(limit);
        Ok(out)
    }

    async fn earliest_open_expiry(&self) -> Result<Option<i64>, Error> {
        Ok(self
            .lock()
            .values()
            .filter(|(r, _)| r.is_candidate())
            .map(|(r, _)| r.expiry)
            .min())
    }

    async fn list(&self, kind: RecordKind) -> Result<Vec<Record>, Error> {
        Ok(self
            .lock()
            .values()
            .filter(|(r, _)| r.kind == kind)
            .map(|(r, _)| r.clone())
            .collect())
    }

    async fn clear(&self) -> Result<(), Error> {
        self.lock().clear();
        Ok(())
    }
}
