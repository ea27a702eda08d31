//! Agents: the *goals* a person can pursue, each with its instructions,
//! tools, policy, rules and intents.

mod agent_tool;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::guardrail::{GuardStage, Guardrail, Guardrails};
use crate::history::HistoryPolicy;
use crate::id::{AgentId, ToolId};
use crate::policy::{MemoryPolicy, RunPolicy};

pub use agent_tool::AgentTool;

/// An agent: who it is, what it is for, what it may use and how it plans.
///
/// Built in Rust with the chained setters below, or deserialized from a file
/// (`agents/*.toml`); tool and handoff names are checked when the
/// [`Catalog`](crate::Catalog) is built.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// The agent's id, e.g. `goal_travel_flights`.
    pub id: AgentId,
    /// A display name, e.g. `Flight booking`.
    #[serde(default)]
    pub name: String,
    /// A free-form category, e.g. `travel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// A friendly description shown to people choosing an agent.
    #[serde(default)]
    pub description: String,
    /// Instructions for the model: the agent's persona and the goal's steps.
    #[serde(default)]
    pub instructions: String,
    /// What the agent says first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starter_prompt: Option<String>,
    /// Example turns shown to the model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<ExampleTurn>,
    /// Tools, by name.
    #[serde(default)]
    pub tools: Vec<ToolId>,
    /// Toolsets whose every tool this agent may use (a Rust module, an MCP server).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub toolsets: Vec<String>,
    /// Agents this agent may hand the conversation to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handoffs: Vec<AgentId>,
    /// Information the goal needs before it can be met (blackboard keys; the
    /// LLM planner is told which are still missing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_information: Vec<String>,
    /// Caps and confirmation policy for runs of this agent.
    #[serde(default)]
    pub policy: RunPolicy,
    /// Keyword/regex routes that let the agent run with no model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<Rules>,
    /// The model this agent uses (e.g. `openai:gpt-4o-mini`); the runtime default otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Sampling temperature for this agent's model calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// A tool the first model call of each run must call (a router that
    /// always searches first, say); later calls choose freely.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_tool: Option<ToolId>,
    /// What people say when they want this agent: the hub scores these
    /// against their messages to route the conversation here.
    #[serde(default, skip_serializing_if = "Intents::is_empty")]
    pub intents: Intents,
    /// Tools whose success completes the agent's goal: the conversation then
    /// returns to the hub (the model may also call the built-in `goal_complete`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finish_on: Vec<ToolId>,
    /// Other agents this agent calls like tools: each call runs a child run
    /// of that agent, and its reply is the call's result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_tools: Vec<AgentTool>,
    /// What a message does that arrives while a run of a session with
    /// this agent is working (`multitask = "enqueue"` in an agent file); a
    /// request may say otherwise. Unset: queued for a caller that waits for
    /// the answer, refused for one that does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multitask: Option<crate::Multitask>,
    /// The agent only reads: the catalog refuses to build it with a tool
    /// that is not read-only, and a run of it refuses any such call (tools
    /// discovered later included).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    /// What this agent's work writes (table names, say), for other agents
    /// that call it as a tool: such calls that write the same thing run one
    /// after another.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<String>,
    /// How much of a long conversation the model sees (`[history]` in an
    /// agent file); by default the last 10 turns in full and a summary of
    /// the rest ([`HistoryPolicy::default`]).
    #[serde(default, skip_serializing_if = "HistoryPolicy::is_default")]
    pub history: HistoryPolicy,
    /// MCP resources put into the model's context at the start of each run,
    /// as `server:uri` (e.g. `docs:file:///handbook.md`): the runtime reads
    /// them and the run's start records their text, so a replay sees the
    /// same text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    /// What the agent is shown of what is remembered about the person
    /// (`[memory] recall = 5`): the runtime recalls the memories most
    /// relevant to the message and the run's start records them, like
    /// [`AgentSpec::resources`].
    #[serde(default, skip_serializing_if = "MemoryPolicy::is_off")]
    pub memory: MemoryPolicy,
    /// Checks on what comes in and goes out (`[guardrails]` in an agent
    /// file): the person's message, the model's replies, tool calls' arguments
    /// and results (see [`Guardrails`]).
    #[serde(default, skip_serializing_if = "Guardrails::is_empty")]
    pub guardrails: Guardrails,
}

impl AgentSpec {
    /// An agent with an id and nothing else.
    pub fn new(id: impl Into<AgentId>) -> Self {
        let id = id.into();
        Self {
            name: id.to_string(),
            id,
            category: None,
            description: String::new(),
            instructions: String::new(),
            starter_prompt: None,
            examples: Vec::new(),
            tools: Vec::new(),
            toolsets: Vec::new(),
            handoffs: Vec::new(),
            required_information: Vec::new(),
            policy: RunPolicy::default(),
            rules: None,
            model: None,
            temperature: None,
            first_tool: None,
            intents: Intents::default(),
            finish_on: Vec::new(),
            agent_tools: Vec::new(),
            multitask: None,
            read_only: false,
            writes: Vec::new(),
            history: HistoryPolicy::default(),
            resources: Vec::new(),
            memory: MemoryPolicy::default(),
            guardrails: Guardrails::default(),
        }
    }

    /// Adds a guardrail at `stage` (see [`AgentSpec::guardrails`]).
    pub fn guardrail(mut self, stage: GuardStage, guardrail: Guardrail) -> Self {
        self.guardrails.add(stage, guardrail);
        self
    }

    /// Shows the agent the `n` memories most relevant to each message (see [`AgentSpec::memory`]).
    pub fn recall(mut self, n: u32) -> Self {
        self.memory.recall = n;
        self
    }

    /// Gives the agent an MCP resource, `server:uri`, as context at the
    /// start of each run (see [`AgentSpec::resources`]).
    pub fn resource(mut self, reference: impl Into<String>) -> Self {
        self.resources.push(reference.into());
        self
    }

    /// Adds another agent as a tool of this one.
    pub fn agent_tool(mut self, tool: AgentTool) -> Self {
        self.agent_tools.push(tool);
        self
    }

    /// Makes the agent read-only (see [`AgentSpec::read_only`]).
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// Declares something this agent's work writes (see [`AgentSpec::writes`]).
    pub fn writes(mut self, resource: impl Into<String>) -> Self {
        self.writes.push(resource.into());
        self
    }

    /// Sets the display name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sets the free-form category (e.g. `travel`).
    pub fn category(mut self, category: impl Into<String>) -> Self {
        self.category = Some(category.into());
        self
    }

    /// Sets the friendly description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Sets the instructions.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = instructions.into();
        self
    }

    /// Sets the starter prompt.
    pub fn starter_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.starter_prompt = Some(prompt.into());
        self
    }

    /// Adds an example turn.
    pub fn example(mut self, user: impl Into<String>, agent: impl Into<String>) -> Self {
        self.examples.push(ExampleTurn {
            user: user.into(),
            agent: agent.into(),
        });
        self
    }

    /// Adds a tool by name.
    pub fn tool(mut self, name: impl Into<ToolId>) -> Self {
        self.tools.push(name.into());
        self
    }

    /// Adds every tool of a toolset.
    pub fn toolset(mut self, name: impl Into<String>) -> Self {
        self.toolsets.push(name.into());
        self
    }

    /// Allows a handoff to another agent.
    pub fn handoff(mut self, agent: impl Into<AgentId>) -> Self {
        self.handoffs.push(agent.into());
        self
    }

    /// Declares information the goal requires.
    pub fn requires_information(mut self, key: impl Into<String>) -> Self {
        self.required_information.push(key.into());
        self
    }

    /// Sets the caps and confirmation policy for this agent's runs.
    pub fn policy(mut self, policy: RunPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Sets the rules for the rules planner.
    pub fn rules(mut self, rules: Rules) -> Self {
        self.rules = Some(rules);
        self
    }

    /// Sets the model this agent uses (e.g. `openai:gpt-4o-mini`).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Makes the first model call of each run call `tool`.
    pub fn first_tool(mut self, tool: impl Into<ToolId>) -> Self {
        self.first_tool = Some(tool.into());
        self
    }

    /// Sets the intents the hub routes by.
    pub fn intents(mut self, intents: Intents) -> Self {
        self.intents = intents;
        self
    }

    /// What a message does that arrives while a run of this agent works.
    pub fn multitask(mut self, policy: crate::Multitask) -> Self {
        self.multitask = Some(policy);
        self
    }

    /// Declares that a successful call of `tool` completes the agent's goal.
    pub fn finish_on(mut self, tool: impl Into<ToolId>) -> Self {
        self.finish_on.push(tool.into());
        self
    }

    /// Sets how much of a long conversation the model sees.
    pub fn history(mut self, policy: HistoryPolicy) -> Self {
        self.history = policy;
        self
    }

    /// Sets the sampling temperature.
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }
}

/// How people ask for an agent (its row of the hub's intent table): the hub
/// scores each agent's intents against a message to decide where it goes.
///
/// A keyword or phrase counts when its words occur in the message as whole
/// words (a trailing `s` allowed); a pattern is a case-insensitive regular
/// expression; an example phrase counts by the share of its words the
/// message shares.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Intents {
    /// Words or short phrases, e.g. `flight`, `time off`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// Regular expressions (case-insensitive), e.g. `book.*flight`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<String>,
    /// Whole example requests, e.g. `I need to book time off`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
}

impl Intents {
    /// Intents with no keywords, patterns or examples.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether nothing is declared.
    pub fn is_empty(&self) -> bool {
        self.keywords.is_empty() && self.patterns.is_empty() && self.examples.is_empty()
    }

    /// Adds keywords or phrases.
    pub fn keywords<I, S>(mut self, words: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.keywords.extend(words.into_iter().map(Into::into));
        self
    }

    /// Adds a regular expression.
    pub fn pattern(mut self, pattern: impl Into<String>) -> Self {
        self.patterns.push(pattern.into());
        self
    }

    /// Adds an example request.
    pub fn example(mut self, text: impl Into<String>) -> Self {
        self.examples.push(text.into());
        self
    }
}

/// One example exchange for the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExampleTurn {
    /// What the person says.
    pub user: String,
    /// What the agent answers.
    pub agent: String,
}

/// Routes for the rules planner: keywords and regular expressions that map
/// a message to a tool call, a handoff or a fixed reply, with no model.
///
/// Placeholders in route arguments and answers are written `{name}`:
/// a route's regex named groups, `{message}` (the person's text), and in
/// answers `{tool}`, `{result}`, `{result.field}` and `{error}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rules {
    /// Routes, tried in order; the first that matches wins (unless `every_match`).
    #[serde(default)]
    pub routes: Vec<Route>,
    /// Every tool route that matches makes its call, in the order the
    /// matches occur in the message, all in one batch: how one statement
    /// with several parts ("had lunch with Sarah, remind me to call her")
    /// becomes several calls. The answer then joins each call's answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub every_match: bool,
    /// The answer after a tool succeeded (default: `{tool}: {result}` per result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The answer after the last tool call failed (default: `{tool} failed: {error}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_answer: Option<String>,
    /// What to say when no route matches (default: the agent's starter prompt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}

impl Rules {
    /// Rules with no routes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a route.
    pub fn route(mut self, route: Route) -> Self {
        self.routes.push(route);
        self
    }

    /// Sets the answer template.
    pub fn answer(mut self, template: impl Into<String>) -> Self {
        self.answer = Some(template.into());
        self
    }

    /// Sets the error answer template.
    pub fn error_answer(mut self, template: impl Into<String>) -> Self {
        self.error_answer = Some(template.into());
        self
    }

    /// Sets the fallback text.
    pub fn fallback(mut self, text: impl Into<String>) -> Self {
        self.fallback = Some(text.into());
        self
    }

    /// Makes every matching tool route call its tool (see [`Rules::every_match`]).
    pub fn every_match(mut self) -> Self {
        self.every_match = true;
        self
    }
}

/// One route: when the text matches, do the action.
///
/// A route matches when any keyword occurs in the text (case-insensitive)
/// and the pattern matches; set at least one of the two.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Route {
    /// Words that select the route.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// A regular expression; its named groups become placeholders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// The answer after this route's tool succeeded (the rules' `answer` otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// A second call after this route's tool succeeded (find the task, then
    /// change it), for tool routes only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub then: Option<Then>,
    /// What the route does when it matches: call a tool, hand off, or reply.
    #[serde(flatten)]
    pub action: RouteAction,
}

/// The second step of a tool route: a call whose arguments come from the
/// first call's result (`{result.field}`), the route's named groups and
/// `{message}`. It is made only when every placeholder in its arguments has
/// a value (a search that found no single match answers with its own
/// result instead), so a change that needs approval is shown to the person
/// already naming what the first call found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Then {
    /// The tool to call.
    pub tool: ToolId,
    /// Its arguments (string values may contain placeholders).
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// The answer when the person declines the second call, over the first
    /// call's result (e.g. "OK, I left it. Other matches: {result.others}").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declined: Option<String>,
}

impl Then {
    /// A second call to `tool` with `arguments` (a JSON object; strings may hold placeholders).
    pub fn new(tool: impl Into<ToolId>, arguments: Value) -> Self {
        Self {
            tool: tool.into(),
            arguments: match arguments {
                Value::Object(map) => map,
                _ => Map::new(),
            },
            declined: None,
        }
    }

    /// Sets the answer when the person declines the second call.
    pub fn declined(mut self, template: impl Into<String>) -> Self {
        self.declined = Some(template.into());
        self
    }
}

impl Route {
    /// A route to call `tool` with `arguments` (a JSON object; strings may hold placeholders).
    pub fn tool(tool: impl Into<ToolId>, arguments: Value) -> Self {
        let arguments = match arguments {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        Self {
            keywords: Vec::new(),
            pattern: None,
            answer: None,
            then: None,
            action: RouteAction::Tool {
                tool: tool.into(),
                arguments,
            },
        }
    }

    /// A route that hands the conversation to `agent`.
    pub fn handoff(agent: impl Into<AgentId>) -> Self {
        Self {
            keywords: Vec::new(),
            pattern: None,
            answer: None,
            then: None,
            action: RouteAction::Handoff {
                handoff: agent.into(),
                context: Map::new(),
            },
        }
    }

    /// A route that answers with fixed text.
    pub fn reply(text: impl Into<String>) -> Self {
        Self {
            keywords: Vec::new(),
            pattern: None,
            answer: None,
            then: None,
            action: RouteAction::Reply { reply: text.into() },
        }
    }

    /// Adds a key and value to the context a handoff route carries.
    pub fn context(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        if let RouteAction::Handoff { context, .. } = &mut self.action {
            context.insert(key.into(), value.into());
        }
        self
    }

    /// Sets the regular expression; its named groups become placeholders.
    pub fn pattern(mut self, pattern: impl Into<String>) -> Self {
        self.pattern = Some(pattern.into());
        self
    }

    /// Sets the second call made after this route's tool succeeded.
    pub fn then(mut self, then: Then) -> Self {
        self.then = Some(then);
        self
    }

    /// Sets the answer after this route's tool succeeded.
    pub fn answer(mut self, template: impl Into<String>) -> Self {
        self.answer = Some(template.into());
        self
    }

    /// Adds words that select the route.
    pub fn keywords<I, S>(mut self, words: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.keywords.extend(words.into_iter().map(Into::into));
        self
    }
}

/// What a matching route does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RouteAction {
    /// Call a tool.
    Tool {
        /// The tool to call.
        tool: ToolId,
        /// Its arguments (string values may contain placeholders).
        #[serde(default)]
        arguments: Map<String, Value>,
    },
    /// Hand the conversation to another agent.
    Handoff {
        /// The agent to hand the conversation to.
        handoff: AgentId,
        /// Information written to the blackboard the next agent sees (string
        /// values may contain placeholders).
        #[serde(default, skip_serializing_if = "Map::is_empty")]
        context: Map<String, Value>,
    },
    /// Answer with fixed text.
    Reply {
        /// The text (may contain placeholders).
        reply: String,
    },
}
