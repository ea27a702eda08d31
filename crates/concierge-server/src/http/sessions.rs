//! Sessions: create, list, show, post a message, confirm, choose, end.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use concierge::core::Decision;
use concierge::{AgentId, RunOptions, SessionId};

use super::ApiState;
use super::body::{JsonBody, OptionalJsonBody, QueryParams};
use super::error::{ApiError, ErrorBody};
use super::types::{
    ChooseRequest, ConfirmRequest, CreateSession, DecisionKind, EndRequest, PostMessage, RunAccepted, RunOutputView,
    SessionList, SessionListItem, SessionView, WaitQuery,
};

/// The longest session id a client may choose.
const MAX_ID_LEN: usize = 128;

/// Creates a session, optionally with its id and the agent that takes its
/// first message. It exists from now on; its first message starts its first run.
#[utoipa::path(
    post, path = "/api/v1/sessions", tag = "sessions",
    request_body(content = Option<CreateSession>, description = "The session's id and agent (optional)"),
    responses(
        (status = 201, description = "The session was created", body = SessionView),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 413, description = "The body is over the size limit", body = ErrorBody),
        (status = 409, description = "A session with this id exists", body = ErrorBody),
        (status = 422, description = "A field is malformed or names an unknown agent", body = ErrorBody),
    )
)]
pub async fn create(
    State(state): State<ApiState>,
    OptionalJsonBody(body): OptionalJsonBody<CreateSession>,
) -> Result<Response, ApiError> {
    let body = body.unwrap_or_default();
    let id = match body.id {
        Some(id) => {
            check_id(&id)?;
            id
        }
        None => state.new_session_id(),
    };
    let agent = match body.agent {
        Some(agent) => {
            let agent = AgentId::new(agent.trim());
            if state.rt.agent(agent.clone()).is_none() {
                let known: Vec<String> = state.rt.agents().iter().map(|a| a.id.to_string()).collect();
                return Err(ApiError::field(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "agent",
                    format!("there is no agent {:?}; agents: {}", agent.as_str(), known.join(", ")),
                ));
            }
            Some(agent)
        }
        None => None,
    };
    if exists_in_engine(&state, &id).await? || !state.open(&id, agent.clone()) {
        return Err(ApiError::field(
            StatusCode::CONFLICT,
            "id",
            format!("a session {id:?} exists already; choose another id or leave it out"),
        ));
    }
    let view = SessionView::opened(&id, agent.as_ref().map(AgentId::as_str));
    Ok((StatusCode::CREATED, Json(view)).into_response())
}

fn check_id(id: &str) -> Result<(), ApiError> {
    let ok = !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(ApiError::field(
            StatusCode::UNPROCESSABLE_ENTITY,
            "id",
            format!("a session id is 1 to {MAX_ID_LEN} letters, digits, '-', '_' or '.'"),
        ))
    }
}

async fn exists_in_engine(state: &ApiState, id: &str) -> Result<bool, ApiError> {
    match state.rt.session(id).await {
        Ok(_) => Ok(true),
        Err(concierge::Error::SessionNotFound(_)) => Ok(false),
        Err(error) => Err(error.into()),
    }
}

/// Lists the sessions: those the engine has, and those created here that
/// have had no message yet.
#[utoipa::path(
    get, path = "/api/v1/sessions", tag = "sessions",
    responses((status = 200, description = "The sessions", body = SessionList))
)]
pub async fn list(State(state): State<ApiState>) -> Result<Json<SessionList>, ApiError> {
    let mut summaries = state.rt.sessions().await?;
    summaries.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then_with(|| a.id.cmp(&b.id)));
    let mut sessions: Vec<SessionListItem> = state
        .opened()
        .into_iter()
        .filter(|(id, _)| !summaries.iter().any(|s| s.id.as_str() == id.as_str()))
        .map(|(id, agent)| SessionListItem {
            id: id.to_string(),
            agent: agent.map(|a| a.to_string()),
            live: false,
            updated_at: None,
        })
        .collect();
    sessions.extend(summaries.into_iter().map(SessionListItem::from));
    Ok(Json(SessionList { sessions }))
}

/// Shows a session: its agent, phase, history, blackboard, what it waits
/// for and its usage.
#[utoipa::path(
    get, path = "/api/v1/sessions/{id}", tag = "sessions",
    params(("id" = String, Path, description = "The session's id")),
    responses(
        (status = 200, description = "The session", body = SessionView),
        (status = 404, description = "No such session", body = ErrorBody),
    )
)]
pub async fn show(State(state): State<ApiState>, Path(id): Path<String>) -> Result<Json<SessionView>, ApiError> {
    view(&state, &id).await.map(Json)
}

/// The view of session `id`, engine's or opened here; 404 otherwise.
pub(super) async fn view(state: &ApiState, id: &str) -> Result<SessionView, ApiError> {
    match state.rt.session(id).await {
        Ok(session) => Ok(SessionView::of(&session)),
        Err(concierge::Error::SessionNotFound(_)) => match state.opened_agent(id) {
            Some(agent) => Ok(SessionView::opened(id, agent.as_ref().map(AgentId::as_str))),
            None => Err(ApiError::unknown_session(id)),
        },
        Err(error) => Err(error.into()),
    }
}

/// Posts the person's message: starts a run in the session. With
/// `?wait=true` the answer is the run's output once it finishes or parks;
/// otherwise 202 with the run's id (follow it on the event stream).
#[utoipa::path(
    post, path = "/api/v1/sessions/{id}/messages", tag = "sessions",
    params(("id" = String, Path, description = "The session's id"), WaitQuery),
    request_body = PostMessage,
    responses(
        (status = 200, description = "The run's output (with wait=true)", body = RunOutputView),
        (status = 202, description = "The run started", body = RunAccepted),
        (status = 400, description = "The body is missing or not JSON, or the query string is malformed", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 409, description = "A run is in progress, or the session has ended", body = ErrorBody),
        (status = 413, description = "The message is too long", body = ErrorBody),
        (status = 422, description = "A field is malformed", body = ErrorBody),
    )
)]
pub async fn post_message(
    State(state): State<ApiState>,
    Path(id): Path<String>,
    QueryParams(query): QueryParams<WaitQuery>,
    JsonBody(body): JsonBody<PostMessage>,
) -> Result<Response, ApiError> {
    if body.text.trim().is_empty() {
        return Err(ApiError::field(
            StatusCode::UNPROCESSABLE_ENTITY,
            "text",
            "the message is empty; say something",
        ));
    }
    let limit = state.rt.max_message_bytes();
    if body.text.len() > limit {
        return Err(ApiError::field(
            StatusCode::PAYLOAD_TOO_LARGE,
            "text",
            format!(
                "the message is {} bytes, over the limit of {limit} bytes; send it in smaller parts",
                body.text.len()
            ),
        ));
    }
    if let Some(run) = &body.run_id {
        check_run_id(run)?;
    }
    start(&state, &id, body.text, body.run_id, query.wait).await
}

fn check_run_id(run: &str) -> Result<(), ApiError> {
    check_id(run).map_err(|_| {
        ApiError::field(
            StatusCode::UNPROCESSABLE_ENTITY,
            "run_id",
            format!("a run id is 1 to {MAX_ID_LEN} letters, digits, '-', '_' or '.'"),
        )
    })
}

/// Starts a run in session `id` with `text`; answers as `post_message` does.
async fn start(
    state: &ApiState,
    id: &str,
    text: String,
    run_id: Option<String>,
    wait: bool,
) -> Result<Response, ApiError> {
    let mut options = RunOptions::new().session_id(id);
    if let Some(run) = run_id {
        options = options.run_id(run);
    }
    let opened = state.opened_agent(id);
    if opened.is_none() && !exists_in_engine(state, id).await? {
        return Err(ApiError::unknown_session(id));
    }
    let handle = match opened.flatten() {
        Some(agent) => state.rt.client(agent)?.start(text, options).await?,
        None => state.rt.start(text, options).await?,
    };
    state.forget_opened(id);
    if wait {
        let output = handle.wait().await?;
        return Ok((StatusCode::OK, Json(RunOutputView::from(output))).into_response());
    }
    let accepted = RunAccepted {
        session_id: id.to_string(),
        run_id: handle.run_id().to_string(),
        after_event_id: handle.first_seq().saturating_sub(1).to_string(),
        events: format!("/api/v1/sessions/{id}/events"),
    };
    Ok((StatusCode::ACCEPTED, Json(accepted)).into_response())
}

/// Answers the call the session waits on: approve, deny, or amend its
/// arguments. The call id and fingerprint must be the pending ones. Answers
/// with the run's output at its next stop.
#[utoipa::path(
    post, path = "/api/v1/sessions/{id}/confirm", tag = "sessions",
    params(("id" = String, Path, description = "The session's id")),
    request_body = ConfirmRequest,
    responses(
        (status = 200, description = "The run's output at its next stop", body = RunOutputView),
        (status = 400, description = "The body is missing or not JSON", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 409, description = "Nothing waits for approval, or the call or fingerprint is not the pending one", body = ErrorBody),
        (status = 413, description = "The body is over the size limit", body = ErrorBody),
        (status = 422, description = "A field is malformed", body = ErrorBody),
    )
)]
pub async fn confirm(
    State(state): State<ApiState>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<ConfirmRequest>,
) -> Result<Json<RunOutputView>, ApiError> {
    let decision = match body.decision {
        DecisionKind::Approve => Decision::Approve,
        DecisionKind::Deny => Decision::Deny { reason: body.reason },
        DecisionKind::Amend => match body.arguments {
            Some(arguments) if arguments.is_object() => Decision::Amend { arguments },
            Some(_) => {
                return Err(ApiError::field(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "arguments",
                    "the new arguments must be a JSON object",
                ));
            }
            None => {
                return Err(ApiError::field(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "arguments",
                    "an amendment needs the complete new arguments",
                ));
            }
        },
    };
    let session = view(&state, &id).await?;
    let Some(pending) = session.pending_confirmation else {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("session {id:?} is not waiting for a confirmation"),
        ));
    };
    if pending.call_id != body.call_id {
        return Err(ApiError::field(
            StatusCode::CONFLICT,
            "call_id",
            format!(
                "call {:?} is not the one waiting for approval; the pending call is {:?}",
                body.call_id, pending.call_id
            ),
        ));
    }
    let output = state
        .rt
        .confirm(SessionId::new(id), body.call_id, body.fingerprint, decision)
        .await?;
    Ok(Json(output.into()))
}

/// Answers the choice the session waits on with an option's number: the
/// number is the person's next message, which the core resolves.
#[utoipa::path(
    post, path = "/api/v1/sessions/{id}/choose", tag = "sessions",
    params(("id" = String, Path, description = "The session's id"), WaitQuery),
    request_body = ChooseRequest,
    responses(
        (status = 200, description = "The run's output (with wait=true)", body = RunOutputView),
        (status = 202, description = "The run resumed", body = RunAccepted),
        (status = 400, description = "The body is missing or not JSON, or the query string is malformed", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 409, description = "Nothing waits for a choice", body = ErrorBody),
        (status = 413, description = "The body is over the size limit", body = ErrorBody),
        (status = 422, description = "No option has this number, or a field is malformed", body = ErrorBody),
    )
)]
pub async fn choose(
    State(state): State<ApiState>,
    Path(id): Path<String>,
    QueryParams(query): QueryParams<WaitQuery>,
    JsonBody(body): JsonBody<ChooseRequest>,
) -> Result<Response, ApiError> {
    let session = view(&state, &id).await?;
    let Some(choice) = session.pending_choice else {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("session {id:?} is not waiting for a choice"),
        ));
    };
    let n = choice.options.len();
    if body.option == 0 || body.option as usize > n {
        return Err(ApiError::field(
            StatusCode::UNPROCESSABLE_ENTITY,
            "option",
            format!("option {} does not exist; choose a number from 1 to {n}", body.option),
        ));
    }
    start(&state, &id, body.option.to_string(), None, query.wait).await
}

/// Ends the session: a run in progress is cancelled; the session takes no
/// more messages. Answers with the cancelled run's output, if there was one.
#[utoipa::path(
    post, path = "/api/v1/sessions/{id}/end", tag = "sessions",
    params(("id" = String, Path, description = "The session's id")),
    request_body(content = Option<EndRequest>, description = "Why the session ends (optional)"),
    responses(
        (status = 200, description = "The session ended; the cancelled run's output, if one was in progress", body = Option<RunOutputView>),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 409, description = "The session has ended already", body = ErrorBody),
        (status = 413, description = "The body is over the size limit", body = ErrorBody),
        (status = 422, description = "A field is malformed", body = ErrorBody),
    )
)]
pub async fn end(
    State(state): State<ApiState>,
    Path(id): Path<String>,
    OptionalJsonBody(body): OptionalJsonBody<EndRequest>,
) -> Result<Json<Option<RunOutputView>>, ApiError> {
    let reason = body
        .and_then(|b| b.reason)
        .unwrap_or_else(|| "ended through the HTTP API".to_string());
    if state.forget_opened(&id) {
        return Ok(Json(None));
    }
    if !exists_in_engine(&state, &id).await? {
        return Err(ApiError::unknown_session(&id));
    }
    let output = state.rt.end(SessionId::new(id), reason).await?;
    Ok(Json(output.map(Into::into)))
}
