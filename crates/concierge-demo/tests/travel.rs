//! The assistant's travel goals (`examples/assistant/agents/travel_*.toml`)
//! through the hub of the assistant: a first message that names no agent,
//! the event → flight → invoice and fixture → train → invoice flows, on
//! rules and with a scripted model. The invoices are checked in the travel
//! database afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use chrono::{NaiveDate, NaiveDateTime};
use concierge::config::{Config, load_agents};
use concierge::model::ScriptedModel;
use concierge::{ModelReply, RunOptions, RunOutput, RunStatus, Runtime};
use concierge_demo::travel::store::{Invoice, Mode};
use concierge_demo::travel::{TravelStore, toolset_with};
use serde_json::json;
use tempfile::TempDir;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/assistant")
}

/// Thursday 20 February 2025, 09:00: when the tests' person asks.
fn now() -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2025, 2, 20)
        .unwrap()
        .and_hms_opt(9, 0, 0)
        .unwrap()
}

fn day(m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(2025, m, d).unwrap()
}

struct Fixture {
    rt: Runtime,
    store: TravelStore,
    _dir: TempDir,
}

impl Fixture {
    fn invoices(&self) -> Vec<Invoice> {
        self.store.invoices().unwrap()
    }

    async fn say(&self, session: &str, text: &str) -> RunOutput {
        self.rt.send(text, RunOptions::new().session_id(session)).await.unwrap()
    }

    async fn agent_of(&self, session: &str) -> String {
        let sessions = self.rt.sessions().await.unwrap();
        sessions
            .iter()
            .find(|s| s.id.as_str() == session)
            .unwrap()
            .agent
            .to_string()
    }
}

/// The assistant as `concierge` builds it in `examples/assistant/`: every
/// goal file it loads, every demo toolset and agent, with the travel
/// database in a temp dir on a fixed clock.
async fn fixture(model: Option<ScriptedModel>) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::load(&example().join("concierge.toml"), true).unwrap();
    let mut agents = Vec::new();
    let mut servers = std::collections::BTreeMap::new();
    for agents_dir in config.agents_dir.iter().chain(&config.agents_dirs) {
        let files = load_agents(agents_dir).unwrap();
        servers.extend(files.mcp_servers);
        agents.extend(files.agents);
    }
    for id in ["travel_events", "travel_fixtures", "hint_game"] {
        assert!(
            agents.iter().any(|a| a.id.as_str() == id),
            "{id} is a goal of the assistant"
        );
    }
    let store = TravelStore::open(dir.path().join("travel.db")).at(now());
    let mut builder = Runtime::builder().sqlite(dir.path().join("concierge.db"));
    for set in concierge_demo::toolsets() {
        if set.name() != concierge_demo::travel::TOOLSET {
            builder = builder.toolset(set);
        }
    }
    let builder = builder
        .toolset(toolset_with(store.clone()))
        .agents(concierge_demo::agents())
        .agent_files(concierge::config::AgentFiles {
            agents,
            mcp_servers: servers,
            ..Default::default()
        });
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
async fn rules_event_then_flight_then_invoice_after_yes() {
    let fx = fixture(None).await;
    let out = fx.say("t1", "what's on in Melbourne in March?").await;
    assert_eq!(
        out.agent.as_str(),
        "travel_events",
        "the hub routed by the goal's intents"
    );
    let reply = out.reply.unwrap();
    assert!(
        reply.starts_with("2 events in Melbourne in March 2025:\n- Yarra Lights Festival at Birrarung Marr, Thu 6 Mar to Sun 16 Mar 2025"),
        "{reply}"
    );
    assert!(reply.contains("- Southbank Comedy Week"), "{reply}");
    assert!(reply.ends_with("I'll look for flights on Wed 5 Mar 2025."), "{reply}");

    // To the event's city, the day before it starts: nothing repeated.
    let out = fx.say("t1", "find me a flight from Sydney").await;
    assert_eq!(out.agent.as_str(), "travel_events");
    let search = &out.tool_executions[0];
    assert_eq!(search.tool.as_str(), "search_flights");
    assert_eq!(
        search.arguments,
        json!({"origin": "Sydney", "destination": "Melbourne", "date": "2025-03-05"})
    );
    let reply = out.reply.unwrap();
    assert_eq!(
        reply,
        "3 flights from Sydney to Melbourne on Wed 5 Mar 2025:\n\
         - SX100 Sydney 07:00 → Melbourne 08:35, A$164.00\n\
         - KA101 Sydney 12:30 → Melbourne 14:05, A$134.00\n\
         - SX102 Sydney 18:15 → Melbourne 19:50, A$149.00\n\
         The cheapest is KA101 at 12:30 for A$134.00. Say \"book it\" and I'll create the invoice, or name another flight."
    );

    // Booking asks first, naming the flight; nothing is written before yes.
    let out = fx.say("t1", "book it").await;
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    let pending = out.pending_confirmation.as_ref().unwrap();
    assert_eq!(pending.tool.as_str(), "create_invoice");
    assert_eq!(
        pending.message,
        "I'll create an invoice for KA101 on 2025-03-05 (KA101 Sydney 12:30 → Melbourne 14:05, A$134.00). Proceed?"
    );
    assert!(fx.invoices().is_empty());

    let out = fx.say("t1", "yes").await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(
        out.reply.as_deref(),
        Some(
            "Created invoice INV-2025-0001: KA101 Sydney 12:30 → Melbourne 14:05, A$134.00 on Wed 5 Mar 2025, \
             1 passenger, A$134.00. It is due on Thu 6 Mar 2025."
        )
    );
    let invoices = fx.invoices();
    assert_eq!(invoices.len(), 1);
    let invoice = &invoices[0];
    assert_eq!(invoice.number, "INV-2025-0001");
    assert_eq!((invoice.mode, invoice.service.as_str()), (Mode::Flight, "KA101"));
    assert_eq!(invoice.travel_date, day(3, 5));
    assert_eq!(
        (invoice.passengers, invoice.unit_cents, invoice.amount_cents),
        (1, 13400, 13400)
    );
    assert_eq!(invoice.currency, "AUD");
    assert_eq!(invoice.created_at, now());
    assert_eq!(invoice.due_on, day(3, 6));
    assert_eq!(fx.store.db().applied_count().unwrap(), 1);
    // The invoice completed the goal: the conversation is back at the hub.
    assert_eq!(fx.agent_of("t1").await, "hub");
}

#[tokio::test]
async fn rules_fixture_then_train_then_invoice_for_two_after_yes() {
    let fx = fixture(None).await;
    let april = fx
        .store
        .fixtures(Some("Mersey Rovers"), None, day(4, 1), day(4, 30))
        .unwrap();
    let first = april[0].clone();
    let out = fx.say("f1", "when do Mersey Rovers play in April?").await;
    assert_eq!(
        out.agent.as_str(),
        "travel_fixtures",
        "the hub routed by the goal's intents"
    );
    let reply = out.reply.unwrap();
    assert!(
        reply.starts_with(&format!("Mersey Rovers' matches in April 2025:\n- {}", first.line())),
        "{reply}"
    );
    assert_eq!(reply.matches("\n- ").count(), april.len(), "{reply}");

    let out = fx.say("f1", "find me a train from London").await;
    let search = &out.tool_executions[0];
    assert_eq!(search.tool.as_str(), "search_trains");
    assert_eq!(
        search.arguments,
        json!({"origin": "London", "destination": first.city, "date": first.kickoff.date().to_string()})
    );
    let trains = fx.store.services(Mode::Train, "London", &first.city).unwrap();
    let cheapest = &trains[0];
    let fare = cheapest.fare_on(first.kickoff.date());
    let reply = out.reply.unwrap();
    assert!(
        reply.starts_with(&format!("5 trains from London to {} on ", first.city)),
        "{reply}"
    );
    assert!(
        reply.contains(&format!("The cheapest is {} at 06:30", cheapest.number)),
        "a Saturday has no peak fares, so the earliest of equal fares: {reply}"
    );

    let out = fx.say("f1", "book it for 2 people").await;
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    let pending = out.pending_confirmation.as_ref().unwrap();
    assert_eq!(
        pending.message,
        format!(
            "I'll create an invoice for {} on {} ({}) for 2 passengers. Proceed?",
            cheapest.number,
            first.kickoff.date(),
            cheapest.line(first.kickoff.date())
        )
    );
    assert!(fx.invoices().is_empty());
    let out = fx.say("f1", "yes please").await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert!(
        out.reply
            .as_deref()
            .unwrap()
            .starts_with("Created invoice INV-2025-0001: "),
        "{out:?}"
    );
    let invoices = fx.invoices();
    assert_eq!(invoices.len(), 1);
    let invoice = &invoices[0];
    assert_eq!(
        (invoice.mode, invoice.service.as_str()),
        (Mode::Train, cheapest.number.as_str())
    );
    assert_eq!(invoice.travel_date, first.kickoff.date());
    assert_eq!((invoice.passengers, invoice.amount_cents), (2, 2 * fare));
    assert_eq!(invoice.currency, "GBP");
    assert_eq!(fx.agent_of("f1").await, "hub");
}

#[tokio::test]
async fn rules_a_declined_booking_writes_nothing_and_the_trip_goes_on() {
    let fx = fixture(None).await;
    fx.say("d1", "what's on in Melbourne in March?").await;
    fx.say("d1", "find me a flight from Sydney").await;
    fx.say("d1", "book it").await;
    let out = fx.say("d1", "no").await;
    assert_eq!(out.reply.as_deref(), Some("OK, I did not do that."));
    assert!(fx.invoices().is_empty());
    assert_eq!(fx.store.db().applied_count().unwrap(), 0);
    assert_eq!(fx.agent_of("d1").await, "travel_events", "the goal is not met yet");
    // Another flight by its number, same day.
    let out = fx.say("d1", "book SX100").await;
    let pending = out.pending_confirmation.as_ref().unwrap();
    assert_eq!(
        pending.message,
        "I'll create an invoice for SX100 on 2025-03-05. Proceed?"
    );
    fx.say("d1", "yes").await;
    let invoices = fx.invoices();
    assert_eq!(invoices.len(), 1);
    assert_eq!(
        (invoices[0].service.as_str(), invoices[0].amount_cents),
        ("SX100", 16400)
    );
}

#[tokio::test]
async fn rules_bad_input_gets_sentences() {
    let fx = fixture(None).await;
    let out = fx.say("e1", "what's on in Atlantis in March?").await;
    let reply = out.reply.unwrap();
    assert!(
        reply.starts_with(
            "I could not do that: I know no city with events called 'Atlantis'. I know: Adelaide (ADL), Auckland (AKL)"
        ),
        "{reply}"
    );
    // A flight "from Sydney" before any event: the contextual route is
    // passed over, and no search runs with a placeholder for a city. The
    // hub just opened the goal, so it says what it does (its starter prompt).
    let out = fx.say("e2", "I want a flight from Sydney").await;
    assert!(out.tool_executions.is_empty(), "{out:?}");
    assert!(
        out.reply
            .unwrap()
            .starts_with("I plan trips to events in Australia and New Zealand.")
    );
    // Said again, the goal answers with its own rules' fallback.
    let out = fx.say("e2", "I want a flight from Sydney").await;
    assert!(out.tool_executions.is_empty(), "{out:?}");
    assert!(out.reply.unwrap().starts_with("Tell me a city and a month"));
    let out = fx.say("e3", "find flights from Sydney to Perth on 2025-01-02").await;
    let reply = out.reply.unwrap();
    assert!(reply.contains("Thu 2 Jan 2025 has passed"), "{reply}");
    let out = fx
        .say("e4", "find flights from Sydney to Perth on Friday under 300")
        .await;
    let search = &out.tool_executions[0];
    assert_eq!(search.arguments["max_price"], "300", "as the rules wrote it");
    let reply = out.reply.unwrap();
    assert!(
        reply.starts_with(
            "No flight from Sydney to Perth on Fri 21 Feb 2025 costs A$300.00 or less; the cheapest is KA"
        ),
        "{reply}"
    );
    assert!(fx.invoices().is_empty());
}

// ------------------------------------------------------------------ scripted model

#[tokio::test]
async fn model_event_flight_invoice_with_coerced_arguments() {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("find_events", r#"{"city": "Melbourne", "month": "March"}"#))
        .reply(ModelReply::text("Yarra Lights Festival runs 6–16 March. Where do you fly from?"))
        // "200" and "2" arrive as strings: the validator makes them numbers.
        .reply(ModelReply::tool_call(
            "search_flights",
            r#"{"origin": "SYD", "destination": "Melbourne", "date": "2025-03-05", "max_price": "200"}"#,
        ))
        .reply(ModelReply::text("KA101 at 12:30 is the cheapest, A$134."))
        .reply(ModelReply::tool_call(
            "create_invoice",
            r#"{"service": "KA101", "date": "2025-03-05", "passengers": "2", "summary": "KA101 Sydney 12:30 → Melbourne 14:05, A$134.00"}"#,
        ))
        .reply(ModelReply::text("Invoice INV-2025-0001 is created: A$268 for two."));
    let fx = fixture(Some(model.clone())).await;
    let out = fx.say("m1", "what's on in Melbourne in March?").await;
    assert_eq!(out.agent.as_str(), "travel_events");
    assert_eq!(model.requests().len(), 2, "the routing needed no model call");
    let events = out.tool_executions[0].outcome.clone();
    assert!(format!("{events:?}").contains("Yarra Lights Festival"));

    let out = fx
        .say("m1", "find me a flight from Sydney under $200, for two of us")
        .await;
    let search = &out.tool_executions[0];
    assert_eq!(search.arguments["max_price"], "200", "as the model wrote it");
    let concierge::ToolOutcome::Ok(found) = &search.outcome else {
        panic!("the search failed: {search:?}");
    };
    assert_eq!(
        found["offer"], "KA101",
        "the validator made it a number the search used"
    );
    assert_eq!(out.reply.as_deref(), Some("KA101 at 12:30 is the cheapest, A$134."));

    let out = fx.say("m1", "book it").await;
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    let pending = out.pending_confirmation.as_ref().unwrap();
    assert_eq!(
        pending.message,
        "I'll create an invoice for KA101 on 2025-03-05 (KA101 Sydney 12:30 → Melbourne 14:05, A$134.00) for 2 passengers. Proceed?"
    );
    assert!(fx.invoices().is_empty());
    let out = fx.say("m1", "yes").await;
    assert_eq!(
        out.reply.as_deref(),
        Some("Invoice INV-2025-0001 is created: A$268 for two.")
    );
    let invoices = fx.invoices();
    assert_eq!(invoices.len(), 1);
    assert_eq!(
        (
            invoices[0].service.as_str(),
            invoices[0].passengers,
            invoices[0].amount_cents
        ),
        ("KA101", 2, 26800)
    );
    assert_eq!(fx.agent_of("m1").await, "hub");
}

#[tokio::test]
async fn model_fixture_train_invoice_with_relative_dates() {
    // "next Saturday", asked on Thursday 20 February, is the 22nd.
    let saturday = day(2, 22);
    let probe_dir = tempfile::tempdir().unwrap();
    let probe = TravelStore::open(probe_dir.path().join("probe.db")).at(now());
    let fixture_on_saturday = probe
        .fixtures(Some("Mersey Rovers"), None, saturday, saturday)
        .unwrap()
        .remove(0);
    let city = fixture_on_saturday.city.clone();
    let train = probe.services(Mode::Train, "London", &city).unwrap().remove(0);
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call(
            "search_fixtures",
            r#"{"team": "Rovers", "month": "next Saturday"}"#,
        ))
        .reply(ModelReply::text("Mersey Rovers play on Saturday."))
        .reply(ModelReply::tool_call(
            "search_trains",
            json!({"origin": "London", "destination": city, "date": "next Saturday"}).to_string(),
        ))
        .reply(ModelReply::text("The 06:30 is the cheapest."))
        .reply(ModelReply::tool_call(
            "create_invoice",
            json!({"service": train.number, "date": "next Saturday"}).to_string(),
        ))
        .reply(ModelReply::text("Booked."));
    let fx = fixture(Some(model.clone())).await;
    let out = fx
        .say("m2", "which football matches do Mersey Rovers have next Saturday?")
        .await;
    assert_eq!(out.agent.as_str(), "travel_fixtures");
    let found = format!("{:?}", out.tool_executions[0].outcome);
    assert!(found.contains(&fixture_on_saturday.line()), "{found}");
    let out = fx.say("m2", "a train from London please").await;
    assert!(
        format!("{:?}", out.tool_executions[0].outcome).contains("\"date\": String(\"2025-02-22\")"),
        "{out:?}"
    );
    let out = fx.say("m2", "book the 06:30").await;
    let pending = out.pending_confirmation.as_ref().unwrap();
    assert_eq!(
        pending.message,
        format!("I'll create an invoice for {} on next Saturday. Proceed?", train.number)
    );
    fx.say("m2", "yes").await;
    let invoices = fx.invoices();
    assert_eq!(invoices.len(), 1);
    assert_eq!(
        invoices[0].travel_date, saturday,
        "next Saturday resolved against the time asked"
    );
    assert_eq!(invoices[0].amount_cents, train.fare_on(saturday));
}

// ------------------------------------------------------------------ tools called directly

/// Without a fixed clock, relative dates count from `asked_at`, the time the
/// person's message was accepted (not when the tool runs).
#[tokio::test]
async fn dates_resolve_against_the_time_asked() {
    use chrono::TimeZone;
    use concierge::{Tool, ToolContext};
    use concierge_demo::travel::tools::{CreateInvoice, CreateInvoiceArgs, FindEvents, FindEventsArgs};
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(TravelStore::open(dir.path().join("travel.db")));
    let asked = chrono::Local
        .from_local_datetime(&now())
        .single()
        .unwrap()
        .timestamp_millis();
    let cx = |call: &str| ToolContext {
        session_id: "s1".into(),
        run_id: "r1".into(),
        call_id: call.into(),
        agent: "travel_events".into(),
        idempotency_key: concierge::core::IdempotencyKey::derive(&"s1".into(), &"r1".into(), &call.into()),
        user: None,
        tenant: None,
        blackboard: Default::default(),
        asked_at: concierge::core::Timestamp(asked as u64),
        channel: None,
        checkpoint: None,
    };
    let events = FindEvents::new(Arc::clone(&store))
        .call(
            FindEventsArgs {
                city: "melbourne".into(),
                month: Some("next month".into()),
            },
            cx("c1"),
        )
        .await
        .unwrap();
    assert_eq!(events["period"], "March 2025");
    let invoice = |call: &'static str| {
        let store = Arc::clone(&store);
        async move {
            CreateInvoice::new(store)
                .call(
                    CreateInvoiceArgs {
                        service: "sx 100".into(),
                        date: "next Friday".into(),
                        passengers: None,
                        customer: Some("Alex Doe".into()),
                        summary: None,
                    },
                    cx(call),
                )
                .await
                .unwrap()
        }
    };
    let first = invoice("c2").await;
    assert_eq!(
        first["travel_date"], "2025-02-21",
        "next Friday after Thursday 20 February"
    );
    // The same call again (a retry after a crash) changes nothing twice.
    let again = invoice("c2").await;
    assert_eq!(first, again);
    let rows = store.invoices().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].customer.as_deref(), Some("Alex Doe"));
    assert_eq!(rows[0].amount_cents, 19700, "a Friday fare");
    invoice("c3").await;
    assert_eq!(store.invoices().unwrap().len(), 2, "another call is another invoice");
}
