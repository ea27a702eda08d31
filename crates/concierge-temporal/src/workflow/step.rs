//! Stepping the core: the session takes an input, and the workflow keeps
//! its events, records its stops and queues its other effects.

use concierge::engine::refuse_invalid_ask;
use concierge_core::{Effect, Input, Session, StepError};

use super::SessionWorkflow;
use super::state::STOPS_KEPT;
use crate::wire::{ChildOutcome, Refusal};

impl SessionWorkflow {
    /// Steps `input`: keeps its events, records the stops, queues the other
    /// effects. A call parked for the person whose arguments would fail
    /// validation is not put to them: it fails at once and the run goes on
    /// (as on the embedded engine).
    pub(super) fn apply(&mut self, input: Input) -> Result<(), StepError> {
        let catalog = match &input {
            Input::StartRun(start) => self.catalog(start.catalog_version.as_deref()),
            _ => self.catalog(self.st.session.as_ref().and_then(Session::catalog_version)),
        };
        let Some(session) = self.st.session.as_mut() else {
            return Err(StepError::Idle);
        };
        let step = session.step(input, &catalog)?;
        self.st.ended = session.is_ended();
        if let Some(last) = step.events.last() {
            self.st.updated_at = last.at;
        }
        let invalid = refuse_invalid_ask(&step, self.executor.tools(), self.st.updated_at);
        self.st.events.extend(step.events);
        for effect in step.effects {
            match effect {
                Effect::AwaitUser(_) if invalid.is_some() => {}
                Effect::AwaitUser(output) | Effect::Finish(output) => {
                    if let Some(to) = self.st.report_to.take() {
                        self.report(to, ChildOutcome::Stopped(Box::new(output.clone())));
                    }
                    self.st.stops += 1;
                    self.st.outputs.push_back((self.st.stops, output));
                    if self.st.outputs.len() > STOPS_KEPT {
                        self.st.outputs.pop_front();
                    }
                }
                other => self.st.queued.push(other),
            }
        }
        match invalid {
            Some(input) => self.apply(input),
            None => Ok(()),
        }
    }

    /// Why an input finds no session to step: the session does not exist
    /// (yet), or the workflow has not begun.
    pub(super) fn refusal(&self) -> Refusal {
        match &self.st.id {
            Some(session) => Refusal::NoSession {
                session: session.clone(),
            },
            None => Refusal::Other {
                message: "the session workflow has not begun".into(),
            },
        }
    }
}
