//! `concierge erase --user U --yes`: everything stored of one person — their
//! conversations' text, what is remembered about them, their schedules.

use std::process::ExitCode;

use clap::Args;
use concierge::{Result, Runtime};

use super::memory::{Person, shown};

/// `concierge erase`.
#[derive(Debug, Args)]
pub struct EraseArgs {
    #[command(flatten)]
    pub person: Person,
    /// Erases for good (without it, nothing is erased).
    #[arg(long)]
    pub yes: bool,
}

pub async fn erase(rt: &Runtime, args: &EraseArgs) -> Result<ExitCode> {
    let who = shown(&args.person);
    if args.person.user.is_none() {
        eprintln!("Name the person with --user (and --tenant on a server with tokens).");
        return Ok(ExitCode::FAILURE);
    }
    if !args.yes {
        eprintln!(
            "This erases {who}'s conversations, memories and schedules for good; run it again with --yes to do it."
        );
        return Ok(ExitCode::FAILURE);
    }
    let erased = rt.erase_person(&args.person.owner()).await?;
    println!(
        "Erased everything stored of {who}: {}, {} and {}.",
        count(erased.sessions, "conversation"),
        count(erased.memories, "memory"),
        count(erased.schedules, "schedule"),
    );
    Ok(ExitCode::SUCCESS)
}

fn count(n: usize, noun: &str) -> String {
    match (n, noun) {
        (1, _) => format!("1 {noun}"),
        (_, "memory") => format!("{n} memories"),
        _ => format!("{n} {noun}s"),
    }
}
