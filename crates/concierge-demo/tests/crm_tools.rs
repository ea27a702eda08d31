//! The CRM's tools called directly (no runtime, no model) over a
//! SQLite file in a temp dir: each change is checked in the rows afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use chrono::{NaiveDate, NaiveDateTime};
use concierge::core::{AgentId, CallId, IdempotencyKey, RunId, SessionId};
use concierge::{Choice, Tool, ToolContext, ToolError};
use concierge_demo::crm::store::{Crm, InteractionKind};
use concierge_demo::crm::tools::{
    AddInteraction, AddNote, CalculateDateRange, GetContactTimeline, GetDashboardStats, GetLabels, SearchCompanies,
    SearchContacts, SetNextReminder, UpdateContact,
};
use concierge_demo::crm::{CrmStore, toolset_with};
use serde_json::{Value, json};
use tempfile::TempDir;

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

struct Fixture {
    store: Arc<CrmStore>,
    _dir: TempDir,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(CrmStore::open(dir.path().join("crm.db")).at(now()));
    Fixture { store, _dir: dir }
}

/// The context of a call with idempotency key `key`, asked by `user`.
fn cx(key: &str, user: Option<&str>) -> ToolContext {
    ToolContext {
        session_id: SessionId::new("s1"),
        run_id: RunId::new("r1"),
        call_id: CallId::from(key),
        agent: AgentId::new("crm"),
        idempotency_key: IdempotencyKey::given(key),
        user: user.map(str::to_string),
        tenant: None,
        blackboard: Default::default(),
        asked_at: concierge::core::Timestamp(0),
        channel: None,
        checkpoint: None,
    }
}

async fn call<T: Tool>(tool: &T, key: &str, user: Option<&str>, args: Value) -> Result<Value, ToolError> {
    let args: T::Args = serde_json::from_value(args).unwrap();
    tool.call(args, cx(key, user)).await
}

impl Fixture {
    fn crm(&self) -> Crm {
        self.store.read().unwrap()
    }

    fn interaction(&self) -> AddInteraction {
        AddInteraction::new(Arc::clone(&self.store))
    }
}

#[tokio::test]
async fn a_call_with_mike_yesterday_is_logged_on_the_day_before() {
    let fx = fixture();
    let before = fx.crm();
    let out = call(
        &fx.interaction(),
        "k1",
        Some("maya"),
        json!({"contact": "Mike", "type": "call", "content": "the proposal", "interaction_date": "yesterday"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out["message"],
        "Logged the call with Mike Brennan on Mar 4 about the proposal."
    );
    let crm = fx.crm();
    assert_eq!(crm.interactions.len(), before.interactions.len() + 1);
    let logged = crm.interactions.last().unwrap();
    assert_eq!(logged.contact_id, 3);
    assert_eq!(logged.kind, InteractionKind::Call);
    assert_eq!(logged.summary, "the proposal");
    assert_eq!(logged.occurred_on, day(3, 4));
    assert_eq!(logged.logged_by, Some(1), "Maya asked");
    assert_eq!(logged.created_at, now());
    assert_eq!(crm.contact(3).unwrap().last_touch, Some(day(3, 4)));

    // The same call again (a retry) changes nothing more.
    let again = call(
        &fx.interaction(),
        "k1",
        Some("maya"),
        json!({"contact": "Mike", "type": "call", "content": "the proposal", "interaction_date": "yesterday"}),
    )
    .await
    .unwrap();
    assert_eq!(again, out);
    assert_eq!(fx.crm().interactions.len(), before.interactions.len() + 1);
    assert_eq!(fx.store.db().applied_count().unwrap(), 1);
}

#[tokio::test]
async fn kinds_are_read_from_the_words_people_use_and_call_is_the_default() {
    let fx = fixture();
    call(
        &fx.interaction(),
        "k1",
        None,
        json!({"contact": "Sarah from Acme", "type": "Lunch"}),
    )
    .await
    .unwrap();
    call(
        &fx.interaction(),
        "k2",
        None,
        json!({"contact": "Tom", "type": "talked", "interaction_date": "Monday"}),
    )
    .await
    .unwrap();
    call(&fx.interaction(), "k3", None, json!({"contact": "Raj"}))
        .await
        .unwrap();
    let crm = fx.crm();
    let last: Vec<(i64, InteractionKind, NaiveDate, Option<i64>)> = crm
        .interactions
        .iter()
        .rev()
        .take(3)
        .rev()
        .map(|i| (i.contact_id, i.kind, i.occurred_on, i.logged_by))
        .collect();
    assert_eq!(
        last,
        [
            (4, InteractionKind::Lunch, day(3, 5), None),
            (6, InteractionKind::Call, day(3, 3), None),
            (8, InteractionKind::Call, day(3, 5), None),
        ]
    );

    let e = call(
        &fx.interaction(),
        "k4",
        None,
        json!({"contact": "Raj", "type": "carrier pigeon"}),
    )
    .await
    .unwrap_err();
    assert!(
        e.to_string().contains("'carrier pigeon' is not a kind of interaction"),
        "{e}"
    );
    let e = call(
        &fx.interaction(),
        "k5",
        None,
        json!({"contact": "Raj", "interaction_date": "tomorrow"}),
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("Mar 6 is still ahead"), "{e}");
    let e = call(&fx.interaction(), "k6", Some("zed"), json!({"contact": "Raj"}))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("'zed' is not on the team"), "{e}");
    assert_eq!(fx.crm().interactions.len(), crm.interactions.len());
}

#[tokio::test]
async fn two_johns_are_a_choice_and_the_chosen_id_logs_it() {
    let fx = fixture();
    let before = fx.crm();
    let args = json!({"contact": "John", "type": "call", "content": "the renewal"});
    let out = call(&fx.interaction(), "k1", Some("maya"), args.clone()).await.unwrap();
    let choice = Choice::from_value(&out).expect("a choice");
    assert_eq!(choice.argument, "contact_id");
    assert_eq!(
        choice.text(),
        "Which John do you mean?\n1. John Smith (Acme, john.smith@acme.example)\n2. John Park (Globex, john.park@globex.example)"
    );
    assert_eq!(
        (choice.options[0].id.clone(), choice.options[1].id.clone()),
        (json!(1), json!(2))
    );
    assert_eq!(fx.crm(), before, "nothing written before the choice");
    assert_eq!(fx.store.db().applied_count().unwrap(), 0);

    // The person says "2": the same call again with the chosen id filled in.
    let mut chosen = args;
    chosen["contact_id"] = json!(2);
    let out = call(&fx.interaction(), "k1", Some("maya"), chosen).await.unwrap();
    assert_eq!(
        out["message"],
        "Logged the call with John Park on Mar 5 about the renewal."
    );
    let crm = fx.crm();
    let logged = crm.interactions.last().unwrap();
    assert_eq!((logged.contact_id, logged.summary.as_str()), (2, "the renewal"));
    assert_eq!(crm.interactions.len(), before.interactions.len() + 1);
}

#[tokio::test]
async fn an_unknown_contact_changes_nothing_and_says_so() {
    let fx = fixture();
    let before = fx.crm();
    let out = call(&fx.interaction(), "k1", None, json!({"contact": "Bob Marley"}))
        .await
        .unwrap();
    assert_eq!(out["outcome"], "not_found");
    assert!(
        out["message"]
            .as_str()
            .unwrap()
            .starts_with("I found no contact named 'Bob Marley'"),
        "{out}"
    );
    assert_eq!(fx.crm(), before);
}

#[tokio::test]
async fn a_reminder_for_sarah_next_tuesday() {
    let fx = fixture();
    let tool = SetNextReminder::new(Arc::clone(&fx.store));
    let out = call(
        &tool,
        "k1",
        Some("maya"),
        json!({"contact": "Sarah", "reminder_date": "next Tuesday"}),
    )
    .await
    .unwrap();
    assert_eq!(out["message"], "Reminder set for Mar 11: follow up with Sarah Lee.");
    let crm = fx.crm();
    let reminder = crm.reminders.last().unwrap();
    assert_eq!(reminder.contact_id, 4);
    assert_eq!(reminder.text, "Follow up with Sarah Lee");
    assert_eq!(reminder.due_on, day(3, 11));
    assert!(!reminder.done);
    assert_eq!(reminder.owner_id, Some(1));
    assert_eq!(crm.next_reminder(4).unwrap().id, reminder.id);

    // With a text, on a day of the year; without a user the contact's owner gets it.
    let out = call(
        &tool,
        "k2",
        None,
        json!({"contact": "Jane", "reminder_date": "Oct 28", "text": "send the partnership draft"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out["message"],
        "Reminder set for Oct 28: send the partnership draft (Jane Cooper)."
    );
    let reminder = fx.crm().reminders.last().unwrap().clone();
    assert_eq!((reminder.due_on, reminder.owner_id), (day(10, 28), Some(2)));

    let e = call(
        &tool,
        "k3",
        None,
        json!({"contact": "Jane", "reminder_date": "2025-03-01"}),
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("Mar 1 has passed"), "{e}");
    let e = call(
        &tool,
        "k4",
        None,
        json!({"contact": "Jane", "reminder_date": "someday"}),
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("could not read the date \"someday\""), "{e}");
    assert_eq!(fx.crm().reminders.len(), crm.reminders.len() + 1);
}

#[tokio::test]
async fn updating_janes_title_changes_only_the_title() {
    let fx = fixture();
    let before = fx.crm();
    let tool = UpdateContact::new(Arc::clone(&fx.store));
    let out = call(&tool, "k1", Some("leo"), json!({"contact": "Jane's", "title": "CEO"}))
        .await
        .unwrap();
    assert_eq!(out["message"], "Updated Jane Cooper's title to CEO.");
    assert_eq!(out["changed"], json!({"title": "CEO"}));
    let crm = fx.crm();
    let mut expected = before.contact(5).unwrap().clone();
    expected.title = Some("CEO".into());
    expected.updated_at = now();
    assert_eq!(crm.contact(5).unwrap(), &expected);
    assert_eq!(
        crm.contacts.iter().filter(|c| c.id != 5).collect::<Vec<_>>(),
        before.contacts.iter().filter(|c| c.id != 5).collect::<Vec<_>>()
    );
    assert_eq!(crm.companies, before.companies);

    // Several fields, and a company new to the CRM.
    let out = call(
        &tool,
        "k2",
        None,
        json!({"contact_id": 8, "phone": "+1 555 0199", "company": "Pied Piper"}),
    )
    .await
    .unwrap();
    assert_eq!(
        out["message"],
        "Updated Raj Mehta: phone +1 555 0199, company Pied Piper."
    );
    let raj = fx.crm().contact(8).unwrap().clone();
    assert_eq!(raj.company.as_deref(), Some("Pied Piper"));
    assert_eq!(raj.phone.as_deref(), Some("+1 555 0199"));

    let e = call(&tool, "k3", None, json!({"contact": "Jane"})).await.unwrap_err();
    assert!(e.to_string().contains("Nothing to change: give a new name"), "{e}");
    let e = call(&tool, "k4", None, json!({"contact": "Jane", "email": "jane at hooli"}))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("not an email address"), "{e}");
}

#[tokio::test]
async fn my_overdue_contacts_are_the_asking_members_and_nothing_is_written() {
    let fx = fixture();
    let before = fx.crm();
    let tool = SearchContacts::new(Arc::clone(&fx.store));
    let out = call(&tool, "k1", Some("maya"), json!({"overdue": true, "team_member": "me"}))
        .await
        .unwrap();
    let names: Vec<&str> = out["contacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Mike Brennan", "Nina Alvarez"]);
    assert_eq!(
        out["message"],
        "2 overdue contacts of yours:\n\
         - Mike Brennan (Initech, mike@initech.example), Engineering Manager — next: Send the pricing sheet, Feb 23 (10 days overdue)\n\
         - Nina Alvarez (Initech, nina@initech.example), CFO — next: Follow up on the renewal budget, Mar 2 (3 days overdue)"
    );
    let leo = call(&tool, "k2", Some("leo"), json!({"overdue": true, "team_member": "me"}))
        .await
        .unwrap();
    assert_eq!(leo["contacts"][0]["name"], "John Park");
    assert_eq!(leo["count"], 1);
    // Without a user, "my" cannot be answered.
    let e = call(&tool, "k3", None, json!({"overdue": true, "team_member": "me"}))
        .await
        .unwrap_err();
    let said = e.to_string();
    assert!(said.contains("I don't know who you are"), "{said}");
    assert!(said.contains("token") && said.contains("--user"), "{said}");
    // Searches are not filtered by team member.
    let johns = call(&tool, "k4", Some("maya"), json!({"search": "john"}))
        .await
        .unwrap();
    assert_eq!(johns["count"], 2);
    let acme = call(&tool, "k5", None, json!({"company": "acme"})).await.unwrap();
    assert_eq!(acme["count"], 2);
    let vip = call(&tool, "k6", None, json!({"label": "VIP"})).await.unwrap();
    assert_eq!(vip["contacts"][0]["name"], "Sarah Lee");
    let week = call(&tool, "k7", None, json!({"due_from": "today", "due_to": "in 7 days"}))
        .await
        .unwrap();
    assert_eq!(week["contacts"][0]["name"], "John Smith");
    assert_eq!(fx.crm(), before);
    assert_eq!(fx.store.db().applied_count().unwrap(), 0);
}

#[tokio::test]
async fn the_query_tools_read_stats_timelines_labels_and_ranges() {
    let fx = fixture();
    let before = fx.crm();
    let stats = call(
        &GetDashboardStats::new(Arc::clone(&fx.store)),
        "k1",
        Some("maya"),
        json!({"team_member": "me"}),
    )
    .await
    .unwrap();
    assert_eq!(
        stats["message"],
        "Maya Patel: 4 contacts, 2 overdue; 3 open reminders, 1 due in the next 7 days; 4 interactions in the last 30 days."
    );
    let team = call(&GetDashboardStats::new(Arc::clone(&fx.store)), "k2", None, json!({}))
        .await
        .unwrap();
    assert_eq!(
        (team["contacts"].as_u64(), team["overdue"].as_u64()),
        (Some(8), Some(4))
    );

    let timeline = GetContactTimeline::new(Arc::clone(&fx.store));
    let out = call(&timeline, "k3", None, json!({"contact": "Nina"})).await.unwrap();
    assert_eq!(
        out["message"],
        "Nina Alvarez (Initech, nina@initech.example):\n\
         - Mar 2 Reminder (overdue): Follow up on the renewal budget\n\
         - Feb 3 Meeting: Budget planning for the renewal"
    );
    let out = call(&timeline, "k4", None, json!({"contact": "John"})).await.unwrap();
    assert!(Choice::from_value(&out).is_some(), "a read asks too: {out}");

    let labels = call(&GetLabels::new(Arc::clone(&fx.store)), "k5", None, json!({}))
        .await
        .unwrap();
    assert_eq!(
        labels["message"],
        "Labels: customer (4), partner (1), prospect (3), vip (1)."
    );
    let range = call(
        &CalculateDateRange::new(Arc::clone(&fx.store)),
        "k6",
        None,
        json!({"range": "last week"}),
    )
    .await
    .unwrap();
    assert_eq!(
        (range["start"].as_str(), range["end"].as_str()),
        (Some("2025-02-24"), Some("2025-03-02"))
    );
    assert_eq!(range["message"], "Last week: Feb 24 to Mar 2.");
    let companies = call(
        &SearchCompanies::new(Arc::clone(&fx.store)),
        "k7",
        None,
        json!({"search": "acme"}),
    )
    .await
    .unwrap();
    assert_eq!(
        companies["message"],
        "- Acme (Manufacturing, acme.example): John Smith, Sarah Lee"
    );
    assert_eq!(fx.crm(), before);
}

#[tokio::test]
async fn a_note_is_added_to_the_contact() {
    let fx = fixture();
    let tool = AddNote::new(Arc::clone(&fx.store));
    let out = call(
        &tool,
        "k1",
        Some("ava"),
        json!({"contact": "Tom Becker", "content": "prefers email to calls"}),
    )
    .await
    .unwrap();
    assert_eq!(out["message"], "Added a note to Tom Becker: Prefers email to calls.");
    let crm = fx.crm();
    let note = crm.notes.last().unwrap();
    assert_eq!(
        (note.contact_id, note.noted_on, note.written_by),
        (6, day(3, 5), Some(3))
    );
}

#[test]
fn reads_are_read_only_and_no_change_asks_first() {
    let dir = tempfile::tempdir().unwrap();
    let set = toolset_with(CrmStore::open(dir.path().join("crm.db")));
    let specs = set.specs();
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "search_contacts",
            "search_companies",
            "add_interaction_to_contact",
            "add_note_to_contact",
            "set_next_reminder",
            "update_contact",
            "get_dashboard_stats",
            "get_contact_timeline",
            "get_labels",
            "calculate_date_range"
        ]
    );
    for spec in &specs {
        let writes = [
            "add_interaction_to_contact",
            "add_note_to_contact",
            "set_next_reminder",
            "update_contact",
        ]
        .contains(&spec.name.as_str());
        assert_eq!(spec.annotations.read_only, !writes, "{}", spec.name);
        assert!(!spec.annotations.requires_confirmation, "{}", spec.name);
        assert!(spec.annotations.idempotent, "{}", spec.name);
        assert!(!spec.description.is_empty());
    }
    // Nothing is created before a tool is called.
    assert!(!dir.path().join("crm.db").exists());
}

#[tokio::test]
async fn dates_count_from_when_the_person_asked() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(CrmStore::open(dir.path().join("crm.db")));
    let tool = AddInteraction::new(Arc::clone(&store));
    let mut context = cx("k1", None);
    // Asked at noon UTC on 5 March 2025: "yesterday" is 4 March, whenever the tool runs.
    context.asked_at = concierge::core::Timestamp(1_741_176_000_000);
    let args = serde_json::from_value(json!({"contact": "Mike", "interaction_date": "yesterday"})).unwrap();
    tool.call(args, context).await.unwrap();
    let logged = store.read().unwrap().interactions.last().unwrap().clone();
    assert_eq!(logged.occurred_on, day(3, 4));
}
