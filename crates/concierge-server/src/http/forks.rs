//! Forks and replays: a new session from a session's conversation up to one
//! of its events, and a past run run again against another model or
//! planner, with its tools answered from what the run recorded.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use concierge::core::{DoneCall, ForkError, PlannerMode, RunId, RunRecord, ToolOutcome};
use concierge::runtime::ReplayOptions;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::ground::body::OptionalJsonBody;
use crate::ground::{ApiError, ApiState, Caller, ErrorBody};

use super::types::{RunOutputView, RunStatusView, SessionView};

/// `POST /api/v1/sessions/{id}/fork`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkRequest {
    /// The last event the fork carries (its number in the session's event
    /// stream, `12` of `12` or `12.3`); the latest when absent. To edit a
    /// message and send it again, fork at the event before it.
    #[serde(default, deserialize_with = "super::types::optional_whole_number")]
    #[schema(minimum = 1, maximum = 4_294_967_295_u64)]
    pub at: Option<u32>,
}

/// Forks the session at one of its events into a new session (with a
/// random id): the new one has the conversation up to there and the agent
/// that had it; the original is untouched. A change made before the fork
/// point is not made again in the fork, and its `forked_from.note` says so.
#[utoipa::path(
    post, path = "/api/v1/sessions/{id}/fork", tag = "sessions",
    params(("id" = String, Path, description = "The session's id")),
    request_body(content = Option<ForkRequest>, description = "The event to fork at (optional: the latest)"),
    responses(
        (status = 201, description = "The new session", body = SessionView),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 404, description = "No such session, or the session has no such event (`field`: `at`)", body = ErrorBody),
        (status = 413, description = "The body is over the size limit", body = ErrorBody),
        (status = 422, description = "A field is malformed", body = ErrorBody),
    )
)]
pub async fn fork(
    State(state): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
    OptionalJsonBody(body): OptionalJsonBody<ForkRequest>,
) -> Result<Response, ApiError> {
    let at = body.unwrap_or_default().at;
    state.facts_of(&caller, &id).await?;
    let into = state.new_session_id()?;
    state
        .rt
        .fork(caller.session_id(&id), at.map(u64::from), caller.options(&into))
        .await
        .map_err(|error| fork_error(error, "at"))?;
    let session = state.session_of(&caller, &into).await?;
    Ok((StatusCode::CREATED, Json(SessionView::of(&session, &into))).into_response())
}

/// `POST /api/v1/sessions/{id}/runs/{run}/replay`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayRequest {
    /// The model to ask instead of the agents' (`provider:name`, one this
    /// server configures: the default, an agent's, or one of `models` in
    /// concierge.toml).
    #[serde(default)]
    #[schema(min_length = 1)]
    pub model: Option<String>,
    /// How every agent plans instead: `model`, `rules` or `custom`.
    #[serde(default)]
    #[schema(value_type = Option<String>, pattern = "^(model|rules|custom)$")]
    pub planner: Option<PlannerMode>,
}

/// A call of the original run, as it was recorded.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecordedCallView {
    /// The tool.
    pub tool: String,
    /// Its arguments.
    #[schema(value_type = Object)]
    pub arguments: Value,
    /// Whether it succeeded.
    pub ok: bool,
}

impl From<&DoneCall> for RecordedCallView {
    fn from(call: &DoneCall) -> Self {
        Self {
            tool: call.tool.to_string(),
            arguments: call.arguments.clone(),
            ok: matches!(call.outcome, ToolOutcome::Ok(_)),
        }
    }
}

/// The run as it happened.
#[derive(Debug, Serialize, ToSchema)]
pub struct OriginalRunView {
    /// The run.
    pub run_id: String,
    /// The agent that took it.
    pub agent: String,
    /// What the person wrote.
    pub text: String,
    /// How it ended (or where it stopped for the person).
    pub status: RunStatusView,
    /// What it answered.
    pub reply: Option<String>,
    /// Its tool calls.
    pub tool_calls: Vec<RecordedCallView>,
}

impl From<&RunRecord> for OriginalRunView {
    fn from(record: &RunRecord) -> Self {
        Self {
            run_id: record.run_id.to_string(),
            agent: record.agent.to_string(),
            text: record.messages.iter().map(|m| m.text()).collect::<Vec<_>>().join("\n"),
            status: record.status.into(),
            reply: record.reply.clone(),
            tool_calls: record.calls.iter().map(RecordedCallView::from).collect(),
        }
    }
}

/// A run replayed: what it answered then and what it answers now.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReplayView {
    /// The session the replay ran in: a fork of the original just before the run.
    pub session_id: String,
    /// The run as it happened.
    pub original: OriginalRunView,
    /// The replay's output.
    pub replayed: RunOutputView,
    /// Whether the replay answered the same words.
    pub same_reply: bool,
    /// The replay's calls answered from the original run's.
    pub answered_from_original: usize,
    /// The replay's calls refused because the original made no such call.
    pub refused: usize,
}

/// Runs a past run again, in a fork of the session just before it, with
/// the same message, against another model or planner. No tool is called:
/// a call the original run made with the same arguments is answered with
/// its recorded result, any other is refused; the original is untouched.
#[utoipa::path(
    post, path = "/api/v1/sessions/{id}/runs/{run}/replay", tag = "sessions",
    params(("id" = String, Path, description = "The session's id"), ("run" = String, Path, description = "The run's id")),
    request_body(content = Option<ReplayRequest>, description = "The model or planner to replay with (optional)"),
    responses(
        (status = 200, description = "The original run and the replay", body = ReplayView),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 404, description = "No such session, or the session has no such run (`field`: `run`)", body = ErrorBody),
        (status = 409, description = "The run has not finished yet", body = ErrorBody),
        (status = 413, description = "The body is over the size limit", body = ErrorBody),
        (status = 422, description = "A field is malformed, or names a model this server does not configure", body = ErrorBody),
        (status = 429, description = "The caller's tenant has its most runs in progress", body = ErrorBody),
    )
)]
pub async fn replay(
    State(state): State<ApiState>,
    caller: Caller,
    Path((id, run)): Path<(String, String)>,
    OptionalJsonBody(body): OptionalJsonBody<ReplayRequest>,
) -> Result<Json<ReplayView>, ApiError> {
    let body = body.unwrap_or_default();
    // A run id the session does not have, malformed or not, is a 404 (`run`).
    state.facts_of(&caller, &id).await?;
    let _permit = state.run_permit(&caller)?;
    let into = state.new_session_id()?;
    let mut options = ReplayOptions::new()
        .session_id(caller.session_id(&into))
        .run_id(state.new_run_id()?)
        .tenant(caller.tenant.clone())
        .user(caller.user.clone());
    if let Some(model) = body.model.map(|m| m.trim().to_string()) {
        options = options.model(model);
    }
    if let Some(planner) = body.planner {
        options = options.planner(planner);
    }
    let replay = state
        .rt
        .replay(caller.session_id(&id), RunId::new(run), options)
        .await
        .map_err(|error| fork_error(error, "run"))?;
    let same_reply = replay.original.reply == replay.replayed.reply;
    Ok(Json(ReplayView {
        session_id: into.clone(),
        original: OriginalRunView::from(&replay.original),
        replayed: RunOutputView::of(replay.replayed, &into),
        same_reply,
        answered_from_original: replay.answered,
        refused: replay.refused,
    }))
}

/// A fork's or replay's error: an event or run the session does not have is
/// a 404 on `field`, a run not finished a 409, a model not configured a 422.
fn fork_error(error: concierge::Error, field: &'static str) -> ApiError {
    let text = error.to_string();
    match error {
        concierge::Error::Fork(ForkError::RunUnfinished(_)) => ApiError::field(StatusCode::CONFLICT, field, text),
        concierge::Error::Fork(_) => ApiError::field(StatusCode::NOT_FOUND, field, text),
        concierge::Error::ModelNotConfigured(_) => ApiError::field(StatusCode::UNPROCESSABLE_ENTITY, "model", text),
        other => other.into(),
    }
}
