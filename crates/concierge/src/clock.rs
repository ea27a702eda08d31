//! The one clock: the core never reads one (every input carries its time),
//! so the engines, models and tools stamp what they hand it from here.

use std::time::SystemTime;

use concierge_core::Timestamp;

/// The time now, as the core counts it: what every engine stamps on an
/// input it takes from outside.
pub fn now() -> Timestamp {
    SystemTime::now().into()
}
