//! MCP servers start in the background: a slow or dead server holds up
//! only the runs that need it (they are told with `tools_status` events, and
//! one that cannot start fails them with its name and why), a crashed server
//! is started again, and a process whose runs do not touch a server whose
//! tools an earlier process remembered does not start it at all.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::Duration;

use concierge::mcp::McpServerConfig;
use concierge::model::ScriptedModel;
use concierge::{AgentSpec, Error, EventKind, Intents, ModelReply, Rules, RunOptions, RunStatus, Runtime, ToolsState};
use futures::StreamExt;
use serde_json::json;

fn session(id: &str) -> RunOptions {
    RunOptions::new().session_id(id)
}

/// Agent `a` uses the server `srv` (reached by "bump"; its model calls
/// `bump` once, then says "done"); `calc` uses no server (reached by
/// "calculate"; its rules answer "8").
fn builder(server: McpServerConfig) -> concierge::RuntimeBuilder {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("bump", json!({}).to_string()))
        .reply(ModelReply::text("done"));
    Runtime::builder()
        .mcp_server("srv", server)
        .agent(
            AgentSpec::new("a")
                .description("Bumps the counter.")
                .toolset("srv")
                .model("m")
                .intents(Intents::new().keywords(["bump"])),
        )
        .agent(
            AgentSpec::new("calc")
                .description("Calculates.")
                .rules(Rules::new().fallback("8"))
                .intents(Intents::new().keywords(["calculate"])),
        )
        .named_model("m", std::sync::Arc::new(model))
}

/// A stdio MCP server in Python offering `bump`; it writes `marker` when it
/// starts.
fn python_server(dir: &Path, marker: &Path) -> McpServerConfig {
    let script = dir.join("server.py");
    std::fs::write(
        &script,
        format!(
            r#"import json, sys
open({marker:?}, "a").write("started\n")
def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    message = json.loads(line)
    method, id = message.get("method"), message.get("id")
    if id is None:
        continue
    if method == "initialize":
        send({{"jsonrpc": "2.0", "id": id, "result": {{"protocolVersion": "2025-06-18", "capabilities": {{"tools": {{}}}}, "serverInfo": {{"name": "py", "version": "1"}}}}}})
    elif method == "tools/list":
        send({{"jsonrpc": "2.0", "id": id, "result": {{"tools": [{{"name": "bump", "inputSchema": {{"type": "object"}}, "annotations": {{"readOnlyHint": True}}}}]}}}})
    elif method == "tools/call":
        send({{"jsonrpc": "2.0", "id": id, "result": {{"content": [{{"type": "text", "text": "bumped"}}]}}}})
    else:
        send({{"jsonrpc": "2.0", "id": id, "error": {{"code": -32601, "message": "no " + str(method)}}}})
"#,
            marker = marker.to_string_lossy()
        ),
    )
    .unwrap();
    McpServerConfig::stdio("python3", [script.to_string_lossy().to_string()])
}

#[tokio::test]
async fn a_run_that_does_not_need_a_starting_server_goes_at_once() {
    // A server that never answers, with a long timeout: it stays "starting".
    let never = McpServerConfig::stdio("sleep", ["1000"]).timeout(Duration::from_secs(600));
    let rt = builder(never).in_memory().build().await.unwrap();
    let mut events = rt.subscribe("s1", 1);
    // Through the hub: "bump" is `a`'s, which needs the server.
    let waiting = tokio::spawn({
        let rt = rt.clone();
        async move { rt.send("bump the counter", session("s1")).await }
    });
    let first = events.next().await.unwrap().unwrap();
    match &first.kind {
        EventKind::ToolsStatus { server, state, message } => {
            assert_eq!((server.as_str(), *state), ("srv", ToolsState::Starting));
            assert!(message.contains("srv"), "{message}");
        }
        other => panic!("the waiting run's session is told first: {other:?}"),
    }
    assert_eq!(first.run, None);
    // `calc` needs no server: its run goes while the server still starts.
    let out = rt.send("calculate 5 + 3", session("s2")).await.unwrap();
    assert_eq!((out.agent.as_str(), out.reply.as_deref()), ("calc", Some("8")));
    let out = rt.client("calc").unwrap().run("again", session("s3")).await.unwrap();
    assert_eq!(out.reply.as_deref(), Some("8"));
    assert!(
        !waiting.is_finished(),
        "the run that needs the server still waits for it"
    );
    waiting.abort();
    rt.shutdown().await;
}

#[tokio::test]
async fn a_server_that_cannot_start_fails_the_run_that_needs_it_naming_it_and_why() {
    let broken = McpServerConfig::stdio("sh", ["-c", "echo 'ORDERS_DB is not set' >&2; exit 3"]);
    let rt = builder(broken).in_memory().build().await.unwrap();
    let mut events = rt.subscribe("s1", 1);
    let error = rt.send("bump the counter", session("s1")).await.unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, Error::ToolsUnavailable { .. }), "{text}");
    assert!(text.starts_with("the srv tools could not start: "), "{text}");
    assert!(text.contains("ORDERS_DB is not set"), "its stderr says why: {text}");
    assert!(!text.contains("no tool named"), "{text}");
    let told = loop {
        let event = events.next().await.unwrap().unwrap();
        if let EventKind::ToolsStatus {
            state: ToolsState::Failed,
            message,
            ..
        } = event.kind
        {
            break message;
        }
    };
    assert_eq!(told, text, "the session is told the same sentence");
    // Another agent's run does not care.
    let out = rt.send("calculate 5 + 3", session("s2")).await.unwrap();
    assert_eq!(out.reply.as_deref(), Some("8"));
    rt.shutdown().await;
}

#[tokio::test]
async fn a_crashed_server_is_started_again_for_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("started");
    let rt = builder(python_server(dir.path(), &marker))
        .in_memory()
        .build()
        .await
        .unwrap();
    rt.discover("srv").await.unwrap();
    let client = rt.mcp_client("srv").unwrap();
    let pid = client.pid().await.expect("a stdio server has a pid");
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    // Started again in the background, with no run asking for it (the
    // bound only keeps a broken build from hanging).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let now = client.pid().await;
        if now.is_some() && now != Some(pid) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the crashed server was not started again"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let out = rt.client("a").unwrap().run("bump it", session("s1")).await.unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    let results: Vec<_> = out.tool_executions.iter().map(|e| e.outcome.clone()).collect();
    assert_eq!(results, [concierge::ToolOutcome::Ok(json!("bumped"))]);
    rt.shutdown().await;
}

#[tokio::test]
async fn a_process_whose_runs_do_not_use_a_remembered_server_does_not_start_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("concierge.db");
    let marker = dir.path().join("started");
    let server = python_server(dir.path(), &marker);
    {
        // An earlier process listed the server's tools.
        let rt = builder(server.clone()).sqlite(&db).build().await.unwrap();
        rt.discover("srv").await.unwrap();
        rt.shutdown().await;
    }
    std::fs::remove_file(&marker).unwrap();
    {
        let rt = builder(server.clone()).sqlite(&db).build().await.unwrap();
        let tools: Vec<String> = rt
            .catalog()
            .tools_for(&"a".into())
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        assert!(tools.contains(&"bump".to_string()), "remembered: {tools:?}");
        let out = rt.send("calculate 5 + 3", session("s1")).await.unwrap();
        assert_eq!(out.reply.as_deref(), Some("8"));
        rt.shutdown().await;
    }
    assert!(!marker.exists(), "the server was not started");
    // A run that calls it starts it, with the remembered tools.
    let rt = builder(server).sqlite(&db).build().await.unwrap();
    let out = rt.client("a").unwrap().run("bump it", session("s2")).await.unwrap();
    let results: Vec<_> = out.tool_executions.iter().map(|e| e.outcome.clone()).collect();
    assert_eq!(results, [concierge::ToolOutcome::Ok(json!("bumped"))], "{out:?}");
    assert!(marker.exists(), "a run that calls it starts it");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_run_whose_agent_the_hubs_model_picks_waits_for_the_servers_it_may_need() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("started");
    python_server(dir.path(), &marker);
    // The server takes a moment to start: the run must not begin before its tools are known.
    let script = dir.path().join("server.py");
    let slow = McpServerConfig::stdio(
        "sh",
        ["-c".to_string(), format!("sleep 1; exec python3 {}", script.display())],
    );
    // The hub plans with a model, which picks `a` for a message no rule routes.
    let hub_model = ScriptedModel::new().reply(ModelReply::tool_call("change_goal", json!({"agent": "a"}).to_string()));
    let rt = builder(slow).model(hub_model).in_memory().build().await.unwrap();
    let mut events = rt.subscribe("s1", 1);
    let out = rt.send("I would like something nice", session("s1")).await.unwrap();
    assert_eq!(
        (out.agent.as_str(), out.reply.as_deref()),
        ("a", Some("done")),
        "{out:?}"
    );
    assert!(
        out.tool_executions
            .iter()
            .any(|t| t.tool.as_str() == "bump" && t.success()),
        "the agent the model picked found the server's tool: {:?}",
        out.tool_executions
    );
    let first = events.next().await.unwrap().unwrap();
    assert!(
        matches!(&first.kind, EventKind::ToolsStatus { server, state: ToolsState::Starting, .. } if server == "srv"),
        "the person is told the tools are starting: {first:?}"
    );
    rt.shutdown().await;
}
