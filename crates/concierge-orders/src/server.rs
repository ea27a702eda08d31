//! The MCP server: the order tools over stdio or streamable HTTP (rmcp).

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, RequestMetaObject, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

use crate::store::OrderStore;
use crate::tools;

/// The `_meta` field a client puts a call's idempotency key in (concierge
/// does, for every call). Calls of `UpdateOrderStatus` that carry the same
/// key change the order once; the later ones get the first one's result.
pub const IDEMPOTENCY_KEY_META: &str = "idempotency_key";

/// The environment variable that serves the preview tools too (`1`, `true`, `yes` or `on`).
pub const PREVIEW_ENV: &str = "CONCIERGE_ORDERS_PREVIEW";

/// Why serving stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The stdio session could not start or broke off.
    #[error(
        "the MCP session over stdio failed: {0}; check that the client speaks MCP on this process's stdin and stdout"
    )]
    Stdio(String),
    /// The HTTP address could not be used.
    #[error("cannot serve HTTP on {addr}: {message}; pick a free loopback port, e.g. --http 127.0.0.1:8765")]
    Http {
        /// The address asked for.
        addr: String,
        /// What went wrong.
        message: String,
    },
    /// The database could not be created or opened.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// The orders MCP server over one database.
#[derive(Clone, Debug)]
pub struct OrdersServer {
    store: OrderStore,
    preview: bool,
}

impl OrdersServer {
    /// A server over `store`, with the released tools only.
    pub fn new(store: OrderStore) -> Self {
        Self { store, preview: false }
    }

    /// Also serves the preview tools (today: `GetCustomer`).
    pub fn with_preview(mut self, preview: bool) -> Self {
        self.preview = preview;
        self
    }

    /// Whether [`PREVIEW_ENV`] asks for the preview tools.
    pub fn preview_from_env() -> bool {
        std::env::var(PREVIEW_ENV)
            .map(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"))
            .unwrap_or(false)
    }

    /// The database it serves.
    pub fn store(&self) -> &OrderStore {
        &self.store
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

    /// Serves streamable HTTP at `http://<addr>/mcp` until the process ends.
    pub async fn serve_http(self, addr: std::net::SocketAddr) -> Result<(), ServeError> {
        let http = |e: std::io::Error| ServeError::Http {
            addr: addr.to_string(),
            message: e.to_string(),
        };
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(http)?;
        let bound = listener.local_addr().map_err(http)?;
        eprintln!("concierge-orders: serving MCP over streamable HTTP at http://{bound}/mcp");
        axum::serve(listener, self.router()).await.map_err(http)
    }
}

/// The call's idempotency key: `_meta.idempotency_key` of the request.
fn idempotency_key(request: &CallToolRequestParams, context: &RequestContext<RoleServer>) -> Option<String> {
    let from = |meta: &RequestMetaObject| {
        meta.get(IDEMPOTENCY_KEY_META)
            .and_then(Value::as_str)
            .filter(|k| !k.is_empty())
            .map(str::to_string)
    };
    request.meta.as_ref().and_then(from).or_else(|| from(&context.meta))
}

impl ServerHandler for OrdersServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("concierge-orders", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Business orders: look up an order (GetOrder), list a customer's orders (GetCustomerOrders), \
                 track a package (TrackPackage), and move an order to another status (UpdateOrderStatus; send \
                 _meta.idempotency_key so a retried call changes nothing twice).",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::catalog(self.preview)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let key = idempotency_key(&request, &context);
        let name = request.name.to_string();
        let args = request.arguments.unwrap_or_default();
        let (store, preview) = (self.store.clone(), self.preview);
        let tool = name.clone();
        let outcome = tokio::task::spawn_blocking(move || tools::call(&store, &tool, &args, key.as_deref(), preview))
            .await
            .map_err(|e| ErrorData::internal_error(format!("the {name} call stopped: {e}"), None))?;
        let result = match outcome {
            None => {
                let offered: Vec<String> = tools::catalog(self.preview)
                    .iter()
                    .map(|t| t.name.to_string())
                    .collect();
                return Err(ErrorData::invalid_params(
                    format!("There is no tool {name}; this server offers {}.", offered.join(", ")),
                    None,
                ));
            }
            Some(Ok(value)) => {
                let message = value
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("Done.")
                    .to_string();
                let mut result = CallToolResult::success(vec![ContentBlock::text(message)]);
                result.structured_content = Some(value);
                result
            }
            Some(Err(failure)) => CallToolResult::error(vec![ContentBlock::text(failure.to_string())]),
        };
        Ok(result.into())
    }
}
