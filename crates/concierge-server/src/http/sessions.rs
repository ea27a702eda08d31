//! Sessions: create, list, show, post a message, confirm, choose, end.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use concierge::core::{Decision, StepError};
use concierge::{AgentId, Multitask, SessionId, SessionQuery};

use crate::ground::body::{JsonBody, OptionalJsonBody, QueryParams};
use crate::ground::ids::{ID_RULE, valid_id};
use crate::ground::{ApiError, ApiState, Caller, ErrorBody};

use super::types::{
    AnswerRequest, ChooseRequest, ConfirmRequest, CreateSession, DecisionKind, EndRequest, PostMessage, RunAccepted,
    RunOutputView, SessionList, SessionListItem, SessionListQuery, SessionView, WaitQuery,
};

/// Creates a session, optionally with its id and the agent that takes its
/// first message. It exists from now on; its first message starts its first run.
#[utoipa::path(
    post, path = "/api/v1/sessions", tag = "sessions",
    request_body(content = Option<CreateSession>, description = "The session's id and agent (optional)"),
    responses(
        (status = 201, description = "The session was created", body = SessionView),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 413, description = "The body is over the size limit", body = ErrorBody),
        (status = 409, description = "The caller's tenant has a session with this id", body = ErrorBody),
        (status = 422, description = "A field is malformed or names an unknown agent", body = ErrorBody),
    )
)]
pub async fn create(
    State(state): State<ApiState>,
    caller: Caller,
    OptionalJsonBody(body): OptionalJsonBody<CreateSession>,
) -> Result<Response, ApiError> {
    let body = body.unwrap_or_default();
    let id = match body.id {
        Some(id) => {
            check_id(&id)?;
            id
        }
        None => state.new_session_id()?,
    };
    let agent = match body.agent {
        Some(agent) => {
            let agent = AgentId::new(agent.trim());
            let catalog = state.rt.catalog();
            if catalog.agent(&agent).is_none() {
                let known: Vec<String> = catalog.agent_ids().iter().map(ToString::to_string).collect();
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
    match state.rt.open(agent, caller.options(&id)).await {
        Ok(()) => {}
        Err(concierge::Error::Rejected(StepError::AlreadyOpen)) => {
            return Err(ApiError::field(
                StatusCode::CONFLICT,
                "id",
                format!("a session {id:?} exists already; choose another id or leave it out"),
            ));
        }
        Err(concierge::Error::RunStartFailed(why)) => {
            return Err(ApiError::field(StatusCode::UNPROCESSABLE_ENTITY, "agent", why));
        }
        Err(error) => return Err(error.into()),
    }
    let session = state.session_of(&caller, &id).await?;
    Ok((StatusCode::CREATED, Json(SessionView::of(&session, &id))).into_response())
}

fn check_id(id: &str) -> Result<(), ApiError> {
    if valid_id(id) {
        Ok(())
    } else {
        Err(ApiError::field(
            StatusCode::UNPROCESSABLE_ENTITY,
            "id",
            format!("a session id is {ID_RULE}"),
        ))
    }
}

/// Lists the caller's sessions, the most recently active first, a page at
/// a time (`?limit=`, then `?after=` the `next` of the previous page).
#[utoipa::path(
    get, path = "/api/v1/sessions", tag = "sessions",
    params(SessionListQuery),
    responses(
        (status = 200, description = "A page of the sessions", body = SessionList),
        (status = 400, description = "The query string is malformed", body = ErrorBody),
        (status = 404, description = "`after` names no session of the caller's", body = ErrorBody),
    )
)]
pub async fn list(
    State(state): State<ApiState>,
    caller: Caller,
    QueryParams(query): QueryParams<SessionListQuery>,
) -> Result<Json<SessionList>, ApiError> {
    let limit = match query.limit {
        None => DEFAULT_PAGE,
        Some(n @ 1..=1000) => n as usize,
        Some(_) => {
            return Err(ApiError::field(
                StatusCode::BAD_REQUEST,
                "limit",
                "limit is from 1 to 1000 sessions",
            ));
        }
    };
    // The caller's own conversations; child runs' sessions are reached
    // through their parents'.
    let tenant = caller.tenant.as_deref();
    let mut page = SessionQuery::new().tenant(tenant).limit(limit);
    if let Some(after) = &query.after {
        if !valid_id(after) {
            return Err(ApiError::field(
                StatusCode::BAD_REQUEST,
                "after",
                format!("after is a session id: {ID_RULE}"),
            ));
        }
        page = page.after(SessionId::in_tenant(tenant, after));
    }
    let page = match state.rt.session_page(page).await {
        Ok(page) => page,
        Err(concierge::Error::SessionNotFound(_)) => {
            return Err(ApiError::field(
                StatusCode::NOT_FOUND,
                "after",
                "after names no session of yours (it may have been erased): list again from the first page",
            ));
        }
        Err(error) => return Err(error.into()),
    };
    let sessions: Vec<SessionListItem> = page
        .sessions
        .into_iter()
        .filter_map(|s| {
            let local = s.id.local_in(tenant)?.to_string();
            Some(SessionListItem {
                id: local,
                ..SessionListItem::from(s)
            })
        })
        .collect();
    let next = if page.more {
        sessions.last().map(|s| s.id.clone())
    } else {
        None
    };
    Ok(Json(SessionList { sessions, next }))
}

/// Sessions in a page when the caller does not say.
const DEFAULT_PAGE: usize = 100;

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
pub async fn show(
    State(state): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<SessionView>, ApiError> {
    let session = state.session_of(&caller, &id).await?;
    Ok(Json(SessionView::of(&session, &id)))
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
        (status = 409, description = "A run is in progress, the session has ended, or the run id was used before", body = ErrorBody),
        (status = 429, description = "The tenant has as many runs in progress as it may; retry after the Retry-After seconds", body = ErrorBody),
        (status = 413, description = "The message is too long", body = ErrorBody),
        (status = 422, description = "A field is malformed", body = ErrorBody),
    )
)]
pub async fn post_message(
    State(state): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
    QueryParams(query): QueryParams<WaitQuery>,
    JsonBody(body): JsonBody<PostMessage>,
) -> Result<Response, ApiError> {
    if concierge::trim_blank(&body.text).is_empty() {
        return Err(ApiError::field(
            StatusCode::UNPROCESSABLE_ENTITY,
            "text",
            "the message is empty; say something",
        ));
    }
    state
        .rt
        .check_message_size(body.text.len())
        .map_err(|error| ApiError::from(error).with_field("text"))?;
    if let Some(run) = &body.run_id {
        check_run_id(run)?;
    }
    start(&state, &caller, &id, body.text, body.run_id, body.multitask, query.wait).await
}

fn check_run_id(run: &str) -> Result<(), ApiError> {
    check_id(run).map_err(|_| {
        ApiError::field(
            StatusCode::UNPROCESSABLE_ENTITY,
            "run_id",
            format!("a run id is {ID_RULE}"),
        )
    })
}

/// Starts a run in session `id` with `text`; answers as `post_message` does.
/// The run holds a place under the tenant's cap until it stops.
async fn start(
    state: &ApiState,
    caller: &Caller,
    id: &str,
    text: String,
    run_id: Option<String>,
    multitask: Option<Multitask>,
    wait: bool,
) -> Result<Response, ApiError> {
    state.facts_of(caller, id).await?;
    let permit = state.run_permit(caller)?;
    // A run the client does not name gets a random id; one it names must be new.
    let run = match run_id {
        Some(run) => run,
        None => state.new_run_id()?,
    };
    let mut options = caller.options(id).run_id(run);
    if let Some(policy) = multitask {
        options = options.multitask(policy);
    }
    if wait {
        // Started and waited for in one exchange with the engine.
        let output = state.rt.send(text, options).await;
        drop(permit);
        return Ok((StatusCode::OK, Json(RunOutputView::of(output?, id))).into_response());
    }
    let handle = state.rt.start(text, options).await?;
    let accepted = RunAccepted {
        session_id: id.to_string(),
        run_id: handle.run_id().to_string(),
        after_event_id: handle.first_seq().saturating_sub(1).to_string(),
        events: format!("/api/v1/sessions/{id}/events"),
    };
    tokio::spawn(async move {
        let _ = handle.wait().await;
        drop(permit);
    });
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
        (status = 429, description = "The tenant has as many runs in progress as it may; retry after the Retry-After seconds", body = ErrorBody),
        (status = 413, description = "The body is over the size limit", body = ErrorBody),
        (status = 422, description = "A field is malformed", body = ErrorBody),
    )
)]
pub async fn confirm(
    State(state): State<ApiState>,
    caller: Caller,
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
    let session = SessionView::of(&state.session_of(&caller, &id).await?, &id);
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
    let permit = state.run_permit(&caller)?;
    let output = state
        .rt
        .confirm(caller.session_id(&id), body.call_id, body.fingerprint, decision)
        .await;
    drop(permit);
    Ok(Json(RunOutputView::of(output?, &id)))
}

/// Answers the question a running call of the session asks the person
/// (MCP elicitation): accept with the form's values, decline or cancel.
#[utoipa::path(
    post, path = "/api/v1/sessions/{id}/answer", tag = "sessions",
    params(("id" = String, Path, description = "The session's id")),
    request_body = AnswerRequest,
    responses(
        (status = 200, description = "The run's output once it stops again", body = RunOutputView),
        (status = 400, description = "The body is missing or not JSON", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 409, description = "No question of that call waits for an answer", body = ErrorBody),
        (status = 413, description = "The body is over the size limit", body = ErrorBody),
        (status = 422, description = "The content does not fit the requested form (the message names the field)", body = ErrorBody),
    )
)]
pub async fn answer(
    State(state): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<AnswerRequest>,
) -> Result<Json<RunOutputView>, ApiError> {
    let session = SessionView::of(&state.session_of(&caller, &id).await?, &id);
    let Some(pending) = session.pending_elicitation else {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("session {id:?} is not waiting for an answer to a question"),
        ));
    };
    if pending.call_id.as_str() != body.call_id || pending.question != body.question {
        return Err(ApiError::field(
            StatusCode::CONFLICT,
            "call_id",
            format!(
                "call {:?} (question {}) is not the open question; the open one is call {:?}, question {}",
                body.call_id,
                body.question,
                pending.call_id.as_str(),
                pending.question
            ),
        ));
    }
    let answer = concierge::ElicitationAnswer {
        action: body.action.into(),
        content: body.content,
    };
    let output = state
        .rt
        .answer_question(caller.session_id(&id), pending.call_id, pending.question, answer)
        .await;
    match output {
        Ok(output) => Ok(Json(RunOutputView::of(output, &id))),
        Err(concierge::Error::Rejected(StepError::AnswerRefused { problem })) => Err(ApiError::field(
            StatusCode::UNPROCESSABLE_ENTITY,
            "content",
            format!("the answer does not fit the form: {problem}"),
        )),
        Err(error) => Err(error.into()),
    }
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
        (status = 429, description = "The tenant has as many runs in progress as it may; retry after the Retry-After seconds", body = ErrorBody),
        (status = 413, description = "The body is over the size limit", body = ErrorBody),
        (status = 422, description = "No option has this number, or a field is malformed", body = ErrorBody),
    )
)]
pub async fn choose(
    State(state): State<ApiState>,
    caller: Caller,
    Path(id): Path<String>,
    QueryParams(query): QueryParams<WaitQuery>,
    JsonBody(body): JsonBody<ChooseRequest>,
) -> Result<Response, ApiError> {
    let session = SessionView::of(&state.session_of(&caller, &id).await?, &id);
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
    start(&state, &caller, &id, body.option.to_string(), None, None, query.wait).await
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
    caller: Caller,
    Path(id): Path<String>,
    OptionalJsonBody(body): OptionalJsonBody<EndRequest>,
) -> Result<Json<Option<RunOutputView>>, ApiError> {
    let reason = body
        .and_then(|b| b.reason)
        .unwrap_or_else(|| "ended through the HTTP API".to_string());
    state.facts_of(&caller, &id).await?;
    let output = state.rt.end(caller.session_id(&id), reason).await?;
    Ok(Json(output.map(|output| RunOutputView::of(output, &id))))
}
