//! What is remembered about the caller: see it, add to it, erase it.
//!
//! Every route acts on the memories of the person the request speaks for
//! (its token's tenant and user; on a server without tokens, the
//! deployment's one person), so no id of another person's memory is ever
//! found.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use concierge::memory::{Memory, MemoryOrigin};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::ground::body::{JsonBody, QueryParams};
use crate::ground::{ApiError, ApiState, Caller, ErrorBody};

/// The most memories a list returns at once.
const MAX_LIST: usize = 10_000;

/// One remembered fact.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct MemoryView {
    /// Its id, to forget it by.
    pub id: String,
    /// What is remembered.
    pub text: String,
    /// When it was remembered, in milliseconds since the Unix epoch.
    pub created_at: u64,
    /// The agent that remembered it (none for a memory added through the API).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

impl From<Memory> for MemoryView {
    fn from(memory: Memory) -> Self {
        Self {
            id: memory.id,
            text: memory.text,
            created_at: memory.created_at.0,
            agent: memory.agent,
        }
    }
}

/// The caller's memories, newest first.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct MemoryList {
    /// The memories.
    pub memories: Vec<MemoryView>,
}

/// `?limit=` for the list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MemoryQuery {
    /// At most this many (the newest; default and most: 10,000).
    #[serde(default)]
    #[param(minimum = 0, maximum = 10000)]
    pub limit: Option<u32>,
}

/// `POST /memories`: something to remember.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberRequest {
    /// The fact, in words (at most 2,000 characters).
    #[schema(min_length = 1, max_length = 2000, pattern = "[^\\s\\u0085\\u001c-\\u001f\\ufeff]")]
    pub text: String,
}

/// How many memories were erased.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Forgotten {
    /// The number of memories erased.
    pub forgotten: usize,
}

/// What is remembered about the caller, newest first.
#[utoipa::path(
    get, path = "/api/v1/memories", tag = "memories",
    params(MemoryQuery),
    responses(
        (status = 200, description = "The caller's memories", body = MemoryList),
        (status = 400, description = "The query string is malformed", body = ErrorBody),
    )
)]
pub async fn list(
    State(state): State<ApiState>,
    caller: Caller,
    QueryParams(query): QueryParams<MemoryQuery>,
) -> Result<Json<MemoryList>, ApiError> {
    let limit = query
        .limit
        .map_or(MAX_LIST, |l| usize::try_from(l).unwrap_or(usize::MAX));
    if limit > MAX_LIST {
        return Err(ApiError::field(
            StatusCode::BAD_REQUEST,
            "limit",
            format!("limit is at most {MAX_LIST}"),
        ));
    }
    let found = state
        .rt
        .memories()
        .list(&caller.person(), Some(limit))
        .await
        .map_err(concierge::Error::from)?;
    Ok(Json(MemoryList {
        memories: found.into_iter().map(MemoryView::from).collect(),
    }))
}

/// Remembers something about the caller, as an agent's `remember` would.
#[utoipa::path(
    post, path = "/api/v1/memories", tag = "memories",
    request_body = RememberRequest,
    responses(
        (status = 201, description = "Remembered", body = MemoryView),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 413, description = "The body is over the size limit", body = ErrorBody),
        (status = 422, description = "The text is empty or too long", body = ErrorBody),
    )
)]
pub async fn remember(
    State(state): State<ApiState>,
    caller: Caller,
    JsonBody(body): JsonBody<RememberRequest>,
) -> Result<(StatusCode, Json<MemoryView>), ApiError> {
    let memory = state
        .rt
        .memories()
        .remember(&caller.person(), &body.text, MemoryOrigin::default())
        .await
        .map_err(concierge::Error::from)?;
    Ok((StatusCode::CREATED, Json(memory.into())))
}

/// Forgets one of the caller's memories.
#[utoipa::path(
    delete, path = "/api/v1/memories/{id}", tag = "memories",
    params(("id" = String, Path, description = "The memory's id")),
    responses(
        (status = 204, description = "Forgotten"),
        (status = 404, description = "The caller has no memory by that id", body = ErrorBody),
    )
)]
pub async fn forget(
    State(state): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let forgotten = state
        .rt
        .memories()
        .forget(&caller.person(), &id)
        .await
        .map_err(concierge::Error::from)?;
    if forgotten {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("nothing is remembered under {id:?}; list the memories with GET /api/v1/memories"),
        ))
    }
}

/// Forgets everything remembered about the caller.
#[utoipa::path(
    delete, path = "/api/v1/memories", tag = "memories",
    responses((status = 200, description = "Everything is forgotten", body = Forgotten))
)]
pub async fn forget_all(State(state): State<ApiState>, caller: Caller) -> Result<Json<Forgotten>, ApiError> {
    let forgotten = state
        .rt
        .memories()
        .forget_all(&caller.person())
        .await
        .map_err(concierge::Error::from)?;
    Ok(Json(Forgotten { forgotten }))
}
