//! The Temporal engine end to end, against a real Temporal dev server on
//! loopback (ignored: run them with the dev server installed,
//! `CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh) cargo test -p concierge-temporal -- --ignored`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use concierge::model::{Model, ModelContext, ModelError, ScriptedModel};
use concierge::{
    AgentSpec, Decision, Error, Event, EventId, EventKind, ModelReply, ModelRequest, RunOptions, RunStatus, Runtime,
    StepError, ToolContext, tool,
};
use concierge_temporal::{Temporal, TemporalConfig, Workers};
use futures::StreamExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use support::DevServer;

fn session(id: &str) -> RunOptions {
    RunOptions::new().session_id(id)
}

/// The session's events from the start, as a subscriber from seq 1 gets them.
async fn events(rt: &Runtime, id: &str) -> Vec<Event> {
    let last = rt.session(id).await.unwrap().last_seq();
    rt.subscribe_after(id, EventId::default())
        .take(usize::try_from(last).unwrap())
        .map(Result::unwrap)
        .collect()
        .await
}

/// What an event says, without its times and durations.
fn shape(event: &Event) -> (u64, String) {
    let value = serde_json::to_value(event).unwrap();
    (event.seq, value["type"].as_str().unwrap_or_default().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn the_calculator_answers_as_on_the_embedded_engine() {
    let server = DevServer::start().await;

    let embedded = concierge_demo::install(Runtime::builder())
        .in_memory()
        .build()
        .await
        .unwrap();
    let expected = embedded
        .client("calculator")
        .unwrap()
        .run("calculate 5 + 3", session("s1"))
        .await
        .unwrap();

    let rt = concierge_demo::install(Runtime::builder())
        .engine(Temporal::new(server.config("calc")).workers(Workers::all()))
        .build()
        .await
        .unwrap();
    // Followed before it exists: its events arrive as they happen.
    let live = rt.subscribe_after("s1", EventId::default());
    let out = rt
        .client("calculator")
        .unwrap()
        .run("calculate 5 + 3", session("s1"))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.reply.as_deref(), Some("5 + 3 = 8"));
    assert_eq!(out.reply, expected.reply);
    assert_eq!(out.tool_executions.len(), expected.tool_executions.len());

    // A second run in the same session goes on from the first.
    let again = rt
        .client("calculator")
        .unwrap()
        .run("calculate 2 * 21", session("s1"))
        .await
        .unwrap();
    assert_eq!(again.reply.as_deref(), Some("2 * 21 = 42"));
    embedded
        .client("calculator")
        .unwrap()
        .run("calculate 2 * 21", session("s1"))
        .await
        .unwrap();

    // Subscribed from seq 1: every event of the session, in order, the same
    // as the embedded engine's.
    let got = events(&rt, "s1").await;
    let want = events(&embedded, "s1").await;
    let seqs: Vec<u64> = got.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=got.len() as u64).collect::<Vec<_>>());
    assert_eq!(
        got.iter().map(shape).collect::<Vec<_>>(),
        want.iter().map(shape).collect::<Vec<_>>()
    );
    let followed: Vec<Event> = live.take(got.len()).map(Result::unwrap).collect().await;
    assert_eq!(followed, got);
    // From the middle: only what follows.
    let tail: Vec<Event> = rt
        .subscribe_after("s1", EventId::durable(3))
        .take(got.len() - 3)
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(tail, got[3..].to_vec());

    let held = rt.session("s1").await.unwrap();
    assert_eq!(held.history(), embedded.session("s1").await.unwrap().history());
    // Listing reads Temporal's visibility store, which may lag a moment.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let listed = loop {
        let listed = rt.sessions().await.unwrap();
        if !listed.is_empty() {
            break listed;
        }
        assert!(std::time::Instant::now() < deadline, "the session is never listed");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id.as_str(), "s1");
    assert!(!listed[0].live);

    rt.end("s1", "done").await.unwrap();
    // An ended session's stream ends after its last event.
    let all: Vec<Event> = rt
        .subscribe_after("s1", EventId::default())
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(all[..got.len()], got[..]);
    assert!(
        matches!(
            all.last().map(|e| &e.kind),
            Some(concierge::EventKind::SessionEnded { .. })
        ),
        "{:?}",
        all.last()
    );
    let refused = rt
        .client("calculator")
        .unwrap()
        .run("calculate 1 + 1", session("s1"))
        .await
        .unwrap_err();
    assert!(matches!(refused, Error::Rejected(StepError::SessionEnded)), "{refused}");

    rt.shutdown().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn a_long_session_continues_as_new_and_loses_nothing() {
    let server = DevServer::start().await;
    let config = server.config("long").continue_after_events(30);
    let embedded = concierge_demo::install(Runtime::builder())
        .in_memory()
        .build()
        .await
        .unwrap();
    let rt = concierge_demo::install(Runtime::builder())
        .engine(Temporal::new(config.clone()).workers(Workers::all()))
        .build()
        .await
        .unwrap();
    for n in 1..=6 {
        let ask = format!("calculate {n} + {n}");
        let out = rt
            .client("calculator")
            .unwrap()
            .run(ask.as_str(), session("l"))
            .await
            .unwrap();
        assert_eq!(out.reply, Some(format!("{n} + {n} = {}", 2 * n)));
        embedded
            .client("calculator")
            .unwrap()
            .run(ask.as_str(), session("l"))
            .await
            .unwrap();
    }

    // The workflow went on in a new run at least once (visibility is
    // eventually consistent: asked until it shows).
    let client = concierge_temporal::connect(&config).await.unwrap();
    let id = config.workflow_id(&"l".into());
    let query = format!("WorkflowId = '{id}' AND ExecutionStatus = 'ContinuedAsNew'");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let found = client
            .list_workflows(query.clone(), temporalio_client::WorkflowListOptions::default())
            .count()
            .await;
        if found > 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the session never continued as new"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }

    // Nothing was lost: the same history and the same events as on the embedded engine.
    assert_eq!(
        rt.session("l").await.unwrap().history(),
        embedded.session("l").await.unwrap().history()
    );
    let got = events(&rt, "l").await;
    let want = events(&embedded, "l").await;
    assert_eq!(
        got.iter().map(shape).collect::<Vec<_>>(),
        want.iter().map(shape).collect::<Vec<_>>()
    );

    rt.shutdown().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn a_new_worker_replays_a_session_and_goes_on() {
    let server = DevServer::start().await;
    let embedded = concierge_demo::install(Runtime::builder())
        .in_memory()
        .build()
        .await
        .unwrap();
    let first = concierge_demo::install(Runtime::builder())
        .engine(Temporal::new(server.config("again")).workers(Workers::all()))
        .build()
        .await
        .unwrap();
    for ask in ["calculate 1 + 2", "calculate 3 * 4"] {
        first
            .client("calculator")
            .unwrap()
            .run(ask, session("r"))
            .await
            .unwrap();
        embedded
            .client("calculator")
            .unwrap()
            .run(ask, session("r"))
            .await
            .unwrap();
    }
    first.shutdown().await;
    drop(first);

    // Another program's workers have never seen the session: they rebuild
    // it from Temporal's history (a replay) before it goes on.
    let second = concierge_demo::install(Runtime::builder())
        .engine(Temporal::new(server.config("again")).workers(Workers::all()))
        .build()
        .await
        .unwrap();
    let out = second
        .client("calculator")
        .unwrap()
        .run("calculate 10 - 4", session("r"))
        .await
        .unwrap();
    assert_eq!(out.reply.as_deref(), Some("10 - 4 = 6"));
    embedded
        .client("calculator")
        .unwrap()
        .run("calculate 10 - 4", session("r"))
        .await
        .unwrap();
    assert_eq!(
        second.session("r").await.unwrap().history(),
        embedded.session("r").await.unwrap().history()
    );
    let got = events(&second, "r").await;
    let want = events(&embedded, "r").await;
    assert_eq!(
        got.iter().map(shape).collect::<Vec<_>>(),
        want.iter().map(shape).collect::<Vec<_>>()
    );

    second.shutdown().await;
    server.stop().await;
}

static PAID: AtomicUsize = AtomicUsize::new(0);

#[derive(Deserialize, JsonSchema)]
struct PayArgs {
    amount: u32,
}

/// Pays an amount (needs the person's approval).
#[tool(requires_confirmation)]
async fn pay(args: PayArgs, cx: ToolContext) -> Result<String, String> {
    PAID.fetch_add(1, Ordering::SeqCst);
    Ok(format!("paid {} with key {}", args.amount, cx.idempotency_key))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn a_confirmed_call_runs_once_and_a_denied_one_never() {
    let server = DevServer::start().await;
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("pay", r#"{"amount": 10}"#))
        .reply(ModelReply::text("Paid."))
        .reply(ModelReply::tool_call("pay", r#"{"amount": 99}"#))
        .reply(ModelReply::text("OK, I did not pay."))
        .reply(ModelReply::tool_call("pay", r#"{"amount": "a lot"}"#))
        .reply(ModelReply::tool_call("pay", r#"{"amount": 5}"#));
    let rt = Runtime::builder()
        .tool(Pay)
        .agent(AgentSpec::new("payer").instructions("Pay.").tool("pay"))
        .model(model.clone())
        .engine(Temporal::new(server.config("pay")).workers(Workers::all()))
        .build()
        .await
        .unwrap();

    let parked = rt.client("payer").unwrap().run("pay 10", session("a")).await.unwrap();
    assert_eq!(parked.status, RunStatus::AwaitingConfirmation);
    let pending = parked.pending_confirmation.unwrap();
    assert_eq!(PAID.load(Ordering::SeqCst), 0, "nothing runs before the answer");
    // While parked, the run waits for the person: `wait` says so at once.
    let waiting = rt.wait("a").await.unwrap().unwrap();
    assert_eq!(waiting.status, RunStatus::AwaitingConfirmation);
    // A wrong fingerprint is refused and changes nothing.
    let wrong = rt
        .confirm("a", pending.call_id.clone(), "ffffffffffffffff", Decision::Approve)
        .await
        .unwrap_err();
    assert!(
        matches!(wrong, Error::Rejected(StepError::ConfirmationMismatch { .. })),
        "{wrong}"
    );
    let out = rt.answer(&pending, "a", true).await.unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.reply.as_deref(), Some("Paid."));
    assert_eq!(PAID.load(Ordering::SeqCst), 1, "the approved call ran once");

    let parked = rt.client("payer").unwrap().run("pay 99", session("b")).await.unwrap();
    let pending = parked.pending_confirmation.unwrap();
    let out = rt
        .confirm(
            "b",
            pending.call_id,
            pending.fingerprint,
            Decision::Deny {
                reason: Some("too much".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(out.reply.as_deref(), Some("OK, I did not pay."));
    assert_eq!(PAID.load(Ordering::SeqCst), 1, "the denied call never ran");
    let seen = model.requests()[3].messages.last().unwrap().text();
    assert!(seen.contains("declined") && seen.contains("too much"), "{seen}");

    // A call whose arguments would fail validation is never put to the
    // person: the model sees why and corrects it; only the valid call asks.
    let parked = rt.client("payer").unwrap().run("pay", session("c")).await.unwrap();
    assert_eq!(parked.status, RunStatus::AwaitingConfirmation);
    let pending = parked.pending_confirmation.unwrap();
    assert_eq!(pending.arguments, serde_json::json!({"amount": 5}));
    assert_eq!(
        model.requests().len(),
        6,
        "the model was asked again after the invalid call"
    );
    assert_eq!(PAID.load(Ordering::SeqCst), 1);

    rt.shutdown().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn an_input_no_worker_takes_fails_naming_the_queue() {
    let server = DevServer::start().await;
    let config = server.config("idle").input_timeout(std::time::Duration::from_secs(1));
    let rt = concierge_demo::install(Runtime::builder())
        .engine(Temporal::new(config))
        .build()
        .await
        .unwrap();
    let error = rt
        .client("calculator")
        .unwrap()
        .run("calculate 1 + 1", session("w"))
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(message.contains("no concierge worker"), "{message}");
    assert!(message.contains("idle-sessions"), "{message}");
    server.stop().await;
}

#[tokio::test]
async fn an_unreachable_server_is_an_error_naming_its_address() {
    let address = format!("127.0.0.1:{}", support::free_port());
    let error = concierge_demo::install(Runtime::builder())
        .engine(Temporal::new(TemporalConfig::new(address.clone())))
        .build()
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(message.contains(&address), "{message}");
    assert!(message.contains("cannot be reached"), "{message}");
}

/// Streams "Hel", then holds the rest of its reply until `go` is notified.
struct Held {
    go: Arc<tokio::sync::Notify>,
}

impl Model for Held {
    fn name(&self) -> String {
        "scripted:held".into()
    }

    fn complete<'a>(
        &'a self,
        _request: &'a ModelRequest,
        cx: &'a ModelContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        Box::pin(async move {
            let go = self.go.notified();
            if let Some(sink) = &cx.on_delta {
                sink("Hel");
            }
            go.await;
            if let Some(sink) = &cx.on_delta {
                sink("lo");
            }
            Ok(ModelReply::text("Hello"))
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn a_models_deltas_reach_a_subscriber_in_its_process_while_the_call_runs() {
    let server = DevServer::start().await;
    let go = Arc::new(tokio::sync::Notify::new());
    let rt = Runtime::builder()
        .agent(AgentSpec::new("greeter").instructions("Greet."))
        .model(Held { go: go.clone() })
        .engine(Temporal::new(server.config("live")).workers(Workers::all()))
        .build()
        .await
        .unwrap();
    let mut live = rt.subscribe("s", 1);
    let client = rt.client("greeter").unwrap();
    let run = tokio::spawn(async move { client.run("hi", session("s")).await });

    // The first piece arrives while the model call still runs, right after
    // the model's request; the rest once it goes on.
    let mut seen = Vec::new();
    let first_piece = async {
        while let Some(event) = live.next().await {
            let event = event.unwrap();
            let delta = matches!(event.kind, EventKind::ModelDelta { .. });
            seen.push(shape(&event));
            if delta {
                break;
            }
        }
    };
    // (The model holds its reply until the piece is seen: without it, this
    // would wait forever.)
    tokio::time::timeout(std::time::Duration::from_secs(30), first_piece)
        .await
        .expect("no delta reached the subscriber while the model call ran");
    let types: Vec<&str> = seen.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(types.last(), Some(&"model_delta"), "{seen:?}");
    assert_eq!(types[types.len() - 2], "model_requested", "{seen:?}");
    assert!(!run.is_finished());
    go.notify_one();
    let mut rest = Vec::new();
    while let Some(event) = live.next().await {
        let event = event.unwrap();
        let finished = matches!(event.kind, EventKind::RunFinished { .. });
        rest.push(shape(&event).1);
        if finished {
            break;
        }
    }
    assert_eq!(rest.first().map(String::as_str), Some("model_delta"), "{rest:?}");
    let out = run.await.unwrap().unwrap();
    assert_eq!(out.reply.as_deref(), Some("Hello"));

    rt.shutdown().await;
    server.stop().await;
}
