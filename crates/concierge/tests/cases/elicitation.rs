//! MCP elicitation and sampling on any engine, against an rmcp server
//! written here whose side-effecting tool asks the person in the middle of
//! the call and counts its effects: accept, decline and cancel reach the
//! server; content that does not fit the form is refused naming the field;
//! a child run's question is asked through its parent; a server's model
//! request is denied, allowed within its cap, or put to the person first.
//! The embedded root (`mcp_elicitation.rs`) adds a process killed while the
//! question is open; concierge-temporal runs these on Temporal, where a call
//! stops at its question and is made again with the answer.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use concierge::mcp::{McpServerConfig, SamplingPolicy};
use concierge::model::{Model, ModelContext};
use concierge::{
    AgentSpec, AgentTool, ElicitationAction, ElicitationAnswer, Error, Message, ModelError, ModelReply, ModelRequest,
    RunOptions, RunStatus, Runtime, RuntimeBuilder, StepError,
};
use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams,
    ElicitationAction as Wire, ElicitationSchema, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::json;

use super::{EngineUnderTest, OnEngine};

/// A shipping server: `ship` asks where to, then ships (one effect per
/// accepted answer, counted). With `hang_after_accept`, the first accepted
/// call waits forever before its effect (a process can die meanwhile).
#[derive(Clone, Default)]
pub struct Shipping {
    pub effects: Arc<AtomicUsize>,
    pub asked: Arc<AtomicUsize>,
    pub hang_after_accept: Arc<AtomicUsize>,
}

impl ServerHandler for Shipping {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("shipping", "0.1.0"))
    }

    async fn list_tools(
        &self,
        _r: Option<PaginatedRequestParams>,
        _c: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = Arc::new(
            json!({"type": "object", "properties": {"item": {"type": "string"}}})
                .as_object()
                .cloned()
                .unwrap(),
        );
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new("ship", "Ships an item.", schema.clone()),
            Tool::new("summarize", "Summarizes with the client's model.", schema),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name == "summarize" {
            #[expect(deprecated, reason = "sampling is deprecated by SEP-2577 but servers still send it")]
            let asked = context
                .peer
                .create_message(rmcp::model::CreateMessageRequestParams::new(
                    vec![rmcp::model::SamplingMessage::user_text("the order history")],
                    5000,
                ))
                .await;
            let text = match asked {
                #[expect(deprecated, reason = "sampling is deprecated by SEP-2577 but servers still send it")]
                Ok(result) => match result.message.content.into_vec().pop() {
                    Some(rmcp::model::SamplingMessageContentBlock::Text(text)) => format!("model said {}", text.text),
                    _ => "model said nothing".to_string(),
                },
                Err(error) => format!("no model: {error}"),
            };
            return Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into());
        }
        let item = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("item"))
            .and_then(|v| v.as_str())
            .unwrap_or("something")
            .to_string();
        let schema: ElicitationSchema = serde_json::from_value(json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "title": "City"},
                "floor": {"type": "integer", "minimum": 0}
            },
            "required": ["city"]
        }))
        .unwrap();
        self.asked.fetch_add(1, Ordering::SeqCst);
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: format!("Where should the {item} go?"),
            requested_schema: schema,
        };
        let answer = context
            .peer
            .create_elicitation(params)
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let text = match answer.action {
            Wire::Accept => {
                if self.hang_after_accept.fetch_sub(1, Ordering::SeqCst) == 1 {
                    futures::future::pending::<()>().await;
                }
                self.effects.fetch_add(1, Ordering::SeqCst);
                let city = answer
                    .content
                    .as_ref()
                    .and_then(|c| c.get("city"))
                    .cloned()
                    .unwrap_or_default();
                format!("shipped the {item} to {}", city.as_str().unwrap_or("?"))
            }
            Wire::Decline => format!("the {item} was not shipped: the person declined"),
            _ => format!("the {item} was not shipped: the person cancelled"),
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

pub async fn serve(server: Shipping, port: u16) -> SocketAddr {
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

/// Calls `ship` once, then answers with the tool's result (decided from
/// the request, so a process that resumes the run answers the same).
pub struct Shipper;

impl Model for Shipper {
    fn name(&self) -> String {
        "shipper".into()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        _: &'a ModelContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        let result = request.messages.iter().find_map(|m| match m {
            Message::Tool { .. } => Some(m.text()),
            _ => None,
        });
        let wants = request.messages.iter().rev().find_map(|m| match m {
            Message::User { content } => Some(content.clone()),
            _ => None,
        });
        // The front desk hands the request to `shop`, an agent called as a tool.
        if request.tools.iter().any(|t| t.name == "shop") {
            let reply = match result {
                Some(text) => ModelReply::text(format!("the shop says: {text}")),
                None => ModelReply::tool_call("shop", json!({"request": wants.unwrap_or_default()}).to_string()),
            };
            return Box::pin(async move { Ok(reply) });
        }
        let reply = match (result, request.tools.is_empty()) {
            // A server's sampling request: no tools; capped as configured.
            (_, true) => ModelReply::text(format!(
                "a summary of {} in {:?} tokens",
                wants.unwrap_or_default(),
                request.max_tokens
            ))
            .with_usage(7, 3),
            (Some(text), false) => ModelReply::text(format!("done: {text}")),
            (None, false) if wants.as_deref().is_some_and(|w| w.contains("summar")) => {
                ModelReply::tool_call("summarize", "{}")
            }
            (None, false) => ModelReply::tool_call("ship", r#"{"item": "lamp"}"#),
        };
        Box::pin(async move { Ok(reply) })
    }
}

/// The shop (with the shipping server's tools) and the front desk that
/// calls it as a tool, on the scripted [`Shipper`]; the server's model
/// requests as `sampling` says (capped at 200 tokens).
pub fn builder(addr: SocketAddr, sampling: SamplingPolicy) -> RuntimeBuilder {
    let mut config = McpServerConfig::http(format!("http://{addr}/mcp"))
        .trusted()
        .sampling(sampling);
    config.sampling_max_tokens = Some(200);
    Runtime::builder()
        .mcp_server("shipping", config)
        .agent(AgentSpec::new("shop").description("Ships items.").toolset("shipping"))
        .agent(AgentSpec::new("desk").agent_tool(AgentTool::new("shop")))
        .model(Shipper)
}

async fn runtime(addr: SocketAddr, engine: &EngineUnderTest, sampling: SamplingPolicy) -> Runtime {
    builder(addr, sampling).on_engine(engine).build().await.unwrap()
}

pub async fn accept_decline_and_cancel_reach_the_server_and_content_that_does_not_fit_is_refused(
    engine: &EngineUnderTest,
) {
    let server = Shipping::default();
    let addr = serve(server.clone(), 0).await;
    let rt = runtime(addr, engine, SamplingPolicy::Deny).await;
    let shop = rt.client("shop").unwrap();

    let out = shop
        .run("ship the lamp", RunOptions::new().session_id("a"))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::AwaitingInput, "{:?}", out.reply);
    let pending = out.pending_elicitation.clone().unwrap();
    assert_eq!(pending.elicitation.server, "shipping");
    assert!(
        out.reply.as_deref().unwrap().contains("Where should the lamp go?"),
        "{:?}",
        out.reply
    );
    let state = rt.session("a").await.unwrap();
    assert_eq!(state.pending_elicitation(), Some(pending.clone()));

    // Content that does not fit: refused naming the field; nothing is sent.
    let refused = rt
        .answer_question(
            "a",
            pending.call_id.clone(),
            pending.question,
            ElicitationAnswer::accept(json!({"city": "Oslo", "floor": -2})),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, Error::Rejected(StepError::AnswerRefused { problem }) if problem.contains("Floor")),
        "{refused}"
    );
    let missing = rt
        .answer_question(
            "a",
            pending.call_id.clone(),
            pending.question,
            ElicitationAnswer::accept(json!({"floor": 2})),
        )
        .await
        .unwrap_err();
    assert!(missing.to_string().contains("City is required"), "{missing}");
    assert_eq!(server.effects.load(Ordering::SeqCst), 0);

    let done = rt
        .answer_question(
            "a",
            pending.call_id.clone(),
            pending.question,
            ElicitationAnswer::accept(json!({"city": "Oslo", "floor": 2})),
        )
        .await
        .unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(done.reply.as_deref(), Some("done: shipped the lamp to Oslo"));
    assert_eq!(server.effects.load(Ordering::SeqCst), 1);
    // Answered once: the same answer again names no open question.
    let again = rt
        .answer_question(
            "a",
            pending.call_id,
            pending.question,
            ElicitationAnswer::new(ElicitationAction::Decline),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(again, Error::Rejected(StepError::NoSuchQuestion { .. })),
        "{again}"
    );

    for (session, action, said) in [
        ("b", ElicitationAction::Decline, "declined"),
        ("c", ElicitationAction::Cancel, "cancelled"),
    ] {
        let out = shop
            .run("ship the lamp", RunOptions::new().session_id(session))
            .await
            .unwrap();
        let pending = out.pending_elicitation.unwrap();
        let done = rt
            .answer_question(
                session,
                pending.call_id,
                pending.question,
                ElicitationAnswer::new(action),
            )
            .await
            .unwrap();
        assert!(done.reply.as_deref().unwrap().contains(said), "{:?}", done.reply);
    }

    // In words, as a chat's next message: a form's `field: value` lines.
    let out = shop
        .run("ship the lamp", RunOptions::new().session_id("d"))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::AwaitingInput);
    let again = shop
        .run("floor: high", RunOptions::new().session_id("d"))
        .await
        .unwrap();
    assert_eq!(again.status, RunStatus::AwaitingInput);
    assert!(
        again.reply.as_deref().unwrap().contains("Floor must be a whole number"),
        "{:?}",
        again.reply
    );
    let done = shop
        .run("city: Bergen\nfloor: 3", RunOptions::new().session_id("d"))
        .await
        .unwrap();
    assert_eq!(done.reply.as_deref(), Some("done: shipped the lamp to Bergen"));
    assert_eq!(
        server.effects.load(Ordering::SeqCst),
        2,
        "declined and cancelled calls shipped nothing"
    );
    rt.shutdown().await;
}

/// A question the child's call asks (an agent called as a tool) is asked
/// through the parent's session: answered there in a form or in words, it
/// reaches the child's call, and the parent finishes with the child's reply.
pub async fn a_childs_question_is_asked_and_answered_through_the_parent(engine: &EngineUnderTest) {
    let server = Shipping::default();
    let addr = serve(server.clone(), 0).await;
    let rt = runtime(addr, engine, SamplingPolicy::Deny).await;
    let desk = rt.client("desk").unwrap();

    let out = desk
        .run("ship the lamp", RunOptions::new().session_id("p"))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::AwaitingInput, "{:?}", out.reply);
    let reply = out.reply.clone().unwrap();
    assert!(
        reply.starts_with("The shipping server asks: Where should the lamp go?"),
        "{reply}"
    );
    let pending = out.pending_elicitation.clone().unwrap();
    let child = pending.session.clone().expect("the question names the child session");
    assert_ne!(child.as_str(), "p");
    assert_eq!(
        rt.session("p").await.unwrap().pending_elicitation(),
        Some(pending.clone())
    );

    // The form is checked in the parent, before anything reaches the child.
    let refused = rt
        .answer_question(
            "p",
            pending.call_id.clone(),
            pending.question,
            ElicitationAnswer::accept(json!({"floor": 2})),
        )
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("City is required"), "{refused}");
    let done = rt
        .answer_question(
            "p",
            pending.call_id.clone(),
            pending.question,
            ElicitationAnswer::accept(json!({"city": "Oslo"})),
        )
        .await
        .unwrap();
    assert_eq!(done.status, RunStatus::Completed, "{:?}", done.reply);
    assert_eq!(
        done.reply.as_deref(),
        Some("the shop says: done: shipped the lamp to Oslo")
    );
    assert_eq!(server.effects.load(Ordering::SeqCst), 1);
    assert!(rt.session(child.clone()).await.unwrap().pending_elicitation().is_none());

    // In words, as the parent's next message: the child reads them.
    let out = desk
        .run("ship the lamp", RunOptions::new().session_id("q"))
        .await
        .unwrap();
    assert_eq!(out.status, RunStatus::AwaitingInput);
    let done = desk
        .run("city: Bergen", RunOptions::new().session_id("q"))
        .await
        .unwrap();
    assert_eq!(
        done.reply.as_deref(),
        Some("the shop says: done: shipped the lamp to Bergen")
    );
    assert_eq!(server.effects.load(Ordering::SeqCst), 2);

    rt.shutdown().await;
}

pub async fn sampling_is_denied_by_default_allowed_within_the_cap_or_asked_and_its_tokens_count(
    engine: &EngineUnderTest,
) {
    let addr = serve(Shipping::default(), 0).await;

    let rt = runtime(addr, engine, SamplingPolicy::Deny).await;
    let out = rt
        .client("shop")
        .unwrap()
        .run("summarize", RunOptions::new().session_id("s"))
        .await
        .unwrap();
    assert!(out.reply.as_deref().unwrap().contains("no model"), "{:?}", out.reply);
    rt.shutdown().await;

    let rt = runtime(addr, engine, SamplingPolicy::Allow).await;
    let out = rt
        .client("shop")
        .unwrap()
        .run("summarize", RunOptions::new().session_id("s"))
        .await
        .unwrap();
    assert_eq!(
        out.reply.as_deref(),
        Some("done: model said a summary of the order history in Some(200) tokens"),
        "the server's 5000 tokens are capped at 200"
    );
    let state = rt.session("s").await.unwrap();
    assert!(state.usage().input_tokens >= 7 && state.usage().output_tokens >= 3);
    assert_eq!(
        out.usage.input_tokens, 7,
        "the sampled tokens count in the run (the scripted model reports none)"
    );
    rt.shutdown().await;

    let rt = runtime(addr, engine, SamplingPolicy::Ask).await;
    let shop = rt.client("shop").unwrap();
    let out = shop.run("summarize", RunOptions::new().session_id("s")).await.unwrap();
    assert_eq!(out.status, RunStatus::AwaitingInput);
    let reply = out.reply.unwrap();
    assert!(
        reply.contains("The shipping server wants to ask the model: the order history"),
        "{reply}"
    );
    let done = shop.run("no", RunOptions::new().session_id("s")).await.unwrap();
    assert!(done.reply.as_deref().unwrap().contains("no model"), "{:?}", done.reply);
    let out = shop.run("summarize", RunOptions::new().session_id("s2")).await.unwrap();
    assert_eq!(out.status, RunStatus::AwaitingInput, "{:?}", out.reply);
    let pending = out.pending_elicitation.unwrap();
    let done = rt
        .answer_question(
            "s2",
            pending.call_id,
            pending.question,
            ElicitationAnswer::new(ElicitationAction::Accept),
        )
        .await
        .unwrap();
    assert!(
        done.reply.as_deref().unwrap().contains("model said a summary"),
        "{:?}",
        done.reply
    );
    rt.shutdown().await;
}
