//! MCP resources and prompts against an rmcp server written here (over
//! streamable HTTP): listing, templates, reading, subscriptions and the
//! list_changed / updated notifications, prompts with arguments, an
//! agent given a resource as context (recorded, so a restarted process
//! replays the text that was read), and the built-in `read_resource` and
//! `list_resources` tools. `@modelcontextprotocol/server-everything` is
//! used by the ignored tests at the end (scripts/setup-mcp.sh installs it).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use concierge::mcp::{McpChange, McpServerConfig, PromptRole};
use concierge::model::ScriptedModel;
use concierge::{AgentSpec, Error, ModelReply, RunOptions, Runtime, ToolOutcome};
use rmcp::model::{
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams, Prompt, PromptArgument, PromptMessage,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
    ResourceUpdatedNotificationParam, Role, ServerCapabilities, ServerConfig, SubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};
use serde_json::json;
use tokio::sync::broadcast;

/// A resource's URI and the session subscribed to it.
type Subscription = (String, Peer<RoleServer>);

/// A notes server: `notes://handbook` and `notes://counter`, the template
/// `notes://items/{id}`, the prompt `summarize` (argument `topic`, required).
#[derive(Clone, Default)]
struct Notes {
    texts: Arc<Mutex<BTreeMap<String, String>>>,
    peers: Arc<Mutex<Vec<Peer<RoleServer>>>>,
    /// Who subscribed to what: a subscription belongs to its session.
    subscribed: Arc<Mutex<Vec<Subscription>>>,
}

impl Notes {
    fn new() -> Self {
        let notes = Self::default();
        let mut texts = notes.texts.lock().unwrap();
        texts.insert("notes://handbook".into(), "Refunds take five days.".into());
        texts.insert("notes://counter".into(), "1".into());
        drop(texts);
        notes
    }

    fn set(&self, uri: &str, text: &str) {
        self.texts.lock().unwrap().insert(uri.into(), text.into());
    }

    fn peers(&self) -> Vec<Peer<RoleServer>> {
        self.peers.lock().unwrap().clone()
    }

    /// Adds a resource and says the list changed.
    async fn add(&self, uri: &str, text: &str) {
        self.set(uri, text);
        for peer in self.peers() {
            let _ = peer.notify_resource_list_changed().await;
        }
    }

    /// Changes a resource and tells those who subscribed to it.
    async fn update(&self, uri: &str, text: &str) {
        self.set(uri, text);
        let subscribers: Vec<Peer<RoleServer>> = self
            .subscribed
            .lock()
            .unwrap()
            .iter()
            .filter(|(u, _)| u == uri)
            .map(|(_, peer)| peer.clone())
            .collect();
        for peer in subscribers {
            let _ = peer
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                .await;
        }
    }
}

impl ServerHandler for Notes {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_resources_subscribe()
                .enable_prompts()
                .enable_prompts_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("notes", "1.0.0"))
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.peers.lock().unwrap().push(context.peer);
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resources = self
            .texts
            .lock()
            .unwrap()
            .keys()
            .filter(|uri| !uri.starts_with("notes://items/"))
            .map(|uri| {
                Resource::new(uri.clone(), uri.trim_start_matches("notes://"))
                    .with_description(format!("The {uri} note"))
                    .with_mime_type("text/plain")
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("notes://items/{id}", "item").with_description("An item by its id"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        let text = match uri.strip_prefix("notes://items/") {
            Some(id) => Some(format!("item {id}")),
            None => self.texts.lock().unwrap().get(&uri).cloned(),
        };
        match text {
            Some(text) => Ok(ReadResourceResult::new(vec![ResourceContents::text(text, uri)]).into()),
            None => Err(ErrorData::resource_not_found(format!("no note {uri}"), None)),
        }
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscribed.lock().unwrap().push((request.uri, context.peer));
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(vec![
            Prompt::new(
                "summarize",
                Some("Summarize the notes on a topic"),
                Some(vec![
                    PromptArgument::new("topic")
                        .with_description("What about")
                        .with_required(true),
                ]),
            ),
            Prompt::new("greet", Some("Say hello"), None),
        ]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let topic = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("topic"))
            .and_then(|t| t.as_str())
            .unwrap_or("everything")
            .to_string();
        let messages = match request.name.as_str() {
            "summarize" => vec![
                PromptMessage::new_text(Role::User, format!("Summarize what the notes say about {topic}.")),
                PromptMessage::new_text(Role::Assistant, "Sure."),
            ],
            "greet" => vec![PromptMessage::new_text(Role::User, "Hello!")],
            other => return Err(ErrorData::invalid_params(format!("no prompt {other}"), None)),
        };
        Ok(GetPromptResult::new(messages).with_description("a prompt").into())
    }
}

/// Serves `notes` on a free loopback port; returns its URL.
async fn serve(notes: Notes) -> String {
    serve_with_sessions(notes).await.0
}

/// [`serve`], with the server's sessions (to forget them, as a server that
/// restarted or expired them would).
async fn serve_with_sessions(notes: Notes) -> (String, Arc<LocalSessionManager>) {
    let sessions = Arc::new(LocalSessionManager::default());
    let service = StreamableHttpService::new(
        move || Ok(notes.clone()),
        sessions.clone(),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}/mcp"), sessions)
}

fn session(id: &str) -> RunOptions {
    RunOptions::new().session_id(id)
}

/// The next change the server announces (failing the test if none comes
/// for a long while, rather than hanging).
async fn next_change(changes: &mut broadcast::Receiver<McpChange>) -> McpChange {
    tokio::time::timeout(Duration::from_secs(60), changes.recv())
        .await
        .expect("the server's notification did not arrive")
        .unwrap()
}

#[tokio::test]
async fn resources_templates_reading_and_changes() {
    let notes = Notes::new();
    let url = serve(notes.clone()).await;
    let rt = Runtime::builder()
        .mcp_server("notes", McpServerConfig::http(url))
        .build()
        .await
        .unwrap();
    let client = rt.mcp_client("notes").unwrap();
    let uris = |list: Vec<concierge::mcp::McpResource>| list.into_iter().map(|r| r.uri).collect::<Vec<_>>();
    assert_eq!(
        uris(client.resources().await.unwrap()),
        ["notes://counter", "notes://handbook"]
    );
    let listed = client.resources().await.unwrap();
    assert_eq!(listed[1].description.as_deref(), Some("The notes://handbook note"));
    assert_eq!(listed[1].mime_type.as_deref(), Some("text/plain"));
    let templates = client.resource_templates().await.unwrap();
    assert_eq!(templates.len(), 1);
    assert_eq!(templates[0].uri_template, "notes://items/{id}");

    let read = client.read_resource("notes://handbook").await.unwrap();
    assert_eq!(read.text, "Refunds take five days.");
    assert_eq!(read.server, "notes");
    assert_eq!(client.read_resource("notes://items/7").await.unwrap().text, "item 7");
    let missing = client.read_resource("notes://nowhere").await.unwrap_err();
    assert!(missing.to_string().contains("no note notes://nowhere"), "{missing}");

    // list_changed: the next listing shows the new resource (not a cached list).
    let mut changes = client.changes();
    notes.add("notes://faq", "Ask us.").await;
    assert_eq!(next_change(&mut changes).await, McpChange::ResourceListChanged);
    assert_eq!(
        uris(client.resources().await.unwrap()),
        ["notes://counter", "notes://faq", "notes://handbook"]
    );

    // A subscribed resource says when it changes, and reads anew.
    assert_eq!(client.read_resource("notes://counter").await.unwrap().text, "1");
    client.subscribe("notes://counter").await.unwrap();
    notes.update("notes://counter", "2").await;
    assert_eq!(
        next_change(&mut changes).await,
        McpChange::ResourceUpdated {
            uri: "notes://counter".into()
        }
    );
    assert_eq!(client.read_resource("notes://counter").await.unwrap().text, "2");

    // Prompts' list_changed reaches the client too.
    for peer in notes.peers() {
        peer.notify_prompt_list_changed().await.unwrap();
    }
    assert_eq!(next_change(&mut changes).await, McpChange::PromptListChanged);
    rt.shutdown().await;
}

/// A server that forgets the client's session (it expired it, or lost it)
/// answers the next request 404; rmcp initializes a new session and sends
/// the request again, and concierge subscribes the new session to what the
/// old one was subscribed to, so the resource's updates still arrive.
#[tokio::test]
async fn subscriptions_are_made_again_when_the_server_forgets_the_session() {
    let notes = Notes::new();
    let (url, sessions) = serve_with_sessions(notes.clone()).await;
    let rt = Runtime::builder()
        .mcp_server("notes", McpServerConfig::http(url))
        .build()
        .await
        .unwrap();
    let client = rt.mcp_client("notes").unwrap();
    let mut changes = client.changes();
    client.subscribe("notes://counter").await.unwrap();

    let forgotten: Vec<_> = sessions.sessions.read().await.keys().cloned().collect();
    assert_eq!(forgotten.len(), 1);
    for id in &forgotten {
        sessions.close_session(id).await.unwrap();
    }
    // The next request meets the expired session and goes on in a new one.
    assert_eq!(client.read_resource("notes://counter").await.unwrap().text, "1");
    let renewed = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let subscribed = notes.subscribed.lock().unwrap().len();
            if subscribed == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(renewed.is_ok(), "the new session was not subscribed");
    assert!(!sessions.sessions.read().await.contains_key(&forgotten[0]));

    notes.update("notes://counter", "2").await;
    assert_eq!(
        next_change(&mut changes).await,
        McpChange::ResourceUpdated {
            uri: "notes://counter".into()
        }
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn prompts_are_listed_and_filled_in_with_their_arguments() {
    let url = serve(Notes::new()).await;
    let rt = Runtime::builder()
        .mcp_server("notes", McpServerConfig::http(url))
        .build()
        .await
        .unwrap();
    let client = rt.mcp_client("notes").unwrap();
    let prompts = client.prompts().await.unwrap();
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["summarize", "greet"]);
    assert_eq!(prompts[0].arguments[0].name, "topic");
    assert!(prompts[0].arguments[0].required);

    let args = BTreeMap::from([("topic".to_string(), "refunds".to_string())]);
    let filled = client.prompt("summarize", args).await.unwrap();
    assert_eq!(filled.messages.len(), 2);
    assert_eq!(filled.messages[1].role, PromptRole::Assistant);
    assert_eq!(filled.user_text(), "Summarize what the notes say about refunds.");

    let missing = client.prompt("summarize", BTreeMap::new()).await.unwrap_err();
    assert!(missing.message.contains("give topic"), "{missing}");
    let extra = BTreeMap::from([("tone".to_string(), "dry".to_string())]);
    let unknown_argument = client.prompt("greet", extra).await.unwrap_err();
    assert!(
        unknown_argument.message.contains("takes no arguments"),
        "{unknown_argument}"
    );
    let unknown = client.prompt("dance", BTreeMap::new()).await.unwrap_err();
    assert!(unknown.message.contains("summarize, greet"), "{unknown}");
    rt.shutdown().await;
}

#[tokio::test]
async fn an_agents_resources_are_its_context_and_a_restart_replays_the_text_read() {
    let notes = Notes::new();
    let url = serve(notes.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("resources.db");
    let key = "resource:notes:notes://handbook";
    let build = |model: ScriptedModel| {
        Runtime::builder()
            .mcp_server("notes", McpServerConfig::http(url.clone()))
            .agent(AgentSpec::new("support").resource("notes:notes://handbook"))
            .model(model)
            .sqlite(&db)
    };
    let model = ScriptedModel::new().reply(ModelReply::text("Five days."));
    let rt = build(model.clone()).build().await.unwrap();
    let out = rt
        .client("support")
        .unwrap()
        .run("how long do refunds take?", session("s"))
        .await
        .unwrap();
    assert_eq!(out.reply.as_deref(), Some("Five days."));
    let system = &model.requests()[0].system;
    assert!(
        system.contains(key) && system.contains("Refunds take five days."),
        "the model sees the resource: {system}"
    );
    let state = rt.session("s").await.unwrap();
    assert_eq!(state.blackboard().available[key], json!("Refunds take five days."));
    rt.shutdown().await;

    // The server's text changes; a new process replays the run from its
    // journal with the text that was read then.
    notes.set("notes://handbook", "Refunds take ten days.");
    let rt = build(ScriptedModel::new()).build().await.unwrap();
    let state = rt.session("s").await.unwrap();
    assert_eq!(state.blackboard().available[key], json!("Refunds take five days."));
    rt.shutdown().await;
}

#[tokio::test]
async fn a_resource_that_cannot_be_read_refuses_the_run_and_a_bad_reference_the_build() {
    let url = serve(Notes::new()).await;
    let rt = Runtime::builder()
        .mcp_server("notes", McpServerConfig::http(url.clone()))
        .agent(AgentSpec::new("support").resource("notes:notes://gone"))
        .model(ScriptedModel::new().reply(ModelReply::text("never")))
        .build()
        .await
        .unwrap();
    let error = rt.client("support").unwrap().run("hi", session("s")).await.unwrap_err();
    assert!(matches!(error, Error::ResourceUnavailable { .. }), "{error:?}");
    assert!(error.to_string().contains("notes:notes://gone"), "{error}");
    rt.shutdown().await;

    let unknown = Runtime::builder()
        .mcp_server("notes", McpServerConfig::http(url))
        .agent(AgentSpec::new("support").resource("docs:file:///a.md"))
        .build()
        .await
        .unwrap_err();
    assert!(unknown.to_string().contains("MCP server docs"), "{unknown}");
}

#[tokio::test]
async fn the_built_in_tools_list_and_read_resources() {
    let url = serve(Notes::new()).await;
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call(
            "list_resources",
            json!({"server": "notes"}).to_string(),
        ))
        .reply(ModelReply::tool_call(
            "read_resource",
            json!({"server": "notes", "uri": "notes://items/42"}).to_string(),
        ))
        .reply(ModelReply::tool_call(
            "read_resource",
            json!({"server": "elsewhere", "uri": "notes://handbook"}).to_string(),
        ))
        .reply(ModelReply::text("done"));
    let rt = Runtime::builder()
        .mcp_server("notes", McpServerConfig::http(url))
        .agent(AgentSpec::new("reader").toolset("mcp_resources"))
        .model(model)
        .build()
        .await
        .unwrap();
    let out = rt.client("reader").unwrap().run("read", session("s")).await.unwrap();
    let outcomes: Vec<&ToolOutcome> = out.tool_executions.iter().map(|e| &e.outcome).collect();
    let ToolOutcome::Ok(listed) = outcomes[0] else {
        panic!("list_resources failed: {outcomes:?}")
    };
    let uris: Vec<&str> = listed["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(uris, ["notes://counter", "notes://handbook"]);
    assert_eq!(listed["templates"][0]["uri_template"], "notes://items/{id}");
    let ToolOutcome::Ok(read) = outcomes[1] else {
        panic!("read_resource failed: {outcomes:?}")
    };
    assert_eq!(read["text"], "item 42");
    let ToolOutcome::Error(error) = outcomes[2] else {
        panic!("an unknown server is an error: {outcomes:?}")
    };
    assert!(
        error.message.contains("no MCP server \"elsewhere\""),
        "{}",
        error.message
    );
    rt.shutdown().await;
}

// ----- @modelcontextprotocol/server-everything (scripts/setup-mcp.sh) -----

fn everything() -> McpServerConfig {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        script.exists(),
        "server-everything is not installed: run scripts/setup-mcp.sh (it installs into node_modules)"
    );
    McpServerConfig::stdio("node", [script.to_string_lossy().to_string(), "stdio".to_string()])
}

#[tokio::test]
#[ignore = "needs npm packages: scripts/setup-mcp.sh"]
async fn everything_resources_templates_and_subscriptions() {
    let rt = Runtime::builder()
        .mcp_server("everything", everything())
        .build()
        .await
        .unwrap();
    let client = rt.mcp_client("everything").unwrap();
    let resources = client.resources().await.unwrap();
    assert!(!resources.is_empty(), "server-everything lists resources");
    let templates = client.resource_templates().await.unwrap();
    assert!(!templates.is_empty(), "server-everything has resource templates");
    // Read the first listed text resource.
    let first = resources
        .iter()
        .find(|r| r.mime_type.as_deref().is_none_or(|m| m.starts_with("text")))
        .unwrap_or(&resources[0]);
    let read = client.read_resource(&first.uri).await.unwrap();
    assert!(!read.text.is_empty(), "{first:?} has content");
    // Subscribing is accepted (the server then sends updates on its own schedule).
    client.subscribe(&first.uri).await.unwrap();
    client.unsubscribe(&first.uri).await.unwrap();
    rt.shutdown().await;
}

/// A subscription outlives the server's process: after a kill -9 the
/// restarted server is subscribed again, so its updates still arrive.
/// server-everything's `toggle-subscriber-updates` sends one update at once
/// for every resource the session subscribed to (and none otherwise).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs npm packages: scripts/setup-mcp.sh"]
async fn everything_subscriptions_are_made_again_after_the_server_restarts() {
    let rt = Runtime::builder()
        .mcp_server("everything", everything())
        .in_memory()
        .build()
        .await
        .unwrap();
    let client = rt.mcp_client("everything").unwrap();
    let uri = client.resources().await.unwrap()[0].uri.clone();
    client.subscribe(&uri).await.unwrap();
    let mut changes = client.changes();
    let toggle = |n: u32| {
        let client = client.clone();
        async move {
            let key = concierge::IdempotencyKey::given(format!("toggle-{n}"));
            // A liveness loop: the first attempt after a kill may find the
            // server restarting.
            for _ in 0..50 {
                if client
                    .call("toggle-subscriber-updates", Default::default(), &key)
                    .await
                    .is_ok()
                {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            panic!("toggle-subscriber-updates never answered");
        }
    };
    let updated = |change: McpChange| matches!(change, McpChange::ResourceUpdated { uri: u } if u == uri);
    toggle(1).await;
    while !updated(next_change(&mut changes).await) {}

    let pid = client.pid().await.expect("a stdio server has a process");
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    toggle(2).await;
    assert_ne!(client.pid().await, Some(pid), "a new process");
    while !updated(next_change(&mut changes).await) {}
    rt.shutdown().await;
}

#[tokio::test]
#[ignore = "needs npm packages: scripts/setup-mcp.sh"]
async fn everything_prompts_with_and_without_arguments() {
    let rt = Runtime::builder()
        .mcp_server("everything", everything())
        .build()
        .await
        .unwrap();
    let client = rt.mcp_client("everything").unwrap();
    let prompts = client.prompts().await.unwrap();
    let simple = prompts
        .iter()
        .find(|p| p.arguments.iter().all(|a| !a.required))
        .expect("a prompt without required arguments");
    let filled = client.prompt(&simple.name, BTreeMap::new()).await.unwrap();
    assert!(!filled.messages.is_empty());
    let with_args = prompts
        .iter()
        .find(|p| p.arguments.iter().any(|a| a.required))
        .expect("a prompt with a required argument");
    let missing = client.prompt(&with_args.name, BTreeMap::new()).await.unwrap_err();
    assert!(missing.message.contains("give"), "{missing}");
    let args: BTreeMap<String, String> = with_args
        .arguments
        .iter()
        .map(|a| (a.name.clone(), "tea".to_string()))
        .collect();
    let filled = client.prompt(&with_args.name, args).await.unwrap();
    assert!(filled.messages.iter().any(|m| m.text.contains("tea")), "{filled:?}");
    rt.shutdown().await;
}
