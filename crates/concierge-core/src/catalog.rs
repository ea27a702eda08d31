//! The catalog: agents and tools, resolved once.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use crate::agent::{AgentSpec, RouteAction};
use crate::error::write_list;
use crate::guardrail::{Guardrail, Guardrails};
use crate::handoff::{HANDOFF_PREFIX, handoff_def, is_handoff_tool};
use crate::hub::{HUB_AGENT, Mode, Router, change_goal_def, goal_complete_def, hub_spec, list_agents_def};
use crate::id::{AgentId, ToolId, check_name};
use crate::planner::{CompiledRules, Planner};
use crate::tool::{ToolDef, ToolSpec};

/// Agents and tools, with every name resolved.
///
/// Build it with [`Catalog::builder`]; an agent that names a tool, toolset
/// or handoff target that does not exist is an error listing what does.
#[derive(Clone, Default)]
pub struct Catalog {
    agents: BTreeMap<AgentId, ResolvedAgent>,
    tools: BTreeMap<ToolId, ToolSpec>,
    toolsets: BTreeMap<String, Vec<ToolId>>,
    planners: BTreeMap<AgentId, Arc<dyn Planner + Send + Sync>>,
    settings: HubSettings,
    hub: Option<AgentId>,
    router: Router,
}

/// How the catalog offers its agents: the hub's mode, intent detection and
/// fallback switches (`CONCIERGE_MODE`, `CONCIERGE_INTENT_DETECTION`,
/// `CONCIERGE_FALLBACK`, or `concierge.toml`).
#[derive(Clone, Debug, Default, PartialEq)]
struct HubSettings {
    mode: Mode,
    intent_detection: Option<bool>,
    fallback: Option<AgentId>,
    single_agent: Option<AgentId>,
}

impl fmt::Debug for Catalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Catalog")
            .field("agents", &self.agents.keys().collect::<Vec<_>>())
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .field("toolsets", &self.toolsets)
            .finish()
    }
}

/// An agent with its tools resolved.
#[derive(Clone, Debug)]
pub struct ResolvedAgent {
    /// The agent as declared.
    pub spec: AgentSpec,
    /// Its tools (own and from toolsets), deduplicated, in declaration order.
    pub tools: Vec<ToolId>,
    /// What the model sees: its tools, then one `transfer_to_<agent>` per handoff.
    pub defs: Arc<[ToolDef]>,
    pub(crate) rules: Option<CompiledRules>,
}

impl ResolvedAgent {
    /// Whether the agent may call `tool` (handoff tools excluded).
    pub fn has_tool(&self, tool: &ToolId) -> bool {
        self.tools.contains(tool)
    }

    /// The agent a `transfer_to_<agent>` tool name points to, if this agent may hand off to it.
    pub fn handoff_target(&self, tool: &str) -> Option<&AgentId> {
        let target = tool.strip_prefix(HANDOFF_PREFIX)?;
        self.spec.handoffs.iter().find(|a| a.as_str() == target)
    }

    /// Whether the agent has rules.
    pub fn has_rules(&self) -> bool {
        self.rules.is_some()
    }
}

impl Catalog {
    /// Starts an empty catalog builder.
    pub fn builder() -> CatalogBuilder {
        CatalogBuilder::default()
    }

    /// A builder holding everything in this catalog, to extend it (with discovered tools, say).
    pub fn to_builder(&self) -> CatalogBuilder {
        CatalogBuilder {
            agents: self.agents.values().map(|a| a.spec.clone()).collect(),
            tools: self.tools.values().cloned().collect(),
            toolsets: self.toolsets.clone(),
            planners: self.planners.clone(),
            settings: self.settings.clone(),
        }
        .without_hub(self.hub.as_ref())
    }

    /// The built-in hub agent, when the catalog has one (multi mode, two or more agents).
    pub fn hub(&self) -> Option<&AgentId> {
        self.hub.as_ref()
    }

    /// `agent`'s output guardrails (none for an agent the catalog lacks).
    pub(crate) fn output_guardrails(&self, agent: &AgentId) -> Vec<Guardrail> {
        self.agent(agent)
            .map(|a| a.spec.guardrails.output.clone())
            .unwrap_or_default()
    }

    /// `agent`'s tool guardrails: its `tool_input` and `tool_output` checks.
    pub(crate) fn tool_guardrails(&self, agent: &AgentId) -> Guardrails {
        self.agent(agent).map_or_else(Guardrails::default, |a| Guardrails {
            tool_input: a.spec.guardrails.tool_input.clone(),
            tool_output: a.spec.guardrails.tool_output.clone(),
            ..Guardrails::default()
        })
    }

    /// Whether `agent` is the built-in hub.
    pub fn is_hub(&self, agent: &AgentId) -> bool {
        self.hub.as_ref() == Some(agent)
    }

    /// The mode the catalog was built in.
    pub fn mode(&self) -> Mode {
        self.settings.mode
    }

    /// The agent that takes greetings and small talk, if configured.
    pub fn fallback(&self) -> Option<&AgentId> {
        self.router.fallback.as_ref()
    }

    /// Whether the hub scores intents (off: it always shows the catalogue).
    pub fn intent_detection(&self) -> bool {
        self.router.intent_detection
    }

    /// The agent a new session starts with when the caller names none: the
    /// hub in multi mode; in single mode the configured agent, else the only
    /// one. `None` when that is ambiguous.
    pub fn default_agent(&self) -> Option<AgentId> {
        if let Some(hub) = &self.hub {
            return Some(hub.clone());
        }
        if let Some(single) = &self.settings.single_agent {
            return Some(single.clone());
        }
        match self.router.agent_ids().as_slice() {
            [one] => Some(one.clone()),
            _ => None,
        }
    }

    /// The agents the hub offers, in declaration order (the hub excluded).
    pub fn offered_agents(&self) -> Vec<&AgentSpec> {
        self.router
            .agent_ids()
            .iter()
            .filter_map(|id| self.agents.get(id))
            .map(|a| &a.spec)
            .collect()
    }

    /// The goals a person can choose from, as the hub offers them, in
    /// declaration order: an agent called only as a tool of another is
    /// reached through that one and is not a goal of its own. When no agent
    /// is offered (every one is called by another), every agent, by id.
    pub fn goals(&self) -> Vec<&AgentSpec> {
        let offered = self.offered_agents();
        if offered.is_empty() {
            return self.agents().map(|a| &a.spec).collect();
        }
        offered
    }

    /// The hub's routing tables.
    pub(crate) fn router(&self) -> &Router {
        &self.router
    }

    /// The agent with this id, if the catalog has it.
    pub fn agent(&self, id: &AgentId) -> Option<&ResolvedAgent> {
        self.agents.get(id)
    }

    /// Every agent, by id.
    pub fn agents(&self) -> impl Iterator<Item = &ResolvedAgent> {
        self.agents.values()
    }

    /// Every agent id, in sorted order.
    pub fn agent_ids(&self) -> Vec<AgentId> {
        self.agents.keys().cloned().collect()
    }

    /// The tool with this name, if the catalog has it.
    pub fn tool(&self, id: &ToolId) -> Option<&ToolSpec> {
        self.tools.get(id)
    }

    /// Every tool, sorted by name.
    pub fn tools(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.values()
    }

    /// The tools whose category is `category` (surrounding spaces ignored,
    /// matched case-insensitively), sorted by name.
    pub fn tools_in_category(&self, category: &str) -> Vec<&ToolSpec> {
        let wanted = category.trim();
        self.tools()
            .filter(|t| t.category.as_deref().is_some_and(|c| c.eq_ignore_ascii_case(wanted)))
            .collect()
    }

    /// Every tool category, lowercased, with how many tools each has.
    pub fn tool_categories(&self) -> BTreeMap<String, usize> {
        let mut categories = BTreeMap::new();
        for tool in self.tools() {
            if let Some(category) = &tool.category {
                *categories.entry(category.to_lowercase()).or_insert(0) += 1;
            }
        }
        categories
    }

    /// Toolset names and their tools.
    pub fn toolsets(&self) -> &BTreeMap<String, Vec<ToolId>> {
        &self.toolsets
    }

    /// The tools of `agent` (empty if the agent does not exist).
    pub fn tools_for(&self, agent: &AgentId) -> Vec<&ToolSpec> {
        self.agents
            .get(agent)
            .map(|a| a.tools.iter().filter_map(|t| self.tools.get(t)).collect())
            .unwrap_or_default()
    }

    /// A custom planner registered for `agent`.
    pub fn custom_planner(&self, agent: &AgentId) -> Option<&Arc<dyn Planner + Send + Sync>> {
        self.planners.get(agent)
    }
}

/// Collects agents and tools, then resolves them.
#[derive(Clone, Default)]
pub struct CatalogBuilder {
    agents: Vec<AgentSpec>,
    tools: Vec<ToolSpec>,
    toolsets: BTreeMap<String, Vec<ToolId>>,
    planners: BTreeMap<AgentId, Arc<dyn Planner + Send + Sync>>,
    settings: HubSettings,
}

impl CatalogBuilder {
    /// Multi mode (the default: a hub when there are two or more agents) or
    /// single mode (one agent, no hub).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.settings.mode = mode;
        self
    }

    /// The agent single mode uses (and a new session starts with).
    pub fn single_agent(mut self, agent: impl Into<AgentId>) -> Self {
        self.settings.single_agent = Some(agent.into());
        self
    }

    /// Turns the hub's intent detection on (the default) or off (the hub
    /// then always shows the catalogue).
    pub fn intent_detection(mut self, on: bool) -> Self {
        self.settings.intent_detection = Some(on);
        self
    }

    /// The agent that takes greetings and small talk instead of the catalogue.
    pub fn fallback(mut self, agent: impl Into<AgentId>) -> Self {
        self.settings.fallback = Some(agent.into());
        self
    }

    fn without_hub(mut self, hub: Option<&AgentId>) -> Self {
        if let Some(hub) = hub {
            self.agents.retain(|a| &a.id != hub);
        }
        self
    }

    /// Adds a tool (in no toolset).
    pub fn tool(mut self, spec: ToolSpec) -> Self {
        self.tools.push(spec);
        self
    }

    /// Adds a toolset and its tools.
    pub fn toolset(mut self, name: impl Into<String>, specs: impl IntoIterator<Item = ToolSpec>) -> Self {
        let name = name.into();
        let entry = self.toolsets.entry(name).or_default();
        for spec in specs {
            entry.push(spec.name.clone());
            self.tools.push(spec);
        }
        self
    }

    /// Replaces a toolset's tools (declaring it if new): how tools discovered
    /// at run time (an MCP server's) enter a catalog.
    pub fn set_toolset(mut self, name: impl Into<String>, specs: impl IntoIterator<Item = ToolSpec>) -> Self {
        let name = name.into();
        if let Some(old) = self.toolsets.remove(&name) {
            self.tools.retain(|t| !old.contains(&t.name));
        }
        self = self.toolset(name, specs);
        self
    }

    /// Adds an agent; [`build`](Self::build) checks the names it uses.
    pub fn agent(mut self, spec: AgentSpec) -> Self {
        self.agents.push(spec);
        self
    }

    /// Registers a custom planner for an agent (used with [`PlannerMode::Custom`](crate::PlannerMode::Custom)).
    pub fn planner(mut self, agent: impl Into<AgentId>, planner: Arc<dyn Planner + Send + Sync>) -> Self {
        self.planners.insert(agent.into(), planner);
        self
    }

    /// Resolves every name.
    pub fn build(mut self) -> Result<Catalog, CatalogError> {
        // An agent without a display name is shown by its id.
        for agent in &mut self.agents {
            if agent.name.trim().is_empty() {
                agent.name = agent.id.to_string();
            }
        }
        let mut tools = BTreeMap::new();
        for spec in self.tools {
            check_name("tool", spec.name.as_str()).map_err(CatalogError::InvalidName)?;
            if is_handoff_tool(spec.name.as_str()) {
                return Err(CatalogError::ReservedToolName { tool: spec.name });
            }
            if !spec.input_schema.is_object() {
                return Err(CatalogError::InvalidSchema {
                    tool: spec.name,
                    reason: "the input schema must be a JSON object".into(),
                });
            }
            if let Some(previous) = tools.insert(spec.name.clone(), spec) {
                return Err(CatalogError::DuplicateTool { tool: previous.name });
            }
        }
        let agent_ids: BTreeSet<AgentId> = self.agents.iter().map(|a| a.id.clone()).collect();
        // Agents that others call as tools are reached through them: the hub
        // does not offer them.
        let called: BTreeSet<&AgentId> = self
            .agents
            .iter()
            .flat_map(|a| a.agent_tools.iter().map(|t| &t.agent))
            .collect();
        let offered = self.agents.iter().filter(|a| !called.contains(&a.id)).count();
        let with_hub = self.settings.mode == Mode::Multi && offered >= 2;
        let hub_id = AgentId::from(HUB_AGENT);
        if with_hub && agent_ids.contains(&hub_id) {
            return Err(CatalogError::InvalidRule {
                agent: hub_id,
                reason: "the id \"hub\" is reserved for the built-in hub in multi mode; rename the agent".into(),
            });
        }
        for named in [&self.settings.fallback, &self.settings.single_agent]
            .into_iter()
            .flatten()
        {
            if !agent_ids.contains(named) {
                return Err(CatalogError::UnknownAgent {
                    agent: named.clone(),
                    available: agent_ids.iter().cloned().collect(),
                });
            }
        }
        // Agents called as tools: each declaration becomes a tool.
        let mut with_agent_tools = Vec::with_capacity(self.agents.len());
        for spec in &self.agents {
            spec.guardrails.validate().map_err(|reason| CatalogError::InvalidRule {
                agent: spec.id.clone(),
                reason,
            })?;
            let mut spec = spec.clone();
            for declared in &spec.agent_tools {
                let target = self.agents.iter().find(|a| a.id == declared.agent);
                if target.is_none() {
                    return Err(CatalogError::UnknownAgent {
                        agent: declared.agent.clone(),
                        available: agent_ids.iter().cloned().collect(),
                    });
                }
                if declared.agent == spec.id {
                    return Err(CatalogError::InvalidRule {
                        agent: spec.id.clone(),
                        reason: "an agent cannot call itself as a tool".into(),
                    });
                }
                let tool = declared.spec(target);
                check_name("tool", tool.name.as_str()).map_err(CatalogError::InvalidName)?;
                if let Some(existing) = tools.get(&tool.name) {
                    if existing != &tool {
                        return Err(CatalogError::DuplicateTool { tool: tool.name });
                    }
                }
                if !spec.tools.contains(&tool.name) {
                    spec.tools.push(tool.name.clone());
                }
                tools.insert(tool.name.clone(), tool);
            }
            with_agent_tools.push(spec);
        }
        let mut agents = BTreeMap::new();
        for spec in &with_agent_tools {
            check_name("agent", spec.id.as_str()).map_err(CatalogError::InvalidName)?;
            if agents.contains_key(&spec.id) {
                return Err(CatalogError::DuplicateAgent { agent: spec.id.clone() });
            }
            let resolved = resolve_agent(spec, &tools, &self.toolsets, &agent_ids, &self.agents)?;
            agents.insert(spec.id.clone(), resolved);
        }
        for agent in self.planners.keys() {
            if !agents.contains_key(agent) {
                return Err(CatalogError::UnknownAgent {
                    agent: agent.clone(),
                    available: agent_ids.iter().cloned().collect(),
                });
            }
        }
        let specs: Vec<&AgentSpec> = self.agents.iter().filter(|a| !called.contains(&a.id)).collect();
        let router = Router::new(
            &specs,
            self.settings.intent_detection.unwrap_or(true),
            self.settings.fallback.clone(),
        )
        .map_err(|(agent, reason)| CatalogError::InvalidRule { agent, reason })?;
        let hub = if with_hub {
            for resolved in agents.values_mut() {
                let mut defs = resolved.defs.to_vec();
                defs.push(list_agents_def());
                defs.push(goal_complete_def());
                resolved.defs = defs.into();
            }
            let spec = hub_spec(&specs, self.settings.fallback.as_ref());
            agents.insert(
                hub_id.clone(),
                ResolvedAgent {
                    spec,
                    tools: Vec::new(),
                    defs: vec![change_goal_def(&router.agent_ids())].into(),
                    rules: None,
                },
            );
            Some(hub_id)
        } else {
            None
        };
        Ok(Catalog {
            agents,
            tools,
            toolsets: self.toolsets,
            planners: self.planners,
            settings: self.settings,
            hub,
            router,
        })
    }
}

fn resolve_agent(
    spec: &AgentSpec,
    tools: &BTreeMap<ToolId, ToolSpec>,
    toolsets: &BTreeMap<String, Vec<ToolId>>,
    agent_ids: &BTreeSet<AgentId>,
    all_agents: &[AgentSpec],
) -> Result<ResolvedAgent, CatalogError> {
    let mut resolved: Vec<ToolId> = Vec::new();
    for name in &spec.tools {
        let Some(tool) = tools.get(name) else {
            return Err(CatalogError::UnknownTool {
                agent: spec.id.clone(),
                tool: name.clone(),
                available: tools.keys().cloned().collect(),
            });
        };
        if spec.read_only && !tool.annotations.read_only {
            return Err(CatalogError::NotReadOnly {
                agent: spec.id.clone(),
                tool: name.clone(),
            });
        }
        if !resolved.contains(name) {
            resolved.push(name.clone());
        }
    }
    for set in &spec.toolsets {
        let Some(members) = toolsets.get(set) else {
            return Err(CatalogError::UnknownToolset {
                agent: spec.id.clone(),
                toolset: set.clone(),
                available: toolsets.keys().cloned().collect(),
            });
        };
        for name in members {
            // A read-only agent gets only the toolset's read-only tools (and
            // its runs refuse any other, should one be called).
            let left_out = spec.read_only && tools.get(name).is_some_and(|t| !t.annotations.read_only);
            if !left_out && !resolved.contains(name) {
                resolved.push(name.clone());
            }
        }
    }
    let mut defs: Vec<ToolDef> = resolved
        .iter()
        .filter_map(|t| tools.get(t))
        .map(ToolSpec::to_def)
        .collect();
    for target in &spec.handoffs {
        if !agent_ids.contains(target) {
            return Err(CatalogError::UnknownHandoff {
                agent: spec.id.clone(),
                target: target.clone(),
                available: agent_ids.iter().cloned().collect(),
            });
        }
        if target == &spec.id {
            return Err(CatalogError::InvalidRule {
                agent: spec.id.clone(),
                reason: "an agent cannot hand off to itself".into(),
            });
        }
        let other = all_agents.iter().find(|a| &a.id == target);
        defs.push(handoff_def(target, other));
    }
    // A toolset may be filled at run time (an MCP server's): names it could
    // supply are not errors for an agent that has toolsets.
    let may_come_later = |tool: &ToolId| !spec.toolsets.is_empty() && !tools.contains_key(tool);
    if let Some(first) = &spec.first_tool {
        if !resolved.contains(first) && !may_come_later(first) {
            return Err(CatalogError::InvalidRule {
                agent: spec.id.clone(),
                reason: format!("first_tool {first} is not one of the agent's tools"),
            });
        }
    }
    for tool in &spec.finish_on {
        if !resolved.contains(tool) && !may_come_later(tool) {
            return Err(CatalogError::InvalidRule {
                agent: spec.id.clone(),
                reason: format!("finish_on names {tool}, which is not one of the agent's tools"),
            });
        }
    }
    let rules = match &spec.rules {
        Some(rules) => {
            for route in &rules.routes {
                match &route.action {
                    RouteAction::Tool { tool, .. } if !resolved.contains(tool) && !may_come_later(tool) => {
                        return Err(CatalogError::InvalidRule {
                            agent: spec.id.clone(),
                            reason: format!("a route calls {tool}, which is not one of the agent's tools"),
                        });
                    }
                    RouteAction::Handoff { handoff, .. } if !spec.handoffs.contains(handoff) => {
                        return Err(CatalogError::InvalidRule {
                            agent: spec.id.clone(),
                            reason: format!("a route hands off to {handoff}, which is not in the agent's handoffs"),
                        });
                    }
                    _ => {}
                }
            }
            Some(
                CompiledRules::compile(rules).map_err(|reason| CatalogError::InvalidRule {
                    agent: spec.id.clone(),
                    reason,
                })?,
            )
        }
        None => None,
    };
    Ok(ResolvedAgent {
        spec: spec.clone(),
        tools: resolved,
        defs: defs.into(),
        rules,
    })
}

/// A catalog that could not be built, with what exists so the fix is obvious.
#[derive(Clone, Debug, PartialEq)]
pub enum CatalogError {
    /// Two tools share a name.
    DuplicateTool {
        /// The name used twice.
        tool: ToolId,
    },
    /// Two agents share an id.
    DuplicateAgent {
        /// The id used twice.
        agent: AgentId,
    },
    /// A name breaks the grammar.
    InvalidName(String),
    /// A tool name uses the reserved `transfer_to_` prefix.
    ReservedToolName {
        /// The offending tool name.
        tool: ToolId,
    },
    /// A tool's schema is unusable.
    InvalidSchema {
        /// The tool whose schema is unusable.
        tool: ToolId,
        /// What is wrong with the schema.
        reason: String,
    },
    /// An agent names a tool that does not exist.
    UnknownTool {
        /// The agent that names the tool.
        agent: AgentId,
        /// The missing tool.
        tool: ToolId,
        /// The tools that exist.
        available: Vec<ToolId>,
    },
    /// An agent names a toolset that does not exist.
    UnknownToolset {
        /// The agent that names the toolset.
        agent: AgentId,
        /// The missing toolset.
        toolset: String,
        /// The toolsets that exist.
        available: Vec<String>,
    },
    /// An agent hands off to an agent that does not exist.
    UnknownHandoff {
        /// The agent with the handoff.
        agent: AgentId,
        /// The missing target.
        target: AgentId,
        /// The agents that exist.
        available: Vec<AgentId>,
    },
    /// Something refers to an agent that does not exist.
    UnknownAgent {
        /// The missing agent.
        agent: AgentId,
        /// The agents that exist.
        available: Vec<AgentId>,
    },
    /// A read-only agent names a tool that may change things.
    NotReadOnly {
        /// The read-only agent.
        agent: AgentId,
        /// The tool that is not read-only.
        tool: ToolId,
    },
    /// An agent's rules are unusable.
    InvalidRule {
        /// The agent whose rules are unusable.
        agent: AgentId,
        /// What is wrong with the rules (a bad regular expression, say).
        reason: String,
    },
}

impl fmt::Display for CatalogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CatalogError::DuplicateTool { tool } => write!(f, "two tools are named {tool}; rename one"),
            CatalogError::DuplicateAgent { agent } => write!(f, "two agents have the id {agent}; rename one"),
            CatalogError::InvalidName(message) => f.write_str(message),
            CatalogError::ReservedToolName { tool } => {
                write!(f, "tool {tool} uses the reserved prefix {HANDOFF_PREFIX:?}; rename it")
            }
            CatalogError::InvalidSchema { tool, reason } => write!(f, "tool {tool}: {reason}"),
            CatalogError::UnknownTool { agent, tool, available } => {
                write!(f, "agent {agent} uses tool \"{tool}\", which does not exist; tools: ")?;
                write_list(f, available)
            }
            CatalogError::UnknownToolset {
                agent,
                toolset,
                available,
            } => {
                write!(
                    f,
                    "agent {agent} uses toolset {toolset:?}, which does not exist; toolsets: "
                )?;
                write_list(f, available)
            }
            CatalogError::UnknownHandoff {
                agent,
                target,
                available,
            } => {
                write!(
                    f,
                    "agent {agent} hands off to \"{target}\", which does not exist; agents: "
                )?;
                write_list(f, available)
            }
            CatalogError::UnknownAgent { agent, available } => {
                write!(f, "agent \"{agent}\" does not exist; agents: ")?;
                write_list(f, available)
            }
            CatalogError::InvalidRule { agent, reason } => write!(f, "agent {agent}: {reason}"),
            CatalogError::NotReadOnly { agent, tool } => write!(
                f,
                "agent {agent} is read-only, but its tool {tool} may change things; remove the tool, mark it read-only, or drop read_only from the agent"
            ),
        }
    }
}

impl std::error::Error for CatalogError {}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::{Route, Rules};

    fn spec(name: &str) -> ToolSpec {
        ToolSpec::new(name, "a tool", json!({"type": "object"}))
    }

    #[test]
    fn unknown_tool_lists_what_exists() {
        let err = Catalog::builder()
            .tool(spec("search_flights"))
            .tool(spec("book_flight"))
            .agent(AgentSpec::new("travel").tool("search_fligths"))
            .build()
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("search_fligths"), "{text}");
        assert!(text.contains("book_flight, search_flights"), "{text}");
    }

    #[test]
    fn unknown_handoff_and_toolset_are_errors() {
        let err = Catalog::builder()
            .agent(AgentSpec::new("a").handoff("b"))
            .build()
            .unwrap_err();
        assert!(matches!(err, CatalogError::UnknownHandoff { .. }));
        let err = Catalog::builder()
            .agent(AgentSpec::new("a").toolset("mcp"))
            .build()
            .unwrap_err();
        assert!(matches!(err, CatalogError::UnknownToolset { .. }));
    }

    #[test]
    fn toolsets_and_handoffs_resolve_into_model_definitions() {
        let catalog = Catalog::builder()
            .toolset("math", [spec("add"), spec("sub")])
            .tool(spec("other"))
            .agent(AgentSpec::new("calc").toolset("math").tool("add").handoff("help"))
            .agent(AgentSpec::new("help").description("answers questions"))
            .build()
            .unwrap();
        let calc = catalog.agent(&"calc".into()).unwrap();
        assert_eq!(calc.tools, vec![ToolId::from("add"), ToolId::from("sub")]);
        let names: Vec<&str> = calc.defs.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(
            names,
            ["add", "sub", "transfer_to_help", "list_agents", "goal_complete"]
        );
        let hub = catalog.agent(&"hub".into()).unwrap();
        let names: Vec<&str> = hub.defs.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(
            names,
            ["change_goal"],
            "the hub's model moves the conversation with change_goal"
        );
        assert_eq!(catalog.default_agent(), Some("hub".into()));
        let single = catalog.to_builder().mode(crate::Mode::Single).build().unwrap();
        assert!(single.hub().is_none());
        let names: Vec<&str> = single
            .agent(&"calc".into())
            .unwrap()
            .defs
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        assert_eq!(
            names,
            ["add", "sub", "transfer_to_help"],
            "single mode offers neither list_agents nor change_goal"
        );
        assert_eq!(calc.handoff_target("transfer_to_help"), Some(&AgentId::from("help")));
        assert_eq!(calc.handoff_target("transfer_to_calc"), None);
        assert_eq!(catalog.tools_for(&"calc".into()).len(), 2);
    }

    #[test]
    fn a_toolset_can_be_declared_empty_and_filled_later() {
        let catalog = Catalog::builder()
            .toolset("mcp", [])
            .agent(AgentSpec::new("a").toolset("mcp"))
            .build()
            .unwrap();
        assert!(catalog.tools_for(&"a".into()).is_empty());
        let catalog = catalog
            .to_builder()
            .set_toolset("mcp", [spec("echo"), spec("sum")])
            .build()
            .unwrap();
        assert_eq!(catalog.tools_for(&"a".into()).len(), 2);
        let catalog = catalog.to_builder().set_toolset("mcp", [spec("echo")]).build().unwrap();
        let names: Vec<&str> = catalog.tools().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["echo"], "tools that left the toolset leave the catalog");
    }

    #[test]
    fn goals_and_categories() {
        let catalog = Catalog::builder()
            .tool(spec("zeta").category("Travel"))
            .tool(spec("alpha").category("travel"))
            .tool(spec("pay").category("Banking"))
            .tool(spec("plain"))
            .agent(AgentSpec::new("travel"))
            .agent(AgentSpec::new("bank").agent_tool(crate::AgentTool::new("notes")))
            .agent(AgentSpec::new("notes"))
            .build()
            .unwrap();
        let goals: Vec<&str> = catalog.goals().iter().map(|a| a.id.as_str()).collect();
        assert_eq!(
            goals,
            ["travel", "bank"],
            "an agent called as a tool is no goal of its own"
        );
        let travel: Vec<&str> = catalog
            .tools_in_category(" TRAVEL ")
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(travel, ["alpha", "zeta"]);
        assert!(catalog.tools_in_category("none").is_empty());
        let categories = BTreeMap::from([("banking".to_string(), 1), ("travel".to_string(), 2)]);
        assert_eq!(catalog.tool_categories(), categories);
        let alone = Catalog::builder().agent(AgentSpec::new("solo")).build().unwrap();
        let goals: Vec<&str> = alone.goals().iter().map(|a| a.id.as_str()).collect();
        assert_eq!(goals, ["solo"]);
    }

    #[test]
    fn bad_names_rules_and_duplicates_are_errors() {
        assert!(matches!(
            Catalog::builder().agent(AgentSpec::new("has space")).build(),
            Err(CatalogError::InvalidName(_))
        ));
        assert!(matches!(
            Catalog::builder().tool(spec("transfer_to_x")).build(),
            Err(CatalogError::ReservedToolName { .. })
        ));
        assert!(matches!(
            Catalog::builder().tool(spec("a")).tool(spec("a")).build(),
            Err(CatalogError::DuplicateTool { .. })
        ));
        let bad_regex = Rules::new().route(Route::reply("x").pattern("(unclosed"));
        assert!(matches!(
            Catalog::builder().agent(AgentSpec::new("a").rules(bad_regex)).build(),
            Err(CatalogError::InvalidRule { .. })
        ));
        let foreign_tool = Rules::new().route(Route::tool("nope", json!({})).keywords(["x"]));
        assert!(matches!(
            Catalog::builder()
                .agent(AgentSpec::new("a").rules(foreign_tool))
                .build(),
            Err(CatalogError::InvalidRule { .. })
        ));
    }
}
