//! Reading sessions' workflows as Temporal shows them: described, and
//! listed by a visibility query (the tests that look at Temporal itself
//! include this beside `support`).

use std::time::{Duration, Instant};

use concierge_temporal::TemporalConfig;
use futures::StreamExt;
use temporalio_client::{Client, WorkflowDescribeOptions, WorkflowExecutionDescription, WorkflowListOptions};
use temporalio_common::UntypedWorkflow;

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
