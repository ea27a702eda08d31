//! A 1,000-turn session with and without a history policy: the size of the
//! model request (its serialized bytes) at turns 10, 100 and 1,000.
//!
//! `cargo run -p concierge-demo --example history [-- TURNS]`
//!
//! A scripted model stands in for a provider: each turn it calls `add`
//! once, then answers; asked for a running summary, it writes a short one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use concierge::model::ScriptedModel;
use concierge::{AgentSpec, HistoryPolicy, Message, ModelReply, RunOptions, Runtime, SummaryMode, tool};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// Adds two integers.
#[tool(read_only)]
async fn add(args: AddArgs) -> Result<i64, String> {
    Ok(args.a + args.b)
}

/// The largest request of each turn, in bytes, and how many summaries were asked for.
#[derive(Default)]
struct Sizes {
    per_turn: Vec<usize>,
    summaries: usize,
}

fn model(turn: Arc<AtomicUsize>, sizes: Arc<Mutex<Sizes>>) -> ScriptedModel {
    ScriptedModel::from_fn(move |request| {
        let bytes = serde_json::to_vec(request).map_or(0, |v| v.len());
        let n = turn.load(Ordering::SeqCst);
        let mut sizes = sizes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if sizes.per_turn.len() <= n {
            sizes.per_turn.resize(n + 1, 0);
        }
        sizes.per_turn[n] = sizes.per_turn[n].max(bytes);
        if request.tools.is_empty() && request.system.contains("running summary") {
            sizes.summaries += 1;
            return Ok(ModelReply::text(format!(
                "The person asked for sums of consecutive numbers up to {n}; each was computed with add."
            )));
        }
        let called = matches!(request.messages.last(), Some(Message::Tool { .. }));
        Ok(if called {
            ModelReply::text(format!("{n} plus 1 is {}. Anything else?", n + 1))
        } else {
            ModelReply::tool_call("add", format!(r#"{{"a": {n}, "b": 1}}"#))
        })
    })
}

async fn measure(name: &str, policy: HistoryPolicy, turns: usize) -> concierge::Result<()> {
    let turn = Arc::new(AtomicUsize::new(0));
    let sizes = Arc::new(Mutex::new(Sizes::default()));
    let rt = Runtime::builder()
        .tool(Add)
        .agent(
            AgentSpec::new("adder")
                .instructions("You add numbers with the add tool and say the result in a sentence.")
                .tool("add")
                .history(policy),
        )
        .model(model(turn.clone(), sizes.clone()))
        .in_memory()
        .build()
        .await?;
    let client = rt.client("adder")?;
    for n in 1..=turns {
        turn.store(n, Ordering::SeqCst);
        let message = format!("Please, what is {n} plus 1? I am keeping a list of these sums for my records.");
        client.run(message, RunOptions::new().session_id("long")).await?;
    }
    let history = rt.history("long").await?.len();
    rt.shutdown().await;
    let sizes = sizes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let at = |n: usize| sizes.per_turn.get(n).copied().unwrap_or(0);
    println!(
        "{name:<44} turn 10: {:>9} B   turn 100: {:>9} B   turn {turns}: {:>9} B   ({} messages kept, {} summaries asked)",
        at(10),
        at(100.min(turns)),
        at(turns),
        history,
        sizes.summaries
    );
    Ok(())
}

#[tokio::main]
async fn main() -> concierge::Result<()> {
    let turns = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1_000);
    println!("largest model request of the turn, serialized:");
    measure("policy off", HistoryPolicy::everything(), turns).await?;
    measure(
        "last_turns = 20, summary = \"log\"",
        HistoryPolicy::last_turns(20),
        turns,
    )
    .await?;
    measure(
        "last_turns = 20, summary = \"model\"",
        HistoryPolicy::last_turns(20).summary(SummaryMode::Model),
        turns,
    )
    .await?;
    measure(
        "max_request_bytes = 8000, summary = \"log\"",
        HistoryPolicy::everything().max_request_bytes(8_000),
        turns,
    )
    .await?;
    Ok(())
}
