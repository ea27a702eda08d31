//! `concierge fork` and `concierge replay` through the binary, on the task
//! manager of `examples/tasks/` (offline, on rules): a fork carries the
//! conversation and does not create a task twice; a replay creates none.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/cli.rs"]
mod cli;

use cli::{concierge, example};

#[test]
fn a_fork_does_not_redo_a_task_and_a_replay_creates_none() {
    let dir = tempfile::tempdir().unwrap();
    example(dir.path(), "tasks");
    let run = |args: &[&str]| {
        let out = concierge(dir.path(), args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    run(&["run", "--session", "s1", "add a task to buy milk"]);
    assert_eq!(
        run(&["run", "--session", "s1", "yes"]),
        "Created task #9 'Buy milk' (medium priority)."
    );
    run(&["run", "--session", "s1", "add a task to call mom"]);
    run(&["run", "--session", "s1", "yes"]);
    let history = run(&["history", "s1"]);
    let count = |listed: &str, title: &str| listed.lines().filter(|l| l.contains(title)).count();

    // Write the second message again differently, from just before it.
    let forked = run(&["fork", "s1", "--before-message", "2", "--into", "s2"]);
    assert!(forked.starts_with("Forked s1 at event "), "{forked}");
    assert!(
        forked.contains("Done before the fork point, and not done again here: create_task."),
        "{forked}"
    );
    assert!(
        forked.contains("what it did after the fork point still stands (create_task)"),
        "{forked}"
    );
    // The first task again is answered from the original, not created twice.
    assert_eq!(
        run(&["run", "--session", "s2", "add a task to buy milk"]),
        "Created task #9 'Buy milk' (medium priority)."
    );
    let listed = run(&["run", "--session", "s3", "list my tasks"]);
    assert_eq!(count(&listed, "Buy milk"), 1, "{listed}");
    assert_eq!(count(&listed, "Call mom"), 1, "{listed}");
    assert_eq!(run(&["history", "s1"]), history, "the original is untouched");

    // A replay of the last run by the rules creates nothing.
    let replayed = run(&["replay", "s1", "--planner", "rules"]);
    assert!(replayed.contains("Then: Created task #10 'Call mom'"), "{replayed}");
    assert!(replayed.contains("Same answer."), "{replayed}");
    assert!(
        replayed.contains("No tool ran: 1 call answered from the original run, 0 calls refused"),
        "{replayed}"
    );
    let listed = run(&["run", "--session", "s4", "list my tasks"]);
    assert_eq!(count(&listed, "Call mom"), 1, "{listed}");

    let out = concierge(dir.path(), &["fork", "s1", "--before-message", "5"]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "error: the conversation has 2 messages from the person, so there is no message 5 to fork before"
    );
    let out = concierge(dir.path(), &["replay", "s1", "r1", "--against-model", "nope:x"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nope"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
