//! The CRM (`examples/crm/`): its agents loaded from the example's
//! files, its tools over a SQLite file in a temp dir, run through the
//! runtime on rules and with a scripted model. Every flow is checked in the CRM's rows afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use chrono::{NaiveDate, NaiveDateTime};
use concierge::config::{Config, load_agents};
use concierge::model::ScriptedModel;
use concierge::{ModelReply, RunOptions, RunOutput, RunStatus, Runtime};
use concierge_demo::crm::store::{Crm, InteractionKind};
use concierge_demo::crm::{CrmStore, toolset_with};
use tempfile::TempDir;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/crm")
}

/// Wednesday 5 March 2025, 10:00: the day the CRM is seeded and the person asks.
fn now() -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2025, 3, 5)
        .unwrap()
        .and_hms_opt(10, 0, 0)
        .unwrap()
}

fn day(m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(2025, m, d).unwrap()
}

/// A session id for a phrasing of its own (a session id has no ':').
fn slug(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

struct Fixture {
    rt: Runtime,
    store: CrmStore,
    _dir: TempDir,
}

impl Fixture {
    fn crm(&self) -> Crm {
        self.store.read().unwrap()
    }

    /// Runs `text` with `agent` in `session`, asked by Maya.
    async fn run(&self, agent: &str, session: &str, text: &str) -> RunOutput {
        self.rt
            .client(agent)
            .unwrap()
            .run(text, RunOptions::new().session_id(session).user("maya"))
            .await
            .unwrap()
    }

    async fn reply(&self, agent: &str, session: &str, text: &str) -> String {
        let out = self.run(agent, session, text).await;
        assert_eq!(out.status, RunStatus::Completed, "{out:?}");
        out.reply.unwrap_or_default()
    }
}

/// The runtime as `concierge` builds it in `examples/crm/`: the example's
/// agent files, the CRM toolset (on a temp dir), both databases in the temp dir.
async fn fixture() -> Fixture {
    fixture_with(None).await
}

async fn fixture_with(model: Option<ScriptedModel>) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::load(&example().join("concierge.toml"), true).unwrap();
    let agents_dir = config
        .agents_dir
        .clone()
        .expect("the example names its agents directory");
    let agents = load_agents(&agents_dir).unwrap().agents;
    let ids: Vec<&str> = agents.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, ["interaction", "query", "reminder", "router", "update"]);
    let store = CrmStore::open(dir.path().join("crm.db")).at(now());
    let builder = Runtime::builder()
        .sqlite(dir.path().join("concierge.db"))
        .toolset(toolset_with(store.clone()))
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

// ------------------------------------------------------------------ specialists on rules

#[tokio::test]
async fn interaction_logs_a_call_with_mike_dated_from_the_question() {
    let fx = fixture().await;
    let before = fx.crm();
    let reply = fx
        .reply("interaction", "s1", "Had a call with Mike yesterday about the proposal")
        .await;
    assert_eq!(reply, "Logged the call with Mike Brennan on Mar 4 about the proposal.");
    let crm = fx.crm();
    assert_eq!(crm.interactions.len(), before.interactions.len() + 1);
    let logged = crm.interactions.last().unwrap();
    assert_eq!(
        (logged.contact_id, logged.kind, logged.occurred_on, logged.logged_by),
        (3, InteractionKind::Call, day(3, 4), Some(1))
    );
    assert_eq!(logged.summary, "the proposal");
    assert_eq!(crm.reminders, before.reminders);
    assert_eq!(crm.contacts.len(), before.contacts.len());
}

#[tokio::test]
async fn interaction_phrasings_on_rules() {
    let fx = fixture().await;
    for (text, reply) in [
        ("talked to Sarah on Monday", "Logged the call with Sarah Lee on Mar 3."),
        (
            "met Jane about the partnership",
            "Logged the meeting with Jane Cooper on Mar 5 about the partnership.",
        ),
        (
            "log a lunch with Sarah from Acme",
            "Logged the lunch with Sarah Lee on Mar 5.",
        ),
        (
            "emailed Tom Becker 2 days ago",
            "Logged the email with Tom Becker on Mar 3.",
        ),
        (
            "note for Tom: prefers email to calls",
            "Added a note to Tom Becker: Prefers email to calls.",
        ),
    ] {
        assert_eq!(fx.reply("interaction", &slug(text), text).await, reply, "{text}");
    }
    let crm = fx.crm();
    assert_eq!(crm.interactions.len(), 7 + 4);
    assert_eq!(crm.notes.len(), 1);
}

#[tokio::test]
async fn two_johns_make_a_numbered_choice_and_nothing_is_logged() {
    let fx = fixture().await;
    let before = fx.crm();
    let out = fx
        .run("interaction", "s1", "Log a call with John about the renewal")
        .await;
    assert_eq!(out.status, RunStatus::AwaitingChoice, "{out:?}");
    assert_eq!(
        out.reply.as_deref(),
        Some(
            "Which John do you mean?\n1. John Smith (Acme, john.smith@acme.example)\n2. John Park (Globex, john.park@globex.example)"
        )
    );
    assert_eq!(fx.crm(), before);
}

#[tokio::test]
async fn reminder_for_sarah_next_tuesday() {
    let fx = fixture().await;
    let before = fx.crm();
    let reply = fx
        .reply("reminder", "s1", "Remind me to follow up with Sarah next Tuesday")
        .await;
    assert_eq!(reply, "Reminder set for Mar 11: follow up with Sarah Lee.");
    let crm = fx.crm();
    assert_eq!(crm.reminders.len(), before.reminders.len() + 1);
    let set = crm.reminders.last().unwrap();
    assert_eq!(
        (set.contact_id, set.due_on, set.owner_id, set.done),
        (4, day(3, 11), Some(1), false)
    );
    assert_eq!(crm.interactions, before.interactions);

    for (text, reply) in [
        ("Meet Sarah on Friday", "Reminder set for Mar 7: meet Sarah."),
        (
            "remind me to send the proposal to Jane on Oct 28",
            "Reminder set for Oct 28: send the proposal (Jane Cooper).",
        ),
        ("remind me to call Mike tomorrow", "Reminder set for Mar 6: call Mike."),
    ] {
        assert_eq!(fx.reply("reminder", &slug(text), text).await, reply, "{text}");
    }
    assert_eq!(fx.crm().reminders.len(), before.reminders.len() + 4);
}

#[tokio::test]
async fn update_changes_only_janes_title() {
    let fx = fixture().await;
    let before = fx.crm();
    let reply = fx.reply("update", "s1", "Update Jane's title to CEO").await;
    assert_eq!(reply, "Updated Jane Cooper's title to CEO.");
    let crm = fx.crm();
    let mut jane = before.contact(5).unwrap().clone();
    jane.title = Some("CEO".into());
    jane.updated_at = now();
    assert_eq!(crm.contact(5).unwrap(), &jane);
    for (a, b) in crm.contacts.iter().zip(&before.contacts).filter(|(a, _)| a.id != 5) {
        assert_eq!(a, b);
    }
    assert_eq!(
        (crm.interactions.len(), crm.reminders.len()),
        (before.interactions.len(), before.reminders.len())
    );

    assert_eq!(
        fx.reply("update", "s2", "Raj moved to Globex").await,
        "Updated Raj Mehta's company to Globex."
    );
    assert_eq!(
        fx.reply("update", "s3", "Sarah is now VP of Sales").await,
        "Updated Sarah Lee's title to VP of Sales."
    );
}

#[tokio::test]
async fn query_shows_my_overdue_contacts_and_writes_nothing() {
    let fx = fixture().await;
    let before = fx.crm();
    let reply = fx.reply("query", "s1", "Show my overdue contacts").await;
    assert!(
        reply.starts_with("2 overdue contacts of yours:\n- Mike Brennan"),
        "{reply}"
    );
    assert!(
        reply.contains("Nina Alvarez") && !reply.contains("John Park"),
        "only Maya's: {reply}"
    );
    let reply = fx.reply("query", "s2", "what happened with Nina?").await;
    assert!(reply.contains("Budget planning for the renewal"), "{reply}");
    let reply = fx.reply("query", "s3", "show my stats").await;
    assert!(reply.starts_with("Maya Patel: 4 contacts, 2 overdue"), "{reply}");
    let reply = fx.reply("query", "s4", "who works at Acme?").await;
    assert!(reply.contains("John Smith") && reply.contains("Sarah Lee"), "{reply}");
    assert_eq!(fx.crm(), before);
    assert_eq!(fx.store.db().applied_count().unwrap(), 0);
}

// ------------------------------------------------------------------ specialists with a model

#[tokio::test]
async fn model_logs_the_call_the_person_described() {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call(
            "add_interaction_to_contact",
            r#"{"contact": "Mike", "type": "call", "content": "the proposal", "interaction_date": "yesterday"}"#,
        ))
        .reply(ModelReply::text("Logged the call with Mike."));
    let fx = fixture_with(Some(model)).await;
    let reply = fx
        .reply("interaction", "s1", "Had a call with Mike yesterday about the proposal")
        .await;
    assert_eq!(reply, "Logged the call with Mike.");
    let logged = fx.crm().interactions.last().unwrap().clone();
    assert_eq!(
        (logged.contact_id, logged.occurred_on, logged.summary.as_str()),
        (3, day(3, 4), "the proposal")
    );
}

#[tokio::test]
async fn model_asks_which_john_with_the_tools_options() {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call(
            "add_interaction_to_contact",
            r#"{"contact": "John", "type": "call", "content": "the renewal"}"#,
        ))
        .reply(ModelReply::text("Logged the call with John Park."));
    let fx = fixture_with(Some(model)).await;
    let before = fx.crm();
    let out = fx
        .run("interaction", "s1", "Log a call with John about the renewal")
        .await;
    assert_eq!(out.status, RunStatus::AwaitingChoice, "{out:?}");
    assert!(
        out.reply
            .as_deref()
            .unwrap()
            .contains("2. John Park (Globex, john.park@globex.example)"),
        "{out:?}"
    );
    assert_eq!(fx.crm(), before, "nothing logged before the person chose");
    let reply = fx.reply("interaction", "s1", "the second one").await;
    assert_eq!(reply, "Logged the call with John Park.");
    let logged = fx.crm().interactions.last().unwrap().clone();
    assert_eq!((logged.contact_id, logged.summary.as_str()), (2, "the renewal"));
}

#[tokio::test]
async fn model_queries_my_overdue_contacts_for_the_runs_user() {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call(
            "search_contacts",
            r#"{"overdue": true, "team_member": "me"}"#,
        ))
        .reply(ModelReply::text(
            "You have two overdue contacts: Mike Brennan and Nina Alvarez.",
        ));
    let fx = fixture_with(Some(model)).await;
    let before = fx.crm();
    let out = fx.run("query", "s1", "Show my overdue contacts").await;
    assert_eq!(
        out.reply.as_deref(),
        Some("You have two overdue contacts: Mike Brennan and Nina Alvarez.")
    );
    let names: Vec<String> = match &out.tool_executions[0].outcome {
        concierge::ToolOutcome::Ok(v) => v["contacts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect(),
        other => panic!("the search failed: {other:?}"),
    };
    assert_eq!(names, ["Mike Brennan", "Nina Alvarez"]);
    assert_eq!(fx.crm(), before);
}

/// The README's "more things the rules understand", each through its agent.
#[tokio::test]
async fn the_readmes_other_phrasings_work_on_rules() {
    let fx = fixture().await;
    for (agent, text, start) in [
        (
            "interaction",
            "emailed Tom 2 days ago",
            "Logged the email with Tom Becker on Mar 3.",
        ),
        (
            "reminder",
            "set a reminder for Raj in 2 weeks",
            "Reminder set for Mar 19: follow up with Raj Mehta.",
        ),
        (
            "update",
            "change Tom's phone to +1 555 0199",
            "Updated Tom Becker's phone to +1 555 0199.",
        ),
        ("query", "find John", "2 contacts matching 'John':"),
        (
            "query",
            "Nina's history",
            "Nina Alvarez (Initech, nina@initech.example):",
        ),
        ("query", "show labels", "Labels: customer (4)"),
        (
            "query",
            "who do I need to follow up with this week?",
            "1 contact of yours:\n- John Smith",
        ),
    ] {
        let reply = fx.reply(agent, &slug(text), text).await;
        assert!(reply.starts_with(start), "{text}: {reply}");
    }
}

// ------------------------------------------------------------------ the router on rules

/// The router's replies never name a specialist or say it hands over: the
/// person talks to one CRM.
fn assert_clean(reply: &str) {
    for word in [
        "interaction",
        "reminder agent",
        "update agent",
        "query",
        "router",
        "transfer",
        "handing",
    ] {
        assert!(!reply.to_lowercase().contains(word), "{word:?} in {reply:?}");
    }
}

#[tokio::test]
async fn router_logs_a_call_dated_from_the_question() {
    let fx = fixture().await;
    let before = fx.crm();
    let reply = fx
        .reply("router", "s1", "Had a call with Mike yesterday about the proposal")
        .await;
    assert_eq!(reply, "Logged the call with Mike Brennan on Mar 4 about the proposal.");
    assert_clean(&reply);
    let crm = fx.crm();
    assert_eq!(crm.interactions.len(), before.interactions.len() + 1);
    let logged = crm.interactions.last().unwrap();
    assert_eq!(
        (logged.contact_id, logged.occurred_on, logged.logged_by),
        (3, day(3, 4), Some(1))
    );
    assert_eq!(crm.reminders, before.reminders);
}

#[tokio::test]
async fn router_sets_a_reminder_for_sarah() {
    let fx = fixture().await;
    let before = fx.crm();
    let reply = fx
        .reply("router", "s1", "Remind me to follow up with Sarah next Tuesday")
        .await;
    assert_eq!(reply, "Reminder set for Mar 11: follow up with Sarah Lee.");
    let crm = fx.crm();
    assert_eq!(crm.reminders.len(), before.reminders.len() + 1);
    let set = crm.reminders.last().unwrap();
    assert_eq!((set.contact_id, set.due_on, set.owner_id), (4, day(3, 11), Some(1)));
    assert_eq!(crm.interactions, before.interactions);
}

#[tokio::test]
async fn router_answers_a_compound_statement_in_one_message_in_its_order() {
    let fx = fixture().await;
    let before = fx.crm();
    let reply = fx
        .reply(
            "router",
            "s1",
            "Had lunch with Sarah from Acme, she's now VP of Sales, remind me to follow up next Tuesday",
        )
        .await;
    assert_eq!(
        reply,
        "Logged the lunch with Sarah Lee on Mar 5. Updated Sarah Lee's title to VP of Sales. Reminder set for Mar 11: follow up with Sarah Lee."
    );
    assert_clean(&reply);
    let crm = fx.crm();
    let lunch = crm.interactions.last().unwrap();
    assert_eq!(
        (lunch.contact_id, lunch.kind, lunch.occurred_on),
        (4, InteractionKind::Lunch, day(3, 5))
    );
    assert_eq!(crm.interactions.len(), before.interactions.len() + 1);
    assert_eq!(crm.contact(4).unwrap().title.as_deref(), Some("VP of Sales"));
    let reminder = crm.reminders.last().unwrap();
    assert_eq!((reminder.contact_id, reminder.due_on), (4, day(3, 11)));
    assert_eq!(crm.reminders.len(), before.reminders.len() + 1);
}

#[tokio::test]
async fn router_asks_which_john_and_two_logs_the_second() {
    let fx = fixture().await;
    let before = fx.crm();
    let out = fx.run("router", "s1", "Log a call with John about the renewal").await;
    assert_eq!(out.status, RunStatus::AwaitingChoice, "{out:?}");
    let question = out.reply.clone().unwrap();
    assert!(
        question.contains("Which John do you mean?\n1. John Smith (Acme, john.smith@acme.example)\n2. John Park (Globex, john.park@globex.example)"),
        "{question}"
    );
    assert_clean(&question);
    assert_eq!(fx.crm(), before, "nothing logged before the choice");
    let reply = fx.reply("router", "s1", "2").await;
    assert_eq!(reply, "Logged the call with John Park on Mar 5 about the renewal.");
    let crm = fx.crm();
    assert_eq!(crm.interactions.len(), before.interactions.len() + 1);
    let logged = crm.interactions.last().unwrap();
    assert_eq!((logged.contact_id, logged.summary.as_str()), (2, "the renewal"));
}

#[tokio::test]
async fn router_shows_my_overdue_contacts_and_writes_nothing() {
    let fx = fixture().await;
    let before = fx.crm();
    let reply = fx.reply("router", "s1", "Show my overdue contacts").await;
    assert!(
        reply.starts_with("2 overdue contacts of yours:\n- Mike Brennan"),
        "{reply}"
    );
    assert!(
        reply.contains("Nina Alvarez") && !reply.contains("John Park"),
        "{reply}"
    );
    assert_clean(&reply);
    assert_eq!(fx.crm(), before);
    assert_eq!(fx.store.db().applied_count().unwrap(), 0);
}

#[tokio::test]
async fn router_updates_only_janes_title() {
    let fx = fixture().await;
    let before = fx.crm();
    let reply = fx.reply("router", "s1", "Update Jane's title to CEO").await;
    assert_eq!(reply, "Updated Jane Cooper's title to CEO.");
    let crm = fx.crm();
    let mut jane = before.contact(5).unwrap().clone();
    jane.title = Some("CEO".into());
    jane.updated_at = now();
    assert_eq!(crm.contact(5).unwrap(), &jane);
    for (a, b) in crm.contacts.iter().zip(&before.contacts).filter(|(a, _)| a.id != 5) {
        assert_eq!(a, b);
    }
    assert_eq!(crm.interactions, before.interactions);
    assert_eq!(crm.reminders, before.reminders);
}

#[tokio::test]
async fn router_seed_compound_talked_to_mike_he_wants_to_meet() {
    let fx = fixture().await;
    let reply = fx
        .reply("router", "s1", "Talked to Mike, he wants to meet Oct 28th")
        .await;
    assert_eq!(
        reply,
        "Logged the call with Mike Brennan on Mar 5. Reminder set for Oct 28: meet Mike."
    );
    let crm = fx.crm();
    let reminder = crm.reminders.last().unwrap();
    assert_eq!((reminder.contact_id, reminder.due_on), (3, day(10, 28)));
}

// ------------------------------------------------------------------ the router with a model

/// A model that answers by agent: the router calls its specialists (the
/// three parts of the statement at once), each specialist calls its tool,
/// then everyone answers from what their tools said. Deterministic whatever
/// order the concurrent children ask in.
fn router_model() -> ScriptedModel {
    use concierge::core::{Message, ModelToolCall};
    ScriptedModel::from_fn(|request| {
        let results: Vec<String> = request
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::Tool { outcome, .. } => Some(outcome.to_model_text()),
                _ => None,
            })
            .collect();
        let call = |name: &str, arguments: &str| ModelToolCall {
            name: name.into(),
            arguments: arguments.into(),
        };
        let calls = match (request.agent.as_str(), results.is_empty()) {
            ("router", true) => vec![
                call("interaction", r#"{"request": "Had lunch with Sarah from Acme today"}"#),
                call("update", r#"{"request": "Sarah from Acme is now VP of Sales"}"#),
                call(
                    "reminder",
                    r#"{"request": "Remind me to follow up with Sarah from Acme next Tuesday"}"#,
                ),
            ],
            ("interaction", true) => vec![call(
                "add_interaction_to_contact",
                r#"{"contact": "Sarah from Acme", "type": "lunch", "interaction_date": "today"}"#,
            )],
            ("update", true) => vec![call(
                "update_contact",
                r#"{"contact": "Sarah from Acme", "title": "VP of Sales"}"#,
            )],
            ("reminder", true) => vec![call(
                "set_next_reminder",
                r#"{"contact": "Sarah from Acme", "reminder_date": "next Tuesday", "text": "follow up"}"#,
            )],
            // Answer with what the tools said, in order: each result's `message`,
            // or a child's reply as is.
            _ => {
                let said: Vec<String> = results
                    .iter()
                    .map(|r| {
                        serde_json::from_str::<serde_json::Value>(r)
                            .ok()
                            .and_then(|v| v["message"].as_str().map(str::to_string))
                            .unwrap_or_else(|| r.clone())
                    })
                    .collect();
                return Ok(ModelReply::text(said.join(" ")));
            }
        };
        Ok(ModelReply {
            text: String::new(),
            tool_calls: calls,
            usage: Some(concierge::Usage::tokens(100, 10)),
            finish_reason: Some("tool_calls".into()),
            guardrail: None,
        })
    })
}

#[tokio::test]
async fn model_router_answers_a_compound_statement_once_through_its_specialists() {
    let fx = fixture_with(Some(router_model())).await;
    let before = fx.crm();
    let out = fx
        .run(
            "router",
            "m1",
            "Had lunch with Sarah from Acme, she's now VP of Sales, remind me to follow up next Tuesday",
        )
        .await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(
        out.reply.as_deref(),
        Some(
            "Logged the lunch with Sarah Lee on Mar 5. Updated Sarah Lee's title to VP of Sales. \
             Reminder set for Mar 11: follow up (Sarah Lee)."
        ),
        "one answer, in the statement's order"
    );
    assert_eq!(out.agent, "router", "the router keeps the conversation");
    let reply = out.reply.clone().unwrap_or_default().to_lowercase();
    for word in ["interaction", "reminder agent", "update agent", "transferr"] {
        assert!(!reply.contains(word), "the reply names no specialist: {reply}");
    }
    // The children's tokens count in the router's run: the router's first
    // call and each child's tool call carry 100 (the answers carry none).
    assert_eq!(out.usage.input_tokens, 100 * 4, "{:?}", out.usage);

    let crm = fx.crm();
    assert_eq!(crm.interactions.len(), before.interactions.len() + 1);
    let sarah = crm.contacts.iter().find(|c| c.name == "Sarah Lee").unwrap();
    assert_eq!(sarah.title.as_deref(), Some("VP of Sales"));
    assert_eq!(crm.reminders.len(), before.reminders.len() + 1);
    assert_eq!(crm.reminders.last().unwrap().due_on, day(3, 11));
}
