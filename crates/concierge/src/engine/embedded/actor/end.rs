//! Ending a session (or only its run in progress) and erasing it.

use concierge_core::{Input, RunOutput, Session};

use super::Actor;
use crate::engine::now;
use crate::error::{Error, Result};

impl Actor {
    /// Erases the session: ends its run in progress, then deletes all that
    /// is stored of it. The actor leaves memory after it.
    pub(super) async fn erase(&mut self) -> Result<()> {
        self.own(&"unknown".into()).await?;
        if self
            .session
            .as_ref()
            .is_some_and(|s| s.active_run().is_some() && !s.is_ended())
        {
            let reason = "the conversation was erased".to_string();
            self.apply(Input::End { reason, at: now() }).await?;
        }
        self.shared.store.erase(&self.id).await?;
        self.session = None;
        self.owned = false;
        Ok(())
    }

    /// Ends the session, or with `run_only` its run in progress alone.
    pub(super) async fn end(&mut self, reason: String, run_only: bool) -> Result<Option<RunOutput>> {
        self.own(&"unknown".into()).await?;
        let Some(session) = &self.session else {
            return Err(Error::SessionNotFound(self.id.clone()));
        };
        let active = session.active_run().cloned();
        if run_only {
            if active.is_none() {
                return Ok(None);
            }
            self.resume_if_loaded_idle();
            self.apply(Input::CancelRun { reason, at: now() }).await?;
            self.stalled = None;
        } else {
            self.stalled = None;
            self.apply(Input::End { reason, at: now() }).await?;
        }
        Ok(match (active, self.session.as_ref().and_then(Session::last_output)) {
            (Some(run), Some(output)) if output.run_id == run => Some(output.clone()),
            _ => None,
        })
    }
}
