//! Agents called as tools on Temporal: the child session is a child
//! workflow of its caller's, found under it in Temporal, and the two talk by
//! signals that reach the caller's workflow across a continue-as-new.
//! Against a real Temporal dev server on loopback (ignored: run them with the
//! dev server installed, `CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)
//! cargo test -p concierge-temporal --test children -- --ignored`). What a
//! router and its specialists do is the shared agents-as-tools cases'
//! (`runtime_suites`); this is how they sit in Temporal.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use concierge::{
    AgentSpec, AgentTool, Route, Rules, RunOptions, RunStatus, Runtime, Tool, ToolAnnotations, ToolContext, ToolError,
    ToolSpec,
};
use concierge_temporal::{AGENT, TENANT, Temporal, TemporalConfig, Workers};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use support::DevServer;
use temporalio_client::{Client, WorkflowDescribeOptions, WorkflowExecutionDescription, WorkflowListOptions};
use temporalio_common::UntypedWorkflow;

#[derive(Deserialize, JsonSchema)]
struct RemoveArgs {
    /// Who to remove.
    contact: String,
}

/// Removes a contact once the person approves; logs who it removed.
struct RemoveContact(Arc<Mutex<Vec<String>>>);

impl Tool for RemoveContact {
    type Args = RemoveArgs;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "remove_contact",
            "Removes a contact.",
            concierge::tool::schema_for::<RemoveArgs>(),
        )
        .annotations(ToolAnnotations {
            requires_confirmation: true,
            destructive: true,
            ..ToolAnnotations::default()
        })
        .confirm("I'll remove {contact}. Proceed?")
    }

    async fn call(&self, args: RemoveArgs, _cx: ToolContext) -> Result<Value, ToolError> {
        self.0.lock().unwrap().push(args.contact.clone());
        Ok(json!(format!("Removed {}.", args.contact)))
    }
}

fn agents() -> Vec<AgentSpec> {
    let contacts = AgentSpec::new("contacts")
        .description("Removes contacts.")
        .tool("remove_contact")
        .rules(
            Rules::new()
                .route(Route::tool("remove_contact", json!({"contact": "{who}"})).pattern(r"(?i)remove (?P<who>\w+)"))
                .answer("{result}"),
        );
    let router = AgentSpec::new("router")
        .description("Keeps your contacts up to date.")
        .agent_tool(AgentTool::new("contacts"))
        .rules(
            Rules::new()
                .route(Route::tool("contacts", json!({"request": "{part}"})).pattern(r"(?i)(?P<part>remove \w+)"))
                .answer("{result}"),
        );
    vec![contacts, router]
}

async fn describe(client: &Client, config: &TemporalConfig, session: &str) -> WorkflowExecutionDescription {
    client
        .get_workflow_handle::<UntypedWorkflow>(config.workflow_id(&session.into()))
        .describe(WorkflowDescribeOptions::default())
        .await
        .unwrap()
}

/// The runs of `session`'s workflow Temporal lists, asked until at least
/// `expected` show (its visibility store may lag a moment).
async fn workflow_runs(client: &Client, config: &TemporalConfig, session: &str, expected: usize) -> usize {
    let query = format!("WorkflowId = '{}'", config.workflow_id(&session.into()));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let runs = client
            .list_workflows(query.clone(), WorkflowListOptions::default())
            .collect::<Vec<_>>()
            .await
            .len();
        if runs >= expected || Instant::now() > deadline {
            return runs;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn a_specialist_runs_in_a_child_workflow_that_answers_its_caller_across_a_continue_as_new() {
    let server = DevServer::start().await;
    // Short workflow runs: the router's session continues as new while its
    // specialist's question waits for the person.
    let config = server.config("kids").continue_after_events(30);
    let removed = Arc::new(Mutex::new(Vec::new()));
    let rt = Runtime::builder()
        .tool(RemoveContact(removed.clone()))
        .agents(agents())
        .engine(Temporal::new(config.clone()).workers(Workers::all()))
        .build()
        .await
        .unwrap();
    let client = concierge_temporal::connect(&config).await.unwrap();
    let opts = || RunOptions::new().session_id("p1").tenant("acme");

    // Two questions answered "no", then one answered "yes": each a child.
    for (turn, who) in ["Ann", "Bob", "Jane"].into_iter().enumerate() {
        let out = rt.send(format!("remove {who}"), opts()).await.unwrap();
        assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
        let pending = out.pending_confirmation.clone().unwrap();
        assert_eq!(pending.message, format!("I'll remove {who}. Proceed?"));
        let child = pending.session.clone().unwrap();
        assert_eq!(child.as_str(), format!("p1.call_{}", turn + 1));

        // The child session is a child workflow of the router's session,
        // found by the same tenant, under its own agent.
        let described = describe(&client, &config, child.as_str()).await;
        assert_eq!(described.parent_id(), Some(config.workflow_id(&"p1".into()).as_str()));
        assert_eq!(described.search_attributes().get(&TENANT).as_deref(), Some("acme"));
        assert_eq!(described.search_attributes().get(&AGENT).as_deref(), Some("contacts"));
        assert_eq!(
            described.memo().get::<String>("agent").unwrap().as_deref(),
            Some("contacts")
        );

        let answer = if who == "Jane" { "yes" } else { "no" };
        if who == "Jane" {
            // The router's workflow has continued as new meanwhile: the
            // person's answer goes on to the child by signal, and the
            // child's report comes back to the router's new run.
            let runs = workflow_runs(&client, &config, "p1", 2).await;
            assert!(runs >= 2, "the router's session continued as new ({runs} runs)");
        }
        let out = rt.send(answer, opts()).await.unwrap();
        assert_eq!(out.status, RunStatus::Completed, "{out:?}");
        if who == "Jane" {
            assert_eq!(out.reply.as_deref(), Some("Removed Jane."));
        }
    }
    assert_eq!(*removed.lock().unwrap(), ["Jane"], "only the approved call ran, once");

    // The child kept its own session, with its run finished.
    let child = rt.session("p1.call_3").await.unwrap();
    assert_eq!(child.agent(), "contacts");
    assert_eq!(child.parent().map(|p| p.call_id.as_str()), Some("call_3"));
    assert_eq!(
        child.last_output().and_then(|o| o.reply.as_deref()),
        Some("Removed Jane.")
    );

    rt.shutdown().await;
    server.stop().await;
}
