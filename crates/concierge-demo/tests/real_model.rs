//! The calculator and a two-tool agent against a real OpenAI-compatible model
//! server (llama.cpp serving SmolLM2-135M; `scripts/test.sh` starts it and
//! sets `CONCIERGE_TEST_MODEL_URL`). The small model's answers are often
//! wrong: these tests assert protocol facts (a tool call was parsed and
//! executed, a final message arrived, usage was counted), not its wisdom.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use concierge::model::OpenAiCompatible;
use concierge::{
    AgentSpec, EventKind, Message, RunOptions, RunOutput, RunPolicy, RunStatus, Runtime, ToolOutcome, tool,
};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;

fn model() -> OpenAiCompatible {
    let url = std::env::var("CONCIERGE_TEST_MODEL_URL")
        .expect("CONCIERGE_TEST_MODEL_URL is not set: scripts/test.sh starts a model server and sets it");
    OpenAiCompatible::new("smollm2").base_url(url)
}

#[derive(Deserialize, JsonSchema)]
struct ShoutArgs {
    /// The text to shout.
    text: String,
}

/// Returns the text in capital letters.
#[tool(read_only)]
async fn shout(args: ShoutArgs) -> Result<String, String> {
    Ok(args.text.to_uppercase())
}

/// Few iterations keep the test short: the small model never sees tool
/// results (llama.cpp drops `role: tool` messages) and would call tools until
/// the cap.
fn short() -> RunPolicy {
    RunPolicy {
        max_iterations: 2,
        ..RunPolicy::default()
    }
}

fn calculator() -> AgentSpec {
    concierge_demo::calculator::agent()
        .first_tool("calculator")
        .policy(short())
}

fn two_tools() -> AgentSpec {
    AgentSpec::new("helper")
        .instructions(
            "You help with text and numbers. Use the shout tool to shout text, the calculator for arithmetic.",
        )
        .tool("shout")
        .tool("calculator")
        .first_tool("shout")
        .temperature(0.0)
        .policy(short())
}

async fn runtime() -> Runtime {
    concierge_demo::install(Runtime::builder())
        .tool(Shout)
        .agents([two_tools()])
        .model(model())
        .in_memory()
        .build()
        .await
        .unwrap()
}

/// A variant of the runtime whose calculator agent is forced to call its tool first.
async fn calculator_runtime() -> Runtime {
    Runtime::builder()
        .toolset(concierge_demo::calculator::toolset())
        .agent(calculator())
        .model(model())
        .in_memory()
        .build()
        .await
        .unwrap()
}

fn assert_protocol(out: &RunOutput, tool: &str, history: &[Message]) {
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert!(
        !out.tool_executions.is_empty(),
        "a tool call was parsed and executed: {out:?}"
    );
    let first = &out.tool_executions[0];
    assert_eq!(first.tool, tool);
    assert!(
        first.arguments.is_object(),
        "arguments parsed as JSON: {:?}",
        first.arguments
    );
    assert!(
        matches!(&first.outcome, ToolOutcome::Ok(_)) || matches!(&first.outcome, ToolOutcome::Error(_)),
        "the call ran and has an outcome"
    );
    assert!(
        out.usage.input_tokens > 0 && out.usage.output_tokens > 0,
        "usage was counted: {:?}",
        out.usage
    );
    assert!(
        matches!(history.last(), Some(Message::Assistant { tool_calls, .. }) if tool_calls.is_empty()),
        "a final message arrived: {:?}",
        history.last()
    );
}

#[tokio::test]
#[ignore = "needs a model server: run scripts/test.sh"]
async fn real_model_calculator_not_streamed() {
    let rt = calculator_runtime().await;
    let out = rt
        .client("calculator")
        .unwrap()
        .run("what is 17 plus 25?", RunOptions::new().session_id("calc"))
        .await
        .unwrap();
    assert_protocol(&out, "calculator", &rt.history("calc").await.unwrap());
}

/// Runs with a live subscriber, so the runtime streams, and returns the
/// output, the history and the model deltas seen.
async fn streamed(rt: &Runtime, agent: &str, text: &str, session: &str) -> (RunOutput, Vec<Message>, Vec<String>) {
    let mut events = rt.subscribe(session, 1);
    let out = rt
        .client(agent)
        .unwrap()
        .run(text, RunOptions::new().session_id(session))
        .await
        .unwrap();
    let mut deltas = Vec::new();
    while let Some(event) = events.next().await {
        match event.unwrap().kind {
            EventKind::ModelDelta { text } => deltas.push(text),
            EventKind::RunFinished { .. } => break,
            _ => {}
        }
    }
    (out, rt.history(session).await.unwrap(), deltas)
}

#[tokio::test]
#[ignore = "needs a model server: run scripts/test.sh"]
async fn real_model_calculator_streamed() {
    let rt = calculator_runtime().await;
    let (out, history, deltas) = streamed(&rt, "calculator", "what is 6 times 7?", "calc-stream").await;
    assert_protocol(&out, "calculator", &history);
    // The forced first call streams as tool-call deltas; the answer (a
    // synthesis without tools) streams as text.
    assert!(!deltas.is_empty(), "text deltas arrived while the model answered");
    let Some(Message::Assistant { content, .. }) = history.last() else {
        unreachable!()
    };
    assert_eq!(&deltas.concat(), content, "the deltas add up to the final message");
}

#[tokio::test]
#[ignore = "needs a model server: run scripts/test.sh"]
async fn real_model_two_tool_agent_not_streamed_and_streamed() {
    let rt = runtime().await;
    let out = rt
        .client("helper")
        .unwrap()
        .run("shout hello world", RunOptions::new().session_id("two"))
        .await
        .unwrap();
    assert_protocol(&out, "shout", &rt.history("two").await.unwrap());
    let names: Vec<&str> = out.tool_executions.iter().map(|e| e.tool.as_str()).collect();
    assert!(names.iter().all(|n| ["shout", "calculator"].contains(n)), "{names:?}");

    let (out, history, _) = streamed(&rt, "helper", "shout good morning", "two-stream").await;
    assert_protocol(&out, "shout", &history);
}
