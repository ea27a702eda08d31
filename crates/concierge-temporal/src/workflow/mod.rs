//! The session workflow: one Temporal workflow per concierge session.
//!
//! It holds the core's [`Session`] and steps it, as the embedded engine's
//! actor does, with Temporal's history as the journal: an input from
//! outside (a run's start, a confirmation, the end, the opening) arrives as
//! an update, is stepped at once by the update's handler (a refused input
//! answers [`Reply::Refused`] and changes nothing), and its effects are
//! queued; the main routine performs them as activities (model calls on the
//! models queue, or as local activities in this worker when the session
//! started with [`ModelCalls::Local`](crate::ModelCalls::Local), tool calls
//! on the calling agent's tools queue with the call's idempotency key as
//! activity id) and timers, and steps each answer as it comes. Replaying the history replays the same steps, so a worker
//! that takes the workflow over rebuilds the same session.
//!
//! Queries read the session (`snapshot`, `summary`, `current`) and its
//! events after a sequence number (`events`): the workflow keeps the
//! session's events in its state (a bounded tail across continue-as-new).
//!
//! The workflow's state is in [`state`]; [`step`] steps the core with an
//! input and records what it gives; [`inputs`] steps the inputs from
//! outside that the handlers here receive; [`effects`] performs the
//! effects; [`children`] starts child sessions and reports their stops;
//! [`catalog`] says which catalog a run uses, and refuses one this worker
//! does not serve.

// The workflow macros' expansion unwraps internally and makes public marker
// items; neither is ours to change.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod catalog;
mod children;
mod effects;
mod inputs;
mod state;
mod step;

use std::sync::Arc;
use std::task::Poll;

use concierge::engine::{Catalogs, Executor};
use concierge_core::{Event, ModelRequest, RunId, RunOutput, Session, SessionId, StepError, Timestamp};
use futures::FutureExt;
use temporalio_common::MemoValue;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{
    ApplicationFailure, ContinueAsNewOptions, SyncWorkflowContext, WorkflowContext, WorkflowContextView, WorkflowResult,
};

use crate::config::TemporalConfig;
use crate::visibility::{AGENT, MEMO_AGENT, MEMO_TENANT};
use crate::wire::{
    AnswerRequest, Begin, ChildReport, ChildStart, ConfirmRequest, Current, EndRequest, EventsPage, ForwardRequest,
    OpenRequest, Reply, Snapshot, StartReply, StartRequest, Summary,
};
use children::{Sending, report_stop};
use effects::{Answer, perform};
use state::{REPORTS_KEPT, State};

/// The workflow type's name.
pub(crate) const WORKFLOW_TYPE: &str = "concierge.session";

/// At most this many events answer one `events` query (a query's answer
/// must stay under Temporal's 2 MB payload limit).
const EVENTS_PER_PAGE: usize = 256;

/// The patch marker recording that a worker refused the session because it
/// serves another catalog (its replay then refuses it too, whatever the
/// replaying worker's catalog).
const FOREIGN_CATALOG: &str = "concierge.foreign-catalog";

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

/// The time `ctx.workflow_time()` says, as the core's timestamp.
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
}

/// Whether the session's run waits for the person: a confirmation or a
/// choice, or a question its call stopped at.
pub(super) fn parked(session: &Session) -> bool {
    session.waits_for_person() || session.pending_elicitation().is_some()
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
                    started.output = ctx.state(|w| w.st.output_of(stop)).map(Box::new);
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

    #[update(name = "answer")]
    pub async fn answer(ctx: &mut WorkflowContext<Self>, request: AnswerRequest) -> Reply<u64> {
        begun(ctx).await;
        ctx.state_mut(|w| w.take_answer(request))
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
        ctx.state(|w| w.st.output_of(stop))
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
            live: session.active_run().is_some() && !parked(session),
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
        match (parked(session), session.last_output()) {
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
