//! Progress of an agent run started by an MCP tool call: one
//! `notifications/progress` per model call and tool call of the run (with
//! the request's `progressToken`), for a client that asked for progress.

use std::time::Duration;

use concierge::Runtime;
use concierge::core::{Event, EventKind, SessionId};
use futures::StreamExt;
use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::Peer;
use tokio::sync::watch;

/// How long the reporter may take, once the run stopped, to send what it
/// has not sent yet.
const DRAIN: Duration = Duration::from_secs(5);

/// What a person reads for an event, if it is one that is reported.
pub(super) fn message(event: &Event) -> Option<String> {
    match &event.kind {
        EventKind::ModelRequested { call } => Some(if *call <= 1 {
            "asking the model".to_string()
        } else {
            format!("asking the model again (call {call} of this run)")
        }),
        EventKind::ToolRequested { tool, .. } => Some(format!("calling the tool {tool}")),
        EventKind::ToolReused { tool, .. } => Some(format!("reusing an earlier result of {tool}")),
        EventKind::ToolFinished {
            tool, ok, duration_ms, ..
        } => Some(if *ok {
            format!("{tool} finished in {duration_ms} ms")
        } else {
            format!("{tool} failed after {duration_ms} ms")
        }),
        _ => None,
    }
}

/// Sends progress notifications for a session's events while its runs work.
pub(super) struct Reporter {
    /// The seq of the session's last event once the work stopped.
    until: watch::Sender<Option<u64>>,
    task: tokio::task::JoinHandle<()>,
}

impl Reporter {
    /// Follows `session` from `from_seq` on, reporting to `peer` under `token`.
    pub(super) fn start(
        rt: &Runtime,
        peer: Peer<RoleServer>,
        token: ProgressToken,
        session: SessionId,
        from_seq: u64,
    ) -> Self {
        let (until, mut stop) = watch::channel(None::<u64>);
        let mut events = rt.subscribe(session.clone(), from_seq);
        let task = tokio::spawn(async move {
            let mut sent = 0u32;
            let mut seen = 0u64;
            loop {
                if stop.borrow().is_some_and(|last| seen >= last) {
                    return;
                }
                let event = tokio::select! {
                    event = events.next() => event,
                    changed = stop.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        continue;
                    }
                };
                let Some(Ok(event)) = event else { return };
                if event.session == session {
                    seen = seen.max(event.seq);
                }
                let Some(text) = message(&event) else { continue };
                sent += 1;
                let mut params = ProgressNotificationParam::new(token.clone(), f64::from(sent));
                params.message = Some(text);
                if peer.notify_progress(params).await.is_err() {
                    return;
                }
            }
        });
        Self { until, task }
    }

    /// The work stopped with the session's last event at `last_seq`: report
    /// what is left up to it, then stop.
    pub(super) async fn finish(self, last_seq: u64) {
        let _ = self.until.send(Some(last_seq));
        let Self { task, .. } = self;
        let abort = task.abort_handle();
        if tokio::time::timeout(DRAIN, task).await.is_err() {
            abort.abort();
        }
    }
}
