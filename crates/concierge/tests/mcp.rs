//! MCP against real servers: `@modelcontextprotocol/server-everything` from
//! npm over stdio (`scripts/setup-mcp.sh` installs it into node_modules), an
//! rmcp server over streamable HTTP written here, and concierge's own MCP
//! server driven by an rmcp client.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use concierge::mcp::{ConciergeMcp, McpServerConfig};
use concierge::model::ScriptedModel;
use concierge::{
    AgentSpec, Error, EventKind, ModelReply, RunOptions, Runtime, ToolContext, ToolErrorKind, ToolOutcome, tool,
};
use futures::StreamExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpClientTransport, StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

fn everything() -> McpServerConfig {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        script.exists(),
        "server-everything is not installed: run scripts/setup-mcp.sh (it installs into node_modules)"
    );
    McpServerConfig::stdio("node", [script.to_string_lossy().to_string(), "stdio".to_string()])
}

fn session(id: &str) -> RunOptions {
    RunOptions::new().session_id(id)
}

fn outcomes(out: &concierge::RunOutput) -> Vec<Result<Value, ToolErrorKind>> {
    out.tool_executions
        .iter()
        .map(|e| match &e.outcome {
            ToolOutcome::Ok(v) => Ok(v.clone()),
            ToolOutcome::Error(err) => Err(err.kind),
        })
        .collect()
}

/// Replies with the given tool calls, one per model call, then with "done".
fn script(calls: Vec<(&str, Value)>) -> ScriptedModel {
    let mut model = ScriptedModel::new();
    for (name, args) in calls {
        model = model.reply(ModelReply::tool_call(name, args.to_string()));
    }
    model.reply(ModelReply::text("done"))
}

// ----- stdio: @modelcontextprotocol/server-everything -----

#[tokio::test]
#[ignore = "needs npm packages: scripts/setup-mcp.sh"]
async fn stdio_discovery_filtering_coercion_rejection_and_content() {
    let model = script(vec![
        ("get-sum", json!({"a": "2", "b": 3})),
        ("get-sum", json!({"a": "two", "b": 3})),
        ("get-tiny-image", json!({})),
        ("echo", json!({"message": "hi"})),
    ]);
    let rt = helper_using(
        "everything",
        everything().include(["echo", "get-sum", "get-tiny-image"]),
        model,
    )
    .await;
    assert!(
        rt.tools_for("helper").unwrap().is_empty(),
        "nothing is discovered before a run"
    );
    let out = rt.client("helper").unwrap().run("go", session("s")).await.unwrap();
    let names: Vec<String> = rt
        .tools_for("helper")
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(
        names,
        ["echo", "get-sum", "get-tiny-image"],
        "included_tools keeps three"
    );
    let schema = rt.tool_schema("get-sum").unwrap();
    assert_eq!(schema["properties"]["a"]["type"], "number");
    assert!(
        rt.tool_spec("echo").unwrap().annotations.read_only,
        "readOnlyHint maps onto read_only"
    );

    let results = outcomes(&out);
    assert_eq!(results.len(), 4);
    let sum = results[0].clone().unwrap();
    assert!(sum.as_str().unwrap().contains('5'), "\"2\" was coerced to 2: {sum}");
    assert_eq!(
        results[1],
        Err(ToolErrorKind::InvalidArguments),
        "the schema rejects \"two\""
    );
    let items = results[2].clone().unwrap();
    let image = items
        .as_array()
        .and_then(|items| items.iter().find(|i| i["type"] == "image"))
        .cloned()
        .unwrap_or_else(|| panic!("an image item: {items}"));
    assert_eq!(image["mime_type"], "image/png");
    assert!(image["data"].as_str().unwrap().len() > 100);
    assert_eq!(results[3], Ok(json!("Echo: hi")));
    rt.shutdown().await;
}

#[tokio::test]
#[ignore = "needs npm packages: scripts/setup-mcp.sh"]
async fn stdio_included_tools_the_server_lacks_is_an_error_naming_what_it_offers() {
    let rt = helper_using(
        "everything",
        everything().include(["echo", "get-weather"]),
        script(vec![]),
    )
    .await;
    let error = rt.client("helper").unwrap().run("go", session("s")).await.unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, Error::Mcp(_)), "{text}");
    assert!(text.contains("get-weather") && text.contains("get-sum"), "{text}");
    rt.shutdown().await;
}

#[tokio::test]
#[ignore = "needs npm packages: scripts/setup-mcp.sh"]
async fn stdio_server_killed_mid_call_is_reported_and_restarted() {
    let model = script(vec![
        ("trigger-long-running-operation", json!({"duration": 30, "steps": 30})),
        ("echo", json!({"message": "after the restart"})),
    ]);
    let rt = helper_using("everything", everything(), model).await;
    let client = rt.mcp_client("everything").unwrap();
    let mut progress = client.progress();
    let handle = rt.client("helper").unwrap().start("go", session("s")).await.unwrap();
    // The long call is under way once the server reports progress: kill it then.
    progress.changed().await.unwrap();
    let pid = client.pid().await.expect("a stdio server has a pid");
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    let out = handle.wait().await.unwrap();
    let results = outcomes(&out);
    assert_eq!(
        results[0],
        Err(ToolErrorKind::Unavailable),
        "the crash is reported to the model"
    );
    assert_eq!(
        results[1],
        Ok(json!("Echo: after the restart")),
        "the next call restarts the server"
    );
    assert_ne!(client.pid().await, Some(pid));
    rt.shutdown().await;
}

/// A hung server: the server's own timeout (here longer than the runtime's
/// default tool timeout) decides, and the server is restarted.
#[tokio::test]
#[ignore = "needs npm packages: scripts/setup-mcp.sh"]
async fn stdio_server_that_hangs_times_out_on_its_own_timeout_and_is_restarted() {
    // Progress every 100 ms, so the call is seen under way before it times out.
    let model = script(vec![
        ("trigger-long-running-operation", json!({"duration": 30, "steps": 300})),
        ("echo", json!({"message": "after the restart"})),
    ]);
    let rt = Runtime::builder()
        .mcp_server("everything", everything().timeout(std::time::Duration::from_secs(1)))
        .agent(AgentSpec::new("helper").toolset("everything"))
        .model(model)
        .tool_timeout(std::time::Duration::from_millis(300))
        .in_memory()
        .build()
        .await
        .unwrap();
    let client = rt.mcp_client("everything").unwrap();
    let mut progress = client.progress();
    let handle = rt.client("helper").unwrap().start("go", session("s")).await.unwrap();
    progress.changed().await.unwrap();
    let pid = client.pid().await.expect("a stdio server has a pid");
    let out = handle.wait().await.unwrap();
    let ToolOutcome::Error(error) = &out.tool_executions[0].outcome else {
        panic!("the long call should time out: {:?}", out.tool_executions[0].outcome);
    };
    assert_eq!(error.kind, ToolErrorKind::Timeout);
    assert!(
        error.message.contains("within 1 s") && error.message.contains("restarted"),
        "{}",
        error.message
    );
    assert_eq!(outcomes(&out)[1], Ok(json!("Echo: after the restart")));
    assert_ne!(client.pid().await, Some(pid), "the hung server was replaced");
    rt.shutdown().await;
}

#[tokio::test]
#[ignore = "needs npm packages: scripts/setup-mcp.sh"]
async fn stdio_tools_are_remembered_for_replay_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("mcp.db");
    let build = |model: ScriptedModel| {
        Runtime::builder()
            .mcp_server("everything", everything().include(["echo"]).prefix("ev_"))
            .agent(AgentSpec::new("helper").toolset("everything"))
            .model(model)
            .sqlite(&db)
    };
    {
        let rt = build(script(vec![("ev_echo", json!({"message": "one"}))]))
            .build()
            .await
            .unwrap();
        let out = rt.client("helper").unwrap().run("go", session("s")).await.unwrap();
        assert_eq!(outcomes(&out), [Ok(json!("Echo: one"))]);
        rt.shutdown().await;
    }
    // A new process knows the server's tools before listing it again.
    let rt = build(script(vec![])).build().await.unwrap();
    assert_eq!(rt.tools_for("helper").unwrap()[0].name, "ev_echo");
    let events: Vec<_> = rt.subscribe("s", 1).take(15).map(|e| e.unwrap().kind).collect().await;
    assert!(
        events
            .iter()
            .any(|k| matches!(k, EventKind::ToolFinished { ok: true, .. })),
        "the replayed call is the successful one: {events:?}"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn a_server_that_will_not_start_is_an_error_quoting_its_stderr() {
    let broken = McpServerConfig::stdio("sh", ["-c", "echo 'BUSINESS_API_KEY is not set' >&2; exit 3"]);
    let rt = helper_using("business", broken, script(vec![])).await;
    let error = rt.client("helper").unwrap().run("hi", session("s")).await.unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("business") && text.contains("BUSINESS_API_KEY is not set"),
        "{text}"
    );
    // Restarts back off: an immediate retry is refused without starting it again.
    let again = rt
        .client("helper")
        .unwrap()
        .run("hi", session("t"))
        .await
        .unwrap_err()
        .to_string();
    assert!(again.contains("restarting"), "{again}");
}

// ----- streamable HTTP: an rmcp server written here -----

#[derive(Clone, Default)]
struct TestServer {
    grown: Arc<Mutex<bool>>,
}

fn schema(v: Value) -> Arc<rmcp::model::JsonObject> {
    Arc::new(v.as_object().cloned().unwrap())
}

impl TestServer {
    fn tools(&self) -> Vec<Tool> {
        let mut tools = vec![
            Tool::new(
                "add",
                "Adds two integers.",
                schema(
                    json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}),
                ),
            ),
            Tool::new("fail", "Always fails.", schema(json!({"type": "object"}))),
            Tool::new(
                "whoami",
                "Returns the idempotency key it was called with.",
                schema(json!({"type": "object"})),
            ),
            Tool::new("grow", "Adds a tool and says so.", schema(json!({"type": "object"}))),
        ];
        if *self.grown.lock().unwrap() {
            tools.push(Tool::new("extra", "Appeared later.", schema(json!({"type": "object"}))));
        }
        tools
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("test-server", "0.1.0"))
    }

    async fn list_tools(
        &self,
        _r: Option<PaginatedRequestParams>,
        _c: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.clone().unwrap_or_default();
        let result = match request.name.as_ref() {
            "add" => {
                let a = args
                    .get("a")
                    .and_then(Value::as_i64)
                    .ok_or_else(|| ErrorData::invalid_params("a", None))?;
                let b = args
                    .get("b")
                    .and_then(Value::as_i64)
                    .ok_or_else(|| ErrorData::invalid_params("b", None))?;
                CallToolResult::success(vec![ContentBlock::text((a + b).to_string())])
            }
            "fail" => CallToolResult::error(vec![ContentBlock::text("the backend said no")]),
            "whoami" => {
                let key = context.meta.get("idempotency_key").cloned().unwrap_or(Value::Null);
                CallToolResult::structured(json!({"idempotency_key": key}))
            }
            "grow" => {
                *self.grown.lock().unwrap() = true;
                notify(&context.peer).await;
                CallToolResult::success(vec![ContentBlock::text("grown")])
            }
            other => return Err(ErrorData::invalid_params(format!("unknown tool {other}"), None)),
        };
        Ok(result.into())
    }

    async fn on_initialized(&self, _context: NotificationContext<RoleServer>) {}
}

async fn notify(peer: &Peer<RoleServer>) {
    let _ = peer.notify_tool_list_changed().await;
}

/// Serves `server` on `addr` (port 0 for any); returns the address and the task.
/// An in-memory runtime with an agent `helper` whose toolset is `server`.
async fn helper_using(server: &str, config: McpServerConfig, model: ScriptedModel) -> Runtime {
    Runtime::builder()
        .mcp_server(server, config)
        .agent(AgentSpec::new("helper").toolset(server))
        .model(model)
        .in_memory()
        .build()
        .await
        .unwrap()
}

async fn serve_http(server: TestServer, addr: SocketAddr) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let local = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (local, task)
}

#[tokio::test]
async fn http_calls_errors_idempotency_keys_and_list_changed() {
    let server = TestServer::default();
    let (addr, _task) = serve_http(server, "127.0.0.1:0".parse().unwrap()).await;
    let model = script(vec![
        ("add", json!({"a": "2", "b": 40})),
        ("add", json!({"a": 1.5, "b": 1})),
        ("fail", json!({})),
        ("whoami", json!({})),
        ("grow", json!({})),
    ]);
    let rt = helper_using("remote", McpServerConfig::http(format!("http://{addr}/mcp")), model).await;
    let out = rt.client("helper").unwrap().run("go", session("s")).await.unwrap();
    let results = outcomes(&out);
    assert_eq!(results[0], Ok(json!("42")), "\"2\" coerced to an integer");
    assert_eq!(
        results[1],
        Err(ToolErrorKind::InvalidArguments),
        "1.5 is not an integer"
    );
    assert_eq!(results[2], Err(ToolErrorKind::Failed), "isError becomes a tool error");
    let ToolOutcome::Error(error) = &out.tool_executions[2].outcome else {
        unreachable!()
    };
    assert!(error.message.contains("the backend said no"));
    assert_eq!(
        results[3],
        Ok(json!({"idempotency_key": format!("s/{}/{}", out.run_id, out.tool_executions[3].call_id)})),
        "the idempotency key travels in _meta"
    );
    // `grow` made the server announce a new tool: the next run lists again.
    assert!(rt.tool_spec("extra").is_none());
    let _ = rt.client("helper").unwrap().run("again", session("t")).await;
    assert!(
        rt.tool_spec("extra").is_some(),
        "tools/list_changed refreshed the catalog"
    );
    rt.shutdown().await;
}

/// The test server in a thread of its own: stopping it is immediate and
/// synchronous (its runtime is dropped, every connection closes), and so is
/// starting it (the port is bound before `start` returns).
struct ServerThread {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerThread {
    fn start(addr: SocketAddr) -> (SocketAddr, Self) {
        let listener = std::net::TcpListener::bind(addr).unwrap();
        listener.set_nonblocking(true).unwrap();
        let local = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let server = TestServer::default();
                let service = StreamableHttpService::new(
                    move || Ok(server.clone()),
                    Arc::new(LocalSessionManager::default()),
                    StreamableHttpServerConfig::default(),
                );
                let app = axum::Router::new().nest_service("/mcp", service);
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                tokio::select! {
                    _ = axum::serve(listener, app) => {}
                    _ = stopped => {}
                }
            });
            rt.shutdown_timeout(std::time::Duration::ZERO);
        });
        (
            local,
            Self {
                stop: Some(stop),
                thread: Some(thread),
            },
        )
    }

    fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        self.stop();
    }
}

#[tokio::test]
async fn http_server_gone_mid_conversation_is_reported_then_reconnected() {
    let (addr, first) = ServerThread::start("127.0.0.1:0".parse().unwrap());
    let server = Arc::new(Mutex::new(Some(first)));
    let handle = server.clone();
    // The model: add; (server stopped) add -> reported; (server back) add -> ok.
    let calls = Arc::new(Mutex::new(0));
    let model = ScriptedModel::from_fn(move |_| {
        let mut n = calls.lock().unwrap();
        *n += 1;
        Ok(match *n {
            1 => ModelReply::tool_call("add", r#"{"a": 1, "b": 1}"#),
            2 => {
                if let Some(mut running) = handle.lock().unwrap().take() {
                    running.stop();
                }
                ModelReply::tool_call("add", r#"{"a": 2, "b": 2}"#)
            }
            3 => {
                *handle.lock().unwrap() = Some(ServerThread::start(addr).1);
                ModelReply::tool_call("add", r#"{"a": 3, "b": 3}"#)
            }
            _ => ModelReply::text("done"),
        })
    });
    let rt = helper_using("remote", McpServerConfig::http(format!("http://{addr}/mcp")), model).await;
    let out = rt.client("helper").unwrap().run("go", session("s")).await.unwrap();
    let results = outcomes(&out);
    assert_eq!(results[0], Ok(json!("2")));
    assert_eq!(
        results[1],
        Err(ToolErrorKind::Unavailable),
        "the stopped server is reported"
    );
    assert_eq!(results[2], Ok(json!("6")), "the next call reconnects");
    rt.shutdown().await;
    drop(server.lock().unwrap().take());
}

// ----- concierge as an MCP server -----

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// Adds two integers.
#[tool(read_only)]
async fn add(args: AddArgs, cx: ToolContext) -> Result<Value, String> {
    Ok(json!({"sum": args.a + args.b, "key": cx.idempotency_key.as_str()}))
}

#[tokio::test]
async fn concierges_own_mcp_server_lists_and_runs_tools_and_agents() {
    let rules = concierge::Rules::new()
        .route(concierge::Route::tool("add", json!({"a": "{a}", "b": "{b}"})).pattern(r"(?P<a>\d+)\s*\+\s*(?P<b>\d+)"))
        .answer("the sum is {result.sum}");
    let rt = Runtime::builder()
        .tool(Add)
        .agent(
            AgentSpec::new("adder")
                .description("Adds numbers.")
                .tool("add")
                .rules(rules),
        )
        .in_memory()
        .build()
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = ConciergeMcp::new(rt.clone()).router();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    let transport = StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(format!(
        "http://{addr}/mcp"
    )));
    let client = ().serve(transport).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["add", "ask_adder"]);
    assert_eq!(tools[0].input_schema["required"], json!(["a", "b"]));
    assert_eq!(tools[0].annotations.as_ref().and_then(|a| a.read_only_hint), Some(true));

    let mut params = CallToolRequestParams::new("add").with_arguments(rmcp::object!({"a": "2", "b": 3}));
    let mut meta = rmcp::model::RequestMetaObject::new();
    meta.insert("idempotency_key".to_string(), json!("client-key-1"));
    params.meta = Some(meta);
    let result = client.call_tool(params).await.unwrap();
    assert_ne!(result.is_error, Some(true));
    assert_eq!(
        result.structured_content,
        Some(json!({"sum": 5, "key": "client-key-1"}))
    );

    let bad = client
        .call_tool(CallToolRequestParams::new("add").with_arguments(rmcp::object!({"a": "x"})))
        .await
        .unwrap();
    assert_eq!(bad.is_error, Some(true), "a rejected call is a tool error");

    let asked = client
        .call_tool(
            CallToolRequestParams::new("ask_adder")
                .with_arguments(rmcp::object!({"message": "20 + 22", "session_id": "mcp-s"})),
        )
        .await
        .unwrap();
    let text: String = asked
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    assert_eq!(text, "the sum is 42");
    assert_eq!(asked.structured_content.as_ref().unwrap()["session_id"], "mcp-s");
    assert_eq!(rt.history("mcp-s").await.unwrap().len(), 4, "the agent ran a full turn");
    let _ = client.cancel().await;
}
