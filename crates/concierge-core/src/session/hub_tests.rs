//! The hub over `step`: routing by rules, history and margin, return to the
//! hub, restore on return, finished goals, handoff context and loops.

use serde_json::{Value, json};

use crate::{
    AgentId, AgentSpec, Cap, Catalog, Effect, EventKind, Input, Intents, Message, ModelReply, ModelToolCall,
    PlannerMode, Route, RouteSource, Rules, RunOutput, RunStatus, Session, StartRun, Step, Timestamp, ToolOutcome,
    ToolSpec,
};

fn tool(name: &str) -> ToolSpec {
    ToolSpec::new(name, "a tool", json!({"type": "object"}))
}

/// Three agents for the hub to route between: travel, finance and HR, with
/// rules and intents.
fn catalog() -> Catalog {
    let travel = AgentSpec::new("travel")
        .name("Travel")
        .description("Books flights and trips.")
        .starter_prompt("Where would you like to go?")
        .tool("search_flights")
        .intents(Intents::new().keywords(["flight", "trip", "vacation", "travel"]))
        .rules(
            Rules::new()
                .route(Route::tool("search_flights", json!({"to": "{to}"})).pattern(r"(?i)flights? to (?P<to>\w+)"))
                .answer("Flights to {result.to}: {result.count}")
                .fallback("I did not understand that. Where would you like to fly?"),
        );
    let finance = AgentSpec::new("finance")
        .name("Finance")
        .description("Balances and accounts.")
        .tool("balance")
        .intents(Intents::new().keywords(["balance", "money", "account"]))
        .rules(
            Rules::new()
                .route(Route::tool("balance", json!({})).keywords(["balance"]))
                .answer("Your balance is {result.amount}."),
        );
    let hr = AgentSpec::new("hr")
        .name("HR")
        .description("Time off and PTO.")
        .tool("pto_days")
        .tool("book_pto")
        .finish_on("book_pto")
        .handoff("travel")
        .intents(Intents::new().keywords(["pto", "time off", "vacation"]))
        .rules(
            Rules::new()
                .route(Route::tool("book_pto", json!({})).keywords(["book"]))
                .route(Route::tool("pto_days", json!({})).keywords(["pto", "vacation", "days"]))
                .route(
                    Route::handoff("travel")
                        .keywords(["trip"])
                        .context("days_off", "{message}"),
                )
                .answer("You have {result.days} days."),
        );
    Catalog::builder()
        .tool(tool("search_flights"))
        .tool(tool("balance"))
        .tool(tool("pto_days"))
        .tool(tool("book_pto"))
        .agent(travel)
        .agent(finance)
        .agent(hr)
        .build()
        .unwrap()
}

struct Hub {
    session: Session,
    catalog: Catalog,
    now: u64,
}

impl Hub {
    fn new(catalog: Catalog) -> Self {
        let hub = catalog.default_agent().unwrap();
        Self {
            session: Session::new("s", hub),
            catalog,
            now: 0,
        }
    }

    fn send(&mut self, input: Input) -> Step {
        self.session.step(input, &self.catalog).unwrap()
    }

    fn say(&mut self, text: &str, mode: PlannerMode) -> Step {
        self.now += 1;
        self.send(Input::StartRun(StartRun::new(text, mode, Timestamp(self.now))))
    }

    fn tool_done(&mut self, step: &Step, value: Value) -> Step {
        let call = step
            .effects
            .iter()
            .find_map(|e| match e {
                Effect::CallTool { call, .. } => Some(call.clone()),
                _ => None,
            })
            .expect("a tool call");
        self.now += 1;
        let run_id = self.session.active_run().cloned().unwrap();
        self.send(Input::ToolFinished {
            run_id,
            call_id: call.id,
            outcome: ToolOutcome::Ok(value),
            duration_ms: 1,
            usage: None,
            at: Timestamp(self.now),
        })
    }

    fn model(&mut self, step: &Step, reply: ModelReply) -> Step {
        let (run_id, call) = step
            .effects
            .iter()
            .find_map(|e| match e {
                Effect::CallModel { run_id, call, .. } => Some((run_id.clone(), *call)),
                _ => None,
            })
            .expect("a model call");
        self.now += 1;
        self.send(Input::ModelReplied {
            run_id,
            call,
            reply,
            at: Timestamp(self.now),
        })
    }
}

fn called(step: &Step) -> Vec<String> {
    step.effects
        .iter()
        .filter_map(|e| match e {
            Effect::CallTool { call, .. } => Some(call.name.to_string()),
            _ => None,
        })
        .collect()
}

fn finished(step: &Step) -> RunOutput {
    step.effects
        .iter()
        .find_map(|e| match e {
            Effect::Finish(out) => Some(out.clone()),
            _ => None,
        })
        .expect("the run finished")
}

fn routed(step: &Step) -> Vec<(Option<AgentId>, Vec<AgentId>, RouteSource)> {
    step.events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::AgentRouted {
                to, candidates, source, ..
            } => Some((to.clone(), candidates.clone(), *source)),
            _ => None,
        })
        .collect()
}

fn call(name: &str, arguments: Value) -> ModelReply {
    ModelReply {
        tool_calls: vec![ModelToolCall {
            name: name.into(),
            arguments: arguments.to_string(),
        }],
        ..ModelReply::text("")
    }
}

#[test]
fn seed_000s_intent_table_routes_by_rules_in_the_same_run() {
    for (text, agent, tool) in [
        ("book a flight to London", "travel", "search_flights"),
        ("check my balance", "finance", "balance"),
        ("how many PTO days do I have", "hr", "pto_days"),
    ] {
        let mut h = Hub::new(catalog());
        let step = h.say(text, PlannerMode::Rules);
        assert_eq!(
            routed(&step),
            [(Some(agent.into()), vec![], RouteSource::Rules)],
            "{text}"
        );
        assert_eq!(called(&step), [tool], "{text}: the same message runs there");
        assert_eq!(h.session.agent(), agent);
    }
}

#[test]
fn close_scores_ask_the_person_and_the_answer_reruns_the_original_message() {
    let mut h = Hub::new(catalog());
    let step = h.say("vacation", PlannerMode::Rules);
    let out = finished(&step);
    assert_eq!(out.status, RunStatus::NeedsInput);
    let question = out.reply.unwrap();
    assert!(question.starts_with("Travel or HR?"), "{question}");
    assert!(!question.contains("Finance"), "only the close candidates: {question}");
    assert_eq!(
        routed(&step),
        [(None, vec!["travel".into(), "hr".into()], RouteSource::Catalogue)]
    );
    let step = h.say("HR", PlannerMode::Rules);
    assert_eq!(routed(&step)[0], (Some("hr".into()), vec![], RouteSource::Person));
    assert_eq!(called(&step), ["pto_days"], "\"vacation\" runs in HR");
    let step = h.tool_done(&step, json!({"days": 12}));
    assert_eq!(finished(&step).reply.as_deref(), Some("You have 12 days."));
    let last_user = h.session.history().iter().rev().find_map(|m| match m {
        Message::User { content } => Some(content.clone()),
        _ => None,
    });
    assert_eq!(last_user.as_deref(), Some("vacation"));
}

#[test]
fn an_ordinal_answers_the_catalogue_and_what_can_you_do_shows_it() {
    let mut h = Hub::new(catalog());
    let out = finished(&h.say("What can you do?", PlannerMode::Rules));
    let text = out.reply.unwrap();
    assert!(
        text.contains("1. Travel — Books flights and trips. (\"Where would you like to go?\")"),
        "{text}"
    );
    assert!(text.contains("3. HR — Time off and PTO."), "{text}");
    assert!(!text.contains('{'), "readable text, not JSON: {text}");
    let step = h.say("the second", PlannerMode::Rules);
    assert_eq!(routed(&step)[0].0, Some("finance".into()));
    assert_eq!(h.session.agent(), "finance");
}

#[test]
fn with_intent_detection_off_the_hub_always_shows_the_catalogue() {
    let catalog = catalog().to_builder().intent_detection(false).build().unwrap();
    let mut h = Hub::new(catalog);
    let out = finished(&h.say("book a flight to London", PlannerMode::Rules));
    assert!(out.reply.unwrap().starts_with("Here is what I can help with"));
    assert_eq!(h.session.agent(), "hub");
}

#[test]
fn with_no_confident_rule_the_model_is_asked_with_change_goal() {
    let mut h = Hub::new(catalog());
    let step = h.say("I am off to see my aunt in Rome", PlannerMode::Model);
    let request = step
        .effects
        .iter()
        .find_map(|e| match e {
            Effect::CallModel { request, .. } => Some(request.clone()),
            _ => None,
        })
        .unwrap();
    let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["change_goal"]);
    // An unknown agent is an error listing what exists.
    let step = h.model(&step, call("change_goal", json!({"agent": "weather"})));
    let error = h.session.history().iter().find_map(|m| match m {
        Message::Tool {
            outcome: ToolOutcome::Error(e),
            ..
        } => Some(e.message.clone()),
        _ => None,
    });
    assert!(error.unwrap().contains("travel (Travel), finance (Finance), hr (HR)"));
    // A fuzzy name works; the same message then runs in travel (with the model).
    let step = h.model(&step, call("change_goal", json!({"agent": "the Travel one"})));
    assert_eq!(routed(&step)[0], (Some("travel".into()), vec![], RouteSource::Model));
    assert_eq!(h.session.agent(), "travel");
    assert!(
        step.effects
            .iter()
            .any(|e| matches!(e, Effect::CallModel { request, .. } if request.agent == "travel"))
    );
}

#[test]
fn list_agents_from_a_specialist_routes_the_message_without_asking() {
    let mut h = Hub::new(catalog());
    let step = h.say("book a flight to London", PlannerMode::Rules);
    let step = h.tool_done(&step, json!({"to": "London", "count": 3}));
    assert_eq!(finished(&step).reply.as_deref(), Some("Flights to London: 3"));
    let step = h.say("actually, how many PTO days do I have", PlannerMode::Model);
    assert_eq!(h.session.agent(), "travel");
    let step = h.model(&step, call("list_agents", json!({})));
    assert_eq!(routed(&step)[0], (Some("hr".into()), vec![], RouteSource::Rules));
    assert_eq!(h.session.agent(), "hr");
    assert_eq!(
        h.session.saved_information(&"travel".into()).map(|_| ()),
        Some(()),
        "travel's unfinished goal is saved"
    );
}

#[test]
fn an_unplaceable_message_is_offered_to_the_hub_before_i_did_not_understand() {
    let mut h = Hub::new(catalog());
    let step = h.say("book a flight to Paris", PlannerMode::Rules);
    h.tool_done(&step, json!({"to": "Paris", "count": 1}));
    let step = h.say("check my balance", PlannerMode::Rules);
    assert_eq!(h.session.agent(), "finance", "travel's rules could not place it");
    assert_eq!(called(&step), ["balance"]);
    // Nothing anyone can place: the agent's own fallback.
    let out = finished(&h.tool_done(&step, json!({"amount": 5})));
    assert_eq!(out.reply.as_deref(), Some("Your balance is 5."));
}

#[test]
fn back_to_the_menu_returns_to_the_hub() {
    let mut h = Hub::new(catalog());
    let step = h.say("check my balance", PlannerMode::Rules);
    h.tool_done(&step, json!({"amount": 5}));
    let out = finished(&h.say("take me back to the menu", PlannerMode::Rules));
    assert_eq!(h.session.agent(), "hub");
    assert!(out.reply.unwrap().starts_with("Here is what I can help with"));
}

#[test]
fn a_finished_goal_returns_to_the_hub_and_an_unfinished_one_is_restored() {
    let mut h = Hub::new(catalog());
    // Travel learns something, then the person goes to HR.
    let mut start = StartRun::new("book a flight to Oslo", PlannerMode::Rules, Timestamp(1));
    start.context.insert("seat".into(), json!("window"));
    let step = h.send(Input::StartRun(start));
    h.tool_done(&step, json!({"to": "Oslo", "count": 2}));
    let step = h.say("how many PTO days do I have", PlannerMode::Rules);
    assert_eq!(h.session.agent(), "hr");
    h.session
        .conversation
        .blackboard
        .available
        .insert("seat".into(), json!("aisle"));
    h.tool_done(&step, json!({"days": 3}));
    // Booking PTO finishes HR's goal: back to the hub.
    let step = h.say("book it", PlannerMode::Rules);
    let step = h.tool_done(&step, json!({"days": 3}));
    let out = finished(&step);
    assert_eq!(out.agent, "hr", "HR answered");
    assert_eq!(h.session.agent(), "hub", "then the conversation went back to the hub");
    assert!(h.session.saved_information(&"hr".into()).is_none());
    // Back to the flights: travel's information comes back.
    let step = h.say("now back to the flights", PlannerMode::Rules);
    assert_eq!(h.session.agent(), "travel", "{:#?}", step.events);
    assert_eq!(h.session.blackboard().available["seat"], json!("window"));
}

#[test]
fn a_handoff_carries_its_context_to_the_next_agents_blackboard() {
    let mut h = Hub::new(catalog());
    h.session = Session::new("s", "hr");
    let step = h.say("plan a trip", PlannerMode::Rules);
    assert_eq!(h.session.agent(), "travel");
    assert_eq!(h.session.blackboard().available["days_off"], json!("plan a trip"));
    assert!(
        step.events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::AgentChanged { to, .. } if to == "travel"))
    );
}

#[test]
fn a_handoff_loop_stops_and_needs_the_person() {
    let catalog = Catalog::builder()
        .agent(AgentSpec::new("a").name("Alpha").handoff("b"))
        .agent(AgentSpec::new("b").name("Beta").handoff("a"))
        .mode(crate::Mode::Single)
        .single_agent("a")
        .build()
        .unwrap();
    let mut h = Hub::new(catalog);
    h.session = Session::new("s", "a");
    let step = h.say("go", PlannerMode::Model);
    let step = h.model(&step, call("transfer_to_b", json!({"reason": "b knows"})));
    assert_eq!(h.session.agent(), "b");
    let step = h.model(&step, call("transfer_to_a", json!({"reason": "a knows"})));
    let out = finished(&step);
    assert_eq!(out.status, RunStatus::NeedsInput);
    assert_eq!(out.cap, Some(Cap::HandoffLoop));
    assert!(out.reply.unwrap().contains("between Alpha and Beta"));
    assert_eq!(h.session.agent(), "b", "the loop was not followed");
}

#[test]
fn a_pinned_session_is_never_routed() {
    let mut h = Hub::new(catalog());
    h.now += 1;
    let step = h.send(Input::StartRun(
        StartRun::new("check my balance", PlannerMode::Rules, Timestamp(h.now)).agent("travel"),
    ));
    assert!(h.session.is_pinned());
    assert!(routed(&step).is_empty());
    assert_eq!(finished(&step).status, RunStatus::NeedsInput);
    assert_eq!(h.session.agent(), "travel");
}

#[test]
fn greetings_go_to_the_fallback_agent() {
    let general = AgentSpec::new("general")
        .name("General")
        .rules(Rules::new().route(Route::reply("Hello to you too!").keywords(["hello", "hi"])));
    let catalog = catalog()
        .to_builder()
        .agent(general)
        .fallback("general")
        .build()
        .unwrap();
    let mut h = Hub::new(catalog);
    let step = h.say("hello there", PlannerMode::Rules);
    assert_eq!(
        routed(&step)[0],
        (Some("general".into()), vec![], RouteSource::Fallback)
    );
    assert_eq!(finished(&step).reply.as_deref(), Some("Hello to you too!"));
}

#[test]
fn a_pending_confirmation_survives_a_handoff() {
    let pay = ToolSpec::new("pay", "Pays.", json!({"type": "object"})).annotations(crate::ToolAnnotations {
        requires_confirmation: true,
        ..crate::ToolAnnotations::default()
    });
    let catalog = Catalog::builder()
        .tool(pay)
        .agent(AgentSpec::new("a").tool("pay").handoff("b"))
        .agent(AgentSpec::new("b"))
        .mode(crate::Mode::Single)
        .single_agent("a")
        .build()
        .unwrap();
    let mut h = Hub::new(catalog);
    let step = h.say("pay and pass me on", PlannerMode::Model);
    let reply = ModelReply {
        tool_calls: vec![
            ModelToolCall {
                name: "pay".into(),
                arguments: "{}".into(),
            },
            ModelToolCall {
                name: "transfer_to_b".into(),
                arguments: json!({"reason": "b follows up", "context": {"paid": true}}).to_string(),
            },
        ],
        ..ModelReply::text("")
    };
    h.model(&step, reply);
    let pending = h
        .session
        .pending_confirmation()
        .expect("the payment waits for the person");
    assert_eq!(h.session.agent(), "a", "the handoff waits for the confirmation");
    h.now += 1;
    let step = h.send(Input::Confirm(crate::Confirmation {
        run_id: pending.run_id,
        call_id: pending.call_id,
        fingerprint: pending.fingerprint,
        decision: crate::Decision::Approve,
        at: Timestamp(h.now),
    }));
    h.tool_done(&step, json!("paid"));
    assert_eq!(h.session.agent(), "b");
    assert_eq!(h.session.blackboard().available["paid"], json!(true));
}

/// The catalog with a food goal whose rules would read "order some food"
/// as an order of a dish called "food".
fn with_food() -> Catalog {
    let food = AgentSpec::new("food")
        .name("Food ordering")
        .category("food")
        .description("Takes food orders.")
        .starter_prompt("Hungry? Try: add 2 pizzas to my cart.")
        .tool("add_to_cart")
        .intents(Intents::new().keywords(["food", "pizza"]))
        .rules(
            Rules::new()
                .route(
                    Route::tool("add_to_cart", json!({"item": "{item}"}))
                        .pattern(r"(?i)^\s*(?:add|order)\s+(?:some\s+)?(?P<item>.+?)\s*$"),
                )
                .answer("Added {result.item}.")
                .fallback("Say what to add to your cart."),
        );
    catalog()
        .to_builder()
        .tool(tool("add_to_cart"))
        .agent(food)
        .build()
        .unwrap()
}

#[test]
fn a_message_that_only_asks_for_a_goal_opens_it_with_its_starter_prompt() {
    let mut h = Hub::new(with_food());
    let step = h.say("Order some food", PlannerMode::Rules);
    assert_eq!(routed(&step)[0], (Some("food".into()), vec![], RouteSource::Rules));
    assert!(
        called(&step).is_empty(),
        "'food' is the goal, not a dish: {:?}",
        called(&step)
    );
    let out = finished(&step);
    assert_eq!(out.agent, "food");
    assert_eq!(out.reply.as_deref(), Some("Hungry? Try: add 2 pizzas to my cart."));
    // The goal is open: a real order runs there.
    let step = h.say("order 2 pizzas", PlannerMode::Rules);
    assert_eq!(called(&step), ["add_to_cart"]);
    let step = h.tool_done(&step, json!({"item": "2 pizzas"}));
    assert_eq!(finished(&step).reply.as_deref(), Some("Added 2 pizzas."));
    // Once the goal has spoken, what it cannot place gets its own fallback.
    let mut h = Hub::new(with_food());
    h.say("book a flight", PlannerMode::Rules);
    assert_eq!(h.session.agent(), "travel");
    let out = finished(&h.say("book a flight", PlannerMode::Rules));
    assert_eq!(
        out.reply.as_deref(),
        Some("I did not understand that. Where would you like to fly?")
    );
}

#[test]
fn an_opened_goal_answers_with_its_starter_prompt_when_its_rules_cannot_place_the_message() {
    let mut h = Hub::new(catalog());
    let out = finished(&h.say("I want to book a flight", PlannerMode::Rules));
    assert_eq!(out.agent, "travel");
    assert_eq!(out.reply.as_deref(), Some("Where would you like to go?"));
}

#[test]
fn the_agent_a_person_chose_keeps_the_message() {
    let mut h = Hub::new(catalog());
    let out = finished(&h.say("vacation", PlannerMode::Rules));
    assert!(out.reply.unwrap().starts_with("Travel or HR?"));
    // Travel's rules cannot place "vacation", and HR's intents could: the
    // person chose Travel, so it is not offered to HR again.
    let step = h.say("Travel", PlannerMode::Rules);
    assert_eq!(routed(&step), [(Some("travel".into()), vec![], RouteSource::Person)]);
    let out = finished(&step);
    assert_eq!(out.agent, "travel");
    assert_eq!(out.reply.as_deref(), Some("Where would you like to go?"));
}

#[test]
fn without_a_fallback_agent_a_greeting_gets_the_goals_from_the_hub() {
    let mut h = Hub::new(catalog());
    let step = h.say("hello there!", PlannerMode::Rules);
    let out = finished(&step);
    assert_eq!(out.agent, "hub");
    assert_eq!(
        out.reply.as_deref(),
        Some("Hi! I can help with Travel, Finance and HR. What do you need?")
    );
    assert_eq!(
        routed(&step),
        [(
            None,
            vec!["travel".into(), "finance".into(), "hr".into()],
            RouteSource::Catalogue
        )]
    );
    // Anything else nothing places still gets the catalogue.
    let out = finished(&h.say("the weather in Oslo", PlannerMode::Rules));
    assert!(out.reply.unwrap().starts_with("Here is what I can help with"));
    let step = h.say("Finance", PlannerMode::Rules);
    assert_eq!(routed(&step)[0], (Some("finance".into()), vec![], RouteSource::Person));
}
