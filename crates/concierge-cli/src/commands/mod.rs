//! The subcommands.

pub mod bench;
pub mod chat;
pub mod erase;
pub mod eval;
pub mod fork;
pub mod inspect;
pub mod mcp;
pub mod memory;
pub mod prompts;
pub mod run;
pub mod schedule;
pub mod serve;
pub mod token;
pub mod webhook;
pub mod worker;

use std::process::ExitCode;
use std::sync::Arc;

use concierge::Result;
use concierge_server::metrics::Metrics;

use crate::setup::{Access, Role, WorkerSet};
use crate::{Cli, Command, setup};

/// Runs the chosen subcommand. Every command but `bench` opens the
/// configured runtime and shuts it down cleanly at the end: commands that
/// run, confirm or serve open the database to write (taking over what dead
/// processes left); the others only read it, whoever else has it open.
pub async fn dispatch(cli: Cli) -> Result<ExitCode> {
    let (access, label) = match &cli.command {
        Command::Bench(args) => return bench::bench(&cli, args).await,
        Command::Eval(args) => return eval::eval(&cli, args).await,
        Command::Token(args) => return token::token(args),
        Command::Mcp(args) if args.signs_in() => return mcp::sign_in(&cli, args).await,
        Command::Run(_) => (Access::Write, "concierge run"),
        Command::Confirm(_) => (Access::Write, "concierge confirm"),
        Command::Erase(_) => (Access::Write, "concierge erase"),
        Command::Fork(_) => (Access::Write, "concierge fork"),
        Command::Replay(_) => (Access::Write, "concierge replay"),
        Command::Chat(_) => (Access::Write, "concierge chat"),
        Command::Mcp(args) if args.serves() => (Access::Write, "concierge mcp serve"),
        Command::Serve(_) => (Access::Write, "concierge serve"),
        Command::Worker(_) => (Access::Write, "concierge worker"),
        Command::Mcp(_) => (Access::Read, "concierge mcp"),
        Command::Prompts(_) => (Access::Read, "concierge prompts"),
        Command::Memory(_) => (Access::Read, "concierge memory"),
        Command::Schedule(_) => (Access::Read, "concierge schedule"),
        Command::Webhook(_) => (Access::Read, "concierge webhook"),
        Command::Agents(_) | Command::Goals(_) | Command::Tools(_) | Command::History(_) | Command::Sessions(_) => {
            (Access::Read, "concierge")
        }
    };
    // `concierge serve` counts runs, model and tool calls for `/metrics`.
    let metrics = matches!(cli.command, Command::Serve(_)).then(|| Arc::new(Metrics::new()));
    let workers = match &cli.command {
        Command::Worker(args) => args.workers(),
        _ if cli.workers => WorkerSet::All,
        _ => WorkerSet::None,
    };
    let role = Role {
        access,
        label,
        metrics: metrics.as_ref(),
        workers: workers.clone(),
        // A server listens at once, however many runs a crash left.
        recover_in_background: matches!(cli.command, Command::Serve(_)),
        works_in_background: match &cli.command {
            Command::Serve(_) | Command::Chat(_) | Command::Worker(_) => true,
            Command::Mcp(args) => args.serves(),
            _ => false,
        },
        models: match &cli.command {
            Command::Replay(args) => args.against_model.iter().cloned().collect(),
            _ => Vec::new(),
        },
    };
    let rt = setup::runtime(&cli, role).await?;
    setup::discover_for_workers(&rt, &workers).await;
    let result = match &cli.command {
        Command::Run(args) => run::run(&rt, args).await,
        Command::Confirm(args) => run::confirm(&rt, args).await,
        Command::Chat(args) => chat::chat(&rt, args).await,
        Command::Agents(args) => inspect::agents(&rt, args).await,
        Command::Goals(args) => inspect::goals(&rt, args).await,
        Command::Tools(args) => inspect::tools(&rt, args).await,
        Command::History(args) => inspect::history(&rt, args).await,
        Command::Sessions(args) => inspect::sessions(&rt, args).await,
        Command::Mcp(args) => mcp::mcp(&rt, args).await,
        Command::Prompts(args) => prompts::prompts(&rt, args).await,
        Command::Memory(args) => memory::memory(&rt, args).await,
        Command::Schedule(args) => schedule::schedule(&rt, args).await,
        Command::Webhook(args) => webhook::webhook(&rt, args).await,
        Command::Erase(args) => erase::erase(&rt, args).await,
        Command::Fork(args) => fork::fork(&rt, args).await,
        Command::Replay(args) => fork::replay(&rt, args).await,
        Command::Serve(args) => serve::serve(&cli, &rt, args, metrics).await,
        Command::Worker(args) => worker::worker(&rt, args).await,
        Command::Bench(_) | Command::Token(_) | Command::Eval(_) => Ok(ExitCode::SUCCESS),
    };
    rt.shutdown().await;
    result
}

/// The exit code for a run's success.
pub fn code(ok: bool) -> ExitCode {
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
