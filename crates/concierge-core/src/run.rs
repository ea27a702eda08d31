//! A run in progress: its facts ([`Run`]: phase, counters, clock, usage,
//! cap), what it waits for ([`Waiting`]), and the [`RunOutput`] its facts
//! make when it ends or parks ([`RunOutput::build`]).
//!
//! Between two steps a run always waits for exactly one thing, and the
//! waiting enum carries what that thing needs: the model call's number, the
//! batch in flight, or the parked batch and its slot. A run that waits for
//! nothing does not exist: it has finished and left the session.

use serde::{Deserialize, Serialize};

use crate::batch::{InFlight, Parked};
use crate::blackboard::ToolExecution;
use crate::effect::Effect;
use crate::elicitation::{Asked, Elicitation, ElicitationAction, ElicitationAnswer, PendingElicitation};
use crate::error::StepError;
use crate::event::EventKind;
use crate::fork::DoneCall;
use crate::guardrail::{Guardrail, GuardrailTrip};
use crate::id::{AgentId, CallId, RunId, SessionId};
use crate::input::Confirmation;
use crate::model::{ModelRequest, Usage};
use crate::output::{RunOutput, RunStatus, confidence};
use crate::pending::{PendingChoice, PendingConfirmation};
use crate::phase::{InvalidTransition, Phase};
use crate::planner_mode::PlannerMode;
use crate::policy::{Cap, RunPolicy};
use crate::time::Timestamp;
use crate::tool::{ToolErrorKind, ToolOutcome};

/// A run between two steps: its facts and what it waits for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunState {
    /// The run's facts.
    pub(crate) run: Run,
    /// What it waits for.
    pub(crate) waiting: Waiting,
}

/// What a run waits for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "for", rename_all = "snake_case")]
pub(crate) enum Waiting {
    /// The model's reply to call number `call` of the run.
    Model {
        /// The model call number.
        call: u32,
        /// Why the model was asked.
        purpose: ModelPurpose,
    },
    /// The results of the batch's running calls.
    Tools {
        /// The batch whose running calls it waits for.
        batch: InFlight,
    },
    /// The person: their approval of the parked call, or their answer to
    /// what it asked (a choice, a child's question).
    Confirmation {
        /// The batch and its parked slot.
        parked: Parked,
    },
    /// The model's reading of the person's answer to the parked call (when
    /// the rules could not read it fully; see `reading`). The call stays
    /// parked: a structured answer still settles it.
    Reading {
        /// The model call number.
        call: u32,
        /// The batch and its parked slot.
        parked: Parked,
        /// Whether the rules read a plain yes, which stands if the model's
        /// reading settles nothing (else the person is reminded).
        #[serde(default)]
        rules_approve: bool,
        /// The person's message (to ask again after a restart).
        text: String,
        /// When the person answered.
        at: Timestamp,
    },
}

/// Why a run asked the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ModelPurpose {
    /// To plan the next step; the reply goes to the planner.
    Plan,
    /// For the final answer after a cap; the reply is the answer.
    Synthesize,
    /// To update the running summary of the turns the model no longer sees
    /// (the agent's history policy); planning goes on after the reply.
    Summarize,
}

impl Waiting {
    /// What the run waits for, for people.
    pub(crate) fn describe(&self) -> String {
        match self {
            Waiting::Model { call, .. } => format!("model call {call}"),
            Waiting::Tools { .. } => "its running tool calls".into(),
            Waiting::Confirmation { .. } => "a confirmation".into(),
            Waiting::Reading { call, .. } => format!("model call {call} (reading the answer to a confirmation)"),
        }
    }

    /// Whether the wait counts against the run's time budget (a wait for
    /// the person does not).
    pub(crate) fn counts_time(&self) -> bool {
        !matches!(self, Waiting::Confirmation { .. } | Waiting::Reading { .. })
    }

    /// The call the person is asked to approve, when the run waits for that.
    pub(crate) fn pending(&self, run_id: &RunId) -> Option<PendingConfirmation> {
        match self {
            Waiting::Confirmation { parked } | Waiting::Reading { parked, .. } => parked.pending(run_id),
            Waiting::Model { .. } | Waiting::Tools { .. } => None,
        }
    }

    /// The choice the person is asked to make, when the run waits for that.
    pub(crate) fn pending_choice(&self, run_id: &RunId) -> Option<PendingChoice> {
        match self {
            Waiting::Confirmation { parked } => parked.pending_choice(run_id),
            Waiting::Model { .. } | Waiting::Tools { .. } | Waiting::Reading { .. } => None,
        }
    }

    /// The question the person is asked to answer: one a running call
    /// asked, or a child's that the parked call passes up.
    pub(crate) fn pending_elicitation(&self, run_id: &RunId) -> Option<PendingElicitation> {
        match self {
            Waiting::Confirmation { parked } => parked.pending_elicitation(),
            _ => self.running_question(run_id),
        }
    }

    /// The first question a running call of this run asked that waits for
    /// the person.
    pub(crate) fn running_question(&self, run_id: &RunId) -> Option<PendingElicitation> {
        let Waiting::Tools { batch } = self else {
            return None;
        };
        batch.batch().running_slots().find_map(|slot| {
            let (question, asked) = slot.asked.iter().enumerate().find(|(_, a)| a.answer.is_none())?;
            Some(PendingElicitation {
                run_id: run_id.clone(),
                call_id: slot.call.id.clone(),
                question: u32::try_from(question).ok()?,
                text: asked.elicitation.text(),
                elicitation: asked.elicitation.clone(),
                session: None,
            })
        })
    }

    /// The questions the running call `call_id` asked, and their answers.
    pub(crate) fn asked(&self, call_id: &CallId) -> &[Asked] {
        match self {
            Waiting::Tools { batch } => batch
                .batch()
                .running_slots()
                .find(|s| &s.call.id == call_id)
                .map_or(&[], |s| s.asked.as_slice()),
            Waiting::Model { .. } | Waiting::Confirmation { .. } | Waiting::Reading { .. } => &[],
        }
    }
}

impl RunState {
    /// Which model call a reply or failure may answer: the one in flight.
    pub(crate) fn expect_model(&self, call: u32, input: &'static str) -> Result<(), StepError> {
        match &self.waiting {
            Waiting::Model { call: c, .. } | Waiting::Reading { call: c, .. } if *c == call => Ok(()),
            other => Err(StepError::Unexpected {
                input: input.into(),
                expected: other.describe(),
            }),
        }
    }

    /// The slot a tool result fills: a call of the batch that is running.
    pub(crate) fn expect_tool(&self, call_id: &CallId) -> Result<usize, StepError> {
        let slot = match &self.waiting {
            Waiting::Tools { batch } => batch.batch().running_slot(call_id),
            Waiting::Model { .. } | Waiting::Confirmation { .. } | Waiting::Reading { .. } => None,
        };
        slot.ok_or_else(|| StepError::Unexpected {
            input: "tool_finished".into(),
            expected: self.waiting.describe(),
        })
    }

    /// The slot of the running call whose open question `question` an
    /// answer fills, after checking the answer against what was asked.
    pub(crate) fn expect_answer(
        &self,
        call_id: &CallId,
        question: u32,
        answer: &ElicitationAnswer,
    ) -> Result<usize, StepError> {
        let Waiting::Tools { batch } = &self.waiting else {
            return Err(StepError::NoSuchQuestion {
                call_id: call_id.clone(),
            });
        };
        let Some((slot, elicitation)) = batch.batch().open_question(call_id, question) else {
            return Err(StepError::NoSuchQuestion {
                call_id: call_id.clone(),
            });
        };
        fits(elicitation, answer)?;
        Ok(slot)
    }

    /// Whether the run waits on a child's question that the parked call
    /// passes up; when it does, the answer must be to that question
    /// (`call_id`, `question`) and fit what was asked.
    pub(crate) fn expect_child_answer(
        &self,
        call_id: &CallId,
        question: u32,
        answer: &ElicitationAnswer,
    ) -> Result<bool, StepError> {
        let Waiting::Confirmation { parked } = &self.waiting else {
            return Ok(false);
        };
        let Some(child) = parked.pending_elicitation() else {
            return Ok(false);
        };
        if &child.call_id != call_id || child.question != question {
            return Err(StepError::NoSuchQuestion {
                call_id: call_id.clone(),
            });
        }
        fits(&child.elicitation, answer)?;
        Ok(true)
    }

    /// Checks that a confirmation answers the parked call, with the
    /// fingerprint of its exact arguments.
    pub(crate) fn expect_confirmation(&self, confirmation: &Confirmation) -> Result<(), StepError> {
        let Some(pending) = self.waiting.pending(self.run.id()) else {
            return Err(StepError::NotAwaitingConfirmation);
        };
        if pending.call_id != confirmation.call_id {
            return Err(StepError::ConfirmationMismatch {
                expected_call: pending.call_id,
                reason: format!("it names call {}", confirmation.call_id),
            });
        }
        if pending.fingerprint != confirmation.fingerprint {
            return Err(StepError::ConfirmationMismatch {
                expected_call: pending.call_id,
                reason: "its fingerprint does not match the parked arguments".into(),
            });
        }
        Ok(())
    }

    /// Whether the run's time budget ran out by `at` (never while it waits for the person).
    pub(crate) fn budget_exhausted(&self, at: Timestamp) -> bool {
        self.waiting.counts_time() && self.run.over_budget(at)
    }
}

/// A run's facts: everything but what it waits for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Run {
    id: RunId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    catalog_version: Option<String>,
    planner: PlannerMode,
    policy: RunPolicy,
    phase: Phase,
    clock: Clock,
    iterations: u32,
    tool_calls: u32,
    consecutive_failures: u32,
    model_calls: u32,
    log_start: usize,
    #[serde(default)]
    usage: Usage,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cap: Option<Cap>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    user: Option<String>,
    /// Agent calls made so far (counted against `max_agent_calls`).
    #[serde(default)]
    agent_calls: u32,
    /// When the person wrote the message, if the caller said (otherwise
    /// when the run started).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    asked_at: Option<Timestamp>,
    /// The model its model calls name instead of their agents' (a replay's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    /// For a replay: the replayed run's calls, which answer this run's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replay: Option<Vec<DoneCall>>,
    /// The guardrail that stopped the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    guardrail: Option<GuardrailTrip>,
}

/// The run's time: when it started and how long it was parked for the person.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Clock {
    started_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parked_at: Option<Timestamp>,
    #[serde(default)]
    parked_ms: u64,
}

/// How a run starts.
pub(crate) struct NewRun {
    /// The run's id.
    pub(crate) id: RunId,
    /// The catalog version it plans with.
    pub(crate) catalog_version: Option<String>,
    /// How the run plans.
    pub(crate) planner: PlannerMode,
    /// Its effective policy.
    pub(crate) policy: RunPolicy,
    /// When it starts.
    pub(crate) at: Timestamp,
    /// Where its tool executions start in the session's log.
    pub(crate) log_start: usize,
    /// The model its calls name instead of their agents'.
    pub(crate) model: Option<String>,
    /// For a replay: the replayed run's calls.
    pub(crate) replay: Option<Vec<DoneCall>>,
}

impl Run {
    /// A run in `Initialize`.
    pub(crate) fn new(start: NewRun) -> Self {
        Self {
            id: start.id,
            catalog_version: start.catalog_version,
            planner: start.planner,
            policy: start.policy,
            phase: Phase::Initialize,
            clock: Clock {
                started_at: start.at,
                parked_at: None,
                parked_ms: 0,
            },
            iterations: 0,
            tool_calls: 0,
            consecutive_failures: 0,
            model_calls: 0,
            log_start: start.log_start,
            usage: Usage::default(),
            cap: None,
            error: None,
            user: None,
            agent_calls: 0,
            asked_at: None,
            model: start.model,
            replay: start.replay,
            guardrail: None,
        }
    }

    /// For a replay: the replayed run's calls, which answer this run's.
    pub(crate) fn replay(&self) -> Option<&[DoneCall]> {
        self.replay.as_deref()
    }

    /// The effect that asks the model `request` as the run's `call`-th
    /// model call, naming the run's model if it has one.
    /// `guardrails` are the agent's output guardrails.
    pub(crate) fn model_effect(&self, call: u32, mut request: ModelRequest, guardrails: Vec<Guardrail>) -> Effect {
        if let Some(model) = &self.model {
            request.model = Some(model.clone());
        }
        Effect::CallModel {
            run_id: self.id.clone(),
            call,
            request,
            guardrails,
        }
    }

    /// Records when the person wrote the message, if the caller said.
    pub(crate) fn set_asked_at(&mut self, at: Option<Timestamp>) {
        self.asked_at = at;
    }

    /// When the person's message that started the run was accepted.
    pub(crate) fn asked_at(&self) -> Timestamp {
        self.asked_at.unwrap_or(self.clock.started_at)
    }

    /// Agent calls made so far.
    pub(crate) fn agent_calls(&self) -> u32 {
        self.agent_calls
    }

    /// Counts one agent call.
    pub(crate) fn count_agent_call(&mut self) {
        self.agent_calls += 1;
    }

    /// Who asked for the run, if the caller said.
    pub(crate) fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// Records who asked for the run.
    pub(crate) fn set_user(&mut self, user: Option<String>) {
        self.user = user;
    }

    /// The run's id.
    pub(crate) fn id(&self) -> &RunId {
        &self.id
    }

    /// The catalog version the run plans with.
    pub(crate) fn catalog_version(&self) -> Option<&str> {
        self.catalog_version.as_deref()
    }

    /// How the run plans.
    pub(crate) fn planner(&self) -> PlannerMode {
        self.planner
    }

    /// The run's policy.
    pub(crate) fn policy(&self) -> &RunPolicy {
        &self.policy
    }

    /// Where the run stands.
    pub(crate) fn phase(&self) -> Phase {
        self.phase
    }

    /// Moves to `to` if the table allows it; returns the event to emit.
    pub(crate) fn move_to(&mut self, to: Phase) -> Result<EventKind, InvalidTransition> {
        let from = self.phase;
        from.check_move(to)?;
        self.phase = to;
        Ok(EventKind::PhaseChanged { from, to })
    }

    /// Planner consultations so far.
    pub(crate) fn iterations(&self) -> u32 {
        self.iterations
    }

    /// Starts a planner consultation, or says which cap forbids it.
    pub(crate) fn begin_iteration(&mut self, at: Timestamp) -> Result<u32, Cap> {
        if self.over_budget(at) {
            return Err(Cap::TimeBudget);
        }
        if self.iterations >= self.policy.max_iterations {
            return Err(Cap::Iterations);
        }
        self.iterations += 1;
        Ok(self.iterations)
    }

    /// Numbers the next model call.
    pub(crate) fn next_model_call(&mut self) -> u32 {
        self.model_calls += 1;
        self.model_calls
    }

    /// Tool calls counted against `max_tool_calls`.
    pub(crate) fn tool_calls(&self) -> u32 {
        self.tool_calls
    }

    /// Counts one tool call against `max_tool_calls`.
    pub(crate) fn count_tool_call(&mut self) {
        self.tool_calls += 1;
    }

    /// Counts a call's outcome towards the consecutive-failure cap: a success
    /// resets the count, a failure adds one, a declined call does neither.
    pub(crate) fn record_outcome(&mut self, outcome: &ToolOutcome) {
        match outcome {
            ToolOutcome::Ok(_) => self.consecutive_failures = 0,
            ToolOutcome::Error(error) if error.kind != ToolErrorKind::Declined => self.consecutive_failures += 1,
            ToolOutcome::Error(_) => {}
        }
    }

    /// Whether tool failures in a row reached the policy's limit.
    pub(crate) fn failures_capped(&self) -> bool {
        self.consecutive_failures >= self.policy.max_consecutive_tool_failures
    }

    /// The cap the run reached, if any.
    pub(crate) fn cap(&self) -> Option<Cap> {
        self.cap
    }

    /// Records that the run reached `cap`; the first cap reached is the
    /// run's. Returns the event to emit, if this was the first.
    pub(crate) fn reach(&mut self, cap: Cap) -> Option<EventKind> {
        if self.cap.is_some() {
            return None;
        }
        self.cap = Some(cap);
        Some(EventKind::CapReached { cap })
    }

    /// Tokens the run used.
    pub(crate) fn usage(&self) -> Usage {
        self.usage
    }

    /// Adds a model reply's tokens; returns the run's total.
    pub(crate) fn add_usage(&mut self, usage: Usage) -> Usage {
        self.usage.add(usage);
        self.usage
    }

    /// Where the run's executions start in the session's log.
    pub(crate) fn log_start(&self) -> usize {
        self.log_start
    }

    /// What failed, when the run failed.
    pub(crate) fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Records what failed.
    pub(crate) fn set_error(&mut self, message: String) {
        self.error = Some(message);
    }

    /// Records the guardrail that stopped the run.
    pub(crate) fn set_guardrail(&mut self, trip: GuardrailTrip) {
        self.guardrail = Some(trip);
    }

    /// Stops the clock while the run waits for the person.
    pub(crate) fn park(&mut self, at: Timestamp) {
        self.clock.parked_at = Some(at);
    }

    /// Restarts the clock when the person answers.
    pub(crate) fn resume(&mut self, at: Timestamp) {
        if let Some(parked_at) = self.clock.parked_at.take() {
            self.clock.parked_ms += at.millis_since(parked_at);
        }
    }

    /// Milliseconds the run has spent by `at`, time parked excluded.
    pub(crate) fn elapsed(&self, at: Timestamp) -> u64 {
        at.millis_since(self.clock.started_at)
            .saturating_sub(self.clock.parked_ms)
    }

    /// Whether the time budget ran out by `at` (never while parked).
    pub(crate) fn over_budget(&self, at: Timestamp) -> bool {
        match (self.policy.time_budget_ms, self.clock.parked_at) {
            (Some(budget), None) => self.elapsed(at) >= budget,
            _ => false,
        }
    }

    /// When the time budget runs out, unless the run is parked (the clock is stopped).
    pub(crate) fn deadline(&self) -> Option<Timestamp> {
        match (self.policy.time_budget_ms, self.clock.parked_at) {
            (Some(budget), None) => Some(Timestamp(self.clock.started_at.0 + self.clock.parked_ms + budget)),
            _ => None,
        }
    }
}

// A run's output is made of the run's facts, so it is built here, where
// they are.
impl RunOutput {
    /// The output of `run` as it ends (or parks) with `status`.
    ///
    /// `log` is the session's whole execution log; the run's part of it is
    /// taken from where the run started.
    pub(crate) fn build(outcome: Outcome, run: &Run, log: &[ToolExecution]) -> Self {
        let executions = log.get(run.log_start()..).unwrap_or_default().to_vec();
        RunOutput {
            session_id: outcome.session_id,
            run_id: run.id().clone(),
            agent: outcome.agent,
            status: outcome.status,
            reply: outcome.reply,
            iterations: run.iterations(),
            confidence: confidence(outcome.status, &executions, run.cap()),
            tool_executions: executions,
            usage: run.usage(),
            cap: run.cap(),
            error: run.error().map(str::to_string),
            pending_confirmation: outcome.pending_confirmation,
            pending_choice: outcome.pending_choice,
            pending_elicitation: None,
            guardrail: run.guardrail.clone(),
        }
    }
}

/// How a run ends or parks, as the session knows it.
pub(crate) struct Outcome {
    /// The session the run belongs to.
    pub(crate) session_id: SessionId,
    /// The agent in charge at the end.
    pub(crate) agent: AgentId,
    /// How the run ended or parked.
    pub(crate) status: RunStatus,
    /// The answer, the question for the person, or `None`.
    pub(crate) reply: Option<String>,
    /// The parked call, for a park.
    pub(crate) pending_confirmation: Option<PendingConfirmation>,
    /// The pending choice, for a park on a choice.
    pub(crate) pending_choice: Option<PendingChoice>,
}

/// Checks accepted content against the form asked (declining and
/// cancelling carry none).
fn fits(elicitation: &Elicitation, answer: &ElicitationAnswer) -> Result<(), StepError> {
    if answer.action == ElicitationAction::Accept {
        elicitation
            .check(answer.content.as_ref())
            .map_err(|problem| StepError::AnswerRefused { problem })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::batch::{Batch, Progress, SlotState};
    use crate::message::ToolCall;
    use crate::pending::Decision;
    use crate::tool::ToolError;

    fn run(policy: RunPolicy) -> Run {
        Run::new(NewRun {
            id: "r1".into(),
            catalog_version: Some("v1".into()),
            planner: PlannerMode::Model,
            policy,
            at: Timestamp(1_000),
            log_start: 0,
            model: None,
            replay: None,
        })
    }

    fn batch(states: &[SlotState]) -> Batch {
        let mut batch = Batch::default();
        for (i, state) in states.iter().enumerate() {
            let call = ToolCall {
                id: CallId::new(format!("call_{}", i + 1)),
                name: "pay".into(),
                arguments: json!({"amount": i}),
            };
            batch.push(call, format!("fp{}", i + 1), state.clone());
        }
        batch
    }

    fn state(waiting: Waiting) -> RunState {
        RunState {
            run: run(RunPolicy {
                time_budget_ms: Some(500),
                ..RunPolicy::default()
            }),
            waiting,
        }
    }

    fn confirmation(call: &str, fingerprint: &str) -> Confirmation {
        Confirmation {
            run_id: "r1".into(),
            call_id: call.into(),
            fingerprint: fingerprint.into(),
            decision: Decision::Approve,
            at: Timestamp(2_000),
        }
    }

    fn parked() -> Parked {
        match batch(&[SlotState::AwaitingApproval]).advance() {
            Progress::Parked(parked) => parked,
            other => panic!("expected a park, got {other:?}"),
        }
    }

    fn in_flight() -> InFlight {
        match batch(&[SlotState::Running]).advance() {
            Progress::InFlight(batch) => batch,
            other => panic!("expected a batch in flight, got {other:?}"),
        }
    }

    #[test]
    fn a_model_wait_accepts_only_its_own_call() {
        let s = state(Waiting::Model {
            call: 2,
            purpose: ModelPurpose::Synthesize,
        });
        assert_eq!(s.expect_model(2, "model_replied"), Ok(()));
        let Err(StepError::Unexpected { input, expected }) = s.expect_model(1, "model_failed") else {
            panic!("a stale call number is refused")
        };
        assert_eq!((input.as_str(), expected.as_str()), ("model_failed", "model call 2"));
        assert!(s.expect_tool(&"call_1".into()).is_err());
        assert_eq!(
            s.expect_confirmation(&confirmation("call_1", "fp1")),
            Err(StepError::NotAwaitingConfirmation)
        );
    }

    #[test]
    fn a_tools_wait_accepts_results_of_running_calls_only() {
        let s = state(Waiting::Tools { batch: in_flight() });
        assert_eq!(s.expect_tool(&"call_1".into()), Ok(0));
        assert!(matches!(
            s.expect_tool(&"call_2".into()),
            Err(StepError::Unexpected { input, .. }) if input == "tool_finished"
        ));
        assert!(s.expect_model(1, "model_replied").is_err());
        assert_eq!(s.waiting.pending(&"r1".into()), None);
    }

    #[test]
    fn a_confirmation_wait_checks_the_call_and_its_fingerprint() {
        let s = state(Waiting::Confirmation { parked: parked() });
        assert_eq!(s.expect_confirmation(&confirmation("call_1", "fp1")), Ok(()));
        assert!(matches!(
            s.expect_confirmation(&confirmation("call_2", "fp1")),
            Err(StepError::ConfirmationMismatch { reason, .. }) if reason.contains("call_2")
        ));
        assert!(matches!(
            s.expect_confirmation(&confirmation("call_1", "fp9")),
            Err(StepError::ConfirmationMismatch { reason, .. }) if reason.contains("fingerprint")
        ));
        let pending = s.waiting.pending(&"r1".into()).unwrap();
        assert_eq!((pending.tool.as_str(), pending.fingerprint.as_str()), ("pay", "fp1"));
        assert!(s.expect_tool(&"call_1".into()).is_err(), "a parked call is not running");
    }

    #[test]
    fn waits_move_from_tools_to_a_park_and_back_to_tools_on_approval() {
        let s = state(Waiting::Tools { batch: in_flight() });
        let Waiting::Tools { batch } = s.waiting else {
            unreachable!()
        };
        let mut b = batch.into_batch();
        b.push(
            ToolCall {
                id: "call_2".into(),
                name: "pay".into(),
                arguments: json!({}),
            },
            "fp2".into(),
            SlotState::AwaitingApproval,
        );
        b.settle(0, ToolOutcome::Ok(json!("ok")));
        let Progress::Parked(parked) = b.advance() else {
            panic!("the batch parks once nothing runs")
        };
        let waiting = Waiting::Confirmation { parked };
        assert!(!waiting.counts_time());
        assert_eq!(waiting.describe(), "a confirmation");
        let Waiting::Confirmation { parked } = waiting else {
            unreachable!()
        };
        let (batch, slot) = parked.approve();
        assert_eq!(batch.batch().slot(slot).map(|s| s.call.id.as_str()), Some("call_2"));
        let waiting = Waiting::Tools { batch };
        assert!(waiting.counts_time());
        assert_eq!(waiting.describe(), "its running tool calls");
    }

    #[test]
    fn every_wait_round_trips_through_serde() {
        for waiting in [
            Waiting::Model {
                call: 3,
                purpose: ModelPurpose::Plan,
            },
            Waiting::Tools { batch: in_flight() },
            Waiting::Confirmation { parked: parked() },
        ] {
            let s = state(waiting);
            let text = serde_json::to_string(&s).unwrap();
            assert_eq!(serde_json::from_str::<RunState>(&text).unwrap(), s, "{text}");
        }
    }

    #[test]
    fn the_time_budget_stops_while_parked_and_only_counts_non_person_waits() {
        let mut r = run(RunPolicy {
            time_budget_ms: Some(500),
            ..RunPolicy::default()
        });
        assert_eq!(r.deadline(), Some(Timestamp(1_500)));
        assert!(!r.over_budget(Timestamp(1_499)));
        assert!(r.over_budget(Timestamp(1_500)));
        r.park(Timestamp(1_200));
        assert!(!r.over_budget(Timestamp(9_000)), "parked time does not count");
        assert_eq!(r.deadline(), None);
        r.resume(Timestamp(2_200));
        assert_eq!(r.elapsed(Timestamp(2_200)), 200);
        assert_eq!(r.deadline(), Some(Timestamp(2_500)));
        let s = state(Waiting::Confirmation { parked: parked() });
        assert!(
            !s.budget_exhausted(Timestamp(1_000_000)),
            "the person's time is not the run's"
        );
        let s = state(Waiting::Model {
            call: 1,
            purpose: ModelPurpose::Plan,
        });
        assert!(s.budget_exhausted(Timestamp(1_500)));
    }

    #[test]
    fn counters_caps_and_transitions() {
        let mut r = run(RunPolicy {
            max_iterations: 1,
            max_consecutive_tool_failures: 2,
            ..RunPolicy::default()
        });
        assert_eq!(
            r.move_to(Phase::Completion),
            Err(InvalidTransition {
                from: Phase::Initialize,
                to: Phase::Completion
            })
        );
        assert_eq!(r.phase(), Phase::Initialize, "a refused move changes nothing");
        assert_eq!(
            r.move_to(Phase::Planning),
            Ok(EventKind::PhaseChanged {
                from: Phase::Initialize,
                to: Phase::Planning
            })
        );
        assert_eq!(r.begin_iteration(Timestamp(1_000)), Ok(1));
        assert_eq!(r.begin_iteration(Timestamp(1_000)), Err(Cap::Iterations));
        assert_eq!((r.next_model_call(), r.next_model_call()), (1, 2));
        let failed = ToolOutcome::Error(ToolError::failed("down"));
        let declined = ToolOutcome::Error(ToolError::new(ToolErrorKind::Declined, "no"));
        r.record_outcome(&failed);
        r.record_outcome(&declined);
        assert!(!r.failures_capped(), "a declined call is not a failure");
        r.record_outcome(&failed);
        assert!(r.failures_capped());
        r.record_outcome(&ToolOutcome::Ok(json!(1)));
        assert!(!r.failures_capped(), "a success resets the count");
        assert!(r.reach(Cap::ToolCalls).is_some());
        assert_eq!(r.reach(Cap::Iterations), None, "the first cap is the run's");
        assert_eq!(r.cap(), Some(Cap::ToolCalls));
    }
}
