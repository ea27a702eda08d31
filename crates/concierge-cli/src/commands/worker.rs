//! `concierge worker`: runs Temporal workers until Ctrl-C (or SIGTERM), or
//! until they stop by themselves on an error they cannot retry.

use std::process::ExitCode;

use clap::Args;
use concierge::{Result, Runtime};

use crate::setup::WorkerSet;

/// `concierge worker`.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// Run only these agents' tool calls (comma-separated), on their own
    /// task queues; without it, every worker runs: the session workflows,
    /// the model calls and every agent's tools.
    #[arg(long, value_name = "AGENT,...", value_delimiter = ',', conflicts_with = "no_tools")]
    pub agents: Vec<String>,
    /// Run the session workflows and the model calls but no agent's tools
    /// (other workers run those with --agents).
    #[arg(long)]
    pub no_tools: bool,
}

impl WorkerArgs {
    /// The workers these arguments ask for.
    pub fn workers(&self) -> WorkerSet {
        let agents: Vec<String> = self
            .agents
            .iter()
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty())
            .collect();
        if !agents.is_empty() {
            WorkerSet::ToolsOf(agents)
        } else if self.no_tools {
            WorkerSet::NoTools
        } else {
            WorkerSet::All
        }
    }
}

/// Runs until stopped: the workers started with the runtime, on their own
/// thread; this waits for the signal, then the runtime's shutdown stops them.
pub async fn worker(rt: &Runtime, args: &WorkerArgs) -> Result<ExitCode> {
    let what = match args.workers() {
        WorkerSet::ToolsOf(agents) => format!("the tool calls of {}", agents.join(", ")),
        WorkerSet::NoTools => "the session workflows and the model calls".to_string(),
        WorkerSet::All | WorkerSet::None => {
            let agents: Vec<String> = rt.catalog().agent_ids().iter().map(ToString::to_string).collect();
            format!(
                "the session workflows, the model calls and the tool calls of {}",
                agents.join(", ")
            )
        }
    };
    let signalled = super::serve::stop_signal();
    eprintln!("running {what}; Ctrl-C stops");
    tokio::select! {
        () = signalled => {}
        // Workers that stopped by themselves end the process (with why),
        // for its supervisor to restart it.
        error = rt.halted() => return Err(error),
    }
    eprintln!("stopping the workers (calls in progress get a few seconds to finish)");
    Ok(ExitCode::SUCCESS)
}
