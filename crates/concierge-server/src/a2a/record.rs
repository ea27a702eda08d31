//! A session's runs as its event log tells them: who ran, what was said,
//! where each run stopped and what it waits for. The log is the one record
//! of tasks (nothing is kept beside it): a task is the run that started it
//! and the runs that answered its questions, which carry the task's id in
//! the label [`TASK_LABEL`].

use concierge::core::{EventKind, Message, PendingElicitation, RunStatus};
use concierge::{Event, PendingChoice, PendingConfirmation, Runtime, Session};
use futures::StreamExt;

use super::error::A2aError;

/// The run label that ties a run answering a question to the task that asked.
pub const TASK_LABEL: &str = "a2a_task";

/// What a stopped run asks the person.
#[derive(Clone, Debug, PartialEq)]
pub enum Ask {
    /// To approve a call (parked; the same run goes on with the answer).
    Confirmation(PendingConfirmation),
    /// To pick one of numbered options (the answer starts the next run).
    Choice(PendingChoice),
    /// A question in words (the answer starts the next run).
    Question,
    /// A running call's question (an MCP server's elicitation): the answer,
    /// in words, goes to the call (the same run goes on).
    Elicitation(PendingElicitation),
}

/// One run of a session.
#[derive(Clone, Debug)]
pub struct RunRecord {
    /// The run's id.
    pub run: String,
    /// The run that started its task (its own id for a task's first run).
    pub task: String,
    /// When it started, in milliseconds since the Unix epoch.
    pub started: u64,
    /// When its last event happened.
    pub updated: u64,
    /// Where it stopped last; `None` while it works.
    pub status: Option<RunStatus>,
    /// What it asks, while it waits for the person.
    pub ask: Option<Ask>,
    /// Its answer at its last stop.
    pub reply: Option<String>,
    /// What failed, if it failed.
    pub error: Option<String>,
    /// The person's and the agents' messages, in order.
    pub messages: Vec<(u64, Message)>,
    /// The tokens and cost the run spent so far.
    pub usage: concierge::Usage,
}

/// A session's runs, in the order they started.
#[derive(Clone, Debug, Default)]
pub struct SessionLog {
    /// The runs.
    pub runs: Vec<RunRecord>,
}

impl SessionLog {
    /// Reads `session`'s stored events (its own, not its child runs').
    pub async fn read(rt: &Runtime, session: &Session) -> Result<Self, A2aError> {
        let mut log = Self::default();
        let last = session.last_seq();
        if last == 0 {
            return Ok(log);
        }
        let root = session.id().clone();
        let mut events = rt.subscribe(root.clone(), 1);
        while let Some(item) = events.next().await {
            let event = item?;
            if event.session != root || event.delta != 0 {
                continue;
            }
            let seq = event.seq;
            log.apply(&event);
            if seq >= last {
                break;
            }
        }
        Ok(log)
    }

    /// Takes one durable event of the session into the log.
    pub fn apply(&mut self, event: &Event) {
        let Some(run) = &event.run else {
            return;
        };
        if let EventKind::RunStarted { labels, .. } = &event.kind {
            self.runs.push(RunRecord {
                run: run.to_string(),
                task: labels.get(TASK_LABEL).cloned().unwrap_or_else(|| run.to_string()),
                started: event.at.0,
                updated: event.at.0,
                status: None,
                ask: None,
                reply: None,
                error: None,
                messages: Vec::new(),
                usage: concierge::Usage::default(),
            });
            return;
        }
        let Some(record) = self.runs.iter_mut().rev().find(|r| r.run == run.as_str()) else {
            return;
        };
        record.updated = event.at.0;
        match &event.kind {
            EventKind::Message { message } => record.messages.push((event.seq, message.clone())),
            // A run parks on a question without a `run_finished` event.
            EventKind::AwaitingConfirmation { pending } => {
                record.ask = Some(Ask::Confirmation(pending.clone()));
                record.status = Some(RunStatus::AwaitingConfirmation);
            }
            EventKind::ChoiceRequested { pending } => {
                record.ask = Some(Ask::Choice(pending.clone()));
                record.status = Some(RunStatus::AwaitingChoice);
            }
            EventKind::ElicitationRequested { pending } => {
                record.ask = Some(Ask::Elicitation(pending.clone()));
                record.status = Some(RunStatus::AwaitingInput);
            }
            EventKind::ConfirmationResolved { .. }
            | EventKind::ChoiceResolved { .. }
            | EventKind::ElicitationAnswered { .. } => {
                record.ask = None;
                record.status = None;
            }
            EventKind::Error { message } => record.error = Some(message.clone()),
            EventKind::Usage { run_total, .. } => record.usage = *run_total,
            EventKind::RunFinished { status, reply } => {
                record.status = Some(*status);
                record.reply.clone_from(reply);
                if *status == RunStatus::NeedsInput {
                    record.ask = Some(Ask::Question);
                }
                if matches!(status, RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled) {
                    record.ask = None;
                }
            }
            _ => {}
        }
    }

    /// The runs of task `task` (the id of its first run), in order.
    pub fn task_runs(&self, task: &str) -> Vec<&RunRecord> {
        self.runs.iter().filter(|r| r.task == task).collect()
    }

    /// The tasks' first runs' ids, in the order the tasks started.
    pub fn tasks(&self) -> Vec<&str> {
        let mut tasks: Vec<&str> = Vec::new();
        for run in &self.runs {
            if !tasks.contains(&run.task.as_str()) {
                tasks.push(&run.task);
            }
        }
        tasks
    }

    /// Whether a run of another task started after `task`'s last run: the
    /// conversation moved on, and a question `task` asked is left.
    pub fn moved_on(&self, task: &str) -> bool {
        let Some(last) = self.runs.iter().rposition(|r| r.task == task) else {
            return false;
        };
        self.runs[last + 1..].iter().any(|r| r.task != task)
    }
}
