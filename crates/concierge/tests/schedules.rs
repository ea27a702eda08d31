//! Schedules: a run at its time, once; a reminder an agent schedules in its
//! own conversation; catch-up after downtime; other people's schedules out
//! of reach; and 10,000 schedules due at once, fired once each across a
//! kill -9 of the process that fires them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use concierge::memory::MemoryOwner;
use concierge::model::{Model, ModelContext, ModelError, ScriptedModel};
use concierge::schedule::{CatchUp, NewSchedule, When};
use concierge::{AgentSpec, Message, ModelReply, ModelRequest, RunOptions, Runtime, Timestamp};
use futures::future::BoxFuture;

/// Answers every message with what it was asked, at once.
struct Echo;

impl Model for Echo {
    fn name(&self) -> String {
        "echo".into()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        _: &'a ModelContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        let asked = request
            .messages
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::User { .. } => Some(m.text().to_string()),
                _ => None,
            })
            .unwrap_or_default();
        Box::pin(async move { Ok(ModelReply::text(format!("On it: {asked}"))) })
    }
}

fn ana() -> MemoryOwner {
    MemoryOwner::new("acme", "ana")
}

fn now() -> Timestamp {
    Timestamp::from(std::time::SystemTime::now())
}

fn in_ms(ms: u64) -> When {
    When::at(Timestamp(now().0 + ms))
}

/// Waits (a liveness guard, not a timing assertion) until `done` holds.
async fn eventually<F: std::future::Future<Output = bool>>(what: &str, mut done: impl FnMut() -> F) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done().await {
        assert!(Instant::now() < deadline, "{what} did not happen");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_runs_its_agent_with_its_message_at_its_time_once() {
    let rt = Runtime::builder()
        .agent(AgentSpec::new("assistant").instructions("Help."))
        .model(Echo)
        .in_memory()
        .build()
        .await
        .unwrap();
    let added = rt
        .schedule(NewSchedule::new(ana(), "Summarise my inbox", in_ms(500)).agent("assistant"))
        .await
        .unwrap();
    eventually("the scheduled run", || async {
        rt.schedules().get(&ana(), &added.id).await.unwrap().unwrap().runs == 1
    })
    .await;
    let session = added.session.clone();
    eventually("its reply", || async {
        rt.session(session.as_str())
            .await
            .ok()
            .is_some_and(|s| s.last_output().is_some())
    })
    .await;
    let state = rt.session(added.session.as_str()).await.unwrap();
    assert_eq!(state.tenant(), Some("acme"), "the run is the owner's tenant's");
    assert_eq!(
        state.last_output().unwrap().reply.as_deref(),
        Some("On it: Summarise my inbox")
    );
    let after = rt.schedules().get(&ana(), &added.id).await.unwrap().unwrap();
    assert_eq!(after.next_at, None, "a one-time schedule is done");
    assert_eq!(after.last_error, None);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(rt.session(added.session.as_str()).await.unwrap().runs_started(), 1);

    // An agent that does not exist is refused when the schedule is added.
    let error = rt
        .schedule(NewSchedule::new(ana(), "hi", in_ms(60_000)).agent("nobody"))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("nobody"), "{error}");
    // So is a session named like a child run's, which no run could make.
    let error = rt
        .schedule(NewSchedule::new(ana(), "hi", in_ms(60_000)).session("acme/s1:call_4"))
        .await
        .unwrap_err();
    assert!(matches!(error, concierge::Error::InvalidSessionId(_)), "{error:?}");
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_schedules_a_reminder_that_comes_back_to_its_conversation() {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call(
            "schedule_message",
            r#"{"message": "Remind the person to follow up with Sarah", "in_minutes": 0}"#,
        ))
        .reply(ModelReply::text("I'll remind you."))
        .reply(ModelReply::text("Reminder: follow up with Sarah."));
    let rt = Runtime::builder()
        .agent(AgentSpec::new("crm").instructions("Keep track.").toolset("schedules"))
        .model(model)
        .in_memory()
        .build()
        .await
        .unwrap();
    let options = RunOptions::new().session_id("s1").tenant("acme").user("ana");
    let out = rt
        .client("crm")
        .unwrap()
        .run("remind me to follow up with Sarah", options)
        .await
        .unwrap();
    assert_eq!(out.reply.as_deref(), Some("I'll remind you."));
    let schedules = rt.schedules().list(&ana()).await.unwrap();
    assert_eq!(schedules.len(), 1, "{schedules:?}");
    assert_eq!(schedules[0].session, "s1");
    assert_eq!(schedules[0].agent.as_deref(), Some("crm"));
    eventually("the reminder's run", || async {
        let state = rt.session("s1").await.unwrap();
        state.runs_started() == 2
            && state
                .last_output()
                .is_some_and(|o| o.reply.as_deref().is_some_and(|r| r.contains("Sarah")))
    })
    .await;
    let state = rt.session("s1").await.unwrap();
    assert_eq!(
        state.last_output().unwrap().reply.as_deref(),
        Some("Reminder: follow up with Sarah.")
    );
    // Another person of the tenant sees none of it, and cannot cancel it.
    let other = MemoryOwner::new("acme", "bob");
    assert!(rt.schedules().list(&other).await.unwrap().is_empty());
    assert!(!rt.schedules().delete(&other, &schedules[0].id).await.unwrap());
    rt.shutdown().await;
}

/// Moves every schedule's time back by `ms`, as if the process had been down.
fn as_if_down_for(db: &std::path::Path, ms: i64) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute("UPDATE schedules SET next_at = next_at - ?1", [ms])
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_downtime_a_missed_schedule_runs_once_or_waits_for_its_next_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("schedules.db");
    let store = concierge::schedule::ScheduleStore::open(&db).unwrap();
    let every_minute = When::cron("* * * * *").unwrap();
    let once = store
        .add(NewSchedule::new(ana(), "catch up", every_minute.clone()))
        .await
        .unwrap();
    let skip = store
        .add(NewSchedule::new(ana(), "skip it", every_minute).catch_up(CatchUp::Skip))
        .await
        .unwrap();
    // Down for an hour: sixty times missed.
    as_if_down_for(&db, 3_600_000);
    let rt = Runtime::builder()
        .agent(AgentSpec::new("assistant").instructions("Help."))
        .model(Echo)
        .sqlite(&db)
        .build()
        .await
        .unwrap();
    eventually("the catch-up run", || async {
        rt.schedules().get(&ana(), &once.id).await.unwrap().unwrap().runs == 1
    })
    .await;
    eventually("the skip", || async {
        rt.schedules()
            .get(&ana(), &skip.id)
            .await
            .unwrap()
            .unwrap()
            .last_error
            .is_some()
    })
    .await;
    let once = rt.schedules().get(&ana(), &once.id).await.unwrap().unwrap();
    let skip = rt.schedules().get(&ana(), &skip.id).await.unwrap().unwrap();
    assert_eq!(once.runs, 1, "sixty missed times make one run");
    assert!(once.next_at.unwrap() > now(), "then it keeps to its schedule");
    assert_eq!(skip.runs, 0, "{skip:?}");
    assert!(skip.last_error.as_deref().unwrap().contains("skip"), "{skip:?}");
    assert!(skip.next_at.unwrap() > now());
    rt.shutdown().await;
}

const SCHEDULES: usize = 10_000;

/// A runtime with one echoing agent on the database at `db`, firing its schedules if `fire`.
async fn on_sqlite(db: &std::path::Path, fire: bool) -> Runtime {
    Runtime::builder()
        .agent(AgentSpec::new("assistant").instructions("Help."))
        .model(Echo)
        .sqlite(db)
        .fire_schedules(fire)
        .build()
        .await
        .unwrap()
}

/// The child process: fires the database's schedules until killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "child process entry for the schedule kill test"]
async fn schedule_child() {
    let db = std::env::var("SCHEDULE_DB").expect("SCHEDULE_DB");
    let rt = on_sqlite(std::path::Path::new(&db), true).await;
    println!("READY");
    futures::future::pending::<()>().await;
    drop(rt);
}

fn fired(db: &std::path::Path) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    conn.query_row("SELECT COALESCE(SUM(runs), 0) FROM schedules", [], |r| r.get(0))
        .unwrap()
}

/// A child process, killed (SIGKILL) when dropped: by the test, or by a
/// failing test's unwinding, so none is left behind.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn child(db: &std::path::Path) -> Child {
    Child(
        Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "schedule_child", "--nocapture"])
            .env("SCHEDULE_DB", db)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_schedules_due_together_fire_once_each_across_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("schedules.db");
    {
        // The database the engine makes, then the schedules, all due in 3 s.
        let rt = on_sqlite(&db, false).await;
        let due = Timestamp(now().0 + 3_000);
        for n in 0..SCHEDULES {
            let owner = MemoryOwner::new("acme", format!("user{}", n % 100));
            rt.schedule(NewSchedule::new(owner, format!("ping {n}"), When::at(due)).session(format!("s{n}")))
                .await
                .unwrap();
        }
        rt.shutdown().await;
    }
    let started = Instant::now();
    let first = child(&db);
    // Kill it in the middle of the firing.
    let deadline = Instant::now() + Duration::from_secs(120);
    while fired(&db) < (SCHEDULES / 5) as i64 {
        assert!(Instant::now() < deadline, "the first process fired nothing");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(first); // kill -9
    let at_kill = fired(&db);
    let second = child(&db);
    while fired(&db) < SCHEDULES as i64 {
        assert!(Instant::now() < deadline, "the second process did not fire the rest");
        std::thread::sleep(Duration::from_millis(50));
    }
    let took = started.elapsed();
    drop(second);
    eprintln!("{SCHEDULES} schedules fired in {took:?} (the first process fired {at_kill} before kill -9)");

    // Every schedule ran once, and every session has exactly one run.
    let rt = on_sqlite(&db, false).await;
    let conn = rusqlite::Connection::open(&db).unwrap();
    let not_once: i64 = conn
        .query_row("SELECT COUNT(*) FROM schedules WHERE runs != 1", [], |r| r.get(0))
        .unwrap();
    assert_eq!(not_once, 0);
    for n in 0..SCHEDULES {
        let session = rt.session(format!("s{n}").as_str()).await.unwrap();
        assert_eq!(
            session.runs_started(),
            1,
            "session s{n} ran {} times",
            session.runs_started()
        );
    }
    rt.shutdown().await;
}
