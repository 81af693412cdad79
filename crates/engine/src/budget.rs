//! The process-wide memory budget for batches: every batch read ahead or in flight holds
//! permits for its bytes until it is acknowledged, so memory stays bounded however many
//! items a process works on at once.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Permits are counted in KiB so large budgets fit the semaphore's counter.
const UNIT: usize = 1024;

/// Bytes of batches a process may hold at once.
#[derive(Debug, Clone)]
pub struct Budget {
    sem: Arc<Semaphore>,
    units: u32,
}

/// Memory held by one batch; released when dropped.
#[derive(Debug)]
pub struct HeldMemory(#[allow(dead_code)] OwnedSemaphorePermit);

impl Budget {
    pub fn new(bytes: usize) -> Budget {
        let units = (bytes / UNIT).clamp(1, u32::MAX as usize >> 4) as u32;
        Budget {
            sem: Arc::new(Semaphore::new(units as usize)),
            units,
        }
    }

    /// Waits until `bytes` fit (a batch larger than the whole budget takes all of it), from
    /// a blocking thread inside the runtime. `None` when the budget was closed.
    pub fn hold_blocking(&self, bytes: usize) -> Option<HeldMemory> {
        let want = (bytes.div_ceil(UNIT) as u64).clamp(1, u64::from(self.units)) as u32;
        let sem = self.sem.clone();
        let handle = tokio::runtime::Handle::try_current().ok()?;
        handle
            .block_on(sem.acquire_many_owned(want))
            .ok()
            .map(HeldMemory)
    }

    /// Bytes free now.
    pub fn available(&self) -> usize {
        self.sem.available_permits() * UNIT
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn holds_wait_until_memory_is_released() {
        let b = Budget::new(10 * UNIT);
        let first = {
            let b = b.clone();
            tokio::task::spawn_blocking(move || b.hold_blocking(6 * UNIT))
                .await
                .unwrap()
                .unwrap()
        };
        assert_eq!(b.available(), 4 * UNIT);
        // Larger than what is free (and than the whole budget): waits for the first.
        let second = {
            let b = b.clone();
            tokio::task::spawn_blocking(move || b.hold_blocking(usize::MAX / 2))
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!second.is_finished(), "granted while memory was held");
        drop(first);
        let second = tokio::time::timeout(Duration::from_secs(5), second)
            .await
            .expect("granted after the release")
            .unwrap()
            .unwrap();
        assert_eq!(b.available(), 0);
        drop(second);
        assert_eq!(b.available(), 10 * UNIT);
    }
}
