//! The calculator through the runtime API, offline: first on its
//! rules (no model at all), then with the LLM planner driven by a scripted
//! model (a test double standing in for a provider).
//!
//! `cargo run -p concierge-demo --example calculator`

use concierge::model::ScriptedModel;
use concierge::{ModelReply, RunOptions, Runtime};

#[tokio::main]
async fn main() -> concierge::Result<()> {
    let rt = concierge_demo::install(Runtime::builder()).in_memory().build().await?;
    let calculator = rt.client("calculator")?;
    for question in ["calculate 5 + 3", "what is 17 plus 25?", "sqrt 2", "10 / 0"] {
        let out = calculator.run(question, RunOptions::new().session_id("rules")).await?;
        println!("{question:>22} -> {}", out.reply.unwrap_or_default());
    }

    // The same agent with the LLM planner. The "model" sends a sloppy call
    // ("a" as a string, "Multiply" capitalized): validation coerces it.
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call(
            "calculator",
            r#"{"operation": "Multiply", "a": "6", "b": 7}"#,
        ))
        .reply(ModelReply::text("6 times 7 is 42."));
    let rt = concierge_demo::install(Runtime::builder())
        .model(model)
        .in_memory()
        .build()
        .await?;
    let out = rt
        .client("calculator")?
        .run("what is 6 times 7?", RunOptions::new().session_id("llm"))
        .await?;
    println!(
        "LLM planner: {} (iterations {}, tool calls {}, confidence {})",
        out.reply.unwrap_or_default(),
        out.iterations,
        out.tool_executions.len(),
        out.confidence
    );
    Ok(())
}
