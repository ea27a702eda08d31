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
