//! The built-in `schedules` toolset: `schedule_message`, `list_schedules`,
//! `cancel_schedule`.
//!
//! A schedule made by a tool runs in the conversation it was made in, with
//! the agent that made it, for the person the run is for: "remind me to
//! follow up with Sarah on Tuesday" becomes a run on Tuesday whose answer
//! the person finds in that conversation. The tools change nothing outside
//! concierge, so they never wait for approval.

use concierge_core::{ToolError, ToolSpec};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::memory::{annotations, owner};
use super::{Tool, ToolContext, Toolset, schema_for};
use crate::schedule::{NewSchedule, Schedule, ScheduleError, ScheduleStore, When, rfc3339};

/// The toolset's name, as an agent's `toolsets` names it.
pub const SCHEDULE_TOOLSET: &str = "schedules";

/// The `schedules` toolset over `store`.
pub fn schedule_toolset(store: ScheduleStore) -> Toolset {
    Toolset::new(SCHEDULE_TOOLSET)
        .tool(ScheduleMessage(store.clone()))
        .tool(ListSchedules(store.clone()))
        .tool(CancelSchedule(store))
}

fn failed(error: ScheduleError) -> ToolError {
    match error {
        ScheduleError::Storage(_) => ToolError::failed(error.to_string()),
        _ => ToolError::invalid_arguments(error.to_string(), Vec::new()),
    }
}

fn shown(schedule: &Schedule) -> Value {
    json!({
        "id": schedule.id,
        "message": schedule.message,
        "when": schedule.when.describe(),
        "next_run": schedule.next_at.map(rfc3339),
        "paused": schedule.paused,
    })
}

/// `schedule_message`'s arguments: a message and exactly one of `at`, `in_minutes`, `cron`.
#[derive(Deserialize, JsonSchema)]
struct ScheduleArgs {
    /// What the assistant is to do or say then, as an instruction to itself
    /// ("Remind the person to follow up with Sarah").
    message: String,
    /// Once, at this time: RFC 3339 with an offset (2026-12-01T09:00:00Z).
    #[serde(default)]
    at: Option<String>,
    /// Once, this many minutes from now.
    #[serde(default)]
    in_minutes: Option<u32>,
    /// Again and again, on a five-field cron expression in UTC ("0 9 * * 1-5": 9:00 on weekdays).
    #[serde(default)]
    cron: Option<String>,
}

struct ScheduleMessage(ScheduleStore);

impl Tool for ScheduleMessage {
    type Args = ScheduleArgs;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "schedule_message",
            "Schedules a message to yourself in this conversation, at a time or again and again: a reminder, a \
             follow-up, a daily summary. When it comes, you get the message and answer the person here. Give \
             exactly one of at, in_minutes or cron.",
            schema_for::<ScheduleArgs>(),
        )
        .category("schedules")
        .annotations(annotations(false))
    }

    async fn call(&self, args: ScheduleArgs, cx: ToolContext) -> Result<Value, ToolError> {
        let when = match (args.at.as_deref(), args.in_minutes, args.cron.as_deref()) {
            (Some(at), None, None) => When::at_time(at).map_err(failed)?,
            (None, Some(minutes), None) => {
                let at = crate::clock::now().0.saturating_add(u64::from(minutes) * 60_000);
                When::at(concierge_core::Timestamp(at))
            }
            (None, None, Some(cron)) => When::cron(cron).map_err(failed)?,
            _ => {
                return Err(ToolError::invalid_arguments(
                    "give exactly one of at (a time), in_minutes or cron",
                    Vec::new(),
                ));
            }
        };
        let new = NewSchedule::new(owner(&cx), args.message, when)
            .session(cx.session_id.as_str())
            .agent(cx.agent.as_str())
            .key(cx.idempotency_key.to_string());
        let schedule = self.0.add(new).await.map_err(failed)?;
        Ok(json!({"scheduled": shown(&schedule)}))
    }
}

/// `list_schedules`' arguments (none).
#[derive(Deserialize, JsonSchema)]
struct ListArgs {}

struct ListSchedules(ScheduleStore);

impl Tool for ListSchedules {
    type Args = ListArgs;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "list_schedules",
            "Lists the person's scheduled messages: what, when, and their ids to cancel them by.",
            schema_for::<ListArgs>(),
        )
        .category("schedules")
        .annotations(annotations(false))
    }

    async fn call(&self, _: ListArgs, cx: ToolContext) -> Result<Value, ToolError> {
        let schedules = self.0.list(&owner(&cx)).await.map_err(failed)?;
        Ok(json!({"schedules": schedules.iter().map(shown).collect::<Vec<_>>()}))
    }
}

/// `cancel_schedule`'s arguments.
#[derive(Deserialize, JsonSchema)]
struct CancelArgs {
    /// The schedule's id, as `schedule_message` or `list_schedules` gave it.
    id: String,
}

struct CancelSchedule(ScheduleStore);

impl Tool for CancelSchedule {
    type Args = CancelArgs;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "cancel_schedule",
            "Cancels one of the person's scheduled messages by its id.",
            schema_for::<CancelArgs>(),
        )
        .category("schedules")
        .annotations(annotations(true))
    }

    async fn call(&self, args: CancelArgs, cx: ToolContext) -> Result<Value, ToolError> {
        if self.0.delete(&owner(&cx), &args.id).await.map_err(failed)? {
            Ok(json!({"cancelled": args.id}))
        } else {
            Err(ToolError::invalid_arguments(
                format!("the person has no schedule {}; list_schedules gives their ids", args.id),
                Vec::new(),
            ))
        }
    }
}
