//! Another agent as one of an agent's tools: the declaration an agent
//! spec carries, and the tool spec the catalog makes of it. How a call of
//! such a tool runs is in `delegate`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::AgentSpec;
use crate::id::{AgentId, ToolId};
use crate::tool::{ToolAnnotations, ToolSpec};

/// Declares another agent as one of this agent's tools (`[[agent_tools]]`
/// in an agent file).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentTool {
    /// The agent the tool runs.
    pub agent: AgentId,
    /// The tool's name, as the model calls it (the agent's id by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<ToolId>,
    /// What the tool does, for the model (the agent's description by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of the tool's arguments (by default one string,
    /// `request`: what to ask the agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    /// The child's message, with `{argument}` placeholders filled from the
    /// call (`[ ... ]` parts are left out when a placeholder in them has no
    /// value). Without one, the message is the `request` argument, or the
    /// arguments in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// What the agent's calls write (table names, say): calls of one batch
    /// that write the same thing run one after another.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<String>,
}

impl AgentTool {
    /// `agent` as a tool, with the defaults above.
    pub fn new(agent: impl Into<AgentId>) -> Self {
        Self {
            agent: agent.into(),
            name: None,
            description: None,
            parameters: None,
            prompt: None,
            writes: Vec::new(),
        }
    }

    /// Names the tool (instead of the agent's id).
    pub fn name(mut self, name: impl Into<ToolId>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Describes the tool for the model.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the arguments' JSON Schema.
    pub fn parameters(mut self, schema: Value) -> Self {
        self.parameters = Some(schema);
        self
    }

    /// Sets the template of the child's message.
    pub fn prompt(mut self, template: impl Into<String>) -> Self {
        self.prompt = Some(template.into());
        self
    }

    /// Declares something the agent's calls write.
    pub fn writes(mut self, resource: impl Into<String>) -> Self {
        self.writes.push(resource.into());
        self
    }

    /// The tool's name.
    pub fn tool_name(&self) -> ToolId {
        self.name.clone().unwrap_or_else(|| ToolId::new(self.agent.as_str()))
    }

    /// The tool as the catalog holds it; `target` is the agent it runs
    /// (its description and read-only flag fill the defaults).
    pub(crate) fn spec(&self, target: Option<&AgentSpec>) -> ToolSpec {
        let description = self.description.clone().unwrap_or_else(|| match target {
            Some(agent) if !agent.description.is_empty() => agent.description.clone(),
            _ => format!("Asks the {} agent to do something and returns its answer.", self.agent),
        });
        let parameters = self.parameters.clone().unwrap_or_else(|| {
            serde_json::json!({
                "type": "object",
                "properties": {
                    "request": {"type": "string", "description": "What to ask the agent, in full sentences."}
                },
                "required": ["request"]
            })
        });
        let mut writes = self.writes.clone();
        for resource in target.map(|a| a.writes.as_slice()).unwrap_or_default() {
            if !writes.contains(resource) {
                writes.push(resource.clone());
            }
        }
        let mut spec = ToolSpec::new(self.tool_name(), description, parameters).annotations(ToolAnnotations {
            read_only: target.is_some_and(|a| a.read_only),
            ..ToolAnnotations::default()
        });
        spec.agent = Some(self.agent.clone());
        spec.prompt = self.prompt.clone();
        spec.writes = writes;
        spec
    }
}
