//! The A2A operations, the same for both bindings: a message starts a task
//! (a run) in a context (a session) or answers the question its task waits
//! on; a task is read, listed, cancelled. Every id a client names is looked
//! up in its own tenant's id space: anything else is "task not found".

use a2a::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, ListTasksResponse, SendMessageRequest, Task, TaskState,
};
use concierge::core::Decision;
use concierge::{AgentId, EventId, Session, SessionId, SessionQuery, StreamCursor};

use super::answer::{self, Reading};
use super::card::Door;
use super::error::A2aError;
use super::ids::TaskRef;
use super::params::check_message;
use super::record::{Ask, SessionLog, TASK_LABEL};
use super::task::TaskView;
use crate::ground::ids::{ID_RULE, valid_id};
use crate::ground::{ApiState, Caller};

/// Who asks, through which door.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    /// The server's state.
    pub state: &'a ApiState,
    /// The caller (its tenant's id space).
    pub caller: &'a Caller,
    /// The card's agent.
    pub door: &'a Door,
}

/// A task found: its session, the session's log and its id.
pub struct Found {
    /// The session (the task's context).
    pub session: Session,
    /// The session's runs.
    pub log: SessionLog,
    /// The task.
    pub task: TaskRef,
}

impl Found {
    /// The task's view.
    pub fn view(&self) -> Result<TaskView<'_>, A2aError> {
        TaskView::of(&self.log, &self.task).ok_or_else(|| A2aError::TaskNotFound(self.task.id()))
    }
}

/// The caller's task `id`, or "task not found" (for another tenant's too).
pub async fn find(ctx: Ctx<'_>, id: &str) -> Result<Found, A2aError> {
    let not_found = || A2aError::TaskNotFound(id.to_string());
    let task = TaskRef::parse(id).ok_or_else(not_found)?;
    let session = match ctx.state.maybe_session_of(ctx.caller, &task.context).await {
        Ok(Some(session)) => session,
        Ok(None) => return Err(not_found()),
        Err(error) if error.status == axum::http::StatusCode::NOT_FOUND => return Err(not_found()),
        Err(error) => return Err(error.into()),
    };
    let log = SessionLog::read(ctx.state.runtime(), &session).await?;
    let found = Found { session, log, task };
    found.view().map_err(|_| not_found())?;
    Ok(found)
}

/// GetTask.
pub async fn get(ctx: Ctx<'_>, request: GetTaskRequest) -> Result<Task, A2aError> {
    let history = history_length(request.history_length, "historyLength")?;
    let found = find(ctx, &request.id).await?;
    Ok(found.view()?.to_task(history, true))
}

/// The most tasks one ListTasks page holds.
const MAX_PAGE: usize = 100;
/// A page's size when the request names none.
const DEFAULT_PAGE: usize = 50;

/// ListTasks: the caller's tasks (of one context, or all), the most
/// recently changed first, in pages.
pub async fn list(ctx: Ctx<'_>, request: ListTasksRequest) -> Result<ListTasksResponse, A2aError> {
    let history = history_length(request.history_length, "historyLength")?;
    let page_size = match request.page_size {
        None => DEFAULT_PAGE,
        Some(n) if n >= 1 && n as usize <= MAX_PAGE => n as usize,
        Some(_) => {
            return Err(A2aError::field(
                "pageSize",
                format!("a page holds 1 to {MAX_PAGE} tasks"),
            ));
        }
    };
    let offset = match request.page_token.as_deref().filter(|t| !t.is_empty()) {
        None => 0,
        Some(token) => token.parse::<usize>().map_err(|_| {
            A2aError::field(
                "pageToken",
                "the page token is not one a ListTasks answer gave; leave it out for the first page",
            )
        })?,
    };
    let contexts: Vec<(String, Session)> = match &request.context_id {
        Some(context) if !context.is_empty() => match ctx.state.maybe_session_of(ctx.caller, context).await {
            Ok(Some(session)) => vec![(context.clone(), session)],
            Ok(None) => Vec::new(),
            Err(error) if error.status == axum::http::StatusCode::NOT_FOUND => Vec::new(),
            Err(error) => return Err(error.into()),
        },
        _ => {
            let mut sessions = Vec::new();
            let mine = SessionQuery::new().tenant(ctx.caller.tenant.as_deref());
            for summary in ctx.state.runtime().every_session(mine).await? {
                let Some(local) = summary.id.local_in(ctx.caller.tenant.as_deref()).map(str::to_string) else {
                    continue;
                };
                if let Ok(Some(session)) = ctx.state.maybe_session_of(ctx.caller, &local).await {
                    sessions.push((local, session));
                }
            }
            sessions
        }
    };
    let after = request.status_timestamp_after.map(|t| t.timestamp_millis());
    let wanted = request.status.clone().filter(|s| *s != TaskState::Unspecified);
    let mut tasks: Vec<(u64, Task)> = Vec::new();
    for (context, session) in &contexts {
        let log = SessionLog::read(ctx.state.runtime(), session).await?;
        for view in TaskView::all(&log, context) {
            if wanted.as_ref().is_some_and(|w| *w != view.state()) {
                continue;
            }
            if after.is_some_and(|after| (view.updated() as i64) <= after) {
                continue;
            }
            let task = view.to_task(history, request.include_artifacts.unwrap_or(false));
            tasks.push((view.updated(), task));
        }
    }
    tasks.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
    let total = tasks.len();
    let page: Vec<Task> = tasks.into_iter().skip(offset).take(page_size).map(|(_, t)| t).collect();
    let next = offset + page.len();
    Ok(ListTasksResponse {
        page_size: page.len() as i32,
        next_page_token: if next < total { next.to_string() } else { String::new() },
        total_size: total as i32,
        tasks: page,
    })
}

/// CancelTask: ends the task's run in progress (working, or parked on a
/// confirmation); the context goes on.
pub async fn cancel(ctx: Ctx<'_>, request: CancelTaskRequest) -> Result<Task, A2aError> {
    let found = find(ctx, &request.id).await?;
    let view = found.view()?;
    let state = view.state();
    let running =
        view.last().status.is_none() || matches!(view.ask(), Some(Ask::Confirmation(_) | Ask::Elicitation(_)));
    if state.is_terminal() {
        return Err(A2aError::TaskNotCancelable(format!(
            "task {:?} has ended already ({}); there is nothing to cancel",
            found.task.id(),
            state_words(&state)
        )));
    }
    if !running {
        return Err(A2aError::TaskNotCancelable(format!(
            "task {:?} has no run in progress: its run ended with a question, which the context's next message leaves",
            found.task.id()
        )));
    }
    let active = found.session.active_run().map(ToString::to_string);
    if active.as_deref() != Some(view.last().run.as_str()) {
        return Err(A2aError::TaskNotCancelable(format!(
            "task {:?} has no run in progress any more",
            found.task.id()
        )));
    }
    ctx.state
        .runtime()
        .cancel_run(found.session.id().clone(), "cancelled through A2A")
        .await?;
    let again = find(ctx, &request.id).await?;
    Ok(again.view()?.to_task(None, true))
}

/// The state in words, for error messages.
pub fn state_words(state: &TaskState) -> &'static str {
    match state {
        TaskState::Completed => "completed",
        TaskState::Failed => "failed",
        TaskState::Canceled => "canceled",
        TaskState::Rejected => "rejected",
        TaskState::InputRequired => "waiting for your answer",
        TaskState::AuthRequired => "waiting for authorization",
        TaskState::Working | TaskState::Submitted | TaskState::Unspecified => "working",
    }
}

/// A `historyLength` as a count (`None`: all).
fn history_length(n: Option<i32>, field: &str) -> Result<Option<usize>, A2aError> {
    match n {
        None => Ok(None),
        Some(n) if n >= 0 => Ok(Some(n as usize)),
        Some(_) => Err(A2aError::field(field, "the history length is 0 or more")),
    }
}

/// What a message does, once read.
pub enum Turn {
    /// Starts a run with `text`: a new task, or the next run of one that asked.
    Start {
        /// The session, in the tenant's id space.
        session: SessionId,
        /// The task the run is (or answers).
        task: TaskRef,
        /// The run's id (`None` when the text answers a parked call: the parked run goes on).
        run: Option<String>,
        /// Whether the run answers a question of its task (it carries the task's label).
        answers: bool,
        /// The agent a new session starts with.
        agent: Option<AgentId>,
        /// Whether the session is new (nothing to follow from).
        new: bool,
        /// What the person says.
        text: String,
    },
    /// Answers the parked call with a decision (quoted call id and fingerprint).
    Confirm {
        /// The session.
        session: SessionId,
        /// The task.
        task: TaskRef,
        /// The call.
        call_id: String,
        /// Its fingerprint.
        fingerprint: String,
        /// The decision.
        decision: Decision,
    },
    /// Answers the question a running call asks (quoted call and question).
    Answer {
        /// The session.
        session: SessionId,
        /// The task.
        task: TaskRef,
        /// The call.
        call_id: String,
        /// Which of its questions.
        question: u32,
        /// The answer.
        answer: concierge::ElicitationAnswer,
    },
}

impl Turn {
    /// The task the turn is for.
    pub fn task(&self) -> &TaskRef {
        match self {
            Turn::Start { task, .. } | Turn::Confirm { task, .. } | Turn::Answer { task, .. } => task,
        }
    }

    /// The session it happens in.
    pub fn session(&self) -> &SessionId {
        match self {
            Turn::Start { session, .. } | Turn::Confirm { session, .. } | Turn::Answer { session, .. } => session,
        }
    }
}

/// Reads a SendMessage: a new task in a new or existing context, or the
/// answer to the question the named task waits on.
pub async fn read_message(ctx: Ctx<'_>, request: &SendMessageRequest) -> Result<Turn, A2aError> {
    let message = &request.message;
    let said = check_message(message)?;
    if let Some(task_id) = message.task_id.as_deref().filter(|t| !t.is_empty()) {
        return read_answer(ctx, request, task_id, said).await;
    }
    if !said.data.is_empty() && said.text.trim().is_empty() {
        return Err(A2aError::field(
            "message.parts",
            "a new task starts with words (a text part); a data part answers the question a task waits on, with the message's taskId set",
        ));
    }
    let text = said.text;
    if text.trim().is_empty() {
        return Err(A2aError::field("message.parts", "the message is empty; say something"));
    }
    ctx.state
        .runtime()
        .check_message_size(text.len())
        .map_err(|error| A2aError::from(error).with_field("message.parts"))?;
    let (context, existing) = match message.context_id.as_deref().filter(|c| !c.is_empty()) {
        Some(context) => {
            if !valid_id(context) {
                return Err(A2aError::field(
                    "message.contextId",
                    format!("a context id is {ID_RULE}; leave it out to start a new context"),
                ));
            }
            let existing = match ctx.state.maybe_session_of(ctx.caller, context).await {
                Ok(found) => found,
                // Another tenant's context of this name is not the caller's:
                // the caller cannot use the name, and learns nothing else.
                Err(error) if error.status == axum::http::StatusCode::NOT_FOUND => {
                    return Err(A2aError::field(
                        "message.contextId",
                        format!("context {context:?} cannot be used; leave contextId out to start a new context"),
                    ));
                }
                Err(error) => return Err(error.into()),
            };
            (context.to_string(), existing)
        }
        None => (ctx.state.new_session_id()?, None),
    };
    if let Some(session) = &existing {
        if let Some(pending) = session.pending_confirmation() {
            let log = SessionLog::read(ctx.state.runtime(), session).await?;
            let task = log
                .runs
                .iter()
                .find(|r| r.run == pending.run_id.as_str())
                .map(|r| TaskRef::new(&context, &r.task).id())
                .unwrap_or_default();
            return Err(A2aError::Unsupported(format!(
                "context {context:?} waits for an answer to task {task:?}: answer it with the message's taskId set to {task:?}, or cancel it"
            )));
        }
    }
    let agent = match (ctx.door, &existing) {
        (Door::Agent(agent), None) => Some(AgentId::new(agent.as_str())),
        _ => None,
    };
    let run = ctx.state.new_run_id()?;
    Ok(Turn::Start {
        session: ctx.caller.session_id(&context),
        task: TaskRef::new(context, &run),
        run: Some(run),
        answers: false,
        agent,
        new: existing.is_none(),
        text,
    })
}

/// Reads a message sent to task `task_id`: the answer to its question.
async fn read_answer(
    ctx: Ctx<'_>,
    request: &SendMessageRequest,
    task_id: &str,
    said: super::params::Said,
) -> Result<Turn, A2aError> {
    let found = find(ctx, task_id).await?;
    if let Some(context) = request.message.context_id.as_deref().filter(|c| !c.is_empty()) {
        if context != found.task.context {
            return Err(A2aError::field(
                "message.contextId",
                format!(
                    "task {task_id:?} is of context {:?}; leave contextId out or send that one",
                    found.task.context
                ),
            ));
        }
    }
    let view = found.view()?;
    let state = view.state();
    if state != TaskState::InputRequired {
        let what = if state.is_terminal() {
            format!(
                "task {task_id:?} has ended ({}); send a message without taskId (with contextId {:?}) to start a new task in its context",
                state_words(&state),
                found.task.context
            )
        } else {
            format!("task {task_id:?} is working and waits for nothing; wait for it, or cancel it")
        };
        return Err(A2aError::Unsupported(what));
    }
    let session = found.session.id().clone();
    let task = found.task.clone();
    let reading = answer::read(view.ask(), &said)?;
    let start = |text: String, run: Option<String>| -> Result<Turn, A2aError> {
        ctx.state
            .runtime()
            .check_message_size(text.len())
            .map_err(|error| A2aError::from(error).with_field("message.parts"))?;
        Ok(Turn::Start {
            session: session.clone(),
            task: task.clone(),
            answers: run.is_some(),
            run,
            agent: None,
            new: false,
            text,
        })
    };
    match reading {
        // Words for a parked call or a running call's question: the session
        // reads them (yes, no, a change; a form's values), and the same run goes on.
        Reading::Words(text) if matches!(view.ask(), Some(Ask::Confirmation(_) | Ask::Elicitation(_))) => {
            start(text, None)
        }
        Reading::Words(text) => start(text, Some(ctx.state.new_run_id()?)),
        Reading::Decide {
            call_id,
            fingerprint,
            decision,
        } => Ok(Turn::Confirm {
            session,
            task,
            call_id,
            fingerprint,
            decision,
        }),
        Reading::Answer {
            call_id,
            question,
            answer,
        } => Ok(Turn::Answer {
            session,
            task,
            call_id,
            question,
            answer,
        }),
    }
}

/// A turn under way: the task, and the session's stream from before it began.
pub struct Begun {
    /// The task.
    pub task: TaskRef,
    /// The session.
    pub session: SessionId,
    /// Where the session's stream was before the turn began.
    pub place: StreamCursor,
    /// The runs of the task so far (a stream follows these, and those
    /// started later with the task's label).
    pub runs: Vec<String>,
}

/// Begins a turn: takes the session's place, then starts the run (or
/// answers the parked call). The run holds a place under the tenant's cap
/// until it stops.
pub async fn begin(ctx: Ctx<'_>, turn: Turn) -> Result<Begun, A2aError> {
    let rt = ctx.state.runtime().clone();
    let session = turn.session().clone();
    let task = turn.task().clone();
    let new = matches!(turn, Turn::Start { new: true, .. });
    let place = if new {
        StreamCursor::from(EventId::durable(0))
    } else {
        rt.place(session.clone()).await?
    };
    let mut runs = vec![task.run.clone()];
    if !new {
        let state = rt.session(session.clone()).await?;
        let log = SessionLog::read(&rt, &state).await?;
        runs = log.task_runs(&task.run).iter().map(|r| r.run.clone()).collect();
        if runs.is_empty() {
            runs.push(task.run.clone());
        }
    }
    let permit = ctx.state.run_permit(ctx.caller)?;
    match turn {
        Turn::Start {
            run,
            answers,
            agent,
            text,
            ..
        } => {
            let mut options = ctx.caller.options_for(session.clone());
            if let Some(run) = &run {
                options = options.run_id(run.clone());
                runs.push(run.clone());
            }
            if answers {
                options = options.label(TASK_LABEL, task.run.clone());
            }
            let handle = match agent {
                Some(agent) => rt.client(agent)?.start(text, options).await?,
                None => rt.start(text, options).await?,
            };
            let started = handle.run_id().to_string();
            if !runs.contains(&started) {
                runs.push(started);
            }
            tokio::spawn(async move {
                let _ = handle.wait().await;
                drop(permit);
            });
        }
        Turn::Confirm {
            call_id,
            fingerprint,
            decision,
            ..
        } => {
            let stop = rt
                .engine()
                .confirm(session.clone(), call_id.into(), fingerprint, decision)
                .await
                .map_err(|error| A2aError::from(error).with_field("message.parts"))?;
            tokio::spawn(async move {
                let _ = stop.output().await;
                drop(permit);
            });
        }
        Turn::Answer {
            call_id,
            question,
            answer,
            ..
        } => {
            let stop = rt
                .engine()
                .answer_question(session.clone(), call_id.into(), question, answer)
                .await
                .map_err(|error| A2aError::from(error).with_field("message.parts"))?;
            tokio::spawn(async move {
                let _ = stop.output().await;
                drop(permit);
            });
        }
    }
    Ok(Begun {
        task,
        session,
        place,
        runs,
    })
}

/// The task of a turn just begun, as a stream or a quick answer starts
/// with it: working (its run's stop comes in the stream, which follows the
/// session from before the turn began), with its history so far.
pub async fn snapshot(ctx: Ctx<'_>, begun: &Begun, history: Option<usize>) -> Result<Task, A2aError> {
    let id = begun.task.id();
    let working = a2a::TaskStatus {
        state: TaskState::Working,
        message: None,
        timestamp: Some(chrono::Utc::now()),
    };
    match find(ctx, &id).await {
        Ok(found) => Ok(Task {
            status: working,
            ..found.view()?.to_task(history, false)
        }),
        Err(A2aError::TaskNotFound(_)) => Ok(Task {
            id,
            context_id: begun.task.context.clone(),
            status: working,
            artifacts: None,
            history: None,
            metadata: None,
        }),
        Err(error) => Err(error),
    }
}
