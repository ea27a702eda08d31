//! concierge as an MCP server: the catalog's Rust tools, and each agent as a
//! tool (`ask_<agent>`) that runs a full turn. While the turn works, a
//! client that sent a `progressToken` gets a progress notification per
//! model call and tool call; when it parks on a confirmation or a choice, a
//! client that declared elicitation is asked (see `elicit`) and its answer
//! resumes the run.
//!
//! ```no_run
//! # async fn serve(rt: concierge::Runtime) -> Result<(), concierge_server::ServeError> {
//! concierge_server::ConciergeMcp::new(rt).serve_stdio().await
//! # }
//! ```

mod elicit;
mod progress;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use concierge::core::{Decision, RunOutput, RunStatus, ToolOutcome, ToolSpec};
use concierge::{RunOptions, Runtime};
use progress::Reporter;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// Why serving over MCP stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The stdio session could not start or broke off.
    #[error(
        "the MCP session over stdio failed: {0}; check that the client speaks MCP on this process's stdin and stdout"
    )]
    Stdio(String),
}

/// The most questions (confirmations, choices) one tool call asks the
/// client's person before it answers with the run as it stands.
const MAX_QUESTIONS: usize = 16;

/// The prefix of the tools that run an agent.
pub const AGENT_TOOL_PREFIX: &str = "ask_";

/// An MCP server over a runtime.
#[derive(Clone)]
pub struct ConciergeMcp {
    rt: Runtime,
    calls: Arc<AtomicU64>,
}

impl std::fmt::Debug for ConciergeMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConciergeMcp").finish_non_exhaustive()
    }
}

fn to_object(value: Value) -> Arc<JsonObject> {
    Arc::new(match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    })
}

fn mcp_tool(spec: &ToolSpec) -> Tool {
    let a = &spec.annotations;
    Tool::new(
        spec.name.to_string(),
        spec.description.clone(),
        to_object(spec.input_schema.clone()),
    )
    .with_annotations(
        ToolAnnotations::new()
            .read_only(a.read_only)
            .destructive(a.destructive)
            .idempotent(a.idempotent),
    )
}

impl ConciergeMcp {
    /// A server exposing `rt`'s Rust tools and agents.
    pub fn new(rt: Runtime) -> Self {
        Self {
            rt,
            calls: Arc::default(),
        }
    }

    /// The tools it offers: Rust tools (not those of MCP servers), then one
    /// `ask_<agent>` per agent.
    pub fn tools(&self) -> Vec<Tool> {
        let mcp = self.rt.mcp_servers();
        let catalog = self.rt.catalog();
        let mut tools: Vec<Tool> = catalog
            .tools()
            .filter(|spec| {
                !mcp.iter().any(|server| {
                    catalog
                        .toolsets()
                        .get(server.as_str())
                        .is_some_and(|set| set.contains(&spec.name))
                })
            })
            .map(mcp_tool)
            .collect();
        for agent in catalog.agents().map(|a| &a.spec) {
            let description = if agent.description.is_empty() {
                format!(
                    "Ask the {} agent; it answers in one turn, using its own tools.",
                    agent.name
                )
            } else {
                format!("Ask the {} agent: {}", agent.name, agent.description)
            };
            let schema = json!({
                "type": "object",
                "properties": {
                    "message": {"type": "string", "description": "What to ask the agent."},
                    "session_id": {"type": "string", "description": "Continue this conversation (a new one otherwise)."}
                },
                "required": ["message"]
            });
            tools.push(Tool::new(
                format!("{AGENT_TOOL_PREFIX}{}", agent.id),
                description,
                to_object(schema),
            ));
        }
        tools
    }

    async fn ask(
        &self,
        agent: &str,
        args: &JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResult, ErrorData> {
        let Some(message) = args.get("message").and_then(Value::as_str) else {
            return Err(ErrorData::invalid_params("`message` (a string) is required", None));
        };
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        let session = match args.get("session_id").and_then(Value::as_str) {
            Some(id) => id.to_string(),
            None => {
                let millis = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis());
                format!("mcp-{millis}-{n}")
            }
        };
        let client = self
            .rt
            .client(agent)
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        let options = RunOptions::new().session_id(session.as_str()).caller_waits();
        let handle = match client.start(message, options).await {
            Ok(handle) => handle,
            Err(error) => return Ok(CallToolResult::error(vec![ContentBlock::text(error.to_string())])),
        };
        let reporter = context.meta.get_progress_token().map(|token| {
            Reporter::start(
                &self.rt,
                context.peer.clone(),
                token,
                handle.session_id().clone(),
                handle.first_seq(),
            )
        });
        let outcome = match handle.wait().await {
            Ok(out) => self.answer_questions(out, &context.peer).await,
            Err(error) => Err(error.to_string()),
        };
        if let Some(reporter) = reporter {
            let last = self.rt.session(session.as_str()).await.map_or(0, |s| s.last_seq());
            reporter.finish(last).await;
        }
        let out = match outcome {
            Ok(out) => out,
            Err(error) => return Ok(CallToolResult::error(vec![ContentBlock::text(error)])),
        };
        let text = match out.status {
            RunStatus::Completed | RunStatus::NeedsInput | RunStatus::Blocked => out.reply.clone().unwrap_or_default(),
            RunStatus::AwaitingConfirmation => match &out.pending_confirmation {
                Some(pending) if !pending.message.is_empty() => {
                    format!("The agent is waiting for a person to answer: {}", pending.message)
                }
                Some(pending) => format!("The agent is waiting for a person to approve {}.", pending.tool),
                None => "The agent is waiting for a person to approve a call.".into(),
            },
            RunStatus::AwaitingChoice => out.reply.clone().unwrap_or_default(),
            RunStatus::AwaitingInput => format!(
                "The agent is waiting for a person to answer: {}",
                out.reply.clone().unwrap_or_default()
            ),
            RunStatus::Failed | RunStatus::Cancelled => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(
                    out.error.unwrap_or_else(|| "the run did not finish".into()),
                )]));
            }
        };
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(json!({
            "reply": out.reply,
            "status": out.status,
            "session_id": out.session_id,
            "run_id": out.run_id,
            "agent": out.agent,
            "tool_calls": out.tool_executions.len(),
        }));
        Ok(result)
    }

    /// While the run waits for a person (a confirmation or a choice) and the
    /// client can ask its person (elicitation), asks and resumes the run
    /// with the answer; a confirmation is answered with its call id and
    /// fingerprint, as every front door answers it. Stops at the first
    /// question the person dismisses (the run stays parked, as for a client
    /// that cannot be asked).
    async fn answer_questions(&self, mut out: RunOutput, peer: &Peer<RoleServer>) -> Result<RunOutput, String> {
        if !elicit::can_elicit(peer) {
            return Ok(out);
        }
        for _ in 0..MAX_QUESTIONS {
            let session = out.session_id.clone();
            let answered = match (&out.status, &out.pending_confirmation, &out.pending_choice) {
                (RunStatus::AwaitingConfirmation, Some(pending), _) => {
                    let decision = match elicit::confirmation(peer, pending).await? {
                        elicit::Answer::Approve => Decision::Approve,
                        elicit::Answer::Deny => Decision::Deny {
                            reason: Some("declined by the person through the MCP client".into()),
                        },
                        _ => return Ok(out),
                    };
                    self.rt
                        .confirm(session, pending.call_id.clone(), pending.fingerprint.clone(), decision)
                        .await
                }
                (RunStatus::AwaitingChoice, _, Some(pending)) => match elicit::choice(peer, pending).await? {
                    elicit::Answer::Option(n) => {
                        self.rt
                            .send(n.to_string(), RunOptions::new().session_id(session).caller_waits())
                            .await
                    }
                    _ => return Ok(out),
                },
                _ => return Ok(out),
            };
            out = answered.map_err(|e| e.to_string())?;
        }
        Ok(out)
    }

    /// Serves over stdin/stdout until the client disconnects.
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| ServeError::Stdio(e.to_string()))?;
        running.waiting().await.map_err(|e| ServeError::Stdio(e.to_string()))?;
        Ok(())
    }

    /// An axum router serving streamable HTTP at `/mcp` (loopback host names only).
    pub fn router(self) -> axum::Router {
        let service = StreamableHttpService::new(
            move || Ok(self.clone()),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        axum::Router::new().nest_service("/mcp", service)
    }
}

impl ServerHandler for ConciergeMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("concierge", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "concierge's tools, and its agents as ask_<agent> tools (each runs a full turn; \
                 pass session_id to continue a conversation).",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, ErrorData> {
        let args = request.arguments.clone().unwrap_or_default();
        let name = request.name.as_ref();
        if let Some(agent) = name.strip_prefix(AGENT_TOOL_PREFIX) {
            if self.rt.catalog().agent(&agent.into()).is_some() {
                return Ok(self.ask(agent, &args, &context).await?.into());
            }
        }
        if self.rt.catalog().tool(&name.into()).is_none() {
            return Err(ErrorData::invalid_params(format!("unknown tool {name}"), None));
        }
        let key = context
            .meta
            .get("idempotency_key")
            .and_then(Value::as_str)
            .map(str::to_string);
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        let result = match self.rt.call_tool(name, Value::Object(args), key, n).await {
            ToolOutcome::Ok(value) => {
                let text = match &value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                if value.is_object() {
                    result.structured_content = Some(value);
                }
                result
            }
            ToolOutcome::Error(error) => {
                let body = json!({"error": error});
                let mut result = CallToolResult::error(vec![ContentBlock::text(body.to_string())]);
                result.structured_content = Some(body);
                result
            }
        };
        Ok(result.into())
    }
}
