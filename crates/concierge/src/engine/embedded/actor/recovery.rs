//! Taking over a session another process left with a run unfinished:
//! claiming it, loading it, and the effects that resume its run.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use concierge_core::Effect;
use tokio::sync::{Semaphore, watch};

use super::super::store::Claim;
use super::Actor;
use crate::engine::RunStop;
use crate::error::{Error, Result};

/// How long a resumed call holds its slot at most: a long tool call lets
/// the next resumed run start.
const SLOT_HELD: Duration = Duration::from_secs(2);

/// When the runs taken over at start go on: all of them once every one is
/// loaded (`go`), then at most as many calls at once as `slots` has permits,
/// so ten thousand runs do not all open a connection to the model at once.
#[derive(Clone)]
pub(crate) struct Resume {
    pub(crate) go: watch::Receiver<bool>,
    pub(crate) slots: Arc<Semaphore>,
}

/// Runs `call`, first waiting for a slot when it resumes a run taken over at
/// start; the slot is given back when the call is done (or after
/// [`SLOT_HELD`], the call going on).
pub(super) async fn paced<T>(slots: Option<Arc<Semaphore>>, call: impl Future<Output = T>) -> T {
    let Some(slots) = slots else {
        return call.await;
    };
    // Closed slots (never, in practice) let the call go unpaced.
    let slot = slots.acquire_owned().await.ok();
    let mut call = std::pin::pin!(call);
    match tokio::time::timeout(SLOT_HELD, call.as_mut()).await {
        Ok(done) => done,
        Err(_) => {
            drop(slot);
            call.await
        }
    }
}

impl Actor {
    /// Issues the effects a loaded run still waits for, if this process can
    /// perform them all; otherwise the run waits, untouched, for one that can.
    pub(super) fn resume(&mut self) {
        if let Some(effects) = self.pending_resume() {
            self.perform(effects);
        }
    }

    /// The effects a loaded run still waits for, if this process can
    /// perform them all (else the run is marked stalled).
    fn pending_resume(&mut self) -> Option<Vec<Effect>> {
        let session = self.session.as_ref()?;
        let effects = session.pending_effects(&self.catalog());
        self.resumed_since_claim = true;
        if let Some(missing) = effects.iter().find_map(|e| self.shared.parts.executor.check(e).err()) {
            tracing::info!(session = %self.id, reason = %missing, "an unfinished run waits for a process that can run it");
            self.stalled = Some(missing);
            return None;
        }
        if effects.iter().any(|e| {
            matches!(
                e,
                Effect::CallModel { .. } | Effect::CallTool { .. } | Effect::CallAgent(_)
            )
        }) {
            tracing::info!(session = %self.id, effects = effects.len(), "resuming an unfinished run");
            self.resumed_run = session.active_run().cloned();
        }
        Some(effects)
    }

    /// An error for a writer when the session's run cannot go on here.
    pub(super) fn check_stalled(&self) -> Result<()> {
        match &self.stalled {
            Some(reason) => Err(Error::RunStartFailed(format!(
                "session {} has an unfinished run this process cannot resume ({reason}); \
                 it resumes in a process that has it, or end the session",
                self.id
            ))),
            None => Ok(()),
        }
    }

    /// Takes the session over and loads it: where its run will stop, and
    /// the effects that resume it (`None` when there is nothing to resume here).
    pub(super) async fn recover(&mut self) -> (Option<RunStop>, Option<Vec<Effect>>) {
        if self.owned || self.shared.settings.read_only {
            return (None, None);
        }
        match self.shared.store.claim(&self.id, &"unknown".into()).await {
            Ok(Claim::Owned { session_no }) => self.took(session_no),
            Ok(Claim::Busy(_)) => return (None, None),
            Err(error) => {
                tracing::warn!(session = %self.id, %error, "cannot take over the session");
                return (None, None);
            }
        }
        if let Err(error) = self.load().await {
            tracing::error!(session = %self.id, %error, "an unfinished run cannot be resumed here; it is left for a process that can");
            self.shared.stall(&self.id);
            self.session = None;
            self.release_as(true);
            return (None, None);
        }
        let effects = self.pending_resume();
        if self.stalled.is_some() {
            self.shared.stall(&self.id);
            return (None, None);
        }
        (self.stop_of_active(), effects)
    }
}
