//! Schedules on any engine: a schedule fires once at its time, also when
//! the process that added it stopped before it was due (another process on
//! the same store fires it). The embedded engine fires with its own timer
//! (a lease in the database); Temporal keeps the time in a workflow's
//! durable timer.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::Path;
use std::time::Duration;

use concierge::memory::MemoryOwner;
use concierge::schedule::{NewSchedule, ScheduleStore, When};
use concierge::{AgentSpec, Rules, Runtime, Timestamp};

use super::{EngineUnderTest, OnEngine};

async fn runtime(engine: &EngineUnderTest, schedules: &Path) -> Runtime {
    Runtime::builder()
        .agent(AgentSpec::new("echo").rules(Rules::new().fallback("Reminded.")))
        .schedule_store(ScheduleStore::open(schedules).unwrap())
        .on_engine_store(engine, "schedules")
        .build()
        .await
        .unwrap()
}

pub async fn a_schedule_fires_once_even_when_its_process_stopped_before_it_was_due(engine: &EngineUnderTest) {
    let dir = tempfile::tempdir().unwrap();
    let schedules = dir.path().join("schedules.db");
    let first = runtime(engine, &schedules).await;
    let due = Timestamp(concierge::engine::now().0 + 2_000);
    let owner = MemoryOwner::new("acme", "ana");
    let added = first
        .schedule(
            NewSchedule::new(owner.clone(), "follow up with Sarah", When::at(due))
                .session("acme/reminders")
                .agent("echo"),
        )
        .await
        .unwrap();
    // The process stops before the schedule is due.
    first.shutdown().await;
    drop(first);
    tokio::time::sleep(Duration::from_secs(3)).await;

    let second = runtime(engine, &schedules).await;
    let mut fired = None;
    for _ in 0..300 {
        if let Ok(session) = second.session("acme/reminders").await
            && session.runs_started() > 0
            && session.active_run().is_none()
        {
            fired = Some(session);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let session = fired.expect("the schedule fired within 30 s");
    assert_eq!(session.last_output().unwrap().reply.as_deref(), Some("Reminded."));
    // And only once, whatever the timer does next.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(second.session("acme/reminders").await.unwrap().runs_started(), 1);
    let after = second.schedules().get(&owner, &added.id).await.unwrap().unwrap();
    assert_eq!(after.next_at, None, "a one-off schedule is done once it ran");
    second.shutdown().await;
}
