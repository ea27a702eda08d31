//! Agents called as tools on Temporal: the child session is a child
//! workflow of its caller's, found under it in Temporal, and the two talk by
//! signals that reach the caller's workflow across a continue-as-new.
//! Against a real Temporal dev server on loopback (ignored: run them with the
//! dev server installed, `CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)
//! cargo test -p concierge-temporal --test children -- --ignored`). What a
//! router and its specialists do is the shared agents-as-tools cases'
//! (`runtime_suites`); this is how they sit in Temporal.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "../../concierge/tests/cases/contacts.rs"]
mod contacts;
mod support;
#[path = "support/workflows.rs"]
mod workflows;

use concierge::{RunOptions, RunStatus, Runtime};
use concierge_temporal::{AGENT, TENANT, Temporal, Workers};
use contacts::{Log, LogNote, RemoveContact, agents};
use support::DevServer;
use workflows::{describe, listed};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn a_specialist_runs_in_a_child_workflow_that_answers_its_caller_across_a_continue_as_new() {
    let server = DevServer::start().await;
    // Short workflow runs: the router's session continues as new while its
    // specialist's question waits for the person.
    let config = server.config("kids").continue_after_events(30);
    let log = Log::default();
    let rt = Runtime::builder()
        .tool(LogNote(log.clone()))
        .tool(RemoveContact(log.clone()))
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
        assert_eq!(child.as_str(), format!("p1:call_{}", turn + 1));

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
            let query = format!("WorkflowId = '{}'", config.workflow_id(&"p1".into()));
            let runs = listed(&client, &query, 2).await;
            assert!(runs.len() >= 2, "the router's session continued as new: {runs:?}");
        }
        let out = rt.send(answer, opts()).await.unwrap();
        assert_eq!(out.status, RunStatus::Completed, "{out:?}");
        if who == "Jane" {
            assert_eq!(out.reply.as_deref(), Some("Removed Jane."));
        }
    }
    let removed: Vec<String> = log
        .lock()
        .unwrap()
        .iter()
        .map(|(tool, _, who, _)| format!("{tool} {who}"))
        .collect();
    assert_eq!(removed, ["remove_contact Jane"], "only the approved call ran, once");

    // The child kept its own session, with its run finished.
    let child = rt.session("p1:call_3").await.unwrap();
    assert_eq!(child.agent(), "contacts");
    assert_eq!(child.parent().map(|p| p.call_id.as_str()), Some("call_3"));
    assert_eq!(
        child.last_output().and_then(|o| o.reply.as_deref()),
        Some("Removed Jane.")
    );

    rt.shutdown().await;
    server.stop().await;
}
