//! What sessions' workflows cost in Temporal's history: events and bytes,
//! as the server counts them (for `concierge bench` and operators sizing a
//! cluster).

use std::collections::BTreeMap;

use concierge::{Error, Result};
use concierge_core::SessionId;
use futures::StreamExt;
use temporalio_client::{UntypedWorkflow, WorkflowDescribeOptions, WorkflowFetchHistoryOptions};

use crate::config::TemporalConfig;
use crate::connection::connect;

/// The history of some sessions' workflows (each one's current run).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HistoryCost {
    /// The workflows described.
    pub workflows: u64,
    /// Their history events, all together.
    pub events: u64,
    /// Their history's size in bytes, as the server counts it.
    pub bytes: u64,
    /// The events of the first session's history by type
    /// (`WorkflowTaskCompleted`, `ActivityTaskScheduled`, ...), when asked for.
    pub by_type: BTreeMap<String, u64>,
}

fn unreadable(config: &TemporalConfig, session: &SessionId, error: impl std::fmt::Display) -> Error {
    Error::Storage(format!(
        "the history of session {session} on Temporal at {} could not be read: {error}",
        config.address
    ))
}

/// Describes the workflows of `sessions` on the server `config` names and
/// adds up their history; with `by_type`, also reads the first session's
/// whole history and counts its events by type.
pub async fn history_cost(config: &TemporalConfig, sessions: &[SessionId], by_type: bool) -> Result<HistoryCost> {
    let client = connect(config).await?;
    let mut cost = HistoryCost::default();
    for session in sessions {
        let handle = client.get_workflow_handle::<UntypedWorkflow>(config.workflow_id(session));
        let description = handle
            .describe(WorkflowDescribeOptions::default())
            .await
            .map_err(|e| unreadable(config, session, e))?;
        let info = description.raw_description.workflow_execution_info.as_ref();
        cost.workflows += 1;
        cost.events += u64::try_from(description.history_length()).unwrap_or(u64::MAX);
        cost.bytes += info.map_or(0, |i| u64::try_from(i.history_size_bytes).unwrap_or_default());
    }
    if let (true, Some(first)) = (by_type, sessions.first()) {
        let handle = client.get_workflow_handle::<UntypedWorkflow>(config.workflow_id(first));
        let mut events = handle.fetch_history(WorkflowFetchHistoryOptions::default());
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| unreadable(config, first, e))?;
            let name = event.event_type().as_str_name();
            let name = name.strip_prefix("EVENT_TYPE_").unwrap_or(name).to_string();
            *cost.by_type.entry(name).or_default() += 1;
        }
    }
    Ok(cost)
}
