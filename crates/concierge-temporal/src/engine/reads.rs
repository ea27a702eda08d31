//! The engine's reads of sessions, as their workflows' queries: a
//! session, where its run will stop, the sessions there are (listed from
//! Temporal's visibility store), a page of events, a kept model request.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use concierge::Result;
use concierge::engine::{RunStop, SessionQuery, SessionSummary};
use concierge_core::{ModelRequest, RunId, Session, SessionId};
use futures::StreamExt;
use futures::future::BoxFuture;
use temporalio_client::WorkflowListOptions;
use temporalio_client::errors::WorkflowQueryError;
use temporalio_client::tonic::{Code, Request, Response, Status};
use temporalio_common::protos::temporal::api::common::v1::WorkflowExecution;
use temporalio_common::protos::temporal::api::workflowservice::v1::{
    DeleteWorkflowExecutionRequest, DescribeWorkflowExecutionRequest, DescribeWorkflowExecutionResponse,
};

use super::TemporalEngine;
use crate::activities::ModelRequests;
use crate::connection::server_error;
use crate::wire::{Current, EventsPage, Summary};
use crate::workflow::{SessionWorkflow, WORKFLOW_TYPE};

/// How long an erase waits for Temporal to delete what it accepted to.
const ERASE_WAIT: Duration = Duration::from_secs(30);

fn not_erased(session: &SessionId, why: &str) -> concierge::Error {
    concierge::Error::Storage(format!("Temporal did not erase session {session}: {why}"))
}

fn execution(workflow_id: &str, run_id: &str) -> WorkflowExecution {
    WorkflowExecution {
        workflow_id: workflow_id.to_string(),
        run_id: run_id.to_string(),
    }
}

/// What Temporal answered an erase's call, `None` if the run is not there.
fn found<T>(session: &SessionId, answer: std::result::Result<Response<T>, Status>) -> Result<Option<T>> {
    match answer {
        Ok(response) => Ok(Some(response.into_inner())),
        Err(status) if status.code() == Code::NotFound => Ok(None),
        Err(status) => Err(not_erased(session, status.message())),
    }
}

impl TemporalEngine {
    pub(super) async fn query_events(&self, session: &SessionId, after: u64) -> Result<Option<EventsPage>> {
        match self
            .handle(session)
            .query(SessionWorkflow::events, after, self.query_options())
            .await
        {
            Ok(page) => Ok(Some(page)),
            Err(WorkflowQueryError::NotFound(_)) => Ok(None),
            Err(error) => Err(self.query_error(error)),
        }
    }

    pub(super) async fn do_wait(&self, session: SessionId) -> Result<Option<RunStop>> {
        let current = match self
            .handle(&session)
            .query(SessionWorkflow::current, (), self.query_options())
            .await
        {
            Ok(current) => current,
            Err(WorkflowQueryError::NotFound(_)) => return Ok(None),
            Err(error) => return Err(self.query_error(error)),
        };
        Ok(match current {
            Current::Idle => None,
            Current::Parked(output) => Some(RunStop::ready(*output)),
            Current::At(stop) => Some(self.stop(&session, stop)),
        })
    }

    pub(super) async fn do_session(&self, session: SessionId) -> Result<Option<Session>> {
        match self
            .handle(&session)
            .query(SessionWorkflow::snapshot, (), self.query_options())
            .await
        {
            Ok(snapshot) => Ok(snapshot.map(|s| *s)),
            Err(WorkflowQueryError::NotFound(_)) => Ok(None),
            Err(error) => Err(self.query_error(error)),
        }
    }

    /// Deletes every run of the session's workflow (Temporal terminates a
    /// running one first): its history, and with it the session's text.
    /// Temporal deletes in the background, so this returns once no run of
    /// the session can be read any more. `false` if there was none.
    pub(super) async fn do_erase(&self, session: SessionId) -> Result<bool> {
        let workflow_id = self.config.workflow_id(&session);
        let query = format!("WorkflowId = '{}'", workflow_id.replace('\'', "\\'"));
        let mut listed = self.client.list_workflows(query, WorkflowListOptions::default());
        let mut runs = Vec::new();
        while let Some(execution) = listed.next().await {
            let execution = execution.map_err(|e| server_error(&self.config, "find the session to erase", e))?;
            runs.push(execution.run_id().to_string());
        }
        // The visibility store lags: the current run may not be listed yet.
        if let Some(current) = self.current_run(&session, &workflow_id).await?
            && !runs.contains(&current)
        {
            runs.push(current);
        }
        let mut erased = false;
        for run_id in &runs {
            erased |= self.delete_run(&session, &workflow_id, run_id).await?;
        }
        for run_id in &runs {
            self.wait_deleted(&session, &workflow_id, run_id).await?;
        }
        Ok(erased)
    }

    /// The id of the session workflow's current run, if it has one.
    async fn current_run(&self, session: &SessionId, workflow_id: &str) -> Result<Option<String>> {
        Ok(self
            .describe_run(session, workflow_id, "")
            .await?
            .and_then(|d| d.workflow_execution_info)
            .and_then(|info| info.execution)
            .map(|execution| execution.run_id))
    }

    /// What Temporal knows of one run of the session (`""`: its current
    /// run), `None` if there is no such run.
    async fn describe_run(
        &self,
        session: &SessionId,
        workflow_id: &str,
        run_id: &str,
    ) -> Result<Option<DescribeWorkflowExecutionResponse>> {
        let request = Request::new(DescribeWorkflowExecutionRequest {
            namespace: self.config.namespace.clone(),
            execution: Some(execution(workflow_id, run_id)),
        });
        let described = self
            .client
            .connection()
            .workflow_service()
            .describe_workflow_execution(request)
            .await;
        found(session, described)
    }

    /// Asks Temporal to delete one run; `false` if it was already gone.
    async fn delete_run(&self, session: &SessionId, workflow_id: &str, run_id: &str) -> Result<bool> {
        let request = Request::new(DeleteWorkflowExecutionRequest {
            namespace: self.config.namespace.clone(),
            workflow_execution: Some(execution(workflow_id, run_id)),
        });
        let deleted = self
            .client
            .connection()
            .workflow_service()
            .delete_workflow_execution(request)
            .await;
        Ok(found(session, deleted)?.is_some())
    }

    /// Waits until Temporal has deleted the run it was asked to.
    async fn wait_deleted(&self, session: &SessionId, workflow_id: &str, run_id: &str) -> Result<()> {
        let deadline = Instant::now() + ERASE_WAIT;
        let mut pause = Duration::from_millis(20);
        while self.describe_run(session, workflow_id, run_id).await?.is_some() {
            if Instant::now() >= deadline {
                return Err(not_erased(
                    session,
                    &format!(
                        "it can still be read {} s after Temporal accepted erasing it; erase it again",
                        ERASE_WAIT.as_secs()
                    ),
                ));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(500));
        }
        Ok(())
    }

    /// The sessions `query` holds (its cursor and limit aside), the most
    /// recently active first: only the workflows whose ids it may hold are
    /// asked for their summary (one query each), so the child runs below a
    /// conversation cost what they are, not what every session is.
    pub(super) async fn do_sessions_of(&self, query: SessionQuery) -> Result<Vec<SessionSummary>> {
        Ok(query.list_of(self.summaries(|id| query.may_hold(id)).await?))
    }

    /// Every session, by id.
    pub(super) async fn do_sessions(&self) -> Result<Vec<SessionSummary>> {
        self.summaries(|_| true).await
    }

    /// The sessions whose ids `keep` holds, by id.
    async fn summaries(&self, keep: impl Fn(&SessionId) -> bool) -> Result<Vec<SessionSummary>> {
        // Sessions on any queue (a caller may have chosen one), of this
        // deployment (its workflow ids' prefix).
        let query = format!("WorkflowType = '{WORKFLOW_TYPE}'");
        let ours = self.config.workflow_id(&SessionId::new(""));
        let mut listed = self.client.list_workflows(query, WorkflowListOptions::default());
        let mut ids = Vec::new();
        while let Some(execution) = listed.next().await {
            let execution = execution.map_err(|e| server_error(&self.config, "list the sessions", e))?;
            if execution
                .id()
                .strip_prefix(&ours)
                .is_some_and(|session| keep(&SessionId::new(session)))
            {
                ids.push(execution.id().to_string());
            }
        }
        let mut summaries = HashMap::new();
        for id in ids {
            let handle = self.client.get_workflow_handle::<SessionWorkflow>(id);
            let summary: Option<Summary> = match handle.query(SessionWorkflow::summary, (), self.query_options()).await
            {
                Ok(summary) => summary,
                Err(WorkflowQueryError::NotFound(_)) => None,
                Err(error) => return Err(self.query_error(error)),
            };
            if let Some(s) = summary {
                summaries.insert(
                    s.id.clone(),
                    SessionSummary {
                        id: s.id,
                        agent: s.agent,
                        live: s.live,
                        updated_at: s.updated_at,
                        tenant: s.tenant,
                    },
                );
            }
        }
        let mut all: Vec<SessionSummary> = summaries.into_values().collect();
        all.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));
        Ok(all)
    }
}

impl ModelRequests for TemporalEngine {
    fn model_request<'a>(
        &'a self,
        session: &'a SessionId,
        run_id: &'a RunId,
        call: u32,
    ) -> BoxFuture<'a, Result<Option<ModelRequest>>> {
        Box::pin(async move {
            self.handle(session)
                .query(
                    SessionWorkflow::model_request,
                    (run_id.clone(), call),
                    self.query_options(),
                )
                .await
                .map_err(|error| self.query_error(error))
        })
    }
}
