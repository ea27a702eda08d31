//! A batch: the tool calls of one planner step, each in a slot, and how the
//! batch moves on (some calls running, one parked for approval, all done).
//!
//! The batch is pure bookkeeping: which call is where. What a finished call
//! does to the session (the log, the blackboard, the events) is the
//! session's job; the batch only says which slots are open and what comes
//! next. Its states are types: a batch with calls in flight is an
//! [`InFlight`], a batch stopped on a call that needs approval is a
//! [`Parked`], a finished batch is a [`Completed`]; none of them can be
//! built (or deserialized) in a state that contradicts its name.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::delegate::{Forward, Question};
use crate::elicitation::{Asked, Elicitation, ElicitationAnswer, PendingElicitation};
use crate::id::{AgentId, CallId, RunId};
use crate::message::ToolCall;
use crate::pending::{PendingChoice, PendingConfirmation};
use crate::tool::ToolOutcome;

/// The calls of one planner step, in the order the planner gave them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Batch {
    slots: Vec<Slot>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    handoff: Option<Handoff>,
}

/// One call of a batch and where it stands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Slot {
    /// The call, with its core-assigned id.
    pub(crate) call: ToolCall,
    /// The fingerprint of its arguments.
    pub(crate) fingerprint: String,
    /// Where it stands.
    pub(crate) state: SlotState,
    /// How many times the call was issued again after the person chose an
    /// option (its idempotency key changes with each).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) attempt: u32,
    /// The person's answer to the question a child asked, passed on when
    /// the call is issued again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) answer: Option<Forward>,
    /// The questions the running call asked the person (MCP elicitation)
    /// and their answers, in order: a call issued again after a crash that
    /// asks the same question gets the same answer without asking again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) asked: Vec<Asked>,
    /// Where the running call said it stands (a remote task's id, say): an
    /// attempt issued after a crash starts from it instead of from scratch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) checkpoint: Option<serde_json::Value>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Where one call of a batch stands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub(crate) enum SlotState {
    /// The engine is running it.
    Running,
    /// It waits for an earlier call of the batch that writes the same thing.
    Queued,
    /// It waits for the person's approval before it runs.
    AwaitingApproval,
    /// It asked the person something (a choice, or a child's question) and
    /// waits for the answer.
    Asking {
        /// What it asked.
        question: Question,
    },
    /// It has its outcome (it ran, or the core answered it).
    Done {
        /// The outcome, as it will be appended to the history.
        outcome: ToolOutcome,
    },
}

impl SlotState {
    fn is_open(&self) -> bool {
        !matches!(self, SlotState::Done { .. })
    }

    /// Whether the slot waits for the person (approval or an answer).
    fn waits_for_person(&self) -> bool {
        matches!(self, SlotState::AwaitingApproval | SlotState::Asking { .. })
    }

    fn waits_for_person_in(slot: &Slot) -> bool {
        slot.state.waits_for_person()
    }
}

/// A handoff requested in a batch: applied when the batch completes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Handoff {
    /// The agent that takes the conversation.
    pub(crate) target: AgentId,
    /// Why, as the planner put it.
    pub(crate) reason: String,
    /// Information for the next agent's blackboard.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) context: BTreeMap<String, serde_json::Value>,
}

impl Handoff {
    /// The answer the core gives the handoff call itself.
    pub(crate) fn answer(&self) -> ToolOutcome {
        ToolOutcome::Ok(serde_json::Value::String(format!("Transferred to {}.", self.target)))
    }
}

/// What a batch comes to when nothing it started is still running.
#[derive(Debug, PartialEq)]
pub(crate) enum Progress {
    /// Calls are still running.
    InFlight(InFlight),
    /// Nothing runs; a call waits for approval.
    Parked(Parked),
    /// Every call has its outcome.
    Completed(Completed),
}

impl Batch {
    /// Adds a call in `state`.
    pub(crate) fn push(&mut self, call: ToolCall, fingerprint: String, state: SlotState) {
        self.slots.push(Slot {
            call,
            fingerprint,
            state,
            attempt: 0,
            answer: None,
            asked: Vec::new(),
            checkpoint: None,
        });
    }

    /// The running call at `index` asks the person `elicitation`: recorded
    /// after its earlier questions, or in place of one still unanswered (the
    /// server, asked again after a crash, put another question). Returns the
    /// question's number; `None` if the call is not running.
    pub(crate) fn elicit(&mut self, index: usize, elicitation: Elicitation) -> Option<u32> {
        let slot = self.slots.get_mut(index).filter(|s| s.state == SlotState::Running)?;
        if slot.asked.last().is_some_and(|a| a.answer.is_none()) {
            slot.asked.pop();
        }
        slot.asked.push(Asked {
            elicitation,
            answer: None,
        });
        u32::try_from(slot.asked.len() - 1).ok()
    }

    /// The open question `question` of the running call `call_id`, if it waits for an answer.
    pub(crate) fn open_question(&self, call_id: &CallId, question: u32) -> Option<(usize, &Elicitation)> {
        let index = self.running_slot(call_id)?;
        let asked = self.slots[index].asked.get(question as usize)?;
        asked.answer.is_none().then_some((index, &asked.elicitation))
    }

    /// Records the answer to question `question` of the call at `index`.
    pub(crate) fn answer(&mut self, index: usize, question: u32, answer: ElicitationAnswer) -> bool {
        match self
            .slots
            .get_mut(index)
            .and_then(|s| s.asked.get_mut(question as usize))
        {
            Some(asked) if asked.answer.is_none() => {
                asked.answer = Some(answer);
                true
            }
            _ => false,
        }
    }

    /// Records the batch's handoff; the core allows one per batch.
    pub(crate) fn hand_off(&mut self, handoff: Handoff) {
        self.handoff = Some(handoff);
    }

    /// Whether a call of this batch already hands the conversation over.
    pub(crate) fn hands_off(&self) -> bool {
        self.handoff.is_some()
    }

    /// The slots, in call order.
    pub(crate) fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// The calls the engine is running.
    pub(crate) fn running_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.slots
            .iter()
            .filter(|s| s.state == SlotState::Running)
            .map(|s| &s.call)
    }

    /// The slots of the calls the engine is running.
    pub(crate) fn running_slots(&self) -> impl Iterator<Item = &Slot> {
        self.slots.iter().filter(|s| s.state == SlotState::Running)
    }

    /// The slot of the running call `call_id`.
    pub(crate) fn running_slot(&self, call_id: &CallId) -> Option<usize> {
        self.slots
            .iter()
            .position(|s| &s.call.id == call_id && s.state == SlotState::Running)
    }

    /// The slot of the running call `call_id`, for a question it asks.
    pub(crate) fn ask(&mut self, index: usize, question: Question) -> bool {
        match self.slots.get_mut(index) {
            Some(slot) if slot.state == SlotState::Running => {
                slot.state = SlotState::Asking { question };
                slot.answer = None;
                true
            }
            _ => false,
        }
    }

    /// Starts the queued calls whose conflicting calls (per `conflict`) have
    /// all finished, in call order; returns their slots.
    pub(crate) fn start_queued(&mut self, conflict: impl Fn(&ToolCall, &ToolCall) -> bool) -> Vec<usize> {
        let mut started = Vec::new();
        for i in 0..self.slots.len() {
            if self.slots[i].state != SlotState::Queued {
                continue;
            }
            let blocked = self.slots[..i]
                .iter()
                .any(|earlier| earlier.state.is_open() && conflict(&earlier.call, &self.slots[i].call));
            if !blocked {
                self.slots[i].state = SlotState::Running;
                started.push(i);
            }
        }
        started
    }

    /// The slot at `index`.
    pub(crate) fn slot(&self, index: usize) -> Option<&Slot> {
        self.slots.get(index)
    }

    /// The slots without an outcome yet (running or awaiting approval).
    pub(crate) fn open_slots(&self) -> Vec<usize> {
        (0..self.slots.len())
            .filter(|&i| self.slots[i].state.is_open())
            .collect()
    }

    /// Gives the open slot `index` its outcome and returns it; `None` (and no
    /// change) if the slot does not exist or already has one.
    pub(crate) fn settle(&mut self, index: usize, outcome: ToolOutcome) -> Option<&Slot> {
        let slot = self.slots.get_mut(index)?;
        if !slot.state.is_open() {
            return None;
        }
        slot.state = SlotState::Done { outcome };
        Some(slot)
    }

    /// The results of the calls that have their outcome, in call order.
    pub(crate) fn into_results(self) -> Vec<(ToolCall, ToolOutcome)> {
        self.slots
            .into_iter()
            .filter_map(|slot| match slot.state {
                SlotState::Done { outcome } => Some((slot.call, outcome)),
                SlotState::Running | SlotState::Queued | SlotState::AwaitingApproval | SlotState::Asking { .. } => None,
            })
            .collect()
    }

    /// Where the batch goes next: calls still running keep it in flight;
    /// otherwise it parks on the first call awaiting approval (calls that
    /// need no approval run before any park); otherwise it is complete.
    pub(crate) fn advance(self) -> Progress {
        if self.slots.iter().any(|s| s.state == SlotState::Running) {
            return Progress::InFlight(InFlight { batch: self });
        }
        match self.slots.iter().position(SlotState::waits_for_person_in) {
            Some(slot) => Progress::Parked(Parked {
                batch: self,
                slot,
                message: String::new(),
            }),
            None => Progress::Completed(Completed { batch: self }),
        }
    }
}

/// A batch with at least one call running.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Batch", into = "Batch")]
pub(crate) struct InFlight {
    batch: Batch,
}

impl InFlight {
    /// The batch.
    pub(crate) fn batch(&self) -> &Batch {
        &self.batch
    }

    /// The batch, to settle a call of it.
    pub(crate) fn into_batch(self) -> Batch {
        self.batch
    }

    /// Records where the running call at `index` stands.
    pub(crate) fn checkpoint(&mut self, index: usize, checkpoint: serde_json::Value) {
        if let Some(slot) = self.batch.slots.get_mut(index) {
            slot.checkpoint = Some(checkpoint);
        }
    }
}

impl TryFrom<Batch> for InFlight {
    type Error = &'static str;

    fn try_from(batch: Batch) -> Result<Self, Self::Error> {
        if batch.running_calls().next().is_some() {
            Ok(InFlight { batch })
        } else {
            Err("a batch in flight must have a running call")
        }
    }
}

impl From<InFlight> for Batch {
    fn from(value: InFlight) -> Self {
        value.batch
    }
}

/// A batch stopped on one call that waits for the person's approval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ParkedParts", into = "ParkedParts")]
pub(crate) struct Parked {
    batch: Batch,
    slot: usize,
    message: String,
}

#[derive(Clone, Serialize, Deserialize)]
struct ParkedParts {
    batch: Batch,
    slot: usize,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    message: String,
}

impl TryFrom<ParkedParts> for Parked {
    type Error = &'static str;

    fn try_from(parts: ParkedParts) -> Result<Self, Self::Error> {
        let ok = parts
            .batch
            .slots
            .iter()
            .all(|s| !matches!(s.state, SlotState::Running | SlotState::Queued))
            && parts
                .batch
                .slots
                .get(parts.slot)
                .is_some_and(|s| s.state.waits_for_person());
        if ok {
            Ok(Parked {
                batch: parts.batch,
                slot: parts.slot,
                message: parts.message,
            })
        } else {
            Err("a parked batch must stop on a call that waits for the person, with nothing running")
        }
    }
}

impl From<Parked> for ParkedParts {
    fn from(value: Parked) -> Self {
        ParkedParts {
            batch: value.batch,
            slot: value.slot,
            message: value.message,
        }
    }
}

impl Parked {
    /// The parked slot (built only where it awaits approval).
    fn slot(&self) -> &Slot {
        &self.batch.slots[self.slot]
    }

    /// The parked call.
    pub(crate) fn call(&self) -> &ToolCall {
        &self.slot().call
    }

    /// The fingerprint an approval must quote.
    pub(crate) fn fingerprint(&self) -> &str {
        &self.slot().fingerprint
    }

    /// What the parked call asks, when it asked something (a choice, a
    /// child's question) rather than waiting for approval.
    pub(crate) fn question(&self) -> Option<&Question> {
        match &self.slot().state {
            SlotState::Asking { question } => Some(question),
            _ => None,
        }
    }

    /// The call the person approves or declines, as they see it: the
    /// parked call itself, or the child's call it waits on. `None` when the
    /// park is on a choice.
    pub(crate) fn pending(&self, run_id: &RunId) -> Option<PendingConfirmation> {
        let slot = self.slot();
        match &slot.state {
            SlotState::Asking {
                question: Question::ChildConfirmation { pending, session },
            } => Some(PendingConfirmation {
                session: Some(session.clone()),
                ..pending.clone()
            }),
            SlotState::Asking { .. } => None,
            _ => Some(PendingConfirmation {
                run_id: run_id.clone(),
                call_id: slot.call.id.clone(),
                tool: slot.call.name.clone(),
                arguments: slot.call.arguments.clone(),
                fingerprint: slot.fingerprint.clone(),
                message: self.message.clone(),
                session: None,
            }),
        }
    }

    /// The choice the person is asked to make, when the park is on one.
    pub(crate) fn pending_choice(&self, run_id: &RunId) -> Option<PendingChoice> {
        let slot = self.slot();
        match &slot.state {
            SlotState::Asking {
                question: Question::Choice { choice },
            } => Some(PendingChoice {
                run_id: run_id.clone(),
                call_id: slot.call.id.clone(),
                choice: choice.clone(),
                session: None,
            }),
            SlotState::Asking {
                question: Question::ChildChoice { pending, session },
            } => Some(PendingChoice {
                session: Some(session.clone()),
                ..pending.clone()
            }),
            _ => None,
        }
    }

    /// The question a child's running call asks, when the park is on one.
    pub(crate) fn pending_elicitation(&self) -> Option<PendingElicitation> {
        match &self.slot().state {
            SlotState::Asking {
                question: Question::ChildElicitation { pending, session },
            } => Some(PendingElicitation {
                session: Some(session.clone()),
                ..pending.clone()
            }),
            _ => None,
        }
    }

    /// The call runs again with `arguments` (the person chose an option):
    /// the batch in flight and the call to run.
    pub(crate) fn rerun(mut self, arguments: serde_json::Value, fingerprint: String) -> (InFlight, usize) {
        let slot = &mut self.batch.slots[self.slot];
        slot.call.arguments = arguments;
        slot.fingerprint = fingerprint;
        slot.attempt += 1;
        slot.state = SlotState::Running;
        slot.answer = None;
        slot.asked.clear();
        slot.checkpoint = None;
        (InFlight { batch: self.batch }, self.slot)
    }

    /// The person answered a child's question: the call is issued again,
    /// carrying the answer for the child.
    pub(crate) fn pass_on(mut self, answer: Forward) -> (InFlight, usize) {
        let slot = &mut self.batch.slots[self.slot];
        slot.state = SlotState::Running;
        slot.answer = Some(answer);
        (InFlight { batch: self.batch }, self.slot)
    }

    /// Sets the question the person is asked about the parked call.
    pub(crate) fn set_message(&mut self, message: String) {
        self.message = message;
    }

    /// Replaces the parked call's arguments (the person changed them); it
    /// stays parked, awaiting approval of the new arguments.
    pub(crate) fn amend(&mut self, arguments: serde_json::Value, fingerprint: String) {
        let slot = &mut self.batch.slots[self.slot];
        slot.call.arguments = arguments;
        slot.fingerprint = fingerprint;
    }

    /// The person approved: the call runs. Returns the batch in flight and the call's slot.
    pub(crate) fn approve(mut self) -> (InFlight, usize) {
        self.batch.slots[self.slot].state = SlotState::Running;
        (InFlight { batch: self.batch }, self.slot)
    }

    /// The person declined: the batch and the slot, for the caller to settle
    /// with the declined outcome.
    pub(crate) fn decline(self) -> (Batch, usize) {
        (self.batch, self.slot)
    }

    /// The batch, to abandon it.
    pub(crate) fn into_batch(self) -> Batch {
        self.batch
    }
}

impl From<Parked> for Batch {
    fn from(value: Parked) -> Self {
        value.batch
    }
}

/// A batch whose every call has its outcome.
#[derive(Debug, PartialEq)]
pub(crate) struct Completed {
    batch: Batch,
}

impl Completed {
    /// The results in call order (for the history) and the handoff, if any.
    pub(crate) fn into_results(mut self) -> (Vec<(ToolCall, ToolOutcome)>, Option<Handoff>) {
        let handoff = self.batch.handoff.take();
        (self.batch.into_results(), handoff)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tool::{ToolError, ToolErrorKind};

    fn call(n: u32) -> ToolCall {
        ToolCall {
            id: CallId::new(format!("call_{n}")),
            name: "t".into(),
            arguments: json!({"n": n}),
        }
    }

    fn batch(states: &[SlotState]) -> Batch {
        let mut batch = Batch::default();
        for (i, state) in states.iter().enumerate() {
            batch.push(call(i as u32 + 1), format!("fp{i}"), state.clone());
        }
        batch
    }

    fn done(value: i64) -> SlotState {
        SlotState::Done {
            outcome: ToolOutcome::Ok(json!(value)),
        }
    }

    #[test]
    fn a_running_call_keeps_the_batch_in_flight() {
        let b = batch(&[SlotState::Running, SlotState::AwaitingApproval]);
        let Progress::InFlight(in_flight) = b.advance() else {
            panic!("expected in flight")
        };
        assert_eq!(in_flight.batch().running_calls().count(), 1);
    }

    #[test]
    fn ready_calls_finish_before_the_batch_parks_on_the_first_awaiting_call() {
        let mut b = batch(&[
            SlotState::AwaitingApproval,
            SlotState::Running,
            SlotState::AwaitingApproval,
        ]);
        assert_eq!(b.running_slot(&"call_2".into()), Some(1));
        assert_eq!(
            b.running_slot(&"call_1".into()),
            None,
            "awaiting approval is not running"
        );
        assert!(b.settle(1, ToolOutcome::Ok(json!(1))).is_some());
        let Progress::Parked(parked) = b.advance() else {
            panic!("expected a park")
        };
        assert_eq!(parked.call().id, "call_1");
        assert_eq!(parked.fingerprint(), "fp0");
        let pending = parked.pending(&"r1".into()).unwrap();
        assert_eq!((pending.run_id.as_str(), pending.call_id.as_str()), ("r1", "call_1"));
    }

    #[test]
    fn approval_runs_the_parked_call_and_a_decline_settles_it() {
        let b = batch(&[SlotState::AwaitingApproval, SlotState::AwaitingApproval]);
        let Progress::Parked(parked) = b.advance() else {
            panic!("expected a park")
        };
        let (in_flight, approved) = parked.approve();
        assert_eq!(approved, 0);
        assert_eq!(in_flight.batch().running_slot(&"call_1".into()), Some(0));

        let mut b = in_flight.into_batch();
        b.settle(0, ToolOutcome::Ok(json!("paid")));
        let Progress::Parked(parked) = b.advance() else {
            panic!("the second call parks next")
        };
        assert_eq!(parked.call().id, "call_2");
        let (mut b, slot) = parked.decline();
        let declined = ToolOutcome::Error(ToolError::new(ToolErrorKind::Declined, "no"));
        assert!(b.settle(slot, declined.clone()).is_some());
        let Progress::Completed(completed) = b.advance() else {
            panic!("expected completion")
        };
        let (results, handoff) = completed.into_results();
        assert_eq!(results.len(), 2);
        assert_eq!(results[1].1, declined);
        assert!(handoff.is_none());
    }

    #[test]
    fn settling_is_once_per_slot() {
        let mut b = batch(&[SlotState::Running, done(1)]);
        assert_eq!(b.open_slots(), [0]);
        assert!(
            b.settle(1, ToolOutcome::Ok(json!(9))).is_none(),
            "a done slot keeps its outcome"
        );
        assert!(b.settle(7, ToolOutcome::Ok(json!(9))).is_none(), "no such slot");
        assert!(b.settle(0, ToolOutcome::Ok(json!(2))).is_some());
        assert!(b.settle(0, ToolOutcome::Ok(json!(3))).is_none());
        let Progress::Completed(completed) = b.advance() else {
            panic!("expected completion")
        };
        let (results, _) = completed.into_results();
        let values: Vec<_> = results.into_iter().map(|(_, o)| o).collect();
        assert_eq!(values, [ToolOutcome::Ok(json!(2)), ToolOutcome::Ok(json!(1))]);
    }

    #[test]
    fn a_handoff_travels_to_completion() {
        let mut b = batch(&[done(1)]);
        assert!(!b.hands_off());
        let handoff = Handoff {
            target: "billing".into(),
            reason: "invoices".into(),
            context: BTreeMap::new(),
        };
        assert_eq!(handoff.answer(), ToolOutcome::Ok(json!("Transferred to billing.")));
        b.hand_off(handoff.clone());
        assert!(b.hands_off());
        let Progress::Completed(completed) = b.advance() else {
            panic!("expected completion")
        };
        assert_eq!(completed.into_results().1, Some(handoff));
    }

    #[test]
    fn states_that_contradict_their_type_do_not_deserialize() {
        let idle = serde_json::to_value(batch(&[done(1)])).unwrap();
        assert!(serde_json::from_value::<InFlight>(idle.clone()).is_err());
        let running = serde_json::to_value(batch(&[SlotState::Running])).unwrap();
        let in_flight: InFlight = serde_json::from_value(running).unwrap();
        assert_eq!(in_flight.batch().running_calls().count(), 1);

        let parked = json!({"batch": idle, "slot": 0});
        assert!(serde_json::from_value::<Parked>(parked).is_err(), "slot 0 is done");
        let out_of_range = json!({"batch": batch(&[SlotState::AwaitingApproval]), "slot": 3});
        assert!(serde_json::from_value::<Parked>(out_of_range).is_err());
        let Progress::Parked(good) = batch(&[done(1), SlotState::AwaitingApproval]).advance() else {
            panic!("expected a park")
        };
        let text = serde_json::to_string(&good).unwrap();
        assert_eq!(serde_json::from_str::<Parked>(&text).unwrap(), good);
    }
}
