//! The runtime API end to end, on any engine: a scripted model stands in
//! for a provider; the engine is real (the root that includes this file
//! says which: `tests/runtime.rs` the embedded one, concierge-temporal's
//! `tests/runtime_suites.rs` Temporal).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use concierge::model::{ModelError, ModelErrorKind, RetryPolicy, ScriptedModel};
use concierge::{
    AgentSpec, Cap, Decision, Error, EventKind, Intents, Message, Mode, ModelReply, PolicyDelta, Route, RouteSource,
    Rules, RunOptions, RunStatus, Runtime, StepError, ToolContext, ToolErrorKind, ToolOutcome, tool,
};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::Notify;

use super::{EngineUnderTest, OnEngine};

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// Adds two integers.
#[tool(read_only)]
async fn add(args: AddArgs) -> Result<i64, String> {
    Ok(args.a + args.b)
}

#[derive(Deserialize, JsonSchema)]
struct Empty {}

/// Always panics.
#[tool]
async fn explode(_args: Empty) -> Result<(), String> {
    panic!("kaboom")
}

#[derive(Deserialize, JsonSchema)]
struct PayArgs {
    amount: u32,
}

/// Pays an amount (needs the person's approval).
#[tool(requires_confirmation)]
async fn pay(args: PayArgs, cx: ToolContext) -> Result<String, String> {
    Ok(format!("paid {} with key {}", args.amount, cx.idempotency_key))
}

static GATE: std::sync::LazyLock<Arc<Notify>> = std::sync::LazyLock::new(|| Arc::new(Notify::new()));

/// Waits until the test lets it go.
#[tool]
async fn wait_for_gate(_args: Empty) -> Result<&'static str, String> {
    GATE.notified().await;
    Ok("released")
}

fn agent() -> AgentSpec {
    AgentSpec::new("helper")
        .instructions("Help.")
        .tool("add")
        .tool("explode")
        .tool("pay")
        .tool("wait_for_gate")
}

async fn runtime(engine: &EngineUnderTest, model: ScriptedModel) -> Runtime {
    Runtime::builder()
        .tool(Add)
        .tool(Explode)
        .tool(Pay)
        .tool(WaitForGate)
        .agent(agent())
        .model(model)
        .on_engine(engine)
        .build()
        .await
        .unwrap()
}

fn session(id: &str) -> RunOptions {
    RunOptions::new().session_id(id)
}

pub async fn arguments_are_coerced_and_a_schema_error_is_corrected_by_the_model(engine: &EngineUnderTest) {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("add", r#"{"a": "a couple", "b": 3}"#))
        .reply(ModelReply::tool_call("add", r#"{"a": "2", "b": 3}"#))
        .reply(ModelReply::text("5"));
    let rt = runtime(engine, model.clone()).await;
    let out = rt.client("helper").unwrap().run("2+3", session("s")).await.unwrap();
    assert_eq!(out.reply.as_deref(), Some("5"));
    assert_eq!(out.tool_executions.len(), 2);
    let ToolOutcome::Error(error) = &out.tool_executions[0].outcome else {
        panic!("the first call must fail validation")
    };
    assert_eq!(error.kind, ToolErrorKind::InvalidArguments);
    assert_eq!(error.fields[0].field, "a");
    assert_eq!(out.tool_executions[1].outcome, ToolOutcome::Ok(json!(5)));
    // The model saw the structured error before correcting itself.
    let second = &model.requests()[1];
    let seen = second.messages.last().unwrap().text();
    assert!(
        seen.contains("invalid_arguments") && seen.contains("\"field\":\"a\""),
        "{seen}"
    );
}

pub async fn a_panicking_tool_is_a_tool_error_and_the_run_goes_on(engine: &EngineUnderTest) {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("explode", "{}"))
        .reply(ModelReply::text("that tool is broken"));
    let rt = runtime(engine, model).await;
    let out = rt.client("helper").unwrap().run("boom", session("s")).await.unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    let ToolOutcome::Error(error) = &out.tool_executions[0].outcome else {
        panic!("expected an error")
    };
    assert_eq!(error.kind, ToolErrorKind::Panicked);
    assert!(error.message.contains("kaboom"), "{}", error.message);
}

pub async fn confirmation_parks_the_run_and_only_the_exact_call_is_approved(engine: &EngineUnderTest) {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("pay", r#"{"amount": "10"}"#))
        // The model reads "hello" (the rules cannot) and finds no answer in it.
        .reply(ModelReply::tool_call(
            "answer_confirmation",
            r#"{"decision": "unclear"}"#,
        ))
        .reply(ModelReply::text("Paid."));
    let rt = runtime(engine, model).await;
    let parked = rt.client("helper").unwrap().run("pay 10", session("s")).await.unwrap();
    assert_eq!(parked.status, RunStatus::AwaitingConfirmation);
    let pending = parked.pending_confirmation.clone().unwrap();
    assert_eq!(pending.tool, "pay");
    assert_eq!(pending.arguments, json!({"amount": "10"}));
    // Waiting on a parked session returns at once.
    assert_eq!(
        rt.wait("s").await.unwrap().unwrap().status,
        RunStatus::AwaitingConfirmation
    );
    // A message that does not answer leaves the call parked, with a reminder.
    let reminded = rt.send("hello", session("s")).await.unwrap();
    assert_eq!(reminded.status, RunStatus::AwaitingConfirmation);
    assert_eq!(reminded.run_id, parked.run_id, "no new run");
    assert!(reminded.reply.unwrap().contains("yes or no"));
    assert_eq!(
        reminded.pending_confirmation.unwrap().message,
        "Run *pay* with Amount: 10? (yes/no)"
    );
    // A wrong fingerprint is refused and changes nothing.
    let wrong = rt
        .confirm("s", pending.call_id.clone(), "ffffffffffffffff", Decision::Approve)
        .await
        .unwrap_err();
    assert!(
        matches!(wrong, Error::Rejected(StepError::ConfirmationMismatch { .. })),
        "{wrong}"
    );
    let out = rt.answer(&pending, "s", true).await.unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.reply.as_deref(), Some("Paid."));
    let ToolOutcome::Ok(paid) = &out.tool_executions[0].outcome else {
        panic!("the call ran")
    };
    assert_eq!(
        paid,
        &json!(format!("paid 10 with key s/{}/{}", out.run_id, pending.call_id))
    );
}

pub async fn a_declined_call_is_reported_to_the_model(engine: &EngineUnderTest) {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("pay", r#"{"amount": 99}"#))
        .reply(ModelReply::text("OK, I did not pay."));
    let rt = runtime(engine, model.clone()).await;
    let parked = rt.client("helper").unwrap().run("pay 99", session("s")).await.unwrap();
    let pending = parked.pending_confirmation.unwrap();
    let out = rt
        .confirm(
            "s",
            pending.call_id,
            pending.fingerprint,
            Decision::Deny {
                reason: Some("too much".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(out.reply.as_deref(), Some("OK, I did not pay."));
    let seen = model.requests()[1].messages.last().unwrap().text();
    assert!(seen.contains("declined") && seen.contains("too much"), "{seen}");
}

/// A call that would fail validation is never put to the person: it fails
/// at once, the model sees why and corrects it, and only the valid call asks.
pub async fn arguments_are_validated_before_the_person_is_asked(engine: &EngineUnderTest) {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("pay", r#"{"amount": "a lot"}"#))
        .reply(ModelReply::tool_call("pay", r#"{"amount": 5}"#))
        .reply(ModelReply::text("Paid."));
    let rt = runtime(engine, model.clone()).await;
    let parked = rt.client("helper").unwrap().run("pay", session("v")).await.unwrap();
    assert_eq!(parked.status, RunStatus::AwaitingConfirmation);
    let pending = parked.pending_confirmation.unwrap();
    assert_eq!(
        pending.arguments,
        serde_json::json!({"amount": 5}),
        "only the valid call asks"
    );
    let refused = &parked.tool_executions[0];
    assert!(
        matches!(&refused.outcome, ToolOutcome::Error(e) if e.kind == ToolErrorKind::InvalidArguments),
        "{refused:?}"
    );
    let seen = model.requests()[1].messages.last().unwrap().text();
    assert!(seen.contains("amount"), "the model is told which field: {seen}");
    let out = rt.answer(&pending, "v", true).await.unwrap();
    assert_eq!(out.reply.as_deref(), Some("Paid."));
}

/// Over-size results and messages fail fast, naming the tool or the limit.
pub async fn results_and_messages_over_their_limits_fail_fast_and_say_so(engine: &EngineUnderTest) {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("pay", r#"{"amount": 7}"#))
        .reply(ModelReply::text("Too big."));
    let rt = Runtime::builder()
        .tool(Pay)
        .agent(AgentSpec::new("payer").tool("pay"))
        .model(model)
        .max_tool_result_bytes(16)
        .max_message_bytes(64)
        .on_engine(engine)
        .build()
        .await
        .unwrap();
    let parked = rt.client("payer").unwrap().run("pay 7", session("big")).await.unwrap();
    let out = rt
        .answer(&parked.pending_confirmation.unwrap(), "big", true)
        .await
        .unwrap();
    let ToolOutcome::Error(error) = &out.tool_executions[0].outcome else {
        panic!("the result fit: {out:?}");
    };
    assert!(
        error.message.contains("pay") && error.message.contains("limit of 16 bytes"),
        "{error:?}"
    );

    let long = "x".repeat(65);
    let refused = rt.client("payer").unwrap().run(long, session("big")).await.unwrap_err();
    assert!(refused.to_string().contains("limit of 64 bytes"), "{refused}");
    assert_eq!(
        rt.history("big").await.unwrap().len(),
        4,
        "nothing of the refused message was kept"
    );
}

pub async fn events_are_ordered_and_a_subscriber_resumes_from_any_seq(engine: &EngineUnderTest) {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("add", r#"{"a": 1, "b": 2}"#).with_usage(10, 2))
        .reply(ModelReply::text("3").with_usage(12, 1));
    let rt = runtime(engine, model).await;
    let handle = rt.client("helper").unwrap().start("1+2", session("s")).await.unwrap();
    let events: Vec<_> = handle.events().map(|e| e.unwrap()).collect().await;
    let out = handle.wait().await.unwrap();
    assert_eq!(out.usage.input_tokens, 22);
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.name()).collect();
    assert_eq!(kinds.first(), Some(&"run_started"));
    assert_eq!(kinds.last(), Some(&"run_finished"));
    for expected in [
        "tool_requested",
        "tool_finished",
        "usage",
        "phase_changed",
        "message",
        "model_requested",
    ] {
        assert!(kinds.contains(&expected), "missing {expected} in {kinds:?}");
    }
    let finished = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolFinished { duration_ms, ok, .. } => Some((*ok, *duration_ms)),
            _ => None,
        })
        .unwrap();
    assert!(finished.0);
    // Resume from the middle: exactly the rest.
    let middle = seqs[seqs.len() / 2];
    let rest: Vec<u64> = rt
        .subscribe("s", middle)
        .take(seqs.len() - (middle as usize - 1))
        .map(|e| e.unwrap().seq)
        .collect()
        .await;
    assert_eq!(rest, (middle..=seqs.len() as u64).collect::<Vec<_>>());
}

/// A new runtime on the same store (a new process on the same database, or
/// new workers on the same Temporal queues) replays the events as emitted.
pub async fn events_replayed_from_the_database_are_the_events_that_were_emitted(engine: &EngineUnderTest) {
    let script = || {
        ScriptedModel::from_fn(|request| {
            let results = request
                .messages
                .iter()
                .filter(|m| matches!(m, Message::Tool { .. }))
                .count();
            let users = request
                .messages
                .iter()
                .filter(|m| matches!(m, Message::User { .. }))
                .count();
            Ok(if results < users {
                ModelReply::tool_call("add", r#"{"a": 2, "b": "3"}"#).with_usage(10, 2)
            } else {
                ModelReply::text("5").with_usage(12, 1)
            })
        })
    };
    let build = |model| {
        Runtime::builder()
            .tool(Add)
            .agent(AgentSpec::new("helper").instructions("Add.").tool("add"))
            .model(model)
            .on_engine_store(engine, "events")
            .snapshot_after_bytes(1)
    };
    let live: Vec<concierge::Event> = {
        let rt = build(script()).build().await.unwrap();
        let mut stream = rt.subscribe("s", 1);
        for i in 0..3 {
            rt.client("helper")
                .unwrap()
                .run(format!("turn {i}"), session("s"))
                .await
                .unwrap();
        }
        let last = rt.session("s").await.unwrap().last_seq();
        let mut seen = Vec::new();
        while let Some(event) = stream.next().await {
            let event = event.unwrap();
            let done = event.seq == last;
            seen.push(event);
            if done {
                break;
            }
        }
        seen
    };
    assert!(live.len() > 40);
    let rt = build(script()).build().await.unwrap();
    let replayed: Vec<concierge::Event> = rt
        .subscribe("s", 1)
        .take(live.len())
        .map(|e| e.unwrap())
        .collect()
        .await;
    assert_eq!(replayed, live, "replay gives back exactly the events that were emitted");
    // From the middle (older than the snapshot) and from the last turn (after it).
    for from in [5, live.len() as u64 - 3] {
        let tail: Vec<concierge::Event> = rt
            .subscribe("s", from)
            .take(live.len() - from as usize + 1)
            .map(|e| e.unwrap())
            .collect()
            .await;
        assert_eq!(tail, live[from as usize - 1..].to_vec());
    }
}

pub async fn a_live_subscriber_sees_a_later_run(engine: &EngineUnderTest) {
    let model = ScriptedModel::new().reply(ModelReply::text("hi"));
    let rt = runtime(engine, model).await;
    let mut live = rt.subscribe("s", 1);
    let out = rt.client("helper").unwrap().run("hello", session("s")).await.unwrap();
    let mut last = None;
    while let Some(event) = live.next().await {
        let event = event.unwrap();
        if let EventKind::RunFinished { reply, .. } = &event.kind {
            last = reply.clone();
            break;
        }
    }
    assert_eq!(last, out.reply);
}

pub async fn typed_errors_for_bad_calls(engine: &EngineUnderTest) {
    let rt = runtime(engine, ScriptedModel::new()).await;
    let missing = rt
        .client("helper")
        .unwrap()
        .run("x", RunOptions::new())
        .await
        .unwrap_err();
    assert!(matches!(missing, Error::MissingSessionId));
    let ghost = rt.client("ghost").unwrap_err();
    assert!(matches!(ghost, Error::AgentNotFound { .. }));
    assert!(ghost.to_string().contains("helper"));
    assert!(matches!(rt.session("nope").await, Err(Error::SessionNotFound(_))));
    // With no default agent (single mode, two agents, none chosen), a new
    // session that names no agent does not exist.
    let two = Runtime::builder()
        .agent(AgentSpec::new("a"))
        .agent(AgentSpec::new("b"))
        .mode(Mode::Single)
        .on_engine(engine)
        .build()
        .await
        .unwrap();
    assert!(matches!(
        two.send("x", session("nope")).await,
        Err(Error::SessionNotFound(_))
    ));
    let bad_catalog = Runtime::builder()
        .agent(AgentSpec::new("a").tool("nope"))
        .on_engine(engine)
        .build()
        .await
        .unwrap_err();
    assert!(matches!(bad_catalog, Error::Catalog(_)));
    let no_model = Runtime::builder()
        .agent(AgentSpec::new("a").model("openai:x"))
        .on_engine(engine)
        .build()
        .await
        .unwrap_err();
    assert!(matches!(no_model, Error::InvalidConfig(_)));
}

pub async fn an_agent_without_model_or_rules_is_refused_with_what_to_do(engine: &EngineUnderTest) {
    let rt = Runtime::builder()
        .agent(AgentSpec::new("a"))
        .on_engine(engine)
        .build()
        .await
        .unwrap();
    let error = rt.client("a").unwrap().run("x", session("s")).await.unwrap_err();
    assert!(matches!(error, Error::Rejected(StepError::NoPlanner { .. })));
    assert!(error.to_string().contains("--model"), "{error}");
}

pub async fn policy_overrides_apply_to_new_runs(engine: &EngineUnderTest) {
    let model = ScriptedModel::from_fn(|request| {
        Ok(if request.tool_choice == concierge::core::ToolChoice::None {
            ModelReply::text("stopped")
        } else {
            ModelReply::tool_call("add", r#"{"a": 1, "b": 1}"#)
        })
    });
    let rt = runtime(engine, model).await;
    rt.override_policy(
        "helper",
        PolicyDelta {
            max_iterations: Some(2),
            ..PolicyDelta::default()
        },
    )
    .unwrap();
    let out = rt.client("helper").unwrap().run("loop", session("s")).await.unwrap();
    assert_eq!(out.cap, Some(Cap::Iterations));
    assert_eq!(out.iterations, 2);
    assert_eq!(out.reply.as_deref(), Some("stopped"));
    // A per-run delta wins over the override.
    let out = rt
        .client("helper")
        .unwrap()
        .run(
            "loop",
            session("t").policy(PolicyDelta {
                max_tool_calls: Some(1),
                ..PolicyDelta::default()
            }),
        )
        .await
        .unwrap();
    assert_eq!(out.cap, Some(Cap::ToolCalls));
    assert!(rt.override_policy("ghost", PolicyDelta::default()).is_err());
}

pub async fn introspection_lists_agents_toolsets_and_schemas(engine: &EngineUnderTest) {
    let rt = runtime(engine, ScriptedModel::new()).await;
    let catalog = rt.catalog();
    assert_eq!(catalog.agents().count(), 1);
    assert_eq!(catalog.toolsets().keys().collect::<Vec<_>>(), ["tools"]);
    let spec = catalog.tool(&"pay".into()).unwrap();
    assert!(spec.annotations.requires_confirmation);
    assert_eq!(spec.description, "Pays an amount (needs the person's approval).");
    let schema = &catalog.tool(&"add".into()).unwrap().input_schema;
    assert_eq!(schema["required"], json!(["a", "b"]));
    let names: Vec<String> = catalog
        .tools_for(&"helper".into())
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, ["add", "explode", "pay", "wait_for_gate"]);
    assert!(catalog.agent(&"ghost".into()).is_none());
    assert!(catalog.tools_for(&"ghost".into()).is_empty());
}

pub async fn ending_a_session_cancels_its_run(engine: &EngineUnderTest) {
    let model = ScriptedModel::new().reply(ModelReply::tool_call("wait_for_gate", "{}"));
    let rt = runtime(engine, model).await;
    let handle = rt.client("helper").unwrap().start("wait", session("s")).await.unwrap();
    // A second run in the same session is refused while the first is running.
    let busy = rt
        .client("helper")
        .unwrap()
        .start("again", session("s"))
        .await
        .unwrap_err();
    assert!(matches!(busy, Error::Rejected(StepError::RunInProgress { .. })));
    let cancelled = rt.end("s", "the person left").await.unwrap().unwrap();
    assert_eq!(cancelled.status, RunStatus::Cancelled);
    assert_eq!(handle.wait().await.unwrap().status, RunStatus::Cancelled);
    GATE.notify_waiters();
    let ended = rt.send("more", session("s")).await.unwrap_err();
    assert!(matches!(ended, Error::Rejected(StepError::SessionEnded)));
}

pub async fn failing_models_are_retried_then_reported(engine: &EngineUnderTest) {
    let fast = RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
    };
    let server_error = |status| ModelError::new(ModelErrorKind::Server { status }, "scripted", "HTTP 503");
    let model = ScriptedModel::new()
        .fail(server_error(503))
        .fail(server_error(502))
        .reply(ModelReply::text("third time lucky"));
    let rt = Runtime::builder()
        .agent(AgentSpec::new("a"))
        .model(model.clone())
        .retry(fast.clone())
        .on_engine(engine)
        .build()
        .await
        .unwrap();
    let out = rt.client("a").unwrap().run("hi", session("s")).await.unwrap();
    assert_eq!(out.reply.as_deref(), Some("third time lucky"));
    assert_eq!(model.requests().len(), 3);

    let auth = ScriptedModel::new()
        .fail(ModelError::new(
            ModelErrorKind::Auth { status: 401 },
            "scripted",
            "HTTP 401 (check the API key)",
        ))
        .reply(ModelReply::text("never reached"));
    let rt = Runtime::builder()
        .agent(AgentSpec::new("a"))
        .model(auth.clone())
        .retry(fast)
        .on_engine(engine)
        .build()
        .await
        .unwrap();
    let out = rt.client("a").unwrap().run("hi", session("s")).await.unwrap();
    assert_eq!(out.status, RunStatus::Failed);
    assert!(out.error.unwrap().contains("check the API key"));
    assert_eq!(auth.requests().len(), 1, "a 401 is not retried");
}

pub async fn a_model_naming_a_missing_tool_or_sending_bad_json_is_corrected(engine: &EngineUnderTest) {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("multiply", r#"{"a": 1}"#))
        .reply(ModelReply::tool_call("add", r#"{"a": 1, "b": "#))
        .reply(ModelReply::tool_call("add", r#"{"a": 1, "b": 1}"#))
        .reply(ModelReply::text("2"));
    let rt = runtime(engine, model).await;
    let out = rt.client("helper").unwrap().run("1+1", session("s")).await.unwrap();
    assert_eq!(out.reply.as_deref(), Some("2"));
    let kinds: Vec<Option<ToolErrorKind>> = out
        .tool_executions
        .iter()
        .map(|e| match &e.outcome {
            ToolOutcome::Error(err) => Some(err.kind),
            ToolOutcome::Ok(_) => None,
        })
        .collect();
    assert_eq!(
        kinds,
        [
            Some(ToolErrorKind::UnknownTool),
            Some(ToolErrorKind::InvalidArguments),
            None
        ]
    );
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Priority {
    Low,
    Medium,
    High,
}

#[derive(Deserialize, JsonSchema)]
struct TaskArgs {
    /// The task's title.
    title: String,
    priority: Priority,
    due: Option<String>,
}

/// Creates a task.
#[tool(confirm = "I'll create a task '{title}' due {due}, priority {priority}. Proceed?")]
async fn create_task(args: TaskArgs) -> Result<String, String> {
    let priority = match args.priority {
        Priority::Low => "low",
        Priority::Medium => "medium",
        Priority::High => "high",
    };
    Ok(format!(
        "created '{}' ({priority}, due {})",
        args.title,
        args.due.unwrap_or_else(|| "whenever".into())
    ))
}

#[derive(Deserialize, JsonSchema)]
struct WhoArgs {
    user_id: String,
}

/// Says who is asking and which team they are in.
#[tool(read_only, requires = ["user_id"])]
async fn whoami(args: WhoArgs, cx: ToolContext) -> Result<String, String> {
    let team = cx.value("team").and_then(|v| v.as_str()).unwrap_or("no team");
    Ok(format!(
        "{} (argument {}) in {team}",
        cx.user().unwrap_or("nobody"),
        args.user_id
    ))
}

async fn task_runtime(engine: &EngineUnderTest, model: ScriptedModel) -> Runtime {
    Runtime::builder()
        .tool(CreateTask)
        .tool(Whoami)
        .agent(
            AgentSpec::new("tasks")
                .instructions("Manage tasks.")
                .tool("create_task")
                .tool("whoami"),
        )
        .model(model)
        .on_engine(engine)
        .build()
        .await
        .unwrap()
}

pub async fn a_templated_confirmation_is_answered_by_a_plain_yes_through_send(engine: &EngineUnderTest) {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call(
            "create_task",
            r#"{"title": "Fix login bug", "priority": "low", "due": "Monday"}"#,
        ))
        .reply(ModelReply::text("Created."));
    let rt = task_runtime(engine, model.clone()).await;
    let parked = rt
        .client("tasks")
        .unwrap()
        .run("create a task to fix the login bug", session("t"))
        .await
        .unwrap();
    assert_eq!(parked.status, RunStatus::AwaitingConfirmation);
    let pending = parked.pending_confirmation.unwrap();
    assert_eq!(
        pending.message,
        "I'll create a task 'Fix login bug' due Monday, priority low. Proceed?"
    );
    let catalog = rt.catalog();
    let spec = catalog.tool(&"create_task".into()).unwrap();
    assert!(spec.annotations.requires_confirmation, "a template implies asking");

    // "Yes, but ..." shows the changed call back instead of running it.
    let changed = rt
        .send("Yes, but high priority and due Friday", session("t"))
        .await
        .unwrap();
    assert_eq!(changed.status, RunStatus::AwaitingConfirmation);
    let again = changed.pending_confirmation.unwrap();
    assert_eq!(
        again.message,
        "I'll create a task 'Fix login bug' due Friday, priority high. Proceed?"
    );
    assert_ne!(again.fingerprint, pending.fingerprint);
    assert!(changed.tool_executions.is_empty(), "nothing ran yet");

    let out = rt.send("yes", session("t")).await.unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.run_id, parked.run_id, "the answer went on with the parked run");
    assert_eq!(out.reply.as_deref(), Some("Created."));
    let ToolOutcome::Ok(created) = &out.tool_executions[0].outcome else {
        panic!("the call ran: {:?}", out.tool_executions)
    };
    assert_eq!(created, &json!("created 'Fix login bug' (high, due Friday)"));
    // The model saw the call as it ran.
    let history = rt.history("t").await.unwrap();
    assert!(
        !history
            .iter()
            .any(|m| matches!(m, Message::User { content } if content == "yes"))
    );
}

pub async fn a_tool_reads_who_asks_and_the_blackboard_from_its_context(engine: &EngineUnderTest) {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("whoami", "{}"))
        .reply(ModelReply::text("You are ana."));
    let rt = task_runtime(engine, model.clone()).await;
    let out = rt
        .client("tasks")
        .unwrap()
        .run("who am I?", session("w").user("ana").context("team", "blue"))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    let execution = &out.tool_executions[0];
    assert_eq!(
        execution.arguments,
        json!({"user_id": "ana"}),
        "filled from the blackboard"
    );
    assert_eq!(execution.outcome, ToolOutcome::Ok(json!("ana (argument ana) in blue")));
    let session = rt.session("w").await.unwrap();
    assert_eq!(session.blackboard().available["user_id"], json!("ana"));
}

#[derive(Deserialize, JsonSchema)]
struct Destination {
    to: String,
}

/// Finds flights.
#[tool(read_only)]
async fn search_flights(args: Destination) -> Result<serde_json::Value, String> {
    Ok(json!({"to": args.to, "count": 2}))
}

/// Counts PTO days.
#[tool(read_only)]
async fn pto_days(_args: Empty) -> Result<serde_json::Value, String> {
    Ok(json!({"days": 12}))
}

fn hub_agents() -> Vec<AgentSpec> {
    vec![
        AgentSpec::new("travel")
            .name("Travel")
            .description("Books flights.")
            .tool("search_flights")
            .intents(Intents::new().keywords(["flight", "vacation"]))
            .rules(
                Rules::new()
                    .route(Route::tool("search_flights", json!({"to": "{to}"})).pattern(r"(?i)to (?P<to>\w+)"))
                    .answer("{result.count} flights to {result.to}"),
            ),
        AgentSpec::new("hr")
            .name("HR")
            .description("Time off.")
            .tool("pto_days")
            .intents(Intents::new().keywords(["pto", "vacation"]))
            .rules(
                Rules::new()
                    .route(Route::tool("pto_days", json!({})).keywords(["pto", "vacation"]))
                    .answer("You have {result.days} days."),
            ),
    ]
}

async fn hub_runtime(engine: &EngineUnderTest, model: Option<ScriptedModel>) -> Runtime {
    let mut builder = Runtime::builder()
        .tool(SearchFlights)
        .tool(PtoDays)
        .agents(hub_agents())
        .on_engine(engine);
    if let Some(model) = model {
        builder = builder.model(model);
    }
    builder.build().await.unwrap()
}

pub async fn a_new_session_naming_no_agent_starts_at_the_hub_which_routes_by_rules(engine: &EngineUnderTest) {
    let rt = hub_runtime(engine, None).await;
    assert_eq!(rt.catalog().default_agent(), Some("hub".into()));
    let out = rt.send("book a flight to London", session("h1")).await.unwrap();
    assert_eq!(out.agent, "travel");
    assert_eq!(out.reply.as_deref(), Some("2 flights to London"));
    let mut events = rt.subscribe("h1", 1);
    let mut routed = Vec::new();
    while let Some(Ok(event)) = events.next().await {
        match event.kind {
            EventKind::AgentRouted { to, source, .. } => routed.push((to, source)),
            EventKind::RunFinished { .. } => break,
            _ => {}
        }
    }
    assert_eq!(routed, [(Some("travel".into()), RouteSource::Rules)]);
    // "vacation" is a choice; the answer runs "vacation" in HR.
    let out = rt.send("vacation", session("h2")).await.unwrap();
    assert_eq!(out.status, RunStatus::NeedsInput);
    assert!(out.reply.as_deref().unwrap().starts_with("Travel or HR?"));
    let out = rt.send("HR", session("h2")).await.unwrap();
    assert_eq!(out.agent, "hr");
    assert_eq!(out.reply.as_deref(), Some("You have 12 days."));
    // The client of the hub works like any agent's.
    let out = rt
        .client("hub")
        .unwrap()
        .run("what can you do?", session("h3"))
        .await
        .unwrap();
    assert!(out.reply.unwrap().contains("1. Travel — Books flights."));
}

pub async fn the_hub_asks_the_model_when_no_rule_is_confident(engine: &EngineUnderTest) {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("change_goal", r#"{"agent": "hr"}"#))
        .reply(ModelReply::text("You have plenty of days."));
    let rt = hub_runtime(engine, Some(model.clone())).await;
    let out = rt.send("I am exhausted and need a break", session("m1")).await.unwrap();
    assert_eq!(out.agent, "hr");
    assert_eq!(out.reply.as_deref(), Some("You have plenty of days."));
    let requests = model.requests();
    assert_eq!(requests[0].agent, "hub");
    assert_eq!(requests[1].agent, "hr");
    let names: Vec<&str> = requests[1].tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"list_agents") && names.contains(&"goal_complete"),
        "{names:?}"
    );
}

pub async fn single_mode_has_no_hub_and_offers_no_hub_tools(engine: &EngineUnderTest) {
    let model = ScriptedModel::new().reply(ModelReply::text("hi"));
    let rt = Runtime::builder()
        .tool(SearchFlights)
        .tool(PtoDays)
        .agents(hub_agents())
        .mode(Mode::Single)
        .single_agent("travel")
        .model(model.clone())
        .on_engine(engine)
        .build()
        .await
        .unwrap();
    assert_eq!(rt.catalog().default_agent(), Some("travel".into()));
    let out = rt.send("hello", session("s1")).await.unwrap();
    assert_eq!(out.agent, "travel");
    let names: Vec<String> = model.requests()[0].tools.iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names, ["search_flights"]);
}
