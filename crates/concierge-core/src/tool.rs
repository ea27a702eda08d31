//! Tool descriptions and tool outcomes.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::id::ToolId;

/// Behavioural hints about a tool (they drive confirmation and caching).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolAnnotations {
    /// The tool does not change anything outside concierge.
    pub read_only: bool,
    /// The tool may destroy or overwrite data.
    pub destructive: bool,
    /// Calling the tool twice with the same arguments has the effect of calling it once.
    pub idempotent: bool,
    /// The person must approve each call before it runs.
    pub requires_confirmation: bool,
    /// A successful result may be reused for a later call with the same arguments
    /// in the same session (among its latest 256 tool executions), so the same
    /// lookup is not made twice.
    pub cacheable: bool,
}

/// A tool as the catalog knows it: name, description, schema, annotations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's name, as the model calls it.
    pub name: ToolId,
    /// What the tool does, for the model and for people.
    pub description: String,
    /// A free-form category such as `finance` or `computation`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// The JSON Schema of the arguments object.
    pub input_schema: Value,
    /// Behavioural hints (read-only, destructive, idempotent, needs confirmation).
    #[serde(default)]
    pub annotations: ToolAnnotations,
    /// Blackboard keys that must be available before the tool may run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
    /// Blackboard keys the tool fills in when it succeeds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provides: Vec<String>,
    /// What the person is asked before a call runs, with `{argument}`
    /// placeholders ("I'll create a task '{title}' due {due}. Proceed?");
    /// without one, the question lists the arguments by their schema titles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<String>,
    /// What the tool's calls write (table names, say): calls of one batch
    /// that write the same thing run one after another, in call order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<String>,
    /// The agent the tool runs as a child run, for an agent tool (see
    /// [`AgentTool`](crate::AgentTool)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<crate::id::AgentId>,
    /// For an agent tool: the template of the child's message, filled from
    /// the call's arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

impl ToolSpec {
    /// A spec with a name, a description and an arguments schema.
    pub fn new(name: impl Into<ToolId>, description: impl Into<String>, input_schema: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            category: None,
            input_schema,
            annotations: ToolAnnotations::default(),
            requires: Vec::new(),
            provides: Vec::new(),
            confirm: None,
            writes: Vec::new(),
            agent: None,
            prompt: None,
        }
    }

    /// Declares something the tool's calls write: calls of one batch that
    /// write the same thing run one after another.
    pub fn writes(mut self, resource: impl Into<String>) -> Self {
        self.writes.push(resource.into());
        self
    }

    /// Whether two calls of these tools must not run at the same time.
    pub fn conflicts_with(&self, other: &ToolSpec) -> bool {
        self.writes.iter().any(|w| other.writes.contains(w))
    }

    /// Sets the confirmation template: the question the person answers before
    /// a call runs, with `{argument}` placeholders filled from the call.
    pub fn confirm(mut self, template: impl Into<String>) -> Self {
        self.confirm = Some(template.into());
        self
    }

    /// Sets the free-form category (e.g. `finance`).
    pub fn category(mut self, category: impl Into<String>) -> Self {
        self.category = Some(category.into());
        self
    }

    /// Sets the behavioural hints.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
        self
    }

    /// Adds a blackboard key the tool requires.
    pub fn requires(mut self, key: impl Into<String>) -> Self {
        self.requires.push(key.into());
        self
    }

    /// Adds a blackboard key the tool provides.
    pub fn provides(mut self, key: impl Into<String>) -> Self {
        self.provides.push(key.into());
        self
    }

    /// The definition a model sees.
    pub fn to_def(&self) -> ToolDef {
        ToolDef {
            name: self.name.clone(),
            description: self.description.clone(),
            parameters: self.input_schema.clone(),
        }
    }
}

/// A tool as a model sees it: a function name, a description, a parameters schema.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    /// The tool's name, as the model calls it.
    pub name: ToolId,
    /// What the tool does, in words for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

/// What a tool call came to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolOutcome {
    /// The tool returned this value.
    Ok(Value),
    /// The tool did not produce a value.
    Error(ToolError),
}

impl ToolOutcome {
    /// Whether the call succeeded.
    pub fn is_ok(&self) -> bool {
        matches!(self, ToolOutcome::Ok(_))
    }

    /// The text a model is shown for this outcome: the value (a string as is,
    /// anything else as JSON), or `{"error": {...}}`.
    pub fn to_model_text(&self) -> String {
        match self {
            ToolOutcome::Ok(Value::String(text)) => text.clone(),
            ToolOutcome::Ok(value) => value.to_string(),
            ToolOutcome::Error(error) => serde_json::json!({ "error": error }).to_string(),
        }
    }
}

/// Why a tool call failed, in a shape a model can act on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolError {
    /// The class of failure.
    pub kind: ToolErrorKind,
    /// What happened and, where possible, what to do instead.
    pub message: String,
    /// For invalid arguments: each field that was wrong and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<FieldError>,
    /// The tool guardrail that stopped the call or held back its result
    /// (the kind is then [`ToolErrorKind::Blocked`], and the run ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guardrail: Option<Box<crate::guardrail::GuardrailTrip>>,
}

impl ToolError {
    /// An error of `kind` with `message`.
    pub fn new(kind: ToolErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            fields: Vec::new(),
            guardrail: None,
        }
    }

    /// The tool ran and reported a failure (the common case for handlers).
    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(ToolErrorKind::Failed, message)
    }

    /// The arguments did not match the schema.
    pub fn invalid_arguments(message: impl Into<String>, fields: Vec<FieldError>) -> Self {
        Self {
            kind: ToolErrorKind::InvalidArguments,
            message: message.into(),
            fields,
            guardrail: None,
        }
    }

    /// A guardrail stopped the call or held back its result.
    pub fn blocked(trip: crate::guardrail::GuardrailTrip) -> Self {
        Self {
            kind: ToolErrorKind::Blocked,
            message: format!("stopped by the guardrail '{}': {}", trip.guardrail, trip.reason),
            fields: Vec::new(),
            guardrail: Some(Box::new(trip)),
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.as_str(), self.message)?;
        for field in &self.fields {
            // A problem of the whole object, not of one field, may repeat the message.
            if field.field.is_empty() {
                if field.problem != self.message {
                    write!(f, "; {}", field.problem)?;
                }
            } else {
                write!(f, "; {}: {}", field.field, field.problem)?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for ToolError {}

/// The class of a tool failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolErrorKind {
    /// The arguments did not match the tool's schema (or were not JSON).
    InvalidArguments,
    /// No tool of that name is available to this agent.
    UnknownTool,
    /// Blackboard information the tool requires is missing.
    MissingInformation,
    /// The tool ran and failed.
    Failed,
    /// The tool's handler panicked.
    Panicked,
    /// The tool did not answer in time.
    Timeout,
    /// The tool's backend (e.g. an MCP server) could not be reached.
    Unavailable,
    /// The person declined the call.
    Declined,
    /// The call was not run because a run limit was reached.
    LimitReached,
    /// The run ended before the call finished.
    Cancelled,
    /// The agent may not make this call (a read-only agent and a tool that
    /// changes things).
    NotAllowed,
    /// A guardrail stopped the call before it ran, or held back its result.
    Blocked,
}

impl ToolErrorKind {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolErrorKind::InvalidArguments => "invalid_arguments",
            ToolErrorKind::UnknownTool => "unknown_tool",
            ToolErrorKind::MissingInformation => "missing_information",
            ToolErrorKind::Failed => "failed",
            ToolErrorKind::Panicked => "panicked",
            ToolErrorKind::Timeout => "timeout",
            ToolErrorKind::Unavailable => "unavailable",
            ToolErrorKind::Declined => "declined",
            ToolErrorKind::LimitReached => "limit_reached",
            ToolErrorKind::Cancelled => "cancelled",
            ToolErrorKind::NotAllowed => "not_allowed",
            ToolErrorKind::Blocked => "blocked",
        }
    }
}

/// One argument that was wrong.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    /// The field, as a JSON pointer without the leading `/` (empty for the whole object).
    pub field: String,
    /// What was wrong with it.
    pub problem: String,
}
