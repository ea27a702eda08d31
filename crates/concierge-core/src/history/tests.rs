//! The history policy, over `step`: what the model is sent as a session grows.

use serde_json::{Value, json};

use super::*;
use crate::{
    AgentSpec, Catalog, Effect, Input, Mode, ModelReply, PlannerMode, Route, Rules, RunId, Session, StartRun, Step,
    Timestamp, ToolSpec,
};

fn catalog(policy: HistoryPolicy) -> Catalog {
    let add = ToolSpec::new("add", "Adds a and b.", json!({"type": "object"}));
    Catalog::builder()
        .tool(add)
        .agent(
            AgentSpec::new("main")
                .instructions("You add numbers.")
                .tool("add")
                .rules(Rules::new().route(Route::reply("noted: {message}").keywords(["note"])))
                .history(policy),
        )
        .mode(Mode::Single)
        .build()
        .unwrap()
}

/// Drives one session turn by turn with a scripted model.
struct Driver {
    session: Session,
    catalog: Catalog,
    now: u64,
    journal: Vec<Input>,
    /// Every model request the session asked for, in order.
    requests: Vec<(RunId, u32, ModelRequest)>,
}

impl Driver {
    fn new(policy: HistoryPolicy) -> Self {
        Self {
            session: Session::new("s1", "main"),
            catalog: catalog(policy),
            now: 1_000,
            journal: Vec::new(),
            requests: Vec::new(),
        }
    }

    fn send(&mut self, input: Input) -> Step {
        self.now += 1;
        let step = self.session.step(input.clone(), &self.catalog).unwrap();
        self.journal.push(input);
        for effect in &step.effects {
            if let Effect::CallModel {
                run_id, call, request, ..
            } = effect
            {
                self.requests.push((run_id.clone(), *call, request.clone()));
            }
        }
        step
    }

    fn model_call(step: &Step) -> Option<(RunId, u32, &ModelRequest)> {
        step.effects.iter().find_map(|e| match e {
            Effect::CallModel {
                run_id, call, request, ..
            } => Some((run_id.clone(), *call, request)),
            _ => None,
        })
    }

    fn reply(&mut self, run_id: RunId, call: u32, reply: ModelReply) -> Step {
        let at = Timestamp(self.now);
        self.send(Input::ModelReplied {
            run_id,
            call,
            reply,
            at,
        })
    }

    /// One turn: the person asks, the model calls `add` once, then answers.
    /// Summary requests are answered with `summary: <n>`.
    fn turn(&mut self, n: usize) {
        let at = Timestamp(self.now);
        let mut step = self.send(Input::StartRun(StartRun::new(
            format!("question {n}: what is {n} plus 1?"),
            PlannerMode::Model,
            at,
        )));
        let mut called = false;
        loop {
            if let Some(Effect::CallTool { run_id, call, .. }) =
                step.effects.iter().find(|e| matches!(e, Effect::CallTool { .. }))
            {
                let (run_id, call_id) = (run_id.clone(), call.id.clone());
                let at = Timestamp(self.now);
                step = self.send(Input::ToolFinished {
                    run_id,
                    call_id,
                    outcome: ToolOutcome::Ok(json!({"sum": n + 1})),
                    duration_ms: 1,
                    usage: None,
                    at,
                });
                continue;
            }
            let Some((run_id, call, request)) = Self::model_call(&step) else {
                break;
            };
            let reply = if request.tools.is_empty() && request.system.contains("running summary") {
                ModelReply::text(format!("summary: {n}"))
            } else if !called {
                called = true;
                ModelReply::tool_call("add", format!("{{\"a\": {n}, \"b\": 1}}"))
            } else {
                ModelReply::text(format!("answer {n}: {}", n + 1))
            };
            step = self.reply(run_id, call, reply);
        }
        assert!(self.session.active_run().is_none(), "turn {n} finished");
    }

    /// The last request that plans (not a summary request).
    fn last_plan_request(&self) -> &ModelRequest {
        self.requests
            .iter()
            .rev()
            .map(|(_, _, r)| r)
            .find(|r| !r.system.contains("running summary"))
            .unwrap()
    }

    fn summary_requests(&self) -> usize {
        self.requests
            .iter()
            .filter(|(_, _, r)| r.system.contains("running summary"))
            .count()
    }
}

fn size(request: &ModelRequest) -> usize {
    serde_json::to_vec(request).unwrap().len()
}

fn users(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::User { content } => Some(content.clone()),
            _ => None,
        })
        .collect()
}

/// Every tool call in `messages` has its result right after it, and every
/// result follows its call.
fn assert_pairs_intact(messages: &[Message]) {
    let mut open: Vec<String> = Vec::new();
    for m in messages {
        match m {
            Message::Assistant { tool_calls, .. } => {
                assert!(open.is_empty(), "a call was left without its result: {open:?}");
                open = tool_calls.iter().map(|c| c.id.to_string()).collect();
            }
            Message::Tool { call_id, .. } => {
                let at = open.iter().position(|c| c == call_id.as_str());
                assert!(at.is_some(), "a result without its call: {call_id}");
                open.retain(|c| c != call_id.as_str());
            }
            _ => assert!(open.is_empty(), "a call was left without its result: {open:?}"),
        }
    }
}

#[test]
fn with_the_policy_off_every_message_is_sent() {
    let mut d = Driver::new(HistoryPolicy::everything());
    for n in 1..=12 {
        d.turn(n);
    }
    let request = d.last_plan_request();
    assert_eq!(users(&request.messages).len(), 12);
    assert!(!matches!(request.messages[0], Message::System { .. }));
}

#[test]
fn by_default_a_long_conversation_sends_its_last_ten_turns_and_a_summary() {
    let mut d = Driver::new(HistoryPolicy::default());
    for n in 1..=DEFAULT_LAST_TURNS + 5 {
        d.turn(n);
    }
    let request = d.last_plan_request();
    let Message::System { content } = &request.messages[0] else {
        panic!("the summary comes first: {:?}", request.messages[0])
    };
    assert!(
        content.starts_with("Earlier in this conversation (5 turns, not shown)"),
        "{content}"
    );
    let sent = users(&request.messages);
    assert_eq!(sent.len(), DEFAULT_LAST_TURNS);
    assert_eq!(sent.last(), users(d.session.history()).last());
    assert_pairs_intact(&request.messages);
}

#[test]
fn the_model_sees_the_last_turns_and_a_summary_from_the_log() {
    let mut d = Driver::new(HistoryPolicy::last_turns(3));
    for n in 1..=10 {
        d.turn(n);
    }
    let request = d.last_plan_request();
    let Message::System { content } = &request.messages[0] else {
        panic!("the summary comes first: {:?}", request.messages[0])
    };
    assert!(
        content.starts_with("Earlier in this conversation (7 turns, not shown): the person asked"),
        "{content}"
    );
    assert!(content.contains("\"question 1: what is 1 plus 1?\""), "{content}");
    assert!(content.contains("(2 more)"), "{content}");
    assert!(content.contains("\"question 7: what is 7 plus 1?\""), "{content}");
    assert!(content.contains("you answered"), "{content}");
    assert!(content.contains("\"answer 7: 8\""), "{content}");
    assert!(content.contains("tools ran: add (7 ok)"), "{content}");
    assert_eq!(
        users(&request.messages),
        [
            "question 8: what is 8 plus 1?",
            "question 9: what is 9 plus 1?",
            "question 10: what is 10 plus 1?"
        ]
    );
    assert_pairs_intact(&request.messages[1..]);
    // The history itself is whole.
    assert_eq!(users(d.session.history()).len(), 10);
}

#[test]
fn the_summary_from_the_log_is_deterministic_and_bounded() {
    let mut a = Driver::new(HistoryPolicy::last_turns(2));
    let mut b = Driver::new(HistoryPolicy::last_turns(2));
    for n in 1..=40 {
        a.turn(n);
        b.turn(n);
    }
    assert_eq!(a.requests, b.requests, "the same inputs give the same requests");
    let Message::System { content } = &a.last_plan_request().messages[0] else {
        panic!("a summary")
    };
    assert!(content.len() <= MAX_LOG_SUMMARY_BYTES, "{}", content.len());
    assert!(content.contains("(33 more)"), "{content}");
    // A replay of the journal asks the same.
    let mut replayed = Session::new("s1", "main");
    let mut requests = Vec::new();
    for input in a.journal.clone() {
        let step = replayed.step(input, &a.catalog).unwrap();
        requests.extend(step.effects.into_iter().filter_map(|e| match e {
            Effect::CallModel {
                run_id, call, request, ..
            } => Some((run_id, call, request)),
            _ => None,
        }));
    }
    assert_eq!(requests, a.requests);
}

#[test]
fn a_turn_is_kept_or_left_out_whole() {
    let history = vec![
        Message::user("one"),
        Message::Assistant {
            agent: "main".into(),
            content: String::new(),
            tool_calls: vec![crate::ToolCall {
                id: "call_1".into(),
                name: "add".into(),
                arguments: json!({}),
            }],
        },
        Message::Tool {
            agent: "main".into(),
            call_id: "call_1".into(),
            tool: "add".into(),
            outcome: ToolOutcome::Ok(json!(2)),
        },
        Message::assistant("main", "two"),
        Message::user("three"),
        Message::assistant("main", "four"),
    ];
    assert_eq!(turns(&history), vec![0..4, 4..6]);
    let window = HistoryPolicy::last_turns(1).window(&history, None, 0);
    assert_eq!(window.left_out, 1);
    assert_eq!(&window.messages[1..], &history[4..]);
    // A bound that the second turn alone exceeds still sends it, whole.
    let tiny = HistoryPolicy::everything()
        .max_request_bytes(10)
        .summary(SummaryMode::Off);
    let window = tiny.window(&history, None, 0);
    assert_eq!(window.messages, history[4..].to_vec());
    // A bound both turns fit in keeps both.
    let roomy = HistoryPolicy::everything().max_request_bytes(100_000);
    assert_eq!(roomy.window(&history, None, 0).messages, history);
}

#[test]
fn requests_are_trimmed_to_the_size_bound_oldest_turns_first() {
    let max = 12_000;
    let mut d = Driver::new(HistoryPolicy::everything().max_request_bytes(max));
    let mut off = Driver::new(HistoryPolicy::everything());
    for n in 1..=60 {
        d.turn(n);
        off.turn(n);
    }
    assert!(
        size(off.last_plan_request()) > max,
        "the unbounded request grows past the bound"
    );
    for (_, _, request) in &d.requests {
        assert!(size(request) <= max, "{} > {max}", size(request));
        let start = usize::from(matches!(request.messages[0], Message::System { .. }));
        assert_pairs_intact(&request.messages[start..]);
    }
    let request = d.last_plan_request();
    let kept = users(&request.messages);
    assert_eq!(kept.last().map(String::as_str), Some("question 60: what is 60 plus 1?"));
    assert!(kept.len() > 5 && kept.len() < 60, "{}", kept.len());
    let Message::System { content } = &request.messages[0] else {
        panic!("a summary")
    };
    assert!(
        content.contains(&format!("({} turns, not shown)", 60 - kept.len())),
        "{content}"
    );
}

#[test]
fn the_model_writes_the_summary_when_asked_and_is_not_asked_again_until_the_window_moves() {
    let mut d = Driver::new(HistoryPolicy::last_turns(4).summary(SummaryMode::Model));
    for n in 1..=5 {
        d.turn(n);
    }
    // Five turns: one left out, fewer than half the window: not due yet.
    assert_eq!(d.summary_requests(), 0);
    assert_eq!(d.session.running_summary(), None);
    d.turn(6);
    // Six turns, the last four kept: two left out, half the window: due
    // at the start of turn 6, before it planned.
    assert_eq!(d.summary_requests(), 1);
    let (_, call, summary_request) = d
        .requests
        .iter()
        .find(|(_, _, r)| r.system.contains("running summary"))
        .unwrap();
    assert_eq!(*call, 1, "the summary is the run's first model call");
    assert!(summary_request.tools.is_empty());
    assert_eq!(summary_request.tool_choice, crate::ToolChoice::None);
    let Message::User { content } = &summary_request.messages[0] else {
        panic!("the turns to summarize")
    };
    assert!(content.contains("person: question 1: what is 1 plus 1?"), "{content}");
    assert!(content.contains("person: question 2"), "{content}");
    assert!(!content.contains("question 3"), "{content}");
    assert_eq!(
        d.session.running_summary(),
        Some(&RunningSummary {
            turns: 2,
            text: "summary: 6".into()
        })
    );
    // The plan request that followed carries the model's summary, then the last turns.
    let request = d.last_plan_request();
    let Message::System { content } = &request.messages[0] else {
        panic!("a summary")
    };
    assert_eq!(
        content,
        "Summary of the first 2 turns of this conversation (not shown):\nsummary: 6"
    );
    assert_eq!(users(&request.messages).len(), 4);
    // Turn 7: one turn more left out, less than half the window: not asked;
    // the window reaches back to the summary.
    d.turn(7);
    assert_eq!(d.summary_requests(), 1);
    let request = d.last_plan_request();
    assert_eq!(users(&request.messages).len(), 5);
    assert!(matches!(&request.messages[0], Message::System { content } if content.ends_with("summary: 6")));
    // Turn 8: the window moved by two: asked again, with the summary so far.
    d.turn(8);
    assert_eq!(d.summary_requests(), 2);
    let (_, _, second) = d
        .requests
        .iter()
        .rev()
        .find(|(_, _, r)| r.system.contains("running summary"))
        .unwrap();
    let Message::User { content } = &second.messages[0] else {
        panic!("the turns to summarize")
    };
    assert!(
        content.starts_with("The summary so far (2 turns):\nsummary: 6"),
        "{content}"
    );
    assert!(
        content.contains("question 3") && content.contains("question 4"),
        "{content}"
    );
    assert!(!content.contains("question 5"), "{content}");
    assert_eq!(d.session.running_summary().map(|s| s.turns), Some(4));
    // Replaying the journal gives the same session, summary included.
    let mut replayed = Session::new("s1", "main");
    for input in d.journal.clone() {
        replayed.step(input, &d.catalog).unwrap();
    }
    assert_eq!(replayed, d.session);
}

#[test]
fn a_failed_summary_call_keeps_the_summary_from_the_log_and_the_run_goes_on() {
    let mut d = Driver::new(HistoryPolicy::last_turns(2).summary(SummaryMode::Model));
    for n in 1..=2 {
        d.turn(n);
    }
    let at = Timestamp(d.now);
    let step = d.send(Input::StartRun(StartRun::new("question 3", PlannerMode::Model, at)));
    let (run_id, call, request) = Driver::model_call(&step).unwrap();
    assert!(request.system.contains("running summary"));
    let step = d.send(Input::ModelFailed {
        run_id: run_id.clone(),
        call,
        error: "HTTP 500".into(),
        at,
    });
    let summary = d.session.running_summary().unwrap();
    assert_eq!(summary.turns, 1);
    assert!(
        summary.text.starts_with("Earlier in this conversation (1 turns"),
        "{}",
        summary.text
    );
    let (_, next, request) = Driver::model_call(&step).expect("planning goes on");
    assert_eq!(next, call + 1);
    assert!(!request.tools.is_empty());
}

#[test]
fn a_pending_summary_call_is_issued_again_after_a_restart() {
    let mut d = Driver::new(HistoryPolicy::last_turns(2).summary(SummaryMode::Model));
    for n in 1..=2 {
        d.turn(n);
    }
    let at = Timestamp(d.now);
    let step = d.send(Input::StartRun(StartRun::new("question 3", PlannerMode::Model, at)));
    let asked = step
        .effects
        .iter()
        .find(|e| matches!(e, Effect::CallModel { .. }))
        .cloned();
    let pending: Vec<Effect> = d
        .session
        .pending_effects(&d.catalog)
        .into_iter()
        .filter(|e| matches!(e, Effect::CallModel { .. }))
        .collect();
    assert_eq!(pending, asked.into_iter().collect::<Vec<_>>());
}

#[test]
fn rules_runs_never_ask_the_model_for_a_summary() {
    let mut d = Driver::new(HistoryPolicy::last_turns(1).summary(SummaryMode::Model));
    for n in 1..=6 {
        let at = Timestamp(d.now);
        let step = d.send(Input::StartRun(StartRun::new(
            format!("note {n}"),
            PlannerMode::Rules,
            at,
        )));
        assert!(Driver::model_call(&step).is_none());
    }
    assert!(d.requests.is_empty());
    assert_eq!(d.session.running_summary(), None);
}

#[test]
fn agent_files_read_the_history_table_and_old_files_still_load() {
    let spec: AgentSpec = serde_json::from_value(json!({
        "id": "a",
        "history": {"last_turns": 20, "max_request_bytes": 200000, "summary": "model"}
    }))
    .unwrap();
    assert_eq!(
        spec.history,
        HistoryPolicy::last_turns(20)
            .max_request_bytes(200_000)
            .summary(SummaryMode::Model)
    );
    let old: AgentSpec = serde_json::from_value(json!({"id": "a"})).unwrap();
    assert_eq!(
        old.history,
        HistoryPolicy::default(),
        "without [history], the default policy"
    );
    assert_eq!(old.history.last_turns, Some(DEFAULT_LAST_TURNS));
    assert!(!old.history.is_off());
    let text = serde_json::to_value(&old).unwrap();
    assert_eq!(text.get("history"), None::<&Value>, "the default policy is not written");
    let partial: AgentSpec = serde_json::from_value(json!({"id": "a", "history": {"summary": "off"}})).unwrap();
    assert_eq!(
        partial.history.last_turns,
        Some(DEFAULT_LAST_TURNS),
        "a field left out takes its default"
    );
    let all: AgentSpec = serde_json::from_value(json!({"id": "a", "history": {"last_turns": 0}})).unwrap();
    assert!(all.history.is_off(), "last_turns = 0 sends every message");
    let mut everything = old.clone();
    everything.history = HistoryPolicy::everything();
    let again: AgentSpec = serde_json::from_value(serde_json::to_value(&everything).unwrap()).unwrap();
    assert_eq!(
        again.history,
        HistoryPolicy::everything(),
        "a policy that sends everything survives a round trip"
    );
    let bad = serde_json::from_value::<AgentSpec>(json!({"id": "a", "history": {"last_turn": 2}}));
    assert!(bad.is_err());
}

#[test]
fn a_summary_of_many_turns_quotes_the_first_questions_and_reads_only_the_latest_turns() {
    let mut history = Vec::new();
    for n in 1..=LOG_SUMMARY_TURNS + 70 {
        history.push(Message::user(format!("question {n}")));
        history.push(Message::Tool {
            agent: "main".into(),
            call_id: format!("c{n}").into(),
            tool: if n <= 70 { "old".into() } else { "add".into() },
            outcome: crate::ToolOutcome::Ok(json!(n)),
        });
        history.push(Message::assistant("main", format!("answer {n}")));
    }
    let turns = turns(&history);
    let summary = log_summary(&history, &turns).unwrap();
    let total = LOG_SUMMARY_TURNS + 70;
    assert!(
        summary.starts_with(&format!(
            "Earlier in this conversation ({total} turns, not shown): the person first asked \"question 1\", \"question 2\", (68 more); in the latest {LOG_SUMMARY_TURNS} turns the person asked"
        )),
        "{summary}"
    );
    assert!(summary.contains(&format!("\"question {total}\"")), "{summary}");
    assert!(summary.contains(&format!("\"answer {total}\"")), "{summary}");
    // Tools are counted over the latest turns only.
    assert!(
        summary.contains(&format!("tools ran: add ({LOG_SUMMARY_TURNS} ok).")),
        "{summary}"
    );
    assert!(!summary.contains("old"), "{summary}");
    // Fewer turns than that: every one is read, as before.
    let few = log_summary(&history, &turns[..7]).unwrap();
    assert!(
        few.starts_with("Earlier in this conversation (7 turns, not shown): the person asked \"question 1\", \"question 2\", (2 more)"),
        "{few}"
    );
    assert!(few.contains("tools ran: old (7 ok)."), "{few}");
}

#[test]
fn a_turn_index_kept_as_messages_come_finds_the_turns_the_history_has() {
    let mut history = vec![Message::system("be brief")];
    let mut index = TurnIndex::default();
    for n in 0..12 {
        history.push(if n % 3 == 0 {
            Message::user(format!("q{n}"))
        } else {
            Message::assistant("main", format!("a{n}"))
        });
        index.catch_up(&history);
        assert!(index.covers(&history));
        assert_eq!(index.ranges(), turns(&history), "after {} messages", history.len());
    }
    // A shorter history (a session read again) is indexed from the start.
    history.truncate(5);
    assert!(!index.covers(&history));
    index.catch_up(&history);
    assert_eq!(index.ranges(), turns(&history));
    assert!(TurnIndex::of(&[]).ranges().is_empty());
}

#[test]
fn a_window_from_the_index_is_the_window_from_the_history_while_it_grows_and_is_replaced() {
    let policies = [
        HistoryPolicy::last_turns(3).summary(SummaryMode::Log),
        HistoryPolicy::last_turns(4).summary(SummaryMode::Model),
        HistoryPolicy::last_turns(2).max_request_bytes(600),
    ];
    for policy in policies {
        let mut history = vec![Message::system("be brief")];
        let mut index = TurnIndex::default();
        let check = |history: &[Message], index: &mut TurnIndex, step: usize| {
            index.catch_up(history);
            let running = (step > 20).then(|| RunningSummary {
                turns: 3,
                text: "they asked about numbers".into(),
            });
            let expected = policy.window(history, running.as_ref(), 100);
            // Asked twice, as a turn's two requests do: the second from the cache.
            for _ in 0..2 {
                assert_eq!(
                    policy.window_indexed(history, index, running.as_ref(), 100),
                    expected,
                    "{policy:?} after {step} messages"
                );
            }
        };
        for n in 0..45 {
            history.push(match n % 3 {
                0 => Message::user(format!("question {n}")),
                1 => Message::assistant("main", format!("answer {n}")),
                _ => Message::assistant("main", ""),
            });
            check(&history, &mut index, n);
        }
        // The session read again, shorter, then growing with other words.
        history.truncate(20);
        for n in 0..9 {
            history.push(match n % 2 {
                0 => Message::user(format!("another question {n}")),
                _ => Message::assistant("main", format!("another answer {n}")),
            });
            check(&history, &mut index, 45 + n);
        }
    }
}

#[test]
fn an_index_asked_for_turns_it_does_not_have_says_none() {
    let history = vec![Message::user("q1"), Message::user("q2")];
    let index = TurnIndex::of(&history);
    assert!(index.log_summary(&history, 0..1).is_some());
    assert_eq!(index.log_summary(&history, 1..5), None);
    assert_eq!(
        index.log_summary(&history[..1], 0..2),
        None,
        "a history shorter than the index"
    );
}
