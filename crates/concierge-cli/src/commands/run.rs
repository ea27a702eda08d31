//! `concierge run` and `concierge confirm`.

use std::process::ExitCode;

use clap::Args;
use concierge::{Decision, Error, EventKind, Result, RunOptions, Runtime, SessionId};

use super::code;
use crate::{render, setup};

/// `concierge run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Pin the session to this agent. Without it a new session starts at the
    /// hub, which finds the agent for each message; an existing one continues
    /// with its current agent.
    #[arg(long)]
    pub agent: Option<String>,
    /// The session.
    #[arg(long)]
    pub session: String,
    /// Who is asking (a user id tools can read; on the blackboard as `user_id`).
    #[arg(long, value_name = "NAME")]
    pub user: Option<String>,
    /// Print the whole run output as JSON.
    #[arg(long)]
    pub json: bool,
    /// The message (while a call waits for approval: yes, no, or what to change).
    #[arg(required = true, num_args = 1..)]
    pub message: Vec<String>,
}

/// `concierge confirm`.
#[derive(Debug, Args)]
pub struct ConfirmArgs {
    /// The session.
    #[arg(long)]
    pub session: String,
    /// The parked call's id.
    #[arg(long)]
    pub call: String,
    /// The fingerprint of the arguments you approve.
    #[arg(long)]
    pub fingerprint: String,
    /// Decline instead of approving.
    #[arg(long)]
    pub deny: bool,
    /// Why (sent to the model with a denial).
    #[arg(long)]
    pub reason: Option<String>,
    /// Print the whole run output as JSON.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(rt: &Runtime, args: &RunArgs) -> Result<ExitCode> {
    let session = SessionId::new(&args.session);
    if let Some(resumed) = setup::finish_recovered(rt, &session).await? {
        eprintln!("(finished the run this session had in flight)");
        render::print_output(&resumed, args.json);
    }
    let mut options = RunOptions::new().session_id(session.clone());
    if let Some(user) = &args.user {
        options = options.user(user.as_str());
    }
    let text = args.message.join(" ");
    let statuses = print_tools_status(rt, session.clone());
    let result = match &args.agent {
        Some(agent) => match rt.client(agent.as_str()) {
            Ok(client) => client.run(text, options).await,
            Err(error) => Err(error),
        },
        None => rt.send(text, options).await,
    };
    statuses.stop().await;
    let output = match result {
        Ok(output) => output,
        Err(Error::SessionNotFound(id)) if args.agent.is_none() => {
            eprintln!(
                "error: session {} does not exist yet and there is no default agent: pass --agent AGENT to start it (`concierge agents` lists them)",
                render::clean(id.as_str())
            );
            return Ok(ExitCode::FAILURE);
        }
        Err(other) => return Err(other),
    };
    Ok(code(render::print_output(&output, args.json)))
}

/// Prints to stderr, while a run waits for an MCP server, what it waits for.
struct StatusPrinter {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl StatusPrinter {
    /// Prints what is left and stops.
    async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

fn print_tools_status(rt: &Runtime, session: SessionId) -> StatusPrinter {
    let mut statuses = rt.tools_status();
    let (stop, mut stopped) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        let print = |event: concierge::Event| {
            if let (true, EventKind::ToolsStatus { message, .. }) = (event.session == session, &event.kind) {
                eprintln!("{}", render::tools_status(message));
            }
        };
        loop {
            tokio::select! {
                received = statuses.recv() => match received {
                    Ok(event) => print(event),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                },
                _ = &mut stopped => break,
            }
        }
        while let Ok(event) = statuses.try_recv() {
            print(event);
        }
    });
    StatusPrinter { stop, task }
}

pub async fn confirm(rt: &Runtime, args: &ConfirmArgs) -> Result<ExitCode> {
    let session = SessionId::new(&args.session);
    setup::finish_recovered(rt, &session).await?;
    let decision = if args.deny {
        Decision::Deny {
            reason: args.reason.clone(),
        }
    } else {
        Decision::Approve
    };
    let output = rt
        .confirm(session, args.call.as_str(), args.fingerprint.clone(), decision)
        .await?;
    Ok(code(render::print_output(&output, args.json)))
}
