//! A message while a call waits for approval: the person's answer to a
//! parked confirmation (yes, no, or a change shown back).

use serde_json::Value;

use super::driver::Fault;
use super::reading;
use super::{Outbox, Session};
use crate::catalog::Catalog;
use crate::confirmation::{Answer, check_arguments, interpret_answer};
use crate::delegate::{Forward, ForwardedAnswer, Question};
use crate::error::StepError;
use crate::input::{Confirmation, StartRun};
use crate::message::Message;
use crate::pending::Decision;
use crate::planner_mode::PlannerMode;
use crate::reading::{asks_the_model, request as reading_request};
use crate::run::{RunState, Waiting};
use crate::tool::ToolSpec;

impl Session {
    /// Whether `start` is a message for the parked call: the run waits for
    /// the person (a confirmation, a choice) and the message is for the same agent.
    pub(super) fn answers_confirmation(&self, start: &StartRun) -> bool {
        !self.conversation.ended
            && self.waits_for_person()
            && start.agent.as_ref().is_none_or(|a| a == &self.conversation.agent)
            && start.messages.iter().any(|m| matches!(m, Message::User { .. }))
    }

    /// Answers the parked call with the person's message: yes runs it, no
    /// declines it, a change shows the changed call back; anything else
    /// leaves it parked with a reminder. The message starts no run and does
    /// not enter the history (the parked call's answer comes first there).
    pub(super) fn answer_confirmation(&mut self, out: &mut Outbox, catalog: &Catalog, start: &StartRun) {
        let Some(RunState {
            run,
            waiting: Waiting::Confirmation { parked },
        }) = &self.run
        else {
            return;
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
        // A child's question: the words go to the child, which reads them.
        let child_call = match parked.question() {
            Some(Question::ChildConfirmation { pending, .. }) => Some(pending.call_id.clone()),
            Some(Question::ChildChoice { pending, .. }) => Some(pending.call_id.clone()),
            Some(Question::ChildElicitation { pending, .. }) => Some(pending.call_id.clone()),
            Some(Question::Choice { .. } | Question::Elicitation { .. }) | None => None,
        };
        if let Some(call_id) = child_call {
            let forward = Forward {
                call_id,
                answer: ForwardedAnswer::Text { text: text.to_string() },
            };
            return self.drive(out, catalog, |d, waiting| match waiting {
                Waiting::Confirmation { parked } => d.pass_on(parked, forward),
                other => Err(Fault::mismatch(other)),
            });
        }
        if let Some(Question::Choice { choice }) = parked.question() {
            let picked = choice.resolve(text);
            let text = text.to_string();
            return self.drive(out, catalog, |d, waiting| match (waiting, picked) {
                (Waiting::Confirmation { parked }, Some(index)) => d.choose(parked, index),
                (Waiting::Confirmation { parked }, None) => d.choice_unmatched(parked, &text),
                (other, _) => Err(Fault::mismatch(other)),
            });
        }
        let call = parked.call();
        let fallback;
        let spec = match catalog.tool(&call.name) {
            Some(spec) => spec,
            None => {
                fallback = ToolSpec::new(call.name.clone(), "", serde_json::json!({"type": "object"}));
                &fallback
            }
        };
        let rules = interpret_answer(text, spec, &call.arguments, start.at);
        // What the rules cannot read fully, the agent's model reads (as one
        // of the run's model calls), when the agent plans with one.
        let known = catalog.tool(&call.name).is_some();
        if known && start.planner == PlannerMode::Model && asks_the_model(&rules, text) {
            if let (Some(pending), Some(owner)) = (parked.pending(run.id()), catalog.agent(&self.conversation.agent)) {
                let request = reading_request(&owner.spec, spec, &pending, text);
                let rules_approve = matches!(rules, Answer::Approve);
                let (text, at) = (text.to_string(), start.at);
                return self.drive(out, catalog, |d, waiting| match waiting {
                    Waiting::Confirmation { parked } => d.read_answer(parked, request, rules_approve, text, at),
                    other => Err(Fault::mismatch(other)),
                });
            }
        }
        let decision = match rules {
            Answer::Approve => Decision::Approve,
            Answer::Decline { reason } => Decision::Deny { reason },
            Answer::Amend { arguments } => match check_arguments(spec, &arguments) {
                Ok(()) => Decision::Amend { arguments },
                Err(problem) => {
                    let reply = format!("I can't make that change: {problem}. The call is unchanged.");
                    return self.drive(out, catalog, |d, waiting| match waiting {
                        Waiting::Confirmation { parked } => d.remind(parked, reply),
                        other => Err(Fault::mismatch(other)),
                    });
                }
            },
            Answer::Unclear => {
                let reply = reading::ANSWER_PLEASE.to_string();
                return self.drive(out, catalog, |d, waiting| match waiting {
                    Waiting::Confirmation { parked } => d.remind(parked, reply),
                    other => Err(Fault::mismatch(other)),
                });
            }
        };
        let confirmation = Confirmation {
            run_id: run.id().clone(),
            call_id: call.id.clone(),
            fingerprint: parked.fingerprint().to_string(),
            decision,
            at: start.at,
        };
        self.drive(out, catalog, |d, waiting| match waiting {
            Waiting::Confirmation { parked } => d.confirmed(parked, confirmation),
            other => Err(Fault::mismatch(other)),
        });
    }

    /// Changed arguments for the parked call must fit its tool's schema.
    pub(super) fn check_amendment(&self, arguments: &Value, catalog: &Catalog) -> Result<(), StepError> {
        let Some(RunState {
            waiting: Waiting::Confirmation { parked },
            ..
        }) = &self.run
        else {
            return Err(StepError::NotAwaitingConfirmation);
        };
        if parked.question().is_some() {
            // A child's call: the child checks the change.
            return Ok(());
        }
        let Some(spec) = catalog.tool(&parked.call().name) else {
            return Ok(());
        };
        check_arguments(spec, arguments).map_err(|problem| StepError::AmendmentRefused { problem })
    }
}
