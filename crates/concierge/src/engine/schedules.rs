//! Schedules on an engine that keeps their time itself (Temporal: a durable
//! timer in a workflow): the engine says when to look, the runtime fires
//! what is due, through the one link back to it, [`ScheduleFiring`].

use std::sync::{Arc, OnceLock, Weak};

use concierge_core::Timestamp;
use futures::future::BoxFuture;

use crate::error::{Error, Result};

/// What fires due schedules: the runtime, once it is built.
pub trait FireSchedules: Send + Sync {
    /// When the next schedule is due, if one is.
    fn next_due(&self) -> BoxFuture<'static, Result<Option<Timestamp>>>;

    /// Fires the schedules due now, each once for its time; true if more may
    /// be due at once.
    fn fire_due(&self) -> BoxFuture<'static, Result<bool>>;
}

/// The link from an engine to what fires schedules, set once the runtime is
/// built (the engine opens first). Cheap to clone.
#[derive(Clone, Default)]
pub struct ScheduleFiring {
    firer: Arc<OnceLock<Weak<dyn FireSchedules>>>,
}

impl std::fmt::Debug for ScheduleFiring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScheduleFiring")
            .field("set", &self.firer.get().is_some())
            .finish()
    }
}

impl ScheduleFiring {
    /// Links `firer` (held weakly: a runtime that is gone fires nothing).
    pub fn set(&self, firer: Weak<dyn FireSchedules>) {
        let _ = self.firer.set(firer);
    }

    fn firer(&self) -> Result<Arc<dyn FireSchedules>> {
        self.firer.get().and_then(Weak::upgrade).ok_or_else(|| {
            Error::RunStartFailed("this process's runtime is not running, so it fires no schedule".into())
        })
    }

    /// When the next schedule is due, if one is.
    pub async fn next_due(&self) -> Result<Option<Timestamp>> {
        self.firer()?.next_due().await
    }

    /// Fires the schedules due now; true if more may be due at once.
    pub async fn fire_due(&self) -> Result<bool> {
        self.firer()?.fire_due().await
    }
}
