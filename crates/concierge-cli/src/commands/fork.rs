//! `concierge fork SESSION` and `concierge replay SESSION [RUN]`: a new
//! conversation from another's up to one of its events, and a past run run
//! again against another model or planner without side effects.

use std::process::ExitCode;

use clap::{Args, ValueEnum};
use concierge::core::{EventKind, ForkError, PlannerMode};
use concierge::runtime::ReplayOptions;
use concierge::{Error, Message, Result, RunId, Runtime, SessionId};
use serde_json::json;

use crate::render::clean;

/// `concierge fork`.
#[derive(Debug, Args)]
pub struct ForkArgs {
    /// The conversation to fork.
    pub session: String,
    /// The last event the fork carries [default: the latest].
    #[arg(long, value_name = "EVENT", conflicts_with = "before_message")]
    pub at: Option<u64>,
    /// Fork just before the person's N-th message (from 1), to write it
    /// again differently.
    #[arg(long, value_name = "N")]
    pub before_message: Option<usize>,
    /// The new conversation's id [default: the session's, with `-fork-` and a number].
    #[arg(long, value_name = "ID")]
    pub into: Option<String>,
    /// The conversation's tenant (a token's tenant); none without tokens.
    #[arg(long)]
    pub tenant: Option<String>,
}

/// How every agent plans in a replay.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Planner {
    /// With the model.
    Model,
    /// With the agent's rules.
    Rules,
    /// With the agent's custom planner.
    Custom,
}

impl From<Planner> for PlannerMode {
    fn from(planner: Planner) -> Self {
        match planner {
            Planner::Model => PlannerMode::Model,
            Planner::Rules => PlannerMode::Rules,
            Planner::Custom => PlannerMode::Custom,
        }
    }
}

/// `concierge replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The conversation.
    pub session: String,
    /// The run to replay [default: the conversation's last].
    pub run: Option<String>,
    /// The model to ask instead of the agents' (provider:name; its
    /// provider's settings come from concierge.toml).
    #[arg(long, value_name = "PROVIDER:NAME")]
    pub against_model: Option<String>,
    /// How every agent plans instead.
    #[arg(long, value_enum)]
    pub planner: Option<Planner>,
    /// The conversation's tenant (a token's tenant); none without tokens.
    #[arg(long)]
    pub tenant: Option<String>,
    /// Prints JSON.
    #[arg(long)]
    pub json: bool,
}

pub async fn fork(rt: &Runtime, args: &ForkArgs) -> Result<ExitCode> {
    let tenant = args.tenant.as_deref();
    let from = SessionId::in_tenant(tenant, &args.session);
    let at = match args.before_message {
        Some(n) => Some(before_message(rt, &from, n).await?),
        None => args.at,
    };
    let into = match &args.into {
        Some(id) => id.clone(),
        None => format!("{}-fork-{}", args.session, unique()),
    };
    let mut options = concierge::RunOptions::new().session_id(SessionId::in_tenant(tenant, &into));
    if let Some(tenant) = tenant {
        options = options.tenant(tenant);
    }
    let forked = rt.fork(from, at, options).await?;
    println!(
        "Forked {} at event {} into {}.",
        clean(&args.session),
        forked.origin.seq,
        clean(&into)
    );
    println!("{}", forked.origin.note);
    println!("Go on with it: concierge chat --session {}", clean(&into));
    Ok(ExitCode::SUCCESS)
}

/// The event just before the person's `n`-th message in `session`.
async fn before_message(rt: &Runtime, session: &SessionId, n: usize) -> Result<u64> {
    let said: Vec<u64> = rt
        .events(session.clone())
        .await?
        .iter()
        .filter(|e| {
            matches!(
                &e.kind,
                EventKind::Message {
                    message: Message::User { .. }
                }
            )
        })
        .map(|e| e.seq)
        .collect();
    match said.get(n.max(1) - 1) {
        Some(seq) => Ok(seq.saturating_sub(1)),
        None => Err(Error::Fork(ForkError::NoSuchMessage { n, count: said.len() })),
    }
}

/// A number that makes a default id new: the time in microseconds.
fn unique() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros())
}

pub async fn replay(rt: &Runtime, args: &ReplayArgs) -> Result<ExitCode> {
    let tenant = args.tenant.as_deref();
    let session = SessionId::in_tenant(tenant, &args.session);
    let run = match &args.run {
        Some(run) => RunId::new(run.as_str()),
        None => match rt.session(session.clone()).await?.last_output() {
            Some(output) => output.run_id.clone(),
            None => {
                eprintln!("The conversation has no finished run to replay yet.");
                return Ok(ExitCode::FAILURE);
            }
        },
    };
    let into = format!("{}-replay-{}", args.session, unique());
    let mut options = ReplayOptions::new()
        .session_id(SessionId::in_tenant(tenant, &into))
        .tenant(args.tenant.clone());
    if let Some(model) = &args.against_model {
        options = options.model(model.clone());
    }
    if let Some(planner) = args.planner {
        options = options.planner(planner.into());
    }
    let replay = rt.replay(session, run, options).await?;
    let then = replay.original.reply.as_deref().unwrap_or("(no answer)");
    let now = replay.replayed.reply.as_deref().unwrap_or("(no answer)");
    if args.json {
        let text = json!({
            "session": into,
            "run": replay.original.run_id,
            "original": {"reply": replay.original.reply, "status": replay.original.status, "tool_calls": replay.original.calls.len()},
            "replayed": {"reply": replay.replayed.reply, "status": replay.replayed.status, "usage": replay.replayed.usage},
            "same_reply": replay.original.reply == replay.replayed.reply,
            "answered_from_original": replay.answered,
            "refused": replay.refused,
        });
        println!("{text:#}");
        return Ok(ExitCode::SUCCESS);
    }
    let against = match (&args.against_model, args.planner) {
        (Some(model), _) => format!("model {}", clean(model)),
        (None, Some(planner)) => format!("the {} planner", format!("{planner:?}").to_lowercase()),
        (None, None) => "the same model and planner".to_string(),
    };
    let wrote: Vec<String> = replay.original.messages.iter().map(Message::text).collect();
    println!(
        "Replayed run {} of {} against {against}.",
        clean(replay.original.run_id.as_str()),
        clean(&args.session)
    );
    println!("The person wrote: {}", clean(&wrote.join(" ")));
    println!("Then: {}", clean(then));
    println!("Now:  {}", clean(now));
    println!(
        "{}",
        if then == now {
            "Same answer."
        } else {
            "The answers differ."
        }
    );
    println!(
        "No tool ran: {} answered from the original run, {} refused because the original made no such call.",
        calls(replay.answered),
        calls(replay.refused)
    );
    println!("The replay is conversation {}.", clean(&into));
    Ok(ExitCode::SUCCESS)
}

fn calls(n: usize) -> String {
    match n {
        1 => "1 call".to_string(),
        n => format!("{n} calls"),
    }
}
