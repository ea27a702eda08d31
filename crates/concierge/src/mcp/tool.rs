//! MCP tools as concierge tools.

use std::sync::Arc;

use concierge_core::{ToolAnnotations, ToolError, ToolSpec};
use futures::future::BoxFuture;
use rmcp::model::Tool;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{McpClient, McpError, McpServerConfig};
use crate::tool::{DynTool, ToolContext};

/// A discovered tool: its spec in the catalog and its name on the server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RemoteTool {
    /// The spec (name prefixed and made a valid function name).
    pub spec: ToolSpec,
    /// The tool's name on the server.
    pub remote: String,
}

/// A valid function name from `prefix` + `name`: other characters become `_`.
fn local_name(prefix: &str, name: &str) -> String {
    let mut out: String = format!("{prefix}{name}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    out.truncate(64);
    out
}

/// Our annotations from a tool's MCP hints, with the MCP specification's
/// defaults: read-only only when it says so; destructive unless read-only
/// or `destructiveHint: false`; idempotent only when it says so. A
/// destructive tool asks for confirmation unless the server is trusted.
fn annotations(hints: Option<&rmcp::model::ToolAnnotations>, trusted: bool) -> ToolAnnotations {
    let read_only = hints.and_then(|h| h.read_only_hint).unwrap_or(false);
    let destructive = !read_only && hints.and_then(|h| h.destructive_hint).unwrap_or(true);
    ToolAnnotations {
        read_only,
        destructive,
        idempotent: hints.and_then(|h| h.idempotent_hint).unwrap_or(false),
        requires_confirmation: destructive && !trusted,
        cacheable: false,
    }
}

/// Maps a server's tools into specs: `included_tools` keeps some (a name the
/// server does not offer is an error that lists what it does), the prefix
/// is applied, annotations map onto ours (see [`McpServerConfig::trust`]).
pub fn remote_tools(server: &str, config: &McpServerConfig, tools: &[Tool]) -> Result<Vec<RemoteTool>, McpError> {
    if let Some(included) = &config.included_tools {
        let missing: Vec<&str> = included
            .iter()
            .map(String::as_str)
            .filter(|name| !tools.iter().any(|t| t.name == *name))
            .collect();
        if !missing.is_empty() {
            let mut offered: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
            offered.sort_unstable();
            return Err(McpError {
                server: server.to_string(),
                message: format!(
                    "included_tools names {}, which the server does not offer; it offers: {}. Fix included_tools, \
                     or leave it out to take every tool the server offers",
                    missing.join(", "),
                    offered.join(", ")
                ),
            });
        }
    }
    let prefix = config.prefix.as_deref().unwrap_or("");
    Ok(tools
        .iter()
        .filter(|t| {
            config
                .included_tools
                .as_ref()
                .is_none_or(|keep| keep.iter().any(|k| k == t.name.as_ref()))
        })
        .map(|tool| {
            let mut schema = Value::Object((*tool.input_schema).clone());
            if let Value::Object(map) = &mut schema {
                map.remove("$schema");
                map.entry("type").or_insert_with(|| Value::String("object".into()));
            }
            let annotations = annotations(tool.annotations.as_ref(), config.trust);
            let description = tool
                .description
                .as_deref()
                .map(str::to_string)
                .or_else(|| tool.title.clone())
                .unwrap_or_else(|| tool.name.to_string());
            let mut spec = ToolSpec::new(local_name(prefix, &tool.name), description, schema)
                .category(format!("mcp:{server}"))
                .annotations(annotations);
            spec.provides = Vec::new();
            RemoteTool {
                spec,
                remote: tool.name.to_string(),
            }
        })
        .collect())
}

/// A tool on an MCP server, callable like any other.
pub struct McpTool {
    client: Arc<McpClient>,
    tool: RemoteTool,
}

impl McpTool {
    /// The tool `tool` of `client`'s server.
    pub fn new(client: Arc<McpClient>, tool: RemoteTool) -> Self {
        Self { client, tool }
    }
}

impl DynTool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.tool.spec.clone()
    }

    fn call_json(&self, args: Value, cx: ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            let Value::Object(arguments) = args else {
                return Err(ToolError::invalid_arguments(
                    "the arguments must be a JSON object",
                    Vec::new(),
                ));
            };
            self.client
                .call_in(&self.tool.remote, arguments, &cx.idempotency_key, Some(&cx))
                .await
        })
    }

    /// Calls are bounded by the server's `timeout_secs`, and a server that
    /// runs out of it is restarted.
    fn bounds_its_own_time(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rmcp::model::ToolAnnotations as Hints;
    use serde_json::json;

    use super::*;

    fn tools() -> Vec<Tool> {
        let schema = |v: Value| Arc::new(v.as_object().cloned().unwrap());
        vec![
            Tool::new("echo", "Echoes", schema(json!({"$schema": "x", "type": "object"})))
                .with_annotations(Hints::new().read_only(true).idempotent(true)),
            Tool::new("get.sum", "Adds", schema(json!({"type": "object"}))),
            Tool::new("wipe", "Deletes", schema(json!({"type": "object"})))
                .with_annotations(Hints::new().destructive(true)),
            Tool::new("append", "Appends", schema(json!({"type": "object"})))
                .with_annotations(Hints::new().destructive(false)),
        ]
    }

    #[test]
    fn annotations_follow_the_mcp_defaults_and_destructive_tools_ask() {
        let config = McpServerConfig::stdio("x", Vec::<String>::new());
        let specs = remote_tools("s", &config, &tools()).unwrap();
        let a = |i: usize| specs[i].spec.annotations.clone();
        assert!(
            a(0).read_only && !a(0).destructive && !a(0).requires_confirmation,
            "readOnlyHint"
        );
        assert!(
            a(1).destructive && a(1).requires_confirmation,
            "no annotations: destructive"
        );
        assert!(!a(1).read_only && !a(1).idempotent);
        assert!(a(2).destructive && a(2).requires_confirmation, "destructiveHint: true");
        assert!(
            !a(3).destructive && !a(3).requires_confirmation,
            "destructiveHint: false"
        );
        let trusted = remote_tools("s", &config.trusted(), &tools()).unwrap();
        assert!(
            trusted.iter().all(|t| !t.spec.annotations.requires_confirmation),
            "a trusted server's tools never ask"
        );
        assert!(
            trusted[2].spec.annotations.destructive,
            "but they are still marked destructive"
        );
    }

    #[test]
    fn specs_are_filtered_prefixed_and_annotated() {
        let config = McpServerConfig::stdio("x", Vec::<String>::new()).prefix("ev_");
        let specs = remote_tools("everything", &config, &tools()).unwrap();
        assert_eq!(specs[0].spec.name, "ev_echo");
        assert_eq!(specs[1].spec.name, "ev_get_sum", "invalid characters become _");
        assert_eq!(specs[1].remote, "get.sum");
        assert!(specs[0].spec.annotations.read_only && specs[0].spec.annotations.idempotent);
        assert!(specs[0].spec.input_schema.get("$schema").is_none());
        assert_eq!(specs[0].spec.category.as_deref(), Some("mcp:everything"));

        let only = config.clone().include(["echo"]);
        assert_eq!(remote_tools("everything", &only, &tools()).unwrap().len(), 1);
        let wrong = config.include(["echo", "nope"]);
        let error = remote_tools("everything", &wrong, &tools()).unwrap_err().to_string();
        assert!(
            error.contains("nope") && error.contains("append, echo, get.sum, wipe"),
            "{error}"
        );
    }
}
