//! A remote A2A agent as a tool ([`RemoteAgent`]): a call sends the
//! model's message as a new task and follows the task to its end.
//!
//! - **Resumed, never sent twice.** The remote task's id is the call's
//!   checkpoint ([`CallReport`]), recorded as soon as the remote names it
//!   (the stream's first event). An attempt after a crash finds it in its
//!   context and follows the same task (GetTask, then SubscribeToTask or
//!   polling) instead of sending the message again. Every message the call
//!   sends has an id derived from the call's idempotency key, so a remote
//!   that deduplicates by message id sees a resend as the same message.
//! - **Its questions reach the person.** An `input-required` task's question
//!   is put to the person through the calling session (a question the run
//!   waits on, answered once even across a crash); the reply goes back on
//!   the same task. A decline cancels the remote task.
//! - **Its progress and tokens show.** A working status's words become the
//!   call's `tool_progress` events; tokens the remote reports in the task's
//!   metadata (`usage`: input and output tokens, cost) count in the run's
//!   totals.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use a2a::{
    A2AError, CancelTaskRequest, GetTaskRequest, Message, Part, Role, SendMessageConfiguration, SendMessageRequest,
    SendMessageResponse, StreamResponse, SubscribeToTaskRequest, Task, TaskState,
};
use a2a_client::{A2AClient, A2AClientFactory, Transport};
use concierge_core::{
    CallReport, Elicitation, ElicitationAction, ElicitationMode, ToolAnnotations, ToolError, ToolErrorKind, ToolSpec,
    Usage,
};
use futures::StreamExt;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::OnceCell;

use super::A2aAgentConfig;
use super::reply::{result, status_words, task_usage, words};
use crate::error::{Error, Result};
use crate::tool::{ChannelError, DynTool, ToolContext};

/// How often a task is looked at when the remote does not stream.
const POLL_FIRST: Duration = Duration::from_millis(250);
const POLL_MOST: Duration = Duration::from_secs(5);
/// How many broken streams in a row a call takes before it gives up.
const MAX_DROPS: u32 = 5;
/// How long reaching the remote (its card, one request) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

type Client = A2AClient<Box<dyn Transport>>;

/// A remote A2A agent, callable as a tool named after it.
pub struct RemoteAgent {
    name: String,
    config: A2aAgentConfig,
    spec: ToolSpec,
    /// Built at the first call (the card is read then).
    client: OnceCell<Arc<Connection>>,
}

/// A client for the remote, and what its card says.
struct Connection {
    client: Client,
    streaming: bool,
    /// The HTTP client (with the configured headers) and the card's
    /// JSON-RPC endpoint, to tell a refusal by HTTP status (see [`refusal`]).
    http: reqwest::Client,
    jsonrpc: Option<String>,
}

/// Where a call stands: the remote task it follows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Checkpoint {
    task: String,
    context: String,
    /// The remote's tokens already counted in the run's totals (the task's
    /// usage is a running total: only what is new counts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    counted: Option<Usage>,
}

impl Checkpoint {
    /// Following `task`, nothing counted yet.
    fn of(task: &Task) -> Self {
        Self {
            task: task.id.clone(),
            context: task.context_id.clone(),
            counted: None,
        }
    }
}

/// What following a task came to, for now.
enum Reached {
    /// The task stopped (finished, failed, waits for input…).
    Task(Box<Task>),
    /// The remote answered with a message and no task.
    Message(Box<Message>),
    /// The stream ended before the task stopped: look it up.
    Dropped,
}

impl RemoteAgent {
    /// The agent `name`, reached as `config` says.
    pub fn new(name: impl Into<String>, config: A2aAgentConfig) -> Result<Self> {
        let name = name.into();
        config.check(&name)?;
        let description = config.description.clone().unwrap_or_else(|| {
            format!("Asks the remote agent {name} (over A2A) and returns its answer. Send everything it needs in one message.")
        });
        let mut spec = ToolSpec::new(
            name.as_str(),
            description,
            json!({
                "type": "object",
                "properties": {
                    "message": {
                        "type": "string",
                        "description": "What to ask the agent, in words, with everything it needs to know."
                    }
                },
                "required": ["message"]
            }),
        )
        .category("a2a")
        // The remote agent may change things, but asks its own questions
        // (input-required) rather than being confirmed here by default.
        .annotations(ToolAnnotations::default());
        if let Some(question) = &config.confirm {
            spec = spec.confirm(question.clone());
        }
        Ok(Self {
            name,
            config,
            spec,
            client: OnceCell::new(),
        })
    }

    /// The client, made at the first call from the remote's card.
    async fn connection(&self) -> std::result::Result<Arc<Connection>, ToolError> {
        self.client
            .get_or_try_init(|| async {
                self.connect()
                    .await
                    .map(Arc::new)
                    .map_err(|e| match e {
                        Error::InvalidConfig(why) => why,
                        other => other.to_string(),
                    })
                    .map_err(|why| unavailable(format!("the agent {} could not be reached: {why}", self.name)))
            })
            .await
            .cloned()
    }

    async fn connect(&self) -> Result<Connection> {
        let mut headers = reqwest::header::HeaderMap::new();
        for (key, value) in self.config.request_headers(&self.name)? {
            let key = reqwest::header::HeaderName::from_bytes(key.as_bytes())
                .map_err(|e| Error::InvalidConfig(format!("[a2a_agents.{}] header {key:?}: {e}", self.name)))?;
            let value = reqwest::header::HeaderValue::from_str(&value)
                .map_err(|e| Error::InvalidConfig(format!("[a2a_agents.{}] header {key}: {e}", self.name)))?;
            headers.insert(key, value);
        }
        crate::tls::install_crypto_provider();
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .default_headers(headers)
            .build()
            .map_err(|e| Error::InvalidConfig(format!("the HTTP client for {} could not be made: {e}", self.name)))?;
        let response = http
            .get(self.config.card_url())
            .timeout(CONNECT_TIMEOUT)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| Error::InvalidConfig(format!("its card at {}: {e}", self.config.card_url())))?;
        let card: a2a::AgentCard = response.json().await.map_err(|e| {
            Error::InvalidConfig(format!("its card at {} could not be read: {e}", self.config.card_url()))
        })?;
        let factory = A2AClientFactory::builder()
            .no_defaults()
            .register(Arc::new(a2a_client::jsonrpc::JsonRpcTransportFactory::new(Some(
                http.clone(),
            ))))
            .register(Arc::new(a2a_client::rest::RestTransportFactory::new(Some(
                http.clone(),
            ))))
            .preferred_bindings(vec![
                a2a::TRANSPORT_PROTOCOL_JSONRPC.to_string(),
                "HTTP+JSON".to_string(),
            ])
            .build();
        let client = factory
            .create_from_card(&card)
            .await
            .map_err(|e| Error::InvalidConfig(format!("none of its card's interfaces could be used: {}", e.message)))?;
        let jsonrpc = card
            .supported_interfaces
            .iter()
            .find(|i| i.protocol_binding == a2a::TRANSPORT_PROTOCOL_JSONRPC)
            .map(|i| i.url.clone());
        Ok(Connection {
            client,
            streaming: card.capabilities.streaming.unwrap_or(false),
            http,
            jsonrpc,
        })
    }

    /// Runs one call: a new task, or the one an earlier attempt started.
    async fn run(&self, message: String, cx: ToolContext) -> std::result::Result<Value, ToolError> {
        let remote = self.connection().await?;
        let key = cx.idempotency_key.as_str().to_string();
        let mut followed: Option<Checkpoint> = cx
            .checkpoint
            .clone()
            .and_then(|c| serde_json::from_value::<Checkpoint>(c).ok());
        // The message to send next: the model's, unless an attempt before
        // this one sent it already (the task is then followed, not resent).
        let mut outgoing = match &followed {
            Some(_) => None,
            None => Some(self.user_message(&key, None, message)),
        };
        // The last message sent, and how many streams in a row broke.
        let mut sent: Option<Message> = None;
        let mut drops = 0u32;
        // The remote's time left: the person's time answering its
        // questions does not count.
        let timeout = self.config.task_timeout();
        let mut left = timeout;
        loop {
            let started = tokio::time::Instant::now();
            let step = async {
                match outgoing.take() {
                    Some(message) => {
                        sent = Some(message.clone());
                        self.send(&remote, message, &mut followed, &cx).await
                    }
                    None => {
                        let Some(at) = followed.clone() else {
                            return Err(ToolError::failed(format!(
                                "the agent {} lost track of its task",
                                self.name
                            )));
                        };
                        self.follow(&remote, &at, &cx).await
                    }
                }
            };
            let reached = tokio::time::timeout(left, step).await.map_err(|_| {
                ToolError::new(
                    ToolErrorKind::Timeout,
                    format!("the agent {} did not finish within {} s", self.name, timeout.as_secs()),
                )
            })??;
            left = left.saturating_sub(started.elapsed());
            let task = match reached {
                Reached::Message(message) => return Ok(Value::String(words(&message.parts))),
                Reached::Dropped => {
                    drops += 1;
                    if drops > MAX_DROPS {
                        return Err(unavailable(format!(
                            "the agent {}'s stream broke {drops} times in a row",
                            self.name
                        )));
                    }
                    if followed.is_none() {
                        // Broken before the remote named the task: the same
                        // message again (the same id, for a remote that
                        // deduplicates).
                        outgoing = sent.clone();
                    }
                    tokio::time::sleep(POLL_FIRST * drops).await;
                    continue;
                }
                Reached::Task(task) => task,
            };
            drops = 0;
            self.remember(&task, &mut followed, &cx).await;
            if stopped(&task.status.state) {
                self.count_usage(&remote, &task, &mut followed, &cx).await;
            }
            match task.status.state {
                TaskState::Completed => return Ok(result(&task)),
                TaskState::InputRequired => {
                    let reply = self.ask_person(&remote, &task, &cx).await?;
                    outgoing = Some(self.user_message(&key, Some(&task), reply));
                }
                TaskState::AuthRequired => {
                    return Err(ToolError::failed(format!(
                        "the agent {} needs the person to sign in elsewhere first: {}",
                        self.name,
                        status_words(&task.status).unwrap_or_else(|| "it gave no details".into())
                    )));
                }
                TaskState::Failed | TaskState::Rejected => {
                    let why = status_words(&task.status).unwrap_or_else(|| "it gave no reason".into());
                    return Err(ToolError::failed(format!(
                        "the agent {} could not do it: {why}",
                        self.name
                    )));
                }
                TaskState::Canceled => {
                    return Err(ToolError::new(
                        ToolErrorKind::Cancelled,
                        format!("the agent {}'s task was cancelled", self.name),
                    ));
                }
                // Not stopped yet (a poll raced the task): look again.
                TaskState::Submitted | TaskState::Working | TaskState::Unspecified => {}
            }
        }
    }

    /// A message of the person's side: the first (`task` none) or a reply
    /// on `task`. Its id is the call's key (and the question it answers),
    /// so sending it again is the same message.
    fn user_message(&self, key: &str, task: Option<&Task>, text: String) -> Message {
        let mut message = Message::new(Role::User, vec![Part::text(text)]);
        match task {
            None => message.message_id = format!("{key}-ask"),
            Some(task) => {
                let asked = task.status.message.as_ref().map_or_else(
                    || concierge_core::fingerprint(&json!(task.status.state)),
                    |m| m.message_id.clone(),
                );
                message.message_id = format!("{key}-reply-{asked}");
                message.task_id = Some(task.id.clone());
                message.context_id = Some(task.context_id.clone());
            }
        }
        message
    }

    /// Sends `message` and follows what it starts until the task stops.
    async fn send(
        &self,
        remote: &Connection,
        message: Message,
        followed: &mut Option<Checkpoint>,
        cx: &ToolContext,
    ) -> std::result::Result<Reached, ToolError> {
        let request = SendMessageRequest {
            message,
            configuration: Some(SendMessageConfiguration {
                accepted_output_modes: Some(vec!["text/plain".into(), "application/json".into()]),
                task_push_notification_config: None,
                history_length: Some(0),
                return_immediately: (!remote.streaming).then_some(true),
            }),
            metadata: None,
            tenant: None,
        };
        if remote.streaming {
            return match remote.client.send_streaming_message(&request).await {
                Ok(stream) => self.consume(stream, followed, cx).await,
                Err(e) => Err(self.failure(remote, "the message could not be sent", &e).await),
            };
        }
        let answer = match remote.client.send_message(&request).await {
            Ok(answer) => answer,
            Err(e) => return Err(self.failure(remote, "the message could not be sent", &e).await),
        };
        match answer {
            SendMessageResponse::Message(message) => Ok(Reached::Message(Box::new(message))),
            SendMessageResponse::Task(task) => {
                self.remember(&task, followed, cx).await;
                if stopped(&task.status.state) {
                    Ok(Reached::Task(Box::new(task)))
                } else {
                    self.poll(remote, &Checkpoint::of(&task), cx).await
                }
            }
        }
    }

    /// Follows a task an earlier message started: where it is now, then
    /// its live updates (or polls) until it stops.
    async fn follow(
        &self,
        remote: &Connection,
        at: &Checkpoint,
        cx: &ToolContext,
    ) -> std::result::Result<Reached, ToolError> {
        let task = self.get(remote, at).await?;
        if stopped(&task.status.state) {
            return Ok(Reached::Task(Box::new(task)));
        }
        if !remote.streaming {
            return self.poll(remote, at, cx).await;
        }
        let request = SubscribeToTaskRequest {
            id: at.task.clone(),
            tenant: None,
        };
        match remote.client.subscribe_to_task(&request).await {
            Ok(stream) => {
                let mut followed = Some(at.clone());
                self.consume(stream, &mut followed, cx).await
            }
            // A remote that cannot re-attach (the task stopped meanwhile, say) is polled.
            Err(_) => self.poll(remote, at, cx).await,
        }
    }

    async fn get(&self, remote: &Connection, at: &Checkpoint) -> std::result::Result<Task, ToolError> {
        let request = GetTaskRequest {
            id: at.task.clone(),
            history_length: Some(0),
            tenant: None,
        };
        match remote.client.get_task(&request).await {
            Ok(task) => Ok(task),
            Err(e) => Err(self.failure(remote, "its task could not be looked up", &e).await),
        }
    }

    /// Looks at the task until it stops, less often as it goes on.
    async fn poll(
        &self,
        remote: &Connection,
        at: &Checkpoint,
        cx: &ToolContext,
    ) -> std::result::Result<Reached, ToolError> {
        let mut wait = POLL_FIRST;
        let mut said: Option<String> = None;
        loop {
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(POLL_MOST);
            let task = self.get(remote, at).await?;
            if stopped(&task.status.state) {
                return Ok(Reached::Task(Box::new(task)));
            }
            if let Some(words) = status_words(&task.status).filter(|w| said.as_ref() != Some(w)) {
                report(cx, CallReport::progress(format!("{}: {words}", self.name))).await;
                said = Some(words);
            }
        }
    }

    /// Reads a stream of task events until the task stops (or the stream
    /// ends), recording the task's id as soon as it is named.
    async fn consume(
        &self,
        mut stream: a2a_client::BoxStream<'static, std::result::Result<StreamResponse, A2AError>>,
        followed: &mut Option<Checkpoint>,
        cx: &ToolContext,
    ) -> std::result::Result<Reached, ToolError> {
        let mut task: Option<Task> = None;
        let mut artifacts: Vec<a2a::Artifact> = Vec::new();
        while let Some(item) = stream.next().await {
            let Ok(item) = item else {
                // A broken stream: the task is looked up instead.
                return Ok(Reached::Dropped);
            };
            match item {
                StreamResponse::Message(message) => return Ok(Reached::Message(Box::new(message))),
                StreamResponse::Task(snapshot) => {
                    self.remember(&snapshot, followed, cx).await;
                    artifacts = snapshot.artifacts.clone().unwrap_or_default();
                    let state = snapshot.status.state.clone();
                    task = Some(snapshot);
                    if stopped(&state) {
                        break;
                    }
                }
                StreamResponse::StatusUpdate(update) => {
                    let current = task.get_or_insert_with(|| Task {
                        id: update.task_id.clone(),
                        context_id: update.context_id.clone(),
                        status: update.status.clone(),
                        artifacts: None,
                        history: None,
                        metadata: None,
                    });
                    self.remember(current, followed, cx).await;
                    if update.status.state == TaskState::Working {
                        if let Some(words) = status_words(&update.status) {
                            report(cx, CallReport::progress(format!("{}: {words}", self.name))).await;
                        }
                    }
                    current.status = update.status;
                    if let Some(metadata) = update.metadata {
                        current.metadata.get_or_insert_with(HashMap::new).extend(metadata);
                    }
                    if stopped(&current.status.state) {
                        break;
                    }
                }
                StreamResponse::ArtifactUpdate(update) => {
                    let append = update.append.unwrap_or(false);
                    match artifacts
                        .iter_mut()
                        .find(|a| a.artifact_id == update.artifact.artifact_id)
                    {
                        Some(known) if append => known.parts.extend(update.artifact.parts),
                        Some(known) => *known = update.artifact,
                        None => artifacts.push(update.artifact),
                    }
                }
            }
        }
        let Some(mut task) = task else {
            return Ok(Reached::Dropped);
        };
        if !stopped(&task.status.state) {
            return Ok(Reached::Dropped);
        }
        if !artifacts.is_empty() {
            task.artifacts = Some(artifacts);
        }
        Ok(Reached::Task(Box::new(task)))
    }

    /// Records the task's id as the call's checkpoint the first time it is seen.
    async fn remember(&self, task: &Task, followed: &mut Option<Checkpoint>, cx: &ToolContext) {
        if followed.as_ref().is_some_and(|f| f.task == task.id) {
            return;
        }
        let at = Checkpoint::of(task);
        if let Ok(value) = serde_json::to_value(&at) {
            report(cx, CallReport::checkpoint(value)).await;
        }
        *followed = Some(at);
    }

    /// Counts the tokens the remote spent since they were last counted (its
    /// task's `usage`, read again when the stream did not carry it), with the
    /// new total in the same report as the checkpoint.
    async fn count_usage(&self, remote: &Connection, task: &Task, followed: &mut Option<Checkpoint>, cx: &ToolContext) {
        let total = match task_usage(task) {
            Some(total) => total,
            // A lookup that does not answer soon costs the count, not the call.
            None => match tokio::time::timeout(CONNECT_TIMEOUT, self.get(remote, &Checkpoint::of(task)))
                .await
                .ok()
                .and_then(Result::ok)
                .as_ref()
                .and_then(task_usage)
            {
                Some(total) => total,
                None => return,
            },
        };
        let Some(at) = followed.as_mut() else {
            return;
        };
        let counted = at.counted.unwrap_or_default();
        let new = Usage {
            input_tokens: total.input_tokens.saturating_sub(counted.input_tokens),
            output_tokens: total.output_tokens.saturating_sub(counted.output_tokens),
            cost_usd: match (total.cost_usd, counted.cost_usd) {
                (Some(total), Some(counted)) => Some((total - counted).max(0.0)),
                (total, _) => total,
            },
        };
        if new.input_tokens == 0 && new.output_tokens == 0 {
            return;
        }
        at.counted = Some(total);
        let report_ = CallReport {
            checkpoint: serde_json::to_value(&*at).ok(),
            progress: None,
            usage: Some(new),
        };
        report(cx, report_).await;
    }

    /// Puts the task's question to the person; their reply, or an error
    /// after cancelling the task when they decline.
    async fn ask_person(
        &self,
        remote: &Connection,
        task: &Task,
        cx: &ToolContext,
    ) -> std::result::Result<String, ToolError> {
        let asked = status_words(&task.status).unwrap_or_else(|| "It needs more from you to go on.".into());
        let question = Elicitation {
            server: self.name.clone(),
            message: asked.clone(),
            mode: ElicitationMode::Reply {
                asked: task.status.message.as_ref().map(|m| m.message_id.clone()),
            },
        };
        let Some(channel) = cx.channel.as_ref() else {
            return Err(self
                .unanswerable(remote, task, &asked, &ChannelError::Unsupported)
                .await);
        };
        match channel.0.ask(question).await {
            Ok(answer) if answer.action == ElicitationAction::Accept => {
                let text = answer
                    .content
                    .as_ref()
                    .and_then(|c| c.get("text"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_default();
                Ok(text)
            }
            Ok(_) => {
                self.cancel(remote, task).await;
                Err(ToolError::new(
                    ToolErrorKind::Declined,
                    format!(
                        "the person did not answer the agent {}'s question ({asked}), so its task was cancelled",
                        self.name
                    ),
                ))
            }
            Err(error) => Err(self.unanswerable(remote, task, &asked, &error).await),
        }
    }

    async fn unanswerable(&self, remote: &Connection, task: &Task, asked: &str, why: &ChannelError) -> ToolError {
        // A run that ended, or a call made again once the person answers
        // (it finds the task by its checkpoint), leaves the task as it is.
        if !matches!(why, ChannelError::RunEnded | ChannelError::Parked) {
            self.cancel(remote, task).await;
        }
        ToolError::failed(format!(
            "the agent {} asked \"{asked}\", which could not be put to the person ({why})",
            self.name
        ))
    }

    async fn cancel(&self, remote: &Connection, task: &Task) {
        let request = CancelTaskRequest {
            id: task.id.clone(),
            metadata: None,
            tenant: None,
        };
        match tokio::time::timeout(CONNECT_TIMEOUT, remote.client.cancel_task(&request)).await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => {
                tracing::warn!(agent = %self.name, task = %task.id, error = %error.message, "a remote task could not be cancelled");
            }
            Err(_) => tracing::warn!(agent = %self.name, task = %task.id, "a remote task's cancellation got no answer"),
        }
    }

    async fn failure(&self, remote: &Connection, what: &str, error: &A2AError) -> ToolError {
        let why = match refusal(remote).await {
            Some(status) => format!(
                "it refused our credentials, HTTP {status}: check token_env or headers in [a2a_agents.{}]",
                self.name
            ),
            None => error.message.clone(),
        };
        unavailable(format!("the agent {}: {what} ({why})", self.name))
    }
}

impl DynTool for RemoteAgent {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn call_json(&self, args: Value, cx: ToolContext) -> BoxFuture<'_, std::result::Result<Value, ToolError>> {
        Box::pin(async move {
            let message = args
                .get("message")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|m| !m.is_empty())
                .ok_or_else(|| {
                    ToolError::invalid_arguments(
                        "message: say what to ask the agent, in words",
                        vec![concierge_core::FieldError {
                            field: "message".into(),
                            problem: "required text".into(),
                        }],
                    )
                })?
                .to_string();
            self.run(message, cx).await
        })
    }

    fn bounds_its_own_time(&self) -> bool {
        true
    }
}

/// Whether following can stop here (the task ended or waits for someone).
fn stopped(state: &TaskState) -> bool {
    state.is_terminal() || matches!(state, TaskState::InputRequired | TaskState::AuthRequired)
}

/// The status the agent's JSON-RPC endpoint refuses our credentials with
/// (401, 403, 407), asked with a harmless request (a lookup of no task).
/// The JSON-RPC transport reads every answer as JSON-RPC, so such a
/// refusal, sent by an auth layer in front of the agent, would otherwise
/// read as "failed to parse JSON-RPC response".
async fn refusal(remote: &Connection) -> Option<reqwest::StatusCode> {
    let probe = json!({"jsonrpc": "2.0", "id": "probe", "method": "GetTask", "params": {"id": "probe"}});
    let response = (remote.http.post(remote.jsonrpc.as_ref()?))
        .header("A2A-Version", "1.0")
        .timeout(CONNECT_TIMEOUT)
        .json(&probe)
        .send()
        .await
        .ok()?;
    let status = response.status();
    matches!(status.as_u16(), 401 | 403 | 407).then_some(status)
}

fn unavailable(message: String) -> ToolError {
    ToolError::new(ToolErrorKind::Unavailable, message)
}

/// Records `report`; a report that cannot be recorded is logged (the call
/// goes on: at worst an attempt after a crash starts from further back).
async fn report(cx: &ToolContext, report: CallReport) {
    if let Some(channel) = &cx.channel {
        if let Err(error) = channel.0.report(report).await {
            tracing::debug!(call = %cx.call_id, %error, "a call's report was not recorded");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::reply::tests::task;
    use super::*;

    #[test]
    fn a_reply_to_the_same_question_is_the_same_message() {
        let agent = RemoteAgent::new("booking", A2aAgentConfig::new("http://127.0.0.1:9")).unwrap();
        let waiting = task(TaskState::InputRequired, Vec::new(), None);
        let first = agent.user_message("key", Some(&waiting), "yes".into());
        let again = agent.user_message("key", Some(&waiting), "yes".into());
        assert_eq!(first.message_id, again.message_id);
        assert_eq!(first.task_id.as_deref(), Some("t1"));
        assert_eq!(agent.user_message("key", None, "hi".into()).message_id, "key-ask");
    }

    #[test]
    fn a_bad_address_or_name_is_refused_with_the_setting_named() {
        let bad = RemoteAgent::new("booking", A2aAgentConfig::new("ftp://x"))
            .err()
            .unwrap();
        assert!(bad.to_string().contains("[a2a_agents.booking] url"), "{bad}");
        let name = RemoteAgent::new("book ing", A2aAgentConfig::new("http://x"))
            .err()
            .unwrap();
        assert!(name.to_string().contains("book ing"), "{name}");
    }
}
