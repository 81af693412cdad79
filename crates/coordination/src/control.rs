//! The control record: RUN / PAUSE / STOP, set by an operator, read by every worker
//! between batches.

use serde::{Deserialize, Serialize};

use crate::coordinator::{cas, retry, Coordinator};
use crate::record::{Record, RecordKind};
use crate::Error;

const CONTROL_ID: &str = "control";

/// What the operator asked the fleet to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Control {
    /// Work normally (also when no control record exists).
    Run,
    /// Finish in-flight batches, checkpoint, release and wait for `Run`.
    Pause,
    /// Finish in-flight batches, checkpoint, release and exit.
    Stop,
}

impl Control {
    pub fn as_str(self) -> &'static str {
        match self {
            Control::Run => "RUN",
            Control::Pause => "PAUSE",
            Control::Stop => "STOP",
        }
    }
}

impl std::str::FromStr for Control {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        match s.to_ascii_uppercase().as_str() {
            "RUN" | "RESUME" => Ok(Control::Run),
            "PAUSE" => Ok(Control::Pause),
            "STOP" => Ok(Control::Stop),
            _ => Err(Error::Invalid(format!(
                "control value {s:?}: expected RUN, PAUSE or STOP"
            ))),
        }
    }
}

fn parse(rec: &Record) -> Result<Control, Error> {
    serde_json::from_value(rec.data.clone()).map_err(|e| Error::Corrupt {
        id: rec.id.clone(),
        reason: e.to_string(),
    })
}

impl Coordinator {
    /// The current control value (`Run` when never set).
    pub async fn control(&self) -> Result<Control, Error> {
        match retry(|| self.inner.store.get(CONTROL_ID)).await? {
            Some((rec, _)) => parse(&rec),
            None => Ok(Control::Run),
        }
    }

    /// Set the control value for the whole fleet.
    pub async fn set_control(&self, value: Control) -> Result<(), Error> {
        let store = self.inner.store.as_ref();
        loop {
            match retry(|| store.get(CONTROL_ID)).await? {
                None => {
                    let mut rec = Record::new(CONTROL_ID, RecordKind::Control, self.me());
                    rec.data = serde_json::json!(value);
                    if retry(|| store.create(&rec)).await?.is_some() {
                        return Ok(());
                    }
                }
                Some((mut rec, ver)) => {
                    rec.data = serde_json::json!(value);
                    rec.holder = Some(self.me().to_string());
                    if cas(store, &rec, ver).await?.is_some() {
                        return Ok(());
                    }
                }
            }
        }
    }
}
