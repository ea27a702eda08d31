//! The A2A endpoint through real HTTP on loopback: agent cards, both
//! bindings (JSON-RPC and HTTP+JSON), tasks as runs and contexts as
//! sessions, input-required on a confirmation or a choice and its answer,
//! re-attaching to a task's live stream, tenants, malformed requests. The
//! task manager's agents on their rules, and a scripted model that calls
//! the calculator and then waits at a gate the test opens.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use concierge::config::load_agents;
use concierge::core::Message;
use concierge::model::{Model, ModelContext, ModelError};
use concierge::{AgentSpec, ModelReply, ModelRequest, Runtime, RuntimeBuilder};
use concierge_demo::tasks::{Knowledge, TaskStore, toolset_with};
use concierge_server::{HttpApi, TokenConfig, Tokens};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use futures::future::BoxFuture;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::task::JoinHandle;

fn tasks_example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tasks")
}

/// The task manager's agents, on their rules.
fn demo(dir: &Path) -> RuntimeBuilder {
    let store = TaskStore::open(dir.join("tasks.db"));
    let knowledge = Knowledge::open(tasks_example().join("knowledge.md"));
    let mut agents = concierge_demo::agents();
    agents.extend(load_agents(&tasks_example().join("agents")).unwrap().agents);
    Runtime::builder()
        .toolset(concierge_demo::calculator::toolset())
        .toolset(toolset_with(store, knowledge))
        .agents(agents)
}

/// A model that first calls the calculator, then (with the result) waits
/// at the gate and answers "Done at last." in two deltas.
struct Gated {
    asked: mpsc::UnboundedSender<()>,
    open: Arc<Semaphore>,
}

impl Model for Gated {
    fn name(&self) -> String {
        "scripted:gated".into()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        cx: &'a ModelContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        let _ = self.asked.send(());
        let calculated = request
            .messages
            .iter()
            .rev()
            .take_while(|m| !matches!(m, Message::User { .. }))
            .any(|m| matches!(m, Message::Tool { .. }));
        Box::pin(async move {
            if !calculated {
                return Ok(ModelReply::tool_call(
                    "calculator",
                    r#"{"operation": "add", "a": 2, "b": 3}"#,
                ));
            }
            let _permit = self.open.acquire().await;
            if let Some(sink) = &cx.on_delta {
                sink("Done ");
                sink("at last.");
            }
            Ok(ModelReply::text("Done at last."))
        })
    }
}

struct Server {
    base: String,
    http: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    served: Option<JoinHandle<std::io::Result<()>>>,
    _dir: TempDir,
}

/// The tokens of tenants acme and globex.
const ACME: &str = "cx_acme_token";
const GLOBEX: &str = "cx_globex_token";

fn hash(token: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(token.as_bytes());
    format!(
        "sha256:{}",
        digest.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

impl Server {
    async fn start(builder: impl FnOnce(&Path) -> RuntimeBuilder, tokens: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let rt = builder(dir.path())
            .sqlite(dir.path().join("concierge.db"))
            .build()
            .await
            .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let mut api = HttpApi::new(rt);
        if tokens {
            let entries: Vec<TokenConfig> = [(ACME, "acme"), (GLOBEX, "globex")]
                .into_iter()
                .map(|(token, tenant)| TokenConfig {
                    hash: hash(token),
                    tenant: tenant.into(),
                    user: "ana".into(),
                })
                .collect();
            api = api.tokens(Tokens::from_config(&entries).unwrap());
        }
        let served = tokio::spawn(api.serve(listener, async move {
            let _ = stopped.await;
        }));
        Self {
            base,
            http: reqwest::Client::new(),
            stop: Some(stop),
            served: Some(served),
            _dir: dir,
        }
    }

    /// The scripted model's server: its gate, and a channel told of each model call.
    async fn gated(tokens: bool) -> (Self, Arc<Semaphore>, mpsc::UnboundedReceiver<()>) {
        let (asked, was_asked) = mpsc::unbounded_channel();
        let open = Arc::new(Semaphore::new(0));
        let gate = open.clone();
        let server = Self::start(
            move |_| {
                Runtime::builder()
                    .toolset(concierge_demo::calculator::toolset())
                    .agent(
                        AgentSpec::new("helper")
                            .instructions("Help.")
                            .description("Adds numbers, slowly.")
                            .toolset("math"),
                    )
                    .model(Gated { asked, open: gate })
            },
            tokens,
        )
        .await;
        (server, open, was_asked)
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn post(&self, path: &str, token: Option<&str>) -> reqwest::RequestBuilder {
        let request = self.http.post(self.url(path));
        match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// A JSON-RPC call at `path`; the whole response.
    async fn rpc_at(&self, path: &str, token: Option<&str>, method: &str, params: Value) -> Value {
        let response = self
            .post(path, token)
            .json(&json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["id"], 7, "{body}");
        body
    }

    async fn rpc(&self, method: &str, params: Value) -> Value {
        self.rpc_at("/a2a/jsonrpc", None, method, params).await
    }

    async fn get(&self, path: &str, token: Option<&str>) -> (StatusCode, Value) {
        let mut request = self.http.get(self.url(path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        (response.status(), response.json().await.unwrap())
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(served) = self.served.take() {
            served.await.unwrap().unwrap();
        }
    }
}

fn user(text: &str) -> Value {
    json!({"messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{"text": text}]})
}

/// A task's status message's data part.
fn data_part(task: &Value) -> Value {
    task["status"]["message"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|p| p.get("data").cloned())
        .unwrap_or_else(|| panic!("no data part: {task}"))
}

fn status_text(task: &Value) -> String {
    task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The `data` and `id` of each event of an SSE response, until it ends.
async fn read_events(response: reqwest::Response) -> Vec<(Value, String)> {
    assert_eq!(response.status(), StatusCode::OK);
    response
        .bytes_stream()
        .eventsource()
        .map(|event| {
            let event = event.unwrap();
            (serde_json::from_str(&event.data).unwrap(), event.id)
        })
        .collect()
        .await
}

#[tokio::test]
async fn the_cards_offer_the_goals_and_name_both_bindings_on_the_host() {
    let server = Server::start(demo, false).await;
    let (status, card) = server.get("/.well-known/agent-card.json", None).await;
    assert_eq!(status, StatusCode::OK, "{card}");
    assert_eq!(card["name"], "concierge");
    let skills: Vec<&str> = card["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    for goal in ["task", "qa", "tracking"] {
        assert!(skills.contains(&goal), "{skills:?}");
    }
    let interfaces = card["supportedInterfaces"].as_array().unwrap();
    assert_eq!(interfaces[0]["url"], server.url("/a2a/jsonrpc"));
    assert_eq!(interfaces[0]["protocolBinding"], "JSONRPC");
    assert_eq!(interfaces[0]["protocolVersion"], "1.0");
    assert_eq!(interfaces[1]["url"], server.url("/a2a/rest"));
    assert_eq!(interfaces[1]["protocolBinding"], "HTTP+JSON");
    assert_eq!(card["capabilities"]["streaming"], true);
    assert!(card.get("securitySchemes").is_none(), "{card}");

    let (status, task) = server.get("/a2a/agents/task/.well-known/agent-card.json", None).await;
    assert_eq!(status, StatusCode::OK, "{task}");
    assert_eq!(task["skills"][0]["id"], "task");
    assert_eq!(
        task["supportedInterfaces"][0]["url"],
        server.url("/a2a/agents/task/jsonrpc")
    );
    let (status, missing) = server.get("/a2a/agents/nobody/.well-known/agent-card.json", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{missing}");
    server.stop().await;
}

#[tokio::test]
async fn a_message_is_a_task_that_completes_and_reads_back_in_both_bindings() {
    let (server, open, _asked) = Server::gated(false).await;
    open.add_permits(1);
    let sent = server.rpc("SendMessage", json!({"message": user("add 2 and 3")})).await;
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "Done at last.");
    let id = task["id"].as_str().unwrap().to_string();
    let context = task["contextId"].as_str().unwrap().to_string();
    assert!(id.starts_with(&format!("{context}~run-")), "{id}");
    let history = task["history"].as_array().unwrap();
    assert_eq!(history[0]["role"], "ROLE_USER");
    assert_eq!(history[0]["parts"][0]["text"], "add 2 and 3");
    assert_eq!(history.last().unwrap()["role"], "ROLE_AGENT");

    let got = server.rpc("GetTask", json!({"id": id, "historyLength": 1})).await;
    assert_eq!(got["result"]["status"]["state"], "TASK_STATE_COMPLETED", "{got}");
    assert_eq!(got["result"]["history"].as_array().unwrap().len(), 1);
    let (status, rest) = server.get(&format!("/a2a/rest/tasks/{id}"), None).await;
    assert_eq!(status, StatusCode::OK, "{rest}");
    assert_eq!(rest["id"], id);

    // The same context goes on: a second task in the session.
    let response = server
        .post("/a2a/rest/message:send", None)
        .header("Content-Type", "application/a2a+json")
        .json(&json!({"message": {"messageId": "m2", "role": "ROLE_USER", "contextId": context, "parts": [{"text": "again"}]}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let second: Value = response.json().await.unwrap();
    assert_eq!(second["task"]["contextId"], context.as_str(), "{second}");
    assert_ne!(second["task"]["id"], id.as_str());
    let listed = server.rpc("ListTasks", json!({"contextId": context})).await;
    let tasks = listed["result"]["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2, "{listed}");
    assert_eq!(tasks[0]["id"], second["task"]["id"], "the most recent first");
    assert!(tasks[0].get("artifacts").is_none(), "artifacts only when asked");
    assert_eq!(listed["result"]["nextPageToken"], "");
    let (_, page) = server
        .get(&format!("/a2a/rest/tasks?contextId={context}&pageSize=1"), None)
        .await;
    assert_eq!(page["tasks"].as_array().unwrap().len(), 1, "{page}");
    assert_eq!(page["nextPageToken"], "1");
    assert_eq!(page["totalSize"], 2);
    server.stop().await;
}

#[tokio::test]
async fn a_streamed_message_sends_the_task_its_tool_call_the_reply_in_chunks_and_the_end() {
    let (server, open, _asked) = Server::gated(false).await;
    open.add_permits(1);
    let response = server
        .post("/a2a/rest/message:stream", None)
        .json(&json!({"message": user("add 2 and 3")}))
        .send()
        .await
        .unwrap();
    let events = read_events(response).await;
    assert_eq!(
        events[0].0["task"]["status"]["state"], "TASK_STATE_WORKING",
        "{events:?}"
    );
    let calling = events
        .iter()
        .any(|(e, _)| e["statusUpdate"]["status"]["message"]["parts"][0]["text"] == "Calling calculator.");
    assert!(calling, "{events:?}");
    let chunks: String = events
        .iter()
        .filter_map(|(e, _)| e["artifactUpdate"]["artifact"]["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(chunks, "Done at last.", "{events:?}");
    let (last, place) = events.last().unwrap();
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{events:?}"
    );
    assert!(!place.is_empty(), "each update carries its place");

    // Through JSON-RPC, each event is a JSON-RPC response.
    let response = server
        .post("/a2a/jsonrpc", None)
        .json(&json!({"jsonrpc": "2.0", "id": "s1", "method": "SendStreamingMessage", "params": {"message": user("once more")}}))
        .send()
        .await
        .unwrap();
    let events = read_events(response).await;
    assert!(
        events.iter().all(|(e, _)| e["jsonrpc"] == "2.0" && e["id"] == "s1"),
        "{events:?}"
    );
    assert_eq!(
        events.last().unwrap().0["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    server.stop().await;
}

#[tokio::test]
async fn subscribe_after_a_dropped_stream_resumes_from_its_place_not_a_snapshot() {
    let (server, open, mut asked) = Server::gated(false).await;
    let response = server
        .post("/a2a/rest/message:stream", None)
        .json(&json!({"message": user("add 2 and 3")}))
        .send()
        .await
        .unwrap();
    let mut stream = response.bytes_stream().eventsource();
    let first: Value = serde_json::from_str(&stream.next().await.unwrap().unwrap().data).unwrap();
    let id = first["task"]["id"].as_str().unwrap().to_string();
    let started = stream.next().await.unwrap().unwrap();
    let started_data: Value = serde_json::from_str(&started.data).unwrap();
    assert_eq!(started_data["statusUpdate"]["status"]["state"], "TASK_STATE_WORKING");
    let place = started.id.clone();
    assert!(!place.is_empty());
    drop(stream);
    // Meanwhile the run calls the calculator and waits at the gate.
    asked.recv().await.unwrap();
    asked.recv().await.unwrap();

    let resumed = server
        .post(&format!("/a2a/rest/tasks/{id}:subscribe"), None)
        .header("Last-Event-ID", &place)
        .send()
        .await
        .unwrap();
    let fresh = server.rpc_at("/a2a/jsonrpc", None, "GetTask", json!({"id": id})).await;
    assert_eq!(fresh["result"]["status"]["state"], "TASK_STATE_WORKING", "{fresh}");
    let from_now = server
        .post(&format!("/a2a/rest/tasks/{id}:subscribe"), None)
        .send()
        .await
        .unwrap();
    open.add_permits(1);
    let resumed = read_events(resumed).await;
    assert_eq!(resumed[0].0["task"]["id"], id.as_str(), "the task comes first");
    let texts: Vec<String> = resumed
        .iter()
        .filter_map(|(e, _)| {
            e["statusUpdate"]["status"]["message"]["parts"][0]["text"]
                .as_str()
                .map(str::to_string)
        })
        .collect();
    assert!(
        texts.contains(&"Calling calculator.".to_string()),
        "missed while away: {resumed:?}"
    );
    let chunks: String = resumed
        .iter()
        .filter_map(|(e, _)| e["artifactUpdate"]["artifact"]["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(chunks, "Done at last.");
    assert_eq!(
        resumed.last().unwrap().0["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    // Without a place, the stream starts now: the tool call is behind it.
    let from_now = read_events(from_now).await;
    assert!(
        !from_now
            .iter()
            .any(|(e, _)| e["statusUpdate"]["status"]["message"]["parts"][0]["text"] == "Calling calculator."),
        "{from_now:?}"
    );
    assert_eq!(
        from_now.last().unwrap().0["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    // A completed task has nothing to subscribe to.
    let ended = server.rpc("SubscribeToTask", json!({"id": id})).await;
    assert_eq!(ended["error"]["code"], -32004, "{ended}");
    server.stop().await;
}

#[tokio::test]
async fn cancel_ends_a_working_task_and_an_ended_one_is_not_cancelable() {
    let (server, open, mut asked) = Server::gated(false).await;
    let sent = server
        .rpc(
            "SendMessage",
            json!({"message": user("add 2 and 3"), "configuration": {"returnImmediately": true}}),
        )
        .await;
    assert_eq!(
        sent["result"]["task"]["status"]["state"], "TASK_STATE_WORKING",
        "{sent}"
    );
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_string();
    asked.recv().await.unwrap();
    asked.recv().await.unwrap();
    let response = server
        .post(&format!("/a2a/rest/tasks/{id}:cancel"), None)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let cancelled: Value = response.json().await.unwrap();
    assert_eq!(cancelled["status"]["state"], "TASK_STATE_CANCELED", "{cancelled}");
    let again = server.rpc("CancelTask", json!({"id": id})).await;
    assert_eq!(again["error"]["code"], -32002, "{again}");
    let response = server
        .post(&format!("/a2a/rest/tasks/{id}:cancel"), None)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["details"][0]["reason"], "TASK_NOT_CANCELABLE", "{body}");
    open.add_permits(1);
    server.stop().await;
}

#[tokio::test]
async fn a_confirmation_is_input_required_and_answered_by_its_data_part_or_in_words() {
    let server = Server::start(demo, false).await;
    let at = "/a2a/agents/task/jsonrpc";
    let asked = server
        .rpc_at(
            at,
            None,
            "SendMessage",
            json!({"message": user("create a task to review the budget due Friday with high priority")}),
        )
        .await;
    let task = &asked["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{asked}");
    assert!(status_text(task).starts_with("I'll "), "{task}");
    let data = data_part(task);
    assert_eq!(data["kind"], "confirmation");
    assert_eq!(data["tool"], "create_task");
    let id = task["id"].as_str().unwrap().to_string();
    let context = task["contextId"].as_str().unwrap().to_string();

    // A new message to the context is refused while it waits.
    let busy = server
        .rpc_at(at, None, "SendMessage", json!({"message": {"messageId": "x", "role": "ROLE_USER", "contextId": context, "parts": [{"text": "hello"}]}}))
        .await;
    assert_eq!(busy["error"]["code"], -32004, "{busy}");
    assert!(busy["error"]["message"].as_str().unwrap().contains(&id), "{busy}");
    // A wrong fingerprint is refused, and nothing runs.
    let answer = |fingerprint: &str| {
        json!({"message": {"messageId": format!("a-{fingerprint}"), "role": "ROLE_USER", "taskId": id, "parts": [{"data": {
            "callId": data["callId"], "fingerprint": fingerprint, "decision": "approve"
        }}]}})
    };
    let refused = server
        .rpc_at(at, None, "SendMessage", answer("not-the-fingerprint"))
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(
        refused["error"]["data"][0]["fieldViolations"][0]["field"], "message.parts[0].data.fingerprint",
        "{refused}"
    );
    let still = server.rpc_at(at, None, "GetTask", json!({"id": id})).await;
    assert_eq!(still["result"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let done = server
        .rpc_at(at, None, "SendMessage", answer(data["fingerprint"].as_str().unwrap()))
        .await;
    let task = &done["result"]["task"];
    assert_eq!(task["id"], id.as_str());
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    let reply = task["artifacts"][0]["parts"][0]["text"].as_str().unwrap();
    assert!(
        reply.contains("Created task") && reply.contains("Review the budget"),
        "{reply}"
    );

    // A second one in the same context, answered in words.
    let asked = server
        .rpc_at(at, None, "SendMessage", json!({"message": {"messageId": "m3", "role": "ROLE_USER", "contextId": context, "parts": [{"text": "create a task to water the plants"}]}}))
        .await;
    let second = asked["result"]["task"]["id"].as_str().unwrap().to_string();
    assert_eq!(
        asked["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{asked}"
    );
    let yes = server
        .rpc_at(
            at,
            None,
            "SendMessage",
            json!({"message": {"messageId": "m4", "role": "ROLE_USER", "taskId": second, "parts": [{"text": "yes"}]}}),
        )
        .await;
    assert_eq!(
        yes["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{yes}"
    );
    assert!(
        yes["result"]["task"]["artifacts"][0]["parts"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Created task"),
        "{yes}"
    );
    // An ended task takes no more answers.
    let late = server
        .rpc_at(
            at,
            None,
            "SendMessage",
            json!({"message": {"messageId": "m5", "role": "ROLE_USER", "taskId": second, "parts": [{"text": "yes"}]}}),
        )
        .await;
    assert_eq!(late["error"]["code"], -32004, "{late}");
    server.stop().await;
}

#[tokio::test]
async fn a_choice_is_input_required_with_its_options_and_its_answer_goes_on_in_the_same_task() {
    let server = Server::start(demo, false).await;
    let at = "/a2a/agents/task/jsonrpc";
    let asked = server
        .rpc_at(at, None, "SendMessage", json!({"message": user("complete the fix")}))
        .await;
    let task = &asked["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{asked}");
    let data = data_part(task);
    assert_eq!(data["kind"], "choice", "{data}");
    let options = data["options"].as_array().unwrap();
    assert!(options.len() >= 2, "{data}");
    assert!(status_text(task).contains("\n2. "), "{task}");
    let id = task["id"].as_str().unwrap().to_string();
    // A call that is not the pending one is refused.
    let wrong = server
        .rpc_at(at, None, "SendMessage", json!({"message": {"messageId": "w", "role": "ROLE_USER", "taskId": id, "parts": [{"data": {"callId": "call_99", "option": 2}}]}}))
        .await;
    assert_eq!(wrong["error"]["code"], -32602, "{wrong}");
    // "2" in words: the same task asks to confirm marking #5 done.
    let chosen = server
        .rpc_at(
            at,
            None,
            "SendMessage",
            json!({"message": {"messageId": "c", "role": "ROLE_USER", "taskId": id, "parts": [{"text": "2"}]}}),
        )
        .await;
    let task = &chosen["result"]["task"];
    assert_eq!(task["id"], id.as_str(), "{chosen}");
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{chosen}");
    assert!(status_text(task).starts_with("I'll mark #5"), "{task}");
    let confirm = data_part(task);
    let done = server
        .rpc_at(
            at,
            None,
            "SendMessage",
            json!({"message": {"messageId": "d", "role": "ROLE_USER", "taskId": id, "parts": [{"data": {
                "callId": confirm["callId"], "fingerprint": confirm["fingerprint"], "approved": true
            }}]}}),
        )
        .await;
    assert_eq!(
        done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );
    let listed = server
        .rpc_at(at, None, "ListTasks", json!({"contextId": task["contextId"]}))
        .await;
    assert_eq!(
        listed["result"]["tasks"].as_array().unwrap().len(),
        1,
        "one task, two runs: {listed}"
    );
    server.stop().await;
}

#[tokio::test]
async fn another_tenant_finds_neither_the_task_nor_the_context() {
    let (server, open, _asked) = Server::gated(true).await;
    open.add_permits(1);
    let (status, card) = server.get("/.well-known/agent-card.json", None).await;
    assert_eq!(status, StatusCode::OK, "the card is public");
    assert!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"].is_object(),
        "{card}"
    );
    let response = server
        .post("/a2a/jsonrpc", None)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);

    let sent = server
        .rpc_at(
            "/a2a/jsonrpc",
            Some(ACME),
            "SendMessage",
            json!({"message": user("add 2 and 3")}),
        )
        .await;
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_string();
    let context = sent["result"]["task"]["contextId"].as_str().unwrap().to_string();
    for (method, params) in [
        ("GetTask", json!({"id": id})),
        ("CancelTask", json!({"id": id})),
        ("SubscribeToTask", json!({"id": id})),
        (
            "SendMessage",
            json!({"message": {"messageId": "g", "role": "ROLE_USER", "taskId": id, "parts": [{"text": "yes"}]}}),
        ),
    ] {
        let refused = server.rpc_at("/a2a/jsonrpc", Some(GLOBEX), method, params).await;
        assert_eq!(refused["error"]["code"], -32001, "{method}: {refused}");
        assert!(
            !refused["error"]["message"].as_str().unwrap().contains("acme"),
            "{refused}"
        );
    }
    let (status, body) = server.get(&format!("/a2a/rest/tasks/{id}"), Some(GLOBEX)).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(body["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
    let listed = server
        .rpc_at("/a2a/jsonrpc", Some(GLOBEX), "ListTasks", json!({}))
        .await;
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");
    let listed = server
        .rpc_at("/a2a/jsonrpc", Some(GLOBEX), "ListTasks", json!({"contextId": context}))
        .await;
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");
    // Globex's message naming acme's context does not reach it.
    let _ = server
        .rpc_at(
            "/a2a/jsonrpc",
            Some(GLOBEX),
            "SendMessage",
            json!({"message": {"messageId": "h", "role": "ROLE_USER", "contextId": context, "parts": [{"text": "hi"}]}}),
        )
        .await;
    let mine = server
        .rpc_at("/a2a/jsonrpc", Some(ACME), "ListTasks", json!({"contextId": context}))
        .await;
    assert_eq!(mine["result"]["tasks"].as_array().unwrap().len(), 1, "{mine}");
    let own = server
        .rpc_at("/a2a/jsonrpc", Some(ACME), "GetTask", json!({"id": id}))
        .await;
    assert_eq!(own["result"]["status"]["state"], "TASK_STATE_COMPLETED", "{own}");
    // A task id naming acme's run in another context is no task either.
    let forged = format!("other~{}", id.split_once('~').unwrap().1);
    let refused = server
        .rpc_at("/a2a/jsonrpc", Some(ACME), "GetTask", json!({"id": forged}))
        .await;
    assert_eq!(refused["error"]["code"], -32001, "{refused}");
    server.stop().await;
}

#[tokio::test]
async fn each_malformed_request_is_refused_naming_its_field() {
    let server = Server::start(demo, false).await;
    let raw = |body: &'static str| {
        server
            .post("/a2a/jsonrpc", None)
            .header("Content-Type", "application/json")
            .body(body)
            .send()
    };
    let body: Value = raw("{not json").await.unwrap().json().await.unwrap();
    assert_eq!(body["error"]["code"], -32700, "{body}");
    let body: Value = raw(r#"{"jsonrpc": "2.0", "id": 1}"#)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(body["error"]["code"], -32600, "{body}");
    let body: Value = raw(r#"{"jsonrpc": "2.0", "id": 1, "method": "Fly"}"#)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(body["error"]["code"], -32601, "{body}");
    for (params, field) in [
        (json!({}), "message"),
        (
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}}),
            "message.parts",
        ),
        (
            json!({"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}}),
            "message.role",
        ),
        (
            json!({"message": {"role": "ROLE_USER", "parts": [{"text": "hi"}]}}),
            "message.messageId",
        ),
        (
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}], "contextId": "a/b"}}),
            "message.contextId",
        ),
    ] {
        let body = server.rpc("SendMessage", params.clone()).await;
        assert_eq!(body["error"]["code"], -32602, "{params}: {body}");
        assert_eq!(body["error"]["data"][0]["fieldViolations"][0]["field"], field, "{body}");
    }
    let body = server.rpc("GetTask", json!({"id": 5})).await;
    assert_eq!(body["error"]["data"][0]["fieldViolations"][0]["field"], "id", "{body}");
    let body = server.rpc("GetTask", json!({"id": "nobody~run-1"})).await;
    assert_eq!(body["error"]["code"], -32001, "{body}");
    let response = server
        .post("/a2a/jsonrpc", None)
        .header("A2A-Version", "0.3")
        .json(&json!({"jsonrpc": "2.0", "id": 7, "method": "ListTasks"}))
        .send()
        .await
        .unwrap();
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32009, "{body}");

    let response = server
        .post("/a2a/rest/message:send", None)
        .json(&json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"kind": "text"}]}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["error"]["details"][0]["fieldViolations"][0]["field"], "message.parts[0]",
        "{body}"
    );
    let (status, body) = server.get("/a2a/rest/tasks?pageSize=many", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["details"][0]["fieldViolations"][0]["field"], "pageSize");
    let (status, body) = server.get("/a2a/rest/tasks?status=DONE", None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["details"][0]["fieldViolations"][0]["field"], "status");
    server.stop().await;
}

/// A push receiver: what was posted to each path, with its headers.
type Pushed = Arc<std::sync::Mutex<Vec<(String, axum::http::HeaderMap, Value)>>>;

async fn push_receiver() -> (String, Pushed) {
    let pushed: Pushed = Arc::default();
    let keep = pushed.clone();
    let app = axum::Router::new().route(
        "/{path}",
        axum::routing::post(
            move |axum::extract::Path(path): axum::extract::Path<String>,
                  headers: axum::http::HeaderMap,
                  body: axum::Json<Value>| {
                let keep = keep.clone();
                async move {
                    keep.lock().unwrap().push((path, headers, body.0));
                    StatusCode::OK
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (base, pushed)
}

/// Waits until `pushed` holds a push to `path` whose task is in `state`.
async fn pushed_state(pushed: &Pushed, path: &str, state: &str) -> (axum::http::HeaderMap, Value) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let found = pushed
            .lock()
            .unwrap()
            .iter()
            .find(|(p, _, body)| p == path && body["task"]["status"]["state"] == state)
            .map(|(_, headers, body)| (headers.clone(), body.clone()));
        if let Some(found) = found {
            return found;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no push of {state} to /{path}: {:?}",
            pushed
                .lock()
                .unwrap()
                .iter()
                .map(|(p, _, b)| (p.clone(), b.clone()))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_notifications_post_the_task_to_its_url_with_its_token_for_its_tenant_only() {
    let (receiver, pushed) = push_receiver().await;
    let server = Server::start(demo, true).await;
    let card: Value = server
        .http
        .get(server.url("/a2a/agents/task/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["capabilities"]["pushNotifications"], true, "{card}");
    let at = "/a2a/agents/task/jsonrpc";

    // A config that comes with the message sees the task's first stop.
    let asked = server
        .rpc_at(
            at,
            Some(ACME),
            "SendMessage",
            json!({
                "message": user("create a task to review the budget due Friday with high priority"),
                "configuration": {"taskPushNotificationConfig": {"url": format!("{receiver}/first"), "token": "tok-1"}},
            }),
        )
        .await;
    let task = &asked["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{asked}");
    let id = task["id"].as_str().unwrap().to_string();
    let data = data_part(task);
    let (headers, body) = pushed_state(&pushed, "first", "TASK_STATE_INPUT_REQUIRED").await;
    assert_eq!(body["task"]["id"], id.as_str());
    assert_eq!(headers["x-a2a-notification-token"], "tok-1");

    // A second config, in A2A 0.3's method and shape, with authentication.
    let set = server
        .rpc_at(
            at,
            Some(ACME),
            "tasks/pushNotificationConfig/set",
            json!({"taskId": id, "pushNotificationConfig": {
                "id": "second", "url": format!("{receiver}/second"),
                "authentication": {"schemes": ["Bearer"], "credentials": "xyz"}
            }}),
        )
        .await;
    assert_eq!(set["result"]["id"], "second", "{set}");
    assert_eq!(set["result"]["taskId"], id.as_str(), "{set}");

    // Another tenant finds no such task, whatever it asks.
    for (method, params) in [
        (
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": format!("{receiver}/evil")}),
        ),
        ("GetTaskPushNotificationConfig", json!({"taskId": id, "id": "second"})),
        ("ListTaskPushNotificationConfigs", json!({"taskId": id})),
        (
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": id, "id": "second"}),
        ),
    ] {
        let refused = server.rpc_at(at, Some(GLOBEX), method, params).await;
        assert_eq!(refused["error"]["code"], -32001, "{method}: {refused}");
    }
    let listed = server
        .rpc_at(at, Some(ACME), "ListTaskPushNotificationConfigs", json!({"taskId": id}))
        .await;
    assert_eq!(listed["result"]["configs"].as_array().unwrap().len(), 2, "{listed}");
    let got = server
        .rpc_at(
            at,
            Some(ACME),
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "second"}),
        )
        .await;
    assert_eq!(got["result"]["authentication"]["scheme"], "Bearer", "{got}");

    // Answered: the completed task goes to both.
    let done = server
        .rpc_at(
            at,
            Some(ACME),
            "SendMessage",
            json!({"message": {"messageId": "a1", "role": "ROLE_USER", "taskId": id, "parts": [{"data": {
                "callId": data["callId"], "fingerprint": data["fingerprint"], "decision": "approve"
            }}]}}),
        )
        .await;
    assert_eq!(
        done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );
    let (headers, _) = pushed_state(&pushed, "first", "TASK_STATE_COMPLETED").await;
    assert_eq!(headers["x-a2a-notification-token"], "tok-1");
    let (headers, body) = pushed_state(&pushed, "second", "TASK_STATE_COMPLETED").await;
    assert_eq!(headers["authorization"], "Bearer xyz");
    assert!(
        body["task"]["artifacts"].to_string().contains("Review the budget"),
        "{body}"
    );
    assert!(
        !pushed.lock().unwrap().iter().any(|(p, _, _)| p == "evil"),
        "the other tenant's config was never set"
    );

    // The REST binding lists, and deletes.
    let path = format!("/a2a/agents/task/rest/tasks/{id}/pushNotificationConfigs");
    let (status, body) = server.get(&path, Some(ACME)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["configs"].as_array().unwrap().len(), 2, "{body}");
    let response = server
        .http
        .delete(server.url(&format!("{path}/second")))
        .bearer_auth(ACME)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let (_, body) = server.get(&path, Some(ACME)).await;
    assert_eq!(body["configs"].as_array().unwrap().len(), 1, "{body}");
    let (status, _) = server.get(&path, Some(GLOBEX)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // A URL that is not one is refused, naming the field.
    let refused = server
        .rpc_at(
            at,
            Some(ACME),
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": "ftp://x"}),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(
        refused["error"]["data"][0]["fieldViolations"][0]["field"], "url",
        "{refused}"
    );
    server.stop().await;
}
