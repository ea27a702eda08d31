//! Questions a running call puts to the person (MCP elicitation): the run
//! waits for the answer while the call stays in flight; the answer is
//! recorded on the call's slot (so a call issued again after a crash gets
//! it without asking again) and handed to the engine to give to the call.

use super::driver::{Driver, Fault, Flow, Next, output};
use super::{Outbox, Session};
use crate::batch::{Batch, Parked};
use crate::catalog::Catalog;
use crate::delegate::{Forward, ForwardedAnswer};
use crate::effect::Effect;
use crate::elicitation::{Elicitation, ElicitationAction, ElicitationAnswer, PendingElicitation};
use crate::error::StepError;
use crate::event::EventKind;
use crate::id::CallId;
use crate::input::StartRun;
use crate::message::Message;
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
            session: None,
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
            if let Some(open) = waiting.running_question(self.run.id()) {
                self.ask_again(open, None);
            }
        }
        Ok(next)
    }
}

impl Driver<'_> {
    /// The person answered the question a child's running call asks: the
    /// parked call is issued again, carrying the answer to the child.
    pub(super) fn answered_for_child(
        &mut self,
        parked: Parked,
        call_id: CallId,
        question: u32,
        answer: ElicitationAnswer,
    ) -> Flow {
        self.emit(EventKind::ElicitationAnswered {
            call_id: call_id.clone(),
            question,
            answer: answer.clone(),
        });
        let forward = Forward {
            call_id,
            answer: ForwardedAnswer::Elicitation { question, answer },
        };
        self.pass_on(parked, forward)
    }
}

impl Session {
    /// Whether `start` is a message for the question a running call asks.
    pub(super) fn answers_question(&self, start: &StartRun) -> bool {
        !self.conversation.ended
            && self.pending_elicitation().is_some_and(|p| p.session.is_none())
            && start.agent.as_ref().is_none_or(|a| a == &self.conversation.agent)
            && start.messages.iter().any(|m| matches!(m, Message::User { .. }))
    }

    /// Answers the open question with the person's words; words that do
    /// not answer it (or do not fit the form) show the question again with
    /// what was wrong. The message starts no run and does not enter the
    /// history.
    pub(super) fn answer_question(
        &mut self,
        out: &mut Outbox,
        catalog: &Catalog,
        start: &StartRun,
    ) -> Result<(), StepError> {
        let Some(pending) = self.pending_elicitation() else {
            return Ok(());
        };
        let text = start
            .messages
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::User { content } => Some(content.as_str()),
                _ => None,
            })
            .unwrap_or_default();
        let read = ElicitationAnswer::from_words(text, &pending.elicitation).and_then(|answer| {
            if answer.action == ElicitationAction::Accept {
                pending.elicitation.check(answer.content.as_ref())?;
            }
            Ok(answer)
        });
        let state = self.active(&pending.run_id)?;
        match read {
            Ok(answer) => {
                let slot = state.expect_answer(&pending.call_id, pending.question, &answer)?;
                let (call_id, question) = (pending.call_id, pending.question);
                self.drive(out, catalog, |d, waiting| {
                    d.answered(waiting, slot, call_id, question, answer)
                });
            }
            Err(problem) => {
                let reply = format!("I could not take that as the answer: {problem}.");
                self.drive(out, catalog, |d, waiting| {
                    d.ask_again(pending, Some(reply));
                    Ok(Next::Wait(waiting))
                });
            }
        }
        Ok(())
    }
}
