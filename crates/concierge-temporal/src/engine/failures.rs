//! Why an input or a read did not get through, in words: no worker took
//! it in time, the session does not exist or has ended, or its workflow
//! does not take inputs (a worker of another project on its queues).

use concierge::{Error, Result};
use concierge_core::SessionId;
use temporalio_client::WorkflowDescribeOptions;
use temporalio_client::WorkflowExecutionStatus;
use temporalio_client::errors::{
    WorkflowQueryError, WorkflowStartError, WorkflowUpdateError, WorkflowUpdateWithStartError,
};
use temporalio_client::tonic::{Code, Status};

use super::TemporalEngine;
use crate::connection::{server_error, unavailable};
use crate::reach;
use crate::workflow::SessionWorkflow;

impl TemporalEngine {
    /// Waits for `delivery` of an input, failing when no worker took it in
    /// time (a new session's workflow runs on `queue`, when it is not the
    /// default one).
    pub(super) async fn within<T>(
        &self,
        session: &SessionId,
        queue: Option<&str>,
        delivery: impl std::future::Future<Output = T>,
    ) -> Result<T> {
        let Ok(delivered) = tokio::time::timeout(self.config.input_timeout, delivery).await else {
            // (The client retries while the server is away: it may be why.)
            if !reach::answers(&self.client, &self.config).await {
                return Err(unavailable(&self.config));
            }
            return Err(Error::RunStartFailed(format!(
                "no concierge worker took the input for session {session} within {} s: run the session \
                 workers (task queue {} on Temporal at {}) and try again",
                self.config.input_timeout.as_secs(),
                queue.map_or_else(|| self.config.sessions_queue(), str::to_string),
                self.config.address
            )));
        };
        Ok(delivered)
    }

    pub(super) fn query_error(&self, error: WorkflowQueryError) -> Error {
        match error {
            WorkflowQueryError::Rpc(status) if status.code() == temporalio_client::tonic::Code::DeadlineExceeded => {
                Error::Storage(format!(
                    "no concierge worker answered on task queue {} of Temporal at {}; start one",
                    self.config.sessions_queue(),
                    self.config.address
                ))
            }
            other => server_error(&self.config, "read the session", other),
        }
    }

    pub(super) async fn update_error(&self, session: &SessionId, error: WorkflowUpdateError) -> Error {
        match error {
            WorkflowUpdateError::NotFound(_) => Error::SessionNotFound(session.clone()),
            WorkflowUpdateError::Rpc(status) if status.code() == Code::FailedPrecondition => {
                self.not_taken(session, &status).await
            }
            other => server_error(&self.config, "deliver the input", other),
        }
    }

    pub(super) async fn start_error(&self, session: &SessionId, error: WorkflowUpdateWithStartError) -> Error {
        match error {
            WorkflowUpdateWithStartError::Start(WorkflowStartError::AlreadyStarted { .. }) => {
                Error::Rejected(concierge_core::StepError::SessionEnded)
            }
            WorkflowUpdateWithStartError::Update(inner) => Box::pin(self.update_error(session, inner)).await,
            other => server_error(&self.config, "start the run", other),
        }
    }

    /// Why the session's workflow did not take an input (the server said
    /// its state does not allow it, sent again once): it ended, or its
    /// workflow tasks fail, which a worker of another project on the same
    /// queues causes.
    async fn not_taken(&self, session: &SessionId, status: &Status) -> Error {
        let id = self.config.workflow_id(session);
        let described = self
            .client
            .get_workflow_handle::<SessionWorkflow>(id.clone())
            .describe(WorkflowDescribeOptions::default())
            .await;
        match described.map(|d| d.status()) {
            Ok(WorkflowExecutionStatus::Completed) => Error::Rejected(concierge_core::StepError::SessionEnded),
            Err(temporalio_client::errors::WorkflowInteractionError::NotFound(_)) => {
                Error::SessionNotFound(session.clone())
            }
            _ => Error::Storage(format!(
                "the workflow of session {session} ({id}) on Temporal at {} did not take the input ({}). When its \
                 workflow tasks fail (`temporal workflow describe --workflow-id {id}` shows why), a worker of \
                 another project may poll task queue {}: give each project its own `task_queue_prefix` in the \
                 [temporal] section of concierge.toml",
                self.config.address,
                status.message(),
                self.config.sessions_queue()
            )),
        }
    }
}
