//! What a session's workflow shows and costs on Temporal: its search
//! attributes and memo, a caller's per-run workflow options, what a turn
//! adds to its history, and Temporal's payload limit, against a real
//! Temporal dev server on loopback (ignored: run them with the dev server
//! installed, `CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh) cargo test
//! -p concierge-temporal --test options -- --ignored`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod support;
#[path = "support/workflows.rs"]
mod workflows;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use concierge::model::ScriptedModel;
use concierge::{AgentSpec, ModelReply, RunOptions, RunStatus, Runtime, ToolContext, tool};
use concierge_temporal::{AGENT, SearchAttributeKey, TENANT, Temporal, TemporalConfig, Workers, WorkflowOptions};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use support::DevServer;
use workflows::{describe, listed};

fn session(id: &str) -> RunOptions {
    RunOptions::new().session_id(id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn a_tenants_sessions_are_found_by_their_search_attributes_and_a_handoff_updates_the_agent() {
    let server = DevServer::start().await;
    // Short runs: the session continues as new on the way.
    let config = server.config("find").continue_after_events(40);
    let rt = concierge_demo::install(Runtime::builder())
        .engine(Temporal::new(config.clone()).workers(Workers::all()))
        .build()
        .await
        .unwrap();
    // Named no agent: the session starts at the hub, which hands it to the calculator.
    let out = rt
        .send(
            "calculate 5 + 3",
            session("acme-1").tenant("acme").label("channel", "web"),
        )
        .await
        .unwrap();
    assert_eq!(out.agent, "calculator");
    for ask in ["calculate 6 * 7", "calculate 9 - 4", "calculate 8 / 2"] {
        rt.send(ask, session("acme-1").tenant("acme")).await.unwrap();
    }
    rt.send("calculate 1 + 1", session("globex-1").tenant("globex"))
        .await
        .unwrap();
    rt.client("calculator")
        .unwrap()
        .run("calculate 2 + 2", session("nobody-1"))
        .await
        .unwrap();

    let client = concierge_temporal::connect(&config).await.unwrap();
    let acme = config.workflow_id(&"acme-1".into());
    let ids = listed(&client, "ConciergeTenant = 'acme' AND ExecutionStatus = 'Running'", 1).await;
    assert_eq!(ids, std::slice::from_ref(&acme));
    let ids = listed(
        &client,
        "ConciergeAgent = 'calculator' AND ExecutionStatus = 'Running'",
        3,
    )
    .await;
    assert_eq!(ids.len(), 3, "{ids:?}");
    // Its earlier runs, continued as new, carry the same attributes.
    let ids = listed(
        &client,
        "ConciergeTenant = 'acme' AND ExecutionStatus = 'ContinuedAsNew'",
        1,
    )
    .await;
    assert!(ids.iter().all(|id| *id == acme), "{ids:?}");

    let described = describe(&client, &config, "acme-1").await;
    let attributes = described.search_attributes();
    assert_eq!(attributes.get(&TENANT).as_deref(), Some("acme"));
    assert_eq!(
        attributes.get(&AGENT).as_deref(),
        Some("calculator"),
        "upserted after the handoff"
    );
    let memo = described.memo();
    assert_eq!(memo.get::<String>("agent").unwrap().as_deref(), Some("calculator"));
    assert_eq!(memo.get::<String>("tenant").unwrap().as_deref(), Some("acme"));
    assert_eq!(
        memo.get::<Value>("labels").unwrap(),
        Some(serde_json::json!({"channel": "web"}))
    );
    // A session without a tenant has no tenant attribute.
    let described = describe(&client, &config, "nobody-1").await;
    assert_eq!(described.search_attributes().get(&TENANT), None);
    assert_eq!(described.search_attributes().get(&AGENT).as_deref(), Some("calculator"));

    rt.shutdown().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn a_namespace_without_the_search_attributes_is_refused_at_start_naming_them() {
    let server = DevServer::start_with(&["ConciergeTenant"]).await;
    let config = server.config("bare");
    let error = concierge_demo::install(Runtime::builder())
        .engine(Temporal::new(config.clone()).workers(Workers::all()))
        .build()
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("no Keyword search attribute ConciergeAgent"), "{error}");
    assert!(!error.contains("ConciergeTenant"), "{error}");
    assert!(
        error.contains(&format!(
            "temporal operator search-attribute create --namespace concierge --address {} --name ConciergeAgent \
             --type Keyword",
            server.address
        )),
        "{error}"
    );

    // Turned off, the engine starts and its sessions carry none.
    let config = config.search_attributes(false);
    let rt = concierge_demo::install(Runtime::builder())
        .engine(Temporal::new(config.clone()).workers(Workers::all()))
        .build()
        .await
        .unwrap();
    let out = rt
        .client("calculator")
        .unwrap()
        .run("calculate 5 + 3", session("s").tenant("acme"))
        .await
        .unwrap();
    assert_eq!(out.reply.as_deref(), Some("5 + 3 = 8"));
    let client = concierge_temporal::connect(&config).await.unwrap();
    let described = describe(&client, &config, "s").await;
    assert_eq!(described.search_attributes().get(&TENANT), None);
    assert_eq!(described.search_attributes().get(&AGENT), None);
    assert_eq!(
        described.memo().get::<String>("tenant").unwrap().as_deref(),
        Some("acme")
    );

    rt.shutdown().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn a_callers_workflow_options_apply_last_to_the_run_or_the_opening_that_creates_the_session() {
    let server = DevServer::start().await;
    let config = server.config("vip");
    let rt = concierge_demo::install(Runtime::builder())
        .engine(Temporal::new(config.clone()).workers(Workers::all().sessions_on("vip-dedicated")))
        .build()
        .await
        .unwrap();
    let options = WorkflowOptions::new()
        .task_queue("vip-dedicated")
        .memo("ticket", "T-42")
        .memo("agent", "overridden")
        .search_attribute(TENANT.value_set("acme-eu".into()))
        .search_attribute(SearchAttributeKey::<String>::keyword("ConciergeAgent").value_set("vip-desk".into()));
    let out = rt
        .client("calculator")
        .unwrap()
        .run(
            "calculate 5 + 3",
            session("v").tenant("acme").engine_option(options.clone()),
        )
        .await
        .unwrap();
    assert_eq!(out.reply.as_deref(), Some("5 + 3 = 8"));
    // The session goes on in its workflow; a later run's options change nothing.
    let out = rt
        .client("calculator")
        .unwrap()
        .run(
            "calculate 2 * 21",
            session("v")
                .tenant("acme")
                .engine_option(WorkflowOptions::new().memo("ticket", "T-99")),
        )
        .await
        .unwrap();
    assert_eq!(out.reply.as_deref(), Some("2 * 21 = 42"));

    let client = concierge_temporal::connect(&config).await.unwrap();
    let described = describe(&client, &config, "v").await;
    assert_eq!(described.task_queue(), "vip-dedicated");
    let memo = described.memo();
    assert_eq!(memo.get::<String>("ticket").unwrap().as_deref(), Some("T-42"));
    assert_eq!(memo.get::<String>("agent").unwrap().as_deref(), Some("overridden"));
    assert_eq!(memo.get::<String>("tenant").unwrap().as_deref(), Some("acme"));
    let attributes = described.search_attributes();
    assert_eq!(
        attributes.get(&TENANT).as_deref(),
        Some("acme-eu"),
        "the caller's value wins"
    );
    assert_eq!(
        attributes.get(&AGENT).as_deref(),
        Some("vip-desk"),
        "kept: no handoff changed the agent"
    );
    // Listed with the others, though on its own queue.
    let deadline = Instant::now() + Duration::from_secs(30);
    while rt.sessions().await.unwrap().is_empty() {
        assert!(Instant::now() < deadline, "the session is never listed");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(rt.sessions().await.unwrap()[0].id.as_str(), "v");

    // A session opened before its first message is created with them too.
    let opened = WorkflowOptions::new().task_queue("vip-dedicated").memo("ticket", "T-7");
    rt.open(
        Some("calculator".into()),
        session("o").tenant("acme").engine_option(opened),
    )
    .await
    .unwrap();
    let described = describe(&client, &config, "o").await;
    assert_eq!(described.task_queue(), "vip-dedicated");
    assert_eq!(
        described.memo().get::<String>("ticket").unwrap().as_deref(),
        Some("T-7")
    );
    let out = rt.send("calculate 6 * 7", session("o").tenant("acme")).await.unwrap();
    assert_eq!(out.reply.as_deref(), Some("6 * 7 = 42"));

    rt.shutdown().await;
    server.stop().await;
}

/// The calculator on a scripted model: per turn, one tool call and an answer.
fn calculator_model(turns: usize) -> ScriptedModel {
    let mut model = ScriptedModel::new();
    for n in 1..=turns {
        model = model
            .reply(ModelReply::tool_call(
                "calculator",
                format!(r#"{{"operation": "add", "a": {n}, "b": {n}}}"#),
            ))
            .reply(ModelReply::text(format!("{n} + {n} = {}", 2 * n)));
    }
    model
}

/// Runs `turns` turns of the calculator in one session; per turn, the
/// events and bytes it added to the workflow's history.
async fn history_per_turn(config: TemporalConfig, turns: usize) -> (Vec<(u64, u64)>, ScriptedModel) {
    let model = calculator_model(turns);
    let rt = concierge_demo::install(Runtime::builder())
        .model(model.clone())
        .engine(Temporal::new(config.clone()).workers(Workers::all()))
        .build()
        .await
        .unwrap();
    let client = concierge_temporal::connect(&config).await.unwrap();
    let mut added = Vec::new();
    let mut before = (0, 0);
    for n in 1..=turns {
        // The same length every turn, so that every turn adds the same.
        let ask = format!("calculate {n} + {n}; a question of the same length every turn");
        let out = rt
            .client("calculator")
            .unwrap()
            .run(ask.as_str(), session("h"))
            .await
            .unwrap();
        assert_eq!(out.status, RunStatus::Completed);
        let described = describe(&client, &config, "h").await;
        let info = described.raw_description.workflow_execution_info.as_ref().unwrap();
        let now = (
            u64::try_from(info.history_length).unwrap(),
            u64::try_from(info.history_size_bytes).unwrap(),
        );
        added.push((now.0 - before.0, now.1 - before.1));
        before = now;
    }
    rt.shutdown().await;
    (added, model)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn a_turn_adds_what_it_brings_to_the_history_not_the_whole_conversation() {
    let server = DevServer::start().await;
    let turns = 8;
    // Every model request fetched by the activity (the default fetches those over 8 kB).
    let (by_reference, fetched) = history_per_turn(server.config("ref").inline_request_bytes(0), turns).await;
    // Every model request in the activity's input (the first slice's way).
    let (inline, sent) = history_per_turn(server.config("inline").inline_request_bytes(usize::MAX), turns).await;
    eprintln!("history added per turn (events, bytes), requests by reference: {by_reference:?}");
    eprintln!("history added per turn (events, bytes), requests inline:       {inline:?}");

    // The model saw the same conversation either way.
    let requests = |model: &ScriptedModel| -> Vec<Vec<String>> {
        model
            .requests()
            .iter()
            .map(|r| r.messages.iter().map(|m| m.text()).collect())
            .collect()
    };
    assert_eq!(requests(&fetched), requests(&sent));
    assert_eq!(fetched.requests().len(), 2 * turns);
    let last = fetched.requests()[2 * turns - 1].messages.len();
    assert!(
        last >= 3 * turns,
        "the last request has the whole conversation: {last} messages"
    );

    // Every turn adds the same events; by reference, about the same bytes
    // (ids and numbers grow a digit), while inline each turn adds more than
    // the one before (the conversation, twice per turn).
    for (events, _) in by_reference[1..].iter().chain(&inline[1..]) {
        assert_eq!(*events, by_reference[1].0);
    }
    let least = by_reference[1..].iter().map(|(_, bytes)| *bytes).min().unwrap();
    let most = by_reference[1..].iter().map(|(_, bytes)| *bytes).max().unwrap();
    assert!(most - least < 200, "{by_reference:?}");
    for pair in inline[1..].windows(2) {
        assert!(pair[1].1 > pair[0].1 + 200, "{inline:?}");
    }

    // A turn run to its stop is one update: it answers at the stop.
    let cost = concierge_temporal::history_cost(&server.config("ref"), &["h".into()], true)
        .await
        .unwrap();
    assert_eq!(
        cost.by_type.get("WORKFLOW_EXECUTION_UPDATE_ACCEPTED").copied(),
        Some(u64::try_from(turns).unwrap()),
        "{:?}",
        cost.by_type
    );

    server.stop().await;
}

static REPORTS: AtomicUsize = AtomicUsize::new(0);

#[derive(Deserialize, JsonSchema)]
struct ReportArgs {
    /// How many kilobytes.
    kilobytes: usize,
    /// A note to put first.
    #[serde(default)]
    note: String,
}

/// Writes a report of that many kilobytes.
#[tool(read_only)]
async fn report(args: ReportArgs, _cx: ToolContext) -> Result<String, String> {
    REPORTS.fetch_add(1, Ordering::SeqCst);
    Ok(format!("{}{}", args.note, "x".repeat(args.kilobytes * 1_000)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn a_payload_over_the_limit_fails_fast_naming_the_tool_or_the_model() {
    let server = DevServer::start().await;
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("report", r#"{"kilobytes": 30}"#))
        .reply(ModelReply::text("The report is too long to fetch."))
        .reply(ModelReply::text("y".repeat(30_000)))
        .reply(ModelReply::tool_call(
            "report",
            format!(r#"{{"kilobytes": 1, "note": "{}"}}"#, "z".repeat(9_000)),
        ));
    let rt = Runtime::builder()
        .tool(Report)
        .agent(AgentSpec::new("writer").instructions("Write reports.").tool("report"))
        .model(model.clone())
        .engine(Temporal::new(server.config("big").max_payload_bytes(20_000)).workers(Workers::all()))
        .build()
        .await
        .unwrap();

    // The tool's result is over the limit: the model reads why, as the tool's error.
    let out = rt
        .client("writer")
        .unwrap()
        .run("a report", session("t"))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.reply.as_deref(), Some("The report is too long to fetch."));
    let seen = model.requests()[1].messages.last().unwrap().text();
    assert!(
        seen.contains("the result of tool `report` is 30.")
            && seen.contains("over the 20.0 kB Temporal allows per payload"),
        "{seen}"
    );

    // The model's reply is over the limit: the run fails as a model failure,
    // and the session goes on.
    let out = rt.client("writer").unwrap().run("again", session("t")).await.unwrap();
    assert_eq!(out.status, RunStatus::Failed);
    let error = out.error.unwrap_or_default();
    assert!(error.contains("the reply of model"), "{error}");
    assert!(
        error.contains("over the 20.0 kB Temporal allows per payload"),
        "{error}"
    );
    assert!(rt.session("t").await.unwrap().active_run().is_none());
    assert_eq!(REPORTS.load(Ordering::SeqCst), 1);

    // A call's input (its arguments and the blackboard, 12 kB here) is
    // over the limit: the tool never runs and the call fails, saying why;
    // the model's next request (the conversation and the blackboard) is
    // over it too, and the run fails before it is sent.
    let asked = model.requests().len();
    let out = rt
        .client("writer")
        .unwrap()
        .run("a report", session("u").context("notes", "n".repeat(12_000)))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Failed);
    let concierge::ToolOutcome::Error(error) = &out.tool_executions[0].outcome else {
        panic!("{:?}", out.tool_executions[0].outcome);
    };
    assert!(
        error
            .message
            .starts_with("the input of tool `report` (its arguments and the blackboard) is 21.")
            && error.message.contains("over the 20.0 kB Temporal allows per payload"),
        "{}",
        error.message
    );
    let error = out.error.unwrap_or_default();
    assert!(
        error.contains("the request to the model of agent writer is 21."),
        "{error}"
    );
    assert!(error.contains("[history] policy"), "{error}");
    assert_eq!(model.requests().len(), asked + 1, "the second request was never sent");
    assert_eq!(REPORTS.load(Ordering::SeqCst), 1, "the tool never ran");

    rt.shutdown().await;
    server.stop().await;
}
