//! A side-effecting tool that needs the person's approval, and the events of
//! the run as they happen.
//!
//! `cargo run -p concierge-demo --example confirmation`

use concierge::model::ScriptedModel;
use concierge::{AgentSpec, ModelReply, RunOptions, RunStatus, Runtime, ToolContext, tool};
use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Transfer {
    /// Amount in euros.
    amount: u32,
    /// Recipient account.
    to: String,
}

/// Moves money to another account.
#[tool(requires_confirmation, destructive)]
async fn move_money(args: Transfer, cx: ToolContext) -> Result<String, String> {
    // A real tool would pass cx.idempotency_key to the bank so a retried call is not paid twice.
    Ok(format!(
        "sent {} EUR to {} (key {})",
        args.amount, args.to, cx.idempotency_key
    ))
}

#[tokio::main]
async fn main() -> concierge::Result<()> {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call(
            "move_money",
            r#"{"amount": 120, "to": "FR76-0001"}"#,
        ))
        .reply(ModelReply::text("Done: 120 EUR are on their way."));
    let rt = Runtime::builder()
        .tool(MoveMoney)
        .agent(
            AgentSpec::new("finance")
                .instructions("Move money when asked.")
                .tool("move_money"),
        )
        .model(model)
        .in_memory()
        .build()
        .await?;
    let mut events = rt.subscribe("s1", 1);
    tokio::spawn(async move {
        while let Some(Ok(event)) = events.next().await {
            println!("  event {:>2} {}", event.seq, event.kind.name());
        }
    });
    let out = rt
        .client("finance")?
        .run("send 120 euros to FR76-0001", RunOptions::new().session_id("s1"))
        .await?;
    assert_eq!(out.status, RunStatus::AwaitingConfirmation);
    let Some(pending) = out.pending_confirmation.clone() else {
        return Err(concierge::Error::RunStartFailed("the run did not park".into()));
    };
    println!("approve {} {}? yes", pending.tool, pending.arguments);
    let out = rt.answer(&pending, "s1", true).await?;
    println!("{}", out.reply.unwrap_or_default());
    Ok(())
}
