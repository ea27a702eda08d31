//! `concierge chat`: a conversation in the terminal.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Args;
use concierge::{
    ElicitationAnswer, EventKind, Result, RunOptions, RunOutput, RunStatus, Runtime, SessionId, ToolOutcome,
};
use futures::StreamExt;
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};
use tokio::sync::watch;

use crate::render::clean;
use crate::{render, setup};

/// `concierge chat`.
#[derive(Debug, Args)]
pub struct ChatArgs {
    /// Pin the session to this agent [default: the hub, which finds the
    /// agent for each message; with one agent, that agent].
    #[arg(long)]
    pub agent: Option<String>,
    /// The session [default: a new one]. An existing session continues where it was.
    #[arg(long)]
    pub session: Option<String>,
    /// Who is asking (a user id tools can read; on the blackboard as `user_id`).
    #[arg(long, value_name = "NAME")]
    pub user: Option<String>,
}

fn prompt(text: &str) {
    print!("{text}");
    let _ = std::io::stdout().flush();
}

/// The first 200 characters, cleaned for the terminal.
fn shorten(text: &str) -> String {
    let text = clean(text);
    let mut s: String = text.chars().take(200).collect();
    if text.chars().count() > 200 {
        s.push('…');
    }
    s
}

/// Prints the session's events as they happen; `printed` tracks the last seq shown.
fn spawn_printer(rt: &Runtime, session: SessionId, from: u64, printed: watch::Sender<u64>, streamed: Arc<AtomicBool>) {
    let mut events = rt.subscribe(session.clone(), from);
    tokio::spawn(async move {
        let mut speaking = false;
        let mut agent = String::new();
        let mut children: std::collections::HashMap<SessionId, String> = Default::default();
        while let Some(event) = events.next().await {
            let Ok(event) = event else { continue };
            if event.session != session {
                // An agent called as a tool: its calls, indented under the call.
                let who = children.get(&event.session).cloned().unwrap_or_default();
                match &event.kind {
                    EventKind::ToolRequested { tool, arguments, .. } => {
                        println!(
                            "    [{who}] -> {}({})",
                            clean(tool.as_str()),
                            shorten(&arguments.to_string())
                        );
                    }
                    EventKind::ToolFinished { tool, outcome, .. } => match outcome {
                        ToolOutcome::Ok(v) => {
                            println!("    [{who}] <- {}: {}", clean(tool.as_str()), shorten(&v.to_string()))
                        }
                        ToolOutcome::Error(e) => {
                            println!(
                                "    [{who}] <- {} {}",
                                clean(tool.as_str()),
                                shorten(&render::tool_error(e))
                            );
                        }
                    },
                    _ => {}
                }
                continue;
            }
            if let EventKind::ChildStarted { agent, child, .. } = &event.kind {
                children.insert(child.clone(), clean(agent.as_str()));
            }
            match &event.kind {
                EventKind::RunStarted { agent: who, .. } => {
                    agent = clean(who.as_str());
                    speaking = false;
                }
                EventKind::AgentChanged { to, .. } => {
                    agent = clean(to.as_str());
                    println!("  (now talking to {agent})");
                }
                EventKind::AgentRouted {
                    to: Some(to), source, ..
                } => println!("  (routed to {} by {source})", clean(to.as_str())),
                EventKind::ModelRequested { .. } => speaking = false,
                EventKind::ToolRequested { tool, arguments, .. } => {
                    println!("  -> {}({})", clean(tool.as_str()), shorten(&arguments.to_string()));
                }
                EventKind::ToolReused { tool, from, .. } => {
                    println!("  -> {}: reused the result of {from}", clean(tool.as_str()));
                }
                EventKind::ToolFinished {
                    tool,
                    outcome,
                    duration_ms,
                    ..
                } => match outcome {
                    ToolOutcome::Ok(v) => println!(
                        "  <- {}: {} ({duration_ms} ms)",
                        clean(tool.as_str()),
                        shorten(&v.to_string())
                    ),
                    ToolOutcome::Error(e) => {
                        println!("  <- {} {}", clean(tool.as_str()), shorten(&render::tool_error(e)));
                    }
                },
                EventKind::CapReached { cap } => println!("  (stopping: {cap} was reached)"),
                EventKind::ToolsStatus { message, .. } => println!("  {}", render::tools_status(message)),
                EventKind::ToolProgress { message, .. } => println!("  .. {}", clean(message)),
                EventKind::ModelDelta { text } => {
                    streamed.store(true, Ordering::Relaxed);
                    if !speaking {
                        print!("{agent}: ");
                        speaking = true;
                    }
                    print!("{}", clean(text));
                    let _ = std::io::stdout().flush();
                }
                _ => {}
            }
            if !matches!(event.kind, EventKind::ModelDelta { .. }) {
                let _ = printed.send(event.seq);
            }
        }
    });
}

async fn read_line(lines: &mut Lines<BufReader<Stdin>>) -> Option<String> {
    lines.next_line().await.ok().flatten().map(|l| l.trim().to_string())
}

pub async fn chat(rt: &Runtime, args: &ChatArgs) -> Result<ExitCode> {
    let session = SessionId::new(
        args.session
            .clone()
            .unwrap_or_else(|| format!("chat-{}", concierge::engine::now().0)),
    );
    if let Some(resumed) = setup::finish_recovered(rt, &session).await? {
        println!(
            "(finished the run this session had in flight) {}",
            render::one_line(&resumed)
        );
    }
    let existing = rt.session(session.clone()).await.ok();
    let mut first_agent = match (&existing, &args.agent) {
        (None, Some(agent)) => Some(rt.client(agent.as_str())?),
        _ => None,
    };
    let current = match (&existing, &args.agent, rt.catalog().default_agent()) {
        (Some(s), _, _) => s.agent().clone(),
        (None, Some(agent), _) => agent.as_str().into(),
        (None, None, Some(default)) => default,
        (None, None, None) => {
            eprintln!("error: there is no default agent: pass --agent AGENT (`concierge agents` lists them)");
            return Ok(ExitCode::FAILURE);
        }
    };
    if let Some(agent) = rt.catalog().agent(&current) {
        let spec = &agent.spec;
        println!(
            "{} — {}",
            clean(&spec.name),
            clean(spec.starter_prompt.as_deref().unwrap_or(&spec.description))
        );
    }
    println!(
        "(session {}; /exit leaves, /end ends the session)",
        clean(session.as_str())
    );
    let from = existing.as_ref().map_or(1, |s| s.last_seq() + 1);
    let (printed_tx, mut printed) = watch::channel(from.saturating_sub(1));
    let streamed = Arc::new(AtomicBool::new(false));
    spawn_printer(rt, session.clone(), from, printed_tx, streamed.clone());
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    loop {
        prompt("you> ");
        let Some(line) = read_line(&mut lines).await else { break };
        match line.as_str() {
            "" => continue,
            "/exit" | "/quit" => break,
            "/end" => {
                rt.end(session.clone(), "the person ended the chat").await?;
                println!("(session ended)");
                break;
            }
            _ => {}
        }
        streamed.store(false, Ordering::Relaxed);
        let mut options = RunOptions::new().session_id(session.clone());
        if let Some(user) = &args.user {
            options = options.user(user.as_str());
        }
        let handle = match first_agent.take() {
            Some(client) => client.start(line, options).await,
            None => rt.start(line, options).await,
        };
        let mut output = match handle {
            Ok(handle) => handle.wait().await?,
            Err(error) => {
                eprintln!("error: {}", render::explain(&error));
                continue;
            }
        };
        let target = rt.session(session.clone()).await?.last_seq();
        let _ = printed.wait_for(|seq| *seq >= target).await;
        while output.status == RunStatus::AwaitingInput {
            // A tool's question: asked field by field, answered at once.
            match answer_question(rt, &session, &output, &mut lines).await {
                Some(next) => output = next,
                None => break,
            }
        }
        match output.status {
            RunStatus::AwaitingInput => {}
            // The next line answers it: yes, no, or what to change.
            RunStatus::AwaitingConfirmation => {
                println!(
                    "{}: {}",
                    clean(output.agent.as_str()),
                    render::confirmation_question(&output)
                );
            }
            // The next line answers it: a number, or the option's name.
            RunStatus::AwaitingChoice => {
                println!(
                    "{}: {}",
                    clean(output.agent.as_str()),
                    clean(output.reply.as_deref().unwrap_or_default())
                );
            }
            // A guardrail's sentence is never streamed: the agent says it.
            RunStatus::Blocked => {
                println!(
                    "{}: {}",
                    clean(output.agent.as_str()),
                    clean(output.reply.as_deref().unwrap_or_default())
                );
            }
            RunStatus::Completed | RunStatus::NeedsInput => {
                if streamed.load(Ordering::Relaxed) {
                    println!();
                } else {
                    println!(
                        "{}: {}",
                        clean(output.agent.as_str()),
                        clean(output.reply.as_deref().unwrap_or_default())
                    );
                }
            }
            RunStatus::Failed => {
                eprintln!("error: {}", clean(output.error.as_deref().unwrap_or_default()));
            }
            RunStatus::Cancelled => {}
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Asks the person the question a running call asks, a prompt per field of
/// its form ("decline" or "cancel" at any prompt answers so), and gives the
/// answer; `None` when input ends.
async fn answer_question(
    rt: &Runtime,
    session: &SessionId,
    output: &RunOutput,
    lines: &mut Lines<BufReader<Stdin>>,
) -> Option<RunOutput> {
    let pending = output.pending_elicitation.as_ref()?;
    let question = &pending.elicitation;
    println!("{}: {}", clean(output.agent.as_str()), clean(&question.text()));
    let fields = question.fields();
    let mut text = String::new();
    if fields.is_empty() {
        prompt("  (accept, decline or cancel)> ");
        text = read_line(lines).await?;
    }
    for field in &fields {
        let optional = if field.required { "" } else { ", optional" };
        let options = if field.options.is_empty() {
            field.kind.clone()
        } else {
            field.options.join("/")
        };
        prompt(&format!("  {} ({options}{optional})> ", clean(&field.title)));
        let value = read_line(lines).await?;
        if matches!(value.trim().to_lowercase().as_str(), "decline" | "cancel") {
            text = value;
            break;
        }
        if value.trim().is_empty() {
            continue;
        }
        if fields.len() == 1 {
            text = value;
        } else {
            text.push_str(&format!("{}: {}\n", field.name, value.trim()));
        }
    }
    let answer = match ElicitationAnswer::from_words(&text, question) {
        Ok(answer) => answer,
        Err(problem) => {
            eprintln!("error: {}", clean(&problem));
            return Some(output.clone());
        }
    };
    match rt
        .answer_question(session.clone(), pending.call_id.clone(), pending.question, answer)
        .await
    {
        Ok(next) => Some(next),
        Err(error) => {
            eprintln!("error: {}", render::explain(&error));
            Some(output.clone())
        }
    }
}
