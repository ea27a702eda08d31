//! Handoff tools: `transfer_to_<agent>`, which hand the conversation to
//! another agent. The catalog offers them, planners plan them and the core
//! answers them itself, so they live apart from all three.

use serde_json::{Value, json};

use crate::agent::AgentSpec;
use crate::id::{AgentId, ToolId};
use crate::tool::ToolDef;

/// The prefix of the tools that hand the conversation to another agent.
pub const HANDOFF_PREFIX: &str = "transfer_to_";

/// The name of the tool that hands the conversation to `agent`.
pub fn handoff_tool_name(agent: &AgentId) -> ToolId {
    ToolId::new(format!("{HANDOFF_PREFIX}{agent}"))
}

/// Whether `tool` names a handoff tool (to any agent).
pub(crate) fn is_handoff_tool(tool: &str) -> bool {
    tool.starts_with(HANDOFF_PREFIX)
}

/// The definition the model sees for a handoff to `target` (described by
/// `spec` when the catalog has it).
pub(crate) fn handoff_def(target: &AgentId, spec: Option<&AgentSpec>) -> ToolDef {
    let about = match spec {
        Some(s) if !s.description.is_empty() => format!("{} ({})", s.name, s.description),
        Some(s) => s.name.clone(),
        None => target.to_string(),
    };
    ToolDef {
        name: handoff_tool_name(target),
        description: format!("Hand the conversation to the {about} agent when the request is its job."),
        parameters: handoff_schema(),
    }
}

fn handoff_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "reason": {"type": "string", "description": "Why the conversation is handed over."},
            "context": {
                "type": "object",
                "description": "Facts the next agent needs (key and value), written to its blackboard so nothing is asked twice."
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handoff_names_and_definitions() {
        let name = handoff_tool_name(&"billing".into());
        assert_eq!(name.as_str(), "transfer_to_billing");
        assert!(is_handoff_tool(name.as_str()));
        assert!(!is_handoff_tool("transfer"));
        let spec = AgentSpec::new("billing").name("Billing").description("invoices");
        let def = handoff_def(&"billing".into(), Some(&spec));
        assert!(def.description.contains("Billing (invoices)"), "{}", def.description);
        assert_eq!(def.parameters["properties"]["reason"]["type"], "string");
    }
}
