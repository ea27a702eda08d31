//! Guardrails on any engine: a tool's result and a reply redacted before
//! anyone sees them (on Temporal, in the activities), a message and a tool
//! call stopped with the run `blocked` and the `guardrail_tripped` event.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use concierge::model::ScriptedModel;
use concierge::{
    AgentSpec, EventKind, GuardStage, Guardrail, ModelReply, RunOptions, RunStatus, Runtime, Tool, ToolContext,
    ToolError, ToolSpec,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{EngineUnderTest, OnEngine};

#[derive(Deserialize, JsonSchema)]
struct Who {
    /// Who to find.
    name: String,
}

/// Finds a customer, email included; counts its runs.
struct Find(Arc<AtomicUsize>);

impl Tool for Find {
    type Args = Who;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new("find", "Finds a customer.", concierge::tool::schema_for::<Who>())
    }

    async fn call(&self, args: Who, _cx: ToolContext) -> Result<Value, ToolError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(json!({"name": args.name, "email": "ana.lopez@example.com"}))
    }
}

pub async fn guardrails_redact_and_stop_at_every_stage(engine: &EngineUnderTest) {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("find", json!({"name": "Ana"}).to_string()))
        .reply(ModelReply::text("Write to ana.lopez@example.com."))
        .reply(ModelReply::tool_call("find", json!({"name": "everyone"}).to_string()));
    let agent = AgentSpec::new("desk")
        .instructions("Help.")
        .tool("find")
        .guardrail(GuardStage::Input, Guardrail::deny(["(?i)password"]))
        .guardrail(GuardStage::Output, Guardrail::redact_pii())
        .guardrail(GuardStage::ToolInput, Guardrail::deny(["everyone"]))
        .guardrail(GuardStage::ToolOutput, Guardrail::redact_pii());
    let rt = Runtime::builder()
        .tool(Find(runs.clone()))
        .agent(agent)
        .model(model.clone())
        .on_engine(engine)
        .build()
        .await
        .unwrap();
    let s = || RunOptions::new().session_id("g");

    let out = rt.send("How do I reach Ana?", s()).await.unwrap();
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(out.reply.as_deref(), Some("Write to [email redacted]."));
    let seen = &model.requests()[1].messages;
    assert!(
        seen.iter().all(|m| !m.text().contains("ana.lopez@")),
        "the model saw the email: {seen:?}"
    );

    let out = rt.send("What is the admin password?", s()).await.unwrap();
    assert_eq!(out.status, RunStatus::Blocked);
    assert_eq!(model.requests().len(), 2, "a stopped message reached the model");

    let out = rt.send("Find everyone", s()).await.unwrap();
    assert_eq!(out.status, RunStatus::Blocked);
    assert_eq!(runs.load(Ordering::SeqCst), 1, "a stopped call ran");
    assert_eq!(
        out.reply.as_deref(),
        Some("I stopped before running find: it asks for something this assistant does not do.")
    );

    let stages: Vec<GuardStage> = rt
        .events("g")
        .await
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::GuardrailTripped { stage, .. } => Some(stage),
            _ => None,
        })
        .collect();
    assert_eq!(stages, [GuardStage::Input, GuardStage::ToolInput]);
    rt.shutdown().await;
}
