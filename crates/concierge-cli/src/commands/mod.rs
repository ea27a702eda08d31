//! The subcommands.

pub mod chat;
pub mod inspect;
pub mod run;

use std::process::ExitCode;

use concierge::Result;

use crate::{Cli, Command};

/// Runs the chosen subcommand.
pub async fn dispatch(cli: Cli) -> Result<ExitCode> {
    match &cli.command {
        Command::Run(args) => run::run(&cli, args).await,
        Command::Confirm(args) => run::confirm(&cli, args).await,
        Command::Chat(args) => chat::chat(&cli, args).await,
        Command::Agents(args) => inspect::agents(&cli, args).await,
        Command::Tools(args) => inspect::tools(&cli, args).await,
        Command::History(args) => inspect::history(&cli, args).await,
        Command::Sessions(args) => inspect::sessions(&cli, args).await,
    }
}

/// The exit code for a run's success.
pub fn code(ok: bool) -> ExitCode {
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
