//! Time as data: the core never reads a clock; every input carries its time.

use serde::{Deserialize, Serialize};

/// Milliseconds since the Unix epoch, as stamped by the engine on an input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(pub u64);

impl Timestamp {
    /// Milliseconds elapsed from `earlier` to `self` (zero if `earlier` is later).
    pub fn millis_since(self, earlier: Timestamp) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl From<std::time::SystemTime> for Timestamp {
    /// The time a clock gave, in milliseconds since the Unix epoch (the
    /// epoch itself for a time before it; the end of time past `u64`).
    fn from(time: std::time::SystemTime) -> Self {
        let millis = time
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default();
        Timestamp(u64::try_from(millis).unwrap_or(u64::MAX))
    }
}
