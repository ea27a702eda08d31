//! Whether a runtime has resumed what the processes before it left
//! unfinished ([`Readiness`]): a server answers as soon as it listens
//! (liveness), and says separately when every unfinished run is back under
//! way (readiness), so a load balancer sends it work only then.

use serde::Serialize;

use super::Runtime;
use crate::error::{Error, Result};

/// How far a runtime is with resuming the unfinished runs it found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Readiness {
    /// It is loading and resuming them (in the background, when the
    /// runtime was built with [`RuntimeBuilder::recover_in_background`](super::RuntimeBuilder::recover_in_background)).
    Recovering,
    /// Every unfinished run it found is under way again.
    Ready,
    /// They could not be resumed (the store failed): the runtime still
    /// serves, but runs left by the process before may wait.
    Failed {
        /// Why, in words.
        error: String,
    },
}

impl Runtime {
    /// How far the runtime is with resuming unfinished runs.
    pub fn readiness(&self) -> Readiness {
        self.inner.readiness.borrow().clone()
    }

    /// Waits until the unfinished runs found at open are resumed (at once
    /// unless the runtime recovers in the background); an error says why
    /// they could not be.
    pub async fn ready(&self) -> Result<()> {
        let mut watch = self.inner.readiness.subscribe();
        let settled = watch.wait_for(|r| *r != Readiness::Recovering).await.map(|r| r.clone());
        match settled {
            Ok(Readiness::Failed { error }) => Err(Error::Storage(error)),
            _ => Ok(()),
        }
    }

    /// Resumes the unfinished runs the engine finds, then says the runtime
    /// is ready (or why not).
    pub(super) async fn recover(&self) -> Result<()> {
        if let Err(error) = self.inner.engine.recover().await {
            self.inner.readiness.send_replace(Readiness::Failed {
                error: error.to_string(),
            });
            return Err(error);
        }
        let resumed = self.inner.engine.take_resumed();
        if let Ok(mut recovered) = self.inner.recovered.lock() {
            *recovered = resumed.iter().map(|(id, _)| id.clone()).collect();
        }
        if let Ok(mut stops) = self.inner.resumed.lock() {
            stops.extend(resumed);
        }
        self.inner.readiness.send_replace(Readiness::Ready);
        Ok(())
    }
}
