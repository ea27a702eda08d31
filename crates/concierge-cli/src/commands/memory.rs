//! `concierge memory list|add|forget|export`: what is remembered about a
//! person, as they (or their administrator) see and erase it.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use concierge::memory::{MemoryOrigin, MemoryOwner};
use concierge::{Error, Result, Runtime};

/// `concierge memory`.
#[derive(Debug, Args)]
pub struct MemoryArgs {
    #[command(subcommand)]
    pub command: MemoryCommand,
}

/// Whose memories.
#[derive(Debug, Args)]
pub struct Person {
    /// The person (the user their runs are for: `--user` of `run`/`chat`,
    /// a token's user). Without it: the deployment's one person, whose runs
    /// name no user.
    #[arg(long)]
    pub user: Option<String>,
    /// The person's tenant (a token's tenant); none on a server without tokens.
    #[arg(long)]
    pub tenant: Option<String>,
}

impl Person {
    pub fn owner(&self) -> MemoryOwner {
        MemoryOwner::of(self.tenant.as_deref(), self.user.as_deref().unwrap_or_default())
    }
}

/// What to do with a person's memories.
#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// Lists what is remembered, newest first, with each memory's id.
    List {
        #[command(flatten)]
        person: Person,
        /// Prints JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Remembers something, as an agent's `remember` would.
    Add {
        #[command(flatten)]
        person: Person,
        /// What to remember.
        text: String,
    },
    /// Forgets one memory by its id, or everything with --all.
    Forget {
        #[command(flatten)]
        person: Person,
        /// The memory's id (from `memory list`).
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        id: Option<String>,
        /// Forgets everything remembered about the person.
        #[arg(long)]
        all: bool,
    },
    /// Prints every memory as JSON lines (id, text, created_at, session, agent).
    Export {
        #[command(flatten)]
        person: Person,
    },
}

pub async fn memory(rt: &Runtime, args: &MemoryArgs) -> Result<ExitCode> {
    let store = rt.memories();
    match &args.command {
        MemoryCommand::List { person, json } => {
            let found = store.list(&person.owner(), None).await?;
            if *json {
                let text = serde_json::to_string_pretty(&found).map_err(|e| Error::Storage(e.to_string()))?;
                println!("{text}");
            } else if found.is_empty() {
                println!("Nothing is remembered about {}.", shown(person));
            } else {
                for memory in found {
                    println!("{}  {}  {}", memory.id, date(memory.created_at.0), memory.text);
                }
            }
        }
        MemoryCommand::Add { person, text } => {
            let memory = store.remember(&person.owner(), text, MemoryOrigin::default()).await?;
            println!("Remembered ({}): {}", memory.id, memory.text);
        }
        MemoryCommand::Forget { person, id, all } => {
            if *all {
                let n = store.forget_all(&person.owner()).await?;
                let noun = if n == 1 { "memory" } else { "memories" };
                println!("Forgot {n} {noun} of {}.", shown(person));
            } else if let Some(id) = id {
                if !store.forget(&person.owner(), id).await? {
                    eprintln!(
                        "Nothing is remembered about {} under {id}; `concierge memory list` shows the ids.",
                        shown(person)
                    );
                    return Ok(ExitCode::FAILURE);
                }
                println!("Forgot {id}.");
            }
        }
        MemoryCommand::Export { person } => {
            for memory in store.list(&person.owner(), None).await? {
                let line = serde_json::to_string(&memory).map_err(|e| Error::Storage(e.to_string()))?;
                println!("{line}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The person, as a sentence names them.
pub fn shown(person: &Person) -> String {
    let user = match person.user.as_deref() {
        Some(user) => format!("user {user}"),
        None => "the person of runs without a user".to_string(),
    };
    match &person.tenant {
        Some(tenant) => format!("{user} of tenant {tenant}"),
        None => user,
    }
}

/// A day as `YYYY-MM-DD`.
fn date(millis: u64) -> String {
    i64::try_from(millis)
        .ok()
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map_or_else(|| "?".to_string(), |t| t.format("%Y-%m-%d").to_string())
}
