//! A task as A2A shows it, from its runs: its state (working, completed,
//! failed, canceled, or input-required while its run waits for the
//! person), the question in words with a data part to answer it by, the
//! reply as an artifact, and the conversation as its history.

use a2a::{Artifact, Message, Part, Role, Task, TaskState, TaskStatus};
use chrono::{DateTime, Utc};
use concierge::core::{Message as Said, RunStatus};
use serde_json::{Value, json};

use super::ids::TaskRef;
use super::record::{Ask, RunRecord, SessionLog};

/// What a task's data part says it is, in its `kind`.
pub const CONFIRMATION_KIND: &str = "confirmation";
/// The `kind` of a choice's data part.
pub const CHOICE_KIND: &str = "choice";

/// One task of a session's log.
#[derive(Clone, Debug)]
pub struct TaskView<'a> {
    /// Its id.
    pub id: TaskRef,
    /// Its runs, in order (at least one).
    pub runs: Vec<&'a RunRecord>,
    /// Whether the conversation moved on past it.
    pub moved_on: bool,
}

impl<'a> TaskView<'a> {
    /// Task `id` of `log`, if the log has it.
    pub fn of(log: &'a SessionLog, id: &TaskRef) -> Option<Self> {
        let runs = log.task_runs(&id.run);
        // A task is named by its first run: a later run of a task is no task.
        if runs.first().is_none_or(|first| first.run != id.run) {
            return None;
        }
        Some(Self {
            id: id.clone(),
            runs,
            moved_on: log.moved_on(&id.run),
        })
    }

    /// Every task of `log` in context `context`, in the order they started.
    pub fn all(log: &'a SessionLog, context: &str) -> Vec<Self> {
        log.tasks()
            .into_iter()
            .filter_map(|run| Self::of(log, &TaskRef::new(context, run)))
            .collect()
    }

    /// The task's latest run.
    pub fn last(&self) -> &'a RunRecord {
        self.runs[self.runs.len() - 1]
    }

    /// The task's state.
    pub fn state(&self) -> TaskState {
        let last = self.last();
        match last.status {
            None => TaskState::Working,
            Some(RunStatus::Completed) => TaskState::Completed,
            Some(RunStatus::Failed) => TaskState::Failed,
            Some(RunStatus::Cancelled) => TaskState::Canceled,
            // A guardrail refused the message (or what came of it).
            Some(RunStatus::Blocked) => TaskState::Rejected,
            Some(RunStatus::AwaitingConfirmation | RunStatus::AwaitingInput) => TaskState::InputRequired,
            // The run ended with a question: left when the conversation moved on.
            Some(RunStatus::AwaitingChoice | RunStatus::NeedsInput) if self.moved_on => TaskState::Completed,
            Some(RunStatus::AwaitingChoice | RunStatus::NeedsInput) => TaskState::InputRequired,
        }
    }

    /// What the task waits for, while it is input-required.
    pub fn ask(&self) -> Option<&'a Ask> {
        (self.state() == TaskState::InputRequired)
            .then(|| self.last().ask.as_ref())
            .flatten()
    }

    /// When the task last changed.
    pub fn updated(&self) -> u64 {
        self.last().updated
    }

    /// The task in A2A's shape, with at most `history` messages of its history
    /// (all without a limit; none for 0) and its artifacts if `artifacts`.
    pub fn to_task(&self, history: Option<usize>, artifacts: bool) -> Task {
        let mut messages: Vec<Message> = self.runs.iter().flat_map(|run| self.messages(run)).collect();
        if let Some(n) = history {
            let skip = messages.len().saturating_sub(n);
            messages.drain(..skip);
        }
        Task {
            id: self.id.id(),
            context_id: self.id.context.clone(),
            status: self.status(),
            artifacts: artifacts.then(|| self.artifacts()),
            history: (!messages.is_empty()).then_some(messages),
            metadata: self.usage(),
        }
    }

    /// The tokens and cost the task's runs spent, as its metadata's `usage`
    /// (`inputTokens`, `outputTokens`, `costUsd` when known); none before
    /// any model call.
    fn usage(&self) -> Option<std::collections::HashMap<String, serde_json::Value>> {
        let mut total = concierge::Usage::default();
        for run in &self.runs {
            total.add(run.usage);
        }
        if total.input_tokens == 0 && total.output_tokens == 0 {
            return None;
        }
        let mut usage = serde_json::json!({"inputTokens": total.input_tokens, "outputTokens": total.output_tokens});
        if let Some(cost) = total.cost_usd {
            usage["costUsd"] = serde_json::json!(cost);
        }
        Some(std::collections::HashMap::from([("usage".to_string(), usage)]))
    }

    /// The task's status: its state, when it changed, and for a task that
    /// waits, fails or was cancelled, a message saying so.
    pub fn status(&self) -> TaskStatus {
        let state = self.state();
        let last = self.last();
        let words = |text: String| self.agent_message(vec![Part::text(text)]);
        let message = match state {
            TaskState::InputRequired => Some(self.question()),
            TaskState::Failed => Some(words(
                last.error
                    .clone()
                    .or_else(|| last.reply.clone())
                    .unwrap_or_else(|| "the run failed".to_string()),
            )),
            TaskState::Canceled => Some(words("the task was cancelled".to_string())),
            _ => None,
        };
        TaskStatus {
            state,
            message,
            timestamp: timestamp(last.updated),
        }
    }

    /// The question the task waits on: in words, and as a data part to
    /// answer it by (the call, its fingerprint, the options).
    fn question(&self) -> Message {
        let last = self.last();
        let reply = last.reply.clone().filter(|r| !r.trim().is_empty());
        let mut parts = Vec::new();
        match self.ask() {
            Some(Ask::Confirmation(pending)) => {
                let text = reply.unwrap_or_else(|| pending.message.clone());
                parts.push(Part::text(text));
                parts.push(Part::data(json!({
                    "kind": CONFIRMATION_KIND,
                    "callId": pending.call_id.to_string(),
                    "fingerprint": pending.fingerprint,
                    "tool": pending.tool.to_string(),
                    "arguments": pending.arguments,
                    "question": pending.message,
                    "decisions": ["approve", "deny", "amend"],
                })));
            }
            Some(Ask::Choice(pending)) => {
                let mut text = pending.choice.question.clone();
                for (i, option) in pending.choice.options.iter().enumerate() {
                    text.push_str(&format!("\n{}. {}", i + 1, option.label));
                }
                parts.push(Part::text(text));
                let options: Vec<Value> = pending
                    .choice
                    .options
                    .iter()
                    .enumerate()
                    .map(|(i, o)| json!({"number": i + 1, "id": o.id, "label": o.label}))
                    .collect();
                parts.push(Part::data(json!({
                    "kind": CHOICE_KIND,
                    "callId": pending.call_id.to_string(),
                    "question": pending.choice.question,
                    "options": options,
                })));
            }
            Some(Ask::Elicitation(pending)) => {
                parts.push(Part::text(pending.text.clone()));
                parts.push(Part::data(json!({
                    "kind": "elicitation",
                    "callId": pending.call_id.to_string(),
                    "question": pending.question,
                    "elicitation": pending.elicitation,
                })));
            }
            Some(Ask::Question) | None => {
                parts.push(Part::text(
                    reply.unwrap_or_else(|| "the agent waits for your answer".to_string()),
                ));
            }
        }
        self.agent_message(parts)
    }

    /// The reply of a completed task, as its one artifact.
    fn artifacts(&self) -> Vec<Artifact> {
        let last = self.last();
        match (&last.reply, self.state()) {
            (Some(reply), TaskState::Completed) if !reply.is_empty() => vec![Artifact {
                artifact_id: reply_artifact(&last.run),
                name: Some("reply".to_string()),
                description: None,
                parts: vec![Part::text(reply.clone())],
                metadata: None,
                extensions: None,
            }],
            _ => Vec::new(),
        }
    }

    /// A run's messages the person and the agents said, in A2A's shape.
    fn messages(&self, run: &RunRecord) -> Vec<Message> {
        run.messages
            .iter()
            .filter_map(|(seq, said)| {
                let (role, text) = match said {
                    Said::User { content } => (Role::User, content),
                    Said::Assistant { content, .. } if !content.is_empty() => (Role::Agent, content),
                    _ => return None,
                };
                Some(Message {
                    message_id: format!("{}-{seq}", run.run),
                    context_id: Some(self.id.context.clone()),
                    task_id: Some(self.id.id()),
                    role,
                    parts: vec![Part::text(text.clone())],
                    metadata: None,
                    extensions: None,
                    reference_task_ids: None,
                })
            })
            .collect()
    }

    /// A message of the agent's in this task.
    pub fn agent_message(&self, parts: Vec<Part>) -> Message {
        let last = self.last();
        Message {
            message_id: format!("{}-status-{}", last.run, last.updated),
            context_id: Some(self.id.context.clone()),
            task_id: Some(self.id.id()),
            role: Role::Agent,
            parts,
            metadata: None,
            extensions: None,
            reference_task_ids: None,
        }
    }
}

/// The id of the artifact that carries run `run`'s reply.
pub fn reply_artifact(run: &str) -> String {
    format!("reply-{run}")
}

/// A time of the log (milliseconds since the Unix epoch) as A2A writes it.
pub fn timestamp(millis: u64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp_millis(i64::try_from(millis).ok()?)
}
