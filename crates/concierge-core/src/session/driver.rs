//! The driver: one run, owned for one step, with the conversation it belongs
//! to. Starting, planning, the model's replies, time running out, ending and
//! failing live here; tool calls live in `tools.rs`.
//!
//! Every handler returns what the run does next: wait for something
//! ([`Next::Wait`]) or nothing, because it finished ([`Next::Closed`]). A
//! [`Fault`] (a planner that cannot run, a transition outside the table)
//! fails the run through `Error → Completion`; a fault raised while a batch
//! was in hand carries the batch, so its calls still get their answers.

use std::fmt;

use super::{Conversation, Outbox};
use crate::batch::{Batch, Parked};
use crate::catalog::Catalog;
use crate::effect::Effect;
use crate::event::EventKind;
use crate::history::{TurnIndex, fallback_summary, running_summary};
use crate::hub::{is_builtin, wants_menu};
use crate::id::{AgentId, RunId};
use crate::input::StartRun;
use crate::message::Message;
use crate::model::{ModelReply, ModelRequest};
use crate::output::{RunOutput, RunStatus};
use crate::pending::PendingConfirmation;
use crate::phase::{InvalidTransition, Phase};
use crate::planner::{LlmPlanner, Plan, PlanView, Planner, RulesPlanner, summarize_results};
use crate::planner_mode::PlannerMode;
use crate::policy::{Cap, RunPolicy};
use crate::run::{ModelPurpose, NewRun, Outcome, Run, Waiting};
use crate::text::tokens;
use crate::tool::ToolErrorKind;

/// What a run does after a handler.
pub(super) enum Next {
    /// It waits for this.
    Wait(Waiting),
    /// It finished (its `Finish` effect is out) and leaves the session.
    Closed,
}

/// What went wrong after an input was accepted: the run fails, never left
/// half-applied.
pub(super) struct Fault {
    message: String,
    /// The batch that was in hand, so its open calls are answered.
    batch: Option<Batch>,
}

impl Fault {
    pub(super) fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            batch: None,
        }
    }

    fn transition(error: InvalidTransition, batch: Option<Batch>) -> Self {
        Self {
            message: error.to_string(),
            batch,
        }
    }

    /// The run waited for something else than the input's handler expected
    /// (the input checks rule this out; a fault rather than a panic if not).
    pub(super) fn mismatch(waiting: Waiting) -> Self {
        let expected = waiting.describe();
        let batch = match waiting {
            Waiting::Model { .. } => None,
            Waiting::Tools { batch } => Some(batch.into_batch()),
            Waiting::Confirmation { parked } | Waiting::Reading { parked, .. } => Some(parked.into_batch()),
        };
        Self {
            message: format!("the input did not fit the run, which was waiting for {expected}"),
            batch,
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// What a handler returns.
pub(super) type Flow = Result<Next, Fault>;

/// One run and its conversation, for one step.
pub(super) struct Driver<'a> {
    pub(super) conv: &'a mut Conversation,
    pub(super) run: Run,
    pub(super) catalog: &'a Catalog,
    pub(super) out: &'a mut Outbox,
    /// The agent the hub moved the message to in this step, if it did: the
    /// hub has decided, so the agent's "I did not understand" becomes what
    /// it can do (its starter prompt), and the message is not offered back.
    pub(super) opened: Option<AgentId>,
}

/// The planner a run uses, resolved from its mode and the catalog.
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

/// Asks the run's planner, with a view of the conversation, through `f`.
pub(super) fn consult<R>(
    conv: &Conversation,
    run: &Run,
    catalog: &Catalog,
    f: impl FnOnce(&dyn Planner, &PlanView<'_>) -> R,
) -> Result<R, String> {
    let agent = &conv.agent;
    let resolved = catalog
        .agent(agent)
        .ok_or_else(|| format!("agent {agent} is not in the catalog"))?;
    let planner = match run.planner() {
        PlannerMode::Model => PlannerRef::Llm(LlmPlanner),
        PlannerMode::Rules => match &resolved.rules {
            Some(rules) => PlannerRef::Rules(RulesPlanner::new(rules)),
            None => {
                return Err(format!(
                    "agent {agent} has no rules and this run has no model; configure a model"
                ));
            }
        },
        PlannerMode::Custom => match catalog.custom_planner(agent) {
            Some(p) => PlannerRef::Custom(p.as_ref()),
            None => return Err(format!("agent {agent} has no custom planner")),
        },
    };
    // The index follows every message appended; a session just read from a
    // snapshot has it once its next message is.
    let fresh;
    let turns = match conv.turns.covers(&conv.history) {
        true => &conv.turns,
        false => {
            fresh = TurnIndex::of(&conv.history);
            &fresh
        }
    };
    let view = PlanView {
        agent: &resolved.spec,
        tools: &resolved.defs,
        history: &conv.history,
        turns,
        blackboard: &conv.blackboard,
        summary: conv.summary.as_ref(),
    };
    Ok(f(planner.get(), &view))
}

/// The output of `run` with `status`.
pub(super) fn output(
    conv: &Conversation,
    run: &Run,
    status: RunStatus,
    reply: Option<String>,
    pending_confirmation: Option<PendingConfirmation>,
) -> RunOutput {
    RunOutput::build(
        Outcome {
            session_id: conv.id.clone(),
            agent: conv.agent.clone(),
            status,
            reply,
            pending_confirmation,
            pending_choice: None,
        },
        run,
        &conv.blackboard.log,
    )
}

/// The output of `run` parked on `parked`: the call to approve, or the
/// choice to make (its question and options are the reply, after `reply`).
pub(super) fn park_output(conv: &Conversation, run: &Run, parked: &Parked, reply: Option<String>) -> RunOutput {
    if let Some(choice) = parked.pending_choice(run.id()) {
        let text = match reply {
            Some(reply) => format!("{reply}\n\n{}", choice.choice.text()),
            None => choice.choice.text(),
        };
        let mut output = output(conv, run, RunStatus::AwaitingChoice, Some(text), None);
        output.pending_choice = Some(choice);
        return output;
    }
    if let Some(question) = parked.pending_elicitation() {
        let text = match reply {
            Some(reply) => format!("{reply}\n\n{}", question.text),
            None => question.text.clone(),
        };
        let mut output = output(conv, run, RunStatus::AwaitingInput, Some(text), None);
        output.pending_elicitation = Some(question);
        return output;
    }
    output(
        conv,
        run,
        RunStatus::AwaitingConfirmation,
        reply,
        parked.pending(run.id()),
    )
}

impl Conversation {
    /// Whether a run of the session may have had `id`: one a caller gave,
    /// or the session's own numbering of a run so far (`r3` once three
    /// runs started, `r3.2` if a caller had taken `r3`).
    pub(super) fn run_id_taken(&self, id: &RunId) -> bool {
        if self.given_run_ids.contains(id) {
            return true;
        }
        let number = id
            .as_str()
            .strip_prefix('r')
            .map(|rest| rest.split_once('.').map_or(rest, |(n, _)| n));
        number
            .and_then(|n| n.parse::<u64>().ok())
            .is_some_and(|n| n >= 1 && n <= self.runs)
    }

    /// Numbers and builds the run `start` asks for (checked beforehand).
    pub(super) fn new_run(&mut self, start: &StartRun, catalog: &Catalog) -> Run {
        let agent = start.agent.as_ref().unwrap_or(&self.agent);
        let policy = match (&start.policy, catalog.agent(agent)) {
            (Some(policy), _) => policy.clone(),
            (None, Some(resolved)) => resolved.spec.policy.clone(),
            (None, None) => RunPolicy::default(),
        };
        self.runs += 1;
        let id = match &start.run_id {
            Some(id) => {
                self.given_run_ids.insert(id.clone());
                id.clone()
            }
            None => {
                // Numbered, past any id a caller gave an earlier run.
                let mut id = RunId::new(format!("r{}", self.runs));
                let mut n = 1;
                while self.given_run_ids.contains(&id) {
                    n += 1;
                    id = RunId::new(format!("r{}.{n}", self.runs));
                }
                id
            }
        };
        Run::new(NewRun {
            id,
            catalog_version: start.catalog_version.clone(),
            planner: start.planner,
            policy,
            at: start.at,
            log_start: self.blackboard.log.len(),
            model: start.model.clone(),
            replay: start.replay.clone(),
        })
    }
}

impl<'a> Driver<'a> {
    pub(super) fn new(conv: &'a mut Conversation, run: Run, catalog: &'a Catalog, out: &'a mut Outbox) -> Self {
        Self {
            conv,
            run,
            catalog,
            out,
            opened: None,
        }
    }

    /// The run, to keep it in the session.
    pub(super) fn into_run(self) -> Run {
        self.run
    }

    // ----- events and phases -----

    pub(super) fn emit(&mut self, kind: EventKind) {
        self.conv.emit(self.out, Some(self.run.id()), kind);
    }

    pub(super) fn say(&mut self, message: Message) {
        self.conv.push_message(self.out, Some(self.run.id()), message);
    }

    pub(super) fn move_to(&mut self, to: Phase) -> Result<(), Fault> {
        let event = self.run.move_to(to).map_err(|e| Fault::transition(e, None))?;
        self.emit(event);
        Ok(())
    }

    /// Moves to `to` with a batch in hand: on success the batch comes back;
    /// on failure the fault carries it.
    pub(super) fn move_holding<T: Into<Batch>>(&mut self, to: Phase, held: T) -> Result<T, Fault> {
        match self.run.move_to(to) {
            Ok(event) => {
                self.emit(event);
                Ok(held)
            }
            Err(error) => Err(Fault::transition(error, Some(held.into()))),
        }
    }

    /// Tokens a child run spent for one of this run's calls count in this
    /// run's totals (and the session's).
    pub(super) fn add_child_usage(&mut self, usage: Option<crate::model::Usage>) {
        if let Some(usage) =
            usage.filter(|u| u.input_tokens > 0 || u.output_tokens > 0 || u.cost_usd.is_some_and(|c| c > 0.0))
        {
            let run_total = self.run.add_usage(usage);
            self.conv.usage.add(usage);
            self.emit(EventKind::Usage { usage, run_total });
        }
    }

    pub(super) fn reach(&mut self, cap: Cap) {
        if let Some(event) = self.run.reach(cap) {
            self.emit(event);
        }
    }

    fn consult<R>(&self, f: impl FnOnce(&dyn Planner, &PlanView<'_>) -> R) -> Result<R, Fault> {
        consult(self.conv, &self.run, self.catalog, f).map_err(Fault::new)
    }

    /// The run's planner's next plan.
    pub(super) fn consult_planner(&self) -> Result<Plan, Fault> {
        self.consult(|planner, view| planner.next(view))
    }

    fn summary(&self) -> String {
        self.consult(|_, view| summarize_results(view)).unwrap_or_default()
    }

    // ----- starting -----

    /// Starts the run: the agent, the `run_started` event, the messages, the
    /// goal, the time budget's wake-up, then the first plan.
    pub(super) fn start(&mut self, start: StartRun) -> Flow {
        let agent = start.agent.clone().unwrap_or_else(|| self.conv.agent.clone());
        let agent_for_event = agent.clone();
        if self.catalog.agent(&agent).is_none() {
            return Err(Fault::new(format!("agent {agent} is not in the catalog")));
        }
        if let Some(named) = &start.agent {
            self.conv.pinned = !self.catalog.is_hub(named);
        }
        self.conv.trail.clear();
        self.conv.trail_log = self.conv.blackboard.log.len();
        self.conv.returned_from = None;
        self.conv.goal_done = false;
        if agent != self.conv.agent {
            self.move_agent(
                agent.clone(),
                "the caller asked for this agent".into(),
                Default::default(),
            );
        }
        self.emit(EventKind::RunStarted {
            agent: agent_for_event,
            planner: start.planner,
            turn_id: start.turn_id,
            labels: start.labels,
            metadata: start.metadata,
        });
        if let Some(trip) = start.guardrail {
            // The message stays out of the conversation: the model never sees it.
            return self.tripped(None, trip);
        }
        let mut goal = None;
        for message in start.messages {
            if let Message::User { content } = &message {
                goal = Some(content.clone());
            }
            self.say(message);
        }
        let text = goal.clone().unwrap_or_default();
        self.set_goal(goal.unwrap_or_default());
        let board = &mut self.conv.blackboard;
        board.available.extend(start.context);
        board.iterations = 0;
        if self.routes() && !self.catalog.is_hub(&self.conv.agent) && wants_menu(&tokens(&text)) {
            if let Some(hub) = self.catalog.hub().cloned() {
                self.move_agent(hub, "the person asked for the menu".into(), Default::default());
            }
        }
        if let Some(at) = self.run.deadline() {
            self.out.effects.push(Effect::WakeAt {
                run_id: self.run.id().clone(),
                at,
            });
        }
        self.move_to(Phase::Planning)?;
        self.plan()
    }

    // ----- planning -----

    /// Consults the planner (or synthesizes, when a cap forbids another iteration).
    pub(super) fn plan(&mut self) -> Flow {
        match self.run.begin_iteration(self.out.at) {
            Ok(iteration) => self.conv.blackboard.iterations = iteration,
            Err(cap) => {
                self.reach(cap);
                return self.synthesize();
            }
        }
        if self.catalog.is_hub(&self.conv.agent) {
            return self.hub_plan();
        }
        if let Some(flow) = self.offer_to_hub() {
            return flow;
        }
        if let Some(request) = self.summary_due() {
            return self.ask_model(request, ModelPurpose::Summarize);
        }
        let plan = self.consult(|planner, view| planner.next(view))?;
        self.apply(plan)
    }

    /// The request for a new running summary, when the agent's history
    /// policy wants one now (runs that plan with the model only).
    fn summary_due(&self) -> Option<ModelRequest> {
        if self.run.planner() != PlannerMode::Model {
            return None;
        }
        let due = self.consult(|_, view| LlmPlanner::summary_request(view)).ok()??;
        Some(due.1)
    }

    /// Keeps the model's new running summary (or, when it could not be
    /// asked, the summary from the log), then plans.
    fn summarized(&mut self, text: Option<String>) -> Flow {
        let due = self.consult(|_, view| LlmPlanner::summary_request(view).map(|(upto, _)| upto))?;
        if let Some(upto) = due {
            let summary = match text {
                Some(text) if !text.trim().is_empty() => running_summary(upto, &text),
                _ => fallback_summary(&self.conv.history, self.conv.summary.as_ref(), upto),
            };
            self.conv.summary = Some(summary);
        }
        let plan = self.consult(|planner, view| planner.next(view))?;
        self.apply(plan)
    }

    pub(super) fn apply(&mut self, plan: Plan) -> Flow {
        match plan {
            Plan::CallTools { text, calls } if calls.iter().any(|c| is_builtin(&c.name)) => self.builtins(text, calls),
            Plan::CallModel(request) => self.ask_model(request, ModelPurpose::Plan),
            Plan::CallTools { text, calls } if calls.is_empty() => self.answer(text),
            Plan::CallTools { text, calls } => self.select_tools(text, calls),
            Plan::Answer(text) => self.answer(text),
            Plan::Clarify(text) => {
                let text = self.opening(text);
                self.move_to(Phase::Clarifying)?;
                let agent = self.conv.agent.clone();
                self.say(Message::assistant(agent, text.clone()));
                self.close(RunStatus::NeedsInput, Some(text))
            }
        }
    }

    fn ask_model(&mut self, request: ModelRequest, purpose: ModelPurpose) -> Flow {
        let call = self.call_model(request);
        Ok(Next::Wait(Waiting::Model { call, purpose }))
    }

    /// Asks the model (the run's next model call): its number.
    pub(super) fn call_model(&mut self, request: ModelRequest) -> u32 {
        let call = self.run.next_model_call();
        self.emit(EventKind::ModelRequested { call });
        let guardrails = self.catalog.output_guardrails(&request.agent);
        self.out.effects.push(self.run.model_effect(call, request, guardrails));
        call
    }

    /// The final step after a cap: the planner answers with what is known
    /// (asking the model once more, without tools, if it plans with one).
    pub(super) fn synthesize(&mut self) -> Flow {
        let cap = self.run.cap().unwrap_or(Cap::Iterations);
        match self.consult(|planner, view| planner.synthesize(view, cap))? {
            Plan::CallModel(request) => {
                self.move_to(Phase::Synthesis)?;
                self.ask_model(request, ModelPurpose::Synthesize)
            }
            Plan::Answer(text) | Plan::Clarify(text) => self.answer(text),
            Plan::CallTools { .. } => {
                let summary = self.summary();
                self.answer(summary)
            }
        }
    }

    fn answer(&mut self, text: String) -> Flow {
        if self.run.phase() != Phase::Synthesis {
            self.move_to(Phase::Synthesis)?;
        }
        let has_results = self.conv.blackboard.log.len() > self.run.log_start();
        let text = if text.trim().is_empty() && has_results {
            self.summary()
        } else {
            text
        };
        let agent = self.conv.agent.clone();
        self.say(Message::assistant(agent, text.clone()));
        // A run stopped by a cap with nothing done needs the person.
        let status = if self.run.cap().is_some() && !self.progressed() {
            RunStatus::NeedsInput
        } else {
            RunStatus::Completed
        };
        self.close(status, Some(text))
    }

    /// Whether a tool call of this run succeeded.
    pub(super) fn progressed(&self) -> bool {
        let log = &self.conv.blackboard.log;
        log.get(self.run.log_start()..)
            .unwrap_or_default()
            .iter()
            .any(|e| e.success())
    }

    // ----- the model -----

    /// Counts a model reply's tokens in the run's and the session's totals.
    pub(super) fn count_usage(&mut self, reply: &ModelReply) {
        if let Some(usage) = reply.usage {
            let run_total = self.run.add_usage(usage);
            self.conv.usage.add(usage);
            self.emit(EventKind::Usage { usage, run_total });
        }
    }

    pub(super) fn model_replied(&mut self, purpose: ModelPurpose, reply: ModelReply) -> Flow {
        self.count_usage(&reply);
        match purpose {
            ModelPurpose::Synthesize => self.answer(reply.text),
            ModelPurpose::Summarize => self.summarized(Some(reply.text)),
            ModelPurpose::Plan => {
                let plan = self.consult(|planner, view| planner.on_model_reply(view, &reply))?;
                self.apply(plan)
            }
        }
    }

    pub(super) fn model_failed(&mut self, purpose: ModelPurpose, error: String) -> Flow {
        match purpose {
            ModelPurpose::Synthesize => {
                let summary = self.summary();
                self.answer(summary)
            }
            // The summary from the log stands in: the run goes on.
            ModelPurpose::Summarize => self.summarized(None),
            ModelPurpose::Plan => Err(Fault::new(format!("the model call failed: {error}"))),
        }
    }

    // ----- time and ending -----

    /// The time budget ran out while the run waited.
    pub(super) fn time_up(&mut self, waiting: Waiting) -> Flow {
        match waiting {
            Waiting::Model {
                purpose: ModelPurpose::Plan | ModelPurpose::Summarize,
                ..
            } => {
                self.reach(Cap::TimeBudget);
                self.synthesize()
            }
            Waiting::Model {
                purpose: ModelPurpose::Synthesize,
                ..
            } => {
                let summary = self.summary();
                self.answer(summary)
            }
            Waiting::Tools { batch } => {
                self.reach(Cap::TimeBudget);
                let mut batch = batch.into_batch();
                self.cancel_open(
                    &mut batch,
                    ToolErrorKind::Timeout,
                    "abandoned: the run's time budget ran out",
                );
                self.advance(batch)
            }
            // The person's time is not the run's: nothing to do.
            parked @ (Waiting::Confirmation { .. } | Waiting::Reading { .. }) => Ok(Next::Wait(parked)),
        }
    }

    /// The session is ending: the run is cancelled, its open calls answered.
    pub(super) fn cancel(&mut self, waiting: Waiting, reason: &str) -> Flow {
        let batch = match waiting {
            Waiting::Model { .. } => None,
            Waiting::Tools { batch } => Some(batch.into_batch()),
            Waiting::Confirmation { parked } | Waiting::Reading { parked, .. } => Some(parked.into_batch()),
        };
        if let Some(batch) = batch {
            self.abandon(batch, "the session was ended before the call finished");
        }
        self.run.set_error(format!("the session was ended: {reason}"));
        self.close(RunStatus::Cancelled, None)
    }

    /// Moves to `Completion` (through `Error` for failures) and emits the output.
    pub(super) fn close(&mut self, status: RunStatus, reply: Option<String>) -> Flow {
        if matches!(status, RunStatus::Failed | RunStatus::Cancelled | RunStatus::Blocked)
            && self.run.phase() != Phase::Error
        {
            self.move_to(Phase::Error)?;
        }
        self.move_to(Phase::Completion)?;
        let answered = self.conv.agent.clone();
        if status == RunStatus::Completed && self.goal_finished() {
            if let Some(hub) = self.catalog.hub().cloned() {
                self.move_agent(hub, format!("{answered}'s goal is complete"), Default::default());
            }
            // A finished goal has nothing to come back to.
            self.conv.boards.remove(&answered);
        }
        self.emit(EventKind::RunFinished {
            status,
            reply: reply.clone(),
        });
        let mut output = output(self.conv, &self.run, status, reply, None);
        output.agent = answered;
        self.conv.blackboard.confidence = output.confidence;
        self.conv.last_output = Some(output.clone());
        self.out.effects.push(Effect::Finish(output));
        Ok(Next::Closed)
    }

    /// Fails the run after a fault. Every phase but `Completion` may move to
    /// `Error`, and `Error` to `Completion`, so this path is inside the table.
    pub(super) fn fail(&mut self, fault: Fault) -> Next {
        self.run.set_error(fault.message.clone());
        self.emit(EventKind::Error { message: fault.message });
        if let Some(batch) = fault.batch {
            self.abandon(batch, "the run failed before the call finished");
        }
        match self.close(RunStatus::Failed, None) {
            Ok(next) => next,
            Err(fault) => {
                // Only reachable if the run was already complete: drop it.
                self.emit(EventKind::Error { message: fault.message });
                Next::Closed
            }
        }
    }
}
