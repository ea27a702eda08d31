//! A session and its deterministic `step`.
//!
//! The session is two parts: the [`Conversation`] (history, agent,
//! blackboard, counters) and the run in progress, if any ([`RunState`]).
//! `step` checks an input against both without changing anything, then
//! takes the run out and hands it, with the conversation, to a [`Driver`]
//! that owns it for the step: no handler looks the run up, and a handler
//! that finishes the run says so in what it returns ([`Next`]).

mod answer;
mod driver;
mod elicit;
mod guard;
mod reading;
mod report;
mod routing;
mod tools;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::batch::Slot;
use crate::blackboard::{Blackboard, ToolExecution};
use crate::catalog::Catalog;
use crate::delegate::{AgentCall, Parent, Question, child_session, default_prompt, render_prompt};
use crate::effect::{Effect, Step};
use crate::elicitation::{Asked, PendingElicitation};
use crate::error::StepError;
use crate::event::{Event, EventKind};
use crate::fork::{Fork, ForkOrigin};
use crate::history::{RunningSummary, TurnIndex};
use crate::hub::Offer;
use crate::id::{AgentId, CallId, IdempotencyKey, RunId, SessionId};
use crate::input::{Input, StartRun};
use crate::message::Message;
use crate::model::Usage;
use crate::output::RunOutput;
use crate::pending::{Decision, PendingChoice, PendingConfirmation};
use crate::phase::Phase;
use crate::planner::{LlmPlanner, Plan};
use crate::planner_mode::PlannerMode;
use crate::policy::Cap;
use crate::reading::request as reading_request;
use crate::run::{ModelPurpose, Run, RunState, Waiting};
use crate::time::Timestamp;
use crate::tool::ToolOutcome;

use driver::{Driver, Fault, Flow, Next};

/// The blackboard key that holds who is asking ([`StartRun::user`]).
const USER_KEY: &str = "user_id";

/// One conversation: its history, current agent, blackboard and the run in
/// progress, if any.
///
/// `step` is a pure function of the session and its input: the same inputs
/// in the same order always give the same session and the same effects. An
/// engine journals each accepted input and replays the journal to rebuild
/// the session after a crash; [`Session::pending_effects`] then says which
/// effects were still outstanding. A session serializes (serde) for
/// snapshots and deserializes back to an equal session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Session {
    conversation: Conversation,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    run: Option<RunState>,
}

/// Everything of a session but its run in progress.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Conversation {
    id: SessionId,
    agent: AgentId,
    #[serde(default)]
    history: Vec<Message>,
    #[serde(default)]
    blackboard: Blackboard,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_output: Option<RunOutput>,
    next_seq: u64,
    next_call: u64,
    #[serde(default)]
    usage: Usage,
    #[serde(default)]
    runs: u64,
    /// The ids callers gave the session's runs (the others are numbered
    /// `r1`, `r2`... by `runs`): a new run's id must be new.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    given_run_ids: BTreeSet<RunId>,
    #[serde(default)]
    ended: bool,
    /// Whether the caller pinned the session to its agent (no hub routing).
    #[serde(default, skip_serializing_if = "is_false")]
    pinned: bool,
    /// The tenant the session belongs to (its first input's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tenant: Option<String>,
    /// Known information of agents whose goal is unfinished, restored when
    /// the conversation comes back to them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    boards: BTreeMap<AgentId, BTreeMap<String, Value>>,
    /// What the hub last offered the person to choose from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    offer: Option<Offer>,
    /// The run's handoffs since its last tool progress: the agents left, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    trail: Vec<AgentId>,
    /// The log length when the trail last restarted.
    #[serde(default)]
    trail_log: usize,
    /// The agent that gave the run's message back to the hub (`list_agents`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    returned_from: Option<AgentId>,
    /// Whether the current agent's goal was declared complete in this run.
    #[serde(default, skip_serializing_if = "is_false")]
    goal_done: bool,
    /// For a child session: the parent's call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parent: Option<Parent>,
    /// The model's running summary of the first turns (the agent's history policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    summary: Option<RunningSummary>,
    /// For a fork: where it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    forked_from: Option<ForkOrigin>,
    /// Where the history's turns begin (rebuilt, not stored).
    #[serde(skip)]
    turns: TurnIndex,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// What one step produced so far, and the time of its input.
struct Outbox {
    at: Timestamp,
    events: Vec<Event>,
    effects: Vec<Effect>,
}

impl Conversation {
    /// Emits an event of `run` (or of the session, for `None`).
    fn emit(&mut self, out: &mut Outbox, run: Option<&RunId>, kind: EventKind) {
        out.events.push(Event {
            seq: self.next_seq,
            delta: 0,
            at: out.at,
            session: self.id.clone(),
            run: run.cloned(),
            kind,
        });
        self.next_seq += 1;
    }

    /// Appends a message to the history and emits it.
    fn push_message(&mut self, out: &mut Outbox, run: Option<&RunId>, message: Message) {
        self.history.push(message.clone());
        self.turns.catch_up(&self.history);
        self.emit(out, run, EventKind::Message { message });
    }

    /// Starts from a fork: its tool calls go in the log (marked as made in
    /// the original, with what they provided), its messages in the history.
    fn take_fork(&mut self, out: &mut Outbox, catalog: &Catalog, fork: Fork) {
        for done in fork.done {
            if let (ToolOutcome::Ok(value), Some(spec)) = (&done.outcome, catalog.tool(&done.tool)) {
                self.blackboard.take_provided(spec, value);
            }
            self.blackboard.log.push(ToolExecution {
                run_id: done.run_id,
                call_id: done.call_id,
                tool: done.tool,
                arguments: done.arguments,
                fingerprint: done.fingerprint,
                duration_ms: 0,
                outcome: done.outcome,
                reused_from: None,
                forked: true,
            });
        }
        for message in fork.messages {
            self.push_message(out, None, message);
        }
    }

    /// How deep the session is: 0 for a top-level one, 1 for a child...
    fn depth(&self) -> u32 {
        self.parent.as_ref().map_or(0, |p| p.depth)
    }

    /// How many agent calls `run` may make: its policy's, or what is left
    /// of the parent's budget if that is less.
    fn agent_budget(&self, run: &Run) -> u32 {
        let own = run.policy().max_agent_calls;
        self.parent.as_ref().map_or(own, |p| own.min(p.agent_calls))
    }

    /// The effect that runs the call in `slot` of `run`: a tool call, with
    /// what the tool may read (who asked, the blackboard's information), or
    /// for an agent tool a child run.
    fn call_effect(&self, catalog: &Catalog, run: &Run, slot: &Slot) -> Effect {
        let call = &slot.call;
        let mut key = IdempotencyKey::derive(&self.id, run.id(), &call.id);
        if slot.attempt > 0 {
            // The call runs again with the person's choice: a new attempt.
            key = IdempotencyKey::given(format!("{}#{}", key.as_str(), slot.attempt));
        }
        if let Some(spec) = catalog.tool(&call.name).filter(|s| s.agent.is_some()) {
            let prompt = match &spec.prompt {
                Some(template) => render_prompt(template, &call.arguments),
                None => default_prompt(&call.arguments),
            };
            let agent = spec.agent.clone().unwrap_or_else(|| AgentId::new(call.name.as_str()));
            return Effect::CallAgent(Box::new(AgentCall {
                run_id: run.id().clone(),
                call: call.clone(),
                agent,
                session: child_session(&self.id, &call.id),
                prompt,
                user: run.user().map(str::to_string),
                tenant: self.tenant.clone(),
                asked_at: run.asked_at(),
                parent: Parent {
                    session: self.id.clone(),
                    run: run.id().clone(),
                    call_id: call.id.clone(),
                    depth: self.depth() + 1,
                    agent_calls: self.agent_budget(run).saturating_sub(run.agent_calls()),
                },
                key,
                answer: slot.answer.clone(),
            }));
        }
        Effect::CallTool {
            run_id: run.id().clone(),
            call: call.clone(),
            key,
            user: run.user().map(str::to_string),
            blackboard: self.blackboard.available.clone(),
            asked_at: run.asked_at(),
            checkpoint: slot.checkpoint.clone(),
            guardrails: catalog.tool_guardrails(&self.agent),
        }
    }
}

impl Session {
    /// A new, empty session that starts with `agent`.
    pub fn new(id: impl Into<SessionId>, agent: impl Into<AgentId>) -> Self {
        Self {
            conversation: Conversation {
                id: id.into(),
                agent: agent.into(),
                history: Vec::new(),
                blackboard: Blackboard::default(),
                last_output: None,
                next_seq: 1,
                next_call: 1,
                usage: Usage::default(),
                runs: 0,
                given_run_ids: BTreeSet::new(),
                ended: false,
                pinned: false,
                tenant: None,
                boards: BTreeMap::new(),
                offer: None,
                trail: Vec::new(),
                trail_log: 0,
                returned_from: None,
                goal_done: false,
                parent: None,
                summary: None,
                forked_from: None,
                turns: TurnIndex::default(),
            },
            run: None,
        }
    }

    /// The session id.
    pub fn id(&self) -> &SessionId {
        &self.conversation.id
    }

    /// The agent the conversation is with now.
    pub fn agent(&self) -> &AgentId {
        &self.conversation.agent
    }

    /// The conversation so far.
    pub fn history(&self) -> &[Message] {
        &self.conversation.history
    }

    /// The model's running summary of the conversation's first turns, if
    /// the agent's history policy asked the model for one.
    pub fn running_summary(&self) -> Option<&RunningSummary> {
        self.conversation.summary.as_ref()
    }

    /// Shared knowledge: the goal, what is known so far, and every tool execution.
    pub fn blackboard(&self) -> &Blackboard {
        &self.conversation.blackboard
    }

    /// Whether the caller pinned the session to one agent (`--agent`): the
    /// hub then never routes it elsewhere.
    pub fn is_pinned(&self) -> bool {
        self.conversation.pinned
    }

    /// For a fork: the session it was forked from, at which event, and
    /// what that means for actions already done.
    pub fn forked_from(&self) -> Option<&ForkOrigin> {
        self.conversation.forked_from.as_ref()
    }

    /// The tenant the session belongs to, if its first input named one.
    pub fn tenant(&self) -> Option<&str> {
        self.conversation.tenant.as_deref()
    }

    /// The known information saved for `agent`, whose goal is unfinished;
    /// it comes back when the conversation returns to the agent.
    pub fn saved_information(&self, agent: &AgentId) -> Option<&BTreeMap<String, Value>> {
        self.conversation.boards.get(agent)
    }

    /// The run in progress, if any.
    pub fn active_run(&self) -> Option<&RunId> {
        self.run.as_ref().map(|r| r.run.id())
    }

    /// The catalog version the run in progress plans with (see
    /// [`StartRun::catalog_version`]); engines step every input of the run
    /// with that catalog.
    pub fn catalog_version(&self) -> Option<&str> {
        self.run.as_ref().and_then(|r| r.run.catalog_version())
    }

    /// The phase of the run in progress.
    pub fn phase(&self) -> Option<Phase> {
        self.run.as_ref().map(|r| r.run.phase())
    }

    /// The call parked for approval, if any (a child's call, asked through
    /// this session, names the child session).
    pub fn pending_confirmation(&self) -> Option<PendingConfirmation> {
        let state = self.run.as_ref()?;
        state.waiting.pending(state.run.id())
    }

    /// Whether the run in progress waits for the person (to approve a call,
    /// or to answer what a call asked).
    pub fn waits_for_person(&self) -> bool {
        matches!(
            &self.run,
            Some(RunState {
                waiting: Waiting::Confirmation { .. },
                ..
            })
        )
    }

    /// The question a running call asks the person (MCP elicitation), if
    /// the run waits for one.
    pub fn pending_elicitation(&self) -> Option<PendingElicitation> {
        let state = self.run.as_ref()?;
        state.waiting.pending_elicitation(state.run.id())
    }

    /// The questions the running call `call_id` asked so far, in order,
    /// with the answers given (an engine gives a call issued again the
    /// answer to the same question instead of asking again).
    pub fn asked(&self, call_id: &CallId) -> &[Asked] {
        match &self.run {
            Some(state) => state.waiting.asked(call_id),
            None => &[],
        }
    }

    /// The choice the person is asked to make, if any.
    pub fn pending_choice(&self) -> Option<PendingChoice> {
        let state = self.run.as_ref()?;
        state.waiting.pending_choice(state.run.id())
    }

    /// For a child session (an agent called as a tool): the parent's call it answers.
    pub fn parent(&self) -> Option<&Parent> {
        self.conversation.parent.as_ref()
    }

    /// The output of the last run that finished or parked.
    pub fn last_output(&self) -> Option<&RunOutput> {
        self.conversation.last_output.as_ref()
    }

    /// Tokens used by the whole session.
    pub fn usage(&self) -> Usage {
        self.conversation.usage
    }

    /// How many runs the session has started.
    pub fn runs_started(&self) -> u64 {
        self.conversation.runs
    }

    /// The seq of the last event emitted (0 before any).
    pub fn last_seq(&self) -> u64 {
        self.conversation.next_seq - 1
    }

    /// Whether the session was ended.
    pub fn is_ended(&self) -> bool {
        self.conversation.ended
    }

    /// Applies one input.
    ///
    /// On `Err` the session is unchanged and the input must not be journaled.
    /// On `Ok` the engine journals the input, publishes the events, then
    /// performs the effects in order.
    pub fn step(&mut self, input: Input, catalog: &Catalog) -> Result<Step, StepError> {
        let mut out = Outbox {
            at: input.at(),
            events: Vec::new(),
            effects: Vec::new(),
        };
        if let Input::StartRun(start) = &input {
            self.check_tenant(start.tenant.as_deref())?;
        }
        match input {
            Input::Open(open) => {
                if !self.is_fresh() {
                    return Err(StepError::AlreadyOpen);
                }
                if catalog.agent(&open.agent).is_none() && !catalog.is_hub(&open.agent) {
                    return Err(StepError::UnknownAgent {
                        agent: open.agent,
                        known: catalog.agent_ids(),
                    });
                }
                self.conversation.pinned = open.named && !catalog.is_hub(&open.agent);
                self.conversation.agent = open.agent.clone();
                self.conversation.tenant = open.tenant.clone();
                self.conversation.emit(
                    &mut out,
                    None,
                    EventKind::SessionOpened {
                        agent: open.agent,
                        tenant: open.tenant,
                        forked_from: open.fork.as_ref().map(|f| f.origin.clone()),
                    },
                );
                if let Some(fork) = open.fork {
                    self.conversation.forked_from = Some(fork.origin.clone());
                    self.conversation.take_fork(&mut out, catalog, *fork);
                }
            }
            Input::StartRun(start) if self.answers_confirmation(&start) => {
                self.answer_confirmation(&mut out, catalog, &start);
            }
            Input::StartRun(start) if self.answers_question(&start) => {
                self.answer_question(&mut out, catalog, &start)?;
            }
            Input::StartRun(start) => {
                self.check_start(&start, catalog)?;
                self.start_run(&mut out, catalog, start);
            }
            Input::ModelReplied {
                run_id, call, reply, ..
            } => {
                self.active(&run_id)?.expect_model(call, "model_replied")?;
                self.drive(&mut out, catalog, |d, waiting| match waiting {
                    Waiting::Model { .. } if reply.guardrail.is_some() => {
                        d.count_usage(&reply);
                        let trip = reply.guardrail.clone().ok_or_else(|| Fault::new("no guardrail"))?;
                        d.tripped_waiting(waiting, None, trip)
                    }
                    Waiting::Model { purpose, .. } => d.model_replied(purpose, reply),
                    Waiting::Reading {
                        parked,
                        rules_approve,
                        at,
                        ..
                    } => d.answer_read(parked, rules_approve, Ok(reply), at),
                    other => Err(Fault::mismatch(other)),
                });
            }
            Input::ModelFailed {
                run_id, call, error, ..
            } => {
                self.active(&run_id)?.expect_model(call, "model_failed")?;
                self.drive(&mut out, catalog, |d, waiting| match waiting {
                    Waiting::Model { purpose, .. } => d.model_failed(purpose, error),
                    Waiting::Reading {
                        parked,
                        rules_approve,
                        at,
                        ..
                    } => d.answer_read(parked, rules_approve, Err(error), at),
                    other => Err(Fault::mismatch(other)),
                });
            }
            Input::ToolFinished {
                run_id,
                call_id,
                outcome,
                duration_ms,
                usage,
                ..
            } => {
                let slot = self.active(&run_id)?.expect_tool(&call_id)?;
                self.drive(&mut out, catalog, |d, waiting| match waiting {
                    Waiting::Tools { .. } if guard::tool_trip(&outcome).is_some() => {
                        d.add_child_usage(usage);
                        let trip = guard::tool_trip(&outcome).ok_or_else(|| Fault::new("no guardrail"))?;
                        d.tripped_waiting(waiting, Some((slot, outcome, duration_ms)), trip)
                    }
                    Waiting::Tools { batch } => {
                        d.add_child_usage(usage);
                        d.tool_finished(batch.into_batch(), slot, outcome, duration_ms)
                    }
                    other => Err(Fault::mismatch(other)),
                });
            }
            Input::ToolAsked {
                run_id,
                call_id,
                question,
                usage,
                checkpoint,
                ..
            } => {
                let slot = self.active(&run_id)?.expect_tool(&call_id)?;
                self.drive(&mut out, catalog, |d, waiting| match (waiting, question) {
                    (Waiting::Tools { mut batch }, Question::Elicitation { elicitation }) => {
                        d.add_child_usage(usage);
                        if let Some(checkpoint) = checkpoint {
                            batch.checkpoint(slot, checkpoint);
                        }
                        d.elicit(batch.into_batch(), slot, elicitation)
                    }
                    (Waiting::Tools { batch }, question) => {
                        d.add_child_usage(usage);
                        d.tool_asked(batch.into_batch(), slot, question)
                    }
                    (other, _) => Err(Fault::mismatch(other)),
                });
            }
            Input::ElicitationAnswered {
                run_id,
                call_id,
                question,
                answer,
                ..
            } => {
                let state = self.active(&run_id)?;
                if state.expect_child_answer(&call_id, question, &answer)? {
                    // A child's question: checked here, answered there.
                    self.drive(&mut out, catalog, |d, waiting| match waiting {
                        Waiting::Confirmation { parked } => d.answered_for_child(parked, call_id, question, answer),
                        other => Err(Fault::mismatch(other)),
                    });
                } else {
                    let slot = state.expect_answer(&call_id, question, &answer)?;
                    self.drive(&mut out, catalog, |d, waiting| {
                        d.answered(waiting, slot, call_id, question, answer)
                    });
                }
            }
            Input::Sampled {
                run_id, call_id, usage, ..
            } => {
                let state = self.active(&run_id)?;
                state.expect_tool(&call_id)?;
                self.drive(&mut out, catalog, |d, waiting| {
                    d.add_child_usage(Some(usage));
                    Ok(driver::Next::Wait(waiting))
                });
            }
            Input::ToolReported {
                run_id,
                call_id,
                report,
                ..
            } => {
                let slot = self.active(&run_id)?.expect_tool(&call_id)?;
                self.drive(&mut out, catalog, |d, waiting| {
                    d.reported(waiting, slot, call_id, report)
                });
            }
            Input::Confirm(confirmation) => {
                self.active(&confirmation.run_id)?.expect_confirmation(&confirmation)?;
                if let Decision::Amend { arguments } = &confirmation.decision {
                    self.check_amendment(arguments, catalog)?;
                }
                // A structured answer settles the call even while the model
                // reads a message about it (its reading is then refused).
                self.drive(&mut out, catalog, |d, waiting| match waiting {
                    Waiting::Confirmation { parked } | Waiting::Reading { parked, .. } => {
                        d.confirmed(parked, confirmation)
                    }
                    other => Err(Fault::mismatch(other)),
                });
            }
            Input::End { reason, .. } => {
                if self.conversation.ended {
                    return Err(StepError::SessionEnded);
                }
                self.drive(&mut out, catalog, |d, waiting| d.cancel(waiting, &reason));
                self.conversation.ended = true;
                self.conversation
                    .emit(&mut out, None, EventKind::SessionEnded { reason });
            }
            Input::CancelRun { reason, .. } => {
                if self.conversation.ended {
                    return Err(StepError::SessionEnded);
                }
                if self.run.is_none() {
                    return Err(StepError::Idle);
                }
                self.drive(&mut out, catalog, |d, waiting| d.cancel(waiting, &reason));
            }
            Input::Tick { at } => {
                if !self.run.as_ref().is_some_and(|r| r.budget_exhausted(at)) {
                    return Err(StepError::Idle);
                }
                self.drive(&mut out, catalog, |d, waiting| d.time_up(waiting));
            }
        }
        Ok(Step {
            events: out.events,
            effects: out.effects,
        })
    }

    /// Hands the run in progress (if any) and the conversation to a driver
    /// for one handler.
    fn drive(&mut self, out: &mut Outbox, catalog: &Catalog, handler: impl FnOnce(&mut Driver<'_>, Waiting) -> Flow) {
        let Some(RunState { run, waiting }) = self.run.take() else {
            return;
        };
        self.run = run_handler(&mut self.conversation, run, catalog, out, |driver| {
            handler(driver, waiting)
        });
    }

    /// Whether nothing has happened in the session yet.
    fn is_fresh(&self) -> bool {
        self.conversation.next_seq == 1 && self.conversation.runs == 0
    }

    fn start_run(&mut self, out: &mut Outbox, catalog: &Catalog, mut start: StartRun) {
        if self.is_fresh() {
            self.conversation.tenant = start.tenant.clone();
        }
        if let Some(user) = &start.user {
            // Who is asking is the caller's to say, not the context's.
            start.context.insert(USER_KEY.into(), Value::String(user.clone()));
        }
        if self.conversation.parent.is_none() {
            self.conversation.parent = start.parent.clone();
        }
        let mut run = self.conversation.new_run(&start, catalog);
        run.set_user(start.user.clone());
        run.set_asked_at(start.asked_at);
        self.run = run_handler(&mut self.conversation, run, catalog, out, |driver| driver.start(start));
    }

    /// The effects still outstanding: what an engine must issue again after
    /// rebuilding the session from its journal (model and tool calls without a
    /// recorded result, the parked confirmation, the time budget's wake-up).
    pub fn pending_effects(&self, catalog: &Catalog) -> Vec<Effect> {
        let Some(RunState { run, waiting }) = &self.run else {
            return Vec::new();
        };
        let conversation = &self.conversation;
        let mut effects = Vec::new();
        match waiting {
            Waiting::Model { call, purpose } => {
                let plan = driver::consult(conversation, run, catalog, |planner, view| match purpose {
                    ModelPurpose::Synthesize => planner.synthesize(view, run.cap().unwrap_or(Cap::Iterations)),
                    ModelPurpose::Plan => planner.next(view),
                    ModelPurpose::Summarize => match LlmPlanner::summary_request(view) {
                        Some((_, request)) => Plan::CallModel(request),
                        None => planner.next(view),
                    },
                });
                if let Ok(Plan::CallModel(request)) = plan {
                    let guardrails = catalog.output_guardrails(&request.agent);
                    effects.push(run.model_effect(*call, request, guardrails));
                }
            }
            Waiting::Tools { batch } => {
                for slot in batch.batch().running_slots() {
                    effects.push(conversation.call_effect(catalog, run, slot));
                }
            }
            Waiting::Confirmation { parked } => {
                effects.push(Effect::AwaitUser(driver::park_output(conversation, run, parked, None)));
            }
            Waiting::Reading { call, parked, text, .. } => {
                let call_name = &parked.call().name;
                let owner = catalog.agent(&conversation.agent);
                if let (Some(pending), Some(owner), Some(spec)) =
                    (parked.pending(run.id()), owner, catalog.tool(call_name))
                {
                    let request = reading_request(&owner.spec, spec, &pending, text);
                    let guardrails = owner.spec.guardrails.output.clone();
                    effects.push(run.model_effect(*call, request, guardrails));
                }
            }
        }
        if let Some(at) = run.deadline() {
            effects.push(Effect::WakeAt {
                run_id: run.id().clone(),
                at,
            });
        }
        effects
    }

    // ----- validation (no mutation) -----

    fn active(&self, run_id: &RunId) -> Result<&RunState, StepError> {
        match &self.run {
            Some(state) if state.run.id() == run_id => Ok(state),
            _ => Err(StepError::NoSuchRun { run_id: run_id.clone() }),
        }
    }

    /// A session is its first input's tenant's: a new session takes the
    /// caller's; another tenant's input is refused.
    fn check_tenant(&self, tenant: Option<&str>) -> Result<(), StepError> {
        if !self.is_fresh() && self.conversation.tenant.as_deref() != tenant {
            return Err(StepError::OtherTenant);
        }
        Ok(())
    }

    fn check_start(&self, start: &StartRun, catalog: &Catalog) -> Result<(), StepError> {
        if self.conversation.ended {
            return Err(StepError::SessionEnded);
        }
        if let Some(state) = &self.run {
            return Err(StepError::RunInProgress {
                run_id: state.run.id().clone(),
                phase: state.run.phase(),
            });
        }
        if let Some(run_id) = &start.run_id {
            if self.conversation.run_id_taken(run_id) {
                return Err(StepError::RunIdTaken { run_id: run_id.clone() });
            }
        }
        if !start.messages.iter().any(|m| matches!(m, Message::User { .. })) {
            return Err(StepError::NoUserMessage);
        }
        if start.messages.iter().any(|m| matches!(m, Message::Tool { .. })) {
            return Err(StepError::Unexpected {
                input: "start_run".into(),
                expected: "user, system or assistant messages (tool results come from tool calls)".into(),
            });
        }
        let agent = start.agent.as_ref().unwrap_or(&self.conversation.agent);
        let Some(resolved) = catalog.agent(agent) else {
            return Err(StepError::UnknownAgent {
                agent: agent.clone(),
                known: catalog.agent_ids(),
            });
        };
        let usable = match start.planner {
            PlannerMode::Model => true,
            // The hub routes by rules of its own.
            PlannerMode::Rules => resolved.has_rules() || catalog.is_hub(agent),
            PlannerMode::Custom => catalog.custom_planner(agent).is_some() || catalog.is_hub(agent),
        };
        if !usable {
            return Err(StepError::NoPlanner { agent: agent.clone() });
        }
        Ok(())
    }
}

/// Runs one handler on `run`: keeps the run if the handler left it waiting,
/// drops it if the handler finished it; a fault fails the run.
fn run_handler(
    conversation: &mut Conversation,
    run: Run,
    catalog: &Catalog,
    out: &mut Outbox,
    handler: impl FnOnce(&mut Driver<'_>) -> Flow,
) -> Option<RunState> {
    let mut driver = Driver::new(conversation, run, catalog, out);
    let next = match handler(&mut driver) {
        Ok(next) => next,
        Err(fault) => driver.fail(fault),
    };
    match next {
        Next::Wait(waiting) => Some(RunState {
            run: driver.into_run(),
            waiting,
        }),
        Next::Closed => None,
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod hub_tests;

#[cfg(test)]
mod delegate_tests;

#[cfg(test)]
mod tenant_tests;

#[cfg(test)]
mod elicit_tests;

#[cfg(test)]
mod guard_tests;
