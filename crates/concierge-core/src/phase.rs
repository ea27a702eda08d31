//! A run's nine phases and the table of valid transitions
//! (`docs/architecture.md`, "Phases").
//!
//! The set is closed: phases are the engine's protocol (what subscribers
//! see, what a journal replays), the same for every agent. Behaviour of an
//! agent's own goes in a custom planner, tools, the blackboard or another
//! agent; `docs/architecture.md` ("The phase set is closed") says why and how.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a run stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Parse the request and identify the goal.
    Initialize,
    /// Decide what to do (ask the planner).
    Planning,
    /// Ask the person: for missing information or to approve a call.
    Clarifying,
    /// Check and choose the tool calls to make.
    ToolSelection,
    /// Tool calls are running.
    ToolExecution,
    /// Take in tool results; decide whether more is needed.
    Analysis,
    /// Compose the answer.
    Synthesis,
    /// The run is finished.
    Completion,
    /// Something failed; the run will be closed.
    Error,
}

impl Phase {
    /// Every phase, in the order they are declared.
    pub const ALL: [Phase; 9] = [
        Phase::Initialize,
        Phase::Planning,
        Phase::Clarifying,
        Phase::ToolSelection,
        Phase::ToolExecution,
        Phase::Analysis,
        Phase::Synthesis,
        Phase::Completion,
        Phase::Error,
    ];

    /// The phases this one may move to.
    ///
    /// | from | to |
    /// | --- | --- |
    /// | `Initialize` | `Planning`, `Clarifying`, `Error` |
    /// | `Planning` | `Clarifying`, `ToolSelection`, `Synthesis`, `Error` |
    /// | `Clarifying` | `ToolExecution`, `Analysis`, `Completion`, `Error` |
    /// | `ToolSelection` | `ToolExecution`, `Clarifying`, `Error` |
    /// | `ToolExecution` | `Analysis`, `Error` |
    /// | `Analysis` | `ToolSelection`, `Synthesis`, `Clarifying`, `Error` |
    /// | `Synthesis` | `Completion`, `Analysis`, `Error` |
    /// | `Error` | `Clarifying`, `Completion` |
    /// | `Completion` | (none: the run is over) |
    ///
    /// From `Clarifying`: the person's approval runs the parked call
    /// (`ToolExecution`), a denial is analysed as a declined result
    /// (`Analysis`), a question that was asked closes the run (`Completion`),
    /// and failures go to `Error`. The core parks a call for approval in
    /// `Clarifying` (from `ToolSelection` when nothing else of the batch
    /// runs, from `Analysis` after the rest of the batch finished), and asks
    /// the model again after tool results from `Analysis` (the table has no
    /// `Analysis → Planning`).
    pub fn successors(self) -> &'static [Phase] {
        use Phase::*;
        match self {
            Initialize => &[Planning, Clarifying, Error],
            Planning => &[Clarifying, ToolSelection, Synthesis, Error],
            Clarifying => &[ToolExecution, Analysis, Completion, Error],
            ToolSelection => &[ToolExecution, Clarifying, Error],
            ToolExecution => &[Analysis, Error],
            Analysis => &[ToolSelection, Synthesis, Clarifying, Error],
            Synthesis => &[Completion, Analysis, Error],
            Error => &[Clarifying, Completion],
            Completion => &[],
        }
    }

    /// Whether `self -> to` is in the table.
    pub fn can_move_to(self, to: Phase) -> bool {
        self.successors().contains(&to)
    }

    /// Checks `self -> to` against the table.
    pub fn check_move(self, to: Phase) -> Result<(), InvalidTransition> {
        if self.can_move_to(to) {
            Ok(())
        } else {
            Err(InvalidTransition { from: self, to })
        }
    }

    /// Whether the run is over.
    pub fn is_terminal(self) -> bool {
        self == Phase::Completion
    }

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Initialize => "initialize",
            Phase::Planning => "planning",
            Phase::Clarifying => "clarifying",
            Phase::ToolSelection => "tool_selection",
            Phase::ToolExecution => "tool_execution",
            Phase::Analysis => "analysis",
            Phase::Synthesis => "synthesis",
            Phase::Completion => "completion",
            Phase::Error => "error",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A transition that is not in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvalidTransition {
    /// The phase the run was in.
    pub from: Phase,
    /// The phase that was asked for.
    pub to: Phase,
}

impl fmt::Display for InvalidTransition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid phase transition {} -> {} (allowed from {}: {:?})",
            self.from,
            self.to,
            self.from,
            self.from.successors()
        )
    }
}

impl std::error::Error for InvalidTransition {}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table of `successors`' doc, written out independently of it.
    fn seed_allows(from: Phase, to: Phase) -> bool {
        use Phase::*;
        matches!(
            (from, to),
            (Initialize, Planning | Clarifying | Error)
                | (Planning, Clarifying | ToolSelection | Synthesis | Error)
                | (ToolSelection, ToolExecution | Clarifying | Error)
                | (ToolExecution, Analysis | Error)
                | (Analysis, ToolSelection | Synthesis | Clarifying | Error)
                | (Synthesis, Completion | Analysis | Error)
                | (Error, Clarifying | Completion)
                | (Clarifying, ToolExecution | Analysis | Completion | Error)
        )
    }

    #[test]
    fn every_pair_is_checked_against_the_table() {
        let mut allowed = 0;
        for from in Phase::ALL {
            for to in Phase::ALL {
                let result = from.check_move(to);
                assert_eq!(result.is_ok(), seed_allows(from, to), "{from} -> {to}");
                if result.is_ok() {
                    allowed += 1;
                } else {
                    assert_eq!(result, Err(InvalidTransition { from, to }));
                }
            }
        }
        assert_eq!(allowed, 25);
    }

    #[test]
    fn completion_is_terminal() {
        assert!(Phase::Completion.successors().is_empty());
        assert!(Phase::Completion.is_terminal());
        assert!(Phase::Initialize.check_move(Phase::Completion).is_err());
    }
}
