//! `POST /v1/chat/completions`: one user message to an agent (or the hub)
//! in a concierge session, answered whole or streamed.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use concierge::EventId;

use super::completion::{ChatCompletion, completion};
use super::error::{OpenAiError, OpenAiErrorBody};
use super::models::{model_ids, target};
use super::request::{ChatCompletionRequest, EMPTY_MODEL};
use super::session::{SESSION_HEADER, resolve, run, start};
use super::stream::{self, StreamSetup};
use super::unix_now;
use crate::ground::body::parse;
use crate::ground::{ApiError, ApiState, Caller};

/// Sends the last user message of `messages` to the agent `model` names
/// (`concierge`: the session's current agent, the hub for a new session) in
/// the session `X-Concierge-Session` names (a new one without it; one that
/// does not exist is created with that id). The response's
/// `X-Concierge-Session` header names the session: send it with the next
/// message to go on with the conversation. When the run waits for the
/// person, the answer is its question ("I'll ... Proceed?", or numbered
/// options), and the next message ("yes", "2") answers it.
#[utoipa::path(
    post, path = "/v1/chat/completions", tag = "openai",
    params(
        ("X-Concierge-Session" = Option<String>, Header, description = "The session (1 to 128 letters, digits, '-', '_' or '.'); without it a new session starts"),
    ),
    request_body = ChatCompletionRequest,
    responses(
        (status = 200, description = "The answer: a `chat.completion`, or with `stream` Server-Sent Events of `chat.completion.chunk` objects ending with `data: [DONE]`",
            headers(("X-Concierge-Session" = String, description = "The session's id")),
            content(
                (ChatCompletion = "application/json"),
                (crate::ground::sse::SseMessage = "text/event-stream"),
            )
        ),
        (status = 400, description = "A field is malformed or not supported; `param` names it", body = OpenAiErrorBody),
        (status = 404, description = "No model of that name; the message lists the models", body = OpenAiErrorBody),
        (status = 409, description = "The session is busy with another run, or has ended", body = OpenAiErrorBody),
        (status = 413, description = "The request or the message is too long", body = OpenAiErrorBody),
    )
)]
pub async fn completions(
    State(state): State<ApiState>,
    caller: Caller,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, OpenAiError> {
    let body = body.map_err(unreadable)?;
    let request: ChatCompletionRequest = parse(&body).map_err(missing_field_param)?;
    // The model first: a request to no model is a 404 whatever else it says.
    let model = request.model.trim();
    let target = match target(&state.rt, model) {
        Some(target) => target,
        None if model.is_empty() => return Err(OpenAiError::invalid("model", EMPTY_MODEL)),
        None => {
            return Err(OpenAiError::new(
                StatusCode::NOT_FOUND,
                format!(
                    "there is no model {model:?}; the models are: {}",
                    model_ids(&state.rt).join(", ")
                ),
            )
            .param("model")
            .code("model_not_found"));
        }
    };
    let turn = request.into_turn()?;
    state
        .rt
        .check_message_size(turn.text.len())
        .map_err(|error| OpenAiError::from(error).param("messages"))?;
    let conversation = resolve(&state, &caller, &headers, &target).await?;
    let session = HeaderValue::from_str(&conversation.local).map_err(|_| {
        OpenAiError::invalid(
            "X-Concierge-Session",
            "the session id cannot be sent back in a header; use letters, digits, '-', '_' or '.'",
        )
    })?;
    // The engine streams a model's deltas only to a session someone listens
    // to: listen before the run starts (the stream then reads the run's
    // events from its first one).
    let listening = turn.stream.then(|| {
        state
            .rt
            .subscribe_after(conversation.id.clone(), EventId::durable(u64::MAX))
    });
    let header = (HeaderName::from_static(SESSION_HEADER), session);
    let created = unix_now();
    if !turn.stream {
        let output = run(&state, &caller, &conversation, &turn).await?;
        let answer: ChatCompletion = completion(&output, &conversation.local, &turn.model, created);
        return Ok(([header], Json(answer)).into_response());
    }
    let handle = start(&state, &caller, &conversation, &turn).await?;
    let setup = StreamSetup {
        session: conversation.local.clone(),
        model: turn.model,
        created,
        include_usage: turn.include_usage,
    };
    let mut stopping = state.stopping();
    let stopped = async move {
        let _ = stopping.wait_for(|stop| *stop).await;
    };
    Ok(([header], stream::respond(handle, setup, listening, stopped)).into_response())
}

/// A body error said for a person: serde names a missing field in its
/// message only (`messages[0]`: "missing field `role`"), so the param is
/// then the field itself (`messages[0].role`); and Rust's number types are
/// said in words.
fn missing_field_param(error: ApiError) -> OpenAiError {
    let mut error = OpenAiError::from(error);
    let message = &error.body.error.message;
    let missing = message
        .find("missing field `")
        .map(|at| &message[at + "missing field `".len()..])
        .and_then(|rest| rest.find('`').map(|end| rest[..end].to_string()));
    if let (Some(param), Some(name)) = (&error.body.error.param, missing)
        && param != &name
        && !param.ends_with(&format!(".{name}"))
    {
        error.body.error.param = Some(format!("{param}.{name}"));
    }
    let mut message = error.body.error.message.clone();
    for (rust, words) in [
        ("expected f64", "expected a number"),
        ("expected f32", "expected a number"),
        ("expected u64", "expected a whole number"),
        ("expected u32", "expected a whole number"),
        ("expected i64", "expected a whole number"),
    ] {
        message = message.replace(rust, words);
    }
    if let Some(at) = message.find("expected struct ") {
        let rest = &message[at + "expected struct ".len()..];
        let end = rest.find(|c: char| !c.is_alphanumeric()).unwrap_or(rest.len());
        message = format!("{}expected an object{}", &message[..at], &rest[end..]);
    }
    error.body.error.message = message;
    error
}

fn unreadable(rejection: BytesRejection) -> OpenAiError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        OpenAiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the request body is over the size limit; send a smaller one",
        )
        .param("messages")
    } else {
        OpenAiError::new(
            rejection.status(),
            format!("the request body could not be read: {}", rejection.body_text()),
        )
    }
}
