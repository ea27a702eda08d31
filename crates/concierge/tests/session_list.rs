//! The session list says what is true: a run in progress or not, and when
//! the session last changed — not whether it is still held in memory, nor
//! when someone last read it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use concierge::{AgentSpec, Route, Rules, RunOptions, Runtime, SessionSummary, Tool, ToolContext, ToolError, ToolSpec};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

/// Waits until the test lets it finish.
struct Hold(Arc<Semaphore>);

impl Tool for Hold {
    type Args = Nothing;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new("hold", "Waits.", concierge::tool::schema_for::<Nothing>()).annotations(
            concierge::ToolAnnotations {
                read_only: true,
                ..Default::default()
            },
        )
    }

    async fn call(&self, _args: Nothing, _cx: ToolContext) -> Result<Value, ToolError> {
        let permit = self.0.acquire().await.map_err(|_| ToolError::failed("closed"))?;
        permit.forget();
        Ok(json!("held"))
    }
}

fn desk() -> AgentSpec {
    AgentSpec::new("desk").tool("hold").rules(
        Rules::new()
            .route(Route::tool("hold", json!({})).keywords(["hold"]))
            .answer("{result}")
            .fallback("Desk here."),
    )
}

async fn listed(rt: &Runtime, id: &str) -> SessionSummary {
    rt.sessions()
        .await
        .unwrap()
        .into_iter()
        .find(|s| s.id.as_str() == id)
        .expect("the session is listed")
}

async fn check(rt: Runtime, hold: Arc<Semaphore>) {
    let client = rt.client("desk").unwrap();
    let before = concierge::engine::now();
    client.run("hello", RunOptions::new().session_id("s1")).await.unwrap();
    let after = concierge::engine::now();
    let summary = listed(&rt, "s1").await;
    assert!(!summary.live, "the run finished: {summary:?}");
    assert!(
        summary.updated_at >= before && summary.updated_at <= after,
        "{summary:?}"
    );

    // Reading the session later changes neither.
    tokio::time::sleep(Duration::from_millis(30)).await;
    rt.session("s1").await.unwrap();
    assert_eq!(listed(&rt, "s1").await, summary);

    // A run in progress is live until it stops.
    let handle = client
        .start("hold on", RunOptions::new().session_id("s1"))
        .await
        .unwrap();
    let mut live = false;
    for _ in 0..500 {
        if listed(&rt, "s1").await.live {
            live = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(live, "a run in progress shows as live");
    hold.add_permits(1);
    let out = handle.wait().await.unwrap();
    assert_eq!(out.reply.as_deref(), Some("held"));
    let done = listed(&rt, "s1").await;
    assert!(!done.live, "{done:?}");
    assert!(done.updated_at > summary.updated_at, "{done:?}");
    rt.shutdown().await;
}

#[tokio::test]
async fn the_list_tells_a_finished_run_from_one_in_progress_in_memory() {
    let hold = Arc::new(Semaphore::new(0));
    let rt = Runtime::builder()
        .tool(Hold(hold.clone()))
        .agent(desk())
        .in_memory()
        .build()
        .await
        .unwrap();
    check(rt, hold).await;
}

#[tokio::test]
async fn the_list_tells_a_finished_run_from_one_in_progress_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let hold = Arc::new(Semaphore::new(0));
    let rt = Runtime::builder()
        .tool(Hold(hold.clone()))
        .agent(desk())
        .sqlite(dir.path().join("list.db"))
        .build()
        .await
        .unwrap();
    check(rt, hold).await;
    // After the process let it go, the store says when it changed, not when it left.
    let rt = Runtime::builder()
        .tool(Hold(Arc::new(Semaphore::new(0))))
        .agent(desk())
        .sqlite(dir.path().join("list.db"))
        .build()
        .await
        .unwrap();
    let summary = listed(&rt, "s1").await;
    assert!(!summary.live, "{summary:?}");
    rt.shutdown().await;
}
