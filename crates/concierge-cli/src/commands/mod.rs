//! The subcommands.

pub mod bench;
pub mod chat;
pub mod inspect;
pub mod mcp;
pub mod run;

use std::process::ExitCode;

use concierge::Result;

use crate::{Cli, Command, setup};

/// Runs the chosen subcommand. Every command but `bench` opens the
/// configured runtime (finishing the runs its database had in flight) and
/// shuts it down cleanly at the end.
pub async fn dispatch(cli: Cli) -> Result<ExitCode> {
    if let Command::Bench(args) = &cli.command {
        return bench::bench(&cli, args).await;
    }
    let rt = setup::runtime(&cli).await?;
    let result = match &cli.command {
        Command::Run(args) => run::run(&rt, args).await,
        Command::Confirm(args) => run::confirm(&rt, args).await,
        Command::Chat(args) => chat::chat(&rt, args).await,
        Command::Agents(args) => inspect::agents(&rt, args).await,
        Command::Tools(args) => inspect::tools(&rt, args).await,
        Command::History(args) => inspect::history(&rt, args).await,
        Command::Sessions(args) => inspect::sessions(&rt, args).await,
        Command::Mcp(args) => mcp::mcp(&rt, args).await,
        Command::Bench(_) => Ok(ExitCode::SUCCESS),
    };
    rt.shutdown().await;
    result
}

/// The exit code for a run's success.
pub fn code(ok: bool) -> ExitCode {
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
