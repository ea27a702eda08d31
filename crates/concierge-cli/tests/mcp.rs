//! `concierge mcp` and the MCP demo, through the binary.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/cli.rs"]
mod cli;

use cli::concierge;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::json;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The text items of a tool result, joined.
fn texts(result: &rmcp::model::CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

/// The demo's configuration, copied so its database lands in a temporary directory.
fn demo_config(dir: &Path) -> PathBuf {
    let agents = dir.join("agents");
    std::fs::create_dir(&agents).unwrap();
    let agent = std::fs::read_to_string(repo().join("examples/mcp-assistant/agents/everything_assistant.toml"))
        .unwrap()
        .replace(
            "cwd = \"../../..\"",
            &format!("cwd = {:?}", repo().canonicalize().unwrap()),
        );
    std::fs::write(agents.join("everything_assistant.toml"), agent).unwrap();
    let config = dir.join("concierge.toml");
    std::fs::write(&config, "db = \"assistant.db\"\nagents_dir = \"agents\"\n").unwrap();
    assert!(
        repo()
            .join("node_modules/@modelcontextprotocol/server-everything")
            .exists(),
        "run scripts/setup-mcp.sh first"
    );
    config
}

#[test]
#[ignore = "needs npm packages: scripts/setup-mcp.sh"]
fn the_mcp_demo_agent_uses_an_npm_server_and_a_native_tool() {
    let dir = tempfile::tempdir().unwrap();
    let config = demo_config(dir.path());
    let config = config.to_str().unwrap();
    let agent = "goal_everything_assistant";
    let out = concierge(
        dir.path(),
        &[
            "--config",
            config,
            "run",
            "--agent",
            agent,
            "--session",
            "d",
            "echo hello",
        ],
    );
    assert_eq!(text(&out.stdout).trim(), "Echo: hello", "{}", text(&out.stderr));
    let out = concierge(
        dir.path(),
        &["--config", config, "run", "--session", "d", "add 2 and 40"],
    );
    assert_eq!(text(&out.stdout).trim(), "The sum of 2 and 40 is 42.");
    let out = concierge(
        dir.path(),
        &["--config", config, "run", "--session", "d", "calculate 6 * 7"],
    );
    assert_eq!(
        text(&out.stdout).trim(),
        "6 * 7 = 42",
        "the native tool next to the MCP ones"
    );

    let out = concierge(dir.path(), &["--config", config, "mcp", "list", "everything"]);
    let listed = text(&out.stdout);
    assert!(listed.contains("echo") && listed.contains("get-sum"), "{listed}");
    assert!(!listed.contains("get-tiny-image"), "included_tools keeps two: {listed}");
    assert!(listed.contains("\"required\""), "with schemas: {listed}");
    let out = concierge(dir.path(), &["--config", config, "tools"]);
    assert!(text(&out.stdout).contains("[everything]"), "{}", text(&out.stdout));
    let out = concierge(dir.path(), &["--config", config, "mcp", "list", "nope"]);
    assert!(
        text(&out.stderr).contains("servers: everything"),
        "{}",
        text(&out.stderr)
    );
}

/// `concierge mcp call` against another concierge serving over stdio.
#[test]
fn mcp_call_calls_a_tool_reports_its_errors_and_times_repeats() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("concierge.toml");
    std::fs::write(
        &config,
        format!(
            "db = \"client.db\"\n[mcp_servers.other]\ncommand = {:?}\nargs = [\"--db\", \"server.db\", \"mcp\", \"serve\"]\nprefix = \"o_\"\n",
            env!("CARGO_BIN_EXE_concierge")
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let call = |tool: &str, args: &str, repeat: &str| {
        concierge(
            dir.path(),
            &[
                "--config", config, "mcp", "call", "other", tool, "--args", args, "--repeat", repeat,
            ],
        )
    };

    let out = call("calculator", r#"{"operation": "multiply", "a": "6", "b": 7}"#, "3");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["result"], json!(42.0), "the server coerced \"6\"");
    assert!(
        text(&out.stderr).contains("3 calls to other/calculator: p50"),
        "{}",
        text(&out.stderr)
    );

    let out = call("calculator", r#"{"a": 1}"#, "1");
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("InvalidArguments") && text(&out.stderr).contains("operation"),
        "the server's structured error keeps its kind: {}",
        text(&out.stderr)
    );

    let out = call("nope", "{}", "1");
    assert!(
        text(&out.stderr).contains("it offers: ") && text(&out.stderr).contains("ask_calculator"),
        "{}",
        text(&out.stderr)
    );
    let out = call("calculator", "[1]", "1");
    assert!(
        text(&out.stderr).contains("--args must be a JSON object"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn concierge_serves_mcp_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_concierge"));
    cmd.current_dir(dir.path()).args(["mcp", "serve"]);
    let transport = TokioChildProcess::new(cmd).unwrap();
    let client = ().serve(transport).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    // The demo tools (the calculator, the task manager's, the CRM's), then one per agent.
    assert!(names.contains(&"calculator"), "{names:?}");
    assert!(
        names.contains(&"create_task") && names.contains(&"recommend_task") && names.contains(&"update_contact"),
        "{names:?}"
    );
    assert_eq!(names.last(), Some(&"ask_calculator"));
    let calculator = tools.iter().find(|t| t.name == "calculator").unwrap();
    assert_eq!(
        calculator.input_schema["properties"]["operation"]["enum"],
        json!(["add", "subtract", "multiply", "divide", "sqrt", "abs"])
    );
    let result = client
        .call_tool(
            CallToolRequestParams::new("calculator")
                .with_arguments(rmcp::object!({"operation": "divide", "a": "1", "b": 8})),
        )
        .await
        .unwrap();
    assert_eq!(result.structured_content.unwrap()["formula"], "1 / 8 = 0.125");
    let asked = client
        .call_tool(
            CallToolRequestParams::new("ask_calculator").with_arguments(rmcp::object!({"message": "calculate 5 + 3"})),
        )
        .await
        .unwrap();
    let reply = texts(&asked);
    assert_eq!(reply, "5 + 3 = 8");
    let _ = client.cancel().await;
}

#[tokio::test]
async fn concierge_serves_mcp_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = Command::new(env!("CARGO_BIN_EXE_concierge"))
        .current_dir(dir.path())
        .args(["mcp", "serve", "--http", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut url = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    // rmcp's client is reqwest on rustls: it needs the process's crypto provider.
    concierge::tls::install_crypto_provider();
    let transport =
        StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(url.trim()));
    let client = ().serve(transport).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "ask_calculator"));
    let asked = client
        .call_tool(CallToolRequestParams::new("ask_calculator").with_arguments(rmcp::object!({"message": "sqrt 81"})))
        .await
        .unwrap();
    let reply = texts(&asked);
    assert_eq!(reply, "sqrt(81) = 9");
    let _ = client.cancel().await;
    server.kill().unwrap();
    server.wait().unwrap();
}

/// `concierge mcp call` prints the progress the server reports to stderr.
#[test]
#[ignore = "needs npm packages: scripts/setup-mcp.sh"]
fn mcp_call_prints_progress() {
    let dir = tempfile::tempdir().unwrap();
    let script = repo().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(script.exists(), "run scripts/setup-mcp.sh first");
    let config = dir.path().join("concierge.toml");
    std::fs::write(
        &config,
        format!(
            "db = \"client.db\"\n[mcp_servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n",
            script.to_string_lossy()
        ),
    )
    .unwrap();
    let out = concierge(
        dir.path(),
        &[
            "--config",
            config.to_str().unwrap(),
            "mcp",
            "call",
            "everything",
            "trigger-long-running-operation",
            "--args",
            r#"{"duration": 0.2, "steps": 2}"#,
        ],
    );
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("progress everything/trigger-long-running-operation: 1 of 2")
            && stderr.contains("progress everything/trigger-long-running-operation: 2 of 2"),
        "{stderr}"
    );
    assert!(
        text(&out.stdout).contains("Long running operation completed"),
        "{}",
        text(&out.stdout)
    );
}
