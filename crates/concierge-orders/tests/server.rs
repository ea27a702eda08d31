//! The `concierge-orders` binary driven by a real rmcp client, over stdio
//! and over streamable HTTP; the rows are checked in its SQLite file.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Stdio;

use concierge_orders::{OrderStatus, OrderStore};
use rmcp::model::{CallToolRequestParams, CallToolResult, RequestMetaObject, Tool};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

const BIN: &str = env!("CARGO_BIN_EXE_concierge-orders");
/// The day the test databases are seeded relative to.
const TODAY: &str = "2025-03-05";

fn command(db: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.env("CONCIERGE_ORDERS_DB", db)
        .env("CONCIERGE_ORDERS_TODAY", TODAY)
        .env_remove("CONCIERGE_ORDERS_PREVIEW");
    cmd
}

async fn stdio_client(db: &Path) -> RunningService<RoleClient, ()> {
    let (transport, _stderr) = TokioChildProcess::builder(command(db))
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    ().serve(transport).await.unwrap()
}

fn call(name: &str, args: Value, key: Option<&str>) -> CallToolRequestParams {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    let mut params = CallToolRequestParams::new(name.to_string()).with_arguments(args);
    if let Some(key) = key {
        let mut meta = RequestMetaObject::new();
        meta.insert("idempotency_key".into(), json!(key));
        params.meta = Some(meta);
    }
    params
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

fn annotations(tool: &Tool) -> (Option<bool>, Option<bool>, Option<bool>) {
    let a = tool.annotations.clone().unwrap_or_default();
    (a.read_only_hint, a.destructive_hint, a.idempotent_hint)
}

/// What both transports must show: the tools, their schemas and hints,
/// readable results, and a status change applied once per key.
async fn exercise(client: &RunningService<RoleClient, ()>, db: &Path) {
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        ["GetOrder", "GetCustomerOrders", "TrackPackage", "UpdateOrderStatus"],
        "the released tools, without the preview one"
    );
    let by_name = |name: &str| tools.iter().find(|t| t.name == name).unwrap().clone();
    for read in ["GetOrder", "GetCustomerOrders", "TrackPackage"] {
        assert_eq!(
            annotations(&by_name(read)),
            (Some(true), Some(false), Some(true)),
            "{read}"
        );
    }
    assert_eq!(
        annotations(&by_name("UpdateOrderStatus")),
        (Some(false), Some(true), Some(true)),
        "the one tool that changes something says so"
    );
    let update = by_name("UpdateOrderStatus");
    assert_eq!(update.input_schema["required"], json!(["order_id", "status"]));
    assert_eq!(update.input_schema["properties"]["status"]["enum"][4], "cancelled");
    let list = by_name("GetCustomerOrders");
    assert_eq!(list.input_schema["properties"]["since"]["format"], "date");

    let order = client
        .call_tool(call("GetOrder", json!({"order_id": 1001}), None))
        .await
        .unwrap();
    assert_ne!(order.is_error, Some(true));
    assert_eq!(
        text(&order),
        "Order 1001 (placed 2025-02-28 by Maya Chen) is shipped: Trail running shoes, Wool socks (3 pack), \
         $107.50 in all. It shipped on 2025-03-02 with Parcel Express (tracking PX41001US); last seen \
         2025-03-03 22:05 at Salt Lake City, UT sorting hub (departed sorting hub). It is expected on 2025-03-07."
    );
    let data = order.structured_content.unwrap();
    assert_eq!(data["total"], "$107.50");
    assert_eq!(data["items"].as_array().unwrap().len(), 2);
    assert_eq!(
        data["message"],
        text(
            &client
                .call_tool(call("GetOrder", json!({"order_id": "#1001"}), None))
                .await
                .unwrap()
        )
    );

    let listed = client
        .call_tool(call(
            "GetCustomerOrders",
            json!({"customer_id": "maya.chen@example.com", "since": "2025-02-15"}),
            None,
        ))
        .await
        .unwrap();
    assert_eq!(
        text(&listed),
        "Maya Chen has 2 orders (placed since 2025-02-15): Order 1002 placed 2025-03-04: processing, 2 items, $48.00; \
         Order 1001 placed 2025-02-28: shipped, 2 items, $107.50."
    );
    assert_eq!(listed.structured_content.unwrap()["count"], 2);

    let tracked = client
        .call_tool(call("TrackPackage", json!({"tracking_number": "px41006us"}), None))
        .await
        .unwrap();
    assert!(
        text(&tracked).starts_with("Package PX41006US (order 1006) is in transit."),
        "{}",
        text(&tracked)
    );
    let not_shipped = client
        .call_tool(call("TrackPackage", json!({"order_id": 1004}), None))
        .await
        .unwrap();
    assert_eq!(not_shipped.is_error, Some(true));
    assert_eq!(
        text(&not_shipped),
        "Order 1004 has not shipped yet (it is pending), so there is no package to track."
    );
    let missing = client
        .call_tool(call("GetOrder", json!({"order_id": 999}), None))
        .await
        .unwrap();
    assert_eq!(missing.is_error, Some(true));
    assert_eq!(text(&missing), "There is no order 999; order numbers look like 1001.");

    // A change, retried with the same key: applied once.
    let first = client
        .call_tool(call(
            "UpdateOrderStatus",
            json!({"order_id": 1004, "status": "cancelled", "note": "asked by phone"}),
            Some("k-1"),
        ))
        .await
        .unwrap();
    assert_eq!(text(&first), "Order 1004 is now cancelled (it was pending).");
    let retried = client
        .call_tool(call(
            "UpdateOrderStatus",
            json!({"order_id": 1004, "status": "cancelled"}),
            Some("k-1"),
        ))
        .await
        .unwrap();
    assert_eq!(
        retried.structured_content, first.structured_content,
        "the first call's result"
    );
    let store = OrderStore::open(db);
    assert_eq!(store.order(1004).unwrap().unwrap().status, OrderStatus::Cancelled);
    let changes = store.status_changes(1004).unwrap();
    assert_eq!(changes.len(), 1, "changed once: {changes:?}");
    assert_eq!(changes[0].note.as_deref(), Some("asked by phone"));
    // A move the order cannot make is refused in words, and changes nothing.
    let refused = client
        .call_tool(call(
            "UpdateOrderStatus",
            json!({"order_id": 1004, "status": "shipped"}),
            Some("k-2"),
        ))
        .await
        .unwrap();
    assert_eq!(refused.is_error, Some(true));
    assert_eq!(
        text(&refused),
        "Order 1004 is cancelled, so it cannot become shipped; it cannot change any more."
    );
    // Shipping creates the package.
    let shipped = client
        .call_tool(call(
            "UpdateOrderStatus",
            json!({"order_id": 1002, "status": "shipped"}),
            Some("k-3"),
        ))
        .await
        .unwrap();
    assert_eq!(
        text(&shipped),
        "Order 1002 is now shipped (it was processing). Its tracking number is PX41002US."
    );
    assert_eq!(store.shipment_of(1002).unwrap().unwrap().carrier, "Parcel Express");
    assert_eq!(
        store.db().applied_count().unwrap(),
        2,
        "k-1 and k-3; the refusal is not recorded"
    );

    let unknown = client
        .call_tool(call("GetCustomer", json!({"customer_id": "C100"}), None))
        .await;
    let error = unknown.unwrap_err().to_string();
    assert!(
        error.contains("There is no tool GetCustomer") && error.contains("UpdateOrderStatus"),
        "{error}"
    );
}

#[tokio::test]
async fn over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("orders.db");
    let client = stdio_client(&db).await;
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.clone().unwrap().name, "concierge-orders");
    exercise(&client, &db).await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn over_streamable_http() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("orders.db");
    let mut server = command(&db)
        .args(["--http", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // The server says where it listens once it does.
    let mut lines = tokio::io::BufReader::new(server.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("the server exited before listening");
        if let Some(at) = line.find("http://") {
            break line[at..].trim().to_string();
        }
    };
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"), "{url}");
    // rmcp's client is reqwest on rustls: it needs the process's crypto provider.
    concierge::tls::install_crypto_provider();
    let transport = StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(url));
    let client = ().serve(transport).await.unwrap();
    exercise(&client, &db).await;
    let _ = client.cancel().await;
    server.kill().await.unwrap();
}

#[tokio::test]
async fn the_preview_flag_adds_a_tool() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("orders.db");
    let (transport, _) = TokioChildProcess::builder(command(&db).configure_preview())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let client = ().serve(transport).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 5);
    assert_eq!(tools[4].name, "GetCustomer");
    let profile = client
        .call_tool(call("GetCustomer", json!({"customer_id": "c101"}), None))
        .await
        .unwrap();
    assert_eq!(
        text(&profile),
        "Tom Okafor (C101, tom.okafor@example.com) lives in Austin, TX and has placed 2 orders, $210.00 spent."
    );
    client.cancel().await.unwrap();
}

trait Preview {
    fn configure_preview(self) -> Self;
}

impl Preview for tokio::process::Command {
    fn configure_preview(mut self) -> Self {
        self.arg("--preview");
        self
    }
}
