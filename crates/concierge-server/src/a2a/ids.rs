//! Task ids: the context (the session, as the caller names it) and the run
//! that started the task, `<context>~<run>`. Neither part can hold `~`
//! (client ids are letters, digits, `-`, `_` and `.`; the server's are
//! `s-`/`run-` and hex), so the id reads back unambiguously. A task id is
//! only ever looked up in the caller's own id space, and its run must be
//! one the named session has: a client cannot reach another session's or
//! another tenant's run by naming it.

use crate::ground::ids::valid_id;

/// The separator between a task id's context and run.
const SEPARATOR: char = '~';

/// A task, as its id names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskRef {
    /// The context: the session's id in the caller's id space.
    pub context: String,
    /// The run that started the task.
    pub run: String,
}

impl TaskRef {
    /// The task that `run` started in `context`.
    pub fn new(context: impl Into<String>, run: impl Into<String>) -> Self {
        Self {
            context: context.into(),
            run: run.into(),
        }
    }

    /// Reads a task id; `None` if it cannot be one of ours (then no task has it).
    pub fn parse(id: &str) -> Option<Self> {
        let (context, run) = id.split_once(SEPARATOR)?;
        (valid_id(context) && valid_id(run)).then(|| Self::new(context, run))
    }

    /// The task's id.
    pub fn id(&self) -> String {
        format!("{}{SEPARATOR}{}", self.context, self.run)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_task_id_reads_back_and_a_foreign_shape_is_no_task() {
        let task = TaskRef::new("s-1", "run-2");
        assert_eq!(task.id(), "s-1~run-2");
        assert_eq!(TaskRef::parse(&task.id()).unwrap(), task);
        for bad in ["", "s-1", "~run", "s-1~", "a/b~run", "s~r~x", "s~r:cancel"] {
            assert!(TaskRef::parse(bad).is_none(), "{bad}");
        }
    }
}
