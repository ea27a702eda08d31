//! Firing the schedules that are due: one process at a time (a lease in
//! the database), each firing a run whose id says which schedule and which
//! time it is for, so that a firing repeated after a crash starts nothing.

use std::sync::{Arc, Weak};
use std::time::Duration;

use concierge_core::{AgentId, Message, Multitask, SessionId, StepError, Timestamp};
use futures::StreamExt;
use futures::future::BoxFuture;

use super::{Inner, Runtime};
use crate::engine::{FireSchedules, ScheduleFiring};
use crate::error::{Error, Result};
use crate::options::RunOptions;
use crate::schedule::{CatchUp, Fired, NewSchedule, Schedule, ScheduleStore};

/// How long a lease to fire schedules lasts unless renewed: a process that
/// died is replaced as the one that fires within this.
const LEASE: Duration = Duration::from_secs(15);
/// How often a runtime looks for schedules due (and renews its lease).
const POLL: Duration = Duration::from_secs(1);
/// Most schedules one round fires.
const BATCH: usize = 1_000;
/// Most runs a round starts at once.
const IN_FLIGHT: usize = 64;
/// A schedule more than this late missed its time (see [`CatchUp`]).
const MISSED_AFTER_MS: u64 = 60_000;
/// When a session is busy with another run, the schedule tries again after this.
const BUSY_RETRY_MS: u64 = 5_000;
/// After a failed start, the schedule tries again after this times the failures so far.
const FAILED_RETRY_MS: u64 = 30_000;
/// Failed starts in a row that pause a schedule.
const FAILURES_TO_PAUSE: u32 = 5;

impl Runtime {
    /// This runtime's schedules: runs at a time or on a cron expression.
    pub fn schedules(&self) -> &ScheduleStore {
        &self.inner.schedules
    }

    /// Adds a schedule after checking what the store cannot: that the agent
    /// it names exists. (A session it names must be the owner's: front
    /// doors check that against the caller before they ask.)
    pub async fn schedule(&self, new: NewSchedule) -> Result<Schedule> {
        if let Some(agent) = &new.agent {
            let catalog = self.catalog();
            if catalog.agent(&AgentId::from(agent.as_str())).is_none() {
                return Err(Error::AgentNotFound {
                    agent: agent.as_str().into(),
                    known: catalog
                        .agent_ids()
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
        // A session that may not be made (one named like a child run's) is
        // refused now, not at the first firing; one that exists is fine.
        if let Some(session) = new.session.as_deref().filter(|s| SessionId::check_new(s).is_err()) {
            super::sessions::check_session_id(self.engine_or_err()?.as_ref(), &SessionId::from(session)).await?;
        }
        Ok(self.inner.schedules.add(new).await?)
    }

    /// One round: if a schedule is due and this runtime holds (or takes) the
    /// lease, fires up to [`BATCH`] of them and records what became of each.
    /// True if there may be more due at once.
    pub(crate) async fn fire_due(&self, holder: &str) -> Result<bool> {
        let store = &self.inner.schedules;
        let now = crate::engine::now();
        match store.next_due().await? {
            Some(next) if next <= now => {}
            _ => return Ok(false),
        }
        let until = Timestamp(now.0.saturating_add(LEASE.as_millis() as u64));
        if !store.lease(holder, now, until).await? {
            return Ok(false);
        }
        let due = store.due(now, BATCH).await?;
        let more = due.len() == BATCH;
        let fired: Vec<Fired> = futures::stream::iter(due)
            .map(|schedule| self.fire(schedule, now))
            .buffer_unordered(IN_FLIGHT)
            .collect()
            .await;
        store.record(fired).await?;
        Ok(more)
    }

    /// Starts a due schedule's run for the time it was due.
    async fn fire(&self, schedule: Schedule, now: Timestamp) -> Fired {
        let Some(slot) = schedule.next_at else {
            // `due` returns only schedules with a time; nothing to do.
            return Fired::Busy {
                id: schedule.id,
                retry_at: now,
            };
        };
        let next = schedule.when.next_after(Timestamp(slot.0.max(now.0)));
        if now.0.saturating_sub(slot.0) > MISSED_AFTER_MS && schedule.catch_up == CatchUp::Skip {
            return Fired::Skipped {
                id: schedule.id,
                slot,
                next,
            };
        }
        let run_id = format!("sched-{}-{}", schedule.id.trim_start_matches("sch_"), slot.0);
        let mut options = RunOptions::new()
            .session_id(schedule.session.as_str())
            .run_id(run_id.as_str())
            .multitask(Multitask::Reject)
            .label("schedule", schedule.id.as_str());
        if let Some(tenant) = &schedule.tenant {
            options = options.tenant(tenant.as_str());
        }
        if !schedule.user.is_empty() {
            options = options.user(schedule.user.as_str());
        }
        let agent = schedule.agent.as_deref().map(AgentId::from);
        match self
            .start_run(agent, vec![Message::user(schedule.message.as_str())], options)
            .await
        {
            // Started now, or before a crash that came before its record
            // (its webhook event, found again, is the same event).
            Ok(_) | Err(Error::Rejected(StepError::RunIdTaken { .. })) => {
                self.schedule_fired(&schedule, slot, &run_id).await;
                Fired::Ran {
                    id: schedule.id,
                    slot,
                    next,
                }
            }
            Err(Error::Rejected(StepError::RunInProgress { .. }) | Error::SessionBusy { .. }) => Fired::Busy {
                id: schedule.id,
                retry_at: Timestamp(now.0.saturating_add(BUSY_RETRY_MS)),
            },
            Err(error) => {
                let failures = schedule.failures.saturating_add(1);
                tracing::warn!(schedule = %schedule.id, %error, failures, "a scheduled run did not start");
                Fired::Failed {
                    id: schedule.id,
                    error: error.to_string(),
                    retry_at: Timestamp(
                        now.0
                            .saturating_add(FAILED_RETRY_MS.saturating_mul(u64::from(failures))),
                    ),
                    pause: failures >= FAILURES_TO_PAUSE,
                }
            }
        }
    }
}

/// Fires due schedules while the runtime lives: a round every [`POLL`]
/// (at once again when a round was full).
pub(super) async fn fire_schedules(runtime: Weak<Inner>, holder: String) {
    loop {
        let Some(inner) = runtime.upgrade() else {
            return;
        };
        let runtime_now = Runtime { inner };
        let more = match runtime_now.fire_due(&holder).await {
            Ok(more) => more,
            Err(error) => {
                tracing::warn!(%error, "firing schedules failed; trying again");
                false
            }
        };
        drop(runtime_now);
        if !more {
            tokio::time::sleep(POLL).await;
        }
    }
}

/// The holder of the lease to fire schedules when the engine keeps their
/// time: one for every process, since the engine calls one at a time.
const ENGINE_HOLDER: &str = "engine";

/// Fires schedules for an engine that keeps their time: the runtime, held
/// weakly, on the tokio runtime it was built on (an engine's workers may
/// call from a runtime of their own).
struct Firer {
    inner: Weak<Inner>,
    tokio: tokio::runtime::Handle,
}

impl Firer {
    /// Runs `work` with the runtime on its own tokio runtime.
    fn on<T, F>(&self, work: impl FnOnce(Runtime) -> F + Send + 'static) -> BoxFuture<'static, Result<T>>
    where
        T: Send + 'static,
        F: std::future::Future<Output = Result<T>> + Send + 'static,
    {
        let inner = self.inner.clone();
        let tokio = self.tokio.clone();
        Box::pin(async move {
            let Some(inner) = inner.upgrade() else {
                return Err(Error::RunStartFailed("the runtime has shut down".into()));
            };
            tokio
                .spawn(work(Runtime { inner }))
                .await
                .map_err(|e| Error::Storage(format!("firing schedules stopped: {e}")))?
        })
    }
}

impl FireSchedules for Firer {
    fn next_due(&self) -> BoxFuture<'static, Result<Option<Timestamp>>> {
        self.on(|rt| async move { Ok(rt.inner.schedules.next_due().await?) })
    }

    fn fire_due(&self) -> BoxFuture<'static, Result<bool>> {
        self.on(|rt| async move { rt.fire_due(ENGINE_HOLDER).await })
    }
}

impl Runtime {
    /// Starts firing due schedules in the background: with a timer of its
    /// own ([`fire_schedules`]), or, when the engine keeps their time, by
    /// linking it to this runtime and telling it when they change.
    pub(super) fn start_firing_schedules(&self, link: &ScheduleFiring) -> Result<()> {
        if self.inner.engine.keeps_schedule_time() {
            let tokio = tokio::runtime::Handle::current();
            let firer: Arc<dyn FireSchedules> = Arc::new(Firer {
                inner: Arc::downgrade(&self.inner),
                tokio: tokio.clone(),
            });
            link.set(Arc::downgrade(&firer));
            let _ = self.inner.firer.set(firer);
            let engine = Arc::downgrade(&self.inner.engine);
            let tell = move || {
                let Some(engine) = engine.upgrade() else {
                    return;
                };
                // On this runtime's tokio runtime, wherever the change was made.
                tokio.spawn(async move {
                    if let Err(error) = engine.schedules_changed().await {
                        tracing::warn!(%error, "the engine could not be told that the schedules changed");
                    }
                });
            };
            // Whatever is due already (a schedule added while no process ran) is looked at now.
            tell();
            self.inner.schedules.on_change(tell);
            return Ok(());
        }
        let holder = crate::side_db::random_id(&format!("{}-", std::process::id())).map_err(Error::Storage)?;
        let task = tokio::spawn(fire_schedules(std::sync::Arc::downgrade(&self.inner), holder.clone()));
        let mut firing = self
            .inner
            .firing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *firing = Some((task.abort_handle(), holder));
        Ok(())
    }

    /// Stops firing and gives the lease up, so another process takes over at once.
    pub(super) async fn stop_firing_schedules(&self) {
        let firing = self
            .inner
            .firing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some((task, holder)) = firing {
            task.abort();
            if let Err(error) = self.inner.schedules.release(&holder).await {
                tracing::warn!(%error, "the lease to fire schedules could not be given up");
            }
        }
    }
}
