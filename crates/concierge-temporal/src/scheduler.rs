//! Schedules on Temporal: one workflow per deployment (per task-queue
//! prefix) keeps their time with a durable timer. It asks a worker when the
//! next schedule is due, sleeps until then (or until told the schedules
//! changed), and has a worker fire what is due. Firing is the runtime's own
//! ([`ScheduleFiring`]): a run whose id names the schedule and its time, so
//! a firing repeated after a lost worker starts nothing twice. Nothing on
//! Temporal polls: a process that dies leaves the timer in Temporal, and
//! the next worker fires what came due meanwhile (by the schedule's
//! catch-up policy).

// The workflow and activity macros' expansion unwraps internally and makes
// public marker items; neither is ours to change.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use concierge::engine::ScheduleFiring;
use concierge_core::Timestamp;
use serde::{Deserialize, Serialize};
use temporalio_common::RetryPolicy;
use temporalio_macros::{activities, workflow, workflow_methods};
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use temporalio_sdk::{ActivityOptions, ContinueAsNewOptions, SyncWorkflowContext, WorkflowContext, WorkflowResult};

/// The longest the workflow sleeps without asking again when the next
/// schedule is due (a change it was not told of is seen within this).
const LONGEST_SLEEP: Duration = Duration::from_secs(60);

/// Rounds (a look, then a sleep or a firing) before the workflow continues
/// as new, keeping its history short.
const ROUNDS_PER_RUN: u32 = 200;

/// The workflow's input (nothing yet; a struct so that fields can come).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SchedulerBegin {}

/// The scheduler: sleeps until the next schedule is due, then fires.
#[workflow]
#[derive(Default)]
pub struct SchedulerWorkflow {
    /// Told that the schedules changed since the last look.
    changed: bool,
}

#[workflow_methods]
impl SchedulerWorkflow {
    #[run(name = "concierge.scheduler")]
    pub async fn run(ctx: &mut WorkflowContext<Self>, _begin: SchedulerBegin) -> WorkflowResult<()> {
        for _ in 0..ROUNDS_PER_RUN {
            ctx.state_mut(|w| w.changed = false);
            let next = ctx
                .execute_activity(SchedulerActivities::next_due, (), options())
                .await?;
            let now = ctx.workflow_time().map(Timestamp::from).unwrap_or_default();
            match next {
                Some(due) if due.0 <= now.0 => {
                    // Fired; what is due at once is fired in the next round.
                    let _more = ctx
                        .execute_activity(SchedulerActivities::fire_due, (), options())
                        .await?;
                }
                next => {
                    let sleep = next
                        .map_or(LONGEST_SLEEP, |due| Duration::from_millis(due.0 - now.0))
                        .min(LONGEST_SLEEP);
                    temporalio_sdk::workflows::select! {
                        _ = ctx.timer(sleep) => {}
                        _ = ctx.wait_condition(|w| w.changed) => {}
                    }
                }
            }
        }
        ctx.continue_as_new(SchedulerBegin::default(), ContinueAsNewOptions::default())?;
        Ok(())
    }

    /// The schedules changed (one was added or resumed): look again.
    #[signal(name = "changed")]
    pub fn changed(&mut self, _ctx: &mut SyncWorkflowContext<Self>, _nothing: ()) {
        self.changed = true;
    }
}

/// How the scheduler's activities run: on the sessions queue, retried
/// (firing is idempotent) with a short backoff.
fn options() -> ActivityOptions {
    ActivityOptions::with_start_to_close_timeout(Duration::from_secs(300))
        .retry_policy(
            RetryPolicy::builder()
                .initial_interval(Duration::from_millis(500))
                .backoff_coefficient(2.0)
                .maximum_interval(Duration::from_secs(30))
                .build(),
        )
        .build()
}

/// The scheduler's activities: the runtime of the worker's process fires.
pub struct SchedulerActivities {
    pub(crate) firing: ScheduleFiring,
}

#[activities]
impl SchedulerActivities {
    /// When the next schedule is due, if one is.
    #[activity(name = "concierge.next_schedule_due")]
    pub async fn next_due(
        self: Arc<Self>,
        _ctx: ActivityContext,
        _nothing: (),
    ) -> Result<Option<Timestamp>, ActivityError> {
        self.firing
            .next_due()
            .await
            .map_err(|e| ActivityError::from(std::io::Error::other(e.to_string())))
    }

    /// Fires the schedules due now; true if more may be due at once.
    #[activity(name = "concierge.fire_due_schedules")]
    pub async fn fire_due(self: Arc<Self>, _ctx: ActivityContext, _nothing: ()) -> Result<bool, ActivityError> {
        self.firing
            .fire_due()
            .await
            .map_err(|e| ActivityError::from(std::io::Error::other(e.to_string())))
    }
}
