//! The built-in `memory` toolset: `remember`, `recall`, `forget`.
//!
//! The tools act on the memories of the person the run is for (the run's
//! user in the session's tenant). They change nothing outside
//! concierge, so they are `read_only` and never wait for approval.

use concierge_core::{ToolAnnotations, ToolError, ToolSpec};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Tool, ToolContext, Toolset, schema_for};
use crate::memory::{Memory, MemoryError, MemoryOrigin, MemoryOwner, MemoryStore};

/// The toolset's name, as an agent's `toolsets` names it.
pub const MEMORY_TOOLSET: &str = "memory";

/// How many memories `recall` returns unless asked for another number.
const DEFAULT_RECALL: usize = 5;
/// The most `recall` returns.
const MAX_RECALL: usize = 20;

/// The `memory` toolset over `store`.
pub fn memory_toolset(store: MemoryStore) -> Toolset {
    Toolset::new(MEMORY_TOOLSET)
        .tool(Remember(store.clone()))
        .tool(Recall(store.clone()))
        .tool(Forget(store))
}

/// The person the call's run is for: its user in the session's tenant (the
/// deployment's one person when the run names no user).
pub(super) fn owner(cx: &ToolContext) -> MemoryOwner {
    let user = cx
        .user()
        .or_else(|| cx.value("user_id").and_then(Value::as_str))
        .unwrap_or_default();
    MemoryOwner::of(cx.tenant.as_deref(), user)
}

fn failed(error: MemoryError) -> ToolError {
    match error {
        MemoryError::Empty | MemoryError::TooLong { .. } => ToolError::invalid_arguments(error.to_string(), Vec::new()),
        MemoryError::Storage(_) => ToolError::failed(error.to_string()),
    }
}

fn shown(memory: &Memory) -> Value {
    json!({"id": memory.id, "fact": memory.text})
}

/// A built-in toolset's tools: they change nothing outside concierge, so
/// they are `read_only` (never wait for approval) and idempotent.
pub(super) fn annotations(destructive: bool) -> ToolAnnotations {
    ToolAnnotations {
        read_only: true,
        destructive,
        idempotent: true,
        ..ToolAnnotations::default()
    }
}

/// `remember`'s arguments.
#[derive(Deserialize, JsonSchema)]
struct RememberArgs {
    /// The fact, as a short sentence about the person ("Prefers aisle seats").
    fact: String,
}

struct Remember(MemoryStore);

impl Tool for Remember {
    type Args = RememberArgs;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "remember",
            "Remembers a lasting fact about the person for later conversations: a preference, a person or place \
             they mention, a date that matters to them. Not for what only matters in this conversation.",
            schema_for::<RememberArgs>(),
        )
        .category("memory")
        .annotations(annotations(false))
    }

    async fn call(&self, args: RememberArgs, cx: ToolContext) -> Result<Value, ToolError> {
        let owner = owner(&cx);
        let origin = MemoryOrigin {
            session: Some(cx.session_id.to_string()),
            agent: Some(cx.agent.to_string()),
            key: Some(cx.idempotency_key.to_string()),
        };
        let memory = self.0.remember(&owner, &args.fact, origin).await.map_err(failed)?;
        Ok(json!({"remembered": shown(&memory)}))
    }
}

/// `recall`'s arguments.
#[derive(Deserialize, JsonSchema)]
struct RecallArgs {
    /// What to look for, in words ("seat preference", "manager").
    about: String,
    /// How many memories at most (default 5, at most 20).
    #[serde(default)]
    limit: Option<u32>,
}

struct Recall(MemoryStore);

impl Tool for Recall {
    type Args = RecallArgs;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "recall",
            "Looks up what you remember about the person, most relevant first.",
            schema_for::<RecallArgs>(),
        )
        .category("memory")
        .annotations(ToolAnnotations {
            read_only: true,
            idempotent: true,
            ..ToolAnnotations::default()
        })
    }

    async fn call(&self, args: RecallArgs, cx: ToolContext) -> Result<Value, ToolError> {
        let owner = owner(&cx);
        let limit = args
            .limit
            .map_or(DEFAULT_RECALL, |l| usize::try_from(l).unwrap_or(MAX_RECALL))
            .clamp(1, MAX_RECALL);
        let found = self.0.recall(&owner, &args.about, limit).await.map_err(failed)?;
        Ok(json!({"memories": found.iter().map(shown).collect::<Vec<_>>()}))
    }
}

/// `forget`'s arguments.
#[derive(Deserialize, JsonSchema)]
struct ForgetArgs {
    /// The memory's id, as `recall` or `remember` gave it.
    id: String,
}

struct Forget(MemoryStore);

impl Tool for Forget {
    type Args = ForgetArgs;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "forget",
            "Forgets one thing you remember about the person, by its id (find it with recall first). Use it \
             when the person asks you to forget something or says it is no longer true.",
            schema_for::<ForgetArgs>(),
        )
        .category("memory")
        .annotations(annotations(true))
    }

    async fn call(&self, args: ForgetArgs, cx: ToolContext) -> Result<Value, ToolError> {
        let owner = owner(&cx);
        // Forgetting twice (a retried call) finds nothing the second time:
        // the memory is gone either way.
        let forgotten = self.0.forget(&owner, &args.id).await.map_err(failed)?;
        if forgotten {
            Ok(json!({"forgotten": args.id}))
        } else {
            Ok(json!({"forgotten": null, "note": format!("nothing is remembered under {}", args.id)}))
        }
    }
}
