//! A session and its deterministic `step`.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::blackboard::{Blackboard, Goal, ToolExecution};
use crate::canonical::fingerprint;
use crate::catalog::{Catalog, ResolvedAgent};
use crate::effect::{Effect, Step};
use crate::error::StepError;
use crate::event::{Event, EventKind};
use crate::id::{AgentId, CallId, IdempotencyKey, RunId, SessionId};
use crate::input::{Confirmation, Decision as UserDecision, Input, StartRun};
use crate::message::{Message, ToolCall};
use crate::model::{ModelReply, Usage};
use crate::output::{PendingConfirmation, RunOutput, RunStatus};
use crate::phase::{InvalidTransition, Phase};
use crate::planner::rules::summarize_results;
use crate::planner::{Decision, LlmPlanner, PlanView, PlannedCall, Planner, PlannerMode, RulesPlanner};
use crate::policy::{Cap, ConfirmationPolicy, RunPolicy};
use crate::time::Timestamp;
use crate::tool::{ToolError, ToolErrorKind, ToolOutcome, ToolSpec};

/// One conversation: its history, current agent, blackboard and the run in
/// progress, if any.
///
/// `step` is a pure function of the session and its input: the same inputs
/// in the same order always give the same session and the same effects. An
/// engine journals each accepted input and replays the journal to rebuild
/// the session after a crash; [`Session::pending_effects`] then says which
/// effects were still outstanding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Session {
    id: SessionId,
    agent: AgentId,
    #[serde(default)]
    history: Vec<Message>,
    #[serde(default)]
    blackboard: Blackboard,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    run: Option<RunState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_output: Option<RunOutput>,
    next_seq: u64,
    next_call: u64,
    #[serde(default)]
    usage: Usage,
    #[serde(default)]
    runs: u64,
    #[serde(default)]
    ended: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct RunState {
    id: RunId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    catalog_version: Option<String>,
    planner: PlannerMode,
    policy: RunPolicy,
    phase: Phase,
    started_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parked_at: Option<Timestamp>,
    #[serde(default)]
    parked_ms: u64,
    iterations: u32,
    tool_calls: u32,
    consecutive_failures: u32,
    model_calls: u32,
    waiting: Waiting,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    batch: Vec<Slot>,
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    queue: VecDeque<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    handoff: Option<(AgentId, String)>,
    log_start: usize,
    #[serde(default)]
    usage: Usage,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cap: Option<Cap>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Waiting {
    Nothing,
    Model { call: u32, synthesis: bool },
    Tools,
    Confirmation(usize),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Slot {
    call: ToolCall,
    fingerprint: String,
    state: SlotState,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum SlotState {
    Running,
    Queued,
    Done {
        outcome: ToolOutcome,
        duration_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reused_from: Option<CallId>,
        handoff: bool,
    },
}

/// What can go wrong after an input was accepted: the run is failed, never
/// left half-applied.
enum Fault {
    Transition(InvalidTransition),
    Planner(String),
}

impl From<InvalidTransition> for Fault {
    fn from(value: InvalidTransition) -> Self {
        Fault::Transition(value)
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Transition(t) => t.fmt(f),
            Fault::Planner(message) => f.write_str(message),
        }
    }
}

/// One step in progress: the catalog, the time of its input, and what it produced.
struct Ctx<'c> {
    catalog: &'c Catalog,
    at: Timestamp,
    events: Vec<Event>,
    effects: Vec<Effect>,
}

enum PlannerRef<'a> {
    Llm(LlmPlanner),
    Rules(RulesPlanner<'a>),
    Custom(&'a (dyn Planner + Send + Sync)),
}

impl PlannerRef<'_> {
    fn get(&self) -> &dyn Planner {
        match self {
            PlannerRef::Llm(p) => p,
            PlannerRef::Rules(p) => p,
            PlannerRef::Custom(p) => *p,
        }
    }
}

type Fallible = Result<(), Fault>;

impl Session {
    /// A new, empty session that starts with `agent`.
    pub fn new(id: impl Into<SessionId>, agent: impl Into<AgentId>) -> Self {
        Self {
            id: id.into(),
            agent: agent.into(),
            history: Vec::new(),
            blackboard: Blackboard::default(),
            run: None,
            last_output: None,
            next_seq: 1,
            next_call: 1,
            usage: Usage::default(),
            runs: 0,
            ended: false,
        }
    }

    /// The session id.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// The agent the conversation is with now.
    pub fn agent(&self) -> &AgentId {
        &self.agent
    }

    /// The conversation so far.
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// The blackboard.
    pub fn blackboard(&self) -> &Blackboard {
        &self.blackboard
    }

    /// The run in progress, if any.
    pub fn active_run(&self) -> Option<&RunId> {
        self.run.as_ref().map(|r| &r.id)
    }

    /// The catalog version the run in progress plans with (see
    /// [`StartRun::catalog_version`]); engines step every input of the run
    /// with that catalog.
    pub fn catalog_version(&self) -> Option<&str> {
        self.run.as_ref().and_then(|r| r.catalog_version.as_deref())
    }

    /// The phase of the run in progress.
    pub fn phase(&self) -> Option<Phase> {
        self.run.as_ref().map(|r| r.phase)
    }

    /// The call parked for approval, if any.
    pub fn pending_confirmation(&self) -> Option<PendingConfirmation> {
        let run = self.run.as_ref()?;
        match run.waiting {
            Waiting::Confirmation(i) => run.batch.get(i).map(|slot| pending(run, slot)),
            _ => None,
        }
    }

    /// The output of the last run that finished or parked.
    pub fn last_output(&self) -> Option<&RunOutput> {
        self.last_output.as_ref()
    }

    /// Tokens used by the whole session.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// How many runs the session has started.
    pub fn runs_started(&self) -> u64 {
        self.runs
    }

    /// The seq of the last event emitted (0 before any).
    pub fn last_seq(&self) -> u64 {
        self.next_seq - 1
    }

    /// Whether the session was ended.
    pub fn is_ended(&self) -> bool {
        self.ended
    }

    /// Applies one input.
    ///
    /// On `Err` the session is unchanged and the input must not be journaled.
    /// On `Ok` the engine journals the input, then performs the effects in order.
    pub fn step(&mut self, input: Input, catalog: &Catalog) -> Result<Step, StepError> {
        let mut st = Ctx {
            catalog,
            at: input.at(),
            events: Vec::new(),
            effects: Vec::new(),
        };
        let result = match input {
            Input::StartRun(start) => {
                self.check_start(&start, catalog)?;
                self.start_run(&mut st, start)
            }
            Input::ModelReplied {
                run_id, call, reply, ..
            } => {
                let synthesis = self.check_model(&run_id, call, "model_replied")?;
                self.model_replied(&mut st, reply, synthesis)
            }
            Input::ModelFailed {
                run_id, call, error, ..
            } => {
                let synthesis = self.check_model(&run_id, call, "model_failed")?;
                self.model_failed(&mut st, error, synthesis)
            }
            Input::ToolFinished {
                run_id,
                call_id,
                outcome,
                duration_ms,
                ..
            } => {
                let index = self.check_tool(&run_id, &call_id)?;
                self.tool_finished(&mut st, index, outcome, duration_ms)
            }
            Input::Confirm(confirmation) => {
                let index = self.check_confirmation(&confirmation)?;
                self.confirmed(&mut st, index, confirmation)
            }
            Input::End { reason, .. } => {
                if self.ended {
                    return Err(StepError::SessionEnded);
                }
                self.end(&mut st, reason)
            }
            Input::Tick { at } => {
                if !self.budget_exhausted(at) {
                    return Err(StepError::Idle);
                }
                self.time_up(&mut st)
            }
        };
        if let Err(fault) = result {
            self.fail_run(&mut st, fault.to_string());
        }
        Ok(Step {
            events: st.events,
            effects: st.effects,
        })
    }

    /// The effects still outstanding: what an engine must issue again after
    /// rebuilding the session from its journal (model and tool calls without a
    /// recorded result, the parked confirmation, the time budget's wake-up).
    pub fn pending_effects(&self, catalog: &Catalog) -> Vec<Effect> {
        let Some(run) = &self.run else {
            return Vec::new();
        };
        let mut effects = Vec::new();
        match &run.waiting {
            Waiting::Model { call, synthesis } => {
                let decision = self.decide(catalog, |planner, view| {
                    if *synthesis {
                        planner.synthesize(view, run.cap.unwrap_or(Cap::Iterations))
                    } else {
                        planner.next(view)
                    }
                });
                if let Ok(Decision::CallModel(request)) = decision {
                    effects.push(Effect::CallModel {
                        run_id: run.id.clone(),
                        call: *call,
                        request,
                    });
                }
            }
            Waiting::Tools => {
                for slot in &run.batch {
                    if slot.state == SlotState::Running {
                        effects.push(self.call_effect(run, &slot.call));
                    }
                }
            }
            Waiting::Confirmation(_) => {
                effects.push(Effect::AwaitUser(self.output(
                    run,
                    RunStatus::AwaitingConfirmation,
                    None,
                )));
            }
            Waiting::Nothing => {}
        }
        if let (Some(budget), None) = (run.policy.time_budget_ms, run.parked_at) {
            effects.push(Effect::WakeAt {
                run_id: run.id.clone(),
                at: Timestamp(run.started_at.0 + run.parked_ms + budget),
            });
        }
        effects
    }

    // ----- validation (no mutation) -----

    fn check_start(&self, start: &StartRun, catalog: &Catalog) -> Result<(), StepError> {
        if self.ended {
            return Err(StepError::SessionEnded);
        }
        if let Some(run) = &self.run {
            return Err(StepError::RunInProgress {
                run_id: run.id.clone(),
                phase: run.phase,
            });
        }
        if !start.messages.iter().any(|m| matches!(m, Message::User { .. })) {
            return Err(StepError::NoUserMessage);
        }
        if start.messages.iter().any(|m| matches!(m, Message::Tool { .. })) {
            return Err(StepError::Unexpected {
                input: "start_run",
                expected: "user, system or assistant messages (tool results come from tool calls)".into(),
            });
        }
        let agent = start.agent.as_ref().unwrap_or(&self.agent);
        let Some(resolved) = catalog.agent(agent) else {
            return Err(StepError::UnknownAgent {
                agent: agent.clone(),
                known: catalog.agent_ids(),
            });
        };
        let usable = match start.planner {
            PlannerMode::Model => true,
            PlannerMode::Rules => resolved.has_rules(),
            PlannerMode::Custom => catalog.custom_planner(agent).is_some(),
        };
        if !usable {
            return Err(StepError::NoPlanner { agent: agent.clone() });
        }
        Ok(())
    }

    fn active(&self, run_id: &RunId) -> Result<&RunState, StepError> {
        match &self.run {
            Some(run) if &run.id == run_id => Ok(run),
            _ => Err(StepError::NoSuchRun { run_id: run_id.clone() }),
        }
    }

    fn check_model(&self, run_id: &RunId, call: u32, input: &'static str) -> Result<bool, StepError> {
        let run = self.active(run_id)?;
        match run.waiting {
            Waiting::Model { call: c, synthesis } if c == call => Ok(synthesis),
            _ => Err(StepError::Unexpected {
                input,
                expected: describe(&run.waiting),
            }),
        }
    }

    fn check_tool(&self, run_id: &RunId, call_id: &CallId) -> Result<usize, StepError> {
        let run = self.active(run_id)?;
        run.batch
            .iter()
            .position(|s| &s.call.id == call_id && s.state == SlotState::Running)
            .ok_or_else(|| StepError::Unexpected {
                input: "tool_finished",
                expected: describe(&run.waiting),
            })
    }

    fn check_confirmation(&self, c: &Confirmation) -> Result<usize, StepError> {
        let run = self.active(&c.run_id)?;
        let Waiting::Confirmation(index) = run.waiting else {
            return Err(StepError::NotAwaitingConfirmation);
        };
        let Some(slot) = run.batch.get(index) else {
            return Err(StepError::NotAwaitingConfirmation);
        };
        if slot.call.id != c.call_id {
            return Err(StepError::ConfirmationMismatch {
                expected_call: slot.call.id.clone(),
                reason: format!("it names call {}", c.call_id),
            });
        }
        if slot.fingerprint != c.fingerprint {
            return Err(StepError::ConfirmationMismatch {
                expected_call: slot.call.id.clone(),
                reason: "its fingerprint does not match the parked arguments".into(),
            });
        }
        Ok(index)
    }

    fn budget_exhausted(&self, at: Timestamp) -> bool {
        let Some(run) = &self.run else {
            return false;
        };
        if run.parked_at.is_some() || matches!(run.waiting, Waiting::Nothing | Waiting::Confirmation(_)) {
            return false;
        }
        match run.policy.time_budget_ms {
            Some(budget) => elapsed(run, at) >= budget,
            None => false,
        }
    }

    // ----- transitions -----

    fn run_mut(&mut self) -> Result<&mut RunState, Fault> {
        self.run
            .as_mut()
            .ok_or_else(|| Fault::Planner("no run is in progress".into()))
    }

    fn move_to(&mut self, st: &mut Ctx<'_>, to: Phase) -> Fallible {
        let run = self.run_mut()?;
        let from = run.phase;
        from.check_move(to)?;
        run.phase = to;
        self.emit(st, EventKind::PhaseChanged { from, to });
        Ok(())
    }

    fn emit(&mut self, st: &mut Ctx<'_>, kind: EventKind) {
        let event = Event {
            seq: self.next_seq,
            delta: 0,
            at: st.at,
            session: self.id.clone(),
            run: self.run.as_ref().map(|r| r.id.clone()),
            kind,
        };
        self.next_seq += 1;
        st.events.push(event);
    }

    fn push_message(&mut self, st: &mut Ctx<'_>, message: Message) {
        self.history.push(message.clone());
        self.emit(st, EventKind::Message { message });
    }

    // ----- handlers -----

    fn start_run(&mut self, st: &mut Ctx<'_>, start: StartRun) -> Fallible {
        let agent = start.agent.clone().unwrap_or_else(|| self.agent.clone());
        let spec = match st.catalog.agent(&agent) {
            Some(resolved) => resolved.spec.clone(),
            None => return Err(Fault::Planner(format!("agent {agent} is not in the catalog"))),
        };
        let policy = start.policy.clone().unwrap_or_else(|| spec.policy.clone());
        self.runs += 1;
        let run_id = start
            .run_id
            .clone()
            .unwrap_or_else(|| RunId::new(format!("r{}", self.runs)));
        self.run = Some(RunState {
            id: run_id.clone(),
            catalog_version: start.catalog_version.clone(),
            planner: start.planner,
            policy: policy.clone(),
            phase: Phase::Initialize,
            started_at: start.at,
            parked_at: None,
            parked_ms: 0,
            iterations: 0,
            tool_calls: 0,
            consecutive_failures: 0,
            model_calls: 0,
            waiting: Waiting::Nothing,
            batch: Vec::new(),
            queue: VecDeque::new(),
            handoff: None,
            log_start: self.blackboard.log.len(),
            usage: Usage::default(),
            cap: None,
            error: None,
        });
        if agent != self.agent {
            let from = std::mem::replace(&mut self.agent, agent.clone());
            self.emit(
                st,
                EventKind::AgentChanged {
                    from,
                    to: agent.clone(),
                    reason: "the caller asked for this agent".into(),
                },
            );
        }
        self.emit(
            st,
            EventKind::RunStarted {
                agent,
                planner: start.planner,
                turn_id: start.turn_id,
                labels: start.labels,
                metadata: start.metadata,
            },
        );
        let mut goal = None;
        for message in start.messages {
            if let Message::User { content } = &message {
                goal = Some(content.clone());
            }
            self.push_message(st, message);
        }
        self.blackboard.goal = Some(Goal {
            description: goal.unwrap_or_default(),
            required: spec.required_information.clone(),
        });
        self.blackboard.available.extend(start.context);
        self.blackboard.iterations = 0;
        if let Some(budget) = policy.time_budget_ms {
            st.effects.push(Effect::WakeAt {
                run_id,
                at: Timestamp(start.at.0 + budget),
            });
        }
        self.move_to(st, Phase::Planning)?;
        self.plan(st)
    }

    fn model_replied(&mut self, st: &mut Ctx<'_>, reply: ModelReply, synthesis: bool) -> Fallible {
        let run = self.run_mut()?;
        run.waiting = Waiting::Nothing;
        if let Some(usage) = reply.usage {
            run.usage.add(usage);
            let run_total = run.usage;
            self.usage.add(usage);
            self.emit(st, EventKind::Usage { usage, run_total });
        }
        if synthesis {
            return self.answer(st, reply.text);
        }
        let decision = self
            .decide(st.catalog, |planner, view| planner.on_model_reply(view, &reply))
            .map_err(Fault::Planner)?;
        self.apply(st, decision)
    }

    fn model_failed(&mut self, st: &mut Ctx<'_>, error: String, synthesis: bool) -> Fallible {
        self.run_mut()?.waiting = Waiting::Nothing;
        if synthesis {
            let summary = self.summary(st.catalog);
            return self.answer(st, summary);
        }
        self.fail_run(st, format!("the model call failed: {error}"));
        Ok(())
    }

    fn tool_finished(&mut self, st: &mut Ctx<'_>, index: usize, outcome: ToolOutcome, duration_ms: u64) -> Fallible {
        self.complete_slot(st, index, outcome, duration_ms, None);
        self.advance_batch(st)
    }

    fn confirmed(&mut self, st: &mut Ctx<'_>, index: usize, confirmation: Confirmation) -> Fallible {
        let at = st.at;
        let run = self.run_mut()?;
        if let Some(parked_at) = run.parked_at.take() {
            run.parked_ms += at.millis_since(parked_at);
        }
        run.queue.retain(|&i| i != index);
        let approved = confirmation.decision == UserDecision::Approve;
        self.emit(
            st,
            EventKind::ConfirmationResolved {
                call_id: confirmation.call_id,
                approved,
            },
        );
        match confirmation.decision {
            UserDecision::Approve => {
                self.move_to(st, Phase::ToolExecution)?;
                let run = self.run_mut()?;
                run.waiting = Waiting::Tools;
                let Some(slot) = run.batch.get_mut(index) else {
                    return Err(Fault::Planner("the parked call is gone".into()));
                };
                slot.state = SlotState::Running;
                let call = slot.call.clone();
                let effect = match &self.run {
                    Some(run) => self.call_effect(run, &call),
                    None => return Err(Fault::Planner("no run is in progress".into())),
                };
                st.effects.push(effect);
                Ok(())
            }
            UserDecision::Deny { reason } => {
                let message = match reason {
                    Some(reason) => format!("The user declined this call: {reason}"),
                    None => "The user declined this call.".to_string(),
                };
                let outcome = ToolOutcome::Error(ToolError::new(ToolErrorKind::Declined, message));
                self.complete_slot(st, index, outcome, 0, None);
                self.move_to(st, Phase::Analysis)?;
                self.advance_batch(st)
            }
        }
    }

    fn end(&mut self, st: &mut Ctx<'_>, reason: String) -> Fallible {
        if self.run.is_some() {
            self.abandon_batch(st, "the session was ended before the call finished");
            if let Some(run) = &mut self.run {
                run.error = Some(format!("the session was ended: {reason}"));
            }
            self.close(st, RunStatus::Cancelled, None)?;
        }
        self.ended = true;
        self.emit(st, EventKind::SessionEnded { reason });
        Ok(())
    }

    fn time_up(&mut self, st: &mut Ctx<'_>) -> Fallible {
        let waiting = self.run_mut()?.waiting.clone();
        match waiting {
            Waiting::Model { synthesis: false, .. } => {
                self.run_mut()?.waiting = Waiting::Nothing;
                self.reach_cap(st, Cap::TimeBudget)?;
                self.synthesize(st)
            }
            Waiting::Model { synthesis: true, .. } => {
                self.run_mut()?.waiting = Waiting::Nothing;
                let summary = self.summary(st.catalog);
                self.answer(st, summary)
            }
            Waiting::Tools => {
                self.reach_cap(st, Cap::TimeBudget)?;
                self.cancel_batch(st, ToolErrorKind::Timeout, "abandoned: the run's time budget ran out");
                self.advance_batch(st)
            }
            Waiting::Nothing | Waiting::Confirmation(_) => Ok(()),
        }
    }

    // ----- planning -----

    fn decide<R>(&self, catalog: &Catalog, f: impl FnOnce(&dyn Planner, &PlanView<'_>) -> R) -> Result<R, String> {
        let run = self.run.as_ref().ok_or("no run is in progress")?;
        let resolved = catalog
            .agent(&self.agent)
            .ok_or_else(|| format!("agent {} is not in the catalog", self.agent))?;
        let planner = match run.planner {
            PlannerMode::Model => PlannerRef::Llm(LlmPlanner),
            PlannerMode::Rules => match &resolved.rules {
                Some(rules) => PlannerRef::Rules(RulesPlanner::new(rules)),
                None => {
                    return Err(format!(
                        "agent {} has no rules and this run has no model; configure a model",
                        self.agent
                    ));
                }
            },
            PlannerMode::Custom => match catalog.custom_planner(&self.agent) {
                Some(p) => PlannerRef::Custom(p.as_ref()),
                None => return Err(format!("agent {} has no custom planner", self.agent)),
            },
        };
        let view = PlanView {
            agent: &resolved.spec,
            tools: &resolved.defs,
            history: &self.history,
            blackboard: &self.blackboard,
        };
        Ok(f(planner.get(), &view))
    }

    fn summary(&self, catalog: &Catalog) -> String {
        self.decide(catalog, |_, view| summarize_results(view))
            .unwrap_or_default()
    }

    fn plan(&mut self, st: &mut Ctx<'_>) -> Fallible {
        let at = st.at;
        let run = self.run_mut()?;
        let over_budget = run.policy.time_budget_ms.is_some_and(|b| elapsed(run, at) >= b);
        if over_budget {
            self.reach_cap(st, Cap::TimeBudget)?;
            return self.synthesize(st);
        }
        if run.iterations >= run.policy.max_iterations {
            self.reach_cap(st, Cap::Iterations)?;
            return self.synthesize(st);
        }
        run.iterations += 1;
        self.blackboard.iterations = run.iterations;
        let decision = self
            .decide(st.catalog, |planner, view| planner.next(view))
            .map_err(Fault::Planner)?;
        self.apply(st, decision)
    }

    fn apply(&mut self, st: &mut Ctx<'_>, decision: Decision) -> Fallible {
        match decision {
            Decision::CallModel(request) => {
                let run = self.run_mut()?;
                run.model_calls += 1;
                let call = run.model_calls;
                run.waiting = Waiting::Model { call, synthesis: false };
                let run_id = run.id.clone();
                self.emit(st, EventKind::ModelRequested { call });
                st.effects.push(Effect::CallModel { run_id, call, request });
                Ok(())
            }
            Decision::CallTools { text, calls } if calls.is_empty() => self.answer(st, text),
            Decision::CallTools { text, calls } => self.select_tools(st, text, calls),
            Decision::Answer(text) => self.answer(st, text),
            Decision::Clarify(text) => {
                self.move_to(st, Phase::Clarifying)?;
                let agent = self.agent.clone();
                self.push_message(st, Message::assistant(agent, text.clone()));
                self.close(st, RunStatus::NeedsInput, Some(text))
            }
        }
    }

    fn reach_cap(&mut self, st: &mut Ctx<'_>, cap: Cap) -> Fallible {
        let run = self.run_mut()?;
        if run.cap.is_none() {
            run.cap = Some(cap);
            self.emit(st, EventKind::CapReached { cap });
        }
        Ok(())
    }

    fn synthesize(&mut self, st: &mut Ctx<'_>) -> Fallible {
        let cap = self.run_mut()?.cap.unwrap_or(Cap::Iterations);
        let decision = self
            .decide(st.catalog, |planner, view| planner.synthesize(view, cap))
            .map_err(Fault::Planner)?;
        match decision {
            Decision::CallModel(request) => {
                self.move_to(st, Phase::Synthesis)?;
                let run = self.run_mut()?;
                run.model_calls += 1;
                let call = run.model_calls;
                run.waiting = Waiting::Model { call, synthesis: true };
                let run_id = run.id.clone();
                self.emit(st, EventKind::ModelRequested { call });
                st.effects.push(Effect::CallModel { run_id, call, request });
                Ok(())
            }
            Decision::Answer(text) | Decision::Clarify(text) => self.answer(st, text),
            Decision::CallTools { .. } => {
                let summary = self.summary(st.catalog);
                self.answer(st, summary)
            }
        }
    }

    fn answer(&mut self, st: &mut Ctx<'_>, text: String) -> Fallible {
        if self.run_mut()?.phase != Phase::Synthesis {
            self.move_to(st, Phase::Synthesis)?;
        }
        let text = if text.trim().is_empty() && self.has_run_results() {
            self.summary(st.catalog)
        } else {
            text
        };
        let agent = self.agent.clone();
        self.push_message(st, Message::assistant(agent, text.clone()));
        self.close(st, RunStatus::Completed, Some(text))
    }

    fn has_run_results(&self) -> bool {
        self.run
            .as_ref()
            .is_some_and(|run| self.blackboard.log.len() > run.log_start)
    }

    // ----- tools -----

    fn select_tools(&mut self, st: &mut Ctx<'_>, text: String, planned: Vec<PlannedCall>) -> Fallible {
        self.move_to(st, Phase::ToolSelection)?;
        let resolved: &ResolvedAgent = st
            .catalog
            .agent(&self.agent)
            .ok_or_else(|| Fault::Planner(format!("agent {} is not in the catalog", self.agent)))?;
        let calls: Vec<ToolCall> = planned
            .into_iter()
            .map(|p| {
                let id = CallId::new(format!("call_{}", self.next_call));
                self.next_call += 1;
                ToolCall {
                    id,
                    name: p.name.into(),
                    arguments: p.arguments,
                }
            })
            .collect();
        let agent = self.agent.clone();
        self.push_message(
            st,
            Message::Assistant {
                agent,
                content: text,
                tool_calls: calls.clone(),
            },
        );
        for call in &calls {
            self.emit(
                st,
                EventKind::ToolRequested {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    arguments: call.arguments.clone(),
                },
            );
        }
        let mut batch = Vec::with_capacity(calls.len());
        let mut immediate = Vec::new();
        let mut cap = None;
        {
            let run = self
                .run
                .as_mut()
                .ok_or_else(|| Fault::Planner("no run is in progress".into()))?;
            for (index, call) in calls.into_iter().enumerate() {
                let fp = fingerprint(&call.arguments);
                let state = classify(&call, &fp, resolved, st.catalog, &self.blackboard, run, &mut cap);
                if let Some(done) = state.1 {
                    immediate.push((index, done));
                }
                if state.0 == SlotState::Queued {
                    run.queue.push_back(index);
                }
                batch.push(Slot {
                    call,
                    fingerprint: fp,
                    state: state.0,
                });
            }
            run.batch = batch;
        }
        if let Some(cap) = cap {
            self.reach_cap(st, cap)?;
        }
        for (index, done) in immediate {
            if let Some(from) = &done.reused_from {
                if let Some(slot) = self.run.as_ref().and_then(|r| r.batch.get(index)) {
                    let kind = EventKind::ToolReused {
                        call_id: slot.call.id.clone(),
                        tool: slot.call.name.clone(),
                        from: from.clone(),
                    };
                    self.emit(st, kind);
                }
            }
            self.complete_slot(st, index, done.outcome, 0, done.reused_from);
        }
        let run = self.run_mut()?;
        let anything_to_run = run.batch.iter().any(|s| s.state != SlotState::Queued);
        let running: Vec<ToolCall> = run
            .batch
            .iter()
            .filter(|s| s.state == SlotState::Running)
            .map(|s| s.call.clone())
            .collect();
        if !running.is_empty() {
            run.waiting = Waiting::Tools;
        }
        if anything_to_run {
            self.move_to(st, Phase::ToolExecution)?;
        }
        if let Some(run) = &self.run {
            for call in &running {
                st.effects.push(self.call_effect(run, call));
            }
        }
        self.advance_batch(st)
    }

    fn call_effect(&self, run: &RunState, call: &ToolCall) -> Effect {
        Effect::CallTool {
            run_id: run.id.clone(),
            call: call.clone(),
            key: IdempotencyKey::derive(&self.id, &run.id, &call.id),
        }
    }

    /// Marks a slot done: logs it, emits `ToolFinished`, counts failures and
    /// fills in what the tool provides.
    fn complete_slot(
        &mut self,
        st: &mut Ctx<'_>,
        index: usize,
        outcome: ToolOutcome,
        duration_ms: u64,
        reused_from: Option<CallId>,
    ) {
        let Some(run) = self.run.as_mut() else {
            return;
        };
        let Some(slot) = run.batch.get_mut(index) else {
            return;
        };
        let handoff = matches!(&slot.state, SlotState::Done { handoff: true, .. });
        slot.state = SlotState::Done {
            outcome: outcome.clone(),
            duration_ms,
            reused_from: reused_from.clone(),
            handoff,
        };
        if handoff {
            return;
        }
        let call = slot.call.clone();
        let fp = slot.fingerprint.clone();
        match &outcome {
            ToolOutcome::Ok(value) => {
                run.consecutive_failures = 0;
                if let Some(spec) = st.catalog.tool(&call.name) {
                    for key in &spec.provides {
                        let provided = value.get(key).cloned().unwrap_or_else(|| value.clone());
                        self.blackboard.available.insert(key.clone(), provided);
                    }
                }
            }
            ToolOutcome::Error(error) if error.kind != ToolErrorKind::Declined => run.consecutive_failures += 1,
            ToolOutcome::Error(_) => {}
        }
        self.blackboard.log.push(ToolExecution {
            run_id: run.id.clone(),
            call_id: call.id.clone(),
            tool: call.name.clone(),
            arguments: call.arguments,
            fingerprint: fp,
            duration_ms,
            outcome: outcome.clone(),
            reused_from,
        });
        self.emit(
            st,
            EventKind::ToolFinished {
                call_id: call.id,
                tool: call.name,
                ok: outcome.is_ok(),
                duration_ms,
                outcome,
            },
        );
    }

    /// Gives every unfinished call of the batch an error outcome.
    fn cancel_batch(&mut self, st: &mut Ctx<'_>, kind: ToolErrorKind, message: &str) {
        let open: Vec<usize> = match &self.run {
            Some(run) => run
                .batch
                .iter()
                .enumerate()
                .filter(|(_, s)| !matches!(s.state, SlotState::Done { .. }))
                .map(|(i, _)| i)
                .collect(),
            None => return,
        };
        for index in open {
            self.complete_slot(st, index, ToolOutcome::Error(ToolError::new(kind, message)), 0, None);
        }
        if let Some(run) = &mut self.run {
            run.queue.clear();
        }
    }

    /// Cancels the unfinished calls of the batch and appends every result, so
    /// the history never holds a call without its answer.
    fn abandon_batch(&mut self, st: &mut Ctx<'_>, message: &str) {
        if self.run.as_ref().is_none_or(|r| r.batch.is_empty()) {
            return;
        }
        self.cancel_batch(st, ToolErrorKind::Cancelled, message);
        if let Some(run) = &mut self.run {
            let batch = std::mem::take(&mut run.batch);
            self.append_results(st, batch);
        }
    }

    fn advance_batch(&mut self, st: &mut Ctx<'_>) -> Fallible {
        let run = self.run_mut()?;
        if run.batch.iter().any(|s| s.state == SlotState::Running) {
            return Ok(());
        }
        if run.phase == Phase::ToolExecution {
            self.move_to(st, Phase::Analysis)?;
        }
        let run = self.run_mut()?;
        if let Some(&index) = run.queue.front() {
            return self.park(st, index);
        }
        self.complete_batch(st)
    }

    fn park(&mut self, st: &mut Ctx<'_>, index: usize) -> Fallible {
        self.move_to(st, Phase::Clarifying)?;
        let at = st.at;
        let run = self.run_mut()?;
        run.parked_at = Some(at);
        run.waiting = Waiting::Confirmation(index);
        let Some(slot) = run.batch.get(index) else {
            return Err(Fault::Planner("the call to confirm is gone".into()));
        };
        let pending = pending(run, slot);
        self.emit(st, EventKind::AwaitingConfirmation { pending });
        if let Some(run) = &self.run {
            let output = self.output(run, RunStatus::AwaitingConfirmation, None);
            self.last_output = Some(output.clone());
            st.effects.push(Effect::AwaitUser(output));
        }
        Ok(())
    }

    /// Appends the batch's results to the history, applies a handoff, then
    /// plans again (or synthesizes if a cap was reached).
    fn complete_batch(&mut self, st: &mut Ctx<'_>) -> Fallible {
        let run = self.run_mut()?;
        run.waiting = Waiting::Nothing;
        let batch = std::mem::take(&mut run.batch);
        run.queue.clear();
        let handoff = run.handoff.take();
        let failures_capped = run.consecutive_failures >= run.policy.max_consecutive_tool_failures;
        self.append_results(st, batch);
        if let Some((target, reason)) = handoff {
            let from = std::mem::replace(&mut self.agent, target.clone());
            self.emit(
                st,
                EventKind::AgentChanged {
                    from,
                    to: target,
                    reason,
                },
            );
        }
        if failures_capped {
            self.reach_cap(st, Cap::ConsecutiveToolFailures)?;
        }
        if self.run_mut()?.cap.is_some() {
            return self.synthesize(st);
        }
        self.plan(st)
    }

    fn append_results(&mut self, st: &mut Ctx<'_>, batch: Vec<Slot>) {
        let agent = self.agent.clone();
        for slot in batch {
            if let SlotState::Done { outcome, .. } = slot.state {
                self.push_message(
                    st,
                    Message::Tool {
                        agent: agent.clone(),
                        call_id: slot.call.id,
                        tool: slot.call.name,
                        outcome,
                    },
                );
            }
        }
    }

    // ----- ending a run -----

    /// Moves to `Completion` (through `Error` for failures) and emits the output.
    fn close(&mut self, st: &mut Ctx<'_>, status: RunStatus, reply: Option<String>) -> Fallible {
        if matches!(status, RunStatus::Failed | RunStatus::Cancelled) {
            let phase = self.run_mut()?.phase;
            if phase != Phase::Error {
                self.move_to(st, Phase::Error)?;
            }
        }
        self.move_to(st, Phase::Completion)?;
        self.emit(
            st,
            EventKind::RunFinished {
                status,
                reply: reply.clone(),
            },
        );
        if let Some(run) = self.run.take() {
            let output = self.output(&run, status, reply);
            self.blackboard.confidence = output.confidence;
            self.last_output = Some(output.clone());
            st.effects.push(Effect::Finish(output));
        }
        Ok(())
    }

    /// Fails the run after an internal fault or a model failure. Every phase
    /// but `Completion` may move to `Error`, and `Error` to `Completion`, so
    /// this path is always inside the table.
    fn fail_run(&mut self, st: &mut Ctx<'_>, message: String) {
        let Some(run) = &mut self.run else {
            return;
        };
        run.error = Some(message.clone());
        run.waiting = Waiting::Nothing;
        self.emit(st, EventKind::Error { message });
        self.abandon_batch(st, "the run failed before the call finished");
        if let Err(fault) = self.close(st, RunStatus::Failed, None) {
            // Only reachable if the run was already in a terminal phase: drop it.
            self.emit(
                st,
                EventKind::Error {
                    message: fault.to_string(),
                },
            );
            self.run = None;
        }
    }

    fn output(&self, run: &RunState, status: RunStatus, reply: Option<String>) -> RunOutput {
        let executions = self.blackboard.log.get(run.log_start..).unwrap_or_default().to_vec();
        let pending_confirmation = match (status, &run.waiting) {
            (RunStatus::AwaitingConfirmation, Waiting::Confirmation(i)) => run.batch.get(*i).map(|s| pending(run, s)),
            _ => None,
        };
        RunOutput {
            session_id: self.id.clone(),
            run_id: run.id.clone(),
            agent: self.agent.clone(),
            status,
            reply,
            iterations: run.iterations,
            confidence: confidence(status, &executions, run.cap),
            tool_executions: executions,
            usage: run.usage,
            cap: run.cap,
            error: run.error.clone(),
            pending_confirmation,
        }
    }
}

fn pending(run: &RunState, slot: &Slot) -> PendingConfirmation {
    PendingConfirmation {
        run_id: run.id.clone(),
        call_id: slot.call.id.clone(),
        tool: slot.call.name.clone(),
        arguments: slot.call.arguments.clone(),
        fingerprint: slot.fingerprint.clone(),
    }
}

fn elapsed(run: &RunState, at: Timestamp) -> u64 {
    at.millis_since(run.started_at).saturating_sub(run.parked_ms)
}

fn describe(waiting: &Waiting) -> String {
    match waiting {
        Waiting::Nothing => "nothing".into(),
        Waiting::Model { call, .. } => format!("model call {call}"),
        Waiting::Tools => "its running tool calls".into(),
        Waiting::Confirmation(_) => "a confirmation".into(),
    }
}

struct Immediate {
    outcome: ToolOutcome,
    reused_from: Option<CallId>,
}

/// Decides what happens to one requested call. Returns the slot's state and,
/// for a call answered without running, its outcome.
fn classify(
    call: &ToolCall,
    fp: &str,
    resolved: &ResolvedAgent,
    catalog: &Catalog,
    blackboard: &Blackboard,
    run: &mut RunState,
    cap: &mut Option<Cap>,
) -> (SlotState, Option<Immediate>) {
    let error = |kind, message: String| {
        (
            SlotState::Done {
                outcome: ToolOutcome::Error(ToolError::new(kind, message.clone())),
                duration_ms: 0,
                reused_from: None,
                handoff: false,
            },
            Some(Immediate {
                outcome: ToolOutcome::Error(ToolError::new(kind, message)),
                reused_from: None,
            }),
        )
    };
    if let Some(target) = resolved.handoff_target(call.name.as_str()) {
        if run.handoff.is_some() {
            return error(
                ToolErrorKind::Failed,
                "only one handoff per step; the conversation is already being handed over".into(),
            );
        }
        let reason = call
            .arguments
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("handoff")
            .to_string();
        run.handoff = Some((target.clone(), reason));
        let outcome = ToolOutcome::Ok(json!(format!("Transferred to {target}.")));
        return (
            SlotState::Done {
                outcome,
                duration_ms: 0,
                reused_from: None,
                handoff: true,
            },
            None,
        );
    }
    if let Value::String(raw) = &call.arguments {
        return error(
            ToolErrorKind::InvalidArguments,
            format!("the arguments are not valid JSON: {raw}; send a JSON object that matches the tool's schema"),
        );
    }
    if !call.arguments.is_object() {
        return error(
            ToolErrorKind::InvalidArguments,
            format!("the arguments must be a JSON object, not {}", call.arguments),
        );
    }
    let spec: Option<&ToolSpec> = resolved
        .has_tool(&call.name)
        .then(|| catalog.tool(&call.name))
        .flatten();
    let Some(spec) = spec else {
        let mut names: Vec<&str> = resolved.defs.iter().map(|d| d.name.as_str()).collect();
        names.sort_unstable();
        return error(
            ToolErrorKind::UnknownTool,
            format!(
                "there is no tool named {:?}; the tools are: {}",
                call.name.as_str(),
                names.join(", ")
            ),
        );
    };
    let missing: Vec<&str> = spec
        .requires
        .iter()
        .filter(|k| !blackboard.available.contains_key(*k))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        let providers: Vec<&str> = resolved
            .tools
            .iter()
            .filter_map(|t| catalog.tool(t))
            .filter(|t| t.provides.iter().any(|p| missing.contains(&p.as_str())))
            .map(|t| t.name.as_str())
            .collect();
        let hint = if providers.is_empty() {
            "ask the person for it".to_string()
        } else {
            format!("ask the person for it or call {} first", providers.join(" or "))
        };
        return error(
            ToolErrorKind::MissingInformation,
            format!(
                "{} needs information that is missing: {}; {hint}",
                spec.name,
                missing.join(", ")
            ),
        );
    }
    if spec.annotations.cacheable {
        if let Some(previous) = blackboard.cached(&spec.name, fp) {
            let outcome = previous.outcome.clone();
            return (
                SlotState::Done {
                    outcome: outcome.clone(),
                    duration_ms: 0,
                    reused_from: Some(previous.call_id.clone()),
                    handoff: false,
                },
                Some(Immediate {
                    outcome,
                    reused_from: Some(previous.call_id.clone()),
                }),
            );
        }
    }
    if run.tool_calls >= run.policy.max_tool_calls {
        *cap = Some(Cap::ToolCalls);
        return error(
            ToolErrorKind::LimitReached,
            format!(
                "not run: the run reached its limit of {} tool calls",
                run.policy.max_tool_calls
            ),
        );
    }
    run.tool_calls += 1;
    let confirm = match run.policy.confirmation {
        ConfirmationPolicy::Annotated => spec.annotations.requires_confirmation,
        ConfirmationPolicy::SideEffects => spec.annotations.requires_confirmation || !spec.annotations.read_only,
        ConfirmationPolicy::Never => false,
    };
    if confirm {
        (SlotState::Queued, None)
    } else {
        (SlotState::Running, None)
    }
}

/// Seed 001's confidence: 0.9 for an answer with every tool call successful,
/// lower as calls fail, lower again when a cap cut the run short.
fn confidence(status: RunStatus, executions: &[ToolExecution], cap: Option<Cap>) -> f32 {
    let base: f32 = match status {
        RunStatus::Completed => 0.9,
        RunStatus::NeedsInput | RunStatus::AwaitingConfirmation => 0.5,
        RunStatus::Failed | RunStatus::Cancelled => return 0.0,
    };
    let ratio = if executions.is_empty() {
        1.0
    } else {
        executions.iter().filter(|e| e.success()).count() as f32 / executions.len() as f32
    };
    let mut value = base * (0.5 + 0.5 * ratio);
    if cap.is_some() {
        value *= 0.6;
    }
    (value * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests;
