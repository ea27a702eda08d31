//! The AG-UI endpoint (`POST /api/v1/agui`) through real HTTP on loopback:
//! a server bound to 127.0.0.1:0 over a runtime with the calculator and the
//! task manager's agents, or the CRM's router and specialists (all on their
//! rules: no model), driven with reqwest; the Server-Sent Events are read
//! as AG-UI events.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use concierge::Runtime;
use concierge::config::{Config, load_agents};
use concierge_demo::tasks::{Knowledge, TaskStore, toolset_with};
use concierge_server::HttpApi;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name)
}

/// Which agents the server's runtime has.
enum Agents {
    /// The demo agents (the calculator) and the task manager's.
    Tasks,
    /// The CRM's router and its specialists (agents called as tools).
    Crm,
    /// The calculator planning with a model that streams its answer.
    Streaming,
}

/// A model that streams "6 * 7 is 42." in three pieces and uses 12 + 5 tokens.
struct StreamingModel;

impl concierge::Model for StreamingModel {
    fn name(&self) -> String {
        "test:streaming".into()
    }

    fn complete<'a>(
        &'a self,
        _request: &'a concierge::ModelRequest,
        cx: &'a concierge::model::ModelContext,
    ) -> futures::future::BoxFuture<'a, Result<concierge::ModelReply, concierge::ModelError>> {
        Box::pin(async move {
            if let Some(sink) = &cx.on_delta {
                for piece in ["6 * 7 ", "is ", "42."] {
                    sink(piece);
                }
            }
            Ok(concierge::ModelReply::text("6 * 7 is 42.").with_usage(12, 5))
        })
    }
}

struct Server {
    base: String,
    http: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    served: Option<JoinHandle<std::io::Result<()>>>,
    rt: Runtime,
    _dir: TempDir,
}

impl Server {
    async fn start(agents: Agents) -> Self {
        Self::with(agents, |api| api).await
    }

    async fn with(agents: Agents, api: impl FnOnce(HttpApi) -> HttpApi) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let builder = Runtime::builder().sqlite(dir.path().join("concierge.db"));
        let builder = match agents {
            Agents::Tasks => {
                let store = TaskStore::open(dir.path().join("tasks.db"));
                let knowledge = Knowledge::open(example("tasks").join("knowledge.md"));
                let mut agents = concierge_demo::agents();
                agents.extend(load_agents(&example("tasks").join("agents")).unwrap().agents);
                builder
                    .toolset(concierge_demo::calculator::toolset())
                    .toolset(toolset_with(store, knowledge))
                    .agents(agents)
            }
            Agents::Crm => {
                let config = Config::load(&example("crm").join("concierge.toml"), true).unwrap();
                let agents = load_agents(&config.agents_dir.clone().unwrap()).unwrap().agents;
                let store = concierge_demo::crm::CrmStore::open(dir.path().join("crm.db"));
                let builder = builder.toolset(concierge_demo::crm::toolset_with(store)).agents(agents);
                config.apply_hub(builder)
            }
            Agents::Streaming => builder
                .toolset(concierge_demo::calculator::toolset())
                .agents(concierge_demo::agents())
                .model(StreamingModel),
        };
        let rt = builder.build().await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = oneshot::channel::<()>();
        let server = api(HttpApi::new(rt.clone()));
        let served = tokio::spawn(server.serve(listener, async move {
            let _ = stopped.await;
        }));
        Self {
            base,
            http: reqwest::Client::new(),
            stop: Some(stop),
            served: Some(served),
            rt,
            _dir: dir,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Posts `input` to the AG-UI endpoint; the AG-UI events it streams.
    async fn agui(&self, input: Value) -> Vec<Value> {
        let response = self
            .http
            .post(self.url("/api/v1/agui"))
            .header("accept", "text/event-stream")
            .json(&input)
            .send()
            .await
            .unwrap();
        let status = response.status();
        if status != StatusCode::OK {
            panic!("{status}: {}", response.text().await.unwrap());
        }
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        let mut stream = response.bytes_stream().eventsource();
        let mut events = Vec::new();
        while let Some(event) = stream.next().await {
            let event = event.unwrap();
            events.push(serde_json::from_str::<Value>(&event.data).unwrap());
        }
        events
    }

    /// Posts a raw body; the status and the JSON error.
    async fn agui_raw(&self, body: &str) -> (StatusCode, Value) {
        let response = self
            .http
            .post(self.url("/api/v1/agui"))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        let status = response.status();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str) -> Value {
        self.http
            .get(self.url(path))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(served) = self.served.take() {
            served.await.unwrap().unwrap();
        }
        self.rt.shutdown().await;
    }
}

/// A `RunAgentInput` asking `text` in `thread`.
fn ask(thread: &str, run: &str, text: &str) -> Value {
    json!({
        "threadId": thread,
        "runId": run,
        "messages": [{"id": "m1", "role": "user", "content": text}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    })
}

/// A `RunAgentInput` answering `interrupt` with `payload`.
fn resume(thread: &str, run: &str, interrupt: &str, payload: Value) -> Value {
    json!({
        "threadId": thread,
        "runId": run,
        "messages": [],
        "resume": [{"interruptId": interrupt, "status": "resolved", "payload": payload}],
    })
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn last(events: &[Value]) -> &Value {
    events.last().unwrap()
}

/// The run's only interrupt (its RUN_FINISHED must carry one).
fn interrupt_of(events: &[Value]) -> Value {
    let finished = last(events);
    assert_eq!(finished["type"], "RUN_FINISHED", "{events:#?}");
    assert_eq!(finished["outcome"]["type"], "interrupt", "{finished}");
    let interrupts = finished["outcome"]["interrupts"].as_array().unwrap();
    assert_eq!(interrupts.len(), 1, "{finished}");
    interrupts[0].clone()
}

/// The text of every text message, in order.
fn texts(events: &[Value]) -> Vec<String> {
    let mut texts: Vec<(String, String)> = Vec::new();
    for event in events {
        match event["type"].as_str().unwrap() {
            "TEXT_MESSAGE_START" => texts.push((event["messageId"].as_str().unwrap().into(), String::new())),
            "TEXT_MESSAGE_CONTENT" => {
                let (id, text) = texts.last_mut().unwrap();
                assert_eq!(id, event["messageId"].as_str().unwrap());
                text.push_str(event["delta"].as_str().unwrap());
            }
            _ => {}
        }
    }
    texts.into_iter().map(|(_, text)| text).collect()
}

/// The state after the run's STATE_SNAPSHOT and STATE_DELTA events.
fn state_after(events: &[Value]) -> Value {
    let mut state = Value::Null;
    for event in events {
        match event["type"].as_str().unwrap() {
            "STATE_SNAPSHOT" => state = event["snapshot"].clone(),
            "STATE_DELTA" => {
                let patch: json_patch::Patch = serde_json::from_value(event["delta"].clone()).unwrap();
                json_patch::patch(&mut state, &patch).unwrap();
            }
            _ => {}
        }
    }
    state
}

/// Every AG-UI ordering rule the reference client enforces: one run, its
/// first event RUN_STARTED and its last RUN_FINISHED or RUN_ERROR; text
/// messages, tool calls, steps (per subagent) and subagents opened before
/// use and closed before the end.
fn assert_well_formed(events: &[Value]) {
    use std::collections::BTreeSet;
    let kinds = types(events);
    assert_eq!(kinds[0], "RUN_STARTED", "{kinds:?}");
    assert!(
        matches!(*kinds.last().unwrap(), "RUN_FINISHED" | "RUN_ERROR"),
        "{kinds:?}"
    );
    assert_eq!(kinds.iter().filter(|k| k.starts_with("RUN_")).count(), 2, "{kinds:?}");
    let (mut texts, mut calls, mut steps, mut subagents) =
        (BTreeSet::new(), BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for event in events {
        let sub = event["subagentRunId"].as_str().unwrap_or("").to_string();
        if !sub.is_empty() && !event["type"].as_str().unwrap().starts_with("SUBAGENT_") {
            assert!(subagents.contains(&sub), "{event} is not in an open subagent");
        }
        let id = |key: &str| event[key].as_str().unwrap().to_string();
        match event["type"].as_str().unwrap() {
            "TEXT_MESSAGE_START" => assert!(texts.insert(id("messageId")), "{event}"),
            "TEXT_MESSAGE_CONTENT" => assert!(texts.contains(&id("messageId")), "{event}"),
            "TEXT_MESSAGE_END" => assert!(texts.remove(&id("messageId")), "{event}"),
            "TOOL_CALL_START" => assert!(calls.insert(id("toolCallId")), "{event}"),
            "TOOL_CALL_ARGS" => assert!(calls.contains(&id("toolCallId")), "{event}"),
            "TOOL_CALL_END" => assert!(calls.remove(&id("toolCallId")), "{event}"),
            "STEP_STARTED" => assert!(steps.insert((sub.clone(), id("stepName"))), "{event}"),
            "STEP_FINISHED" => assert!(steps.remove(&(sub.clone(), id("stepName"))), "{event}"),
            "SUBAGENT_STARTED" => assert!(subagents.insert(id("subagentRunId")), "{event}"),
            "SUBAGENT_FINISHED" | "SUBAGENT_ERROR" => assert!(subagents.remove(&id("subagentRunId")), "{event}"),
            _ => {}
        }
    }
    if kinds.last() == Some(&"RUN_FINISHED") {
        assert!(texts.is_empty() && calls.is_empty() && steps.is_empty() && subagents.is_empty());
    }
}

#[tokio::test]
async fn a_simple_run_streams_its_lifecycle_text_tool_call_and_state() {
    let server = Server::start(Agents::Tasks).await;
    let mut input = ask("calc-1", "run-1", "calculate 6 * 7");
    input["forwardedProps"] = json!({"agent": "calculator"});
    let events = server.agui(input).await;
    assert_well_formed(&events);
    let kinds = types(&events);
    assert_eq!(&kinds[..2], ["RUN_STARTED", "STATE_SNAPSHOT"], "{kinds:?}");
    assert_eq!(events[0]["threadId"], "calc-1");
    assert_eq!(events[0]["runId"], "run-1");
    assert_eq!(events[0]["protocolVersion"], "1.0");

    // The tool call: start, its arguments as JSON text, end, then its result.
    let start = of_type(&events, "TOOL_CALL_START")[0];
    assert_eq!(start["toolCallName"], "calculator");
    let call = start["toolCallId"].as_str().unwrap();
    let args = of_type(&events, "TOOL_CALL_ARGS")[0];
    assert_eq!(args["toolCallId"], call);
    let args: Value = serde_json::from_str(args["delta"].as_str().unwrap()).unwrap();
    assert_eq!(args["operation"], "multiply");
    let result = of_type(&events, "TOOL_CALL_RESULT")[0];
    assert_eq!(result["toolCallId"], call);
    assert!(result["content"].as_str().unwrap().contains("42"), "{result}");
    let position = |kind: &str| kinds.iter().position(|k| *k == kind).unwrap();
    assert!(position("TOOL_CALL_END") < position("TOOL_CALL_RESULT"));

    // A rules agent's answer: one message, its whole text as one content.
    assert_eq!(texts(&events), ["6 * 7 = 42"]);
    assert_eq!(of_type(&events, "TEXT_MESSAGE_CONTENT").len(), 1);
    assert_eq!(of_type(&events, "TEXT_MESSAGE_START")[0]["name"], "calculator");

    // The phases as steps.
    let steps: Vec<&str> = of_type(&events, "STEP_STARTED")
        .iter()
        .map(|e| e["stepName"].as_str().unwrap())
        .collect();
    assert!(
        steps.contains(&"tool_execution") && steps.contains(&"synthesis"),
        "{steps:?}"
    );

    // The state: the blackboard at the start, its changes as JSON Patches,
    // ending where the session's blackboard is.
    assert_eq!(events[1]["snapshot"]["iterations"], 0);
    assert!(events[1]["snapshot"]["goal"].is_null());
    assert!(!of_type(&events, "STATE_DELTA").is_empty());
    let blackboard = serde_json::to_value(server.rt.session("calc-1").await.unwrap().blackboard()).unwrap();
    assert_eq!(state_after(&events), blackboard);
    let shown = server.get("/api/v1/sessions/calc-1").await;
    assert_eq!(state_after(&events)["available"], shown["blackboard"], "{shown}");
    assert_eq!(
        state_after(&events)["available"]["last_calculation_result"]["result"],
        42.0
    );

    // The messages: the session's history, with the ids the stream used.
    let snapshot = &of_type(&events, "MESSAGES_SNAPSHOT")[0]["messages"];
    let roles: Vec<&str> = snapshot
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    assert_eq!(snapshot[1]["toolCalls"][0]["id"], call);
    assert_eq!(snapshot[2]["id"], result["messageId"]);
    assert_eq!(
        snapshot[3]["id"],
        of_type(&events, "TEXT_MESSAGE_START")[0]["messageId"]
    );
    assert_eq!(snapshot[3]["content"], "6 * 7 = 42");

    let finished = last(&events);
    assert_eq!(finished["type"], "RUN_FINISHED");
    assert_eq!(finished["outcome"], json!({"type": "success"}));
    assert_eq!(finished["result"], "6 * 7 = 42");
    assert_eq!(finished["runId"], "run-1");

    // The thread goes on: the next run starts from the state the last left,
    // with the last user message of the client's history.
    let mut input = ask("calc-1", "run-2", "calculate 2 + 3");
    input["messages"] = json!([
        {"id": "m1", "role": "user", "content": "calculate 6 * 7"},
        {"id": "a1", "role": "assistant", "content": "6 * 7 = 42"},
        {"id": "m2", "role": "user", "content": [{"type": "text", "text": "calculate 2 + 3"}]},
    ]);
    let second = server.agui(input).await;
    assert_well_formed(&second);
    assert_eq!(second[1]["snapshot"], blackboard);
    assert_eq!(texts(&second), ["2 + 3 = 5"]);
    let snapshot = &of_type(&second, "MESSAGES_SNAPSHOT")[0]["messages"];
    assert_eq!(snapshot.as_array().unwrap().len(), 8);
    server.stop().await;
}

#[tokio::test]
async fn a_confirmation_is_an_interrupt_that_an_approval_resumes_once() {
    let server = Server::start(Agents::Tasks).await;
    let mut input = ask(
        "tasks-1",
        "run-1",
        "create a task to review the budget due Friday with high priority",
    );
    input["forwardedProps"] = json!({"agent": "task"});
    let events = server.agui(input).await;
    assert_well_formed(&events);
    let interrupt = interrupt_of(&events);
    assert_eq!(interrupt["reason"], "tool_call");
    assert_eq!(interrupt["metadata"]["kind"], "confirmation");
    assert_eq!(
        interrupt["message"],
        "I'll create a task 'review the budget' due Friday, priority high. Proceed?"
    );
    let call = of_type(&events, "TOOL_CALL_START")[0]["toolCallId"].clone();
    assert_eq!(interrupt["toolCallId"], call);
    assert_eq!(interrupt["metadata"]["tool"], "create_task");
    assert_eq!(interrupt["responseSchema"]["required"], json!(["approved"]));
    assert!(interrupt["responseSchema"]["properties"]["editedArgs"].is_object());
    let pending = server.get("/api/v1/sessions/tasks-1").await["pending_confirmation"].clone();
    assert_eq!(interrupt["metadata"]["fingerprint"], pending["fingerprint"]);
    assert_eq!(interrupt["metadata"]["callId"], pending["call_id"]);
    let expires = chrono::DateTime::parse_from_rfc3339(interrupt["expiresAt"].as_str().unwrap()).unwrap();
    assert!(
        expires > chrono::Utc::now() + chrono::Duration::minutes(59),
        "{expires}"
    );
    // The state and the messages are sent before the interrupt.
    let kinds = types(&events);
    assert!(kinds.contains(&"MESSAGES_SNAPSHOT"));
    assert!(of_type(&events, "TOOL_CALL_RESULT").is_empty());

    // Input without a resume while the thread waits: refused, with the same interrupt.
    let waiting = server.agui(ask("tasks-1", "run-x", "hello?")).await;
    assert_eq!(types(&waiting), ["RUN_ERROR"]);
    assert_eq!(waiting[0]["code"], "INTERRUPT_PENDING");
    assert_eq!(waiting[0]["metadata"]["interrupts"][0]["id"], interrupt["id"]);
    assert!(waiting[0]["message"].as_str().unwrap().contains("Proceed?"));

    let id = interrupt["id"].as_str().unwrap();
    let approved = server
        .agui(resume("tasks-1", "run-2", id, json!({"approved": true})))
        .await;
    assert_well_formed(&approved);
    assert_eq!(approved[0]["runId"], "run-2");
    // The resumed run reports the call's result under the same id, without
    // proposing the call again.
    assert!(of_type(&approved, "TOOL_CALL_START").is_empty());
    let result = of_type(&approved, "TOOL_CALL_RESULT")[0];
    assert_eq!(result["toolCallId"], call);
    let finished = last(&approved);
    assert_eq!(finished["outcome"]["type"], "success", "{finished}");
    assert!(
        finished["result"].as_str().unwrap().starts_with("Created task"),
        "{finished}"
    );
    let custom: Vec<&str> = of_type(&approved, "CUSTOM")
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(custom.contains(&"confirmation_resolved"), "{custom:?}");

    // The same answer again: refused, nothing runs.
    let replayed = server
        .agui(resume("tasks-1", "run-3", id, json!({"approved": true})))
        .await;
    assert_eq!(types(&replayed), ["RUN_ERROR"]);
    assert_eq!(replayed[0]["code"], "INTERRUPT_ANSWERED");
    assert!(replayed[0]["message"].as_str().unwrap().contains("answered already"));
    let session = server.rt.session("tasks-1").await.unwrap();
    let created = session
        .blackboard()
        .log
        .iter()
        .filter(|e| e.tool.as_str() == "create_task")
        .count();
    assert_eq!(created, 1);
    server.stop().await;
}

/// Parks a task creation in `thread`; its interrupt.
async fn park_creation(server: &Server, thread: &str, title: &str) -> Value {
    let mut input = ask(thread, "run-1", &format!("create a task to {title}"));
    input["forwardedProps"] = json!({"agent": "task"});
    interrupt_of(&server.agui(input).await)
}

#[tokio::test]
async fn a_denial_an_unclear_answer_and_edited_arguments_are_honoured() {
    let server = Server::start(Agents::Tasks).await;
    for (thread, payload) in [
        ("deny", json!({"approved": false, "reason": "not now"})),
        ("unclear", json!({"approved": "sure"})),
        ("cancelled", Value::Null),
    ] {
        let interrupt = park_creation(&server, thread, "water the plants").await;
        let mut input = resume(thread, "run-2", interrupt["id"].as_str().unwrap(), payload.clone());
        if payload.is_null() {
            input["resume"][0] = json!({"interruptId": interrupt["id"], "status": "cancelled"});
        }
        let events = server.agui(input).await;
        assert_well_formed(&events);
        let resolved = of_type(&events, "CUSTOM")
            .into_iter()
            .find(|e| e["name"] == "confirmation_resolved")
            .unwrap_or_else(|| panic!("{events:#?}"));
        assert_eq!(resolved["value"]["approved"], false, "{thread}: {resolved}");
        let finished = last(&events);
        assert_eq!(finished["type"], "RUN_FINISHED", "{thread}: {finished}");
        assert!(
            !finished["result"].as_str().unwrap_or("").starts_with("Created task"),
            "{finished}"
        );
    }

    let interrupt = park_creation(&server, "edited", "water the plants").await;
    let mut edited = interrupt["metadata"]["arguments"].clone();
    edited["title"] = json!("water the cactus");
    let events = server
        .agui(resume(
            "edited",
            "run-2",
            interrupt["id"].as_str().unwrap(),
            json!({"approved": true, "editedArgs": edited}),
        ))
        .await;
    assert_well_formed(&events);
    // concierge shows the changed call for a final yes: a new interrupt
    // with the edited arguments, which an approval runs.
    let again = interrupt_of(&events);
    assert_ne!(again["id"], interrupt["id"]);
    assert_eq!(again["toolCallId"], interrupt["toolCallId"]);
    assert_eq!(again["metadata"]["arguments"]["title"], "water the cactus");
    assert_ne!(again["metadata"]["fingerprint"], interrupt["metadata"]["fingerprint"]);
    let events = server
        .agui(resume(
            "edited",
            "run-3",
            again["id"].as_str().unwrap(),
            json!({"approved": true}),
        ))
        .await;
    assert_well_formed(&events);
    let finished = last(&events);
    assert_eq!(finished["outcome"]["type"], "success", "{finished}");
    assert!(
        finished["result"].as_str().unwrap().contains("Water the cactus"),
        "{finished}"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_resume_that_does_not_match_the_parked_call_is_refused_and_nothing_runs() {
    let server = Server::start(Agents::Tasks).await;
    let interrupt = park_creation(&server, "t", "review the budget").await;
    let id = interrupt["id"].as_str().unwrap();

    // Another fingerprint than the parked call's.
    let mut wrong = resume("t", "run-2", id, json!({"approved": true}));
    wrong["resume"][0]["metadata"] = json!({"fingerprint": "not-it"});
    let refused = server.agui(wrong).await;
    assert_eq!(types(&refused), ["RUN_ERROR"]);
    assert_eq!(refused[0]["code"], "INTERRUPT_MISMATCH");
    assert!(refused[0]["message"].as_str().unwrap().contains("fingerprint"));

    // An interrupt this server never raised.
    let unknown = server
        .agui(resume("t", "run-3", "int-0-0", json!({"approved": true})))
        .await;
    assert_eq!(types(&unknown), ["RUN_ERROR"]);
    assert_eq!(unknown[0]["code"], "UNKNOWN_INTERRUPT");

    // Another thread's interrupt.
    let other = park_creation(&server, "u", "review the plan").await;
    let crossed = server
        .agui(resume(
            "t",
            "run-4",
            other["id"].as_str().unwrap(),
            json!({"approved": true}),
        ))
        .await;
    assert_eq!(crossed[0]["code"], "UNKNOWN_INTERRUPT");

    // Nothing ran: the call still waits, and the right answer resumes it.
    let shown = server.get("/api/v1/sessions/t").await;
    assert_eq!(
        shown["pending_confirmation"]["fingerprint"],
        interrupt["metadata"]["fingerprint"]
    );
    let mut right = resume("t", "run-5", id, json!({"approved": true}));
    right["resume"][0]["metadata"] = json!({"fingerprint": interrupt["metadata"]["fingerprint"]});
    let events = server.agui(right).await;
    assert_eq!(last(&events)["outcome"]["type"], "success", "{events:#?}");
    server.stop().await;
}

#[tokio::test]
async fn an_expired_interrupt_is_refused_and_asked_again() {
    // Interrupts that expire as they are raised: no waiting needed.
    let server = Server::with(Agents::Tasks, |api| api.interrupt_ttl(Duration::ZERO)).await;
    let interrupt = park_creation(&server, "late", "review the budget").await;
    let id = interrupt["id"].as_str().unwrap();
    let refused = server
        .agui(resume("late", "run-2", id, json!({"approved": true})))
        .await;
    assert_eq!(types(&refused), ["RUN_ERROR"]);
    assert_eq!(refused[0]["code"], "INTERRUPT_EXPIRED");
    assert!(refused[0]["message"].as_str().unwrap().contains("expired"));
    let again = server
        .agui(resume("late", "run-3", id, json!({"approved": true})))
        .await;
    assert_eq!(again[0]["code"], "INTERRUPT_EXPIRED");
    // Nothing ran; the thread's next input is told what it waits for, under a new interrupt.
    let shown = server.get("/api/v1/sessions/late").await;
    assert!(shown["pending_confirmation"].is_object(), "{shown}");
    let waiting = server.agui(ask("late", "run-4", "well?")).await;
    assert_eq!(waiting[0]["code"], "INTERRUPT_PENDING");
    assert_ne!(waiting[0]["metadata"]["interrupts"][0]["id"], interrupt["id"]);
    server.stop().await;
}

#[tokio::test]
async fn a_choice_is_an_interrupt_answered_with_an_option() {
    let server = Server::start(Agents::Tasks).await;
    let mut input = ask("choice", "run-1", "complete the fix");
    input["forwardedProps"] = json!({"agent": "task"});
    let events = server.agui(input).await;
    assert_well_formed(&events);
    let interrupt = interrupt_of(&events);
    assert_eq!(interrupt["reason"], "input_required");
    assert_eq!(interrupt["metadata"]["kind"], "choice");
    assert_eq!(
        interrupt["message"],
        "Several tasks could match. Which one do you mean?"
    );
    let options = interrupt["metadata"]["options"].as_array().unwrap();
    assert_eq!(options.len(), 2);
    assert_eq!(options[1]["number"], 2);
    assert!(options[1]["label"].as_str().unwrap().starts_with("#5 "));
    assert_eq!(interrupt["responseSchema"]["properties"]["option"]["maximum"], 2);
    assert_eq!(
        interrupt["responseSchema"]["properties"]["optionId"]["enum"],
        json!([options[0]["id"], options[1]["id"]])
    );
    let id = interrupt["id"].as_str().unwrap();

    // No such option: refused, the choice still open.
    let refused = server.agui(resume("choice", "run-2", id, json!({"option": 7}))).await;
    assert_eq!(types(&refused), ["RUN_ERROR"]);
    assert_eq!(refused[0]["code"], "RESUME_INCOMPLETE");

    // The second option (by its id): the run goes on, and parks on marking it done.
    let chosen = server
        .agui(resume("choice", "run-3", id, json!({"optionId": options[1]["id"]})))
        .await;
    assert_well_formed(&chosen);
    let next = interrupt_of(&chosen);
    assert_eq!(next["metadata"]["kind"], "confirmation");
    assert!(
        next["message"]
            .as_str()
            .unwrap()
            .starts_with("I'll mark #5, 'Fix logout button alignment'"),
        "{next}"
    );
    let replayed = server.agui(resume("choice", "run-4", id, json!({"option": 2}))).await;
    assert_eq!(replayed[0]["code"], "INTERRUPT_ANSWERED");
    server.stop().await;
}

#[tokio::test]
async fn agents_called_as_tools_are_subagents_of_the_run() {
    let server = Server::start(Agents::Crm).await;
    let mut input = ask("crm-1", "run-1", "Had a call with Mike yesterday about the proposal");
    input["forwardedProps"] = json!({"agent": "router"});
    let events = server.agui(input).await;
    assert_well_formed(&events);
    let started = of_type(&events, "SUBAGENT_STARTED")[0];
    assert_eq!(started["name"], "interaction");
    let call = of_type(&events, "TOOL_CALL_START")
        .into_iter()
        .find(|e| e["subagentRunId"].is_null())
        .unwrap()["toolCallId"]
        .clone();
    assert_eq!(started["parentToolCallId"], call);
    let child = started["subagentRunId"].as_str().unwrap();
    assert_eq!(child, format!("crm-1:{}", call.as_str().unwrap()));
    // The child's own tool call, attributed to it, with an id of its own.
    let inner = of_type(&events, "TOOL_CALL_START")
        .into_iter()
        .find(|e| e["subagentRunId"] == child)
        .unwrap();
    assert_eq!(inner["toolCallName"], "add_interaction_to_contact");
    assert!(inner["toolCallId"].as_str().unwrap().starts_with(&format!("{child}/")));
    assert!(
        of_type(&events, "TEXT_MESSAGE_START")
            .iter()
            .any(|e| e["subagentRunId"] == child && e["name"] == "interaction")
    );
    let finished = of_type(&events, "SUBAGENT_FINISHED")[0];
    assert_eq!(finished["subagentRunId"], child);
    assert_eq!(finished["outcome"]["type"], "success");
    assert!(
        finished["result"]
            .as_str()
            .unwrap()
            .starts_with("Logged the call with Mike Brennan")
    );
    assert_eq!(last(&events)["outcome"]["type"], "success");

    // A child that asks the person: its interrupt is the run's, attributed to it.
    let mut input = ask("crm-2", "run-1", "Log a call with John about the renewal");
    input["forwardedProps"] = json!({"agent": "router"});
    let events = server.agui(input).await;
    assert_well_formed(&events);
    let interrupt = interrupt_of(&events);
    let child = of_type(&events, "SUBAGENT_STARTED")[0]["subagentRunId"].clone();
    assert_eq!(interrupt["subagentRunId"], child);
    assert_eq!(interrupt["message"], "Which John do you mean?");
    assert!(
        interrupt["toolCallId"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{}/", child.as_str().unwrap()))
    );
    let suspended = of_type(&events, "SUBAGENT_FINISHED")[0];
    assert_eq!(
        suspended["outcome"],
        json!({"type": "suspended", "interruptIds": [interrupt["id"]]})
    );
    let resumed = server
        .agui(resume(
            "crm-2",
            "run-2",
            interrupt["id"].as_str().unwrap(),
            json!({"option": 2}),
        ))
        .await;
    assert_well_formed(&resumed);
    assert_eq!(last(&resumed)["outcome"]["type"], "success", "{resumed:#?}");
    assert!(
        last(&resumed)["result"].as_str().unwrap().contains("John Park"),
        "{resumed:#?}"
    );
    // The child goes on in the resumed run's stream: its call runs again
    // with the choice, attributed to it.
    let again = of_type(&resumed, "TOOL_CALL_RESULT")
        .into_iter()
        .find(|e| e["subagentRunId"] == child)
        .unwrap_or_else(|| panic!("the child's call after the resume: {resumed:#?}"));
    assert!(again["content"].as_str().unwrap().contains("John Park"), "{again}");
    server.stop().await;
}

#[tokio::test]
async fn a_thread_created_through_the_api_keeps_its_agent() {
    let server = Server::start(Agents::Tasks).await;
    let created: Value = server
        .http
        .post(server.url("/api/v1/sessions"))
        .json(&json!({"id": "made", "agent": "calculator"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(created["id"], "made");
    let events = server.agui(ask("made", "r", "calculate 10 / 4")).await;
    assert_eq!(texts(&events), ["10 / 4 = 2.5"]);
    // ?agent= picks the agent of a new thread too.
    let response = server
        .http
        .post(server.url("/api/v1/agui?agent=calculator"))
        .json(&ask("by-query", "r", "calculate 1 + 1"))
        .send()
        .await
        .unwrap();
    let body = response.text().await.unwrap();
    assert!(body.contains("1 + 1 = 2"), "{body}");
    server.stop().await;
}

#[tokio::test]
async fn malformed_input_gets_a_4xx_naming_the_field() {
    let server = Server::start(Agents::Tasks).await;
    let (status, error) = server.agui_raw("{\"threadId\": ").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{error}");
    for (body, field) in [
        (json!({"runId": "r", "messages": []}), "threadId"),
        (json!({"threadId": "t", "messages": []}), "runId"),
        (json!({"threadId": "t", "runId": "r"}), "messages"),
        (json!({"threadId": "t", "runId": "r", "messages": "hi"}), "messages"),
        (json!({"threadId": 5, "runId": "r", "messages": []}), "threadId"),
        (
            json!({"threadId": "t", "runId": "r", "messages": [{"id": "m"}]}),
            "messages[0]",
        ),
        (json!({"threadId": "t t", "runId": "r", "messages": []}), "threadId"),
        (json!({"threadId": "t", "runId": "", "messages": []}), "runId"),
        (
            json!({"threadId": "t", "runId": "r", "messages": [], "resume": [{"interruptId": "i", "status": "maybe"}]}),
            "resume[0].status",
        ),
    ] {
        let (status, error) = server.agui_raw(&body.to_string()).await;
        assert!(status.is_client_error(), "{body}: {status} {error}");
        assert_eq!(error["field"], field, "{body}: {error}");
        assert!(!error["error"].as_str().unwrap().is_empty());
    }
    // Well formed but nothing to run: a lone RUN_ERROR naming the field.
    for (body, field) in [
        (json!({"threadId": "t", "runId": "r", "messages": []}), "messages"),
        (
            json!({"threadId": "t", "runId": "r", "messages": [{"id": "a", "role": "assistant", "content": "hi"}]}),
            "messages",
        ),
        (
            json!({"threadId": "t", "runId": "r", "messages": [{"id": "m", "role": "user", "content": 7}]}),
            "messages[0].content",
        ),
        (
            json!({"threadId": "t", "runId": "r", "messages": [{"id": "m", "role": "user", "content": "hi"}], "forwardedProps": {"agent": "nobody"}}),
            "forwardedProps.agent",
        ),
    ] {
        let events = server.agui(body.clone()).await;
        assert_eq!(events.len(), 1, "{body}: {events:?}");
        assert_eq!(events[0]["type"], "RUN_ERROR", "{body}: {events:?}");
        assert_eq!(events[0]["code"], "INVALID_INPUT", "{body}: {events:?}");
        assert_eq!(events[0]["metadata"]["field"], field, "{body}: {events:?}");
    }
    // Nothing was created by the refused inputs.
    let sessions = server.get("/api/v1/sessions").await;
    assert_eq!(sessions["sessions"], json!([]), "{sessions}");
    // A resume on a thread that waits for nothing runs nothing either.
    let refused = server
        .agui(resume("fresh", "r", "int-1-1", json!({"approved": true})))
        .await;
    assert_eq!(types(&refused), ["RUN_ERROR"]);
    server.stop().await;
}

#[tokio::test]
async fn the_openapi_document_describes_the_endpoint() {
    let server = Server::start(Agents::Tasks).await;
    let doc = server.get("/openapi.json").await;
    let path = &doc["paths"]["/api/v1/agui"]["post"];
    assert!(path.is_object(), "{}", doc["paths"]);
    assert!(
        path["responses"]["200"]["content"]["text/event-stream"].is_object(),
        "{path}"
    );
    assert!(path["responses"]["422"].is_object(), "{path}");
    let schema = &doc["components"]["schemas"]["RunAgentInput"];
    assert_eq!(schema["required"], json!(["threadId", "runId", "messages"]), "{schema}");
    server.stop().await;
}

#[tokio::test]
async fn model_deltas_stream_as_the_content_of_one_text_message() {
    let server = Server::start(Agents::Streaming).await;
    let mut input = ask("streamed", "run-1", "what is 6 times 7?");
    input["forwardedProps"] = json!({"agent": "calculator"});
    let events = server.agui(input).await;
    assert_well_formed(&events);
    let contents: Vec<&str> = of_type(&events, "TEXT_MESSAGE_CONTENT")
        .iter()
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["6 * 7 ", "is ", "42."], "{events:#?}");
    assert_eq!(of_type(&events, "TEXT_MESSAGE_START").len(), 1);
    let message = of_type(&events, "TEXT_MESSAGE_END")[0]["messageId"].clone();
    let snapshot = &of_type(&events, "MESSAGES_SNAPSHOT")[0]["messages"];
    let last_message = snapshot.as_array().unwrap().last().unwrap();
    assert_eq!(last_message["id"], message);
    assert_eq!(last_message["content"], "6 * 7 is 42.");
    let finished = last(&events);
    assert_eq!(finished["result"], "6 * 7 is 42.");
    assert_eq!(
        finished["usage"],
        json!([{"inputTokens": 12, "outputTokens": 5, "totalTokens": 17}])
    );
    let usage = of_type(&events, "CUSTOM")
        .into_iter()
        .find(|e| e["name"] == "usage")
        .unwrap();
    assert_eq!(usage["value"]["run_total"]["input_tokens"], 12);
    server.stop().await;
}
