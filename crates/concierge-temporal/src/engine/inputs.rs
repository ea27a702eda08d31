//! The engine's inputs to a session's workflow, as its updates: a run's
//! start (creating the workflow with it when the session is new), a
//! confirmation, the end, the opening; and waiting for a run's stop.

use std::collections::BTreeMap;

use concierge::engine::{EngineOptions, RunSetup, RunStop, Started, now};
use concierge::{Error, Result};
use concierge_core::{
    AgentId, CallId, Decision, ElicitationAnswer, OpenSession, PlannerMode, RunOutput, SessionId, StartRun, Timestamp,
};
use temporalio_client::errors::WorkflowUpdateError;
use temporalio_client::{
    RpcOptions, WorkflowExecuteUpdateOptions, WorkflowGetResultOptions, WorkflowIdConflictPolicy,
    WorkflowIdReusePolicy, WorkflowUpdateWithStartOptions,
};
use temporalio_common::HasWorkflowDefinition;

use super::{Handle, TemporalEngine};
use crate::connection::server_error;
use crate::options::WorkflowOptions;
use crate::wire::{
    AnswerRequest, Begin, ConfirmRequest, EndRequest, OpenRequest, Plan, Reply, StartReply, StartRequest,
};
use crate::workflow::SessionWorkflow;
use crate::{payload, visibility};

/// What a new session's workflow starts with, besides its input.
struct Creation<'a> {
    tenant: Option<&'a str>,
    agent: Option<&'a AgentId>,
    labels: &'a BTreeMap<String, String>,
    options: Option<&'a WorkflowOptions>,
}

/// Whether an update failed because the run it reached had just closed: a
/// session workflow that continued as new goes on in a new run, which the
/// update reaches when sent again (its id makes that safe).
fn run_closed(error: &WorkflowUpdateError) -> bool {
    matches!(error, WorkflowUpdateError::Rpc(status) if status.code() == temporalio_client::tonic::Code::FailedPrecondition)
}

/// Sends an update, once more if the run it reached had just closed.
async fn update<U>(
    handle: &Handle,
    update: impl Fn() -> U,
    input: U::Input,
    id: String,
) -> Result<U::Output, WorkflowUpdateError>
where
    U: temporalio_common::UpdateDefinition<Workflow = <SessionWorkflow as HasWorkflowDefinition>::Run>,
    U::Input: Send + Clone,
    U::Output: 'static,
{
    let options = WorkflowExecuteUpdateOptions::builder().update_id(id).build();
    match handle.execute_update(update(), input.clone(), options.clone()).await {
        Err(error) if run_closed(&error) => handle.execute_update(update(), input, options).await,
        other => other,
    }
}

/// A fresh id for an update.
fn update_id(kind: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{kind}:{}:{}:{n}", std::process::id(), now().0)
}

impl TemporalEngine {
    /// Per agent of the current catalog, how `setup` has its runs plan
    /// (the runtime's own choice for an agent `setup` does not name: a run
    /// that names its agent carries that agent's entry only, and a handoff or
    /// a child run may go to any other).
    fn plans(&self, setup: &RunSetup) -> BTreeMap<AgentId, Plan> {
        let catalog = self.parts.catalogs.current().catalog;
        catalog
            .agents()
            .map(|resolved| {
                let agent = resolved.spec.id.clone();
                let mut probe = StartRun::new("", PlannerMode::Model, Timestamp(0));
                self.parts.setup.apply(&mut probe, &agent);
                setup.apply(&mut probe, &agent);
                (
                    agent,
                    Plan {
                        planner: probe.planner,
                        policy: probe.policy,
                    },
                )
            })
            .collect()
    }

    /// The agents of this process's catalog (a new session's workflow
    /// checks that its worker has them).
    fn agents(&self) -> Vec<AgentId> {
        self.parts.catalogs.current().catalog.agent_ids()
    }

    /// Where stop number `stop` of the session's run will be.
    pub(super) fn stop(&self, session: &SessionId, stop: u64) -> RunStop {
        let handle = self.handle(session);
        let config = self.config.clone();
        RunStop::later(async move {
            match update(&handle, || SessionWorkflow::wait_stop, stop, format!("wait:{stop}")).await {
                Ok(Some(output)) => Ok(output),
                Ok(None) => Err(Error::RunInterrupted),
                // The session ended (its workflow closed) before this waiter
                // asked: the workflow's result is the session's last output,
                // what `wait_stop` answers for a stop the end overtook.
                Err(WorkflowUpdateError::NotFound(_)) => {
                    match handle.get_result(WorkflowGetResultOptions::default()).await {
                        Ok(Some(output)) => Ok(output),
                        Ok(None) => Err(Error::RunInterrupted),
                        Err(error) => Err(server_error(&config, "say where the run stopped", error)),
                    }
                }
                Err(error) => Err(server_error(&config, "say where the run stopped", error)),
            }
        })
    }

    /// How a session's workflow starts (when the input creates it): on the
    /// sessions queue, with its tenant and agent as search attributes and
    /// memo, then the caller's options over them.
    fn with_start_options(&self, session: &SessionId, start: Creation<'_>) -> WorkflowUpdateWithStartOptions {
        let options = start.options;
        let queue = options
            .and_then(|o| o.task_queue.clone())
            .unwrap_or_else(|| self.config.sessions_queue());
        let attributes = visibility::start_attributes(
            &self.config,
            start.tenant,
            start.agent,
            options.map(|o| &o.search_attributes),
        );
        let no_memo = BTreeMap::new();
        let memo = visibility::start_memo(
            start.tenant,
            start.agent,
            start.labels,
            options.map_or(&no_memo, |o| &o.memo),
        );
        WorkflowUpdateWithStartOptions::new(
            queue,
            self.config.workflow_id(session),
            WorkflowIdConflictPolicy::UseExisting,
        )
        // An ended session's id stays taken; one whose workflow failed (a
        // worker of another project refused it) may start again.
        .id_reuse_policy(WorkflowIdReusePolicy::AllowDuplicateFailedOnly)
        .maybe_search_attributes(attributes)
        .memo(memo)
        .build()
    }

    pub(super) async fn do_start(&self, session: SessionId, start: StartRun, setup: RunSetup) -> Result<Started> {
        let started = self.deliver_start(&session, start, setup, false).await?;
        Ok(Started {
            run_id: started.run_id,
            first_seq: started.first_seq,
            stop: self.stop(&session, started.stop),
        })
    }

    /// A run to its stop, with one update: it answers at the stop.
    pub(super) async fn do_run(&self, session: SessionId, start: StartRun, setup: RunSetup) -> Result<RunOutput> {
        let started = self.deliver_start(&session, start, setup, true).await?;
        match started.output {
            Some(output) => Ok(*output),
            // The session ended before the stop: where it stopped says why.
            None => self.stop(&session, started.stop).output().await,
        }
    }

    /// Delivers a run's start (creating the session's workflow if new); with
    /// `wait`, the answer comes at the run's stop.
    async fn deliver_start(
        &self,
        session: &SessionId,
        mut start: StartRun,
        setup: RunSetup,
        wait: bool,
    ) -> Result<StartReply> {
        if start.catalog_version.is_none() {
            start.catalog_version = self.parts.catalogs.current().id;
        }
        let options = setup.engine_option::<WorkflowOptions>();
        let first_agent = start.agent.clone().or_else(|| setup.first_agent_of().cloned());
        let start_options = self.with_start_options(
            session,
            Creation {
                tenant: start.tenant.as_deref(),
                agent: first_agent.as_ref(),
                labels: &start.labels,
                options,
            },
        );
        let queue = options.and_then(|o| o.task_queue.clone());
        let request = StartRequest {
            session: session.clone(),
            first_agent,
            plans: self.plans(&setup),
            catalog: start
                .catalog_version
                .as_deref()
                .and_then(|version| self.parts.catalogs.record(version)),
            start,
            wait,
        };
        let bytes = payload::size_of(&request);
        if bytes > self.config.max_payload_bytes {
            return Err(Error::RunStartFailed(format!(
                "{}; send it in smaller parts",
                payload::over("the run's input", "is", bytes, self.config.max_payload_bytes)
            )));
        }
        let begin = Begin {
            session: session.clone(),
            carried: None,
            child: None,
            model_calls: self.config.model_calls,
            agents: self.agents(),
        };
        let reply = if wait {
            // A worker must take the start in time; the run then takes its own.
            let accepted = self.client.start_update_with_start_workflow(
                SessionWorkflow::run,
                begin,
                SessionWorkflow::start_run,
                request,
                start_options,
            );
            let handle = match self.within(session, queue.as_deref(), accepted).await? {
                Ok(handle) => handle,
                Err(error) => return Err(self.start_error(session, error).await),
            };
            match handle.get_result(RpcOptions::default()).await {
                Ok(reply) => reply,
                Err(error) => return Err(self.update_error(session, error).await),
            }
        } else {
            let delivered = self.client.execute_update_with_start_workflow(
                SessionWorkflow::run,
                begin,
                SessionWorkflow::start_run,
                request,
                start_options,
            );
            match self.within(session, queue.as_deref(), delivered).await? {
                Ok(reply) => reply,
                Err(error) => return Err(self.start_error(session, error).await),
            }
        };
        match reply {
            Reply::Done(started) => Ok(started),
            Reply::Refused(refusal) => Err(refusal.into()),
        }
    }

    pub(super) async fn do_confirm(
        &self,
        session: SessionId,
        call_id: CallId,
        fingerprint: String,
        decision: Decision,
    ) -> Result<RunStop> {
        let request = ConfirmRequest {
            call_id,
            fingerprint,
            decision,
            at: now(),
        };
        self.until_stop(&session, || SessionWorkflow::confirm, request, "confirm")
            .await
    }

    pub(super) async fn do_answer(
        &self,
        session: SessionId,
        call_id: CallId,
        question: u32,
        answer: ElicitationAnswer,
    ) -> Result<RunStop> {
        let request = AnswerRequest {
            call_id,
            question,
            answer,
            at: now(),
        };
        self.until_stop(&session, || SessionWorkflow::answer, request, "answer")
            .await
    }

    /// Sends the person's answer (`kind`: its update's name) as an update
    /// that answers with the number of the run's next stop, which the
    /// returned [`RunStop`] waits for.
    async fn until_stop<U>(
        &self,
        session: &SessionId,
        which: impl Fn() -> U,
        request: U::Input,
        kind: &str,
    ) -> Result<RunStop>
    where
        U: temporalio_common::UpdateDefinition<
                Workflow = <SessionWorkflow as HasWorkflowDefinition>::Run,
                Output = Reply<u64>,
            >,
        U::Input: Send + Clone,
    {
        let handle = self.handle(session);
        let delivered = update(&handle, which, request, update_id(kind));
        let reply = match self.within(session, None, delivered).await? {
            Ok(reply) => reply,
            Err(error) => return Err(self.update_error(session, error).await),
        };
        match reply {
            Reply::Done(stop) => Ok(self.stop(session, stop)),
            Reply::Refused(refusal) => Err(refusal.into()),
        }
    }

    pub(super) async fn do_end(&self, session: SessionId, reason: String, run_only: bool) -> Result<Option<RunOutput>> {
        let request = EndRequest {
            reason,
            run_only,
            at: now(),
        };
        let handle = self.handle(&session);
        let delivered = update(&handle, || SessionWorkflow::end, request, update_id("end"));
        let reply = match self.within(&session, None, delivered).await? {
            Ok(reply) => reply,
            Err(error) => return Err(self.update_error(&session, error).await),
        };
        match reply {
            Reply::Done(output) => Ok(output),
            Reply::Refused(refusal) => Err(refusal.into()),
        }
    }

    pub(super) async fn do_open(&self, session: SessionId, open: OpenSession, options: EngineOptions) -> Result<()> {
        let no_labels = BTreeMap::new();
        let options = options.get::<WorkflowOptions>();
        let start_options = self.with_start_options(
            &session,
            Creation {
                tenant: open.tenant.as_deref(),
                agent: Some(&open.agent),
                labels: &no_labels,
                options,
            },
        );
        let queue = options.and_then(|o| o.task_queue.clone());
        let delivered = self.client.execute_update_with_start_workflow(
            SessionWorkflow::run,
            Begin {
                session: session.clone(),
                carried: None,
                child: None,
                model_calls: self.config.model_calls,
                agents: self.agents(),
            },
            SessionWorkflow::open,
            OpenRequest {
                session: session.clone(),
                open,
            },
            start_options,
        );
        let reply = match self.within(&session, queue.as_deref(), delivered).await? {
            Ok(reply) => reply,
            Err(error) => return Err(self.start_error(&session, error).await),
        };
        match reply {
            Reply::Done(()) => Ok(()),
            Reply::Refused(refusal) => Err(refusal.into()),
        }
    }
}
