//! The hub (the assistant's front desk): a built-in agent a new session
//! starts with, which finds the agent a message is for.
//!
//! Routing is rules first: each agent's [`Intents`] are scored against the
//! message (and, when the message says nothing, against the recent history).
//! A clear winner takes the message; close scores become a choice between
//! just those agents; otherwise the model is asked (when the run plans with
//! one), then the fallback agent, then the catalogue. Every decision is an
//! `agent_routed` event with its score and [`RouteSource`].

use std::fmt::Write as _;

use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::agent::{AgentSpec, Intents};
use crate::id::AgentId;
use crate::message::Message;
use crate::text::{content_words, ordinal, token_spans, tokens};
use crate::tool::ToolDef;

/// The id of the built-in hub agent.
pub const HUB_AGENT: &str = "hub";
/// The built-in tool a specialist calls to go back to the hub.
pub const LIST_AGENTS: &str = "list_agents";
/// The built-in tool the hub's model calls to move the conversation to an agent.
pub const CHANGE_GOAL: &str = "change_goal";
/// The built-in tool a specialist's model calls when its goal is met.
pub const GOAL_COMPLETE: &str = "goal_complete";

/// Whether `name` is one of the hub's built-in tools, answered by the core.
pub(crate) fn is_builtin(name: &str) -> bool {
    matches!(name, LIST_AGENTS | CHANGE_GOAL | GOAL_COMPLETE)
}

/// The lowest score that routes a message.
const THRESHOLD: f32 = 1.0;
/// Scores closer than this to the best one make a choice, not a decision.
const MARGIN: f32 = 0.5;
/// How many earlier user messages the hub looks back at.
const HISTORY_DEPTH: usize = 3;

/// Whether a session talks to one agent or to the hub and its agents
/// (`CONCIERGE_MODE`, or `mode` in `concierge.toml`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// The hub finds the agent; people can switch goals (the default).
    #[default]
    Multi,
    /// One agent only: no hub, no `list_agents`, no `change_goal`.
    Single,
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "multi" => Ok(Mode::Multi),
            "single" => Ok(Mode::Single),
            other => Err(format!("mode {other:?} is neither \"multi\" nor \"single\"")),
        }
    }
}

/// Where a routing decision came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteSource {
    /// The message matched an agent's intents.
    Rules,
    /// Earlier messages (or the hub's last question) decided.
    History,
    /// The model chose (the `change_goal` tool).
    Model,
    /// The person chose from a list.
    Person,
    /// Nothing matched: the configured fallback agent takes it.
    Fallback,
    /// The hub showed the catalogue or asked the person to choose.
    Catalogue,
}

impl std::fmt::Display for RouteSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RouteSource::Rules => "rules",
            RouteSource::History => "history",
            RouteSource::Model => "model",
            RouteSource::Person => "person",
            RouteSource::Fallback => "fallback",
            RouteSource::Catalogue => "catalogue",
        })
    }
}

/// The agents the hub last offered, and the message that made it ask.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Offer {
    /// The agents, in the order shown.
    pub(crate) candidates: Vec<AgentId>,
    /// The message to run once the person chose (none for a plain catalogue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) original: Option<String>,
}

/// What the hub decided about a message.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Routing {
    /// The message goes to `agent`; `rerun` is the message to run there
    /// when it is not the latest one (the question a choice answered).
    Route {
        agent: AgentId,
        score: f32,
        source: RouteSource,
        rerun: Option<String>,
    },
    /// Several agents fit about as well: the person chooses.
    Choice { candidates: Vec<(AgentId, f32)> },
    /// The person asked what the assistant can do.
    Catalogue,
    /// No rule is confident.
    Unsure,
}

/// One agent's intents, compiled.
#[derive(Clone, Debug)]
struct AgentIntents {
    agent: AgentId,
    keywords: Vec<Vec<String>>,
    patterns: Vec<Regex>,
    examples: Vec<Vec<String>>,
    names: Vec<Vec<String>>,
}

/// The hub's routing tables, built with the catalog.
#[derive(Clone, Debug, Default)]
pub(crate) struct Router {
    agents: Vec<AgentIntents>,
    /// Whether intents are scored (off: the hub always shows the catalogue).
    pub(crate) intent_detection: bool,
    /// The agent that takes what nothing else does (greetings, small talk).
    pub(crate) fallback: Option<AgentId>,
}

impl Router {
    /// Compiles every agent's intents; an error names the bad pattern.
    pub(crate) fn new(
        specs: &[&AgentSpec],
        intent_detection: bool,
        fallback: Option<AgentId>,
    ) -> Result<Self, (AgentId, String)> {
        let mut agents = Vec::new();
        for spec in specs {
            agents.push(compile(spec).map_err(|reason| (spec.id.clone(), reason))?);
        }
        Ok(Self {
            agents,
            intent_detection,
            fallback,
        })
    }

    /// The agents the hub offers, in catalogue order.
    pub(crate) fn agent_ids(&self) -> Vec<AgentId> {
        self.agents.iter().map(|a| a.agent.clone()).collect()
    }

    /// Decides where `text` goes. `history` is the conversation before it;
    /// `offer` what the hub last offered; `exclude` an agent that must not
    /// get it (the one that just gave it back).
    pub(crate) fn decide(
        &self,
        text: &str,
        history: &[Message],
        offer: Option<&Offer>,
        exclude: Option<&AgentId>,
    ) -> Routing {
        let words = tokens(text);
        if let Some(offer) = offer {
            if let Some(agent) = self.resolve_offer(&words, offer) {
                return Routing::Route {
                    agent,
                    score: 1.0,
                    source: RouteSource::Person,
                    rerun: offer.original.clone(),
                };
            }
        }
        if asks_for_catalogue(&words) || !self.intent_detection {
            return Routing::Catalogue;
        }
        match self.rank(text, &words, exclude) {
            Ranked::Clear(agent, score) => {
                return Routing::Route {
                    agent,
                    score,
                    source: RouteSource::Rules,
                    rerun: None,
                };
            }
            Ranked::Close(candidates) => return Routing::Choice { candidates },
            Ranked::Nothing => {}
        }
        self.by_history(&words, history, exclude).unwrap_or(Routing::Unsure)
    }

    /// An agent named (or numbered) in the answer to an offer.
    fn resolve_offer(&self, words: &[String], offer: &Offer) -> Option<AgentId> {
        let n = offer.candidates.len();
        if let Some(index) = ordinal(words, n) {
            return offer.candidates.get(index).cloned();
        }
        let named: Vec<&AgentId> = offer
            .candidates
            .iter()
            .filter(|id| self.get(id).is_some_and(|a| a.names.iter().any(|p| contains(words, p))))
            .collect();
        if let [one] = named.as_slice() {
            return Some((*one).clone());
        }
        if n == 1 && affirmative(words) {
            return offer.candidates.first().cloned();
        }
        None
    }

    fn by_history(&self, words: &[String], history: &[Message], exclude: Option<&AgentId>) -> Option<Routing> {
        // "yes, that one" after the assistant named one agent.
        if affirmative(words) {
            let last = history.iter().rev().find_map(|m| match m {
                Message::Assistant { content, .. } if !content.is_empty() => Some(content.as_str()),
                _ => None,
            })?;
            let said = tokens(last);
            let named: Vec<&AgentIntents> = self
                .agents
                .iter()
                .filter(|a| Some(&a.agent) != exclude && a.names.iter().any(|p| contains(&said, p)))
                .collect();
            return match named.as_slice() {
                [one] => Some(Routing::Route {
                    agent: one.agent.clone(),
                    score: 1.0,
                    source: RouteSource::History,
                    rerun: None,
                }),
                _ => None,
            };
        }
        // A message that says nothing new continues what was asked before.
        if words.len() > 6 {
            return None;
        }
        let earlier = history
            .iter()
            .rev()
            .filter_map(|m| match m {
                Message::User { content } => Some(content.as_str()),
                _ => None,
            })
            .skip(1)
            .take(HISTORY_DEPTH);
        for text in earlier {
            if let Ranked::Clear(agent, score) = self.rank(text, &tokens(text), exclude) {
                return Some(Routing::Route {
                    agent,
                    score: score / 2.0,
                    source: RouteSource::History,
                    rerun: None,
                });
            }
        }
        None
    }

    fn get(&self, id: &AgentId) -> Option<&AgentIntents> {
        self.agents.iter().find(|a| &a.agent == id)
    }

    fn rank(&self, text: &str, words: &[String], exclude: Option<&AgentId>) -> Ranked {
        let spans = token_spans(text);
        let mut scored: Vec<(AgentId, f32)> = self
            .agents
            .iter()
            .filter(|a| Some(&a.agent) != exclude)
            .map(|a| (a.agent.clone(), score(a, text, words, &spans)))
            .filter(|(_, s)| *s >= THRESHOLD)
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        let Some(&(_, best)) = scored.first() else {
            return Ranked::Nothing;
        };
        let close: Vec<(AgentId, f32)> = scored.into_iter().filter(|(_, s)| best - s < MARGIN).collect();
        match close.as_slice() {
            [(agent, score)] => Ranked::Clear(agent.clone(), *score),
            _ => Ranked::Close(close),
        }
    }

    /// The id an agent is called by in `text` ("the HR one"), if exactly one fits.
    pub(crate) fn find_by_name(&self, text: &str) -> Option<AgentId> {
        let words = tokens(text);
        if let Some(exact) = self.agents.iter().find(|a| a.agent.as_str() == text.trim()) {
            return Some(exact.agent.clone());
        }
        let named: Vec<&AgentIntents> = self
            .agents
            .iter()
            .filter(|a| a.names.iter().any(|p| contains(&words, p)))
            .collect();
        match named.as_slice() {
            [one] => Some(one.agent.clone()),
            _ => match self.rank(text, &words, None) {
                Ranked::Clear(agent, _) => Some(agent),
                _ => None,
            },
        }
    }
}

enum Ranked {
    Clear(AgentId, f32),
    Close(Vec<(AgentId, f32)>),
    Nothing,
}

fn compile(spec: &AgentSpec) -> Result<AgentIntents, String> {
    let Intents {
        keywords,
        patterns,
        examples,
    } = &spec.intents;
    let patterns = patterns
        .iter()
        .map(|p| {
            RegexBuilder::new(p)
                .case_insensitive(true)
                .build()
                .map_err(|e| format!("intent pattern {p:?} is invalid: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut names = vec![tokens(&spec.id.as_str().replace(['_', '-'], " "))];
    if !spec.name.is_empty() {
        names.push(tokens(&spec.name));
    }
    if let Some(category) = &spec.category {
        names.push(tokens(category));
    }
    names.retain(|n| !n.is_empty());
    names.dedup();
    Ok(AgentIntents {
        agent: spec.id.clone(),
        keywords: keywords.iter().map(|k| tokens(k)).filter(|k| !k.is_empty()).collect(),
        patterns,
        examples: examples.iter().map(|e| content_words(&tokens(e))).collect(),
        names,
    })
}

/// How well `text` fits an agent: one point per keyword (more for a
/// phrase), two per pattern, up to two for the closest example, and one and
/// a half for naming the agent.
///
/// Each word of the message is evidence for an agent once: a piece of
/// evidence (strongest first) counts only when it covers a word nothing
/// counted before did, so a keyword, a pattern and an example that all
/// point at the same word ("PTO") weigh as much as that word, and a message
/// that names two goals' words ("money and PTO") scores them about equally.
fn score(agent: &AgentIntents, text: &str, words: &[String], spans: &[(usize, usize)]) -> f32 {
    // (weight, the indices of the words it covers)
    let mut evidence: Vec<(f32, Vec<usize>)> = Vec::new();
    for keyword in &agent.keywords {
        if let Some(at) = position(words, keyword) {
            let weight = if keyword.len() > 1 { 1.5 } else { 1.0 };
            evidence.push((weight, (at..at + keyword.len()).collect()));
        }
    }
    for pattern in &agent.patterns {
        if let Some(found) = pattern.find(text) {
            let covered = spans
                .iter()
                .enumerate()
                .filter(|(_, (start, end))| *start < found.end() && *end > found.start())
                .map(|(i, _)| i)
                .collect();
            evidence.push((2.0, covered));
        }
    }
    let content = content_words(words);
    let best = agent
        .examples
        .iter()
        .filter(|e| !e.is_empty())
        .map(|e| {
            let shared = e.iter().filter(|w| content.contains(w)).count();
            // One shared word of a longer example is a coincidence ("check"
            // in "check out"), not a resemblance.
            let fraction = if shared < 2 && e.len() > 1 {
                0.0
            } else {
                shared as f32 / e.len() as f32
            };
            (fraction, e)
        })
        .fold((0.0f32, None), |best, (fraction, e)| {
            if fraction > best.0 { (fraction, Some(e)) } else { best }
        });
    if let (fraction, Some(example)) = best {
        if fraction >= 0.5 {
            let covered = words
                .iter()
                .enumerate()
                .filter(|(_, w)| example.contains(w))
                .map(|(i, _)| i)
                .collect();
            evidence.push((2.0 * fraction, covered));
        }
    }
    if let Some((at, len)) = agent
        .names
        .iter()
        .filter(|n| !n.iter().all(|w| GENERIC_NAMES.contains(&w.as_str())))
        .find_map(|n| position(words, n).map(|at| (at, n.len())))
    {
        evidence.push((1.5, (at..at + len).collect()));
    }
    evidence.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut claimed = vec![false; words.len()];
    let mut total = 0.0;
    for (weight, covered) in evidence {
        let new = covered.is_empty() || covered.iter().any(|&i| !claimed.get(i).copied().unwrap_or(true));
        if new {
            total += weight;
            for i in covered {
                if let Some(slot) = claimed.get_mut(i) {
                    *slot = true;
                }
            }
        }
    }
    total
}

/// Names that are also what people say when they ask for anything ("I
/// need help with my money"): an agent called only this is not named by
/// them in a request (an answer to a choice still picks it by name).
const GENERIC_NAMES: &[&str] = &["help", "general", "assistant", "agent", "support"];

fn same_word(word: &str, wanted: &str) -> bool {
    word == wanted || word.strip_suffix('s') == Some(wanted) || wanted.strip_suffix('s') == Some(word)
}

/// Whether `phrase` occurs in `words` as consecutive whole words.
fn contains(words: &[String], phrase: &[String]) -> bool {
    position(words, phrase).is_some()
}

/// Where `phrase` first occurs in `words` as consecutive whole words.
fn position(words: &[String], phrase: &[String]) -> Option<usize> {
    if phrase.is_empty() || phrase.len() > words.len() {
        return None;
    }
    words
        .windows(phrase.len())
        .position(|w| w.iter().zip(phrase).all(|(a, b)| same_word(a, b)))
}

fn has_phrase(words: &[String], phrase: &str) -> bool {
    contains(words, &tokens(phrase))
}

fn affirmative(words: &[String]) -> bool {
    const YES: &[&str] = &[
        "yes",
        "yeah",
        "yep",
        "sure",
        "ok",
        "okay",
        "please do",
        "that one",
        "this one",
        "go ahead",
    ];
    words.len() <= 5 && YES.iter().any(|p| has_phrase(words, p))
}

/// Whether the person asks what the assistant can do.
pub(crate) fn asks_for_catalogue(words: &[String]) -> bool {
    const ASKS: &[&str] = &[
        "what can you do",
        "what can you help",
        "what do you do",
        "what agents",
        "which agents",
        "list agents",
        "list the agents",
        "show agents",
        "show me the agents",
        "what are my options",
        "what options",
    ];
    ASKS.iter().any(|p| has_phrase(words, p)) || words == ["help"] || wants_menu(words)
}

/// Whether the message is a plain greeting ("hello", "hi there", "good
/// morning!") and nothing else.
pub(crate) fn is_greeting(words: &[String]) -> bool {
    const GREETINGS: &[&str] = &[
        "hi",
        "hello",
        "hey",
        "hiya",
        "howdy",
        "greetings",
        "good morning",
        "good afternoon",
        "good evening",
    ];
    const ALSO: &[&str] = &["there", "again", "all", "everyone", "assistant", "concierge"];
    if words.is_empty() || words.len() > 4 {
        return false;
    }
    let mut rest: Vec<&str> = words.iter().map(String::as_str).collect();
    let Some(greeting) = GREETINGS.iter().find(|g| has_phrase(words, g)) else {
        return false;
    };
    let said = tokens(greeting);
    rest.retain(|w| !said.iter().any(|s| s == w));
    rest.iter().all(|w| ALSO.contains(w))
}

/// Whether the person asks to go back to the menu.
pub(crate) fn wants_menu(words: &[String]) -> bool {
    const MENU: &[&str] = &[
        "back to the menu",
        "back to menu",
        "main menu",
        "the menu",
        "start over",
        "other agents",
        "another agent",
        "different agent",
        "back to the hub",
    ];
    MENU.iter().any(|p| has_phrase(words, p))
}

/// The built-in hub agent over `agents` (the specialists it offers).
pub(crate) fn hub_spec(agents: &[&AgentSpec], fallback: Option<&AgentId>) -> AgentSpec {
    let names: Vec<&str> = agents.iter().map(|a| a.name.as_str()).collect();
    let mut instructions = String::from(
        "You are the assistant's front desk. Find the agent the person's request is for and call change_goal \
         with its id; do not answer the request yourself. If it is unclear, ask which of the agents below they \
         want, naming only those that fit.\n\nAgents:",
    );
    for agent in agents {
        let _ = write!(instructions, "\n- {} ({}): {}", agent.id, agent.name, agent.description);
    }
    if let Some(fallback) = fallback {
        let _ = write!(instructions, "\n\nGreetings and small talk go to {fallback}.");
    }
    AgentSpec::new(HUB_AGENT)
        .name("Assistant")
        .description("Finds the right agent for what you need.")
        .instructions(instructions)
        .starter_prompt(format!(
            "Hi! I can help with {}. What do you need?",
            join_or(&names, "and")
        ))
}

/// `A`, `A or B`, `A, B or C`.
pub(crate) fn join_or(items: &[&str], last: &str) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_string(),
        [init @ .., tail] => format!("{} {last} {tail}", init.join(", ")),
    }
}

/// The catalogue as people read it: name, description and starter prompt.
pub(crate) fn catalogue_text(agents: &[&AgentSpec]) -> String {
    let mut text = String::from("Here is what I can help with:");
    for (i, agent) in agents.iter().enumerate() {
        let _ = write!(text, "\n{}. {}", i + 1, agent.name);
        if !agent.description.is_empty() {
            let _ = write!(text, " — {}", agent.description);
        }
        if let Some(prompt) = &agent.starter_prompt {
            let _ = write!(text, " (\"{prompt}\")");
        }
    }
    text.push_str("\nWhich would you like? Answer with a name or a number.");
    text
}

/// The question for a choice between a few agents ("Finance or HR?").
pub(crate) fn choice_text(agents: &[&AgentSpec]) -> String {
    let names: Vec<&str> = agents.iter().map(|a| a.name.as_str()).collect();
    let mut text = format!("{}?", join_or(&names, "or"));
    for (i, agent) in agents.iter().enumerate() {
        let _ = write!(text, "\n{}. {}", i + 1, agent.name);
        if !agent.description.is_empty() {
            let _ = write!(text, " — {}", agent.description);
        }
    }
    text
}

/// The `change_goal` tool the hub's model sees.
pub(crate) fn change_goal_def(agents: &[AgentId]) -> ToolDef {
    let ids: Vec<&str> = agents.iter().map(AgentId::as_str).collect();
    ToolDef {
        name: CHANGE_GOAL.into(),
        description: "Move the conversation to the agent whose job the request is; the request runs there.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "agent": {"type": "string", "description": "The agent's id (or its name).", "enum": ids},
                "reason": {"type": "string", "description": "Why this agent."}
            },
            "required": ["agent"]
        }),
    }
}

/// The `list_agents` tool every specialist's model sees in multi mode.
pub(crate) fn list_agents_def() -> ToolDef {
    ToolDef {
        name: LIST_AGENTS.into(),
        description: "Go back to the assistant's menu when the person wants something this agent does not do; \
                      their message is routed to the right agent."
            .into(),
        parameters: json!({"type": "object", "properties": {}}),
    }
}

/// The `goal_complete` tool every specialist's model sees in multi mode.
pub(crate) fn goal_complete_def() -> ToolDef {
    ToolDef {
        name: GOAL_COMPLETE.into(),
        description: "Call once the person's goal with this agent is fully met; the conversation returns to the menu."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {"summary": {"type": "string", "description": "What was done, for the person."}}
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router() -> Router {
        let travel = AgentSpec::new("travel")
            .name("Travel")
            .intents(Intents::new().keywords(["flight", "trip", "vacation", "hotel"]));
        let finance = AgentSpec::new("finance")
            .name("Finance")
            .intents(Intents::new().keywords(["balance", "money", "account"]));
        let hr = AgentSpec::new("hr").name("HR").intents(
            Intents::new()
                .keywords(["pto", "time off", "vacation"])
                .example("how many days off do I have"),
        );
        Router::new(&[&travel, &finance, &hr], true, None).unwrap()
    }

    #[test]
    fn words_match_whole_and_plural() {
        assert!(contains(&tokens("two flights please"), &tokens("flight")));
        assert!(!contains(&tokens("my laptop"), &tokens("pto")));
        assert!(contains(&tokens("I need time off"), &tokens("time off")));
    }

    #[test]
    fn seed_000s_intent_table() {
        let r = router();
        let to = |text: &str| match r.decide(text, &[], None, None) {
            Routing::Route { agent, .. } => agent.to_string(),
            Routing::Choice { candidates } => candidates
                .iter()
                .map(|(a, _)| a.to_string())
                .collect::<Vec<_>>()
                .join("|"),
            Routing::Catalogue => "catalogue".into(),
            Routing::Unsure => "unsure".into(),
        };
        assert_eq!(to("book a flight to London"), "travel");
        assert_eq!(to("check my balance"), "finance");
        assert_eq!(to("how many PTO days do I have"), "hr");
        assert_eq!(to("vacation"), "travel|hr");
        assert_eq!(to("What can you do?"), "catalogue");
        assert_eq!(to("hello there"), "unsure");
    }

    /// Where `text` goes from the hub: an agent, `a|b` for a choice, or
    /// `catalogue` / `unsure`.
    fn goes(r: &Router, text: &str) -> String {
        match r.decide(text, &[], None, None) {
            Routing::Route { agent, .. } => agent.to_string(),
            Routing::Choice { candidates } => candidates
                .iter()
                .map(|(a, _)| a.to_string())
                .collect::<Vec<_>>()
                .join("|"),
            Routing::Catalogue => "catalogue".into(),
            Routing::Unsure => "unsure".into(),
        }
    }

    #[test]
    fn a_word_is_evidence_once_so_two_goals_named_once_each_make_a_choice() {
        let r = router();
        // "money" is finance's, "PTO" is HR's: neither outweighs the other,
        // although HR's example also mentions PTO.
        assert_eq!(goes(&r, "I need help with money and PTO"), "finance|hr");
        // A keyword, a pattern and an example on the same word weigh as
        // much as the strongest of them.
        let hr = AgentSpec::new("hr").intents(
            Intents::new()
                .keywords(["pto"])
                .pattern(r"\bpto\b")
                .example("how much PTO do I have"),
        );
        let hr = compile(&hr).unwrap();
        let text = "money and PTO";
        let words = tokens(text);
        assert_eq!(score(&hr, text, &words, &token_spans(text)), 2.0);
        // More words of the message covered: more evidence.
        let text = "how much PTO do I have";
        let words = tokens(text);
        assert_eq!(score(&hr, text, &words, &token_spans(text)), 4.0);
    }

    #[test]
    fn one_shared_word_with_a_longer_example_is_no_resemblance() {
        let food = AgentSpec::new("food").intents(Intents::new().example("check out"));
        let food = compile(&food).unwrap();
        let text = "I want to check my account";
        assert_eq!(score(&food, text, &tokens(text), &token_spans(text)), 0.0);
        let text = "check out please";
        assert_eq!(score(&food, text, &tokens(text), &token_spans(text)), 2.0);
    }

    #[test]
    fn plain_greetings_are_told_from_requests() {
        for text in ["hello", "Hi there!", "good morning!", "hey assistant"] {
            assert!(is_greeting(&tokens(text)), "{text}");
        }
        for text in ["hello, book a flight", "hi can you check my balance", "thanks", ""] {
            assert!(!is_greeting(&tokens(text)), "{text}");
        }
    }

    #[test]
    fn answers_to_an_offer_resolve_by_name_number_and_ordinal() {
        let r = router();
        let offer = Offer {
            candidates: vec!["travel".into(), "hr".into()],
            original: Some("vacation".into()),
        };
        for answer in ["HR", "the second", "2", "the HR one"] {
            match r.decide(answer, &[], Some(&offer), None) {
                Routing::Route {
                    agent, source, rerun, ..
                } => {
                    assert_eq!(agent, "hr", "{answer}");
                    assert_eq!(source, RouteSource::Person);
                    assert_eq!(rerun.as_deref(), Some("vacation"));
                }
                other => panic!("{answer}: {other:?}"),
            }
        }
    }

    #[test]
    fn history_decides_when_the_message_says_nothing() {
        let r = router();
        let history = [
            Message::user("I want to check my account"),
            Message::assistant("hub", "Shall I take you to Finance?"),
        ];
        match r.decide("yes, that one", &history, None, None) {
            Routing::Route { agent, source, .. } => {
                assert_eq!(agent, "finance");
                assert_eq!(source, RouteSource::History);
            }
            other => panic!("{other:?}"),
        }
        let history = [Message::user("book a flight"), Message::user("tomorrow morning")];
        assert!(matches!(
            r.decide("tomorrow morning", &history, None, None),
            Routing::Route {
                source: RouteSource::History,
                ..
            }
        ));
    }

    #[test]
    fn names_are_found_fuzzily_and_excluded_agents_skipped() {
        let r = router();
        assert_eq!(r.find_by_name("the HR one"), Some("hr".into()));
        assert_eq!(r.find_by_name("finance"), Some("finance".into()));
        assert_eq!(r.find_by_name("the weather one"), None);
        let hr: AgentId = "hr".into();
        assert!(matches!(
            r.decide("vacation", &[], None, Some(&hr)),
            Routing::Route { agent, .. } if agent == "travel"
        ));
        assert!(wants_menu(&tokens("take me back to the menu")));
        assert!(!wants_menu(&tokens("now back to the flights")));
    }
}
