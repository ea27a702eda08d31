//! The task manager (`examples/tasks/`): its agents loaded from the
//! example's files, its tools over a SQLite file in a temp dir, run through
//! the runtime on rules and with a scripted model. Every change is checked
//! in the task database afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use chrono::{NaiveDate, NaiveDateTime};
use concierge::config::{Config, load_agents};
use concierge::model::ScriptedModel;
use concierge::{ModelReply, RunOptions, RunOutput, RunStatus, Runtime, ToolOutcome};
use concierge_demo::tasks::store::{Priority, Status, Task};
use concierge_demo::tasks::{Knowledge, TaskStore, toolset_with};
use serde_json::json;
use tempfile::TempDir;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tasks")
}

/// Wednesday 5 March 2025, 10:00: the day the tests' tasks are seeded and dated.
fn now() -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2025, 3, 5)
        .unwrap()
        .and_hms_opt(10, 0, 0)
        .unwrap()
}

fn day(m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(2025, m, d).unwrap()
}

struct Fixture {
    rt: Runtime,
    store: TaskStore,
    _dir: TempDir,
}

impl Fixture {
    fn tasks(&self) -> Vec<Task> {
        self.store.tasks().unwrap()
    }

    fn task(&self, id: i64) -> Task {
        self.store.task(id).unwrap().unwrap()
    }

    async fn run(&self, agent: &str, session: &str, text: &str) -> RunOutput {
        self.rt
            .client(agent)
            .unwrap()
            .run(text, RunOptions::new().session_id(session))
            .await
            .unwrap()
    }

    async fn approve(&self, session: &str, out: &RunOutput) -> RunOutput {
        let pending = out
            .pending_confirmation
            .as_ref()
            .unwrap_or_else(|| panic!("nothing awaits approval: {out:?}"));
        self.rt.answer(pending, session, true).await.unwrap()
    }
}

/// The runtime as `concierge` builds it in `examples/tasks/`: the example's
/// agent files, the tasks toolset (on a temp dir), both databases in the temp dir.
async fn fixture(model: Option<ScriptedModel>) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::load(&example().join("concierge.toml"), true).unwrap();
    let agents_dir = config
        .agents_dir
        .clone()
        .expect("the example names its agents directory");
    let agents = load_agents(&agents_dir).unwrap().agents;
    let ids: Vec<&str> = agents.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, ["general", "qa", "task", "tracking"]);
    let store = TaskStore::open(dir.path().join("tasks.db")).at(now());
    let knowledge = Knowledge::open(example().join("knowledge.md"));
    let builder = Runtime::builder()
        .sqlite(dir.path().join("concierge.db"))
        .toolset(toolset_with(store.clone(), knowledge))
        .agents(agents);
    let mut builder = config.apply_hub(builder);
    if let Some(model) = model {
        builder = builder.model(model);
    }
    Fixture {
        rt: builder.build().await.unwrap(),
        store,
        _dir: dir,
    }
}

// ------------------------------------------------------------------ rules

#[tokio::test]
async fn rules_create_a_task_only_after_approval() {
    let fx = fixture(None).await;
    let out = fx
        .run(
            "task",
            "s1",
            "create a task to review the budget due Friday with high priority",
        )
        .await;
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    let pending = out.pending_confirmation.as_ref().unwrap();
    assert_eq!(pending.tool.as_str(), "create_task");
    assert_eq!(
        pending.arguments,
        json!({"title": "review the budget", "due": "Friday", "priority": "high"})
    );
    assert_eq!(fx.tasks().len(), 8, "nothing is created before the person approves");

    let done = fx.approve("s1", &out).await;
    assert_eq!(done.status, RunStatus::Completed, "{done:?}");
    assert_eq!(
        done.reply.as_deref(),
        Some("Created task #9 'Review the budget' (high priority, due 2025-03-07).")
    );
    let task = fx.task(9);
    assert_eq!(task.title, "Review the budget");
    assert_eq!(task.priority, Priority::High);
    assert_eq!(task.status, Status::Todo);
    assert_eq!(task.due, Some(day(3, 7)), "Friday after Wednesday 5 March");
    assert_eq!(task.created_at, now());
}

#[tokio::test]
async fn rules_a_declined_creation_creates_nothing() {
    let fx = fixture(None).await;
    let out = fx.run("task", "s1", "add a task to water the plants").await;
    let pending = out.pending_confirmation.clone().unwrap();
    let declined = fx.rt.answer(&pending, "s1", false).await.unwrap();
    assert_eq!(declined.reply.as_deref(), Some("OK, I did not do that."));
    assert_eq!(fx.tasks().len(), 8);
}

#[tokio::test]
async fn rules_mark_the_login_bug_as_done_by_fuzzy_match() {
    let fx = fixture(None).await;
    let out = fx.run("task", "s1", "mark the login bug as done").await;
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    // The search ran first (it changes nothing); the change names its match.
    assert_eq!(out.tool_executions[0].tool.as_str(), "search_tasks");
    let pending = out.pending_confirmation.as_ref().unwrap();
    assert_eq!(pending.tool.as_str(), "complete_task");
    assert_eq!(
        pending.arguments,
        json!({"task": "#1", "found": "'Fix login bug' (95% match)"})
    );
    assert_eq!(
        pending.message,
        "I'll mark #1, 'Fix login bug' (95% match), as done. Proceed?"
    );
    assert_eq!(fx.task(1).status, Status::Todo);

    let done = fx.approve("s1", &out).await;
    let reply = done.reply.unwrap();
    assert_eq!(reply, "Marked task #1 'Fix login bug' (95% match) as done.");
    let task = fx.task(1);
    assert_eq!(task.status, Status::Done);
    assert_eq!(task.updated_at, now());
    let others_done = fx.tasks().iter().filter(|t| t.status == Status::Done).count();
    assert_eq!(others_done, 2, "the login bug and the offsite planned before");
}

#[tokio::test]
async fn rules_an_ambiguous_title_asks_which_one_and_the_second_picks_it() {
    let fx = fixture(None).await;
    let out = fx.run("task", "s1", "complete the fix").await;
    assert_eq!(out.status, RunStatus::AwaitingChoice, "nothing to approve yet: {out:?}");
    assert!(out.pending_confirmation.is_none());
    let reply = out.reply.clone().unwrap();
    assert!(
        reply.starts_with("Several tasks could match. Which one do you mean?\n1. #1 'Fix login bug'"),
        "{reply}"
    );
    assert!(reply.contains("\n2. #5 'Fix logout button alignment'"), "{reply}");
    assert!(fx.tasks().iter().all(|t| t.status != Status::Done || t.id == 6));
    assert_eq!(fx.store.db().applied_count().unwrap(), 0);

    // "The second" picks #5; the change is then asked about, naming it.
    let out = fx.run("task", "s1", "the second").await;
    let asked = out
        .pending_confirmation
        .as_ref()
        .map(|p| p.message.clone())
        .unwrap_or_default();
    assert!(
        asked.starts_with("I'll mark #5, 'Fix logout button alignment' (")
            && asked.ends_with("% match), as done. Proceed?"),
        "{out:?}"
    );
    let done = fx.approve("s1", &out).await;
    let reply = done.reply.unwrap_or_default();
    assert!(
        reply.starts_with("Marked task #5 'Fix logout button alignment'"),
        "{reply}"
    );
    assert_eq!(fx.task(5).status, Status::Done);
    assert_ne!(fx.task(1).status, Status::Done, "the first candidate is untouched");

    // A number picks too.
    let fx = fixture(None).await;
    let out = fx.run("task", "s2", "complete the fix").await;
    assert_eq!(out.status, RunStatus::AwaitingChoice);
    let out = fx.run("task", "s2", "1").await;
    assert!(
        out.pending_confirmation
            .as_ref()
            .unwrap()
            .message
            .starts_with("I'll mark #1, 'Fix login bug'"),
        "{out:?}"
    );
}

#[tokio::test]
async fn rules_an_unknown_title_suggests_the_closest() {
    let fx = fixture(None).await;
    let out = fx.run("task", "s1", "complete the printer toner order").await;
    assert!(out.pending_confirmation.is_none(), "{out:?}");
    let reply = out.reply.unwrap();
    assert!(
        reply.starts_with("No task matches 'the printer toner order'. The closest: #3"),
        "{reply}"
    );
    assert_eq!(fx.store.db().applied_count().unwrap(), 0);
}

#[tokio::test]
async fn rules_updates_and_deletes_by_number() {
    let fx = fixture(None).await;
    let out = fx.run("task", "s1", "set the priority of task 4 to high").await;
    let done = fx.approve("s1", &out).await;
    assert_eq!(
        done.reply.as_deref(),
        Some("Updated task #4 'Update the onboarding guide': high priority.")
    );
    assert_eq!(fx.task(4).priority, Priority::High);

    let out = fx.run("task", "s1", "move task 4 to next Monday").await;
    fx.approve("s1", &out).await;
    assert_eq!(fx.task(4).due, Some(day(3, 10)));

    let out = fx.run("task", "s1", "delete task 8").await;
    assert_eq!(out.pending_confirmation.as_ref().unwrap().tool.as_str(), "delete_task");
    let done = fx.approve("s1", &out).await;
    assert_eq!(
        done.reply.as_deref(),
        Some("Deleted task #8 'Book flights for the conference'.")
    );
    assert!(fx.store.task(8).unwrap().is_none());
}

#[tokio::test]
async fn rules_lists_need_no_approval() {
    let fx = fixture(None).await;
    let out = fx.run("task", "s1", "show high priority tasks").await;
    assert_eq!(out.status, RunStatus::Completed);
    let reply = out.reply.unwrap();
    assert!(reply.starts_with("2 tasks:"), "{reply}");
    assert!(reply.contains("#1 Fix login bug (high priority, due 2025-03-04, overdue, to do, Priya)"));
    assert!(reply.contains("#7 Renew the TLS certificate"));
}

#[tokio::test]
async fn rules_tracking_answers_what_to_work_on_from_the_data() {
    let fx = fixture(None).await;
    let out = fx.run("tracking", "s1", "what should I work on?").await;
    assert_eq!(out.status, RunStatus::Completed);
    let reply = out.reply.unwrap();
    assert!(
        reply.starts_with("Work on #1 'Fix login bug' next: it is overdue (it was due 2025-03-04)."),
        "{reply}"
    );
    // Then the highest priority, then the earliest due date.
    let after: Vec<&str> = reply.lines().skip(2).collect();
    assert!(after[0].starts_with("- #7 Renew the TLS certificate"), "{reply}");
    assert!(after[1].starts_with("- #2 Review cloud code for Yury"), "{reply}");

    // Once it is done, the next one moves up.
    let out = fx.run("task", "s2", "complete task 1").await;
    fx.approve("s2", &out).await;
    let out = fx.run("tracking", "s1", "what should I work on next?").await;
    assert!(
        out.reply
            .unwrap()
            .starts_with("Work on #7 'Renew the TLS certificate' next")
    );
}

#[tokio::test]
async fn rules_tracking_finds_stale_tasks_and_counts() {
    let fx = fixture(None).await;
    let stale = fx.run("tracking", "s1", "show stale tasks").await.reply.unwrap();
    assert!(stale.starts_with("4 stale tasks"), "{stale}");
    let first = stale.lines().nth(1).unwrap();
    assert!(
        first.contains("#4 Update the onboarding guide") && first.ends_with("untouched for 21 days"),
        "{stale}"
    );
    let longer = fx
        .run("tracking", "s2", "stale tasks after 14 days")
        .await
        .reply
        .unwrap();
    assert!(longer.starts_with("1 stale task "), "{longer}");
    let stats = fx.run("tracking", "s3", "show my stats").await.reply.unwrap();
    assert_eq!(
        stats,
        "8 tasks: 6 to do, 1 in progress, 1 done (12% done). 1 overdue, 2 open with high priority."
    );
}

#[tokio::test]
async fn rules_qa_answers_from_the_knowledge_file() {
    let fx = fixture(None).await;
    let out = fx.run("qa", "s1", "how do I mark a task as done?").await;
    assert_eq!(out.status, RunStatus::Completed);
    let reply = out.reply.unwrap();
    assert!(
        reply.starts_with("Say \"mark the login bug as done\" or \"complete task 3\"."),
        "{reply}"
    );
    assert!(
        reply.ends_with("Nothing changes until you approve."),
        "the whole section: {reply}"
    );
    let stale = fx.run("qa", "s2", "what makes a task stale?").await.reply.unwrap();
    assert!(stale.starts_with("A task is stale when"), "{stale}");
    let unknown = fx
        .run("qa", "s3", "how do I bake sourdough bread?")
        .await
        .reply
        .unwrap();
    assert!(
        unknown.starts_with("I have no help on that yet. I can explain:"),
        "{unknown}"
    );
    assert!(unknown.contains("- How do I create a task?"));
}

#[tokio::test]
async fn rules_agents_hand_requests_to_the_agent_that_acts() {
    let fx = fixture(None).await;
    // QA gets a request, not a question: task takes it (and asks first).
    let out = fx.run("qa", "s1", "create a task to call the bank").await;
    assert_eq!(out.agent.as_str(), "task");
    assert_eq!(out.pending_confirmation.as_ref().unwrap().tool.as_str(), "create_task");
    // General greets, and sends "what should I work on?" to tracking.
    let hi = fx.run("general", "s2", "hello there").await;
    assert!(hi.reply.unwrap().starts_with("Hello!"));
    let next = fx.run("general", "s3", "what should I work on?").await;
    assert_eq!(next.agent.as_str(), "tracking");
    assert!(next.reply.unwrap().starts_with("Work on #1"));
}

// ------------------------------------------------------------------ idempotency

#[tokio::test]
async fn a_retried_change_with_the_same_key_changes_nothing_twice() {
    let fx = fixture(None).await;
    let args = json!({"title": "order toner", "priority": "low", "due": "tomorrow"});
    let first = fx
        .rt
        .call_tool("create_task", args.clone(), Some("key-1".into()), 1)
        .await;
    let again = fx
        .rt
        .call_tool("create_task", args.clone(), Some("key-1".into()), 2)
        .await;
    assert!(first.is_ok(), "{first:?}");
    assert_eq!(first, again, "the retry returns the first result");
    assert_eq!(fx.tasks().len(), 9, "one task created, not two");
    let created = fx.task(9);
    assert_eq!((created.title.as_str(), created.due), ("Order toner", Some(day(3, 6))));

    // Another key is another change.
    fx.rt.call_tool("create_task", args, Some("key-2".into()), 3).await;
    assert_eq!(fx.tasks().len(), 10);

    // A completion retried after the task changed again is not re-applied.
    let done = fx
        .rt
        .call_tool("complete_task", json!({"task": "#9"}), Some("key-3".into()), 4)
        .await;
    assert!(done.is_ok());
    let reopen = json!({"id": 9, "status": "todo"});
    fx.rt.call_tool("update_task", reopen, Some("key-4".into()), 5).await;
    let retried = fx
        .rt
        .call_tool("complete_task", json!({"task": "#9"}), Some("key-3".into()), 6)
        .await;
    assert_eq!(done, retried);
    assert_eq!(fx.task(9).status, Status::Todo, "the retry did not complete it again");
    assert_eq!(fx.store.db().applied_count().unwrap(), 4);
}

#[tokio::test]
async fn bad_arguments_get_clear_errors() {
    let fx = fixture(None).await;
    let out = fx
        .rt
        .call_tool("create_task", json!({"title": "x", "due": "someday"}), None, 1)
        .await;
    let ToolOutcome::Error(error) = out else {
        panic!("{out:?}")
    };
    assert!(
        error.message.contains("I could not read the date \"someday\""),
        "{}",
        error.message
    );
    let out = fx
        .rt
        .call_tool("update_task", json!({"id": 99, "priority": "high"}), None, 2)
        .await;
    let ToolOutcome::Error(error) = out else {
        panic!("{out:?}")
    };
    assert_eq!(
        error.message,
        "There is no task #99. List the tasks to see their numbers."
    );
    let out = fx.rt.call_tool("update_task", json!({"id": 1}), None, 3).await;
    let ToolOutcome::Error(error) = out else {
        panic!("{out:?}")
    };
    assert!(error.message.starts_with("Nothing to change"), "{}", error.message);
    assert_eq!(fx.tasks().len(), 8);
}

#[tokio::test]
async fn the_tools_declare_what_they_do() {
    let fx = fixture(None).await;
    let catalog = fx.rt.catalog();
    for name in ["create_task", "update_task", "complete_task", "delete_task"] {
        let spec = catalog.tool(&name.into()).unwrap();
        assert!(
            spec.annotations.requires_confirmation && !spec.annotations.read_only,
            "{name}"
        );
    }
    assert!(catalog.tool(&"delete_task".into()).unwrap().annotations.destructive);
    for name in [
        "list_tasks",
        "search_tasks",
        "stale_tasks",
        "task_stats",
        "recommend_task",
        "search_knowledge",
    ] {
        let spec = catalog.tool(&name.into()).unwrap();
        assert!(
            spec.annotations.read_only && !spec.annotations.requires_confirmation,
            "{name}"
        );
        assert!(!spec.description.is_empty());
    }
    let create = catalog.tool(&"create_task".into()).unwrap();
    assert!(
        create.description.starts_with("Creates a task with a title"),
        "{}",
        create.description
    );
    let schema = &create.input_schema;
    assert_eq!(schema["required"], json!(["title"]));
    assert!(
        schema["properties"]["due"]["description"]
            .as_str()
            .unwrap()
            .contains("YYYY-MM-DD")
    );
}

// ------------------------------------------------------------------ with a model

#[tokio::test]
async fn model_creates_a_task_after_approval() {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call(
            "create_task",
            r#"{"title": "Review code", "due": "Friday", "priority": "medium"}"#,
        ))
        .reply(ModelReply::text("Done: task #9 'Review code' is due Friday."));
    let fx = fixture(Some(model)).await;
    let out = fx.run("task", "s1", "Create task to review code by Friday").await;
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    assert_eq!(fx.tasks().len(), 8);
    let done = fx.approve("s1", &out).await;
    assert_eq!(
        done.reply.as_deref(),
        Some("Done: task #9 'Review code' is due Friday.")
    );
    let task = fx.task(9);
    assert_eq!(
        (task.title.as_str(), task.due, task.priority),
        ("Review code", Some(day(3, 7)), Priority::Medium)
    );
}

#[tokio::test]
async fn model_finds_the_login_bug_then_completes_it_by_number() {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("search_tasks", r#"{"query": "login bug"}"#))
        .reply(ModelReply::tool_call("complete_task", r##"{"task": "#1"}"##))
        .reply(ModelReply::text("Marked 'Fix login bug' as done."));
    let fx = fixture(Some(model.clone())).await;
    let out = fx.run("task", "s1", "mark the login bug as done").await;
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    let search = match &out.tool_executions[0].outcome {
        ToolOutcome::Ok(v) => v.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(search["message"], "I found task #1 'Fix login bug' (95% match).");
    assert_eq!(
        out.pending_confirmation.as_ref().unwrap().arguments,
        json!({"task": "#1"})
    );
    let done = fx.approve("s1", &out).await;
    assert_eq!(done.reply.as_deref(), Some("Marked 'Fix login bug' as done."));
    assert_eq!(fx.task(1).status, Status::Done);
    // The model saw the search result before it chose the task.
    let requests = model.requests();
    let second = format!("{:?}", requests[1].messages);
    assert!(second.contains("95% match"), "{second}");
}

#[tokio::test]
async fn model_tracking_recommends_from_the_data() {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("recommend_task", "{}"))
        .reply(ModelReply::text("Start with #1 'Fix login bug': it is overdue."));
    let fx = fixture(Some(model.clone())).await;
    let out = fx.run("tracking", "s1", "what should I work on?").await;
    assert_eq!(
        out.reply.as_deref(),
        Some("Start with #1 'Fix login bug': it is overdue.")
    );
    let result = match &out.tool_executions[0].outcome {
        ToolOutcome::Ok(v) => v.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(result["next"]["id"], 1);
    assert_eq!(result["next"]["overdue"], true);
}

#[tokio::test]
async fn model_qa_answers_from_the_knowledge_file() {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call(
            "search_knowledge",
            r#"{"question": "how do I delete a task?"}"#,
        ))
        .reply(ModelReply::text("Say \"delete task 4\"; I always ask first."));
    let fx = fixture(Some(model.clone())).await;
    let out = fx.run("qa", "s1", "how do I delete a task?").await;
    assert_eq!(out.reply.as_deref(), Some("Say \"delete task 4\"; I always ask first."));
    let result = match &out.tool_executions[0].outcome {
        ToolOutcome::Ok(v) => v.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(result["topic"], "How do I delete a task?");
    assert!(result["message"].as_str().unwrap().contains("cannot be undone"));
}

// ------------------------------------------------------------------ through the hub
//
// Sessions that name no agent: the hub routes by the agents' intents, the
// person answers confirmations with plain words, agents hand over with context.

async fn say(fx: &Fixture, session: &str, text: &str) -> RunOutput {
    fx.rt.send(text, RunOptions::new().session_id(session)).await.unwrap()
}

#[tokio::test]
async fn hub_mark_the_login_bug_as_done_then_yes() {
    let fx = fixture(None).await;
    let out = say(&fx, "h1", "mark the login bug as done").await;
    assert_eq!(out.agent.as_str(), "task");
    assert_eq!(out.status, RunStatus::AwaitingConfirmation);
    // The question names the match and its score before the person approves.
    let pending = out.pending_confirmation.as_ref().unwrap();
    assert_eq!(
        pending.message,
        "I'll mark #1, 'Fix login bug' (95% match), as done. Proceed?"
    );
    assert_eq!(fx.task(1).status, Status::Todo);
    let out = say(&fx, "h1", "yes").await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(
        out.reply.as_deref(),
        Some("Marked task #1 'Fix login bug' (95% match) as done.")
    );
    assert_eq!(fx.task(1).status, Status::Done);
    let done: Vec<i64> = fx
        .tasks()
        .iter()
        .filter(|t| t.status == Status::Done)
        .map(|t| t.id)
        .collect();
    assert_eq!(done, [1, 6], "only the login bug changed");
    // Done tasks are not offered for completion again.
    let out = say(&fx, "h1", "mark the login bug as done").await;
    assert!(out.pending_confirmation.is_none(), "{out:?}");
    let reply = out.reply.unwrap();
    assert!(reply.starts_with("No task matches 'the login bug'"), "{reply}");
}

#[tokio::test]
async fn hub_task_creation_with_yes() {
    let fx = fixture(None).await;
    let out = say(&fx, "h1", "create a task to review code by Friday").await;
    assert_eq!(out.agent.as_str(), "task");
    assert_eq!(out.status, RunStatus::AwaitingConfirmation);
    assert_eq!(
        out.pending_confirmation.as_ref().unwrap().message,
        "I'll create a task 'review code' due Friday. Proceed?"
    );
    assert_eq!(fx.tasks().len(), 8);
    let out = say(&fx, "h1", "yes").await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(
        out.reply.as_deref(),
        Some("Created task #9 'Review code' (medium priority, due 2025-03-07).")
    );
    let task = fx.task(9);
    assert_eq!((task.title.as_str(), task.due), ("Review code", Some(day(3, 7))));
    assert_eq!((task.priority, task.status), (Priority::Medium, Status::Todo));
    assert_eq!(fx.tasks().len(), 9);
}

#[tokio::test]
async fn hub_what_should_i_work_on_and_create_a_task_for_it() {
    let fx = fixture(None).await;
    let out = say(&fx, "h1", "What should I work on? And create a task for it").await;
    // Tracking recommends the overdue login bug and hands to task with it as
    // context; task offers a follow-up for it, not a task titled "it".
    assert_eq!(out.agent.as_str(), "task");
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    assert_eq!(out.tool_executions[0].tool.as_str(), "recommend_task");
    let pending = out.pending_confirmation.as_ref().unwrap();
    assert_eq!(pending.tool.as_str(), "create_task");
    assert_eq!(pending.arguments, json!({"title": "Follow up on Fix login bug"}));
    assert_eq!(
        pending.message,
        "I'll create a task 'Follow up on Fix login bug'. Proceed?"
    );
    let session = fx.rt.session("h1").await.unwrap();
    assert!(
        format!("{session:?}").contains("recommended_task"),
        "the handoff's context is on the blackboard"
    );
    assert_eq!(fx.tasks().len(), 8);
    // "Yes, high priority, due Friday": the changed call is shown back (seed
    // 004: "shows confirmation, waits for confirmation, creates task").
    let out = say(&fx, "h1", "Yes, high priority, due Friday").await;
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    let pending = out.pending_confirmation.as_ref().unwrap();
    assert_eq!(pending.arguments["priority"], "high");
    assert!(
        pending
            .message
            .starts_with("I'll create a task 'Follow up on Fix login bug' due "),
        "{}",
        pending.message
    );
    assert!(
        pending.message.ends_with(", priority high. Proceed?"),
        "{}",
        pending.message
    );
    assert_eq!(fx.tasks().len(), 8, "nothing is created before the final yes");
    let out = say(&fx, "h1", "yes").await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(
        out.reply.as_deref(),
        Some("Created task #9 'Follow up on Fix login bug' (high priority, due 2025-03-07).")
    );
    let task = fx.task(9);
    assert_eq!(task.title, "Follow up on Fix login bug");
    assert_eq!((task.priority, task.due), (Priority::High, Some(day(3, 7))));
    assert_eq!(fx.tasks().len(), 9);
}

#[tokio::test]
async fn hub_a_question_to_qa_and_back() {
    let fx = fixture(None).await;
    let out = say(&fx, "h1", "how do I delete a task?").await;
    assert_eq!(out.agent.as_str(), "qa");
    assert!(out.reply.unwrap().starts_with("Say \"delete task 4\""));
    // The answer finished qa's goal: the conversation is back at the hub.
    let sessions = fx.rt.sessions().await.unwrap();
    let h1 = sessions.iter().find(|s| s.id.as_str() == "h1").unwrap();
    assert_eq!(h1.agent.as_str(), "hub");
    let out = say(&fx, "h1", "delete task 4").await;
    assert_eq!(out.agent.as_str(), "task");
    let pending = out.pending_confirmation.as_ref().unwrap();
    assert_eq!(pending.tool.as_str(), "delete_task");
    assert_eq!(pending.message, "I'll delete #4 for good. Proceed?");
    assert!(fx.store.task(4).unwrap().is_some());
    let out = say(&fx, "h1", "yes").await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(
        out.reply.as_deref(),
        Some("Deleted task #4 'Update the onboarding guide'.")
    );
    assert!(fx.store.task(4).unwrap().is_none());
    assert_eq!(fx.tasks().len(), 7);
}

#[tokio::test]
async fn hub_small_talk_goes_to_general() {
    let fx = fixture(None).await;
    let out = say(&fx, "h1", "good morning!").await;
    assert_eq!(out.agent.as_str(), "general");
    assert!(out.reply.unwrap().starts_with("Hello!"));
    assert_eq!(fx.tasks().len(), 8);
    assert_eq!(fx.store.db().applied_count().unwrap(), 0, "small talk changes nothing");
}

#[tokio::test]
async fn hub_no_after_a_fuzzy_match_offers_the_next_candidates() {
    let fx = fixture(None).await;
    say(&fx, "h1", "mark the login bug as done").await;
    let out = say(&fx, "h1", "no").await;
    let reply = out.reply.unwrap();
    assert!(
        reply.starts_with("OK, I left it as it is. Other tasks that could be meant: #5 'Fix logout button alignment'"),
        "{reply}"
    );
    assert!(
        reply.ends_with("To mark one done, say complete and its number."),
        "{reply}"
    );
    assert_eq!(fx.task(1).status, Status::Todo);
    assert_eq!(fx.store.db().applied_count().unwrap(), 0);
    // The person picks the next candidate by its number.
    let out = say(&fx, "h1", "complete #5").await;
    assert_eq!(
        out.pending_confirmation.as_ref().unwrap().tool.as_str(),
        "complete_task"
    );
    let out = say(&fx, "h1", "yes").await;
    assert_eq!(
        out.reply.as_deref(),
        Some("Marked task #5 'Fix logout button alignment' as done.")
    );
    assert_eq!((fx.task(1).status, fx.task(5).status), (Status::Todo, Status::Done));
}

#[tokio::test]
async fn hub_model_creates_a_task_after_a_plain_yes() {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call(
            "create_task",
            r#"{"title": "Review code", "due": "Friday", "priority": "high"}"#,
        ))
        .reply(ModelReply::text("Created 'Review code', due Friday."));
    let fx = fixture(Some(model.clone())).await;
    let out = say(&fx, "m1", "create a task to review code by Friday, high priority").await;
    assert_eq!(out.agent.as_str(), "task", "the hub routed by the task agent's intents");
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    assert_eq!(
        out.pending_confirmation.as_ref().unwrap().message,
        "I'll create a task 'Review code' due Friday, priority high. Proceed?"
    );
    assert_eq!(fx.tasks().len(), 8);
    let out = say(&fx, "m1", "yes").await;
    assert_eq!(out.reply.as_deref(), Some("Created 'Review code', due Friday."));
    let task = fx.task(9);
    assert_eq!(
        (task.title.as_str(), task.due, task.priority),
        ("Review code", Some(day(3, 7)), Priority::High)
    );
    assert_eq!(model.requests().len(), 2, "the routing needed no model call");
}

#[tokio::test]
async fn hub_model_finds_the_login_bug_then_completes_it_after_yes() {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("search_tasks", r#"{"query": "login bug"}"#))
        .reply(ModelReply::tool_call(
            "complete_task",
            r##"{"task": "#1", "found": "'Fix login bug' (95% match)"}"##,
        ))
        .reply(ModelReply::text("Marked 'Fix login bug' as done."));
    let fx = fixture(Some(model.clone())).await;
    let out = say(&fx, "m1", "mark the login bug as done").await;
    assert_eq!(out.agent.as_str(), "task");
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    assert_eq!(
        out.pending_confirmation.as_ref().unwrap().message,
        "I'll mark #1, 'Fix login bug' (95% match), as done. Proceed?"
    );
    assert_eq!(fx.task(1).status, Status::Todo);
    let out = say(&fx, "m1", "yes").await;
    assert_eq!(out.reply.as_deref(), Some("Marked 'Fix login bug' as done."));
    assert_eq!(fx.task(1).status, Status::Done);
    let done = fx.tasks().iter().filter(|t| t.status == Status::Done).count();
    assert_eq!(done, 2, "the login bug and the offsite planned before");
}
