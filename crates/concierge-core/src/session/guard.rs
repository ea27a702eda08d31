//! A guardrail that tripped ends the run: the event, the sentence, the end.
//!
//! The verdict comes in the input (the runtime checked the text before it
//! was journaled, see [`crate::guardrail`]); here the run reacts to it.

use crate::batch::Batch;
use crate::event::EventKind;
use crate::guardrail::GuardrailTrip;
use crate::message::Message;
use crate::output::RunStatus;
use crate::run::Waiting;
use crate::tool::ToolOutcome;

use super::driver::{Driver, Flow};

/// The trip a tool's outcome carries, if a guardrail stopped it.
pub(super) fn tool_trip(outcome: &ToolOutcome) -> Option<GuardrailTrip> {
    match outcome {
        ToolOutcome::Error(error) => error.guardrail.as_deref().cloned(),
        ToolOutcome::Ok(_) => None,
    }
}

impl Driver<'_> {
    /// Ends the run for `trip`: what was in flight is abandoned, then the
    /// `guardrail_tripped` event, the agent's sentence and the output.
    pub(super) fn tripped(&mut self, batch: Option<Batch>, trip: GuardrailTrip) -> Flow {
        if let Some(batch) = batch {
            self.abandon(batch, "a guardrail ended the run before the call finished");
        }
        self.emit(EventKind::GuardrailTripped {
            stage: trip.stage,
            guardrail: trip.guardrail.clone(),
            reason: trip.reason.clone(),
            tool: trip.tool.clone(),
        });
        let text = trip.sentence();
        let agent = self.conv.agent.clone();
        self.say(Message::assistant(agent, text.clone()));
        self.run.set_guardrail(trip);
        self.close(RunStatus::Blocked, Some(text))
    }

    /// A guardrail tripped while the run waited: on the model, or on a
    /// call of its batch (whose outcome `settled` records first).
    pub(super) fn tripped_waiting(
        &mut self,
        waiting: Waiting,
        settled: Option<(usize, ToolOutcome, u64)>,
        trip: GuardrailTrip,
    ) -> Flow {
        let batch = match waiting {
            Waiting::Model { .. } => None,
            Waiting::Tools { batch } => {
                let mut batch = batch.into_batch();
                if let Some((slot, outcome, duration_ms)) = settled {
                    self.settle(&mut batch, slot, outcome, duration_ms);
                }
                Some(batch)
            }
            Waiting::Confirmation { parked } | Waiting::Reading { parked, .. } => Some(parked.into_batch()),
        };
        self.tripped(batch, trip)
    }
}
