//! The session list says what is true: a run in progress or not, and when
//! the session last changed — not whether it is still held in memory, nor
//! when someone last read it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use concierge::{
    AgentSpec, Route, Rules, RunOptions, Runtime, SessionQuery, SessionSummary, Tool, ToolContext, ToolError, ToolSpec,
};
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

/// Opens sessions for two tenants and none, then reads one tenant's a page at a time.
async fn check_pages(rt: &Runtime) {
    let client = rt.client("desk").unwrap();
    for (tenant, count) in [("acme", 5), ("globex", 3)] {
        for n in 0..count {
            let options = RunOptions::new().session_id(format!("{tenant}/s{n}")).tenant(tenant);
            client.run("hello", options).await.unwrap();
        }
    }
    client.run("hello", RunOptions::new().session_id("solo")).await.unwrap();

    let everyone = rt.sessions().await.unwrap();
    let mut expected: Vec<SessionSummary> = everyone
        .into_iter()
        .filter(|s| s.tenant.as_deref() == Some("acme"))
        .collect();
    expected.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then_with(|| a.id.cmp(&b.id)));
    let acme = SessionQuery::new().tenant(Some("acme")).limit(2);
    let first = rt.session_page(acme.clone()).await.unwrap();
    assert_eq!(first.sessions, expected[..2], "the newest first");
    assert!(first.more);
    let second = rt
        .session_page(acme.clone().after(first.sessions[1].id.clone()))
        .await
        .unwrap();
    assert_eq!(second.sessions, expected[2..4]);
    let all = rt.every_session(acme.clone()).await.unwrap();
    assert_eq!(all, expected, "every page, each session once");

    // Another tenant's session is no place in this tenant's list.
    let foreign = rt.session_page(acme.clone().after("globex/s0")).await;
    assert!(
        matches!(foreign, Err(concierge::Error::SessionNotFound(_))),
        "{foreign:?}"
    );
    let untenanted = rt.every_session(SessionQuery::new().tenant(None)).await.unwrap();
    let ids: Vec<&str> = untenanted.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["solo"]);
    assert_eq!(rt.every_session(SessionQuery::new()).await.unwrap().len(), 9);
}

#[tokio::test]
async fn a_tenants_sessions_come_a_page_at_a_time_in_memory() {
    let rt = Runtime::builder()
        .tool(Hold(Arc::new(Semaphore::new(0))))
        .agent(desk())
        .in_memory()
        .build()
        .await
        .unwrap();
    check_pages(&rt).await;
    rt.shutdown().await;
}

/// The desk on the SQLite file at `path`.
async fn on_sqlite(path: &std::path::Path) -> Runtime {
    Runtime::builder()
        .tool(Hold(Arc::new(Semaphore::new(0))))
        .agent(desk())
        .sqlite(path)
        .build()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_tenants_sessions_come_a_page_at_a_time_on_sqlite_through_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pages.db");
    let rt = on_sqlite(&path).await;
    check_pages(&rt).await;
    rt.shutdown().await;
    // Again from the store alone, once the process let the sessions go.
    let rt = on_sqlite(&path).await;
    let page = rt
        .session_page(SessionQuery::new().tenant(Some("globex")).limit(10))
        .await
        .unwrap();
    assert_eq!(page.sessions.len(), 3);
    assert!(!page.more);
    rt.shutdown().await;
    // A tenant's list reads that tenant's rows through the index, not every session.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let plan: Vec<String> = conn
        .prepare(
            "EXPLAIN QUERY PLAN SELECT s.id FROM sessions s JOIN heads h ON h.no = s.no
             WHERE h.head != 0 AND s.tenant IS ?1 AND s.at > 0",
        )
        .unwrap()
        .query_map(["acme"], |r| r.get::<_, String>(3))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(
        plan.iter().any(|step| step.contains("sessions_by_tenant_at")),
        "{plan:?}"
    );
}

/// Every page of `query`, one after another.
async fn paged(rt: &Runtime, mut query: SessionQuery) -> Vec<String> {
    let mut ids = Vec::new();
    loop {
        let page = rt.session_page(query.clone()).await.unwrap();
        ids.extend(page.sessions.iter().map(|s| s.id.to_string()));
        match (page.more, page.sessions.last()) {
            (true, Some(last)) => query = query.after(last.id.clone()),
            _ => return ids,
        }
    }
}

#[tokio::test]
async fn a_conversation_that_changed_in_this_process_moves_up_its_tenants_pages() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("moves.db");
    let say = |rt: Runtime, id: &'static str| async move {
        let options = RunOptions::new().session_id(format!("acme/{id}")).tenant("acme");
        rt.client("desk").unwrap().run("hello", options).await.unwrap();
        // Each change in its own millisecond.
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let rt = on_sqlite(&path).await;
    for id in ["s0", "s1", "s2", "s3"] {
        say(rt.clone(), id).await;
    }
    rt.shutdown().await;
    // Another process: the store has when each changed until it let them go.
    let rt = on_sqlite(&path).await;
    let acme = SessionQuery::new().tenant(Some("acme")).limit(1);
    assert_eq!(
        paged(&rt, acme.clone()).await,
        ["acme/s3", "acme/s2", "acme/s1", "acme/s0"]
    );
    // `s0` changes twice here (the store hears of the first), `s1` once
    // between: `s0` is the newest, though the store still has it older.
    for id in ["s0", "s1", "s0"] {
        say(rt.clone(), id).await;
    }
    let expected = ["acme/s0", "acme/s1", "acme/s3", "acme/s2"];
    assert_eq!(paged(&rt, acme.clone()).await, expected);
    assert_eq!(paged(&rt, acme.clone().limit(3)).await, expected);
    let every: Vec<String> = rt
        .every_session(acme)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id.to_string())
        .collect();
    assert_eq!(every, expected, "pages agree with the whole list");
    rt.shutdown().await;
}
