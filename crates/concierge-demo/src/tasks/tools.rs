//! The task manager's tools. Every result is a JSON object with a `message`
//! (a sentence for people, which the rules' answers show) and the data
//! behind it (for a model, or a program).
//!
//! The tools hold the [`TaskStore`] they work on, so each is a small struct
//! rather than a `#[tool]` function; `db_tool!` writes the boilerplate and
//! turns the doc comment into the description, as `#[tool]` does.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{Days, NaiveDate};
use concierge::fuzzy::{self, Candidate, Match, Scored, Thresholds};
use concierge::{Choice, Reply, Tool, ToolAnnotations, ToolContext, ToolError, ToolSpec};
use rusqlite::params;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::dates::parse_date;
use super::knowledge::Knowledge;
use super::store::{Priority, Status, Task, TaskStore};
use crate::domain_db::{Applied, StoreError, stored_time};
use crate::toolkit::{blocking, db_tool, failed, invalid, read_only, sentence_case};

fn changes(destructive: bool) -> ToolAnnotations {
    ToolAnnotations {
        destructive,
        idempotent: true,
        requires_confirmation: true,
        ..ToolAnnotations::default()
    }
}

fn optional_date(field: &str, text: Option<&str>, today: NaiveDate) -> Result<Option<NaiveDate>, ToolError> {
    match text.map(str::trim).filter(|t| !t.is_empty()) {
        None => Ok(None),
        Some(t) => parse_date(t, today)
            .map(Some)
            .map_err(|e| invalid(field, e.to_string())),
    }
}

fn task_json(task: &Task, today: NaiveDate) -> Value {
    json!({
        "id": task.id,
        "title": task.title,
        "description": task.description,
        "status": task.status.as_str(),
        "priority": task.priority.as_str(),
        "due": task.due.map(|d| d.to_string()),
        "overdue": task.is_overdue(today),
        "assignee": task.assignee,
        "created_at": stored_time(task.created_at),
        "updated_at": stored_time(task.updated_at),
    })
}

fn lines(tasks: &[&Task], today: NaiveDate) -> String {
    tasks
        .iter()
        .map(|t| format!("- {}", t.line(today)))
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------- create

/// `create_task`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct CreateTaskArgs {
    /// What the task is, in a few words (e.g. "Fix the login bug").
    pub title: String,
    /// More detail, if the person gave any.
    #[serde(default)]
    pub description: Option<String>,
    /// low, medium or high (medium if not said).
    #[serde(default)]
    pub priority: Option<Priority>,
    /// When it is due: YYYY-MM-DD, or today, tomorrow, a weekday (Friday, next Friday), "in 3 days".
    #[serde(default)]
    pub due: Option<String>,
    /// Who will do it, if the person named someone.
    #[serde(default)]
    pub assignee: Option<String>,
}

db_tool!(
    /// Creates a task with a title and, optionally, a description, a priority
    /// (low, medium, high), a due date and an assignee. Asks the person first.
    CreateTask, "create_task", TaskStore, "tasks", CreateTaskArgs, changes(false), confirmation(Self::NAME),
    |store, args, cx| {
        let title = sentence_case(&args.title);
        if title.is_empty() {
            return Err(invalid("title", "A task needs a title: say what the task is."));
        }
        let today = store.today();
        let due = optional_date("due", args.due.as_deref(), today)?;
        let priority = args.priority.unwrap_or(Priority::Medium);
        let description = args.description.unwrap_or_default();
        let assignee = args.assignee.map(|a| a.trim().to_string()).filter(|a| !a.is_empty());
        let applied = store
            .db().apply(cx.idempotency_key.as_str(), CreateTask::NAME, |tx, now| {
                let at = stored_time(now);
                tx.execute(
                    "INSERT INTO tasks (title, description, status, priority, due, assignee, created_at, updated_at) \
                     VALUES (?1, ?2, 'todo', ?3, ?4, ?5, ?6, ?6)",
                    params![title, description, priority.as_str(), due.map(|d| d.to_string()), assignee, at],
                )
                .map_err(|e| store.db().error(e))?;
                let id = tx.last_insert_rowid();
                let mut message = format!("Created task #{id} '{title}' ({priority} priority");
                if let Some(due) = due {
                    message.push_str(&format!(", due {due}"));
                }
                message.push_str(").");
                Ok(Applied::Changed(json!({
                    "id": id,
                    "title": title,
                    "priority": priority.as_str(),
                    "due": due.map(|d| d.to_string()),
                    "message": message,
                })))
            })
            .map_err(failed)?;
        Ok(match applied {
            Applied::Changed(v) | Applied::Unchanged(v) => v,
        })
    }
);

// ---------------------------------------------------------------- update

/// `update_task`'s arguments: the task's number and what changes.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct UpdateTaskArgs {
    /// The task's number (e.g. 3 for task #3).
    pub id: i64,
    /// A new title.
    #[serde(default)]
    pub title: Option<String>,
    /// A new description.
    #[serde(default)]
    pub description: Option<String>,
    /// A new priority: low, medium or high.
    #[serde(default)]
    pub priority: Option<Priority>,
    /// A new due date: YYYY-MM-DD, or today, tomorrow, a weekday, "in 3 days".
    #[serde(default)]
    pub due: Option<String>,
    /// A new status: todo, in_progress or done.
    #[serde(default)]
    pub status: Option<Status>,
}

db_tool!(
    /// Changes a task, by its number: its title, description, priority,
    /// due date or status (todo, in_progress, done). Asks the person first.
    UpdateTask, "update_task", TaskStore, "tasks", UpdateTaskArgs, changes(false), confirmation(Self::NAME),
    |store, args, cx| {
        let today = store.today();
        let due = optional_date("due", args.due.as_deref(), today)?;
        let title = args.title.as_deref().map(sentence_case).filter(|t| !t.is_empty());
        if title.is_none() && args.description.is_none() && args.priority.is_none() && due.is_none() && args.status.is_none() {
            return Err(invalid(
                "",
                "Nothing to change: give a new title, description, priority, due date or status.",
            ));
        }
        let Some(before) = store.task(args.id).map_err(failed)? else {
            return Err(ToolError::failed(format!(
                "There is no task #{}. List the tasks to see their numbers.",
                args.id
            )));
        };
        let applied = store
            .db().apply(cx.idempotency_key.as_str(), UpdateTask::NAME, |tx, now| {
                let mut changed = Vec::new();
                let mut set = |column: &str, value: Option<String>, what: String| -> Result<(), StoreError> {
                    tx.execute(&format!("UPDATE tasks SET {column} = ?1 WHERE id = ?2"), params![value, args.id])
                        .map_err(|e| store.db().error(e))?;
                    changed.push(what);
                    Ok(())
                };
                if let Some(title) = &title {
                    set("title", Some(title.clone()), format!("title '{title}'"))?;
                }
                if let Some(description) = &args.description {
                    set("description", Some(description.clone()), "description".into())?;
                }
                if let Some(priority) = args.priority {
                    set("priority", Some(priority.as_str().into()), format!("{priority} priority"))?;
                }
                if let Some(due) = due {
                    set("due", Some(due.to_string()), format!("due {due}"))?;
                }
                if let Some(status) = args.status {
                    set("status", Some(status.as_str().into()), format!("status {status}"))?;
                }
                tx.execute("UPDATE tasks SET updated_at = ?1 WHERE id = ?2", params![stored_time(now), args.id])
                    .map_err(|e| store.db().error(e))?;
                let name = title.clone().unwrap_or_else(|| before.title.clone());
                Ok(Applied::Changed(json!({
                    "id": args.id,
                    "title": name,
                    "changed": changed,
                    "message": format!("Updated task #{} '{}': {}.", args.id, name, changed.join(", ")),
                })))
            })
            .map_err(failed)?;
        Ok(match applied {
            Applied::Changed(v) | Applied::Unchanged(v) => v,
        })
    }
);

// ---------------------------------------------------------------- complete / delete

/// Which task: its number or (part of) its title.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct TaskRefArgs {
    /// The task's number (3, #3 or "task 3") or its title, whole or in part ("login bug").
    pub task: String,
    /// How the task was found, when a search chose it by its title (e.g.
    /// "'Fix login bug' (95% match)"): the person sees it in the question
    /// and the answer.
    #[serde(default)]
    pub found: Option<String>,
}

/// A task number written `3`, `#3` or `task 3`.
fn task_number(text: &str) -> Option<i64> {
    let t = text.trim().to_lowercase();
    let t = t.strip_prefix("task").unwrap_or(&t).trim();
    let t = t.strip_prefix('#').unwrap_or(t).trim();
    t.parse().ok()
}

/// The task `reference` means among `tasks`, or a result saying why none is
/// chosen: a choice between candidates, or "not found" with suggestions.
fn resolve<'t>(reference: &str, tasks: &'t [Task], verb: &str) -> Result<(&'t Task, Option<Scored>), Value> {
    if let Some(id) = task_number(reference) {
        return match tasks.iter().find(|t| t.id == id) {
            Some(task) => Ok((task, None)),
            None => Err(json!({
                "outcome": "not_found",
                "suggestions": [],
                "message": format!("There is no task #{id}. Say \"list my tasks\" to see their numbers."),
            })),
        };
    }
    let candidates = tasks.iter().map(|t| Candidate::new(t.id.to_string(), t.title.clone()));
    let scored_json =
        |s: &Scored| json!({"id": s.id.parse::<i64>().unwrap_or_default(), "title": s.label, "score": s.score});
    match fuzzy::classify(reference, candidates, &Thresholds::default()) {
        Match::Found(found) => {
            let id: i64 = found.id.parse().unwrap_or_default();
            match tasks.iter().find(|t| t.id == id) {
                Some(task) => Ok((task, Some(found))),
                None => Err(
                    json!({"outcome": "not_found", "suggestions": [], "message": format!("I found no task matching '{reference}'.")}),
                ),
            }
        }
        // Several could be meant: the person picks one ("2", "the second"),
        // and the call runs again with its number.
        Match::Choice { candidates } => Err(candidates
            .iter()
            .fold(
                Choice::new(
                    format!("More than one task could be '{reference}'. Which one should I {verb}?"),
                    "task",
                ),
                |choice, c| choice.option(format!("#{}", c.id), format!("#{} {}", c.id, c)),
            )
            .to_value()),
        Match::NotFound { suggestions } => {
            let message = if suggestions.is_empty() {
                format!("I found no task matching '{reference}'.")
            } else {
                let closest: Vec<String> = suggestions.iter().map(|s| format!("#{} {}", s.id, s)).collect();
                format!(
                    "I found no task matching '{reference}'. The closest: {}.",
                    closest.join("; ")
                )
            };
            Err(json!({
                "outcome": "not_found",
                "suggestions": suggestions.iter().map(scored_json).collect::<Vec<_>>(),
                "message": message,
            }))
        }
    }
}

/// The task as the person knows it: its number and title, with the match
/// score when a title chose it (now, or in the search `found` names).
fn matched(task: &Task, score: &Option<Scored>, found: Option<&str>) -> String {
    match (score, found.map(str::trim).filter(|f| f.contains(&task.title))) {
        (Some(s), _) => format!("#{} {}", task.id, s),
        (None, Some(found)) => format!("#{} {}", task.id, found),
        (None, None) => format!("#{} '{}'", task.id, task.title),
    }
}

db_tool!(
    /// Marks a task done, by its number or its title (a part of the title is
    /// enough: "login bug" finds "Fix login bug"). When several tasks could be
    /// meant it changes nothing and returns the candidates to choose from;
    /// when none is close, the closest suggestions. Asks the person first.
    CompleteTask, "complete_task", TaskStore, "tasks", TaskRefArgs, changes(false), confirmation(Self::NAME),
    |store, args, cx| {
        let tasks = store.tasks().map_err(failed)?;
        let applied = store
            .db().apply(cx.idempotency_key.as_str(), CompleteTask::NAME, |tx, now| {
                let (task, score) = match resolve(&args.task, &tasks, "complete") {
                    Ok(found) => found,
                    Err(answer) => return Ok(Applied::Unchanged(answer)),
                };
                let name = matched(task, &score, args.found.as_deref());
                if task.status == Status::Done {
                    return Ok(Applied::Unchanged(json!({
                        "outcome": "already_done",
                        "id": task.id,
                        "title": task.title,
                        "message": format!("Task {name} was already done."),
                    })));
                }
                tx.execute(
                    "UPDATE tasks SET status = 'done', updated_at = ?1 WHERE id = ?2",
                    params![stored_time(now), task.id],
                )
                .map_err(|e| store.db().error(e))?;
                Ok(Applied::Changed(json!({
                    "outcome": "completed",
                    "id": task.id,
                    "title": task.title,
                    "score": score.as_ref().map(|s| s.score),
                    "message": format!("Marked task {name} as done."),
                })))
            })
            .map_err(failed)?;
        Ok(match applied {
            Applied::Changed(v) | Applied::Unchanged(v) => v,
        })
    }
);

db_tool!(
    /// Deletes a task for good, by its number or its title (a part of the
    /// title is enough). When several tasks could be meant it deletes nothing
    /// and returns the candidates; when none is close, the closest
    /// suggestions. Asks the person first.
    DeleteTask, "delete_task", TaskStore, "tasks", TaskRefArgs, changes(true), confirmation(Self::NAME),
    |store, args, cx| {
        let tasks = store.tasks().map_err(failed)?;
        let applied = store
            .db().apply(cx.idempotency_key.as_str(), DeleteTask::NAME, |tx, _now| {
                let (task, score) = match resolve(&args.task, &tasks, "delete") {
                    Ok(found) => found,
                    Err(answer) => return Ok(Applied::Unchanged(answer)),
                };
                tx.execute("DELETE FROM tasks WHERE id = ?1", [task.id]).map_err(|e| store.db().error(e))?;
                Ok(Applied::Changed(json!({
                    "outcome": "deleted",
                    "id": task.id,
                    "title": task.title,
                    "message": format!("Deleted task {}.", matched(task, &score, args.found.as_deref())),
                })))
            })
            .map_err(failed)?;
        Ok(match applied {
            Applied::Changed(v) | Applied::Unchanged(v) => v,
        })
    }
);

// ---------------------------------------------------------------- reads

/// `list_tasks`'s filters (all optional).
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct ListTasksArgs {
    /// Only tasks with this status: todo, in_progress or done (done tasks are left out unless asked for).
    #[serde(default)]
    pub status: Option<Status>,
    /// Only tasks with this priority: low, medium or high.
    #[serde(default)]
    pub priority: Option<Priority>,
    /// Only tasks due before this date: YYYY-MM-DD, or today, tomorrow, a weekday.
    #[serde(default)]
    pub due_before: Option<String>,
}

db_tool!(
    /// Lists tasks, optionally only those with a status, a priority, or due
    /// before a date. Without a status, done tasks are left out.
    ListTasks, "list_tasks", TaskStore, "tasks", ListTasksArgs, read_only(), confirmation(Self::NAME),
    |store, args, cx| {
        let today = store.today();
        let before = optional_date("due_before", args.due_before.as_deref(), today)?;
        let tasks = store.tasks().map_err(failed)?;
        let chosen: Vec<&Task> = tasks
            .iter()
            .filter(|t| match args.status {
                Some(s) => t.status == s,
                None => t.status != Status::Done,
            })
            .filter(|t| args.priority.is_none_or(|p| t.priority == p))
            .filter(|t| before.is_none_or(|b| t.due.is_some_and(|d| d < b)))
            .collect();
        let message = if chosen.is_empty() {
            "No tasks match.".to_string()
        } else {
            format!("{} task{}:\n{}", chosen.len(), if chosen.len() == 1 { "" } else { "s" }, lines(&chosen, today))
        };
        Ok(json!({
            "count": chosen.len(),
            "tasks": chosen.iter().map(|t| task_json(t, today)).collect::<Vec<_>>(),
            "message": message,
        }))
    }
);

/// `search_tasks`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct SearchTasksArgs {
    /// Words from the task's title ("login bug").
    pub query: String,
    /// Only tasks not done yet (to find one to complete).
    #[serde(default)]
    pub open: bool,
    /// The task's number, once the person picked one of several matches
    /// (filled in from their answer; leave it out otherwise).
    #[serde(default)]
    pub id: Option<i64>,
}

db_tool!(
    /// Finds tasks by title with fuzzy matching and a score per task (e.g.
    /// 'Fix login bug' (95% match)): use it to show which task a person means
    /// before changing it by number.
    SearchTasks, "search_tasks", TaskStore, "tasks", SearchTasksArgs, read_only(), confirmation(Self::NAME),
    |store, args, cx| {
        let today = store.today();
        let mut tasks = store.tasks().map_err(failed)?;
        if args.open {
            tasks.retain(|t| t.status != Status::Done);
        }
        let ranked = fuzzy::rank(&args.query, tasks.iter().map(|t| Candidate::new(t.id.to_string(), t.title.clone())));
        let best: Vec<&Scored> = ranked.iter().filter(|s| s.score >= Thresholds::default().low).take(5).collect();
        let mut chosen = Value::Null;
        let classified = match args.id.and_then(|id| tasks.iter().find(|t| t.id == id)) {
            // The person picked this one.
            Some(task) => Match::Found(Scored {
                id: task.id.to_string(),
                label: task.title.clone(),
                score: ranked.iter().find(|s| s.id == task.id.to_string()).map_or(100, |s| s.score),
            }),
            None => fuzzy::classify(&args.query, tasks.iter().map(|t| Candidate::new(t.id.to_string(), t.title.clone())), &Thresholds::default()),
        };
        let message = match classified {
            // Several could be meant: the person picks one, and the search
            // runs again with its number.
            Match::Choice { candidates } => {
                let choice = candidates.iter().fold(
                    Choice::new("Several tasks could match. Which one do you mean?", "id"),
                    |choice, c| choice.option(c.id.parse::<i64>().unwrap_or_default(), format!("#{} {}", c.id, c)),
                );
                return Reply::<Value>::Choose(choice).into_value();
            }
            Match::Found(found) => {
                chosen = json!({
                    "id": found.id.parse::<i64>().unwrap_or_default(),
                    "title": found.label,
                    "score": found.score,
                    "label": found.to_string(),
                });
                format!("I found task #{} {}.", found.id, found)
            }
            Match::NotFound { suggestions } if suggestions.is_empty() => format!("No task matches '{}'.", args.query),
            Match::NotFound { suggestions } => format!(
                "No task matches '{}'. The closest: {}.",
                args.query,
                suggestions.iter().map(|c| format!("#{} {}", c.id, c)).collect::<Vec<_>>().join("; ")
            ),
        };
        let by_id: BTreeMap<String, &Task> = tasks.iter().map(|t| (t.id.to_string(), t)).collect();
        let matches: Vec<Value> = best
            .iter()
            .filter_map(|s| by_id.get(&s.id).map(|t| {
                let mut v = task_json(t, today);
                v["score"] = json!(s.score);
                v
            }))
            .collect();
        // The next closest titles, offered when the person says the match is not the one.
        let others: Vec<String> = ranked
            .iter()
            .filter(|s| s.score > 0 && chosen["id"].as_i64().is_none_or(|id| s.id != id.to_string()))
            .take(Thresholds::default().suggestions)
            .map(|s| format!("#{} {}", s.id, s))
            .collect();
        let others = if others.is_empty() {
            "No other task comes close.".to_string()
        } else {
            format!("Other tasks that could be meant: {}.", others.join("; "))
        };
        Ok(json!({ "match": chosen, "matches": matches, "others": others, "message": message }))
    }
);

/// `stale_tasks`'s arguments.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct StaleTasksArgs {
    /// How many days without a change make a task stale (default 7).
    #[serde(default)]
    pub days: Option<u32>,
}

db_tool!(
    /// Lists open tasks nobody has touched in a while (default: 7 days),
    /// oldest first.
    StaleTasks, "stale_tasks", TaskStore, "tasks", StaleTasksArgs, read_only(), confirmation(Self::NAME),
    |store, args, cx| {
        let today = store.today();
        let days = args.days.unwrap_or(7);
        let cutoff = today.checked_sub_days(Days::new(u64::from(days))).unwrap_or(today);
        let tasks = store.tasks().map_err(failed)?;
        let mut stale: Vec<&Task> = tasks
            .iter()
            .filter(|t| t.status != Status::Done && t.updated_at.date() <= cutoff)
            .collect();
        stale.sort_by_key(|t| t.updated_at);
        let message = if stale.is_empty() {
            format!("No open task has gone {days} days without a change.")
        } else {
            let items: Vec<String> = stale
                .iter()
                .map(|t| format!("- {} — untouched for {} days", t.line(today), (today - t.updated_at.date()).num_days()))
                .collect();
            format!("{} stale task{} (no change in {days} days or more):\n{}", stale.len(), if stale.len() == 1 { "" } else { "s" }, items.join("\n"))
        };
        Ok(json!({
            "days": days,
            "count": stale.len(),
            "tasks": stale.iter().map(|t| task_json(t, today)).collect::<Vec<_>>(),
            "message": message,
        }))
    }
);

/// No arguments.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct NoArgs {}

db_tool!(
    /// Counts the tasks: by status, by priority, how many are overdue and
    /// how many are done.
    TaskStats, "task_stats", TaskStore, "tasks", NoArgs, read_only(), confirmation(Self::NAME),
    |store, args, cx| {
        let today = store.today();
        let tasks = store.tasks().map_err(failed)?;
        let count = |f: &dyn Fn(&Task) -> bool| tasks.iter().filter(|t| f(t)).count();
        let (todo, doing, done) = (
            count(&|t| t.status == Status::Todo),
            count(&|t| t.status == Status::InProgress),
            count(&|t| t.status == Status::Done),
        );
        let overdue = count(&|t| t.is_overdue(today));
        let open_high = count(&|t| t.status != Status::Done && t.priority == Priority::High);
        let total = tasks.len();
        let percent = (done * 100).checked_div(total).unwrap_or(0);
        Ok(json!({
            "total": total,
            "todo": todo,
            "in_progress": doing,
            "done": done,
            "overdue": overdue,
            "open_high_priority": open_high,
            "percent_done": percent,
            "message": format!(
                "{total} tasks: {todo} to do, {doing} in progress, {done} done ({percent}% done). {overdue} overdue, {open_high} open with high priority."
            ),
        }))
    }
);

/// The order in which open tasks should be worked on: overdue first, then
/// higher priority, then the earlier due date (no date last), then older.
pub fn work_order(tasks: &[Task], today: NaiveDate) -> Vec<&Task> {
    let mut open: Vec<&Task> = tasks.iter().filter(|t| t.status != Status::Done).collect();
    open.sort_by_key(|t| {
        (
            !t.is_overdue(today),
            std::cmp::Reverse(t.priority),
            t.due.unwrap_or(NaiveDate::MAX),
            t.created_at,
        )
    });
    open
}

db_tool!(
    /// Answers "what should I work on?": the open task to do next (overdue
    /// first, then the highest priority, then the earliest due date) and the
    /// two after it.
    RecommendTask, "recommend_task", TaskStore, "tasks", NoArgs, read_only(), confirmation(Self::NAME),
    |store, args, cx| {
        let today = store.today();
        let tasks = store.tasks().map_err(failed)?;
        let order = work_order(&tasks, today);
        let Some(first) = order.first() else {
            return Ok(json!({"message": "Nothing is open: every task is done.", "next": null, "then": []}));
        };
        let why = if first.is_overdue(today) {
            format!("it is overdue (it was due {})", first.due.map(|d| d.to_string()).unwrap_or_default())
        } else if let Some(due) = first.due {
            format!("it has {} priority and is due {due}", first.priority)
        } else {
            format!("it has {} priority", first.priority)
        };
        let then: Vec<&Task> = order.iter().skip(1).take(2).copied().collect();
        let mut message = format!("Work on #{} '{}' next: {why}.", first.id, first.title);
        if !then.is_empty() {
            message.push_str(&format!("\nAfter that:\n{}", lines(&then, today)));
        }
        Ok(json!({
            "next": task_json(first, today),
            "then": then.iter().map(|t| task_json(t, today)).collect::<Vec<_>>(),
            "message": message,
        }))
    }
);

// ---------------------------------------------------------------- knowledge

/// `search_knowledge`'s arguments.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct SearchKnowledgeArgs {
    /// The person's question, in their words ("how do I mark a task as done?").
    pub question: String,
}

/// Answers "how do I …" questions about the task manager from its knowledge
/// file: the best-matching section, with the titles of related ones.
#[derive(Clone, Debug)]
pub struct SearchKnowledge {
    knowledge: Arc<Knowledge>,
}

impl SearchKnowledge {
    /// The tool's name, as planners and models call it.
    pub const NAME: &'static str = "search_knowledge";

    /// The tool over a knowledge file.
    pub fn new(knowledge: Arc<Knowledge>) -> Self {
        Self { knowledge }
    }
}

impl Tool for SearchKnowledge {
    type Args = SearchKnowledgeArgs;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            Self::NAME,
            "Answers \"how do I …\" questions about the task manager from its knowledge file: \
             the best-matching section, with the titles of related ones.",
            concierge::tool::schema_for::<SearchKnowledgeArgs>(),
        )
        .category("tasks")
        .annotations(ToolAnnotations {
            read_only: true,
            idempotent: true,
            cacheable: true,
            ..ToolAnnotations::default()
        })
    }

    fn call(
        &self,
        args: Self::Args,
        _cx: ToolContext,
    ) -> impl std::future::Future<Output = Result<Value, ToolError>> + Send {
        let knowledge = Arc::clone(&self.knowledge);
        async move {
            blocking("task", move || {
                let answer = knowledge
                    .answer(&args.question)
                    .map_err(|e| ToolError::failed(e.to_string()))?;
                serde_json::to_value(answer)
                    .map_err(|e| ToolError::failed(format!("the answer could not be written out: {e}")))
            })
            .await
        }
    }
}

// ---------------------------------------------------------------- confirmations

/// The question each changing tool asks the person before it runs, over its
/// argument names; a part in square brackets shows only when its arguments
/// are given ("I'll create a task 'Fix login bug' due Friday, priority high.
/// Proceed?").
pub const CONFIRMATIONS: &[(&str, &str)] = &[
    (
        CreateTask::NAME,
        "I'll create a task '{title}'[ due {due}][, priority {priority}][, assigned to {assignee}][ ({description})]. Proceed?",
    ),
    (
        UpdateTask::NAME,
        "I'll change task #{id}:[ title '{title}'][ priority {priority}][ due {due}][ status {status}][ description '{description}']. Proceed?",
    ),
    (CompleteTask::NAME, "I'll mark {task}[, {found},] as done. Proceed?"),
    (DeleteTask::NAME, "I'll delete {task}[, {found},] for good. Proceed?"),
];

/// The confirmation template of the tool named `name`, if it changes anything.
pub fn confirmation(name: &str) -> Option<&'static str> {
    CONFIRMATIONS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confirmations_name_only_their_tools_arguments() {
        let store = Arc::new(TaskStore::open("unused.db"));
        let specs = [
            Tool::spec(&CreateTask::new(Arc::clone(&store))),
            Tool::spec(&UpdateTask::new(Arc::clone(&store))),
            Tool::spec(&CompleteTask::new(Arc::clone(&store))),
            Tool::spec(&DeleteTask::new(store)),
        ];
        for (name, template) in CONFIRMATIONS {
            let spec = specs.iter().find(|s| s.name.as_str() == *name).unwrap();
            assert!(spec.annotations.requires_confirmation, "{name}");
            let properties = spec.input_schema["properties"].as_object().unwrap();
            for placeholder in template
                .split('{')
                .skip(1)
                .filter_map(|p| p.split_once('}'))
                .map(|p| p.0)
            {
                assert!(properties.contains_key(placeholder), "{name}: {{{placeholder}}}");
            }
            assert_eq!(spec.confirm.as_deref(), Some(*template), "{name}");
        }
        let create = &specs[0];
        let ask = |spec: &ToolSpec, args: Value| concierge::core::confirmation_message(spec, &args);
        assert_eq!(
            ask(
                create,
                json!({"title": "Fix login bug", "due": "2026-11-27", "priority": "high"})
            ),
            "I'll create a task 'Fix login bug' due 2026-11-27, priority high. Proceed?"
        );
        assert_eq!(
            ask(create, json!({"title": "Water the plants"})),
            "I'll create a task 'Water the plants'. Proceed?"
        );
        assert_eq!(
            ask(&specs[1], json!({"id": 4, "priority": "high"})),
            "I'll change task #4: priority high. Proceed?"
        );
        assert_eq!(
            ask(&specs[2], json!({"task": "#1", "found": "'Fix login bug' (95% match)"})),
            "I'll mark #1, 'Fix login bug' (95% match), as done. Proceed?"
        );
        assert_eq!(
            ask(&specs[3], json!({"task": "task 4"})),
            "I'll delete task 4 for good. Proceed?"
        );
    }

    #[test]
    fn task_numbers_and_titles() {
        assert_eq!(task_number("#3"), Some(3));
        assert_eq!(task_number("task 12"), Some(12));
        assert_eq!(task_number(" 7 "), Some(7));
        assert_eq!(task_number("the login bug"), None);
        assert_eq!(sentence_case("fix the login bug."), "Fix the login bug");
    }

    #[test]
    fn work_order_puts_overdue_then_priority_then_due_date() {
        let today = NaiveDate::from_ymd_opt(2025, 3, 5).unwrap();
        let at = today.and_hms_opt(9, 0, 0).unwrap();
        let task = |id, priority, due: Option<u32>, status| Task {
            id,
            title: format!("t{id}"),
            description: String::new(),
            status,
            priority,
            due: due.map(|d| NaiveDate::from_ymd_opt(2025, 3, d).unwrap()),
            assignee: None,
            created_at: at,
            updated_at: at,
        };
        let tasks = vec![
            task(1, Priority::Low, None, Status::Todo),
            task(2, Priority::High, Some(20), Status::Todo),
            task(3, Priority::Low, Some(1), Status::Todo),
            task(4, Priority::High, Some(9), Status::InProgress),
            task(5, Priority::High, Some(2), Status::Done),
        ];
        let ids: Vec<i64> = work_order(&tasks, today).iter().map(|t| t.id).collect();
        assert_eq!(ids, [3, 4, 2, 1]);
    }
}
