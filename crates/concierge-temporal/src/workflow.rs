//! The session workflow: one Temporal workflow per concierge session.
//!
//! It holds the core's [`Session`] and steps it, as the embedded engine's
//! actor does, with Temporal's history as the journal: an input from
//! outside (a run's start, a confirmation, the end, the opening) arrives as
//! an update, is stepped at once by the update's handler (a refused input
//! answers [`Reply::Refused`] and changes nothing), and its effects are
//! queued; the main routine performs them as activities (model calls on the
//! models queue, or as local activities in this worker when the session
//! started with [`ModelCalls::Local`], tool calls on the calling agent's tools queue with the
//! call's idempotency key as activity id) and timers, and steps each answer
//! as it comes. Replaying the history replays the same steps, so a worker
//! that takes the workflow over rebuilds the same session.
//!
//! Queries read the session (`snapshot`, `summary`, `current`) and its
//! events after a sequence number (`events`): the workflow keeps the
//! session's events in its state (a bounded tail across continue-as-new).

// The workflow macros' expansion unwraps internally and makes public marker
// items; neither is ours to change.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use std::collections::BTreeMap;

use concierge::engine::{Catalogs, Executor, child_answer, refuse_invalid_ask};
use concierge_core::{
    AgentCall, AgentId, CallId, Catalog, Confirmation, Effect, Event, ForwardedAnswer, Input, ModelRequest,
    PlannerMode, RunId, RunOutput, Session, SessionId, StartRun, StepError, Timestamp, ToolError, ToolOutcome,
};
use futures::FutureExt;
use temporalio_common::{MemoValue, RetryPolicy};
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{
    ActivityOptions, ApplicationFailure, ChildWorkflowOptions, ContinueAsNewOptions, LocalActivityOptions,
    ParentClosePolicy, SignalWorkflowOptions, SyncWorkflowContext, WorkflowContext, WorkflowContextView,
    WorkflowResult,
};

use crate::activities::{ModelActivities, ModelCallInput, ToolActivities, ToolCallInput};
use crate::config::{ModelCalls, TemporalConfig};
use crate::payload;
use crate::visibility::{AGENT, MEMO_AGENT, MEMO_TENANT, start_attributes};
use crate::wire::{
    Begin, Carried, ChildOutcome, ChildReport, ChildStart, ConfirmRequest, Current, EndRequest, EventsPage,
    ForwardRequest, OpenRequest, Plan, Refusal, Reply, ReportTo, Snapshot, StartReply, StartRequest, Summary,
};

/// The workflow type's name.
pub(crate) const WORKFLOW_TYPE: &str = "concierge.session";

/// At most this many events answer one `events` query (a query's answer
/// must stay under Temporal's 2 MB payload limit).
const EVENTS_PER_PAGE: usize = 256;

/// How long one attempt of a model call may take.
const MODEL_CALL_TIMEOUT: Duration = Duration::from_secs(600);

/// The patch marker recording that a worker refused the session because it
/// serves another catalog (its replay then refuses it too, whatever the
/// replaying worker's catalog).
const FOREIGN_CATALOG: &str = "concierge.foreign-catalog";

/// The last stops kept for late waiters.
const STOPS_KEPT: usize = 16;

/// The events a workflow carries into its next run when it continues as new
/// (older ones are no longer served to subscribers).
const EVENTS_CARRIED: usize = 2048;

/// What the workflow knows of its session.
#[derive(Default)]
struct State {
    id: Option<SessionId>,
    session: Option<Session>,
    events: Vec<Event>,
    /// Effects stepped but not yet performed.
    queued: Vec<Effect>,
    /// How many times a run stopped (finished or parked for the person).
    stops: u64,
    /// The last stops' outputs, by number.
    outputs: VecDeque<(u64, RunOutput)>,
    updated_at: Timestamp,
    ended: bool,
    /// How many times the workflow continued as new.
    continued: u32,
    /// Whether the run has begun (its carried state restored).
    begun: bool,
    /// The requests of model calls in flight that the activity fetches
    /// (too large to travel in its input), by run and call.
    requests: Vec<((RunId, u32), ModelRequest)>,
    /// The agent the workflow's search attributes and memo name (set once
    /// the session exists; a handoff upserts them).
    agent_shown: Option<AgentId>,
    /// Per agent, how its runs plan (from the last run's start).
    plans: BTreeMap<AgentId, Plan>,
    /// For a child session: the parent workflow its next stop is reported
    /// to (set by the parent's start or forwarded answer, taken at the stop).
    report_to: Option<ReportTo>,
    /// Reports of stops to send to a parent (by its workflow id).
    outgoing: Vec<(String, ChildReport)>,
    /// Reports received from children, until their agent call takes them.
    reports: Vec<ChildReport>,
    /// How the session calls its model (from its start).
    model_calls: ModelCalls,
    /// Why this worker refuses the session: it serves another catalog than
    /// the client that created it (another project on the same queues).
    /// The workflow then answers its inputs with this and fails.
    foreign: Option<Refusal>,
}

/// At most this many children's reports wait for their agent call (a
/// report for a call that is no longer waited on is dropped).
const REPORTS_KEPT: usize = 64;

impl State {
    fn restore(&mut self, carried: Carried) {
        self.session = carried.session;
        self.events = carried.events;
        self.stops = carried.stops;
        self.outputs = carried.outputs.into_iter().collect();
        self.updated_at = carried.updated_at;
        self.ended = self.session.as_ref().is_some_and(Session::is_ended);
        self.continued = carried.continued;
        self.plans = carried.plans;
    }

    fn carry(&self, catalogs: &Catalogs) -> Carried {
        let from = self.events.len().saturating_sub(EVENTS_CARRIED);
        let version = self.session.as_ref().and_then(Session::catalog_version);
        Carried {
            session: self.session.clone(),
            events: self.events[from..].to_vec(),
            stops: self.stops,
            outputs: self.outputs.iter().cloned().collect(),
            updated_at: self.updated_at,
            continued: self.continued + 1,
            catalog: version.and_then(|v| catalogs.record(v).map(|recorded| (v.to_string(), recorded))),
            plans: self.plans.clone(),
        }
    }

    /// No effect waits and no run is under way (one parked for the person
    /// waits in the session itself).
    fn idle(&self) -> bool {
        self.queued.is_empty()
            && self.outgoing.is_empty()
            && self.report_to.is_none()
            && self
                .session
                .as_ref()
                .is_none_or(|s| s.active_run().is_none() || s.waits_for_person())
    }
}

/// One concierge session as a Temporal workflow.
#[workflow]
pub struct SessionWorkflow {
    catalogs: Arc<Catalogs>,
    /// Checks a parked call's arguments before the person is asked (pure:
    /// the tools' schemas).
    executor: Arc<Executor>,
    config: Arc<TemporalConfig>,
    st: State,
}

fn at(time: Option<std::time::SystemTime>) -> Timestamp {
    time.map(Timestamp::from).unwrap_or_default()
}

impl SessionWorkflow {
    /// A workflow instance for a worker whose runtime has `catalogs`.
    pub(crate) fn new(catalogs: Arc<Catalogs>, executor: Arc<Executor>, config: Arc<TemporalConfig>) -> Self {
        Self {
            catalogs,
            executor,
            config,
            st: State::default(),
        }
    }

    /// Rebuilds catalog `version` from its recording when this worker has
    /// not seen it (its runtime's MCP servers may offer other tools now):
    /// the run replays and goes on with the tools it saw.
    fn know_catalog(&self, version: &str, recorded: &str) {
        if self.catalogs.get(Some(version)).is_none()
            && let Err(error) = self.catalogs.restore(version, recorded)
        {
            tracing::warn!(%error, "a run's catalog version cannot be rebuilt; it goes on with the current one");
        }
    }

    /// The agents of `client` (a client's catalog) this worker's catalog
    /// does not have.
    fn missing_agents(&self, client: &[AgentId]) -> Vec<AgentId> {
        let ours = self.catalogs.current().catalog;
        client
            .iter()
            .filter(|agent| ours.agent(agent).is_none())
            .cloned()
            .collect()
    }

    /// Why this worker (on task queue `queue`) refuses a session a client
    /// of another catalog created (`missing`: the client's agents it does
    /// not have).
    fn foreign_refusal(&self, queue: String, missing: Vec<AgentId>) -> Refusal {
        Refusal::WorkerCatalogMismatch {
            queue,
            missing,
            theirs: self.catalogs.current().catalog.agent_ids(),
        }
    }

    /// The catalog version the session's run plans with.
    fn catalog(&self, version: Option<&str>) -> Arc<Catalog> {
        self.catalogs
            .get(version)
            .unwrap_or_else(|| self.catalogs.current().catalog)
    }

    /// Steps `input`: keeps its events, records the stops, queues the other
    /// effects. A call parked for the person whose arguments would fail
    /// validation is not put to them: it fails at once and the run goes on
    /// (as on the embedded engine).
    fn apply(&mut self, input: Input) -> Result<(), StepError> {
        let catalog = match &input {
            Input::StartRun(start) => self.catalog(start.catalog_version.as_deref()),
            _ => self.catalog(self.st.session.as_ref().and_then(Session::catalog_version)),
        };
        let Some(session) = self.st.session.as_mut() else {
            return Err(StepError::Idle);
        };
        let step = session.step(input, &catalog)?;
        self.st.ended = session.is_ended();
        if let Some(last) = step.events.last() {
            self.st.updated_at = last.at;
        }
        let invalid = refuse_invalid_ask(&step, self.executor.tools(), self.st.updated_at);
        self.st.events.extend(step.events);
        for effect in step.effects {
            match effect {
                Effect::AwaitUser(_) if invalid.is_some() => {}
                Effect::AwaitUser(output) | Effect::Finish(output) => {
                    if let Some(to) = self.st.report_to.take() {
                        self.report(to, ChildOutcome::Stopped(Box::new(output.clone())));
                    }
                    self.st.stops += 1;
                    self.st.outputs.push_back((self.st.stops, output));
                    if self.st.outputs.len() > STOPS_KEPT {
                        self.st.outputs.pop_front();
                    }
                }
                other => self.st.queued.push(other),
            }
        }
        match invalid {
            Some(input) => self.apply(input),
            None => Ok(()),
        }
    }

    /// Queues a report of this child's stop for its parent (a report too
    /// large for a signal says so instead).
    fn report(&mut self, to: ReportTo, outcome: ChildOutcome) {
        let mut report = ChildReport { key: to.key, outcome };
        let bytes = payload::size_of(&report);
        if bytes > self.config.max_payload_bytes {
            let why = payload::over("its answer", "is", bytes, self.config.max_payload_bytes);
            report.outcome = ChildOutcome::Failed(why);
        }
        self.st.outgoing.push((to.workflow_id, report));
    }

    fn output_of(&self, stop: u64) -> Option<RunOutput> {
        self.st
            .outputs
            .iter()
            .find(|(n, _)| *n == stop)
            .map(|(_, o)| o.clone())
            .or_else(|| self.st.session.as_ref().and_then(Session::last_output).cloned())
    }

    fn refusal(&self) -> Refusal {
        match &self.st.id {
            Some(session) => Refusal::NoSession {
                session: session.clone(),
            },
            None => Refusal::Other {
                message: "the session workflow has not begun".into(),
            },
        }
    }
}

type Answer = Pin<Box<dyn Future<Output = Input>>>;

/// A report of this child's stop on its way to the parent.
type Sending = Pin<Box<dyn Future<Output = ()>>>;

/// Signals `report` to the parent workflow `parent`.
fn report_stop(ctx: &WorkflowContext<SessionWorkflow>, parent: String, report: ChildReport) -> Sending {
    let sent = ctx.external_workflow(parent, None).signal(
        SessionWorkflow::child_stopped,
        report,
        SignalWorkflowOptions::default(),
    );
    Box::pin(async move {
        if let Err(error) = sent.await {
            tracing::warn!(%error, "a child session's stop could not be reported to its parent");
        }
    })
}

/// Retries for calls that may run again safely; one attempt for the others.
fn retries(safe: bool) -> RetryPolicy {
    let builder = RetryPolicy::builder()
        .initial_interval(Duration::from_millis(500))
        .backoff_coefficient(2.0)
        .maximum_interval(Duration::from_secs(10));
    match safe {
        true => builder.maximum_attempts(5).build(),
        false => builder.maximum_attempts(1).build(),
    }
}

/// A tool's (or an agent's) call that did not complete, as the core's input.
fn call_failed(ctx: &WorkflowContext<SessionWorkflow>, run_id: RunId, call_id: CallId, why: String) -> Input {
    Input::ToolFinished {
        run_id,
        call_id,
        outcome: ToolOutcome::Error(ToolError::failed(why)),
        duration_ms: 0,
        usage: None,
        at: at(ctx.workflow_time()),
    }
}

/// Starts performing `effect`; the future answers with the input for the core.
fn perform(ctx: &WorkflowContext<SessionWorkflow>, effect: Effect) -> Option<Answer> {
    let c = ctx.clone();
    let (session, agent, catalog, config) = ctx.state(|w| {
        let session = w.st.id.clone().unwrap_or_else(|| SessionId::new("unknown"));
        let agent =
            w.st.session
                .as_ref()
                .map(|s| s.agent().clone())
                .unwrap_or_else(|| AgentId::new("unknown"));
        let catalog = w.catalog(w.st.session.as_ref().and_then(Session::catalog_version));
        (session, agent, catalog, w.config.clone())
    });
    match effect {
        Effect::CallModel { run_id, call, request } => {
            let bytes = payload::size_of(&request);
            if bytes > config.max_payload_bytes {
                let failed = payload::request_too_large(
                    run_id,
                    call,
                    request.agent.as_str(),
                    bytes,
                    config.max_payload_bytes,
                    at(ctx.workflow_time()),
                );
                return Some(Box::pin(async move { failed }));
            }
            // A large request stays here: the activity asks for it, so the
            // history does not carry the conversation at every call. A local
            // activity's input never reaches the history (nor could it be
            // asked for: queries wait while the local activity runs).
            let local = ctx.state(|w| w.st.model_calls) == ModelCalls::Local;
            let kept = (!local && bytes > config.inline_request_bytes).then(|| (run_id.clone(), call));
            let request = match &kept {
                Some(key) => {
                    ctx.state_mut(|w| w.st.requests.push((key.clone(), request)));
                    None
                }
                None => Some(request),
            };
            let input = ModelCallInput {
                session,
                run_id: run_id.clone(),
                call,
                request,
                after: ctx.state(|w| w.st.session.as_ref().map_or(0, Session::last_seq)),
            };
            let activity_id = format!("{}/{run_id}/model-{call}", input.session);
            let models_queue = config.models_queue();
            Some(Box::pin(async move {
                let called = if local {
                    let options = LocalActivityOptions::builder()
                        .activity_id(activity_id)
                        .start_to_close_timeout(MODEL_CALL_TIMEOUT)
                        .retry_policy(retries(true))
                        .build();
                    c.execute_local_activity(ModelActivities::call_model, input, options)
                        .await
                } else {
                    let options = ActivityOptions::with_start_to_close_timeout(MODEL_CALL_TIMEOUT)
                        .task_queue(models_queue)
                        .activity_id(activity_id)
                        .heartbeat_timeout(config.model_heartbeat_timeout)
                        .retry_policy(retries(true))
                        .build();
                    c.execute_activity(ModelActivities::call_model, input, options).await
                };
                let answer = match called {
                    Ok(answer) => answer,
                    // The error as data: the run goes on (or fails) as the core decides.
                    Err(error) => Input::ModelFailed {
                        run_id,
                        call,
                        error: format!("the model call did not complete: {error}"),
                        at: at(c.workflow_time()),
                    },
                };
                if let Some(key) = kept {
                    c.state_mut(|w| w.st.requests.retain(|(k, _)| *k != key));
                }
                answer
            }))
        }
        Effect::CallTool {
            run_id,
            call,
            key,
            user,
            blackboard,
            asked_at,
        } => {
            // Tools that change nothing, or change it once whatever the
            // number of calls, run again after a lost worker; others do not.
            let safe = catalog
                .tool(&call.name)
                .is_some_and(|spec| spec.annotations.read_only || spec.annotations.idempotent);
            let options = ActivityOptions::with_start_to_close_timeout(Duration::from_secs(600))
                .task_queue(config.tools_queue(&agent))
                .activity_id(key.to_string())
                .heartbeat_timeout(config.tool_heartbeat_timeout)
                .retry_policy(retries(safe))
                .build();
            let (failed_run, failed_call, tool) = (run_id.clone(), call.id.clone(), call.name.clone());
            let input = ToolCallInput {
                session,
                run_id,
                agent,
                call,
                key,
                user,
                blackboard,
                asked_at,
            };
            let bytes = payload::size_of(&input);
            if bytes > config.max_payload_bytes {
                let why = payload::over(
                    &format!("the input of tool `{tool}` (its arguments and the blackboard)"),
                    "is",
                    bytes,
                    config.max_payload_bytes,
                );
                let failed = call_failed(ctx, failed_run, failed_call, why);
                return Some(Box::pin(async move { failed }));
            }
            Some(Box::pin(async move {
                match c.execute_activity(ToolActivities::call_tool, input, options).await {
                    Ok(answer) => answer,
                    Err(error) => call_failed(
                        &c,
                        failed_run,
                        failed_call,
                        format!("the tool {tool} did not complete: {error}"),
                    ),
                }
            }))
        }
        Effect::CallAgent(call) => {
            // The child session is a child workflow: started here for the
            // call's first attempt, passed the person's answer by signal
            // after, and reporting each stop by signal.
            let call = ctx.state(|w| w.executor.agent_call(*call));
            let report_to = ReportTo {
                workflow_id: ctx.workflow_id().to_string(),
                key: call.key.to_string(),
            };
            let child = config.workflow_id(&call.session);
            let since = at(ctx.workflow_time());
            match call.answer.clone() {
                None => {
                    let begin = ctx.state(|w| child_begin(w, &call, report_to, since));
                    // Search attributes as the parent's, when it has them.
                    let shown = ctx.search_attributes().get(&AGENT).is_some();
                    let attributes = shown
                        .then(|| start_attributes(&config, call.tenant.as_deref(), Some(&call.agent), None))
                        .flatten();
                    let options = ChildWorkflowOptions::builder()
                        .workflow_id(child)
                        .parent_close_policy(ParentClosePolicy::Abandon)
                        .maybe_search_attributes(attributes)
                        .build();
                    Some(Box::pin(async move {
                        if let Err(error) = c.start_child_workflow(SessionWorkflow::run, begin, options).await {
                            let why = format!("its session could not start: {error}");
                            return child_answer(&call, Err(&why), 0, at(c.workflow_time()));
                        }
                        child_stopped(&c, &call, since).await
                    }))
                }
                Some(forward) => {
                    let request = ForwardRequest {
                        report_to,
                        forward,
                        user: call.user.clone(),
                        tenant: call.tenant.clone(),
                    };
                    Some(Box::pin(async move {
                        let sent = c
                            .external_workflow(child, None)
                            .signal(SessionWorkflow::forward, request, SignalWorkflowOptions::default())
                            .await;
                        if let Err(error) = sent {
                            let why = format!("the answer could not be passed on: {error}");
                            return child_answer(&call, Err(&why), 0, at(c.workflow_time()));
                        }
                        child_stopped(&c, &call, since).await
                    }))
                }
            }
        }
        Effect::WakeAt { at: wake, .. } => {
            let now = at(ctx.workflow_time());
            let delay = Duration::from_millis(wake.0.saturating_sub(now.0).max(1));
            Some(Box::pin(async move {
                let _ = c.timer(delay).await;
                Input::Tick {
                    at: at(c.workflow_time()),
                }
            }))
        }
        Effect::AwaitUser(_) | Effect::Finish(_) => None,
    }
}

/// The child workflow's input for `call`'s first attempt: the child's first
/// run, planned as this session's runs are, on this session's catalog.
fn child_begin(w: &SessionWorkflow, call: &AgentCall, report_to: ReportTo, now: Timestamp) -> Begin {
    let mut start = StartRun::new(call.prompt.clone(), PlannerMode::Model, now).agent(call.agent.clone());
    start.user = call.user.clone();
    start.tenant = call.tenant.clone();
    start.asked_at = Some(call.asked_at);
    start.parent = Some(call.parent.clone());
    start.catalog_version =
        w.st.session
            .as_ref()
            .and_then(Session::catalog_version)
            .map(str::to_string);
    let catalog = start.catalog_version.as_deref().and_then(|v| w.catalogs.record(v));
    Begin {
        session: call.session.clone(),
        carried: None,
        model_calls: w.st.model_calls,
        agents: Vec::new(),
        child: Some(Box::new(ChildStart {
            request: StartRequest {
                session: call.session.clone(),
                start,
                first_agent: Some(call.agent.clone()),
                // The planners the parent's run was given; a child keeps
                // its agent's own policy (as on the embedded engine).
                plans: w
                    .st
                    .plans
                    .iter()
                    .map(|(agent, plan)| {
                        let plan = Plan {
                            planner: plan.planner,
                            policy: None,
                        };
                        (agent.clone(), plan)
                    })
                    .collect(),
                catalog,
                wait: false,
            },
            report_to,
        })),
    }
}

/// Waits for the child's report on `call` and answers the parent's call
/// with it.
async fn child_stopped(c: &WorkflowContext<SessionWorkflow>, call: &AgentCall, since: Timestamp) -> Input {
    let key = call.key.to_string();
    let waited = {
        let key = key.clone();
        c.wait_condition(move |w| w.st.reports.iter().any(|r| r.key == key))
            .await
    };
    let now = at(c.workflow_time());
    if waited.is_err() {
        return child_answer(call, Err("the session was cancelled"), 0, now);
    }
    let report = c.state_mut(|w| {
        let i = w.st.reports.iter().position(|r| r.key == key)?;
        Some(w.st.reports.remove(i))
    });
    let duration_ms = now.0.saturating_sub(since.0);
    match report.map(|r| r.outcome) {
        Some(ChildOutcome::Stopped(output)) => child_answer(call, Ok(&output), duration_ms, now),
        Some(ChildOutcome::Failed(why)) => child_answer(call, Err(&why), duration_ms, now),
        None => child_answer(call, Err("its report was lost"), duration_ms, now),
    }
}

/// After a handoff, names the session's new agent in the workflow's search
/// attribute `ConciergeAgent` and memo, where they name one (the first
/// agent was set when the workflow started; a caller's value stays until
/// the agent changes).
fn show_agent(ctx: &WorkflowContext<SessionWorkflow>) {
    let Some(agent) = ctx.state(|w| w.st.session.as_ref().map(|s| s.agent().clone())) else {
        return;
    };
    let before = ctx.state_mut(|w| w.st.agent_shown.replace(agent.clone()));
    if before.is_none_or(|before| before == agent) {
        return;
    }
    if ctx.search_attributes().get(&AGENT).is_some() {
        ctx.upsert_search_attributes([AGENT.value_set(agent.to_string())]);
    }
    let memo = ctx.memo();
    if matches!(memo.get::<String>(MEMO_AGENT), Ok(Some(_))) {
        let value = MemoValue::new(agent.to_string());
        if let Err(error) = ctx.upsert_memo([(MEMO_AGENT, Some(value))]) {
            tracing::debug!(%error, "the memo's agent could not be updated");
        }
    }
}

/// Waits until the workflow's run has begun: an update that arrives with
/// the workflow's first task (update-with-start, or right after it
/// continued as new) is handled once the state it acts on is restored.
async fn begun(ctx: &WorkflowContext<SessionWorkflow>) {
    let _ = ctx.wait_condition(|w| w.st.begun).await;
}

impl SessionWorkflow {
    /// Steps a run's start (creating the session if new).
    fn take_start(&mut self, now: Timestamp, request: StartRequest) -> Reply<StartReply> {
        if let Some(refusal) = &self.st.foreign {
            return Reply::Refused(refusal.clone());
        }
        let StartRequest {
            session,
            mut start,
            first_agent,
            plans,
            catalog,
            wait: _,
        } = request;
        if let (Some(version), Some(recorded)) = (start.catalog_version.as_deref(), catalog.as_deref()) {
            self.know_catalog(version, recorded);
        }
        // A start without plans (a child's later run) plans as the last did.
        if !plans.is_empty() {
            self.st.plans = plans;
        }
        self.st.id.get_or_insert(session);
        let created = self.st.session.is_none();
        if created {
            let Some(agent) = start.agent.clone().or(first_agent) else {
                return Reply::Refused(self.refusal());
            };
            let Some(id) = self.st.id.clone() else {
                return Reply::Refused(self.refusal());
            };
            start.agent = Some(agent.clone());
            self.st.session = Some(Session::new(id, agent));
        }
        let (current, first_seq) = match &self.st.session {
            Some(s) => (s.agent().clone(), s.last_seq() + 1),
            None => return Reply::Refused(self.refusal()),
        };
        let taker = start.agent.clone().unwrap_or(current);
        if let Some(plan) = self.st.plans.get(&taker) {
            start.planner = plan.planner;
            if plan.policy.is_some() {
                start.policy = plan.policy.clone();
            }
        }
        if start.at == Timestamp(0) {
            start.at = now;
        }
        let stop = self.st.stops + 1;
        let events_before = self.st.events.len();
        match self.apply(Input::StartRun(start)) {
            Ok(()) => {
                let run_id = self.st.events[events_before..]
                    .iter()
                    .find_map(|e| e.run.clone())
                    .or_else(|| self.st.session.as_ref().and_then(|s| s.active_run().cloned()));
                match run_id {
                    Some(run_id) => Reply::Done(StartReply {
                        run_id,
                        first_seq,
                        stop,
                        output: None,
                    }),
                    None => Reply::Refused(Refusal::Other {
                        message: "the run started without an id".into(),
                    }),
                }
            }
            Err(error) => {
                if created && self.st.events.is_empty() {
                    self.st.session = None;
                }
                Reply::Refused(error.into())
            }
        }
    }

    /// Steps the person's answer to the parked call.
    fn take_confirm(&mut self, request: ConfirmRequest) -> Reply<u64> {
        let Some(session) = &self.st.session else {
            return Reply::Refused(self.refusal());
        };
        let Some(run_id) = session.active_run().cloned() else {
            return Reply::Refused(StepError::NotAwaitingConfirmation.into());
        };
        let stop = self.st.stops + 1;
        let input = Input::Confirm(Confirmation {
            run_id,
            call_id: request.call_id,
            fingerprint: request.fingerprint,
            decision: request.decision,
            at: request.at,
        });
        match self.apply(input) {
            Ok(()) => Reply::Done(stop),
            Err(error) => Reply::Refused(error.into()),
        }
    }

    /// Steps the session's end.
    fn take_end(&mut self, request: EndRequest) -> Reply<Option<RunOutput>> {
        let Some(session) = &self.st.session else {
            return Reply::Refused(self.refusal());
        };
        let active = session.active_run().cloned();
        if request.run_only {
            if active.is_none() {
                return Reply::Done(None);
            }
            if let Err(error) = self.apply(Input::CancelRun {
                reason: request.reason,
                at: request.at,
            }) {
                return Reply::Refused(error.into());
            }
        } else {
            if let Err(error) = self.apply(Input::End {
                reason: request.reason,
                at: request.at,
            }) {
                return Reply::Refused(error.into());
            }
            self.st.ended = true;
        }
        let last = self.st.session.as_ref().and_then(Session::last_output);
        Reply::Done(match (active, last) {
            (Some(run), Some(output)) if output.run_id == run => Some(output.clone()),
            _ => None,
        })
    }

    /// Takes the person's answer a parent passes on: stepped while this
    /// child still waits on the call it is about; otherwise the parent gets
    /// the run's next stop (one under way) or its last output.
    fn take_forward(&mut self, now: Timestamp, request: ForwardRequest) {
        let ForwardRequest {
            report_to,
            forward,
            user,
            tenant,
        } = request;
        let Some(session) = &self.st.session else {
            let why = format!("{}", concierge::Error::from(self.refusal()));
            self.report(report_to, ChildOutcome::Failed(why));
            return;
        };
        let waits_on = session
            .pending_confirmation()
            .map(|p| p.call_id)
            .or_else(|| session.pending_choice().map(|p| p.call_id));
        if waits_on.as_ref() != Some(&forward.call_id) {
            if session.active_run().is_some() && !session.waits_for_person() {
                // Reported at the run's next stop.
                self.st.report_to = Some(report_to);
            } else {
                let outcome = match session.last_output() {
                    Some(output) => ChildOutcome::Stopped(Box::new(output.clone())),
                    None => ChildOutcome::Failed("it stopped without an answer".into()),
                };
                self.report(report_to, outcome);
            }
            return;
        }
        let id = session.id().clone();
        self.st.report_to = Some(report_to);
        let refused = match forward.answer {
            ForwardedAnswer::Text { text } => {
                let mut start = StartRun::new(text, PlannerMode::Model, now);
                start.user = user;
                start.tenant = tenant;
                let request = StartRequest {
                    session: id,
                    start,
                    first_agent: None,
                    plans: BTreeMap::new(),
                    catalog: None,
                    wait: false,
                };
                match self.take_start(now, request) {
                    Reply::Done(_) => None,
                    Reply::Refused(refusal) => Some(refusal),
                }
            }
            ForwardedAnswer::Decision { fingerprint, decision } => {
                let request = ConfirmRequest {
                    call_id: forward.call_id,
                    fingerprint,
                    decision,
                    at: now,
                };
                match self.take_confirm(request) {
                    Reply::Done(_) => None,
                    Reply::Refused(refusal) => Some(refusal),
                }
            }
        };
        if let Some(refusal) = refused {
            self.report_refusal(refusal);
        }
    }

    /// Reports to the parent waiting on this child that its input was
    /// refused, and why.
    fn report_refusal(&mut self, refusal: Refusal) {
        if let Some(to) = self.st.report_to.take() {
            self.report(to, ChildOutcome::Failed(concierge::Error::from(refusal).to_string()));
        }
    }

    /// Opens the session before its first message.
    fn take_open(&mut self, request: OpenRequest) -> Reply<()> {
        if let Some(refusal) = &self.st.foreign {
            return Reply::Refused(refusal.clone());
        }
        if self.st.session.is_some() {
            return Reply::Refused(StepError::AlreadyOpen.into());
        }
        self.st.id.get_or_insert(request.session);
        let Some(id) = self.st.id.clone() else {
            return Reply::Refused(self.refusal());
        };
        self.st.session = Some(Session::new(id, request.open.agent.clone()));
        match self.apply(Input::Open(request.open)) {
            Ok(()) => Reply::Done(()),
            Err(error) => {
                self.st.session = None;
                Reply::Refused(error.into())
            }
        }
    }
}

#[workflow_methods(factory_only)]
impl SessionWorkflow {
    #[run(name = "concierge.session")]
    pub async fn run(ctx: &mut WorkflowContext<Self>, begin: Begin) -> WorkflowResult<Option<RunOutput>> {
        let now = at(ctx.workflow_time());
        // A child's memo names its agent and tenant, as a session's does.
        if let Some(child) = &begin.child {
            let start = &child.request.start;
            let memo = [
                (MEMO_AGENT, start.agent.as_ref().map(|a| MemoValue::new(a.to_string()))),
                (MEMO_TENANT, start.tenant.clone().map(MemoValue::new)),
            ];
            let memo: Vec<_> = memo.into_iter().filter(|(_, v)| v.is_some()).collect();
            if let Err(error) = ctx.upsert_memo(memo) {
                tracing::debug!(%error, "a child session's memo could not be set");
            }
        }
        // A worker of another project (another catalog on the same task
        // queues) refuses the session: its inputs are answered with why and
        // the workflow fails, so that the session id can start again once
        // the right workers take it. The decision is recorded (a patch
        // marker): a replay on any worker comes to the same.
        let missing = ctx.state(|w| w.missing_agents(&begin.agents));
        if (ctx.is_replaying() || !missing.is_empty()) && ctx.patched(FOREIGN_CATALOG) {
            let queue = ctx.task_queue().to_string();
            let refusal = ctx.state(|w| w.foreign_refusal(queue, missing));
            let why = concierge::Error::from(refusal.clone()).to_string();
            if !ctx.is_replaying() {
                tracing::warn!(session = %begin.session, "{why}");
            }
            ctx.state_mut(|w| {
                w.st.id.get_or_insert(begin.session);
                w.st.foreign = Some(refusal);
                w.st.begun = true;
            });
            let c = ctx.clone();
            ctx.wait_condition(move |_| c.all_handlers_finished()).await?;
            return Err(ApplicationFailure::non_retryable(why).into());
        }
        // A child whose first run was refused has no session to keep.
        let orphan = ctx.state_mut(|w| {
            w.st.id.get_or_insert(begin.session);
            w.st.model_calls = begin.model_calls;
            if let Some(carried) = begin.carried {
                if let Some((version, recorded)) = &carried.catalog {
                    w.know_catalog(version, recorded);
                }
                w.st.restore(*carried);
            }
            // A child session started by its parent's agent call.
            if let Some(child) = begin.child {
                let ChildStart { request, report_to } = *child;
                w.st.report_to = Some(report_to);
                if let Reply::Refused(refusal) = w.take_start(now, request) {
                    w.report_refusal(refusal);
                }
            }
            w.st.begun = true;
            w.st.session.is_none() && !w.st.outgoing.is_empty()
        });
        let mut in_flight: Vec<Answer> = Vec::new();
        let mut sending: Vec<Sending> = Vec::new();
        loop {
            show_agent(ctx);
            // History stays within Temporal's limits: at an idle point, the
            // session goes on in a new run of the workflow.
            let long = ctx.continue_as_new_suggested()
                || ctx.history_length() >= ctx.state(|w| w.config.continue_after_events);
            if long && in_flight.is_empty() && sending.is_empty() && ctx.state(|w| w.st.idle() && !w.st.ended) {
                let c = ctx.clone();
                // A run that starts meanwhile goes first (its waiters would
                // keep a handler open until it stops).
                ctx.wait_condition(move |w| c.all_handlers_finished() || !w.st.idle() || w.st.ended)
                    .await?;
                if ctx.all_handlers_finished() && ctx.state(|w| w.st.idle() && !w.st.ended) {
                    let next = ctx.state(|w| Begin {
                        session: w.st.id.clone().unwrap_or_else(|| SessionId::new("unknown")),
                        carried: Some(Box::new(w.st.carry(&w.catalogs))),
                        child: None,
                        model_calls: w.st.model_calls,
                        agents: Vec::new(),
                    });
                    ctx.continue_as_new(next, ContinueAsNewOptions::default())?;
                }
            }
            let effects = ctx.state_mut(|w| std::mem::take(&mut w.st.queued));
            for effect in effects {
                if let Some(answer) = perform(ctx, effect) {
                    in_flight.push(answer);
                }
            }
            for (parent, report) in ctx.state_mut(|w| std::mem::take(&mut w.st.outgoing)) {
                sending.push(report_stop(ctx, parent, report));
            }
            if ctx.state(|w| w.st.ended) {
                // What is still in flight is abandoned: the session is over
                // (its parent still hears how its last run stopped).
                drop(in_flight);
                futures::future::join_all(sending).await;
                let c = ctx.clone();
                ctx.wait_condition(move |_| c.all_handlers_finished()).await?;
                return Ok(ctx.state(|w| w.st.session.as_ref().and_then(Session::last_output).cloned()));
            }
            if orphan {
                futures::future::join_all(sending).await;
                return Ok(None);
            }
            // Polls the answers in order with the caller's waker: deterministic.
            let mut next = std::future::poll_fn(|cx| {
                sending.retain_mut(|send| send.as_mut().poll(cx).is_pending());
                for i in 0..in_flight.len() {
                    if let Poll::Ready(input) = in_flight[i].as_mut().poll(cx) {
                        drop(in_flight.remove(i));
                        return Poll::Ready(input);
                    }
                }
                Poll::Pending
            })
            .fuse();
            temporalio_sdk::workflows::select! {
                input = next => {
                    ctx.state_mut(|w| match w.apply(input) {
                        Ok(()) | Err(StepError::Idle) => {}
                        Err(error) => tracing::debug!(%error, "an answer was not accepted"),
                    });
                }
                _ = ctx.wait_condition(|w| !w.st.queued.is_empty() || !w.st.outgoing.is_empty() || w.st.ended) => {}
            }
        }
    }

    /// Starts a run; answers once it has started, or (`wait`) at its stop
    /// with its output.
    #[update(name = "start_run")]
    pub async fn start_run(ctx: &mut WorkflowContext<Self>, request: StartRequest) -> Reply<StartReply> {
        begun(ctx).await;
        let now = at(ctx.workflow_time());
        let wait = request.wait;
        let reply = ctx.state_mut(|w| w.take_start(now, request));
        match reply {
            Reply::Done(mut started) if wait => {
                let stop = started.stop;
                if ctx
                    .wait_condition(move |w| w.st.stops >= stop || w.st.ended)
                    .await
                    .is_ok()
                {
                    started.output = ctx.state(|w| w.output_of(stop)).map(Box::new);
                }
                Reply::Done(started)
            }
            reply => reply,
        }
    }

    #[update(name = "confirm")]
    pub async fn confirm(ctx: &mut WorkflowContext<Self>, request: ConfirmRequest) -> Reply<u64> {
        begun(ctx).await;
        ctx.state_mut(|w| w.take_confirm(request))
    }

    #[update(name = "end")]
    pub async fn end(ctx: &mut WorkflowContext<Self>, request: EndRequest) -> Reply<Option<RunOutput>> {
        begun(ctx).await;
        ctx.state_mut(|w| w.take_end(request))
    }

    #[update(name = "open")]
    pub async fn open(ctx: &mut WorkflowContext<Self>, request: OpenRequest) -> Reply<()> {
        begun(ctx).await;
        ctx.state_mut(|w| w.take_open(request))
    }

    /// Waits for stop number `stop` and answers with its output (or the
    /// session's last output, when the session ended before it).
    #[update(name = "wait_stop")]
    pub async fn wait_stop(ctx: &mut WorkflowContext<Self>, stop: u64) -> Option<RunOutput> {
        begun(ctx).await;
        let reached = ctx.wait_condition(move |w| w.st.stops >= stop || w.st.ended).await;
        if reached.is_err() {
            return None;
        }
        ctx.state(|w| w.output_of(stop))
    }

    /// A parent passes on the person's answer to a question this child asked.
    #[signal(name = "forward")]
    pub async fn forward(ctx: &mut WorkflowContext<Self>, request: ForwardRequest) {
        begun(ctx).await;
        let now = at(ctx.workflow_time());
        ctx.state_mut(|w| w.take_forward(now, request));
    }

    /// A child reports how its run stopped.
    #[signal(name = "child_stopped")]
    pub fn child_stopped(&mut self, _ctx: &mut SyncWorkflowContext<Self>, report: ChildReport) {
        self.st.reports.retain(|r| r.key != report.key);
        self.st.reports.push(report);
        if self.st.reports.len() > REPORTS_KEPT {
            self.st.reports.remove(0);
        }
    }

    #[query(name = "snapshot")]
    pub fn snapshot(&self, _ctx: &WorkflowContextView) -> Snapshot {
        self.st.session.clone().map(Box::new)
    }

    #[query(name = "summary")]
    pub fn summary(&self, _ctx: &WorkflowContextView) -> Option<Summary> {
        let session = self.st.session.as_ref()?;
        Some(Summary {
            id: session.id().clone(),
            agent: session.agent().clone(),
            live: session.active_run().is_some() && !session.waits_for_person(),
            updated_at: self.st.updated_at,
            tenant: session.tenant().map(str::to_string),
        })
    }

    #[query(name = "current")]
    pub fn current(&self, _ctx: &WorkflowContextView) -> Current {
        let Some(session) = &self.st.session else {
            return Current::Idle;
        };
        if session.active_run().is_none() {
            return Current::Idle;
        }
        match (session.waits_for_person(), session.last_output()) {
            (true, Some(output)) => Current::Parked(Box::new(output.clone())),
            _ => Current::At(self.st.stops + 1),
        }
    }

    /// The request of a model call in flight whose activity fetches it.
    #[query(name = "model_request")]
    pub fn model_request(&self, _ctx: &WorkflowContextView, key: (RunId, u32)) -> Option<ModelRequest> {
        self.st
            .requests
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, request)| request.clone())
    }

    #[query(name = "events")]
    pub fn events(&self, _ctx: &WorkflowContextView, after: u64) -> EventsPage {
        let start = self.st.events.partition_point(|e| e.seq <= after);
        let events: Vec<Event> = self.st.events[start..].iter().take(EVENTS_PER_PAGE).cloned().collect();
        let complete = start + events.len() == self.st.events.len();
        EventsPage {
            events,
            ended: self.st.ended && complete,
        }
    }
}
