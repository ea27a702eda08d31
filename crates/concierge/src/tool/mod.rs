//! Tools: typed async functions an agent may call.
//!
//! Write a tool with [`#[tool]`](crate::tool) on an `async fn` whose argument
//! is a struct deriving `Deserialize` and `JsonSchema`, or implement [`Tool`]
//! by hand. Before a handler runs, its arguments are coerced and validated
//! against the schema ([`ArgumentValidator`]); a failure, a handler error or a
//! handler panic becomes a structured [`ToolError`] for the model.

mod channel;
#[cfg(feature = "sqlite")]
mod memory;
mod registry;
#[cfg(feature = "sqlite")]
mod schedule;
mod validate;

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use concierge_core::{AgentId, CallId, Choice, IdempotencyKey, RunId, SessionId, Timestamp, ToolError, ToolSpec};
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use channel::{CallChannel, ChannelError};
#[cfg(feature = "sqlite")]
pub use memory::{MEMORY_TOOLSET, memory_toolset};
pub use registry::{DEFAULT_MAX_RESULT_BYTES, ToolRegistry};
#[cfg(feature = "sqlite")]
pub use schedule::{SCHEDULE_TOOLSET, schedule_toolset};
pub use validate::ArgumentValidator;

/// Who is calling and what the session knows, for tools that care
/// (side-effecting tools should deduplicate on [`ToolContext::idempotency_key`]).
#[derive(Clone, Debug)]
pub struct ToolContext {
    /// The session the call serves.
    pub session_id: SessionId,
    /// The run that made the call.
    pub run_id: RunId,
    /// The call's id, unique within the session.
    pub call_id: CallId,
    /// The agent that asked.
    pub agent: AgentId,
    /// The same for every attempt of this call, across crashes and retries.
    pub idempotency_key: IdempotencyKey,
    /// Who asked for the run, as the caller said (`RunOptions::user`,
    /// `--user`, the server's token); `None` if it did not say.
    pub user: Option<String>,
    /// The tenant the session belongs to (`None` on a runtime without tenants).
    pub tenant: Option<String>,
    /// The session's blackboard when the call was made: the information
    /// available by key (what earlier tools provided, the run's context,
    /// `user_id`). Read-only: a tool adds to it by what it returns.
    pub blackboard: Arc<BTreeMap<String, Value>>,
    /// When the person's message that started the run was accepted, in
    /// milliseconds since the Unix epoch: what "yesterday" or "next Tuesday"
    /// in it mean is relative to this, not to when the tool runs.
    pub asked_at: Timestamp,
    /// The way back to the session while the call runs (to ask the person
    /// or the model, to report), when the engine offers one.
    pub channel: Option<Channel>,
    /// Where an earlier attempt of this call said it stood (its last
    /// [`CallReport::checkpoint`](concierge_core::CallReport::checkpoint)):
    /// `None` on a first attempt. A tool that records checkpoints goes on
    /// from here after a crash instead of starting again.
    pub checkpoint: Option<Value>,
}

/// A [`CallChannel`] shared by a call's context.
#[derive(Clone)]
pub struct Channel(pub Arc<dyn CallChannel>);

impl fmt::Debug for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Channel")
    }
}

impl ToolContext {
    /// Who asked for the run, if the caller said.
    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// A value on the session's blackboard.
    pub fn value(&self, key: &str) -> Option<&Value> {
        self.blackboard.get(key)
    }

    /// Everything on the session's blackboard, by key.
    pub fn blackboard(&self) -> &BTreeMap<String, Value> {
        &self.blackboard
    }
}

/// What a tool returns when it may ask the person to choose instead of
/// answering ("which John: the one in sales or the one in support?"): its result, or a [`Choice`]. The run
/// parks on a choice; the person's answer ("2", "the second one", a label) is
/// resolved without a model, the chosen option's id is written to the call's
/// argument the choice names, and the tool is called again.
///
/// ```
/// use concierge::{Choice, Reply};
/// use serde_json::json;
///
/// let reply: Reply<serde_json::Value> = Reply::Choose(
///     Choice::new("Which John do you mean?", "contact_id")
///         .option(4, "John Smith (Acme)")
///         .option(9, "John Park (Globex)"),
/// );
/// let value = serde_json::to_value(&reply)?;
/// assert!(Choice::from_value(&value).is_some());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Reply<T> {
    /// The result.
    Done(T),
    /// A question with numbered options, for the person.
    Choose(Choice),
}

impl<T: serde::Serialize> serde::Serialize for Reply<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Reply::Done(value) => value.serialize(serializer),
            Reply::Choose(choice) => choice.to_value().serialize(serializer),
        }
    }
}

impl<T: serde::Serialize> Reply<T> {
    /// The reply as a tool's JSON result (a choice as [`Choice::to_value`]).
    pub fn into_value(self) -> Result<Value, ToolError> {
        serde_json::to_value(&self)
            .map_err(|e| ToolError::failed(format!("the tool's result could not be written as JSON: {e}")))
    }
}

/// A typed tool.
pub trait Tool: Send + Sync + 'static {
    /// The arguments (their JSON Schema is what the model sees).
    type Args: DeserializeOwned + JsonSchema + Send + 'static;

    /// Name, description, schema and annotations.
    fn spec(&self) -> ToolSpec;

    /// Runs the tool on validated arguments.
    fn call(&self, args: Self::Args, cx: ToolContext) -> impl Future<Output = Result<Value, ToolError>> + Send;
}

/// A tool with JSON in and out: what the registry stores. Every [`Tool`] is
/// one; tools discovered at run time (MCP) implement it directly.
pub trait DynTool: Send + Sync + 'static {
    /// Name, description, schema and annotations.
    fn spec(&self) -> ToolSpec;

    /// Runs the tool on arguments that already passed validation.
    fn call_json(&self, args: Value, cx: ToolContext) -> BoxFuture<'_, Result<Value, ToolError>>;

    /// Whether the tool bounds its own calls' time (and recovers from a
    /// call that runs out of it, as an MCP client restarts a hung server);
    /// the registry's tool timeout then does not apply. Default: no.
    fn bounds_its_own_time(&self) -> bool {
        false
    }
}

impl<T: Tool> DynTool for T {
    fn spec(&self) -> ToolSpec {
        Tool::spec(self)
    }

    fn call_json(&self, args: Value, cx: ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            let args: T::Args = serde_json::from_value(args).map_err(|e| {
                ToolError::invalid_arguments(format!("the arguments could not be read: {e}"), Vec::new())
            })?;
            self.call(args, cx).await
        })
    }
}

/// The JSON Schema of `T`, shaped for function calling: subschemas inlined,
/// no `$schema` or `title`.
pub fn schema_for<T: JsonSchema>() -> Value {
    let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Value::Object(map) = &mut value {
        map.remove("title");
        map.remove("$schema");
        map.remove("$defs");
        if !map.contains_key("properties") && map.get("type") == Some(&Value::String("object".into())) {
            map.insert("properties".into(), Value::Object(Default::default()));
        }
    }
    value
}

/// A named group of tools.
#[derive(Clone)]
pub struct Toolset {
    pub(crate) name: String,
    pub(crate) tools: Vec<Arc<dyn DynTool>>,
}

impl Toolset {
    /// An empty toolset.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            tools: Vec::new(),
        }
    }

    /// Adds a tool.
    pub fn tool(mut self, tool: impl DynTool) -> Self {
        self.tools.push(Arc::new(tool));
        self
    }

    /// Adds a shared tool.
    pub fn tool_arc(mut self, tool: Arc<dyn DynTool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// The toolset's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The specs of its tools.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec()).collect()
    }
}

impl fmt::Debug for Toolset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.tools.iter().map(|t| t.spec().name.to_string()).collect();
        f.debug_struct("Toolset")
            .field("name", &self.name)
            .field("tools", &names)
            .finish()
    }
}

/// Support for code generated by `#[tool]`; not a stable API.
#[doc(hidden)]
pub mod __private {
    use std::fmt::Display;

    use concierge_core::ToolError;
    use serde::Serialize;
    use serde_json::Value;

    pub struct Wrap<T>(pub T);

    /// Picked when the handler's error type is `ToolError` itself.
    pub trait ViaToolError {
        fn into_tool_error(self) -> ToolError;
    }

    impl ViaToolError for &&Wrap<ToolError> {
        fn into_tool_error(self) -> ToolError {
            self.0.clone()
        }
    }

    /// Picked for any other error that can be displayed.
    pub trait ViaDisplay {
        fn into_tool_error(self) -> ToolError;
    }

    impl<E: Display> ViaDisplay for &Wrap<E> {
        fn into_tool_error(self) -> ToolError {
            ToolError::failed(self.0.to_string())
        }
    }

    pub fn to_value<T: Serialize>(value: T) -> Result<Value, ToolError> {
        serde_json::to_value(value)
            .map_err(|e| ToolError::failed(format!("the tool's result could not be serialized: {e}")))
    }
}
