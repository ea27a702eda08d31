//! MCP against real servers, on any engine: `@modelcontextprotocol/server-everything`
//! and `@modelcontextprotocol/server-memory` from npm over stdio
//! (`scripts/setup-mcp.sh` installs them into node_modules), an rmcp server
//! over streamable HTTP written here, and a small Python stdio server for
//! what well-behaved servers never do (answers too large for one message,
//! a protocol version nobody speaks). concierge's own MCP server is tested
//! in the concierge-server crate.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use concierge::mcp::{MAX_MESSAGE_BYTES, MAX_RESULT_BYTES, McpServerConfig};
use concierge::model::ScriptedModel;
use concierge::{
    AgentSpec, Error, IdempotencyKey, ModelReply, RunOptions, RunStatus, Runtime, ToolErrorKind, ToolOutcome,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};
use serde_json::{Value, json};
use tokio::sync::Notify;

use super::{EngineUnderTest, OnEngine};

pub fn npm_server(package: &str) -> String {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(
        script.exists(),
        "{package} is not installed: run scripts/setup-mcp.sh (it installs into node_modules)"
    );
    script.to_string_lossy().to_string()
}

pub fn everything() -> McpServerConfig {
    McpServerConfig::stdio("node", [npm_server("server-everything"), "stdio".to_string()])
}

/// server-memory, keeping its knowledge graph in `dir`.
fn memory(dir: &std::path::Path) -> McpServerConfig {
    McpServerConfig::stdio("node", [npm_server("server-memory")])
        .env("MEMORY_FILE_PATH", dir.join("memory.jsonl").to_string_lossy())
}

pub fn session(id: &str) -> RunOptions {
    RunOptions::new().session_id(id)
}

pub fn outcomes(out: &concierge::RunOutput) -> Vec<Result<Value, ToolErrorKind>> {
    out.tool_executions
        .iter()
        .map(|e| match &e.outcome {
            ToolOutcome::Ok(v) => Ok(v.clone()),
            ToolOutcome::Error(err) => Err(err.kind),
        })
        .collect()
}

/// Replies with the given tool calls, one per model call, then with "done".
pub fn script(calls: Vec<(&str, Value)>) -> ScriptedModel {
    let mut model = ScriptedModel::new();
    for (name, args) in calls {
        model = model.reply(ModelReply::tool_call(name, args.to_string()));
    }
    model.reply(ModelReply::text("done"))
}

// ----- stdio: @modelcontextprotocol/server-everything -----

pub async fn stdio_discovery_filtering_coercion_rejection_and_content(engine: &EngineUnderTest) {
    let model = script(vec![
        ("get-sum", json!({"a": "2", "b": 3})),
        ("get-sum", json!({"a": "a couple", "b": 3})),
        ("get-tiny-image", json!({})),
        ("echo", json!({"message": "hi"})),
    ]);
    let rt = helper_using(
        engine,
        "everything",
        everything().include(["echo", "get-sum", "get-tiny-image"]),
        model,
    )
    .await;
    // (The server starts in the background when the runtime opens; the run
    // waits for its tools if they are not listed yet.)
    let out = rt.client("helper").unwrap().run("go", session("s")).await.unwrap();
    let catalog = rt.catalog();
    let names: Vec<String> = catalog
        .tools_for(&"helper".into())
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(
        names,
        ["echo", "get-sum", "get-tiny-image"],
        "included_tools keeps three"
    );
    let schema = &catalog.tool(&"get-sum".into()).unwrap().input_schema;
    assert_eq!(schema["properties"]["a"]["type"], "number");
    assert!(
        catalog.tool(&"echo".into()).unwrap().annotations.read_only,
        "readOnlyHint maps onto read_only"
    );

    let results = outcomes(&out);
    assert_eq!(results.len(), 4);
    let sum = results[0].clone().unwrap();
    assert!(sum.as_str().unwrap().contains('5'), "\"2\" was coerced to 2: {sum}");
    assert_eq!(
        results[1],
        Err(ToolErrorKind::InvalidArguments),
        "the schema rejects \"a couple\""
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

pub async fn stdio_included_tools_the_server_lacks_is_an_error_naming_what_it_offers(engine: &EngineUnderTest) {
    let rt = helper_using(
        engine,
        "everything",
        everything().include(["echo", "get-weather"]),
        script(vec![]),
    )
    .await;
    let error = rt.client("helper").unwrap().run("go", session("s")).await.unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, Error::ToolsUnavailable { .. }), "{text}");
    assert!(text.contains("get-weather") && text.contains("get-sum"), "{text}");
    rt.shutdown().await;
}

pub async fn stdio_server_killed_mid_call_is_reported_and_restarted(engine: &EngineUnderTest) {
    let model = script(vec![
        ("trigger-long-running-operation", json!({"duration": 30, "steps": 30})),
        ("echo", json!({"message": "after the restart"})),
    ]);
    let rt = helper_using(engine, "everything", everything(), model).await;
    let client = rt.mcp_client("everything").unwrap();
    let mut progress = client.progress();
    let handle = rt.client("helper").unwrap().start("go", session("s")).await.unwrap();
    // The long call is under way once the server reports progress: kill it then.
    progress.recv().await.unwrap();
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

/// A hung server (a long call that reports no progress): the server's own
/// timeout (here longer than the runtime's default tool timeout) decides,
/// and the server is restarted.
pub async fn stdio_server_that_hangs_times_out_on_its_own_timeout_and_is_restarted(engine: &EngineUnderTest) {
    // One step of 30 s: no progress before the end.
    let model = script(vec![
        ("trigger-long-running-operation", json!({"duration": 30, "steps": 1})),
        ("echo", json!({"message": "after the restart"})),
    ]);
    let rt = Runtime::builder()
        .mcp_server("everything", everything().timeout(std::time::Duration::from_secs(1)))
        .agent(AgentSpec::new("helper").toolset("everything"))
        .model(model)
        .tool_timeout(std::time::Duration::from_millis(300))
        .on_engine(engine)
        .build()
        .await
        .unwrap();
    rt.discover("everything").await.unwrap();
    let client = rt.mcp_client("everything").unwrap();
    let pid = client.pid().await.expect("a stdio server has a pid");
    let out = rt.client("helper").unwrap().run("go", session("s")).await.unwrap();
    let ToolOutcome::Error(error) = &out.tool_executions[0].outcome else {
        panic!("the long call should time out: {:?}", out.tool_executions[0].outcome);
    };
    assert_eq!(error.kind, ToolErrorKind::Timeout);
    assert!(
        error.message.contains("within 1 s")
            && error.message.contains("cancelled")
            && error.message.contains("restarted"),
        "{}",
        error.message
    );
    assert_eq!(outcomes(&out)[1], Ok(json!("Echo: after the restart")));
    assert_ne!(client.pid().await, Some(pid), "the hung server was replaced");
    rt.shutdown().await;
}

/// Progress keeps a call alive: 3 s of work reporting every 200 ms fits in
/// a timeout of 1 s, and the reports reach subscribers.
pub async fn stdio_progress_extends_a_calls_timeout_and_is_reported(engine: &EngineUnderTest) {
    let model = script(vec![(
        "trigger-long-running-operation",
        json!({"duration": 3, "steps": 15}),
    )]);
    let rt = helper_using(
        engine,
        "everything",
        everything().timeout(std::time::Duration::from_secs(1)),
        model,
    )
    .await;
    let mut progress = rt.mcp_client("everything").unwrap().progress();
    let out = rt.client("helper").unwrap().run("go", session("s")).await.unwrap();
    let done = outcomes(&out)[0].clone().unwrap();
    assert!(done.as_str().unwrap().contains("completed"), "{done}");
    let mut reports = Vec::new();
    while let Ok(report) = progress.try_recv() {
        reports.push(report);
    }
    assert_eq!(reports.len(), 15, "{reports:?}");
    assert_eq!(reports[14].tool, "trigger-long-running-operation");
    assert_eq!(reports[14].server, "everything");
    assert_eq!((reports[14].progress, reports[14].total), (15.0, Some(15.0)));
    rt.shutdown().await;
}

// ----- confirmation: server-memory's annotations -----

pub async fn stdio_destructive_tools_ask_first_unless_read_only_or_the_server_is_trusted(engine: &EngineUnderTest) {
    let dir = tempfile::tempdir().unwrap();
    let entity = json!({"entities": [{"name": "Ada", "entityType": "person", "observations": ["writes programs"]}]});
    let model = script(vec![
        ("create_entities", entity.clone()),
        ("read_graph", json!({})),
        ("delete_entities", json!({"entityNames": ["Ada"]})),
    ]);
    let rt = helper_using(engine, "memory", memory(dir.path()), model).await;
    let out = rt.client("helper").unwrap().run("go", session("s")).await.unwrap();
    assert_eq!(
        out.status,
        RunStatus::AwaitingConfirmation,
        "delete_entities (destructiveHint) waits for a person: {out:?}"
    );
    assert_eq!(out.pending_confirmation.as_ref().unwrap().tool, "delete_entities");
    let results = outcomes(&out);
    assert_eq!(
        results.len(),
        2,
        "create_entities (destructiveHint: false) and read_graph (readOnlyHint) ran unasked"
    );
    let graph = results[1].clone().unwrap();
    assert!(graph.to_string().contains("Ada"), "{graph}");
    let catalog = rt.catalog();
    let spec = catalog.tool(&"delete_entities".into()).unwrap();
    assert!(spec.annotations.destructive && spec.annotations.requires_confirmation);
    rt.shutdown().await;

    // A trusted server's destructive tool runs without asking.
    let model = script(vec![
        ("delete_entities", json!({"entityNames": ["Ada"]})),
        ("read_graph", json!({})),
    ]);
    let rt = helper_using(engine, "memory", memory(dir.path()).trusted(), model).await;
    let out = rt.client("helper").unwrap().run("go", session("s")).await.unwrap();
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    let results = outcomes(&out);
    assert!(results[0].is_ok(), "{results:?}");
    assert!(
        !results[1].clone().unwrap().to_string().contains("Ada"),
        "the graph was wiped: {results:?}"
    );
    rt.shutdown().await;
}

pub async fn a_server_that_will_not_start_is_an_error_quoting_its_stderr(engine: &EngineUnderTest) {
    let broken = McpServerConfig::stdio("sh", ["-c", "echo 'BUSINESS_API_KEY is not set' >&2; exit 3"]);
    let rt = helper_using(engine, "business", broken, script(vec![])).await;
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
    /// `hang` has started.
    hanging: Arc<Notify>,
    /// `hang` was cancelled by the client.
    cancelled: Arc<Notify>,
}

fn schema(v: Value) -> Arc<rmcp::model::JsonObject> {
    Arc::new(v.as_object().cloned().unwrap())
}

impl TestServer {
    fn tools(&self) -> Vec<Tool> {
        let read_only = || ToolAnnotations::new().read_only(true);
        let object = || schema(json!({"type": "object"}));
        let mut tools = vec![
            Tool::new(
                "add",
                "Adds two integers.",
                schema(
                    json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}),
                ),
            )
            .with_annotations(read_only()),
            Tool::new("fail", "Always fails.", object()).with_annotations(read_only()),
            Tool::new("whoami", "Returns the idempotency key it was called with.", object())
                .with_annotations(read_only()),
            Tool::new("grow", "Adds a tool and says so.", object())
                .with_annotations(ToolAnnotations::new().destructive(false)),
            Tool::new("forget", "Forgets everything (says nothing about its effects).", object()),
            Tool::new("hang", "Never answers; notices when cancelled.", object()).with_annotations(read_only()),
            Tool::new("big", "Rows as structured content, and a summary.", object()).with_annotations(read_only()),
            Tool::new("bigger", "Rows as structured content only.", object()).with_annotations(read_only()),
            Tool::new("huge", "An answer of 20 000 bytes and more.", object()).with_annotations(read_only()),
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
            "forget" => CallToolResult::success(vec![ContentBlock::text("forgotten")]),
            "hang" => {
                self.hanging.notify_one();
                context.ct.cancelled().await;
                self.cancelled.notify_one();
                return Err(ErrorData::internal_error("cancelled", None));
            }
            "big" | "bigger" => {
                let rows: Vec<Value> = (0..2000).map(|i| json!({"row": i, "text": "some data"})).collect();
                let text = if request.name == "big" {
                    vec![ContentBlock::text("2000 rows")]
                } else {
                    vec![]
                };
                let mut result = CallToolResult::success(text);
                result.structured_content = Some(json!({"rows": rows}));
                result
            }
            "huge" => CallToolResult::success(vec![ContentBlock::text("x".repeat(20_000))]),
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
/// A runtime on the engine under test with an agent `helper` whose toolset is `server`.
async fn helper_using(
    engine: &EngineUnderTest,
    server: &str,
    config: McpServerConfig,
    model: ScriptedModel,
) -> Runtime {
    Runtime::builder()
        .mcp_server(server, config)
        .agent(AgentSpec::new("helper").toolset(server))
        .model(model)
        .on_engine(engine)
        .build()
        .await
        .unwrap()
}

async fn serve_http(server: TestServer, addr: SocketAddr) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    serve_http_with(server, addr, StreamableHttpServerConfig::default()).await
}

/// [`serve_http`] with the server's transport configured by `config`.
async fn serve_http_with(
    server: TestServer,
    addr: SocketAddr,
    config: StreamableHttpServerConfig,
) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let local = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (local, task)
}

pub async fn http_calls_errors_idempotency_keys_and_list_changed(engine: &EngineUnderTest) {
    let server = TestServer::default();
    let (addr, _task) = serve_http(server, "127.0.0.1:0".parse().unwrap()).await;
    let model = script(vec![
        ("add", json!({"a": "2", "b": 40})),
        ("add", json!({"a": 1.5, "b": 1})),
        ("fail", json!({})),
        ("whoami", json!({})),
        ("grow", json!({})),
    ]);
    let rt = helper_using(
        engine,
        "remote",
        McpServerConfig::http(format!("http://{addr}/mcp")),
        model,
    )
    .await;
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
    // `grow` made the server announce a new tool: its list is read again
    // (in the background as soon as the server says so, before the next run
    // at the latest).
    let _ = rt.client("helper").unwrap().run("again", session("t")).await;
    assert!(
        rt.catalog().tool(&"extra".into()).is_some(),
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

pub async fn http_server_gone_mid_conversation_is_reported_then_reconnected(engine: &EngineUnderTest) {
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
    let rt = helper_using(
        engine,
        "remote",
        McpServerConfig::http(format!("http://{addr}/mcp")),
        model,
    )
    .await;
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

pub async fn http_a_tool_without_annotations_asks_first_and_a_read_only_one_does_not(engine: &EngineUnderTest) {
    let (addr, _task) = serve_http(TestServer::default(), "127.0.0.1:0".parse().unwrap()).await;
    let model = script(vec![("add", json!({"a": 1, "b": 2})), ("forget", json!({}))]);
    let rt = helper_using(
        engine,
        "remote",
        McpServerConfig::http(format!("http://{addr}/mcp")),
        model,
    )
    .await;
    let out = rt.client("helper").unwrap().run("go", session("s")).await.unwrap();
    assert_eq!(outcomes(&out), [Ok(json!("3"))], "add (readOnlyHint) ran unasked");
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    assert_eq!(out.pending_confirmation.as_ref().unwrap().tool, "forget");
    let catalog = rt.catalog();
    let spec = catalog.tool(&"forget".into()).unwrap();
    assert!(spec.annotations.destructive && !spec.annotations.read_only && !spec.annotations.idempotent);
    rt.shutdown().await;
}

pub async fn http_a_call_that_times_out_is_cancelled_on_the_server(engine: &EngineUnderTest) {
    let server = TestServer::default();
    let (addr, _task) = serve_http(server.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let config = McpServerConfig::http(format!("http://{addr}/mcp")).timeout(std::time::Duration::from_secs(1));
    let rt = helper_using(engine, "remote", config, script(vec![("hang", json!({}))])).await;
    let out = rt.client("helper").unwrap().run("go", session("s")).await.unwrap();
    let ToolOutcome::Error(error) = &out.tool_executions[0].outcome else {
        panic!("hang should time out: {:?}", out.tool_executions[0].outcome);
    };
    assert_eq!(error.kind, ToolErrorKind::Timeout);
    assert!(
        error.message.contains("hang") && error.message.contains("cancelled"),
        "{}",
        error.message
    );
    // The server saw notifications/cancelled for the call.
    server.cancelled.notified().await;
    rt.shutdown().await;
}

pub async fn http_a_call_whose_caller_stops_waiting_is_cancelled_on_the_server(engine: &EngineUnderTest) {
    let server = TestServer::default();
    let (addr, _task) = serve_http(server.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let rt = helper_using(
        engine,
        "remote",
        McpServerConfig::http(format!("http://{addr}/mcp")),
        script(vec![]),
    )
    .await;
    rt.discover("remote").await.unwrap();
    let client = rt.mcp_client("remote").unwrap();
    let key = IdempotencyKey::given("k");
    tokio::select! {
        result = client.call("hang", Default::default(), &key) => panic!("hang answered: {result:?}"),
        () = server.hanging.notified() => {}
    }
    // The call's future is dropped: the server is told.
    server.cancelled.notified().await;
    rt.shutdown().await;
}

pub async fn http_structured_content_counts_against_the_result_limit(engine: &EngineUnderTest) {
    let (addr, _task) = serve_http(TestServer::default(), "127.0.0.1:0".parse().unwrap()).await;
    let model = script(vec![("big", json!({})), ("bigger", json!({}))]);
    let rt = helper_using(
        engine,
        "remote",
        McpServerConfig::http(format!("http://{addr}/mcp")),
        model,
    )
    .await;
    let out = rt.client("helper").unwrap().run("go", session("s")).await.unwrap();
    let results = outcomes(&out);
    assert_eq!(
        results[0],
        Ok(json!("2000 rows")),
        "the text stands in for structured content too large"
    );
    let cut = results[1].clone().unwrap();
    assert!(cut.to_string().len() <= MAX_RESULT_BYTES, "{}", cut.to_string().len());
    assert_eq!(cut["truncated"], true);
    assert!(cut["note"].as_str().unwrap().contains("over the 16 KiB limit"), "{cut}");
    assert!(cut["beginning"].as_str().unwrap().starts_with("{\"rows\":[{"), "{cut}");
    rt.shutdown().await;
}

/// Over HTTP, an answer over the server's message limit fails its call at
/// once as too large (not on a timeout), and the connection serves the next
/// call: answered as an SSE event (the default) or as a JSON body.
pub async fn http_an_answer_over_the_message_limit_is_reported_as_too_large_not_as_a_timeout(engine: &EngineUnderTest) {
    let json = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true);
    for (how, server_config) in [("sse", StreamableHttpServerConfig::default()), ("json", json)] {
        let (addr, _task) = serve_http_with(TestServer::default(), "127.0.0.1:0".parse().unwrap(), server_config).await;
        let config = McpServerConfig::http(format!("http://{addr}/mcp")).max_message_bytes(8192);
        let model = script(vec![("huge", json!({})), ("add", json!({"a": 1, "b": 2}))]);
        let rt = helper_using(engine, "remote", config, model).await;
        let out = rt.client("helper").unwrap().run("go", session("s")).await.unwrap();
        let ToolOutcome::Error(error) = &out.tool_executions[0].outcome else {
            panic!("{how}: huge should fail: {:?}", out.tool_executions[0].outcome);
        };
        assert_eq!(error.kind, ToolErrorKind::Failed, "{how}: {}", error.message);
        assert!(
            error.message.contains("too large")
                && error.message.contains("8192 bytes")
                && error.message.contains("may have run"),
            "{how}: {}",
            error.message
        );
        // An event is cut off at the limit; a JSON body is read whole, so its size is known.
        let size_known = error.message.contains("bytes or more, over the limit");
        assert_eq!(size_known, how == "json", "{how}: {}", error.message);
        assert_eq!(outcomes(&out)[1], Ok(json!("3")), "{how}: the connection is still good");
        // The same client, called directly, still answers.
        let client = rt.mcp_client("remote").unwrap();
        let mut args = rmcp::model::JsonObject::new();
        args.insert("a".into(), json!(2));
        args.insert("b".into(), json!(2));
        let answer = client.call("add", args, &IdempotencyKey::given("k")).await;
        assert_eq!(answer, Ok(json!("4")), "{how}");
        rt.shutdown().await;
    }
}

// ----- stdio: a small Python server for what good servers never do -----

/// A stdio MCP server in Python that answers `initialize` with the protocol
/// version `version`, and offers `huge` (an answer over the message size
/// limit, with its id last, as the TypeScript SDK writes it) and `small`.
fn python_server(dir: &std::path::Path, version: &str) -> McpServerConfig {
    let script = dir.join("server.py");
    std::fs::write(
        &script,
        format!(
            r#"import json, sys
def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
tool = {{"inputSchema": {{"type": "object"}}, "annotations": {{"readOnlyHint": True}}}}
for line in sys.stdin:
    message = json.loads(line)
    method, id = message.get("method"), message.get("id")
    if id is None:
        continue
    if method == "initialize":
        send({{"jsonrpc": "2.0", "id": id, "result": {{"protocolVersion": "{version}", "capabilities": {{"tools": {{}}}}, "serverInfo": {{"name": "py", "version": "1"}}}}}})
    elif method == "tools/list":
        send({{"jsonrpc": "2.0", "id": id, "result": {{"tools": [dict(tool, name="huge"), dict(tool, name="small")]}}}})
    elif method == "tools/call" and message["params"]["name"] == "huge":
        text = "x" * ({MAX_MESSAGE_BYTES} + 1000)
        sys.stdout.write('{{"result":{{"content":[{{"type":"text","text":"' + text + '"}}]}},"jsonrpc":"2.0","id":' + json.dumps(id) + '}}\n')
        sys.stdout.flush()
    elif method == "tools/call":
        send({{"jsonrpc": "2.0", "id": id, "result": {{"content": [{{"type": "text", "text": "ok"}}]}}}})
    else:
        send({{"jsonrpc": "2.0", "id": id, "error": {{"code": -32601, "message": "no " + str(method)}}}})
"#
        ),
    )
    .unwrap();
    McpServerConfig::stdio("python3", [script.to_string_lossy().to_string()])
}

pub async fn stdio_an_answer_over_the_message_limit_is_reported_as_too_large_not_as_a_timeout(
    engine: &EngineUnderTest,
) {
    let dir = tempfile::tempdir().unwrap();
    let model = script(vec![("huge", json!({})), ("small", json!({}))]);
    let rt = helper_using(engine, "py", python_server(dir.path(), "2025-06-18"), model).await;
    let out = rt.client("helper").unwrap().run("go", session("s")).await.unwrap();
    let ToolOutcome::Error(error) = &out.tool_executions[0].outcome else {
        panic!("huge should fail: {:?}", out.tool_executions[0].outcome);
    };
    assert_eq!(error.kind, ToolErrorKind::Failed, "{}", error.message);
    assert!(
        error.message.contains("too large") && error.message.contains("may have run"),
        "{}",
        error.message
    );
    assert_eq!(outcomes(&out)[1], Ok(json!("ok")), "the connection is still good");
    rt.shutdown().await;
}

pub async fn a_server_answering_an_unsupported_protocol_version_is_refused(engine: &EngineUnderTest) {
    let dir = tempfile::tempdir().unwrap();
    let rt = helper_using(engine, "py", python_server(dir.path(), "1999-01-01"), script(vec![])).await;
    let error = rt.client("helper").unwrap().run("go", session("s")).await.unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, Error::ToolsUnavailable { .. }), "{text}");
    assert!(
        text.contains("py")
            && text.contains("1999-01-01")
            && text.contains("2025-06-18")
            && text.contains("2025-11-25"),
        "{text}"
    );
    // A version it speaks is accepted.
    let rt = helper_using(
        engine,
        "py",
        python_server(dir.path(), "2025-06-18"),
        script(vec![("small", json!({}))]),
    )
    .await;
    let out = rt.client("helper").unwrap().run("go", session("s")).await.unwrap();
    assert_eq!(outcomes(&out), [Ok(json!("ok"))]);
    rt.shutdown().await;
}
