//! Tool calls: a plan's calls go through the gate into a batch; the batch
//! runs, parks on calls that need approval, and completes, after which the
//! run plans again (or synthesizes, after a cap).

use super::driver::{Driver, Fault, Flow, Next, park_output};
use crate::batch::{Batch, Completed, Parked, Progress, SlotState};
use crate::blackboard::ToolExecution;
use crate::canonical::fingerprint;
use crate::catalog::Catalog;
use crate::catalog::ResolvedAgent;
use crate::confirmation::confirmation_message;
use crate::delegate::{Forward, ForwardedAnswer, Question};
use crate::effect::Effect;
use crate::event::EventKind;
use crate::gate::{Gate, Verdict, fill_from_blackboard};
use crate::id::CallId;
use crate::input::Confirmation;
use crate::message::{Message, ToolCall};
use crate::pending::Decision;
use crate::phase::Phase;
use crate::planner::PlannedCall;
use crate::policy::Cap;
use crate::run::Waiting;
use crate::tool::{ToolError, ToolErrorKind, ToolOutcome, ToolSpec};

/// "Changed priority to high, due to Friday." for the fields that differ.
fn describe_changes(before: &serde_json::Value, after: &serde_json::Value) -> String {
    let empty = serde_json::Map::new();
    let (before, after) = (
        before.as_object().unwrap_or(&empty),
        after.as_object().unwrap_or(&empty),
    );
    let parts: Vec<String> = after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(*v))
        .map(|(k, v)| {
            format!(
                "{} to {}",
                crate::confirmation::humanize(k),
                crate::confirmation::readable(v)
            )
        })
        .chain(
            before
                .keys()
                .filter(|k| !after.contains_key(*k))
                .map(|k| format!("removed {}", crate::confirmation::humanize(k))),
        )
        .collect();
    if parts.is_empty() {
        "Nothing changed.".into()
    } else {
        format!("Changed {}.", parts.join(", "))
    }
}

/// Whether two calls must not run at the same time: their tools write the
/// same thing.
fn conflicts(catalog: &Catalog, a: &ToolCall, b: &ToolCall) -> bool {
    match (catalog.tool(&a.name), catalog.tool(&b.name)) {
        (Some(a), Some(b)) => a.conflicts_with(b),
        _ => false,
    }
}

/// A call the gate answered without running it.
struct Answered {
    call: ToolCall,
    fingerprint: String,
    outcome: ToolOutcome,
    reused_from: Option<CallId>,
}

impl Driver<'_> {
    /// Numbers the planned calls, records them in the history, checks each
    /// at the gate, starts those that may run, and advances the batch.
    pub(super) fn select_tools(&mut self, text: String, planned: Vec<PlannedCall>) -> Flow {
        let catalog = self.catalog;
        let Some(resolved) = catalog.agent(&self.conv.agent) else {
            return Err(Fault::new(format!("agent {} is not in the catalog", self.conv.agent)));
        };
        self.move_to(Phase::ToolSelection)?;
        let calls: Vec<ToolCall> = planned
            .into_iter()
            .map(|p| {
                let id = CallId::new(format!("call_{}", self.conv.next_call));
                self.conv.next_call += 1;
                let name = p.name.into();
                let mut arguments = p.arguments;
                if let Some(spec) = resolved.has_tool(&name).then(|| catalog.tool(&name)).flatten() {
                    fill_from_blackboard(spec, &self.conv.blackboard, &mut arguments);
                }
                ToolCall { id, name, arguments }
            })
            .collect();
        let agent = self.conv.agent.clone();
        self.say(Message::Assistant {
            agent,
            content: text,
            tool_calls: calls.clone(),
        });
        for call in &calls {
            self.emit(EventKind::ToolRequested {
                call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments: call.arguments.clone(),
            });
        }
        let (batch, answered, cap) = self.check_calls(resolved, calls);
        if let Some(cap) = cap {
            self.reach(cap);
        }
        for answer in answered {
            if let Some(from) = &answer.reused_from {
                self.emit(EventKind::ToolReused {
                    call_id: answer.call.id.clone(),
                    tool: answer.call.name.clone(),
                    from: from.clone(),
                });
            }
            self.record(answer.call, answer.fingerprint, answer.outcome, 0, answer.reused_from);
        }
        let anything_to_run = batch.slots().iter().any(|s| s.state != SlotState::AwaitingApproval);
        let batch = if anything_to_run {
            self.move_holding(Phase::ToolExecution, batch)?
        } else {
            batch
        };
        let running: Vec<usize> = (0..batch.slots().len())
            .filter(|&i| batch.slots()[i].state == SlotState::Running)
            .collect();
        for index in running {
            self.issue(&batch, index);
        }
        self.advance(batch)
    }

    /// Issues the effect of the batch's running slot `index`: a tool call,
    /// or a child run for an agent tool (announced by `child_started` the
    /// first time).
    fn issue(&mut self, batch: &Batch, index: usize) {
        let Some(slot) = batch.slot(index) else {
            return;
        };
        let effect = self.conv.call_effect(self.catalog, &self.run, slot);
        if let Effect::CallAgent(call) = &effect {
            if call.answer.is_none() && slot.attempt == 0 {
                self.emit(EventKind::ChildStarted {
                    call_id: call.call.id.clone(),
                    agent: call.agent.clone(),
                    child: call.session.clone(),
                });
            }
        }
        self.out.effects.push(effect);
    }

    /// Puts each call through the gate. Returns the batch, the calls the
    /// gate answered (to record once every call is checked) and the cap a
    /// refusal reached.
    fn check_calls(&mut self, agent: &ResolvedAgent, calls: Vec<ToolCall>) -> (Batch, Vec<Answered>, Option<Cap>) {
        let mut batch = Batch::default();
        let mut answered = Vec::new();
        let mut reached = None;
        for call in calls {
            let fp = fingerprint(&call.arguments);
            let verdict = Gate {
                agent,
                catalog: self.catalog,
                blackboard: &self.conv.blackboard,
                policy: self.run.policy(),
                tool_calls: self.run.tool_calls(),
                handing_off: batch.hands_off(),
                depth: self.conv.depth(),
                agent_calls: self.run.agent_calls(),
                agent_budget: self.conv.agent_budget(&self.run),
                replay: self.run.replay(),
            }
            .check(&call, &fp);
            if verdict.counts() {
                self.run.count_tool_call();
                if self.catalog.tool(&call.name).is_some_and(|s| s.agent.is_some()) {
                    self.run.count_agent_call();
                }
            }
            let mut answer = |call: &ToolCall, outcome: ToolOutcome, reused_from: Option<CallId>| {
                answered.push(Answered {
                    call: call.clone(),
                    fingerprint: fp.clone(),
                    outcome: outcome.clone(),
                    reused_from,
                });
                SlotState::Done { outcome }
            };
            let state = match verdict {
                Verdict::Handoff(handoff) => {
                    let outcome = handoff.answer();
                    batch.hand_off(handoff);
                    SlotState::Done { outcome }
                }
                Verdict::Refuse { error, cap } => {
                    if reached.is_none() {
                        reached = cap;
                    }
                    answer(&call, ToolOutcome::Error(error), None)
                }
                Verdict::Reuse { outcome, from } => answer(&call, outcome, Some(from)),
                // A call that writes what an earlier call of the batch writes waits for it.
                Verdict::Run
                    if batch.slots().iter().any(|earlier| {
                        matches!(earlier.state, SlotState::Running | SlotState::Queued)
                            && conflicts(self.catalog, &earlier.call, &call)
                    }) =>
                {
                    SlotState::Queued
                }
                Verdict::Run => SlotState::Running,
                Verdict::AwaitApproval => SlotState::AwaitingApproval,
            };
            batch.push(call, fp, state);
        }
        (batch, answered, reached)
    }

    /// Records a call's outcome: the failure count, what the tool provides,
    /// the execution log and the `tool_finished` event.
    fn record(
        &mut self,
        call: ToolCall,
        fingerprint: String,
        outcome: ToolOutcome,
        duration_ms: u64,
        reused_from: Option<CallId>,
    ) {
        self.run.record_outcome(&outcome);
        let changed = match (&outcome, self.catalog.tool(&call.name), &reused_from) {
            (ToolOutcome::Ok(_), Some(spec), None) if !spec.annotations.read_only && spec.agent.is_none() => {
                Some(changed_by(spec))
            }
            _ => None,
        };
        if let (ToolOutcome::Ok(value), Some(spec)) = (&outcome, self.catalog.tool(&call.name)) {
            self.conv.blackboard.take_provided(spec, value);
        }
        self.conv.blackboard.log.push(ToolExecution {
            run_id: self.run.id().clone(),
            call_id: call.id.clone(),
            tool: call.name.clone(),
            arguments: call.arguments,
            fingerprint,
            duration_ms,
            outcome: outcome.clone(),
            reused_from,
            forked: false,
        });
        self.emit(EventKind::ToolFinished {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            ok: outcome.is_ok(),
            duration_ms,
            outcome,
        });
        if let Some(changed) = changed {
            self.emit(EventKind::DataChanged {
                call_id: call.id,
                tool: call.name,
                changed,
            });
        }
    }

    /// Gives slot `index` its outcome and records it.
    pub(super) fn settle(&mut self, batch: &mut Batch, index: usize, outcome: ToolOutcome, duration_ms: u64) {
        if let Some(slot) = batch.settle(index, outcome.clone()) {
            let (call, fp) = (slot.call.clone(), slot.fingerprint.clone());
            self.record(call, fp, outcome, duration_ms, None);
        }
    }

    /// Gives every open call of the batch an error outcome.
    pub(super) fn cancel_open(&mut self, batch: &mut Batch, kind: ToolErrorKind, message: &str) {
        for index in batch.open_slots() {
            self.settle(batch, index, ToolOutcome::Error(ToolError::new(kind, message)), 0);
        }
    }

    /// Cancels the open calls and appends every result, so the history never
    /// holds a call without its answer.
    pub(super) fn abandon(&mut self, mut batch: Batch, message: &str) {
        self.cancel_open(&mut batch, ToolErrorKind::Cancelled, message);
        self.append_results(batch.into_results());
    }

    fn append_results(&mut self, results: Vec<(ToolCall, ToolOutcome)>) {
        let agent = self.conv.agent.clone();
        for (call, outcome) in results {
            self.say(Message::Tool {
                agent: agent.clone(),
                call_id: call.id,
                tool: call.name,
                outcome,
            });
        }
    }

    /// A running call finished.
    pub(super) fn tool_finished(
        &mut self,
        mut batch: Batch,
        slot: usize,
        outcome: ToolOutcome,
        duration_ms: u64,
    ) -> Flow {
        self.settle(&mut batch, slot, outcome, duration_ms);
        self.advance(batch)
    }

    /// Waits while calls run; once none does, analyses, then parks on a call
    /// awaiting approval or completes the batch.
    pub(super) fn advance(&mut self, mut batch: Batch) -> Flow {
        let catalog = self.catalog;
        for index in batch.start_queued(|a, b| conflicts(catalog, a, b)) {
            self.issue(&batch, index);
        }
        let batch = if batch.running_calls().next().is_none() && self.run.phase() == Phase::ToolExecution {
            self.move_holding(Phase::Analysis, batch)?
        } else {
            batch
        };
        match batch.advance() {
            Progress::InFlight(batch) => Ok(Next::Wait(Waiting::Tools { batch })),
            Progress::Parked(parked) => self.park(parked),
            Progress::Completed(completed) => self.complete(completed),
        }
    }

    /// Parks the run on a call for the person's approval.
    fn park(&mut self, parked: Parked) -> Flow {
        let parked = self.move_holding(Phase::Clarifying, parked)?;
        self.run.park(self.out.at);
        self.ask(parked, None)
    }

    /// Asks the person about the parked call (again, after a change or a
    /// message that did not answer): the question in words, the
    /// `awaiting_confirmation` event, the output with `reply` before it.
    fn ask(&mut self, mut parked: Parked, reply: Option<String>) -> Flow {
        if parked.question().is_none() {
            let call = parked.call();
            let message = match self.catalog.tool(&call.name) {
                Some(spec) => confirmation_message(spec, &call.arguments),
                None => confirmation_message(
                    &crate::tool::ToolSpec::new(call.name.clone(), "", serde_json::json!({"type": "object"})),
                    &call.arguments,
                ),
            };
            parked.set_message(message);
        }
        if let Some(pending) = parked.pending_choice(self.run.id()) {
            self.emit(EventKind::ChoiceRequested { pending });
        } else if let Some(pending) = parked.pending(self.run.id()) {
            self.emit(EventKind::AwaitingConfirmation { pending });
        } else if let Some(pending) = parked.pending_elicitation() {
            self.emit(EventKind::ElicitationRequested { pending });
        }
        let output = park_output(self.conv, &self.run, &parked, reply);
        self.conv.last_output = Some(output.clone());
        self.out.effects.push(Effect::AwaitUser(output));
        Ok(Next::Wait(Waiting::Confirmation { parked }))
    }

    /// A running call asked the person something (a choice, a child's
    /// question): it waits for the answer; the run parks on it once the
    /// rest of the batch is done.
    pub(super) fn tool_asked(&mut self, mut batch: Batch, slot: usize, question: Question) -> Flow {
        if let Question::Choice { choice } = &question {
            if choice.options.is_empty() {
                let error = ToolError::failed("the tool asked the person to choose, but offered no options");
                self.settle(&mut batch, slot, ToolOutcome::Error(error), 0);
                return self.advance(batch);
            }
        }
        batch.ask(slot, question);
        self.advance(batch)
    }

    /// The person answered a question a child run asked: the call is issued
    /// again, carrying the answer to the child.
    pub(super) fn pass_on(&mut self, parked: Parked, answer: Forward) -> Flow {
        self.run.resume(self.out.at);
        let (batch, index) = parked.pass_on(answer);
        let batch = self.move_holding(Phase::ToolExecution, batch)?;
        self.issue(batch.batch(), index);
        Ok(Next::Wait(Waiting::Tools { batch }))
    }

    /// The person picked option `index` of the parked call's choice: the
    /// option's id goes into the call's arguments and the call runs again.
    pub(super) fn choose(&mut self, parked: Parked, index: usize) -> Flow {
        let Some(Question::Choice { choice }) = parked.question().cloned() else {
            return Err(Fault::new("the run was not waiting for a choice"));
        };
        let Some(option) = choice.options.get(index) else {
            return Err(Fault::new("the chosen option does not exist"));
        };
        let call_id = parked.call().id.clone();
        let mut arguments = parked.call().arguments.clone();
        if let Some(map) = arguments.as_object_mut() {
            map.insert(choice.argument.clone(), option.id.clone());
        }
        self.emit(EventKind::ChoiceResolved {
            call_id: call_id.clone(),
            chosen: Some(option.id.clone()),
        });
        self.rewrite_call(&call_id, &arguments);
        self.run.resume(self.out.at);
        let fp = fingerprint(&arguments);
        let (batch, index) = parked.rerun(arguments, fp);
        let batch = self.move_holding(Phase::ToolExecution, batch)?;
        self.issue(batch.batch(), index);
        Ok(Next::Wait(Waiting::Tools { batch }))
    }

    /// The person's answer matched no option: the call ends with what was
    /// asked and answered, for the planner to act on.
    pub(super) fn choice_unmatched(&mut self, parked: Parked, text: &str) -> Flow {
        let Some(Question::Choice { choice }) = parked.question().cloned() else {
            return Err(Fault::new("the run was not waiting for a choice"));
        };
        let options: Vec<String> = choice
            .options
            .iter()
            .enumerate()
            .map(|(i, o)| format!("{}. {}", i + 1, o.label))
            .collect();
        let message = format!(
            "the person was asked \"{}\" (options: {}) and answered \"{}\", which matches none of the options",
            choice.question.trim(),
            options.join("; "),
            text.trim()
        );
        self.emit(EventKind::ChoiceResolved {
            call_id: parked.call().id.clone(),
            chosen: None,
        });
        self.run.resume(self.out.at);
        let (mut batch, slot) = parked.decline();
        let outcome = ToolOutcome::Error(ToolError::new(ToolErrorKind::MissingInformation, message));
        self.settle(&mut batch, slot, outcome, 0);
        let batch = self.move_holding(Phase::Analysis, batch)?;
        self.advance(batch)
    }

    /// Gives the call `call_id` in the history new arguments (so the
    /// planner sees what runs).
    fn rewrite_call(&mut self, call_id: &CallId, arguments: &serde_json::Value) {
        for message in self.conv.history.iter_mut().rev() {
            if let Message::Assistant { tool_calls, .. } = message {
                if let Some(call) = tool_calls.iter_mut().find(|c| &c.id == call_id) {
                    call.arguments = arguments.clone();
                    return;
                }
            }
        }
    }

    /// The person wrote something that does not answer the parked call: it
    /// stays parked, and they are reminded what it waits for.
    pub(super) fn remind(&mut self, parked: Parked, reply: String) -> Flow {
        self.ask(parked, Some(reply))
    }

    /// The person answered the parked call.
    pub(super) fn confirmed(&mut self, parked: Parked, confirmation: Confirmation) -> Flow {
        if let Some(Question::ChildConfirmation { pending, .. }) = parked.question() {
            // The child's call: the decision is passed on to the child.
            let forward = Forward {
                call_id: pending.call_id.clone(),
                answer: ForwardedAnswer::Decision {
                    fingerprint: confirmation.fingerprint,
                    decision: confirmation.decision.clone(),
                },
            };
            self.emit(EventKind::ConfirmationResolved {
                call_id: confirmation.call_id,
                approved: matches!(confirmation.decision, Decision::Approve | Decision::Amend { .. }),
            });
            return self.pass_on(parked, forward);
        }
        let decision = match confirmation.decision {
            Decision::Amend { arguments } => {
                let fp = fingerprint(&arguments);
                if fp != parked.fingerprint() {
                    return self.amend(parked, arguments, fp);
                }
                Decision::Approve
            }
            other => other,
        };
        self.run.resume(self.out.at);
        self.emit(EventKind::ConfirmationResolved {
            call_id: confirmation.call_id,
            approved: decision == Decision::Approve,
        });
        match decision {
            Decision::Approve | Decision::Amend { .. } => {
                let (batch, index) = parked.approve();
                let batch = self.move_holding(Phase::ToolExecution, batch)?;
                self.issue(batch.batch(), index);
                Ok(Next::Wait(Waiting::Tools { batch }))
            }
            Decision::Deny { reason } => {
                let message = match reason {
                    Some(reason) => format!("The user declined this call: {reason}"),
                    None => "The user declined this call.".to_string(),
                };
                let (mut batch, slot) = parked.decline();
                let outcome = ToolOutcome::Error(ToolError::new(ToolErrorKind::Declined, message));
                self.settle(&mut batch, slot, outcome, 0);
                let batch = self.move_holding(Phase::Analysis, batch)?;
                self.advance(batch)
            }
            Decision::Invalid { error } => {
                let (mut batch, slot) = parked.decline();
                self.settle(&mut batch, slot, ToolOutcome::Error(error), 0);
                let batch = self.move_holding(Phase::Analysis, batch)?;
                self.advance(batch)
            }
        }
    }

    /// The person changed the parked call's arguments: the call (in the
    /// history too, so the planner sees what will run) takes them, and the
    /// person is shown the changed call for a final yes.
    fn amend(&mut self, mut parked: Parked, arguments: serde_json::Value, fp: String) -> Flow {
        let call_id = parked.call().id.clone();
        let before = parked.call().arguments.clone();
        self.rewrite_call(&call_id, &arguments);
        let changes = describe_changes(&before, &arguments);
        parked.amend(arguments, fp);
        self.ask(parked, Some(changes))
    }

    /// Appends the batch's results to the history, applies a handoff, then
    /// plans again (or synthesizes if a cap was reached).
    fn complete(&mut self, completed: Completed) -> Flow {
        let failures_capped = self.run.failures_capped();
        let (results, handoff) = completed.into_results();
        self.append_results(results);
        if let Some(handoff) = handoff {
            if !self.switch_agent(handoff.target.clone(), handoff.reason, handoff.context) {
                return self.handoff_loop(handoff.target);
            }
        }
        if failures_capped {
            self.reach(Cap::ConsecutiveToolFailures);
        }
        if self.run.cap().is_some() {
            return self.synthesize();
        }
        self.plan()
    }
}

/// What a successful call of a writing tool changed: its declared
/// `writes`, else its category, else its name.
fn changed_by(spec: &ToolSpec) -> Vec<String> {
    if !spec.writes.is_empty() {
        return spec.writes.clone();
    }
    vec![spec.category.clone().unwrap_or_else(|| spec.name.to_string())]
}
