//! A person's answer to a parked call that the rules cannot read, understood
//! by the agent's model, on any engine (a scripted model stands in for a
//! provider).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use concierge::core::ToolChoice;
use concierge::model::ScriptedModel;
use concierge::{
    AgentSpec, ModelReply, Route, Rules, RunOptions, RunStatus, Runtime, ToolErrorKind, ToolOutcome, tool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{EngineUnderTest, OnEngine};

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Priority {
    Low,
    Medium,
    High,
}

#[derive(Deserialize, JsonSchema)]
struct TaskArgs {
    title: String,
    priority: Priority,
    due: Option<String>,
}

/// Creates a task.
#[tool(confirm = "I'll create a task '{title}'[ due {due}], priority {priority}. Proceed?")]
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

fn session(id: &str) -> RunOptions {
    RunOptions::new().session_id(id)
}

async fn runtime(engine: &EngineUnderTest, agent: AgentSpec, model: Option<ScriptedModel>) -> Runtime {
    let builder = Runtime::builder().tool(CreateTask).agent(agent).on_engine(engine);
    let builder = match model {
        Some(model) => builder.model(model),
        None => builder,
    };
    builder.build().await.unwrap()
}

fn tasks() -> AgentSpec {
    AgentSpec::new("tasks")
        .instructions("Manage tasks.")
        .tool("create_task")
}

/// The model's request to read an answer (not to plan).
fn reads_an_answer(request: &concierge::ModelRequest) -> bool {
    request.tool_choice == ToolChoice::Tool("answer_confirmation".into())
}

const PARKED_CALL: &str = r#"{"title": "Fix login bug", "priority": "low", "due": "Monday"}"#;

pub async fn a_change_the_rules_miss_is_read_by_the_model_and_shown_back_before_it_runs(engine: &EngineUnderTest) {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("create_task", PARKED_CALL))
        .reply(ModelReply::tool_call(
            "answer_confirmation",
            r#"{"decision": "amend", "arguments": {"title": "Fix login bug", "priority": "high", "due": "Monday"}, "reason": "urgent means high priority"}"#,
        ).with_usage(40, 6))
        .reply(ModelReply::text("Created."));
    let rt = runtime(engine, tasks(), Some(model.clone())).await;
    let parked = rt
        .client("tasks")
        .unwrap()
        .run("create a task to fix the login bug", session("t"))
        .await
        .unwrap();
    assert_eq!(parked.status, RunStatus::AwaitingConfirmation);
    let pending = parked.pending_confirmation.unwrap();

    let changed = rt.send("yes but make it urgent", session("t")).await.unwrap();
    assert_eq!(changed.status, RunStatus::AwaitingConfirmation, "{changed:?}");
    assert_eq!(changed.run_id, parked.run_id, "the parked run goes on");
    assert!(changed.tool_executions.is_empty(), "nothing ran yet");
    let again = changed.pending_confirmation.unwrap();
    assert_eq!(
        again.arguments,
        json!({"title": "Fix login bug", "priority": "high", "due": "Monday"})
    );
    assert_eq!(
        again.message,
        "I'll create a task 'Fix login bug' due Monday, priority high. Proceed?"
    );
    assert_ne!(again.fingerprint, pending.fingerprint);
    // The model was asked about the parked call, with its schema.
    let asked = &model.requests()[1];
    assert!(reads_an_answer(asked), "{asked:?}");
    assert!(
        asked.system.contains("create_task")
            && asked.system.contains("\"enum\"")
            && asked.system.contains("Fix login bug"),
        "{}",
        asked.system
    );
    assert_eq!(asked.messages.last().unwrap().text(), "yes but make it urgent");
    // The reading is one of the run's model calls: its tokens count in the
    // run's and the session's totals.
    assert_eq!(changed.usage.input_tokens, 40, "{:?}", changed.usage);
    assert_eq!(rt.session("t").await.unwrap().usage().input_tokens, 40);

    let out = rt.send("yes", session("t")).await.unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(out.run_id, parked.run_id);
    assert_eq!(
        out.tool_executions[0].outcome,
        ToolOutcome::Ok(json!("created 'Fix login bug' (high, due Monday)"))
    );
    assert_eq!(out.reply.as_deref(), Some("Created."));
    assert_eq!(model.requests().len(), 3, "a plain yes needs no model");
}

pub async fn a_plain_no_never_reaches_the_model(engine: &EngineUnderTest) {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("create_task", PARKED_CALL))
        .reply(ModelReply::text("OK, I did not create it."));
    let rt = runtime(engine, tasks(), Some(model.clone())).await;
    rt.client("tasks")
        .unwrap()
        .run("create a task to fix the login bug", session("n"))
        .await
        .unwrap();
    let out = rt.send("no thanks", session("n")).await.unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.reply.as_deref(), Some("OK, I did not create it."));
    assert!(
        matches!(&out.tool_executions[0].outcome, ToolOutcome::Error(e) if e.kind == ToolErrorKind::Declined),
        "{out:?}"
    );
    assert!(
        !model.requests().iter().any(reads_an_answer),
        "the model was asked to read a no"
    );
}

pub async fn a_model_answer_that_is_no_decision_leaves_the_call_parked_with_a_reminder(engine: &EngineUnderTest) {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("create_task", PARKED_CALL))
        // Not a decision at all.
        .reply(ModelReply::text("Hmm, hard to say!"))
        // A change the tool cannot take.
        .reply(ModelReply::text(
            "```json\n{\"decision\": \"amend\", \"arguments\": {\"priority\": \"urgent\"}}\n```",
        ))
        .reply(ModelReply::text("Created."));
    let rt = runtime(engine, tasks(), Some(model.clone())).await;
    let parked = rt
        .client("tasks")
        .unwrap()
        .run("create a task to fix the login bug", session("g"))
        .await
        .unwrap();
    let pending = parked.pending_confirmation.unwrap();
    for answer in ["yes but make it urgent", "yes but make it really urgent"] {
        let out = rt.send(answer, session("g")).await.unwrap();
        assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{answer}: {out:?}");
        assert!(out.tool_executions.is_empty(), "{answer}: nothing ran");
        assert!(
            out.reply.as_deref().unwrap_or_default().contains("yes or no"),
            "{out:?}"
        );
        let still = out.pending_confirmation.unwrap();
        assert_eq!(still.arguments, pending.arguments, "{answer}: the call is unchanged");
        assert_eq!(still.fingerprint, pending.fingerprint);
    }
    assert_eq!(model.requests().iter().filter(|r| reads_an_answer(r)).count(), 2);
    let out = rt.send("yes", session("g")).await.unwrap();
    assert_eq!(
        out.tool_executions[0].outcome,
        ToolOutcome::Ok(json!("created 'Fix login bug' (low, due Monday)"))
    );
}

pub async fn without_a_model_the_rules_alone_answer(engine: &EngineUnderTest) {
    let agent = tasks().rules(
        Rules::new().route(
            Route::tool("create_task", json!({"title": "{title}", "priority": "low"}))
                .pattern(r"(?i)create a task to (?P<title>.+)"),
        ),
    );
    let rt = runtime(engine, agent, None).await;
    let parked = rt
        .client("tasks")
        .unwrap()
        .run("create a task to fix the login bug", session("r"))
        .await
        .unwrap();
    assert_eq!(parked.status, RunStatus::AwaitingConfirmation, "{parked:?}");
    let pending = parked.pending_confirmation.unwrap();
    let reminded = rt.send("yes but make it urgent", session("r")).await.unwrap();
    assert_eq!(reminded.status, RunStatus::AwaitingConfirmation);
    assert!(reminded.reply.unwrap().contains("yes or no"));
    assert_eq!(reminded.pending_confirmation.unwrap().arguments, pending.arguments);
    // The rules read a change they know.
    let changed = rt.send("yes, high priority", session("r")).await.unwrap();
    let again = changed.pending_confirmation.unwrap();
    assert_eq!(again.arguments["priority"], "high");
    let out = rt.send("yes", session("r")).await.unwrap();
    assert_eq!(
        out.tool_executions[0].outcome,
        ToolOutcome::Ok(json!("created 'fix the login bug' (high, due whenever)"))
    );
}
