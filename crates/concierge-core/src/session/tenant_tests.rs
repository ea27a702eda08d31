//! Opening a session before its first message, tenants, and what a
//! writing tool changed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;

use crate::{
    AgentSpec, Catalog, Effect, EventKind, Input, Mode, OpenSession, PlannerMode, Route, Rules, Session, StartRun,
    StepError, Timestamp, ToolAnnotations, ToolOutcome, ToolSpec,
};

fn catalog() -> Catalog {
    let save = ToolSpec::new("save_note", "Saves a note.", json!({"type": "object"})).writes("notes");
    let stamp = ToolSpec::new("stamp", "Stamps.", json!({"type": "object"})).category("office");
    let look = ToolSpec::new("look", "Looks.", json!({"type": "object"})).annotations(ToolAnnotations {
        read_only: true,
        ..ToolAnnotations::default()
    });
    let rules = Rules::new()
        .route(Route::tool("save_note", json!({})).keywords(["save"]))
        .route(Route::tool("stamp", json!({})).keywords(["stamp"]))
        .route(Route::tool("look", json!({})).keywords(["look"]))
        .answer("done");
    Catalog::builder()
        .tool(save)
        .tool(stamp)
        .tool(look)
        .agent(
            AgentSpec::new("main")
                .tool("save_note")
                .tool("stamp")
                .tool("look")
                .rules(rules),
        )
        .agent(AgentSpec::new("other").rules(Rules::new().fallback("other here")))
        .mode(Mode::Single)
        .build()
        .unwrap()
}

fn start(text: &str, tenant: Option<&str>) -> Input {
    let mut start = StartRun::new(text, PlannerMode::Rules, Timestamp(10));
    start.tenant = tenant.map(str::to_string);
    Input::StartRun(start)
}

fn open(agent: &str, named: bool, tenant: Option<&str>) -> Input {
    Input::Open(OpenSession {
        agent: agent.into(),
        named,
        tenant: tenant.map(str::to_string),
        fork: None,
        at: Timestamp(5),
    })
}

#[test]
fn an_opened_session_has_its_agent_and_tenant_and_an_event() {
    let catalog = catalog();
    let mut session = Session::new("s1", "main");
    let step = session.step(open("other", true, Some("acme")), &catalog).unwrap();
    assert_eq!(session.agent().as_str(), "other");
    assert_eq!(session.tenant(), Some("acme"));
    assert!(session.is_pinned());
    assert_eq!(session.runs_started(), 0);
    assert!(step.effects.is_empty());
    assert!(matches!(
        &step.events[..],
        [e] if e.seq == 1 && matches!(&e.kind, EventKind::SessionOpened { agent, tenant, .. } if agent.as_str() == "other" && tenant.as_deref() == Some("acme"))
    ));
    // Its first message goes to the opened agent.
    let step = session.step(start("hello", Some("acme")), &catalog).unwrap();
    assert!(
        step.events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::RunStarted { agent, .. } if agent.as_str() == "other"))
    );
}

#[test]
fn a_session_cannot_be_opened_twice_or_after_a_run() {
    let catalog = catalog();
    let mut session = Session::new("s1", "main");
    session.step(open("main", false, None), &catalog).unwrap();
    let before = session.clone();
    assert_eq!(
        session.step(open("main", false, None), &catalog).unwrap_err(),
        StepError::AlreadyOpen
    );
    assert_eq!(session, before);

    let mut ran = Session::new("s2", "main");
    ran.step(start("look", None), &catalog).unwrap();
    assert_eq!(
        ran.step(open("main", false, None), &catalog).unwrap_err(),
        StepError::AlreadyOpen
    );
}

#[test]
fn opening_with_an_unknown_agent_is_refused() {
    let mut session = Session::new("s1", "main");
    let error = session.step(open("nobody", true, None), &catalog()).unwrap_err();
    assert!(matches!(error, StepError::UnknownAgent { .. }));
}

#[test]
fn the_first_run_decides_the_tenant_and_another_tenant_is_refused() {
    let catalog = catalog();
    let mut session = Session::new("s1", "main");
    session.step(start("look", Some("acme")), &catalog).unwrap();
    assert_eq!(session.tenant(), Some("acme"));
    let before = session.clone();
    assert_eq!(
        session.step(start("look", Some("globex")), &catalog).unwrap_err(),
        StepError::OtherTenant
    );
    assert_eq!(
        session.step(start("look", None), &catalog).unwrap_err(),
        StepError::OtherTenant
    );
    assert_eq!(session, before, "a refused input changes nothing");
    // The same tenant gets the session's own answer (a run is in progress).
    assert!(matches!(
        session.step(start("look", Some("acme")), &catalog).unwrap_err(),
        StepError::RunInProgress { .. }
    ));
}

#[test]
fn an_opened_sessions_tenant_holds_for_its_first_run() {
    let catalog = catalog();
    let mut session = Session::new("s1", "main");
    session.step(open("main", false, Some("acme")), &catalog).unwrap();
    assert_eq!(
        session.step(start("look", Some("globex")), &catalog).unwrap_err(),
        StepError::OtherTenant
    );
    session.step(start("look", Some("acme")), &catalog).unwrap();
}

/// Runs `text` to its tool call, finishes it with `outcome`, and returns the
/// events of the tool's result.
fn events_after_tool(text: &str, outcome: ToolOutcome) -> Vec<EventKind> {
    let catalog = catalog();
    let mut session = Session::new("s1", "main");
    let step = session.step(start(text, None), &catalog).unwrap();
    let call = step
        .effects
        .iter()
        .find_map(|e| match e {
            Effect::CallTool { call, run_id, .. } => Some((call.id.clone(), run_id.clone())),
            _ => None,
        })
        .expect("a tool call");
    let step = session
        .step(
            Input::ToolFinished {
                run_id: call.1,
                call_id: call.0,
                outcome,
                duration_ms: 1,
                usage: None,
                at: Timestamp(20),
            },
            &catalog,
        )
        .unwrap();
    step.events.into_iter().map(|e| e.kind).collect()
}

fn changed(events: &[EventKind]) -> Option<Vec<String>> {
    events.iter().find_map(|k| match k {
        EventKind::DataChanged { changed, .. } => Some(changed.clone()),
        _ => None,
    })
}

#[test]
fn a_writing_tool_that_succeeds_says_what_changed() {
    let events = events_after_tool("save it", ToolOutcome::Ok(json!({"id": 1})));
    assert_eq!(changed(&events), Some(vec!["notes".to_string()]), "its declared writes");
    let finished = events
        .iter()
        .position(|k| matches!(k, EventKind::ToolFinished { .. }))
        .unwrap();
    let data = events
        .iter()
        .position(|k| matches!(k, EventKind::DataChanged { .. }))
        .unwrap();
    assert!(data > finished, "after the result");

    let events = events_after_tool("stamp it", ToolOutcome::Ok(json!("ok")));
    assert_eq!(changed(&events), Some(vec!["office".to_string()]), "else its category");
}

#[test]
fn a_failed_or_read_only_call_changes_nothing() {
    let failed = events_after_tool("save it", ToolOutcome::Error(crate::ToolError::failed("disk full")));
    assert_eq!(changed(&failed), None);
    let read = events_after_tool("look around", ToolOutcome::Ok(json!([])));
    assert_eq!(changed(&read), None);
}

#[test]
fn a_run_id_names_one_run_of_its_session() {
    let catalog = catalog();
    let mut session = Session::new("s1", "main");
    let given = |text: &str, id: &str| {
        let mut start = StartRun::new(text, PlannerMode::Rules, Timestamp(10));
        start.run_id = Some(id.into());
        Input::StartRun(start)
    };
    session.step(given("hello", "mine"), &catalog).unwrap();
    assert_eq!(
        session.step(given("hello", "mine"), &catalog).unwrap_err(),
        StepError::RunIdTaken { run_id: "mine".into() }
    );
    // The session's own numbering counts too, and skips ids callers took.
    session.step(start("hello", None), &catalog).unwrap();
    assert_eq!(session.last_output().unwrap().run_id.as_str(), "r2");
    assert!(matches!(
        session.step(given("hello", "r2"), &catalog),
        Err(StepError::RunIdTaken { .. })
    ));
    session.step(given("hello", "r4"), &catalog).unwrap();
    session.step(start("hello", None), &catalog).unwrap();
    assert_eq!(session.last_output().unwrap().run_id.as_str(), "r4.2");
    assert_eq!(session.runs_started(), 4);
}
