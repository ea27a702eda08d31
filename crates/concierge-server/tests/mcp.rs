//! concierge's own MCP server, driven by an rmcp client over streamable HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use concierge::{AgentSpec, Runtime, ToolContext, tool};
use concierge_server::ConciergeMcp;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

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
