//! The tools a runtime can execute, with their compiled validators.

use std::collections::{BTreeMap, HashMap};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, RwLock};
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

#[derive(Default)]
struct Tables {
    entries: HashMap<ToolId, Arc<Entry>>,
    toolsets: BTreeMap<String, Vec<ToolId>>,
}

/// Executable tools by name, grouped in toolsets. A toolset's tools can be
/// replaced at run time (an MCP server's, when they are discovered again).
pub struct ToolRegistry {
    tables: RwLock<Tables>,
    timeout: Duration,
    max_result_bytes: usize,
    /// Questions configured for tools by name: such a tool always asks first.
    questions: HashMap<ToolId, String>,
    writes: HashMap<ToolId, Vec<String>>,
}

/// The largest result a tool may return, by default (as JSON).
pub const DEFAULT_MAX_RESULT_BYTES: usize = 1024 * 1024;

impl Default for ToolRegistry {
    fn default() -> Self {
        Self {
            tables: RwLock::default(),
            timeout: Duration::from_secs(60),
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            questions: HashMap::new(),
            writes: HashMap::new(),
        }
    }
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let toolsets = self.tables.read().map(|t| t.toolsets.clone()).unwrap_or_default();
        f.debug_struct("ToolRegistry").field("toolsets", &toolsets).finish()
    }
}

fn entry(
    handler: Arc<dyn DynTool>,
    questions: &HashMap<ToolId, String>,
    writes: &HashMap<ToolId, Vec<String>>,
) -> Result<(ToolId, Arc<Entry>)> {
    let mut spec = handler.spec();
    if let Some(question) = questions.get(&spec.name) {
        spec.confirm = Some(question.clone());
        spec.annotations.requires_confirmation = true;
    }
    for resource in writes.get(&spec.name).into_iter().flatten() {
        if !spec.writes.contains(resource) {
            spec.writes.push(resource.clone());
        }
    }
    let validator = ArgumentValidator::new(&spec.input_schema)
        .map_err(|e| Error::InvalidConfig(format!("tool {} has an unusable input schema: {e}", spec.name)))?;
    Ok((
        spec.name.clone(),
        Arc::new(Entry {
            spec,
            handler,
            validator,
        }),
    ))
}

fn poisoned() -> Error {
    Error::InvalidConfig("the tool registry is poisoned".into())
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

    /// Sets the largest result a tool may return (as JSON); a larger one is
    /// a tool error naming the tool and the limit, and is never journaled.
    pub fn set_max_result_bytes(&mut self, bytes: usize) {
        self.max_result_bytes = bytes;
    }

    /// The per-call timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Makes every call of `tool` (added from now on, native or discovered
    /// over MCP) ask the person first, with `question`: a confirmation
    /// template with `{argument}` placeholders.
    pub fn set_confirmation(&mut self, tool: impl Into<ToolId>, question: impl Into<String>) {
        self.questions.insert(tool.into(), question.into());
    }

    /// Declares that calls of `tool` (added from now on, native or
    /// discovered over MCP) write `resource`: calls of one batch that write
    /// the same thing run one after another.
    pub fn set_writes(&mut self, tool: impl Into<ToolId>, resource: impl Into<String>) {
        self.writes.entry(tool.into()).or_default().push(resource.into());
    }

    /// Adds a tool to a toolset; its schema is compiled now.
    pub fn add(&mut self, toolset: &str, handler: Arc<dyn DynTool>) -> Result<()> {
        let (name, entry) = entry(handler, &self.questions, &self.writes)?;
        let tables = self.tables.get_mut().map_err(|_| poisoned())?;
        if tables.entries.contains_key(&name) {
            return Err(Error::InvalidConfig(format!("two tools are named {name}; rename one")));
        }
        tables
            .toolsets
            .entry(toolset.to_string())
            .or_default()
            .push(name.clone());
        tables.entries.insert(name, entry);
        Ok(())
    }

    /// Declares a toolset with no tools yet (filled by [`ToolRegistry::set_toolset`]).
    pub fn declare(&mut self, toolset: &str) {
        if let Ok(tables) = self.tables.get_mut() {
            tables.toolsets.entry(toolset.to_string()).or_default();
        }
    }

    /// Replaces a toolset's tools; a name another toolset uses is an error
    /// (and nothing changes). Returns the new tools' specs.
    pub fn set_toolset(&self, toolset: &str, handlers: Vec<Arc<dyn DynTool>>) -> Result<Vec<ToolSpec>> {
        let mut fresh = Vec::with_capacity(handlers.len());
        for handler in handlers {
            fresh.push(entry(handler, &self.questions, &self.writes)?);
        }
        let mut tables = self.tables.write().map_err(|_| poisoned())?;
        let old = tables.toolsets.get(toolset).cloned().unwrap_or_default();
        for (name, _) in &fresh {
            if tables.entries.contains_key(name) && !old.contains(name) {
                return Err(Error::InvalidConfig(format!(
                    "toolset {toolset} has a tool named {name}, like another toolset; give the MCP server a prefix"
                )));
            }
        }
        for name in &old {
            tables.entries.remove(name);
        }
        let names: Vec<ToolId> = fresh.iter().map(|(n, _)| n.clone()).collect();
        let specs = fresh.iter().map(|(_, e)| e.spec.clone()).collect();
        tables.entries.extend(fresh);
        tables.toolsets.insert(toolset.to_string(), names);
        Ok(specs)
    }

    /// Toolsets with their tools' specs, for the catalog.
    pub fn toolsets(&self) -> Vec<(String, Vec<ToolSpec>)> {
        let Ok(tables) = self.tables.read() else {
            return Vec::new();
        };
        tables
            .toolsets
            .iter()
            .map(|(name, ids)| {
                let specs = ids
                    .iter()
                    .filter_map(|id| tables.entries.get(id))
                    .map(|e| e.spec.clone())
                    .collect();
                (name.clone(), specs)
            })
            .collect()
    }

    /// Whether a tool is registered.
    pub fn contains(&self, tool: &ToolId) -> bool {
        self.tables.read().is_ok_and(|t| t.entries.contains_key(tool))
    }

    /// Checks a call's arguments (with the same coercion a run applies)
    /// without running it: an unknown tool or arguments that do not fit the
    /// schema are the error the call would fail with.
    pub fn check_arguments(&self, call: &ToolCall) -> Result<(), ToolError> {
        let found = self.tables.read().ok().and_then(|t| t.entries.get(&call.name).cloned());
        let Some(entry) = found else {
            return Err(ToolError::new(
                ToolErrorKind::UnknownTool,
                format!("no tool named {} is registered", call.name),
            ));
        };
        let mut args = call.arguments.clone();
        entry.validator.check(&mut args)
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
        let found = self.tables.read().ok().and_then(|t| t.entries.get(&call.name).cloned());
        let Some(entry) = found else {
            let mut names: Vec<String> = self
                .tables
                .read()
                .map(|t| t.entries.keys().map(ToString::to_string).collect())
                .unwrap_or_default();
            names.sort_unstable();
            return ToolOutcome::Error(ToolError::new(
                ToolErrorKind::UnknownTool,
                format!("no tool named {} is registered; tools: {}", call.name, names.join(", ")),
            ));
        };
        let mut args = call.arguments.clone();
        if let Err(error) = entry.validator.check_at(&mut args, cx.asked_at) {
            return ToolOutcome::Error(error);
        }
        let future = AssertUnwindSafe(entry.handler.call_json(args, cx)).catch_unwind();
        let finished = if entry.handler.bounds_its_own_time() {
            Ok(future.await)
        } else {
            tokio::time::timeout(self.timeout, future).await
        };
        match finished {
            Ok(Ok(Ok(value))) => {
                let size = serde_json::to_vec(&value).map_or(usize::MAX, |v| v.len());
                if size > self.max_result_bytes {
                    return ToolOutcome::Error(ToolError::new(
                        ToolErrorKind::Failed,
                        format!(
                            "the result of {} is {size} bytes, over the limit of {} bytes; \
                             ask for less (a page, a summary, a filter)",
                            call.name, self.max_result_bytes
                        ),
                    ));
                }
                ToolOutcome::Ok(value)
            }
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
