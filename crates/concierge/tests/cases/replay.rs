//! Deterministic replay, on any engine: a session replays against the tools
//! its runs saw, whatever the MCP server offers today.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::Path;

use concierge::mcp::McpServerConfig;
use concierge::model::ScriptedModel;
use concierge::{AgentSpec, Message, ModelReply, RunOptions, RunStatus, Runtime};

use super::{EngineUnderTest, OnEngine};

/// A stdio MCP server (Python) whose tools are named in `tools.txt`, one per
/// line, read at each listing; every call answers "ran <name>".
fn server(dir: &Path) -> McpServerConfig {
    let script = dir.join("server.py");
    let names = dir.join("tools.txt");
    std::fs::write(
        &script,
        format!(
            r#"import json, sys
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
        names = [n.strip() for n in open({names:?}).read().splitlines() if n.strip()]
        tools = [{{"name": n, "description": "Says it ran.", "inputSchema": {{"type": "object"}}, "annotations": {{"readOnlyHint": True}}}} for n in names]
        send({{"jsonrpc": "2.0", "id": id, "result": {{"tools": tools}}}})
    elif method == "tools/call":
        send({{"jsonrpc": "2.0", "id": id, "result": {{"content": [{{"type": "text", "text": "ran " + message["params"]["name"]}}]}}}})
    else:
        send({{"jsonrpc": "2.0", "id": id, "error": {{"code": -32601, "message": "no " + str(method)}}}})
"#,
            names = names.to_string_lossy()
        ),
    )
    .unwrap();
    McpServerConfig::stdio("python3", [script.to_string_lossy().to_string()])
}

async fn runtime(engine: &EngineUnderTest, dir: &Path, model: ScriptedModel) -> Runtime {
    Runtime::builder()
        .mcp_server("srv", server(dir))
        .agent(AgentSpec::new("helper").instructions("Use the tools.").toolset("srv"))
        .model(model)
        .on_engine_store(engine, "replay")
        .build()
        .await
        .unwrap()
}

pub async fn a_session_replays_against_the_tools_its_run_saw(engine: &EngineUnderTest) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tools.txt"), "echo\n").unwrap();

    // A run that calls `echo`, discovered from the server.
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("echo", "{}"))
        .reply(ModelReply::text("Echoed."));
    let rt = runtime(engine, dir.path(), model).await;
    let out = rt
        .client("helper")
        .unwrap()
        .run("echo something", RunOptions::new().session_id("s"))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    let recorded: Vec<Message> = rt.history("s").await.unwrap();
    assert_eq!(recorded.len(), 4, "{recorded:?}");
    rt.shutdown().await;
    drop(rt);

    // The server changes its tools: `echo` is gone. A process lists them
    // again (and remembers the new list).
    std::fs::write(dir.path().join("tools.txt"), "shout\n").unwrap();
    let rt = runtime(engine, dir.path(), ScriptedModel::new()).await;
    let listed = rt.discover("srv").await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(rt.catalog().tools_for(&"helper".into())[0].name.as_str(), "shout");
    assert_eq!(
        rt.history("s").await.unwrap(),
        recorded,
        "replayed with the tools the run saw"
    );
    rt.shutdown().await;
    drop(rt);

    // A fresh process, which only knows the new tools, replays the same history.
    let rt = runtime(engine, dir.path(), ScriptedModel::new()).await;
    if !EngineUnderTest::REMEMBERS_TOOLSETS {
        // The engine keeps what a server offered for its own process only:
        // this one learns the new tools by listing the server.
        rt.discover("srv").await.unwrap();
    }
    assert_eq!(rt.catalog().tools_for(&"helper".into())[0].name.as_str(), "shout");
    assert_eq!(rt.history("s").await.unwrap(), recorded);
    let events: Vec<_> = {
        use futures::StreamExt;
        rt.subscribe("s", 1).take(3).collect().await
    };
    assert!(events.iter().all(Result::is_ok), "{events:?}");
    rt.shutdown().await;
}
