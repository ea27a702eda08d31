//! The official MCP Inspector's CLI (npm `@modelcontextprotocol/inspector`,
//! pinned in package.json, installed by scripts/setup-mcp.sh) against the
//! `concierge-orders` binary over stdio: it lists the tools and calls them.
//! Ignored by default: run after `scripts/setup-mcp.sh` with
//! `cargo test -p concierge-orders --test inspector -- --ignored`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use concierge_orders::{OrderStatus, OrderStore};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_concierge-orders");

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs the Inspector's CLI on the server with `args`; returns its JSON answer.
fn inspector(db: &Path, args: &[&str]) -> Value {
    let root = workspace();
    assert!(
        root.join("node_modules/@modelcontextprotocol/inspector/package.json")
            .exists(),
        "the MCP Inspector is not installed: run scripts/setup-mcp.sh"
    );
    let out = Command::new("npx")
        .current_dir(&root)
        .args(["--no-install", "@modelcontextprotocol/inspector", "--cli", BIN])
        .args(args)
        .env("CONCIERGE_ORDERS_DB", db)
        .env("CONCIERGE_ORDERS_TODAY", "2025-03-05")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the inspector failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Its answer is the JSON document on stdout (after any banner).
    let start = stdout.find('{').unwrap_or_else(|| panic!("no JSON in {stdout}"));
    serde_json::from_str(&stdout[start..]).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
#[ignore = "needs the MCP Inspector from npm: scripts/setup-mcp.sh"]
fn the_inspector_lists_and_calls_the_order_tools() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("orders.db");

    let listed = inspector(&db, &["--method", "tools/list"]);
    let tools = listed["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["GetOrder", "GetCustomerOrders", "TrackPackage", "UpdateOrderStatus"]
    );
    assert_eq!(tools[0]["annotations"]["readOnlyHint"], true);
    assert_eq!(tools[3]["annotations"]["destructiveHint"], true);
    assert_eq!(tools[3]["inputSchema"]["required"][1], "status");

    let order = inspector(
        &db,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "GetOrder",
            "--tool-arg",
            "order_id=1001",
        ],
    );
    assert_ne!(order["isError"], true, "{order}");
    let text = order["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("Order 1001 (placed 2025-02-28 by Maya Chen) is shipped"),
        "{text}"
    );
    assert_eq!(order["structuredContent"]["tracking_number"], "PX41001US");

    let listed = inspector(
        &db,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "GetCustomerOrders",
            "--tool-arg",
            "customer_id=C101",
        ],
    );
    assert_eq!(listed["structuredContent"]["count"], 2, "{listed}");

    let updated = inspector(
        &db,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "UpdateOrderStatus",
            "--tool-arg",
            "order_id=1004",
            "status=processing",
        ],
    );
    assert_eq!(
        updated["content"][0]["text"], "Order 1004 is now processing (it was pending).",
        "{updated}"
    );
    let store = OrderStore::open(&db);
    assert_eq!(store.order(1004).unwrap().unwrap().status, OrderStatus::Processing);
    assert_eq!(store.status_changes(1004).unwrap().len(), 1);

    let refused = inspector(
        &db,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "TrackPackage",
            "--tool-arg",
            "order_id=1004",
        ],
    );
    assert_eq!(refused["isError"], true, "{refused}");
}
