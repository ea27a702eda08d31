//! Child sessions: a parent's agent call starts its child session as a
//! child workflow and waits for the child's report of each stop; the
//! child reports its stops (or why its input was refused) by signal.

use std::future::Future;
use std::pin::Pin;

use concierge::engine::child_answer;
use concierge_core::{AgentCall, Input, PlannerMode, Session, StartRun, Timestamp};
use temporalio_sdk::{SignalWorkflowOptions, WorkflowContext};

use super::{SessionWorkflow, at};
use crate::payload;
use crate::wire::{Begin, ChildOutcome, ChildReport, ChildStart, Plan, Refusal, ReportTo, StartRequest};

/// A report of this child's stop on its way to the parent.
pub(super) type Sending = Pin<Box<dyn Future<Output = ()>>>;

/// Signals `report` to the parent workflow `parent`.
pub(super) fn report_stop(ctx: &WorkflowContext<SessionWorkflow>, parent: String, report: ChildReport) -> Sending {
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

/// The child workflow's input for `call`'s first attempt: the child's first
/// run, planned as this session's runs are, on this session's catalog.
pub(super) fn child_begin(w: &SessionWorkflow, call: &AgentCall, report_to: ReportTo, now: Timestamp) -> Begin {
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
pub(super) async fn child_stopped(c: &WorkflowContext<SessionWorkflow>, call: &AgentCall, since: Timestamp) -> Input {
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

impl SessionWorkflow {
    /// Queues a report of this child's stop for its parent (a report too
    /// large for a signal says so instead).
    pub(super) fn report(&mut self, to: ReportTo, outcome: ChildOutcome) {
        let mut report = ChildReport { key: to.key, outcome };
        let bytes = payload::size_of(&report);
        if bytes > self.config.max_payload_bytes {
            let why = payload::over("its answer", "is", bytes, self.config.max_payload_bytes);
            report.outcome = ChildOutcome::Failed(why);
        }
        self.st.outgoing.push((to.workflow_id, report));
    }

    /// Reports to the parent waiting on this child that its input was
    /// refused, and why.
    pub(super) fn report_refusal(&mut self, refusal: Refusal) {
        if let Some(to) = self.st.report_to.take() {
            self.report(to, ChildOutcome::Failed(concierge::Error::from(refusal).to_string()));
        }
    }
}
