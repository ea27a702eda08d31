//! The orders goal of the assistant (`examples/assistant/agents/orders.toml`)
//! with the real `concierge-orders` server behind it: the assistant's runtime
//! as `concierge` builds it in `examples/assistant/` (every goal file, the
//! demo toolsets), conversations through the hub from a first message that
//! names no agent, on rules and with a scripted model, the rows checked in
//! the server's SQLite file afterwards. Also: a tool the server adds reaches
//! the goal with no change to the goal file or concierge, `included_tools`
//! naming a tool the server lacks is an error listing what it offers, and a
//! concierge process killed inside `UpdateOrderStatus` changes the order once.
//!
//! The goal file names the program `concierge-orders` (the one beside
//! `concierge`, else on PATH); here the server is the binary this crate
//! built (the same program), named by its path.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;

use concierge::config::{Config, load_agents};
use concierge::engine::{ExecHooks, ToolCallInfo};
use concierge::mcp::McpServerConfig;
use concierge::model::ScriptedModel;
use concierge::{AgentSpec, Error, ModelReply, RunOptions, RunOutput, RunStatus, Runtime, ToolOutcome};
use concierge_orders::{OrderStatus, OrderStore};

const BIN: &str = env!("CARGO_BIN_EXE_concierge-orders");
const TODAY: &str = "2025-03-05";

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/assistant")
}

/// The assistant's agents (every directory its concierge.toml names) and
/// the MCP servers their files declare.
fn assistant() -> (Config, Vec<AgentSpec>, Vec<(String, McpServerConfig)>) {
    let config = Config::load(&example().join("concierge.toml"), true).unwrap();
    let mut dirs: Vec<PathBuf> = config.agents_dir.iter().cloned().collect();
    dirs.extend(config.agents_dirs.iter().cloned());
    let (mut agents, mut servers) = (Vec::new(), Vec::new());
    for dir in dirs {
        let files = load_agents(&dir).unwrap();
        agents.extend(files.agents);
        servers.extend(files.mcp_servers);
    }
    (config, agents, servers)
}

/// The goal file's server, run as the binary this crate built, on `db`.
fn deployed(server: McpServerConfig, db: &Path, preview: bool) -> McpServerConfig {
    let mut server = McpServerConfig {
        command: Some(BIN.to_string()),
        args: Vec::new(),
        ..server
    }
    .env("CONCIERGE_ORDERS_DB", db.to_string_lossy())
    .env("CONCIERGE_ORDERS_TODAY", TODAY);
    server = server.env("CONCIERGE_ORDERS_PREVIEW", if preview { "1" } else { "0" });
    server
}

struct Fixture {
    rt: Runtime,
    store: OrderStore,
    agent: AgentSpec,
}

struct Setup<'a> {
    dir: &'a Path,
    model: Option<ScriptedModel>,
    preview: bool,
    included: Option<Vec<&'static str>>,
    hooks: Option<Arc<dyn ExecHooks>>,
}

impl<'a> Setup<'a> {
    fn new(dir: &'a Path) -> Self {
        Self {
            dir,
            model: None,
            preview: false,
            included: None,
            hooks: None,
        }
    }

    async fn build(self) -> Result<Fixture, Error> {
        let (config, agents, servers) = assistant();
        let agent = agents.iter().find(|a| a.id.as_str() == "orders").unwrap().clone();
        let db = self.dir.join("orders.db");
        let mut builder =
            concierge_demo::install(Runtime::builder().sqlite(self.dir.join("concierge.db"))).agents(agents);
        for (name, server) in servers {
            let server = if name == "orders" {
                let mut server = deployed(server, &db, self.preview);
                if let Some(included) = &self.included {
                    server = server.include(included.clone());
                }
                server
            } else {
                server
            };
            builder = builder.mcp_server(name, server);
        }
        let mut builder = config.apply_hub(builder);
        if let Some(model) = self.model {
            builder = builder.model(model);
        }
        if let Some(hooks) = self.hooks {
            builder = builder.hooks(hooks);
        }
        Ok(Fixture {
            rt: builder.build().await?,
            store: OrderStore::open(db),
            agent,
        })
    }
}

async fn say(fx: &Fixture, session: &str, text: &str) -> RunOutput {
    fx.rt.send(text, RunOptions::new().session_id(session)).await.unwrap()
}

fn tool_names(fx: &Fixture) -> Vec<String> {
    fx.rt
        .catalog()
        .tools_for(&"orders".into())
        .iter()
        .map(|t| t.name.to_string())
        .filter(|name| !name.starts_with("transfer_to_") && name != "goal_complete")
        .collect()
}

// ------------------------------------------------------------------ rules, through the hub

#[tokio::test]
async fn the_goal_file_only_names_the_server() {
    let (_, agents, servers) = assistant();
    let orders = agents.iter().find(|a| a.id.as_str() == "orders").unwrap();
    assert!(orders.tools.is_empty(), "no tool is listed by name");
    assert_eq!(orders.toolsets, ["orders"]);
    let (_, server) = servers.iter().find(|(name, _)| name == "orders").unwrap();
    assert_eq!(
        server.command.as_deref(),
        Some("concierge-orders"),
        "the built program, not cargo"
    );
    assert!(server.args.is_empty());
    assert_eq!(server.cwd.as_deref(), Some(example().join("agents/..").as_path()));
    assert!(server.included_tools.is_none(), "the whole server");
}

#[tokio::test]
async fn hub_rules_where_is_my_order() {
    let dir = tempfile::tempdir().unwrap();
    let fx = Setup::new(dir.path()).build().await.unwrap();
    let out = say(&fx, "h1", "where is my order 1001?").await;
    assert_eq!(out.agent.as_str(), "orders", "the hub routed by the goal's intents");
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(
        out.reply.as_deref(),
        Some(
            "Order 1001 (placed 2025-02-28 by Maya Chen) is shipped: Trail running shoes, Wool socks (3 pack), \
             $107.50 in all. It shipped on 2025-03-02 with Parcel Express (tracking PX41001US); last seen \
             2025-03-03 22:05 at Salt Lake City, UT sorting hub (departed sorting hub). It is expected on 2025-03-07."
        )
    );
    assert!(fx.rt.catalog().tool(&"GetOrder".into()).unwrap().annotations.read_only);
    // A follow-up stays with the goal: tracking and a customer's orders.
    let out = say(&fx, "h1", "track package PX41006US").await;
    assert!(
        out.reply
            .as_deref()
            .unwrap()
            .starts_with("Package PX41006US (order 1006) is in transit."),
        "{out:?}"
    );
    let out = say(&fx, "h1", "show the orders of lena.fischer@example.com").await;
    assert_eq!(
        out.reply.as_deref(),
        Some(
            "Lena Fischer has 2 orders: Order 1006 placed 2025-03-01: shipped, 1 item, $199.00; \
             Order 1007 placed 2025-02-13: cancelled, 1 item, $55.00."
        )
    );
    let out = say(&fx, "h1", "where is my order 42?").await;
    assert_eq!(
        out.reply.as_deref(),
        Some("I could not do that: There is no order 42; order numbers look like 1001.")
    );
    assert_eq!(fx.store.db().applied_count().unwrap(), 0, "lookups change nothing");
    fx.rt.shutdown().await;
}

#[tokio::test]
async fn hub_rules_cancel_an_order_after_yes() {
    let dir = tempfile::tempdir().unwrap();
    let fx = Setup::new(dir.path()).build().await.unwrap();
    let out = say(&fx, "h1", "please cancel order 1004").await;
    assert_eq!(out.agent.as_str(), "orders");
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    let pending = out.pending_confirmation.as_ref().unwrap();
    assert_eq!(pending.tool.as_str(), "UpdateOrderStatus");
    assert_eq!(
        pending.message, "Run *update order status* with Order number: 1004, New status: cancelled? (yes/no)",
        "the schema's titles make the question readable"
    );
    assert_eq!(
        fx.store.order(1004).unwrap().unwrap().status,
        OrderStatus::Pending,
        "not before yes"
    );
    let out = say(&fx, "h1", "yes").await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(
        out.reply.as_deref(),
        Some("Order 1004 is now cancelled (it was pending).")
    );
    assert_eq!(fx.store.order(1004).unwrap().unwrap().status, OrderStatus::Cancelled);
    let changes = fx.store.status_changes(1004).unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(
        (changes[0].from, changes[0].to),
        (OrderStatus::Pending, OrderStatus::Cancelled)
    );
    assert_eq!(
        fx.store.db().applied_count().unwrap(),
        1,
        "recorded under concierge's idempotency key"
    );
    // A declined change changes nothing.
    let out = say(&fx, "h2", "cancel order 1002").await;
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    say(&fx, "h2", "no").await;
    assert_eq!(fx.store.order(1002).unwrap().unwrap().status, OrderStatus::Processing);
    fx.rt.shutdown().await;
}

// ------------------------------------------------------------------ a scripted model

#[tokio::test]
async fn hub_model_looks_up_then_ships_an_order_after_yes() {
    let model = ScriptedModel::new()
        // A string where the schema says integer: coerced before the call.
        .reply(ModelReply::tool_call("GetOrder", r#"{"order_id": "1002"}"#))
        .reply(ModelReply::text(
            "Order 1002 is being packed: two insulated water bottles, $48.00.",
        ))
        .reply(ModelReply::tool_call(
            "UpdateOrderStatus",
            r#"{"order_id": 1002, "status": "shipped", "note": "left the warehouse"}"#,
        ))
        .reply(ModelReply::text(
            "Order 1002 is shipped; its tracking number is PX41002US.",
        ));
    let dir = tempfile::tempdir().unwrap();
    let fx = Setup::new(dir.path()).model(model.clone()).build().await.unwrap();
    let out = say(&fx, "m1", "where is my order 1002?").await;
    assert_eq!(out.agent.as_str(), "orders");
    assert_eq!(
        out.reply.as_deref(),
        Some("Order 1002 is being packed: two insulated water bottles, $48.00.")
    );
    let ToolOutcome::Ok(result) = &out.tool_executions[0].outcome else {
        panic!("GetOrder failed: {out:?}")
    };
    assert_eq!(result["status"], "processing");
    assert_eq!(result["total"], "$48.00");
    let out = say(&fx, "m1", "it left the warehouse, mark it shipped").await;
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    assert_eq!(fx.store.order(1002).unwrap().unwrap().status, OrderStatus::Processing);
    let out = say(&fx, "m1", "yes").await;
    assert_eq!(
        out.reply.as_deref(),
        Some("Order 1002 is shipped; its tracking number is PX41002US.")
    );
    assert_eq!(fx.store.order(1002).unwrap().unwrap().status, OrderStatus::Shipped);
    let shipment = fx.store.shipment_of(1002).unwrap().unwrap();
    assert_eq!(shipment.tracking_number, "PX41002US");
    assert_eq!(
        fx.store.status_changes(1002).unwrap()[0].note.as_deref(),
        Some("left the warehouse")
    );
    assert_eq!(model.requests().len(), 4, "the routing needed no model call");
    fx.rt.shutdown().await;
}

#[tokio::test]
async fn model_arguments_the_schema_rejects_never_reach_the_server() {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call(
            "UpdateOrderStatus",
            r#"{"order_id": 1004, "status": "lost"}"#,
        ))
        .reply(ModelReply::text("That is not a status I can set."));
    let dir = tempfile::tempdir().unwrap();
    let fx = Setup::new(dir.path()).model(model).build().await.unwrap();
    let out = say(&fx, "m1", "mark order 1004 as lost").await;
    let ToolOutcome::Error(error) = &out.tool_executions[0].outcome else {
        panic!("the call was not refused: {out:?}")
    };
    assert!(error.message.contains("status"), "{}", error.message);
    assert_eq!(fx.store.order(1004).unwrap().unwrap().status, OrderStatus::Pending);
    fx.rt.shutdown().await;
}

impl Setup<'_> {
    fn model(mut self, model: ScriptedModel) -> Self {
        self.model = Some(model);
        self
    }
}

// ------------------------------------------------------------------ the tool team's way

/// The tool team ships a new tool (the server now serves GetCustomer): after
/// a restart it is one of the goal's tools, with the same goal file and the
/// same concierge.
#[tokio::test]
async fn a_tool_added_to_the_server_reaches_the_goal_without_changing_it() {
    let dir = tempfile::tempdir().unwrap();
    let before = Setup::new(dir.path()).build().await.unwrap();
    say(&before, "s1", "where is my order 1001?").await;
    assert_eq!(
        tool_names(&before),
        ["GetOrder", "GetCustomerOrders", "TrackPackage", "UpdateOrderStatus"]
    );
    before.rt.shutdown().await;
    drop(before);

    let mut after = Setup::new(dir.path());
    after.preview = true;
    let after = after.build().await.unwrap();
    let out = say(&after, "s2", "where is my order 1001?").await;
    assert_eq!(out.agent.as_str(), "orders");
    // This process began with the tools the first one remembered; the run's
    // call started the server, whose list is then read again in the
    // background (the bound only keeps a broken build from hanging).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !tool_names(&after).iter().any(|t| t == "GetCustomer") && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        tool_names(&after),
        [
            "GetOrder",
            "GetCustomerOrders",
            "TrackPackage",
            "UpdateOrderStatus",
            "GetCustomer"
        ]
    );
    let (_, agents, _) = assistant();
    assert_eq!(
        agents.iter().find(|a| a.id.as_str() == "orders").unwrap(),
        &after.agent,
        "the goal is the same file"
    );
    let result = after
        .rt
        .call_tool("GetCustomer", serde_json::json!({"customer_id": "C100"}), None, 1)
        .await;
    let ToolOutcome::Ok(profile) = result else {
        panic!("{result:?}")
    };
    assert_eq!(
        profile["message"],
        "Maya Chen (C100, maya.chen@example.com) lives in Denver, CO and has placed 3 orders, $190.50 spent."
    );
    after.rt.shutdown().await;
}

#[tokio::test]
async fn included_tools_naming_a_tool_the_server_lacks_lists_what_it_offers() {
    let dir = tempfile::tempdir().unwrap();
    let mut setup = Setup::new(dir.path());
    setup.included = Some(vec!["GetOrder", "GetInvoice"]);
    let fx = setup.build().await.unwrap();
    // A run of the goal itself fails with the server's error (through the
    // hub, a server that cannot be listed only takes its own goal's tools
    // away, not every goal's runs).
    let error = fx
        .rt
        .client("orders")
        .unwrap()
        .run("where is my order 1001?", RunOptions::new().session_id("s1"))
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, Error::ToolsUnavailable { .. }), "{text}");
    assert!(text.contains("GetInvoice"), "{text}");
    assert!(
        text.contains("GetCustomerOrders, GetOrder, TrackPackage, UpdateOrderStatus"),
        "it lists what the server offers: {text}"
    );
    assert!(!text.contains("[\""), "no Rust lists in the message: {text}");
    fx.rt.shutdown().await;
}

// ------------------------------------------------------------------ a crash inside UpdateOrderStatus

/// Blocks the process once `UpdateOrderStatus` returned (the server
/// committed the change) and before concierge journals the result.
struct StopAfterUpdate;

impl ExecHooks for StopAfterUpdate {
    fn tool_finished(&self, call: &ToolCallInfo<'_>, outcome: &ToolOutcome, _: std::time::Duration) {
        if call.tool.as_str() == "UpdateOrderStatus" && matches!(outcome, ToolOutcome::Ok(_)) {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "READY update");
            let _ = out.flush();
            drop(out);
            loop {
                std::thread::park();
            }
        }
    }
}

/// The child process the crash test runs (this binary, re-executed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "child process entry for the crash test"]
async fn crash_child() {
    let dir = PathBuf::from(std::env::var("ORDERS_CRASH_DIR").expect("ORDERS_CRASH_DIR"));
    let mut setup = Setup::new(&dir);
    let resume = std::env::var("ORDERS_CRASH_MODE").as_deref() == Ok("resume");
    if !resume {
        setup.hooks = Some(Arc::new(StopAfterUpdate));
    }
    let fx = setup.build().await.unwrap();
    let out = if resume {
        assert!(fx.rt.recovered().contains(&"c1".into()), "{:?}", fx.rt.recovered());
        // A liveness guard: a run that is not resumed would wait forever.
        tokio::time::timeout(std::time::Duration::from_secs(120), fx.rt.wait("c1"))
            .await
            .expect("the resumed run did not finish")
            .unwrap()
            .expect("a run was in flight")
    } else {
        let out = say(&fx, "c1", "cancel order 1004").await;
        assert_eq!(out.status, RunStatus::AwaitingConfirmation);
        say(&fx, "c1", "yes").await
    };
    println!("REPLY {}", out.reply.unwrap_or_default());
    fx.rt.shutdown().await;
}

fn spawn(dir: &Path, mode: &str) -> (Child, BufReader<ChildStdout>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["crash_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env("ORDERS_CRASH_DIR", dir)
        .env("ORDERS_CRASH_MODE", mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdout)
}

fn read_until(stdout: &mut BufReader<ChildStdout>, prefix: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        let n = stdout.read_line(&mut line).unwrap();
        assert!(n > 0, "the child exited before printing {prefix:?}");
        if let Some(at) = line.find(prefix) {
            return line[at + prefix.len()..].trim().to_string();
        }
    }
}

#[test]
fn killed_inside_update_order_status_the_order_changes_once() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, mut stdout) = spawn(dir.path(), "first");
    read_until(&mut stdout, "READY update");
    let store = OrderStore::open(dir.path().join("orders.db"));
    assert_eq!(
        store.order(1004).unwrap().unwrap().status,
        OrderStatus::Cancelled,
        "the server committed before the kill"
    );
    child.kill().unwrap();
    child.wait().unwrap();

    let (mut child, mut stdout) = spawn(dir.path(), "resume");
    let reply = read_until(&mut stdout, "REPLY ");
    assert!(child.wait().unwrap().success());
    assert_eq!(
        reply, "Order 1004 is now cancelled (it was pending).",
        "the first call's result"
    );
    let changes = store.status_changes(1004).unwrap();
    assert_eq!(changes.len(), 1, "changed once: {changes:?}");
    assert_eq!(store.db().applied_count().unwrap(), 1);
}
