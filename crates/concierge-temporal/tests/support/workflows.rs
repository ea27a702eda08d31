//! Reading sessions' workflows as Temporal shows them: described, and
//! listed by a visibility query, their runs' events counted (the tests that look at Temporal itself
//! include this beside `support`).

// Each test binary that includes this uses some of it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use concierge_temporal::TemporalConfig;
use futures::StreamExt;
use temporalio_client::{
    Client, WorkflowDescribeOptions, WorkflowExecutionDescription, WorkflowExecutionInfo, WorkflowFetchHistoryOptions,
    WorkflowListOptions,
};
use temporalio_common::UntypedWorkflow;
use temporalio_common::protos::temporal::api::history::v1::history_event::Attributes;

/// `session`'s workflow, described.
pub async fn describe(client: &Client, config: &TemporalConfig, session: &str) -> WorkflowExecutionDescription {
    client
        .get_workflow_handle::<UntypedWorkflow>(config.workflow_id(&session.into()))
        .describe(WorkflowDescribeOptions::default())
        .await
        .unwrap()
}

/// The workflow ids `query` lists, asked until `expected` many show
/// (Temporal's visibility store may lag a moment).
pub async fn listed(client: &Client, query: &str, expected: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ids: Vec<String> = client
            .list_workflows(query.to_string(), WorkflowListOptions::default())
            .map(|execution| execution.unwrap().id().to_string())
            .collect()
            .await;
        if ids.len() >= expected {
            return ids;
        }
        assert!(Instant::now() < deadline, "{query} lists {ids:?}, not {expected}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The events of each run of `session`'s workflow by type, oldest run
/// first (a run that continued as new is followed back to the run before).
pub async fn runs_by_type(client: &Client, config: &TemporalConfig, session: &str) -> Vec<BTreeMap<String, u64>> {
    let workflow_id = config.workflow_id(&session.into());
    let mut runs = Vec::new();
    let mut run_id = None;
    loop {
        let handle = WorkflowExecutionInfo::builder()
            .namespace(config.namespace.clone())
            .workflow_id(workflow_id.clone())
            .maybe_run_id(run_id.take())
            .build()
            .bind_untyped(client.clone());
        let mut events = handle.fetch_history(WorkflowFetchHistoryOptions::default());
        let mut by_type = BTreeMap::new();
        while let Some(event) = events.next().await {
            let event = event.unwrap();
            if let Some(Attributes::WorkflowExecutionStartedEventAttributes(started)) = &event.attributes {
                run_id = Some(started.continued_execution_run_id.clone()).filter(|id| !id.is_empty());
            }
            let name = event.event_type().as_str_name();
            let name = name.strip_prefix("EVENT_TYPE_").unwrap_or(name).to_string();
            *by_type.entry(name).or_default() += 1;
        }
        runs.push(by_type);
        if run_id.is_none() {
            runs.reverse();
            return runs;
        }
    }
}
