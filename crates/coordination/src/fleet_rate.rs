//! A fleet-wide rate limit shared through the store: one record per limited unit
//! (`rate:docs`, `rate:bytes`) holds the current one-second window of the store's clock and
//! the units taken in it. A worker takes a share of the window's budget with one
//! compare-and-set before it sends; once the window's budget is gone, everyone waits for
//! the next window. However many workers there are, the units taken per window never
//! exceed the limit.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::coordinator::{backoff, retry, Coordinator};
use crate::record::{Record, RecordKind};
use crate::Error;

/// Length of one budget window, store milliseconds.
pub const FLEET_WINDOW_MS: i64 = 1000;

/// What one take got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FleetGrant {
    /// Units granted (0 when the window's budget is spent).
    pub units: u64,
    /// The end of the window the units belong to, store ms since the epoch: units not
    /// used by then are lost; a worker that got 0 tries again at this time.
    pub window_end_ms: i64,
}

#[derive(Debug, Serialize, Deserialize)]
struct Window {
    window: i64,
    taken: u64,
}

impl Coordinator {
    /// Take up to `want` units of the fleet-wide limit `name` (`per_second` units per
    /// second for the whole fleet) from the current window.
    pub async fn take_fleet_units(
        &self,
        name: &str,
        per_second: f64,
        want: u64,
    ) -> Result<FleetGrant, Error> {
        if !(per_second.is_finite() && per_second > 0.0) {
            return Err(Error::Invalid(format!(
                "fleet limit {name}: {per_second} per second is not a positive number"
            )));
        }
        let cap = ((per_second * FLEET_WINDOW_MS as f64 / 1000.0) as u64).max(1);
        let store = self.inner.store.as_ref();
        let id = format!("rate:{name}");
        let mut round = 0u32;
        loop {
            round += 1;
            let now = retry(|| store.now()).await?;
            let window = now.div_euclid(FLEET_WINDOW_MS);
            let window_end_ms = (window + 1) * FLEET_WINDOW_MS;
            let current = retry(|| store.get(&id)).await?;
            let taken = match &current {
                Some((rec, _)) => {
                    // A record nobody can read cannot say what the window holds: starting
                    // a fresh one could let the fleet go past its limit, so say so.
                    let w: Window =
                        serde_json::from_value(rec.data.clone()).map_err(|e| Error::Corrupt {
                            id: id.clone(),
                            reason: format!("not a fleet-limit window: {e}"),
                        })?;
                    if w.window > window {
                        // Our clock read is older than another worker's write (a slow
                        // call): writing our window would undo the newer one's count.
                        if round < 20 {
                            backoff(round.min(5)).await;
                            continue;
                        }
                        return Ok(FleetGrant {
                            units: 0,
                            window_end_ms: (w.window + 1) * FLEET_WINDOW_MS,
                        });
                    }
                    if w.window == window {
                        w.taken
                    } else {
                        0
                    }
                }
                None => 0,
            };
            let units = want.min(cap.saturating_sub(taken));
            if units == 0 {
                return Ok(FleetGrant {
                    units,
                    window_end_ms,
                });
            }
            let data = serde_json::json!(Window {
                window,
                taken: taken + units
            });
            let written = match current {
                Some((mut rec, ver)) => {
                    rec.data = data;
                    crate::coordinator::cas(store, &rec, ver).await?.is_some()
                }
                None => {
                    let mut rec = Record::new(id.clone(), RecordKind::Control, self.me());
                    rec.data = data;
                    retry(|| store.create(&rec)).await?.is_some()
                }
            };
            if written {
                return Ok(FleetGrant {
                    units,
                    window_end_ms,
                });
            }
            // Another worker took its share first: read again.
            backoff(round.min(5)).await;
        }
    }

    /// Wait until `units` units of the fleet-wide limit `name` are granted, taking them
    /// window by window (a batch larger than one window's budget is paid over several).
    pub async fn wait_fleet_units(
        &self,
        name: &str,
        per_second: f64,
        units: u64,
    ) -> Result<(), Error> {
        let mut need = units;
        while need > 0 {
            let g = self.take_fleet_units(name, per_second, need).await?;
            need -= g.units.min(need);
            if need > 0 {
                let now = self.local_now();
                let wait = (g.window_end_ms - now).clamp(1, FLEET_WINDOW_MS);
                // A little jitter so that a thousand waiters do not all ask at once.
                let jitter = rand::Rng::gen_range(&mut rand::thread_rng(), 0..20);
                tokio::time::sleep(Duration::from_millis((wait + jitter) as u64)).await;
            }
        }
        Ok(())
    }
}
