//! `concierge schedule add|list|pause|resume|delete`: runs at a time or on
//! a cron expression, fired by a `concierge serve` (or `chat`, `worker`) on
//! the same database.

use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use concierge::schedule::{CatchUp, NewSchedule, Schedule, When, show_time};
use concierge::{Error, Result, Runtime, Timestamp};

use super::memory::{Person, shown};

/// `concierge schedule`.
#[derive(Debug, Args)]
pub struct ScheduleArgs {
    #[command(subcommand)]
    pub command: ScheduleCommand,
}

/// After downtime, what a schedule that missed its time does.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum CatchUpArg {
    /// Run once for every time missed, then keep to the schedule.
    Once,
    /// Run nothing for the times missed; wait for the next.
    Skip,
}

/// What to do with schedules.
#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Adds a schedule: MESSAGE to an agent once (--at, --in-minutes) or again and again (--cron).
    Add {
        #[command(flatten)]
        person: Person,
        /// The message each run starts with.
        message: String,
        /// Once, at this time (RFC 3339: 2026-12-01T09:00:00Z).
        #[arg(long, group = "when")]
        at: Option<String>,
        /// Once, this many minutes from now.
        #[arg(long, group = "when")]
        in_minutes: Option<u32>,
        /// Again and again, on a five-field cron expression in UTC ("0 9 * * 1-5").
        #[arg(long, group = "when")]
        cron: Option<String>,
        /// The agent that takes each run (default: the session's current agent).
        #[arg(long)]
        agent: Option<String>,
        /// The session its runs go to (default: a new one of its own).
        #[arg(long)]
        session: Option<String>,
        /// After downtime: run once for the times missed, or skip them.
        #[arg(long, value_enum, default_value = "once")]
        catch_up: CatchUpArg,
    },
    /// Lists a person's schedules with their ids.
    List {
        #[command(flatten)]
        person: Person,
        /// Prints JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Pauses a schedule: it runs nothing until resumed.
    Pause {
        #[command(flatten)]
        person: Person,
        /// The schedule's id (from `schedule list`).
        id: String,
    },
    /// Resumes a paused schedule (a cron schedule runs next at its next time from now).
    Resume {
        #[command(flatten)]
        person: Person,
        /// The schedule's id.
        id: String,
    },
    /// Deletes a schedule.
    Delete {
        #[command(flatten)]
        person: Person,
        /// The schedule's id.
        id: String,
    },
}

pub async fn schedule(rt: &Runtime, args: &ScheduleArgs) -> Result<ExitCode> {
    let store = rt.schedules();
    match &args.command {
        ScheduleCommand::Add {
            person,
            message,
            at,
            in_minutes,
            cron,
            agent,
            session,
            catch_up,
        } => {
            let when = match (at, in_minutes, cron) {
                (Some(at), _, _) => When::at_time(at)?,
                (_, Some(minutes), _) => When::at(Timestamp(
                    Timestamp::from(std::time::SystemTime::now()).0 + u64::from(*minutes) * 60_000,
                )),
                (_, _, Some(cron)) => When::cron(cron)?,
                _ => {
                    eprintln!("Say when: --at TIME, --in-minutes N or --cron EXPRESSION.");
                    return Ok(ExitCode::FAILURE);
                }
            };
            let mut new = NewSchedule::new(person.owner(), message.as_str(), when).catch_up(match catch_up {
                CatchUpArg::Once => CatchUp::Once,
                CatchUpArg::Skip => CatchUp::Skip,
            });
            if let Some(agent) = agent {
                new = new.agent(agent.as_str());
            }
            if let Some(session) = session {
                let id = concierge::SessionId::in_tenant(person.tenant.as_deref(), session);
                new = new.session(id.as_str());
            }
            let added = rt.schedule(new).await?;
            println!("Scheduled {}: {}", added.id, describe(&added));
        }
        ScheduleCommand::List { person, json } => {
            let found = store.list(&person.owner()).await?;
            if *json {
                let text = serde_json::to_string_pretty(&found).map_err(|e| Error::Storage(e.to_string()))?;
                println!("{text}");
            } else if found.is_empty() {
                println!("{} has no schedules.", capitalised(&shown(person)));
            } else {
                for schedule in found {
                    println!("{}  {}", schedule.id, describe(&schedule));
                }
            }
        }
        ScheduleCommand::Pause { person, id } | ScheduleCommand::Resume { person, id } => {
            let pause = matches!(args.command, ScheduleCommand::Pause { .. });
            match store.set_paused(&person.owner(), id, pause).await? {
                Some(schedule) => println!(
                    "{} {}: {}",
                    if pause { "Paused" } else { "Resumed" },
                    id,
                    describe(&schedule)
                ),
                None => return Ok(unknown(person, id)),
            }
        }
        ScheduleCommand::Delete { person, id } => {
            if !store.delete(&person.owner(), id).await? {
                return Ok(unknown(person, id));
            }
            println!("Deleted {id}.");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn unknown(person: &Person, id: &str) -> ExitCode {
    eprintln!(
        "{} has no schedule {id}; `concierge schedule list` shows the ids.",
        capitalised(&shown(person))
    );
    ExitCode::FAILURE
}

/// A schedule in one line: what, when, what became of it.
fn describe(schedule: &Schedule) -> String {
    let mut line = format!("\"{}\" {}", schedule.message, schedule.when.describe());
    if let Some(agent) = &schedule.agent {
        line.push_str(&format!(" to {agent}"));
    }
    if schedule.paused {
        line.push_str(", paused");
    } else if let Some(next) = schedule.next_at {
        line.push_str(&format!(", next at {}", show_time(next)));
    } else {
        line.push_str(", done");
    }
    if schedule.runs > 0 {
        let noun = if schedule.runs == 1 { "run" } else { "runs" };
        line.push_str(&format!(" ({} {noun} so far)", schedule.runs));
    }
    if let Some(error) = &schedule.last_error {
        line.push_str(&format!("; last time: {error}"));
    }
    line
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map_or_else(String::new, |first| first.to_uppercase().chain(chars).collect())
}
