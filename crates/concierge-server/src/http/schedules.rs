//! The caller's schedules: runs at a time or on a cron expression.
//!
//! Every route acts on the schedules of the person the request speaks for
//! (its token's tenant and user; on a server without tokens, the
//! deployment's one person), so no id of another person's schedule is ever
//! found. A schedule's runs go to one of the caller's sessions (named in
//! the request, or a new one).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use concierge::schedule::{CatchUp, NewSchedule, Schedule, When};
use concierge::{SessionId, Timestamp};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::types::optional_whole_number;
use crate::ground::body::JsonBody;
use crate::ground::ids::{ID_RULE, valid_id};
use crate::ground::{ApiError, ApiState, Caller, ErrorBody};

/// After downtime, what a schedule that missed its time does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CatchUpView {
    /// Run once for every time missed, then keep to the schedule.
    #[default]
    Once,
    /// Run nothing for the times missed; wait for the next.
    Skip,
}

/// One schedule.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ScheduleView {
    /// Its id, to pause or delete it by.
    pub id: String,
    /// The message each run starts with.
    pub message: String,
    /// When it runs, in words ("once at 2026-12-01 09:00 UTC", "on cron '0 9 * * 1-5' (UTC)").
    pub when: String,
    /// For a one-time schedule: its time, in milliseconds since the Unix epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<u64>,
    /// For a repeating schedule: its cron expression (UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    /// The session its runs go to.
    pub session: String,
    /// The agent that takes each run (none: the session's current agent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// After downtime, what it does.
    pub catch_up: CatchUpView,
    /// Whether it is paused.
    pub paused: bool,
    /// When it runs next, in milliseconds since the Unix epoch (none: never again).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_run_at: Option<u64>,
    /// When it last ran (the time it was due).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_run_at: Option<u64>,
    /// How many runs it started.
    pub runs: u64,
    /// Why its last attempt did not start a run, if it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When it was added, in milliseconds since the Unix epoch.
    pub created_at: u64,
}

impl ScheduleView {
    fn of(schedule: Schedule, caller: &Caller) -> Self {
        let (at, cron) = match &schedule.when {
            When::At(at) => (Some(at.0), None),
            When::Cron(expression) => (None, Some(expression.clone())),
        };
        Self {
            id: schedule.id,
            message: schedule.message,
            when: schedule.when.describe(),
            at,
            cron,
            session: caller.local_id(&SessionId::from(schedule.session.as_str())),
            agent: schedule.agent,
            catch_up: match schedule.catch_up {
                CatchUp::Once => CatchUpView::Once,
                CatchUp::Skip => CatchUpView::Skip,
            },
            paused: schedule.paused,
            next_run_at: schedule.next_at.map(|t| t.0),
            last_run_at: schedule.last_run_at.map(|t| t.0),
            runs: schedule.runs,
            last_error: schedule.last_error,
            created_at: schedule.created_at.0,
        }
    }
}

/// The caller's schedules, oldest first.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ScheduleList {
    /// The schedules.
    pub schedules: Vec<ScheduleView>,
}

/// `POST /schedules`: a message to an agent, at a time or again and again.
/// Give exactly one of `at`, `in_minutes` and `cron`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleRequest {
    /// The message each run starts with (at most 4,000 characters).
    #[schema(min_length = 1, max_length = 4000, pattern = "[^\\s\\u0085\\u001c-\\u001f\\ufeff]")]
    pub message: String,
    /// Once, at this time (RFC 3339: 2026-12-01T09:00:00Z; a time already
    /// passed runs at once).
    #[serde(default)]
    #[schema(format = DateTime)]
    pub at: Option<String>,
    /// Once, this many minutes from now.
    #[serde(default, deserialize_with = "optional_whole_number")]
    #[schema(minimum = 0, maximum = 5256000)]
    pub in_minutes: Option<u32>,
    /// Again and again, on a five-field cron expression in UTC ("0 9 * * 1-5").
    #[serde(default)]
    pub cron: Option<String>,
    /// The agent that takes each run (default: the session's current agent).
    #[serde(default)]
    pub agent: Option<String>,
    /// One of the caller's sessions for the runs (default: a new one):
    /// 1 to 128 letters, digits, `-`, `_` or `.`.
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z0-9_.-]{1,128}$")]
    pub session: Option<String>,
    /// After downtime: run once for the times missed (default), or skip them.
    #[serde(default)]
    pub catch_up: CatchUpView,
}

/// The longest a one-time schedule may be put off by `in_minutes`: ten years.
const MAX_IN_MINUTES: u32 = 5_256_000;

fn unknown(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!("there is no schedule {id:?}; list the schedules with GET /api/v1/schedules"),
    )
}

/// The caller's schedules.
#[utoipa::path(
    get, path = "/api/v1/schedules", tag = "schedules",
    responses((status = 200, description = "The caller's schedules", body = ScheduleList))
)]
pub async fn list(State(state): State<ApiState>, caller: Caller) -> Result<Json<ScheduleList>, ApiError> {
    let found = state
        .rt
        .schedules()
        .list(&caller.person())
        .await
        .map_err(concierge::Error::from)?;
    Ok(Json(ScheduleList {
        schedules: found.into_iter().map(|s| ScheduleView::of(s, &caller)).collect(),
    }))
}

/// Adds a schedule for the caller.
#[utoipa::path(
    post, path = "/api/v1/schedules", tag = "schedules",
    request_body = ScheduleRequest,
    responses(
        (status = 201, description = "Scheduled", body = ScheduleView),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 404, description = "The session is not the caller's", body = ErrorBody),
        (status = 413, description = "The body is over the size limit", body = ErrorBody),
        (status = 422, description = "The message, the time, the cron expression or the agent is wrong (the field is named)", body = ErrorBody),
    )
)]
pub async fn add(
    State(state): State<ApiState>,
    caller: Caller,
    JsonBody(body): JsonBody<ScheduleRequest>,
) -> Result<(StatusCode, Json<ScheduleView>), ApiError> {
    let when = match (body.at.as_deref(), body.in_minutes, body.cron.as_deref()) {
        (Some(at), None, None) => When::at_time(at).map_err(concierge::Error::from)?,
        (None, Some(minutes), None) if minutes <= MAX_IN_MINUTES => {
            let now = Timestamp::from(std::time::SystemTime::now());
            When::at(Timestamp(now.0.saturating_add(u64::from(minutes) * 60_000)))
        }
        (None, Some(_), None) => {
            return Err(ApiError::field(
                StatusCode::UNPROCESSABLE_ENTITY,
                "in_minutes",
                format!("in_minutes is at most {MAX_IN_MINUTES} (ten years)"),
            ));
        }
        (None, None, Some(cron)) => When::cron(cron).map_err(concierge::Error::from)?,
        _ => {
            return Err(ApiError::field(
                StatusCode::UNPROCESSABLE_ENTITY,
                "at",
                "say when: give exactly one of at (a time), in_minutes or cron",
            ));
        }
    };
    let mut new = NewSchedule::new(caller.person(), body.message, when).catch_up(match body.catch_up {
        CatchUpView::Once => CatchUp::Once,
        CatchUpView::Skip => CatchUp::Skip,
    });
    if let Some(agent) = body.agent {
        new = new.agent(agent);
    }
    let local = match body.session {
        Some(session) if !valid_id(&session) => {
            return Err(ApiError::field(
                StatusCode::UNPROCESSABLE_ENTITY,
                "session",
                format!("a session id is {ID_RULE}"),
            ));
        }
        Some(session) => {
            // A session of the caller's, or one that does not exist yet.
            state.maybe_facts_of(&caller, &session).await?;
            session
        }
        None => state.new_session_id()?,
    };
    new = new.session(caller.session_id(&local).as_str());
    let added = state.rt.schedule(new).await?;
    Ok((StatusCode::CREATED, Json(ScheduleView::of(added, &caller))))
}

/// One of the caller's schedules.
#[utoipa::path(
    get, path = "/api/v1/schedules/{id}", tag = "schedules",
    params(("id" = String, Path, description = "The schedule's id")),
    responses(
        (status = 200, description = "The schedule", body = ScheduleView),
        (status = 404, description = "The caller has no schedule by that id", body = ErrorBody),
    )
)]
pub async fn show(
    State(state): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ScheduleView>, ApiError> {
    let found = state
        .rt
        .schedules()
        .get(&caller.person(), &id)
        .await
        .map_err(concierge::Error::from)?;
    found
        .map(|s| Json(ScheduleView::of(s, &caller)))
        .ok_or_else(|| unknown(&id))
}

/// Pauses one of the caller's schedules: it runs nothing until resumed.
#[utoipa::path(
    post, path = "/api/v1/schedules/{id}/pause", tag = "schedules",
    params(("id" = String, Path, description = "The schedule's id")),
    responses(
        (status = 200, description = "Paused", body = ScheduleView),
        (status = 404, description = "The caller has no schedule by that id", body = ErrorBody),
    )
)]
pub async fn pause(
    State(state): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ScheduleView>, ApiError> {
    set_paused(state, caller, id, true).await
}

/// Resumes one of the caller's schedules (a cron schedule runs next at its next time from now).
#[utoipa::path(
    post, path = "/api/v1/schedules/{id}/resume", tag = "schedules",
    params(("id" = String, Path, description = "The schedule's id")),
    responses(
        (status = 200, description = "Resumed", body = ScheduleView),
        (status = 404, description = "The caller has no schedule by that id", body = ErrorBody),
    )
)]
pub async fn resume(
    State(state): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ScheduleView>, ApiError> {
    set_paused(state, caller, id, false).await
}

async fn set_paused(state: ApiState, caller: Caller, id: String, paused: bool) -> Result<Json<ScheduleView>, ApiError> {
    let changed = state
        .rt
        .schedules()
        .set_paused(&caller.person(), &id, paused)
        .await
        .map_err(concierge::Error::from)?;
    changed
        .map(|s| Json(ScheduleView::of(s, &caller)))
        .ok_or_else(|| unknown(&id))
}

/// Deletes one of the caller's schedules.
#[utoipa::path(
    delete, path = "/api/v1/schedules/{id}", tag = "schedules",
    params(("id" = String, Path, description = "The schedule's id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "The caller has no schedule by that id", body = ErrorBody),
    )
)]
pub async fn delete(
    State(state): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let deleted = state
        .rt
        .schedules()
        .delete(&caller.person(), &id)
        .await
        .map_err(concierge::Error::from)?;
    if deleted {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(unknown(&id))
    }
}
