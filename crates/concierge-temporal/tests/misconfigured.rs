//! What a newcomer meets when something around the engine is set up wrong,
//! against a real Temporal dev server on loopback: a namespace without
//! concierge's search attributes, two projects on the same task queues, a
//! server that goes away, and the heartbeat timeouts read from
//! `concierge.toml` (ignored: run them with the dev server installed,
//! `CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh) cargo test -p
//! concierge-temporal --test misconfigured -- --ignored`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod support;
#[path = "support/workflows.rs"]
mod workflows;

use std::time::{Duration, Instant};

use concierge::config::Config;
use concierge::model::ScriptedModel;
use concierge::{AgentSpec, Error, ModelReply, RunOptions, Runtime, StepError};
use concierge_temporal::{Temporal, TemporalConfig, Workers};
use futures::StreamExt;
use support::DevServer;
use temporalio_client::{WorkflowExecutionInfo, WorkflowExecutionStatus, WorkflowFetchHistoryOptions};
use temporalio_common::protos::temporal::api::history::v1::history_event::Attributes;

fn session(id: &str) -> RunOptions {
    RunOptions::new().session_id(id)
}

/// The shell commands an error message gives between backquotes that
/// start with `prefix`.
fn commands<'a>(message: &'a str, prefix: &str) -> Vec<&'a str> {
    message
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|command| command.starts_with(prefix))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn the_commands_a_namespace_without_search_attributes_is_told_register_them() {
    let server = DevServer::start_with(&[]).await;
    let config = server.config("attrs");
    let open = || {
        concierge_demo::install(Runtime::builder())
            .engine(Temporal::new(config.clone()).workers(Workers::all()))
            .build()
    };
    let error = open().await.unwrap_err().to_string();
    assert!(
        error.contains("no Keyword search attribute ConciergeTenant and ConciergeAgent"),
        "{error}"
    );
    // The toml key that turns them off, not a Rust builder.
    assert!(
        error.contains("`search_attributes = false` in the [temporal] section"),
        "{error}"
    );
    assert!(!error.contains("TemporalConfig"), "{error}");

    // One command per attribute, each naming the server: run as given
    // (with this machine's `temporal` CLI), they register both.
    let given = commands(&error, "temporal operator search-attribute create");
    assert_eq!(given.len(), 2, "{error}");
    for command in given {
        assert!(command.contains(&format!("--address {}", server.address)), "{command}");
        assert!(command.contains("--namespace concierge"), "{command}");
        let mut words = command.split_whitespace().skip(1);
        let output = std::process::Command::new(std::env::var_os("CONCIERGE_TEMPORAL_BIN").unwrap())
            .args(&mut words)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{command}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    // (Registered attributes may take a moment to be listed.)
    let deadline = Instant::now() + Duration::from_secs(30);
    let rt = loop {
        match open().await {
            Ok(rt) => break rt,
            Err(error) => {
                assert!(Instant::now() < deadline, "still refused after the commands: {error}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    let out = rt
        .client("calculator")
        .unwrap()
        .run("calculate 5 + 3", session("s").tenant("acme"))
        .await
        .unwrap();
    assert_eq!(out.reply.as_deref(), Some("5 + 3 = 8"));
    rt.shutdown().await;
    server.stop().await;
}

/// A runtime of "another project" (one greeter agent) that runs every
/// worker on `config`'s queues.
async fn other_project(config: &TemporalConfig) -> Runtime {
    Runtime::builder()
        .agent(AgentSpec::new("greeter").instructions("Greet."))
        .model(ScriptedModel::new().reply(ModelReply::text("hello")))
        .engine(Temporal::new(config.clone()).workers(Workers::all()))
        .build()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn a_worker_of_another_project_on_the_same_queues_refuses_the_session_naming_the_prefix() {
    let server = DevServer::start().await;
    // Both projects keep the default prefix: the other project's worker
    // takes this project's sessions.
    let config = server.config("concierge");
    let other = other_project(&config).await;
    let ours = concierge_demo::install(Runtime::builder())
        .engine(Temporal::new(config.clone()))
        .build()
        .await
        .unwrap();

    let error = ours
        .client("calculator")
        .unwrap()
        .run("calculate 1 + 1", session("p1"))
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(&error, Error::WorkerCatalogMismatch { queue, missing, theirs }
            if queue == "concierge-sessions" && missing.contains("calculator") && theirs == "greeter"),
        "{error:?}"
    );
    assert!(message.contains("task_queue_prefix"), "{message}");
    assert!(message.contains("[temporal]"), "{message}");
    assert!(!message.contains("has ended"), "{message}");

    // Its workflow does not stay running.
    let client = concierge_temporal::connect(&config).await.unwrap();
    let described = workflows::describe(&client, &config, "p1").await;
    assert_eq!(described.status(), WorkflowExecutionStatus::Failed);

    // Later inputs are told the same, or that there is no such session:
    // never that it ended.
    let again = ours.send("calculate 1 + 1", session("p1")).await.unwrap_err();
    assert!(matches!(again, Error::WorkerCatalogMismatch { .. }), "{again:?}");
    let end = ours.end("p1", "done").await.unwrap_err();
    assert!(!matches!(end, Error::Rejected(StepError::SessionEnded)), "{end:?}");
    assert!(!end.to_string().contains("has ended"), "{end}");
    // Reading it (a query, replayed by the other project's worker) finds
    // no session, without an error.
    assert!(matches!(ours.session("p1").await, Err(Error::SessionNotFound(_))));

    // Once this project's own worker serves the queues, the same session
    // id starts.
    other.shutdown().await;
    let worker = concierge_demo::install(Runtime::builder())
        .engine(Temporal::new(config.clone()).workers(Workers::all()))
        .build()
        .await
        .unwrap();
    let out = ours
        .client("calculator")
        .unwrap()
        .run("calculate 1 + 1", session("p1"))
        .await
        .unwrap();
    assert_eq!(out.reply.as_deref(), Some("1 + 1 = 2"));
    // The session is the new run's.
    let held = ours.session("p1").await.unwrap();
    assert_eq!(held.last_output().and_then(|o| o.reply.as_deref()), Some("1 + 1 = 2"));

    worker.shutdown().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn a_server_that_goes_away_is_said_not_to_answer_naming_its_address() {
    let server = DevServer::start().await;
    let config = server.config("away").input_timeout(Duration::from_secs(3));
    let address = server.address.clone();
    let rt = concierge_demo::install(Runtime::builder())
        .engine(Temporal::new(config.clone()).workers(Workers::all()))
        .build()
        .await
        .unwrap();
    rt.client("calculator")
        .unwrap()
        .run("calculate 1 + 1", session("s"))
        .await
        .unwrap();

    server.stop().await;
    let said = |error: Error| {
        let message = error.to_string();
        assert!(
            matches!(&error, Error::EngineUnavailable { address: at, .. } if *at == address),
            "{error:?}"
        );
        assert!(message.contains(&address), "{message}");
        assert!(message.contains("does not answer"), "{message}");
        assert!(
            !message.contains("tonic") && !message.contains("tcp connect"),
            "{message}"
        );
    };
    said(rt.session("s").await.unwrap_err());
    said(rt.sessions().await.unwrap_err());
    said(
        rt.client("calculator")
            .unwrap()
            .run("calculate 2 + 2", session("s"))
            .await
            .unwrap_err(),
    );
    said(rt.end("s", "done").await.unwrap_err());
    // A subscriber is told so too.
    let mut events = rt.subscribe_after("s", concierge::EventId::durable(100));
    said(events.next().await.unwrap().unwrap_err());
    // A process that starts meanwhile.
    said(
        concierge_demo::install(Runtime::builder())
            .engine(Temporal::new(config.clone()))
            .build()
            .await
            .unwrap_err(),
    );
    rt.shutdown().await;
}

/// The heartbeat timeout of each `activity` scheduled in `session`'s
/// workflow (its current run), in seconds.
async fn heartbeat_timeouts(config: &TemporalConfig, session: &str, activity: &str) -> Vec<i64> {
    let client = concierge_temporal::connect(config).await.unwrap();
    let handle = WorkflowExecutionInfo::builder()
        .namespace(config.namespace.clone())
        .workflow_id(config.workflow_id(&session.into()))
        .build()
        .bind_untyped(client);
    let mut events = handle.fetch_history(WorkflowFetchHistoryOptions::default());
    let mut timeouts = Vec::new();
    while let Some(event) = events.next().await {
        if let Some(Attributes::ActivityTaskScheduledEventAttributes(scheduled)) = event.unwrap().attributes
            && scheduled.activity_type.as_ref().is_some_and(|t| t.name == activity)
        {
            timeouts.push(scheduled.heartbeat_timeout.map_or(0, |d| d.seconds));
        }
    }
    timeouts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn the_model_and_tool_heartbeat_timeouts_come_from_concierge_toml() {
    let server = DevServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("concierge.toml");
    std::fs::write(
        &path,
        format!(
            "engine = \"temporal\"\n\n[temporal]\naddress = \"{}\"\nnamespace = \"{}\"\ntask_queue_prefix = \
             \"beats\"\ntool_heartbeat_timeout_secs = 4\nmodel_heartbeat_timeout_secs = 7\n",
            server.address,
            support::NAMESPACE
        ),
    )
    .unwrap();
    let file = Config::load(&path, true).unwrap();
    let config =
        TemporalConfig::from_section(&concierge_temporal::TemporalSection::from_config_with(&file, |_| None).unwrap())
            .unwrap();
    assert_eq!(config.model_heartbeat_timeout, Duration::from_secs(7));

    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call(
            "calculator",
            r#"{"operation": "add", "a": 2, "b": 3}"#,
        ))
        .reply(ModelReply::text("2 + 3 = 5"));
    let rt = concierge_demo::install(Runtime::builder())
        .model(model)
        .engine(Temporal::new(config.clone()).workers(Workers::all()))
        .build()
        .await
        .unwrap();
    let out = rt
        .client("calculator")
        .unwrap()
        .run("what is 2 plus 3?", session("h"))
        .await
        .unwrap();
    assert_eq!(out.reply.as_deref(), Some("2 + 3 = 5"));
    assert_eq!(heartbeat_timeouts(&config, "h", "concierge.call_model").await, [7, 7]);
    assert_eq!(heartbeat_timeouts(&config, "h", "concierge.call_tool").await, [4]);
    rt.shutdown().await;
    server.stop().await;
}
