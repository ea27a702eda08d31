//! The operations that follow a task: SendMessage (waiting for the task
//! to stop unless asked to return at once), SendStreamingMessage and
//! SubscribeToTask, on top of [`ops`] and [`stream`].

use a2a::{SendMessageRequest, SendMessageResponse, Task, TaskState};
use concierge::StreamCursor;
use futures::StreamExt;
use futures::channel::mpsc;

use super::error::A2aError;
use super::ops::{self, Begun, Ctx};
use super::stream::{self, Follow, Item};

/// How much history a SendMessage's answer carries (`configuration.historyLength`).
fn history(request: &SendMessageRequest) -> Result<Option<usize>, A2aError> {
    match request.configuration.as_ref().and_then(|c| c.history_length) {
        None => Ok(None),
        Some(n) if n >= 0 => Ok(Some(n as usize)),
        Some(_) => Err(A2aError::field(
            "configuration.historyLength",
            "the history length is 0 or more",
        )),
    }
}

/// Follows a turn just begun.
async fn follow(ctx: Ctx<'_>, begun: Begun, history: Option<usize>) -> Result<mpsc::Receiver<Item>, A2aError> {
    let first = ops::snapshot(ctx, &begun, history).await?;
    Ok(stream::spawn(Follow {
        state: ctx.state.clone(),
        caller: ctx.caller.clone(),
        door: ctx.door.clone(),
        first,
        begun,
        history,
    }))
}

/// SendMessage: starts the task (or answers it) and, unless
/// `configuration.returnImmediately`, waits until it ends or waits for the
/// person.
pub async fn send(ctx: Ctx<'_>, request: SendMessageRequest) -> Result<SendMessageResponse, A2aError> {
    let history = history(&request)?;
    let immediately = request
        .configuration
        .as_ref()
        .and_then(|c| c.return_immediately)
        .unwrap_or(false);
    check_push(&request)?;
    let turn = ops::read_message(ctx, &request).await?;
    let begun = ops::begin(ctx, turn).await?;
    push_with(ctx, &request, &begun).await?;
    let id = begun.task.id();
    if immediately {
        return Ok(SendMessageResponse::Task(ops::snapshot(ctx, &begun, history).await?));
    }
    let mut items = follow(ctx, begun, history).await?;
    while let Some(item) = items.next().await {
        if let Item::Failed(error) = item {
            return Err(error);
        }
    }
    let found = ops::find(ctx, &id).await?;
    Ok(SendMessageResponse::Task(found.view()?.to_task(history, true)))
}

/// SendStreamingMessage: starts the task (or answers it) and streams it.
pub async fn send_streaming(ctx: Ctx<'_>, request: SendMessageRequest) -> Result<mpsc::Receiver<Item>, A2aError> {
    let history = history(&request)?;
    check_push(&request)?;
    let turn = ops::read_message(ctx, &request).await?;
    let begun = ops::begin(ctx, turn).await?;
    push_with(ctx, &request, &begun).await?;
    follow(ctx, begun, history).await
}

/// Checks the push notification config a message comes with before its run starts.
fn check_push(request: &SendMessageRequest) -> Result<(), A2aError> {
    match request
        .configuration
        .as_ref()
        .and_then(|c| c.task_push_notification_config.as_ref())
    {
        Some(config) => super::push::check(config).map_err(|e| e.under("configuration.taskPushNotificationConfig")),
        None => Ok(()),
    }
}

/// Sets the push notification config a message came with on the task it began.
async fn push_with(ctx: Ctx<'_>, request: &SendMessageRequest, begun: &ops::Begun) -> Result<(), A2aError> {
    let config = request
        .configuration
        .as_ref()
        .and_then(|c| c.task_push_notification_config.clone());
    if let Some(config) = config {
        super::push::set_on_begun(ctx, config, begun)
            .await
            .map_err(|e| e.under("configuration.taskPushNotificationConfig"))?;
    }
    Ok(())
}

/// SubscribeToTask: the task as it stands, then its live updates — from
/// `after` (a place an earlier stream of the task gave, sent back as
/// `Last-Event-ID`) or from now.
pub async fn subscribe(
    ctx: Ctx<'_>,
    id: &str,
    after: Option<(StreamCursor, &str)>,
) -> Result<mpsc::Receiver<Item>, A2aError> {
    let found = ops::find(ctx, id).await?;
    let state = found.view()?.state();
    if state.is_terminal() {
        return Err(A2aError::Unsupported(format!(
            "task {id:?} has ended ({}); GetTask shows how",
            ops::state_words(&state)
        )));
    }
    let rt = ctx.state.runtime();
    let place = match after {
        Some((cursor, field)) => {
            rt.check_cursor(&found.session, &cursor)
                .await
                .map_err(|error| A2aError::field(field, format!("{error}")))?;
            cursor
        }
        None => rt.place(found.session.id().clone()).await?,
    };
    // Read again after the place is taken: a stop in between is in the stream.
    let found = ops::find(ctx, id).await?;
    let view = found.view()?;
    let first: Task = view.to_task(None, true);
    let runs = view.runs.iter().map(|r| r.run.clone()).collect();
    let begun = Begun {
        task: found.task.clone(),
        session: found.session.id().clone(),
        place,
        runs,
    };
    let mut first = first;
    if first.status.state == TaskState::InputRequired {
        // Nothing more comes until it is answered: the snapshot says it all.
        first.status = view.status();
    }
    Ok(stream::spawn(Follow {
        state: ctx.state.clone(),
        caller: ctx.caller.clone(),
        door: ctx.door.clone(),
        first,
        begun,
        history: None,
    }))
}
