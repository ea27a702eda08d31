//! concierge's MCP server asks its client: an `ask_<agent>` call whose run
//! parks on a confirmation sends the client an elicitation (form mode, a
//! yes/no `approve` field) when the client declared the capability, and
//! the answer resumes the run (approve: the call runs once; deny: it does
//! not); a client without the capability gets the waiting text as before.
//! A call with a `progressToken` gets a progress notification per model
//! call and tool call. Driven by an rmcp client over streamable HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use concierge::model::ScriptedModel;
use concierge::{AgentSpec, ModelReply, Runtime, ToolContext, tool};
use concierge_server::ConciergeMcp;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, Implementation, NumberOrString, ProgressNotificationParam, ProgressToken,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// The memos of the charges that ran, in order.
static CHARGED: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn charged(memo: &str) -> usize {
    CHARGED.lock().unwrap().iter().filter(|m| *m == memo).count()
}

#[derive(Deserialize, JsonSchema)]
struct ChargeArgs {
    /// What the charge is for.
    memo: String,
}

/// Charges the card.
#[tool(confirm = "Charge the card for {memo}?")]
async fn charge(args: ChargeArgs, _cx: ToolContext) -> Result<Value, String> {
    CHARGED.lock().unwrap().push(args.memo.clone());
    Ok(json!({"charged": args.memo}))
}

#[derive(Deserialize, JsonSchema)]
struct PickArgs {
    /// The card (asked for when absent).
    card: Option<i64>,
}

/// The cards picked, in order.
static PICKED: Mutex<Vec<i64>> = Mutex::new(Vec::new());

/// Picks a card, asking which when none is given.
#[tool(read_only)]
async fn pick_card(args: PickArgs, _cx: ToolContext) -> Result<Value, String> {
    match args.card {
        Some(card) => {
            PICKED.lock().unwrap().push(card);
            Ok(json!({"picked": card}))
        }
        None => Ok(concierge::Choice::new("Which card?", "card")
            .option(41, "Visa")
            .option(42, "Amex")
            .to_value()),
    }
}

/// A client that answers every confirmation with `approve` and every
/// choice with option 2 (or declines without the capability), and keeps
/// what it was asked and told.
#[derive(Clone)]
struct Person {
    elicits: bool,
    approve: bool,
    asked: Arc<Mutex<Vec<(String, Value)>>>,
    progress: Arc<Mutex<Vec<(f64, String)>>>,
}

impl Person {
    fn new(elicits: bool, approve: bool) -> Self {
        Self {
            elicits,
            approve,
            asked: Arc::default(),
            progress: Arc::default(),
        }
    }
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.elicits {
            capabilities.elicitation = Some(ElicitationCapability::default());
        }
        ClientConfig::new(capabilities, Implementation::new("person", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let schema = serde_json::to_value(&requested_schema).unwrap();
        let choice = !schema["properties"]["choice"].is_null();
        self.asked.lock().unwrap().push((message, schema));
        let content = if choice {
            json!({"choice": "2"})
        } else {
            json!({"approve": self.approve})
        };
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(content))
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        self.progress
            .lock()
            .unwrap()
            .push((params.progress, params.message.unwrap_or_default()));
    }
}

/// concierge serving an agent `payer` whose model charges `memo`, then says "done".
async fn serve(memo: &str) -> String {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("charge", json!({"memo": memo}).to_string()))
        .reply(ModelReply::text("done"));
    let rt = Runtime::builder()
        .tool(Charge)
        .agent(AgentSpec::new("payer").description("Pays.").tool("charge"))
        .model(model)
        .in_memory()
        .build()
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = ConciergeMcp::new(rt).router();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    format!("http://{addr}/mcp")
}

/// concierge serving an agent `picker` whose model picks a card (it asks which), then says "done".
async fn serve_picker() -> String {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("pick_card", json!({}).to_string()))
        .reply(ModelReply::text("done"));
    let rt = Runtime::builder()
        .tool(PickCard)
        .agent(AgentSpec::new("picker").description("Picks.").tool("pick_card"))
        .model(model)
        .in_memory()
        .build()
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = ConciergeMcp::new(rt).router();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    format!("http://{addr}/mcp")
}

async fn ask(url: &str, person: Person, token: Option<&str>) -> rmcp::model::CallToolResult {
    ask_agent(url, "ask_payer", person, token).await
}

async fn ask_agent(url: &str, tool: &str, person: Person, token: Option<&str>) -> rmcp::model::CallToolResult {
    let transport = StreamableHttpClientTransport::from_config(StreamableHttpClientTransportConfig::with_uri(url));
    let client = person.serve(transport).await.unwrap();
    let mut params = CallToolRequestParams::new(tool.to_string()).with_arguments(rmcp::object!({"message": "go"}));
    if let Some(token) = token {
        let mut meta = rmcp::model::RequestMetaObject::new();
        meta.set_progress_token(ProgressToken(NumberOrString::String(token.into())));
        params.meta = Some(meta);
    }
    let result = client.call_tool(params).await.unwrap();
    client.cancel().await.unwrap();
    result
}

#[tokio::test]
async fn an_approved_elicitation_runs_the_call_once_and_progress_is_reported() {
    let url = serve("approved-memo").await;
    let person = Person::new(true, true);
    let result = ask(&url, person.clone(), Some("t-1")).await;
    let structured = result.structured_content.unwrap();
    assert_eq!(structured["status"], "completed", "{structured}");
    assert_eq!(structured["reply"], "done");
    assert_eq!(charged("approved-memo"), 1, "the approved call ran once");

    let asked = person.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "one question: {asked:?}");
    assert_eq!(asked[0].0, "Charge the card for approved-memo?");
    assert_eq!(asked[0].1["properties"]["approve"]["type"], "boolean");

    let progress = person.progress.lock().unwrap().clone();
    let messages: Vec<&str> = progress.iter().map(|(_, m)| m.as_str()).collect();
    assert!(messages.contains(&"asking the model"), "{messages:?}");
    assert!(messages.contains(&"calling the tool charge"), "{messages:?}");
    assert!(
        messages.iter().any(|m| m.starts_with("charge finished in")),
        "{messages:?}"
    );
    assert!(
        progress.windows(2).all(|w| w[0].0 < w[1].0),
        "progress increases: {progress:?}"
    );
}

#[tokio::test]
async fn a_denied_elicitation_does_not_run_the_call() {
    let url = serve("denied-memo").await;
    let person = Person::new(true, false);
    let result = ask(&url, person.clone(), None).await;
    let structured = result.structured_content.unwrap();
    assert_eq!(structured["status"], "completed", "{structured}");
    assert_eq!(person.asked.lock().unwrap().len(), 1);
    assert_eq!(charged("denied-memo"), 0, "the declined call did not run");
}

#[tokio::test]
async fn a_choice_is_asked_as_an_enum_of_its_options_and_the_pick_resumes_the_run() {
    let url = serve_picker().await;
    let person = Person::new(true, true);
    let result = ask_agent(&url, "ask_picker", person.clone(), None).await;
    let structured = result.structured_content.unwrap();
    assert_eq!(structured["status"], "completed", "{structured}");
    let asked = person.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].0, "Which card?");
    assert_eq!(
        asked[0].1["properties"]["choice"]["oneOf"],
        json!([{"const": "1", "title": "Visa"}, {"const": "2", "title": "Amex"}])
    );
    assert_eq!(*PICKED.lock().unwrap(), [42], "option 2 is the card with id 42");
}

#[tokio::test]
async fn a_client_without_elicitation_gets_the_waiting_text() {
    let url = serve("unasked-memo").await;
    let person = Person::new(false, true);
    let result = ask(&url, person.clone(), None).await;
    let structured = result.structured_content.unwrap();
    assert_eq!(structured["status"], "awaiting_confirmation", "{structured}");
    assert!(person.asked.lock().unwrap().is_empty());
    assert_eq!(charged("unasked-memo"), 0);
    let text = result.content[0].as_text().unwrap().text.clone();
    assert!(text.contains("Charge the card for unasked-memo?"), "{text}");
}

// ----- the official MCP Python client (scripts/setup-mcp-python.sh) -----

/// The virtual environment's Python that `scripts/setup-mcp-python.sh` made.
fn python() -> std::path::PathBuf {
    let cache = std::env::var_os("CONCIERGE_CACHE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/concierge"));
    let python = cache.join("venv-mcp-python/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup-mcp-python.sh first",
        python.display()
    );
    python
}

/// What `tests/mcp_python/client.py` saw, answering the elicitation with `decision`.
async fn python_client(url: &str, decision: &str) -> Value {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_python/client.py");
    let out = tokio::process::Command::new(python())
        .arg(script)
        .arg(url)
        .arg(decision)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "the Python client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the MCP Python client: scripts/setup-mcp-python.sh"]
async fn the_python_mcp_client_is_asked_and_told_progress() {
    let url = serve("python-approved").await;
    let seen = python_client(&url, "approve").await;
    assert_eq!(seen["structured"]["status"], "completed", "{seen}");
    assert_eq!(charged("python-approved"), 1, "approved: the call ran once");
    assert_eq!(seen["asked"][0]["message"], "Charge the card for python-approved?");
    assert_eq!(seen["asked"][0]["schema"]["properties"]["approve"]["type"], "boolean");
    let progress: Vec<&str> = seen["progress"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert!(progress.contains(&"calling the tool charge"), "{progress:?}");

    let url = serve("python-denied").await;
    let seen = python_client(&url, "deny").await;
    assert_eq!(seen["structured"]["status"], "completed", "{seen}");
    assert_eq!(seen["asked"].as_array().unwrap().len(), 1);
    assert_eq!(charged("python-denied"), 0, "denied: the call did not run");
}
