//! The tools a runtime can execute, with their compiled validators.

use std::collections::{BTreeMap, HashMap};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use concierge_core::{ToolCall, ToolError, ToolErrorKind, ToolId, ToolOutcome, ToolSpec};
use futures::FutureExt;

use super::{ArgumentValidator, DynTool, ToolContext};
use crate::error::{Error, Result};

struct Entry {
    spec: ToolSpec,
    handler: Arc<dyn DynTool>,
    validator: ArgumentValidator,
}

/// Executable tools by name, grouped in toolsets.
pub struct ToolRegistry {
    entries: HashMap<ToolId, Entry>,
    toolsets: BTreeMap<String, Vec<ToolId>>,
    timeout: Duration,
}

impl Default for ToolRegistry {
    fn default() -> Self {
        Self {
            entries: HashMap::new(),
            toolsets: BTreeMap::new(),
            timeout: Duration::from_secs(60),
        }
    }
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("toolsets", &self.toolsets)
            .finish()
    }
}

impl ToolRegistry {
    /// An empty registry with a 60 s per-call timeout.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the per-call timeout.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// Adds a tool to a toolset; its schema is compiled now.
    pub fn add(&mut self, toolset: &str, handler: Arc<dyn DynTool>) -> Result<()> {
        let spec = handler.spec();
        if self.entries.contains_key(&spec.name) {
            return Err(Error::InvalidConfig(format!(
                "two tools are named {}; rename one",
                spec.name
            )));
        }
        let validator = ArgumentValidator::new(&spec.input_schema)
            .map_err(|e| Error::InvalidConfig(format!("tool {} has an unusable input schema: {e}", spec.name)))?;
        self.toolsets
            .entry(toolset.to_string())
            .or_default()
            .push(spec.name.clone());
        self.entries.insert(
            spec.name.clone(),
            Entry {
                spec,
                handler,
                validator,
            },
        );
        Ok(())
    }

    /// Toolsets with their tools' specs, for the catalog.
    pub fn toolsets(&self) -> Vec<(String, Vec<ToolSpec>)> {
        self.toolsets
            .iter()
            .map(|(name, ids)| {
                let specs = ids
                    .iter()
                    .filter_map(|id| self.entries.get(id))
                    .map(|e| e.spec.clone())
                    .collect();
                (name.clone(), specs)
            })
            .collect()
    }

    /// Whether a tool is registered.
    pub fn contains(&self, tool: &ToolId) -> bool {
        self.entries.contains_key(tool)
    }

    /// Runs a call: coerce and validate the arguments, then the handler under
    /// the timeout, catching panics. Returns the outcome and the duration.
    pub async fn execute(&self, call: &ToolCall, cx: ToolContext) -> (ToolOutcome, u64) {
        let started = Instant::now();
        let outcome = self.run(call, cx).await;
        let elapsed = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        (outcome, elapsed)
    }

    async fn run(&self, call: &ToolCall, cx: ToolContext) -> ToolOutcome {
        let Some(entry) = self.entries.get(&call.name) else {
            let mut names: Vec<&str> = self.entries.keys().map(ToolId::as_str).collect();
            names.sort_unstable();
            return ToolOutcome::Error(ToolError::new(
                ToolErrorKind::UnknownTool,
                format!("no tool named {} is registered; tools: {}", call.name, names.join(", ")),
            ));
        };
        let mut args = call.arguments.clone();
        if let Err(error) = entry.validator.check(&mut args) {
            return ToolOutcome::Error(error);
        }
        let future = AssertUnwindSafe(entry.handler.call_json(args, cx)).catch_unwind();
        match tokio::time::timeout(self.timeout, future).await {
            Ok(Ok(Ok(value))) => ToolOutcome::Ok(value),
            Ok(Ok(Err(error))) => ToolOutcome::Error(error),
            Ok(Err(panic)) => {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_string());
                tracing::error!(tool = %call.name, %message, "tool handler panicked");
                ToolOutcome::Error(ToolError::new(
                    ToolErrorKind::Panicked,
                    format!("the tool crashed ({message}); try different arguments or another approach"),
                ))
            }
            Err(_) => ToolOutcome::Error(ToolError::new(
                ToolErrorKind::Timeout,
                format!("the tool did not answer within {} s", self.timeout.as_secs_f32()),
            )),
        }
    }
}
