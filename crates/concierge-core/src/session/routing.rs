//! The hub's side of a run: routing a message to an agent, the built-in
//! `list_agents`, `change_goal` and `goal_complete` tools, moving the
//! conversation between agents (saving and restoring their information),
//! finished goals, and stopping handoff loops.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::Session;
use super::driver::{Driver, Flow};
use crate::blackboard::Goal;
use crate::catalog::Catalog;
use crate::event::EventKind;
use crate::hub::{
    CHANGE_GOAL, GOAL_COMPLETE, LIST_AGENTS, Offer, RouteSource, Routing, catalogue_text, choice_text, is_greeting,
    join_or,
};
use crate::id::{AgentId, CallId};
use crate::message::{Message, ToolCall};
use crate::output::RunStatus;
use crate::phase::Phase;
use crate::planner::{Plan, PlannedCall};
use crate::planner_mode::PlannerMode;
use crate::policy::Cap;
use crate::text::tokens;
use crate::tool::{ToolError, ToolErrorKind, ToolOutcome};

impl Catalog {
    /// The agents a new run of `text` in `session` (`None`: a new session)
    /// will plan with, as far as the rules can tell before it starts: the
    /// session's agent unless it is the hub, and the agent the hub's rules
    /// route `text` to (or the fallback when no rule is confident). Empty
    /// when the person will be asked to choose, or the hub's model decides.
    /// It changes nothing; a runtime uses it to prepare what those agents
    /// need (an MCP server's tools) before the run starts.
    pub fn likely_agents(&self, session: Option<&Session>, text: &str) -> Vec<AgentId> {
        let (mut agents, routing) = self.foresee(session, text);
        let routed = match routing {
            Some(Routing::Route { agent, .. }) => Some(agent),
            Some(Routing::Unsure) => self.fallback().cloned(),
            Some(Routing::Choice { .. } | Routing::Catalogue) | None => None,
        };
        if let Some(agent) = routed.filter(|a| !agents.contains(a)) {
            agents.push(agent);
        }
        agents
    }

    /// Whether the hub's model, not its rules, picks the agent for `text` in
    /// `session`: the hub takes the message, no rule is confident and there
    /// is no fallback agent. Any agent the hub offers may then take the run.
    pub fn hub_model_decides(&self, session: Option<&Session>, text: &str) -> bool {
        matches!(self.foresee(session, text).1, Some(Routing::Unsure)) && self.fallback().is_none()
    }

    /// The session's own agent (unless it is the hub), and the hub's rules'
    /// routing of `text` when the hub takes it (`None` when it does not).
    fn foresee(&self, session: Option<&Session>, text: &str) -> (Vec<AgentId>, Option<Routing>) {
        let (current, pinned, history, offer) = match session {
            Some(s) => {
                let c = &s.conversation;
                (Some(c.agent.clone()), c.pinned, c.history.as_slice(), c.offer.as_ref())
            }
            None => (self.default_agent(), false, &[][..], None),
        };
        let mut agents = Vec::new();
        if let Some(agent) = current.filter(|a| !self.is_hub(a)) {
            agents.push(agent);
        }
        // A message to a session that waits for the person answers its
        // question: the session's agent takes it, the hub routes nothing.
        let answers = session.is_some_and(Session::waits_for_person);
        if pinned || answers || self.hub().is_none() {
            return (agents, None);
        }
        let routing = self.router().decide(text, history, offer, None);
        (agents, Some(routing))
    }
}

impl Driver<'_> {
    /// Whether the hub may move this conversation (a hub exists and the
    /// caller did not pin the session to its agent).
    pub(super) fn routes(&self) -> bool {
        self.catalog.hub().is_some() && !self.conv.pinned
    }

    /// Sets the goal the current agent works on.
    pub(super) fn set_goal(&mut self, description: String) {
        let required = self
            .catalog
            .agent(&self.conv.agent)
            .map(|a| a.spec.required_information.clone())
            .unwrap_or_default();
        self.conv.blackboard.goal = Some(Goal { description, required });
    }

    /// Moves the conversation to `to`: saves what the agent it leaves knows,
    /// restores what `to` knew, writes `context` to the blackboard.
    pub(super) fn move_agent(&mut self, to: AgentId, reason: String, context: BTreeMap<String, Value>) {
        let from = std::mem::replace(&mut self.conv.agent, to.clone());
        if !self.catalog.is_hub(&from) {
            let known = self.conv.blackboard.available.clone();
            self.conv.boards.insert(from.clone(), known);
        }
        if let Some(saved) = self.conv.boards.get(&to) {
            let saved = saved.clone();
            self.conv.blackboard.available.extend(saved);
        }
        self.conv.blackboard.available.extend(context);
        let description = self
            .conv
            .blackboard
            .goal
            .as_ref()
            .map(|g| g.description.clone())
            .unwrap_or_default();
        self.set_goal(description);
        self.conv.goal_done = false;
        self.emit(EventKind::AgentChanged { from, to, reason });
    }

    /// Moves the conversation to `to` within the run, unless that goes back
    /// to an agent the run left with no tool progress since (a loop): then
    /// nothing moves and this returns false.
    pub(super) fn switch_agent(&mut self, to: AgentId, reason: String, context: BTreeMap<String, Value>) -> bool {
        let log = &self.conv.blackboard.log;
        let since = log.get(self.conv.trail_log..).unwrap_or_default();
        if since.iter().any(|e| e.success()) {
            self.conv.trail.clear();
            self.conv.trail_log = log.len();
        }
        if !self.catalog.is_hub(&to) && (self.conv.trail.contains(&to) || to == self.conv.agent) {
            return false;
        }
        let from = self.conv.agent.clone();
        self.conv.trail.push(from);
        self.move_agent(to, reason, context);
        true
    }

    /// Stops a handoff loop: the run ends needing the person.
    pub(super) fn handoff_loop(&mut self, to: AgentId) -> Flow {
        self.reach(Cap::HandoffLoop);
        let mut names: Vec<String> = self.conv.trail.iter().map(|a| self.display_name(a)).collect();
        names.push(self.display_name(&self.conv.agent));
        names.push(self.display_name(&to));
        let mut unique: Vec<String> = Vec::new();
        for name in names {
            if !unique.contains(&name) {
                unique.push(name);
            }
        }
        let names: Vec<&str> = unique.iter().map(String::as_str).collect();
        let text = format!(
            "I passed your request between {} without getting anywhere, so I stopped. \
             Could you say a little more about what you need?",
            join_or(&names, "and")
        );
        self.ask_person(text)
    }

    fn display_name(&self, agent: &AgentId) -> String {
        self.catalog
            .agent(agent)
            .map(|a| a.spec.name.clone())
            .unwrap_or_else(|| agent.to_string())
    }

    /// Ends the run with a question for the person.
    fn ask_person(&mut self, text: String) -> Flow {
        if self.run.phase() != Phase::Clarifying {
            self.move_to(Phase::Clarifying)?;
        }
        let agent = self.conv.agent.clone();
        self.say(Message::assistant(agent, text.clone()));
        self.close(RunStatus::NeedsInput, Some(text))
    }

    /// Whether the current agent's goal is complete: a `finish_on` tool
    /// succeeded in this run, or its model called `goal_complete`.
    pub(super) fn goal_finished(&self) -> bool {
        if !self.routes() || self.catalog.is_hub(&self.conv.agent) {
            return false;
        }
        if self.conv.goal_done {
            return true;
        }
        let Some(agent) = self.catalog.agent(&self.conv.agent) else {
            return false;
        };
        let log = &self.conv.blackboard.log;
        log.get(self.run.log_start()..)
            .unwrap_or_default()
            .iter()
            .any(|e| e.success() && agent.spec.finish_on.contains(&e.tool))
    }

    /// The latest user message and the history before it.
    fn latest_text(&self) -> (String, usize) {
        self.conv
            .history
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, m)| match m {
                Message::User { content } => Some((content.clone(), i)),
                _ => None,
            })
            .unwrap_or_default()
    }

    /// The hub's turn: route the latest message, offer a choice or the
    /// catalogue, or ask the model.
    pub(super) fn hub_plan(&mut self) -> Flow {
        let (text, index) = self.latest_text();
        let exclude = self.conv.returned_from.clone();
        let routing = self.catalog.router().decide(
            &text,
            &self.conv.history[..index],
            self.conv.offer.as_ref(),
            exclude.as_ref(),
        );
        match routing {
            Routing::Route {
                agent,
                score,
                source,
                rerun,
            } => self.route_to(agent, score, source, rerun),
            Routing::Choice { candidates } => {
                let ids: Vec<AgentId> = candidates.iter().map(|(a, _)| a.clone()).collect();
                let best = candidates.first().map_or(0.0, |(_, s)| *s);
                self.hub_asks(ids, best, Some(text), true)
            }
            Routing::Catalogue => self.catalogue(),
            Routing::Unsure => {
                if self.run.planner() == PlannerMode::Model {
                    let plan = self.consult_planner()?;
                    return self.apply(plan);
                }
                match self.catalog.fallback().cloned() {
                    Some(fallback) if Some(&fallback) != exclude.as_ref() => {
                        self.route_to(fallback, 0.0, RouteSource::Fallback, None)
                    }
                    _ if is_greeting(&tokens(&text)) => self.greet(),
                    _ => self.catalogue(),
                }
            }
        }
    }

    /// A plain greeting with no fallback agent to take it: the hub answers
    /// it itself, naming the goals (its starter prompt), and any of them
    /// may be chosen by name next.
    fn greet(&mut self) -> Flow {
        let ids: Vec<AgentId> = self.catalog.offered_agents().iter().map(|a| a.id.clone()).collect();
        let text = self
            .catalog
            .hub()
            .and_then(|hub| self.catalog.agent(hub))
            .and_then(|hub| hub.spec.starter_prompt.clone());
        let Some(text) = text else {
            return self.catalogue();
        };
        self.emit(EventKind::AgentRouted {
            to: None,
            candidates: ids.clone(),
            score: 0.0,
            source: RouteSource::Catalogue,
        });
        self.conv.offer = Some(Offer {
            candidates: ids,
            original: None,
        });
        self.ask_person(text)
    }

    /// What an agent the hub just opened says when its rules cannot place
    /// the message: its starter prompt (what it can do), rather than its
    /// "I did not understand". `text` otherwise.
    pub(super) fn opening(&self, text: String) -> String {
        if self.run.planner() != PlannerMode::Rules || self.opened.as_ref() != Some(&self.conv.agent) {
            return text;
        }
        self.catalog
            .agent(&self.conv.agent)
            .and_then(|a| a.spec.starter_prompt.clone())
            .unwrap_or(text)
    }

    fn catalogue(&mut self) -> Flow {
        let ids: Vec<AgentId> = self.catalog.offered_agents().iter().map(|a| a.id.clone()).collect();
        self.hub_asks(ids, 0.0, None, false)
    }

    /// The hub asks the person to choose between `candidates` (a choice
    /// between a few, or the whole catalogue).
    fn hub_asks(&mut self, candidates: Vec<AgentId>, score: f32, original: Option<String>, choice: bool) -> Flow {
        if let Some(hub) = self.catalog.hub().cloned() {
            if self.conv.agent != hub {
                self.move_agent(hub, "the person chooses an agent".into(), BTreeMap::new());
            }
        }
        self.emit(EventKind::AgentRouted {
            to: None,
            candidates: candidates.clone(),
            score,
            source: RouteSource::Catalogue,
        });
        let specs: Vec<&crate::agent::AgentSpec> = candidates
            .iter()
            .filter_map(|id| self.catalog.agent(id))
            .map(|a| &a.spec)
            .collect();
        let text = if choice {
            choice_text(&specs)
        } else {
            catalogue_text(&specs)
        };
        self.conv.offer = Some(Offer { candidates, original });
        self.ask_person(text)
    }

    /// Hands the message to `agent` and plans there (running `rerun`, the
    /// question a choice answered, when there is one).
    fn route_to(&mut self, agent: AgentId, score: f32, source: RouteSource, rerun: Option<String>) -> Flow {
        self.emit(EventKind::AgentRouted {
            to: Some(agent.clone()),
            candidates: Vec::new(),
            score,
            source,
        });
        self.conv.offer = None;
        let reason = format!("the hub routed the message ({source})");
        if !self.switch_agent(agent.clone(), reason, BTreeMap::new()) {
            return self.handoff_loop(agent);
        }
        if let Some(text) = rerun {
            self.say(Message::user(text.clone()));
            self.set_goal(text);
        }
        if source != RouteSource::Fallback {
            self.opened = Some(agent);
        }
        self.plan()
    }

    /// Before a rules agent answers "I did not understand", the hub tries
    /// to place the message with another agent. `None`: the agent answers.
    pub(super) fn offer_to_hub(&mut self) -> Option<Flow> {
        if !self.routes() || self.run.planner() != PlannerMode::Rules {
            return None;
        }
        let agent = self.conv.agent.clone();
        // The hub just decided this message is for this agent.
        if self.opened.as_ref() == Some(&agent) {
            return None;
        }
        let rules = self.catalog.agent(&agent)?.rules.as_ref()?;
        let (text, index) = self.latest_text();
        // Only before the agent acted on the message; the message alone
        // decides (the history is what brought the conversation here).
        let acted = self.conv.history[index..]
            .iter()
            .any(|m| matches!(m, Message::Tool { agent: a, .. } if a == &agent));
        if acted || rules.places(&text) {
            return None;
        }
        match self.catalog.router().decide(&text, &[], None, Some(&agent)) {
            Routing::Route {
                agent: to,
                score,
                source,
                rerun,
            } => Some(self.route_to(to, score, source, rerun)),
            Routing::Choice { candidates } => {
                let ids: Vec<AgentId> = candidates.iter().map(|(a, _)| a.clone()).collect();
                let best = candidates.first().map_or(0.0, |(_, s)| *s);
                Some(self.hub_asks(ids, best, Some(text), true))
            }
            Routing::Catalogue => Some(self.catalogue()),
            Routing::Unsure => None,
        }
    }

    /// A plan that calls built-in tools: `goal_complete` marks the goal
    /// done; `list_agents` goes back to the hub, which routes the message;
    /// `change_goal` (the hub's) moves the conversation to an agent.
    pub(super) fn builtins(&mut self, text: String, calls: Vec<PlannedCall>) -> Flow {
        let mut text = text;
        let mut rest = Vec::new();
        for call in calls {
            if call.name == GOAL_COMPLETE && !self.catalog.is_hub(&self.conv.agent) {
                self.conv.goal_done = true;
                if text.trim().is_empty() {
                    if let Some(summary) = call.arguments.get("summary").and_then(Value::as_str) {
                        text = summary.to_string();
                    }
                }
            } else {
                rest.push(call);
            }
        }
        let Some(position) = rest.iter().position(|c| c.name == LIST_AGENTS || c.name == CHANGE_GOAL) else {
            return self.apply(Plan::CallTools { text, calls: rest });
        };
        let builtin = rest[position].clone();
        // Answer every call of the plan here: the built-in decides, the others do not run.
        let calls: Vec<ToolCall> = rest
            .into_iter()
            .map(|p| {
                let id = CallId::new(format!("call_{}", self.conv.next_call));
                self.conv.next_call += 1;
                ToolCall {
                    id,
                    name: p.name.into(),
                    arguments: p.arguments,
                }
            })
            .collect();
        let agent = self.conv.agent.clone();
        self.say(Message::Assistant {
            agent: agent.clone(),
            content: text,
            tool_calls: calls.clone(),
        });
        let decided = self.decide_builtin(&builtin);
        for (i, call) in calls.into_iter().enumerate() {
            let outcome = if i == position {
                match &decided {
                    Ok((_, answer)) => ToolOutcome::Ok(json!(answer)),
                    Err(message) => ToolOutcome::Error(ToolError::new(ToolErrorKind::InvalidArguments, message)),
                }
            } else {
                ToolOutcome::Error(ToolError::new(
                    ToolErrorKind::Failed,
                    format!("not run: {} was called in the same step", builtin.name),
                ))
            };
            self.say(Message::Tool {
                agent: agent.clone(),
                call_id: call.id,
                tool: call.name,
                outcome,
            });
        }
        match decided {
            Err(_) => self.plan(),
            Ok((BuiltinMove::ToHub, _)) => {
                self.conv.returned_from = Some(agent.clone());
                let Some(hub) = self.catalog.hub().cloned() else {
                    return self.plan();
                };
                if !self.switch_agent(hub, format!("{agent} called list_agents"), BTreeMap::new()) {
                    return self.handoff_loop(agent);
                }
                self.plan()
            }
            Ok((BuiltinMove::To(target), _)) => self.route_to(target, 1.0, RouteSource::Model, None),
        }
    }

    /// What a `list_agents` or `change_goal` call does, and its answer; an
    /// error the model reads otherwise.
    fn decide_builtin(&self, call: &PlannedCall) -> Result<(BuiltinMove, String), String> {
        let here = &self.conv.agent;
        if !self.routes() {
            return Err(format!(
                "{} is not available: this conversation stays with {here}",
                call.name
            ));
        }
        if call.name == LIST_AGENTS {
            if self.catalog.is_hub(here) {
                return Err("already at the menu; call change_goal with an agent's id".into());
            }
            return Ok((BuiltinMove::ToHub, "Back to the menu.".into()));
        }
        if !self.catalog.is_hub(here) {
            return Err("change_goal is only available at the menu; call list_agents first".into());
        }
        let wanted = call
            .arguments
            .get("agent")
            .or_else(|| call.arguments.get("goal"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let offered = self.catalog.offered_agents();
        let found = offered
            .iter()
            .find(|a| a.id.as_str() == wanted)
            .map(|a| a.id.clone())
            .or_else(|| self.catalog.router().find_by_name(wanted));
        match found {
            Some(agent) => {
                let name = self.display_name(&agent);
                Ok((BuiltinMove::To(agent), format!("Switched to {name}.")))
            }
            None => {
                let known: Vec<String> = offered.iter().map(|a| format!("{} ({})", a.id, a.name)).collect();
                Err(format!(
                    "there is no agent called {wanted:?}; the agents are: {}",
                    known.join(", ")
                ))
            }
        }
    }
}

/// Where a built-in call moves the conversation.
enum BuiltinMove {
    ToHub,
    To(AgentId),
}

#[cfg(test)]
mod likely_agents {
    use crate::{AgentId, AgentSpec, Catalog, Intents, Session};

    fn catalog() -> Catalog {
        Catalog::builder()
            .agent(
                AgentSpec::new("orders")
                    .description("Finds orders.")
                    .intents(Intents::new().keywords(["order"])),
            )
            .agent(
                AgentSpec::new("calc")
                    .description("Calculates.")
                    .intents(Intents::new().keywords(["calculate"])),
            )
            .build()
            .unwrap()
    }

    #[test]
    fn a_new_session_goes_where_the_hubs_rules_route_its_message() {
        let catalog = catalog();
        assert_eq!(
            catalog.likely_agents(None, "where is my order 1001?"),
            [AgentId::new("orders")]
        );
        assert_eq!(catalog.likely_agents(None, "calculate 5 + 3"), [AgentId::new("calc")]);
        assert!(
            catalog.likely_agents(None, "what can you do?").is_empty(),
            "the catalogue"
        );
    }

    #[test]
    fn the_hubs_model_decides_only_what_its_rules_cannot() {
        let catalog = catalog();
        assert!(catalog.hub_model_decides(None, "I would like something nice"));
        assert!(!catalog.hub_model_decides(None, "where is my order 1001?"), "routed");
        assert!(!catalog.hub_model_decides(None, "what can you do?"), "the catalogue");
        let session = Session::new("s", "calc");
        assert!(
            catalog.hub_model_decides(Some(&session), "I would like something nice"),
            "the hub may move the session"
        );
    }

    #[test]
    fn a_session_keeps_its_agent_and_may_be_routed_to_another() {
        let catalog = catalog();
        let session = Session::new("s", "calc");
        assert_eq!(
            catalog.likely_agents(Some(&session), "where is my order 1001?"),
            [AgentId::new("calc"), AgentId::new("orders")]
        );
        assert_eq!(
            catalog.likely_agents(Some(&session), "calculate 2 + 2"),
            [AgentId::new("calc")]
        );
    }
}
