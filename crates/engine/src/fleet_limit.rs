//! The fleet-wide rate limit (`--fleet-max-docs-per-sec`, `--fleet-max-bytes-per-sec`):
//! before a batch is sent, its documents and bytes are taken from budgets shared through
//! the coordination store (one-second windows, see [`coordination::FLEET_WINDOW_MS`]), so
//! that every worker of the fleet together stays under one number. The per-worker limits
//! and the AIMD on throttling stay in the sink (crates/pacing).

use coordination::Coordinator;

/// Limits for the whole fleet; `None`: no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FleetLimits {
    pub docs_per_sec: Option<f64>,
    pub bytes_per_sec: Option<f64>,
}

impl FleetLimits {
    pub fn is_none(&self) -> bool {
        self.docs_per_sec.is_none() && self.bytes_per_sec.is_none()
    }
}

/// One process's handle on the fleet-wide budgets.
pub struct FleetLimiter {
    coord: Coordinator,
    limits: FleetLimits,
}

impl FleetLimiter {
    pub fn new(coord: Coordinator, limits: FleetLimits) -> Self {
        FleetLimiter { coord, limits }
    }

    /// Waits until the batch's documents and bytes are granted by the fleet's budgets.
    pub async fn wait(&self, docs: u64, bytes: u64) -> Result<(), coordination::Error> {
        if let Some(rate) = self.limits.docs_per_sec {
            if docs > 0 {
                self.coord.wait_fleet_units("docs", rate, docs).await?;
            }
        }
        if let Some(rate) = self.limits.bytes_per_sec {
            if bytes > 0 {
                self.coord.wait_fleet_units("bytes", rate, bytes).await?;
            }
        }
        Ok(())
    }
}
