//! The built-in resource tools, `list_resources` and `read_resource`: an
//! agent that lists the toolset [`RESOURCE_TOOLSET`] in its `toolsets` may
//! look through the MCP servers' resources and read one during a run.

use std::collections::BTreeMap;
use std::sync::Arc;

use concierge_core::{ToolAnnotations, ToolError, ToolErrorKind, ToolSpec};
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::McpClient;
use crate::tool::{DynTool, ToolContext};

/// The toolset of the built-in resource tools (present when MCP servers are configured).
pub const RESOURCE_TOOLSET: &str = "mcp_resources";

/// The MCP clients the tools read through, by server name.
pub(crate) type Clients = Arc<BTreeMap<String, Arc<McpClient>>>;

fn annotations() -> ToolAnnotations {
    ToolAnnotations {
        read_only: true,
        idempotent: true,
        ..ToolAnnotations::default()
    }
}

fn unknown_server(clients: &Clients, server: &str) -> ToolError {
    let known: Vec<&str> = clients.keys().map(String::as_str).collect();
    ToolError::new(
        ToolErrorKind::InvalidArguments,
        format!(
            "there is no MCP server {server:?}; the servers are {}",
            known.join(", ")
        ),
    )
}

fn unavailable(error: crate::error::McpError) -> ToolError {
    ToolError::new(ToolErrorKind::Unavailable, error.to_string())
}

/// `list_resources`: the resources and resource templates of one server or all.
struct ListResources {
    clients: Clients,
}

impl DynTool for ListResources {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "list_resources",
            "Lists the documents and data (resources) the connected MCP servers offer, with their URIs, and the \
             URI templates for reading more. Read one with read_resource.",
            json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "Only this MCP server's resources (all servers when absent)."}
                }
            }),
        )
        .category("mcp")
        .annotations(annotations())
    }

    fn call_json(&self, args: Value, _cx: ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            let wanted = args.get("server").and_then(Value::as_str).map(str::to_string);
            let servers: Vec<(&String, &Arc<McpClient>)> = match &wanted {
                Some(server) => match self.clients.get_key_value(server) {
                    Some(entry) => vec![entry],
                    None => return Err(unknown_server(&self.clients, server)),
                },
                None => self.clients.iter().collect(),
            };
            let mut resources = Vec::new();
            let mut templates = Vec::new();
            let mut unreachable = Vec::new();
            for (name, client) in servers {
                let listed = match client.resources().await {
                    Ok(listed) => listed,
                    Err(error) if wanted.is_some() => return Err(unavailable(error)),
                    Err(error) => {
                        unreachable.push(error.to_string());
                        continue;
                    }
                };
                for r in listed {
                    resources.push(json!({"server": name, "uri": r.uri, "name": r.title.unwrap_or(r.name),
                        "description": r.description, "mime_type": r.mime_type}));
                }
                for t in client.resource_templates().await.unwrap_or_default() {
                    templates.push(json!({"server": name, "uri_template": t.uri_template,
                        "name": t.title.unwrap_or(t.name), "description": t.description}));
                }
            }
            let mut out = json!({"resources": resources, "templates": templates});
            if !unreachable.is_empty() {
                out["unreachable"] = json!(unreachable);
            }
            Ok(out)
        })
    }

    fn bounds_its_own_time(&self) -> bool {
        true
    }
}

/// `read_resource`: one resource's text.
struct ReadResource {
    clients: Clients,
}

impl DynTool for ReadResource {
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "read_resource",
            "Reads a resource of an MCP server (a URI from list_resources, or one made from a URI template) and \
             returns its text.",
            json!({
                "type": "object",
                "properties": {
                    "server": {"type": "string", "description": "The MCP server's name."},
                    "uri": {"type": "string", "description": "The resource's URI."}
                },
                "required": ["server", "uri"]
            }),
        )
        .category("mcp")
        .annotations(annotations())
    }

    fn call_json(&self, args: Value, _cx: ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            let (Some(server), Some(uri)) = (
                args.get("server").and_then(Value::as_str),
                args.get("uri").and_then(Value::as_str),
            ) else {
                return Err(ToolError::invalid_arguments(
                    "give the MCP server's name as server and the resource's URI as uri",
                    Vec::new(),
                ));
            };
            let client = self
                .clients
                .get(server)
                .ok_or_else(|| unknown_server(&self.clients, server))?;
            let read = client.read_resource(uri).await.map_err(unavailable)?;
            serde_json::to_value(read).map_err(|e| ToolError::failed(e.to_string()))
        })
    }

    fn bounds_its_own_time(&self) -> bool {
        true
    }
}

/// The built-in resource tools over `clients`.
pub(crate) fn resource_tools(clients: &Clients) -> Vec<Arc<dyn DynTool>> {
    vec![
        Arc::new(ListResources {
            clients: clients.clone(),
        }),
        Arc::new(ReadResource {
            clients: clients.clone(),
        }),
    ]
}
