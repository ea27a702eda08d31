//! Questions a running call puts to the person (MCP elicitation): the run
//! waits for the answer while the call stays in flight; the answer is
//! recorded on the call's slot (so a call issued again after a crash gets
//! it without asking again) and handed to the engine to give to the call.

use super::driver::{Driver, Fault, Flow, Next, output};
use crate::batch::Batch;
use crate::effect::Effect;
use crate::elicitation::{Elicitation, ElicitationAnswer, PendingElicitation};
use crate::event::EventKind;
use crate::id::CallId;
use crate::output::RunStatus;
use crate::run::Waiting;

impl Driver<'_> {
    /// The running call at `slot` asks the person `elicitation`: the
    /// question is recorded, shown, and the run's output says it waits.
    pub(super) fn elicit(&mut self, mut batch: Batch, slot: usize, elicitation: Elicitation) -> Flow {
        let Some(call_id) = batch.slot(slot).map(|s| s.call.id.clone()) else {
            return Err(Fault::new("the call that asks is not in the batch"));
        };
        let Some(question) = batch.elicit(slot, elicitation.clone()) else {
            return Err(Fault::new("the call that asks is not running"));
        };
        let pending = PendingElicitation {
            run_id: self.run.id().clone(),
            call_id,
            question,
            text: elicitation.text(),
            elicitation,
        };
        self.ask_again(pending, None);
        self.advance(batch)
    }

    /// Shows the open question (again, with `reply` before it when the
    /// person's words did not answer it) and hands the engine the output.
    pub(super) fn ask_again(&mut self, pending: PendingElicitation, reply: Option<String>) {
        self.emit(EventKind::ElicitationRequested {
            pending: pending.clone(),
        });
        let text = match reply {
            Some(reply) => format!("{reply}\n\n{}", pending.text),
            None => pending.text.clone(),
        };
        let mut out = output(self.conv, &self.run, RunStatus::AwaitingInput, Some(text), None);
        out.pending_elicitation = Some(pending);
        self.conv.last_output = Some(out.clone());
        self.out.effects.push(Effect::AwaitUser(out));
    }

    /// The person answered question `question` of the running call at `slot`.
    pub(super) fn answered(
        &mut self,
        waiting: Waiting,
        slot: usize,
        call_id: CallId,
        question: u32,
        answer: ElicitationAnswer,
    ) -> Flow {
        let Waiting::Tools { batch } = waiting else {
            return Err(Fault::mismatch(waiting));
        };
        let mut batch = batch.into_batch();
        if !batch.answer(slot, question, answer.clone()) {
            return Err(Fault::new("the question was answered already"));
        }
        self.emit(EventKind::ElicitationAnswered {
            call_id: call_id.clone(),
            question,
            answer: answer.clone(),
        });
        self.out.effects.push(Effect::AnswerElicitation {
            run_id: self.run.id().clone(),
            call_id,
            question,
            answer,
        });
        let next = self.advance(batch)?;
        if let Next::Wait(waiting) = &next {
            // Another call of the batch may still wait for the person.
            if let Some(open) = waiting.pending_elicitation(self.run.id()) {
                self.ask_again(open, None);
            }
        }
        Ok(next)
    }
}
