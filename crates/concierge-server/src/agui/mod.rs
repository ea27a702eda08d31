//! The AG-UI endpoint, `POST /api/v1/agui`: the open agent–UI event protocol
//! (AG-UI 1.0, as `@ag-ui/core`/`@ag-ui/client` 1.0.0 define it), so that
//! AG-UI clients (CopilotKit-style frontends, `HttpAgent`) talk to concierge's
//! agents unchanged.
//!
//! The client posts a `RunAgentInput` (JSON); the answer is
//! `text/event-stream`, one AG-UI event per `data:` line. A thread is a
//! concierge session: a new `threadId` starts a session (with the agent
//! `forwardedProps.agent` or `?agent=` names, else the default agent), and
//! the last `user` message of `messages` is what the agent is asked.
//!
//! A run that parks on a confirmation or a choice finishes with an interrupt
//! outcome; the thread's next input answers it in `resume` (see
//! [`interrupts`]). A resume the server cannot accept (expired, answered
//! already, not the call that waits, unclear choice) is refused with a lone
//! `RUN_ERROR` and nothing runs. A malformed input is a 4xx naming the field,
//! as everywhere in the API.

pub mod events;
pub mod input;
pub mod interrupts;
pub mod messages;
pub mod resume;
pub mod stream;
pub mod thread;
pub mod translate;

use axum::Router;
use axum::extract::{FromRef, Query, State};
use axum::response::sse::{KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use concierge::{EventId, StreamCursor};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::IntoParams;

use crate::ground::body::JsonBody;
use crate::ground::{ApiError, ApiState, Caller, ErrorBody};
use events::{AguiEvent, ErrorCode};
use input::RunAgentInput;
pub use interrupts::{DEFAULT_INTERRUPT_TTL, Interrupts};
use interrupts::{Parked, Refusal};
use resume::Answer;
use stream::{Follow, RunStream};
use thread::Thread;

/// The endpoint's route, `/agui`, relative to `/api/v1`. Its handler takes
/// the state every front door shares and AG-UI's own interrupt ledger.
pub fn router<S>() -> Router<S>
where
    S: Clone + Send + Sync + 'static,
    ApiState: FromRef<S>,
    Interrupts: FromRef<S>,
{
    Router::new().route("/agui", post(run))
}

/// The endpoint's query parameters.
#[derive(Debug, Default, Deserialize, IntoParams)]
pub struct AguiQuery {
    /// The agent that takes a new thread (`forwardedProps.agent` says the same in the body).
    pub agent: Option<String>,
}

/// Runs the thread's agent on the input's last user message, or resumes the
/// thread's parked run with the input's `resume`, and streams the run's
/// AG-UI events.
#[utoipa::path(
    post, path = "/api/v1/agui", tag = "agui",
    params(AguiQuery),
    request_body(content = RunAgentInput, description = "AG-UI's RunAgentInput"),
    responses(
        (status = 200, description = "AG-UI events as Server-Sent Events: each `data:` line is one event as JSON (RUN_STARTED ... RUN_FINISHED, or a lone RUN_ERROR for a refused resume)", content_type = "text/event-stream", body = crate::ground::sse::SseMessage),
        (status = 400, description = "The body is not JSON", body = ErrorBody),
        (status = 409, description = "A run is in progress in the thread, or the thread's session has ended", body = ErrorBody),
        (status = 404, description = "The thread is another tenant's", body = ErrorBody),
        (status = 429, description = "The tenant has as many runs in progress as it may; retry after the Retry-After seconds", body = ErrorBody),
        (status = 413, description = "The body or the message is too large", body = ErrorBody),
        (status = 422, description = "A field is missing or malformed, or names an unknown agent", body = ErrorBody),
    )
)]
pub async fn run(
    State(state): State<ApiState>,
    State(interrupts): State<Interrupts>,
    caller: Caller,
    Query(query): Query<AguiQuery>,
    JsonBody(input): JsonBody<RunAgentInput>,
) -> Result<Response, ApiError> {
    input.check()?;
    let agent = match query.agent {
        Some(agent) => Some((agent, "agent")),
        None => match input.forwarded_agent() {
            Ok(agent) => agent.map(|agent| (agent, "forwardedProps.agent")),
            Err(error) => return Ok(refuse_input(error)),
        },
    };
    let thread = match thread::resolve(&state, &caller, &input.thread_id, agent).await {
        Ok(thread) => thread,
        Err(error) if error.status == axum::http::StatusCode::UNPROCESSABLE_ENTITY => return Ok(refuse_input(error)),
        Err(error) => return Err(error),
    };
    let resume = input.resume.clone().unwrap_or_default();
    let parked = match &thread {
        Thread::Existing(session) => Parked::of(session),
        _ => None,
    };
    if !resume.is_empty() {
        return answer(&state, &interrupts, &caller, &input, thread, parked.as_ref(), &resume).await;
    }
    if let Some(parked) = parked {
        return Ok(respond_with(waiting(&interrupts, &thread, &input.thread_id, &parked)));
    }
    let text = match input.new_message() {
        Ok(text) => text,
        Err(error) => return Ok(refuse_input(error)),
    };
    start(&state, &interrupts, &caller, &input, thread, text).await
}

/// A well-formed input that gives nothing to run, refused the AG-UI way: a
/// lone `RUN_ERROR` saying why, naming the field in its metadata.
fn refuse_input(error: ApiError) -> Response {
    respond_with(AguiEvent::RunError {
        message: error.body.error,
        code: ErrorCode::InvalidInput,
        metadata: Some(json!({ "field": error.body.field })),
    })
}

/// The thread waits for an answer and the input has none: refused, with the
/// interrupt to answer (AG-UI: pending interrupts block new input).
fn waiting(interrupts: &Interrupts, thread: &Thread, thread_id: &str, parked: &Parked) -> AguiEvent {
    let interrupt = stream::raise(interrupts, thread.id(), thread_id, parked);
    AguiEvent::RunError {
        message: format!(
            "this thread waits for an answer to \"{}\"; answer interrupt {} in the input's resume",
            interrupt.message, interrupt.id
        ),
        code: ErrorCode::InterruptPending,
        metadata: Some(json!({ "interrupts": [interrupt] })),
    }
}

/// Answers the parked call with the resume, or refuses it.
async fn answer(
    state: &ApiState,
    interrupts: &Interrupts,
    caller: &Caller,
    input: &RunAgentInput,
    thread: Thread,
    parked: Option<&Parked>,
    resume: &[input::ResumeEntry],
) -> Result<Response, ApiError> {
    let answers: Vec<(String, Option<String>)> = resume
        .iter()
        .map(|entry| (entry.interrupt_id.clone(), entry.fingerprint()))
        .collect();
    let read = |id: &str, parked: &Parked| -> Result<Answer, Refusal> {
        match resume.iter().find(|entry| entry.interrupt_id == id) {
            Some(entry) => resume::read(entry, parked),
            None => Err(Refusal {
                code: ErrorCode::ResumeIncomplete,
                message: format!("the resume does not answer interrupt {id}"),
            }),
        }
    };
    let (answer, parked) = match interrupts.answer(thread.id(), parked, &answers, read) {
        Ok(answered) => answered,
        Err(refusal) => return Ok(respond(stream::refused(refusal))),
    };
    let Thread::Existing(session) = thread else {
        return Ok(respond(stream::refused(Refusal {
            code: ErrorCode::NothingToResume,
            message: "this thread has no run to resume".to_string(),
        })));
    };
    match (answer, parked) {
        (Answer::Confirm(decision), Parked::Confirmation(pending)) => {
            let permit = state.run_permit(caller)?;
            let run = RunStream {
                permit: Some(permit),
                rt: state.runtime().clone(),
                interrupts: interrupts.clone(),
                thread: session.id().clone(),
                thread_id: input.thread_id.clone(),
                run_id: input.run_id.clone(),
                state: blackboard(Some(&session)),
                messages: session.history().len(),
                client_messages: input.user_messages(),
                stopping: state.stopping(),
            };
            let follow = Follow::Confirm {
                after: state.runtime().place(session.id().clone()).await?,
                call_id: pending.call_id,
                fingerprint: pending.fingerprint,
                decision,
            };
            Ok(respond(run.into_sse(follow)))
        }
        (Answer::Choose(option), _) => {
            start(
                state,
                interrupts,
                caller,
                input,
                Thread::Existing(session),
                option.to_string(),
            )
            .await
        }
        (Answer::Elicit(answer), Parked::Question(pending)) => {
            let permit = state.run_permit(caller)?;
            let run = RunStream {
                permit: Some(permit),
                rt: state.runtime().clone(),
                interrupts: interrupts.clone(),
                thread: session.id().clone(),
                thread_id: input.thread_id.clone(),
                run_id: input.run_id.clone(),
                state: blackboard(Some(&session)),
                messages: session.history().len(),
                client_messages: input.user_messages(),
                stopping: state.stopping(),
            };
            let follow = Follow::Answer {
                after: state.runtime().place(session.id().clone()).await?,
                call_id: pending.call_id,
                question: pending.question,
                answer,
            };
            Ok(respond(run.into_sse(follow)))
        }
        (Answer::Elicit(_), _) | (Answer::Confirm(_), Parked::Question(_)) => Ok(respond(stream::refused(Refusal {
            code: ErrorCode::ResumeIncomplete,
            message: "the resume does not answer what the thread waits for".to_string(),
        }))),
        (Answer::NoChoice, _) | (Answer::Confirm(_), Parked::Choice(_)) => {
            start(
                state,
                interrupts,
                caller,
                input,
                Thread::Existing(session),
                resume::NO_CHOICE.to_string(),
            )
            .await
        }
    }
}

/// Starts a run of the thread with `text` and streams it.
async fn start(
    state: &ApiState,
    interrupts: &Interrupts,
    caller: &Caller,
    input: &RunAgentInput,
    thread: Thread,
    text: String,
) -> Result<Response, ApiError> {
    state
        .runtime()
        .check_message_size(text.len())
        .map_err(|error| ApiError::from(error).with_field("messages"))?;
    let multitask = match input.forwarded_multitask() {
        Ok(policy) => policy,
        Err(error) => return Ok(refuse_input(error)),
    };
    let rt = state.runtime();
    let permit = state.run_permit(caller)?;
    // The client waits on the stream: a message for a busy thread is
    // queued unless it asks otherwise (or the agent says so).
    let mut options = caller.options_for(thread.id().clone()).caller_waits();
    if let Some(policy) = multitask {
        options = options.multitask(policy);
    }
    let (state_before, messages) = match &thread {
        Thread::Existing(session) => (blackboard(Some(session)), session.history().len()),
        _ => (blackboard(None), 0),
    };
    // Subscribed before the run starts, so that its live model deltas reach the client.
    let after = match &thread {
        Thread::Existing(session) => session.last_seq(),
        _ => 0,
    };
    // From the stream's place now: a child that asked the question answered
    // here goes on in the same stream.
    let place = match &thread {
        Thread::Existing(_) => rt.place(thread.id().clone()).await?,
        _ => StreamCursor::from(EventId::durable(after)),
    };
    let events = rt
        .follow(thread.id().clone(), place)
        .map(|item| item.map(|(event, _)| event))
        .boxed();
    let handle = match &thread {
        Thread::New { agent: Some(agent), .. } => rt.client(agent.clone())?.start(text, options).await?,
        _ => rt.start(text, options).await?,
    };
    let first_seq = handle.first_seq();
    // The run holds its place under the tenant's cap until it stops.
    tokio::spawn(async move {
        let _ = handle.wait().await;
        drop(permit);
    });
    let run = RunStream {
        permit: None,
        rt: rt.clone(),
        interrupts: interrupts.clone(),
        thread: thread.id().clone(),
        thread_id: input.thread_id.clone(),
        run_id: input.run_id.clone(),
        state: state_before,
        messages,
        client_messages: input.user_messages(),
        stopping: state.stopping(),
    };
    let follow = Follow::Started { events, first_seq };
    Ok(respond(run.into_sse(follow)))
}

/// The session's blackboard as the AG-UI state (an empty one for a new thread).
fn blackboard(session: Option<&concierge::Session>) -> Value {
    let value = match session {
        Some(session) => serde_json::to_value(session.blackboard()),
        None => serde_json::to_value(concierge::core::Blackboard::default()),
    };
    value.unwrap_or(Value::Null)
}

fn respond_with(event: AguiEvent) -> Response {
    respond(stream::single(event))
}

fn respond(
    events: impl futures::Stream<Item = Result<axum::response::sse::Event, std::convert::Infallible>> + Send + 'static,
) -> Response {
    Sse::new(events).keep_alive(KeepAlive::default()).into_response()
}
