//! Agent cards: the assistant's at `/.well-known/agent-card.json` (the
//! default agent — the hub when there is one — with every goal of the
//! catalogue as a skill), and one per agent at
//! `/a2a/agents/{agent}/.well-known/agent-card.json`. Each names its own
//! JSON-RPC and HTTP+JSON endpoints, on the request's `Host` (or the
//! configured public URL).

use std::collections::HashMap;

use a2a::{
    AgentCapabilities, AgentCard, AgentInterface, AgentProvider, AgentSkill, HttpAuthSecurityScheme, SecurityScheme,
};
use concierge::AgentSpec;
use concierge::core::Catalog;

/// The protocol version this server speaks.
pub const PROTOCOL_VERSION: &str = "1.0";

/// The name of the bearer security scheme the cards declare.
const BEARER: &str = "bearer";

/// Which agent a card (and its endpoints) is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Door {
    /// The assistant: the runtime's default agent (the hub, if there is one).
    Assistant,
    /// One agent of the catalogue.
    Agent(String),
}

impl Door {
    /// Where the door's endpoints are, under the server's base URL.
    pub fn base_path(&self) -> String {
        match self {
            Door::Assistant => "/a2a".to_string(),
            Door::Agent(agent) => format!("/a2a/agents/{agent}"),
        }
    }
}

/// The card of `door` on a server reached at `base` (`http://host:port`);
/// `secured` when the server asks for bearer tokens. `None` for an agent
/// the catalogue does not have.
pub fn card(catalog: &Catalog, door: &Door, base: &str, secured: bool) -> Option<AgentCard> {
    let path = format!("{}{}", base.trim_end_matches('/'), door.base_path());
    let interfaces = vec![
        AgentInterface {
            url: format!("{path}/jsonrpc"),
            protocol_binding: a2a::TRANSPORT_PROTOCOL_JSONRPC.to_string(),
            protocol_version: PROTOCOL_VERSION.to_string(),
            tenant: None,
        },
        AgentInterface {
            url: format!("{path}/rest"),
            protocol_binding: a2a::TRANSPORT_PROTOCOL_HTTP_JSON.to_string(),
            protocol_version: PROTOCOL_VERSION.to_string(),
            tenant: None,
        },
    ];
    let (name, description, skills) = match door {
        Door::Assistant => {
            let skills: Vec<AgentSkill> = catalog.goals().into_iter().map(skill).collect();
            let description = match catalog.default_agent().and_then(|a| catalog.agent(&a)) {
                Some(agent) if !agent.spec.description.is_empty() => agent.spec.description.clone(),
                _ => "An assistant that takes you to the right agent for what you want to do.".to_string(),
            };
            ("concierge".to_string(), description, skills)
        }
        Door::Agent(id) => {
            let agent = catalog.agent(&id.as_str().into())?;
            let spec = &agent.spec;
            let name = if spec.name.is_empty() {
                spec.id.to_string()
            } else {
                spec.name.clone()
            };
            (name, describe(spec), vec![skill(spec)])
        }
    };
    let (security_schemes, security_requirements) = if secured {
        let scheme = SecurityScheme::HttpAuth(HttpAuthSecurityScheme {
            scheme: "Bearer".to_string(),
            description: Some("an API token of this server (`concierge token new`)".to_string()),
            bearer_format: None,
        });
        let requirement = HashMap::from([(BEARER.to_string(), Vec::new())]);
        (
            Some(HashMap::from([(BEARER.to_string(), scheme)])),
            Some(vec![requirement]),
        )
    } else {
        (None, None)
    };
    Some(AgentCard {
        name,
        description,
        version: env!("CARGO_PKG_VERSION").to_string(),
        supported_interfaces: interfaces,
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(true),
            extensions: None,
            extended_agent_card: Some(false),
        },
        default_input_modes: vec!["text/plain".to_string(), "application/json".to_string()],
        default_output_modes: vec!["text/plain".to_string(), "application/json".to_string()],
        skills,
        provider: Some(AgentProvider {
            organization: "concierge".to_string(),
            url: base.trim_end_matches('/').to_string(),
        }),
        documentation_url: None,
        icon_url: None,
        security_schemes,
        security_requirements,
        signatures: None,
    })
}

/// An agent as a skill: its id, name, description, category and starter prompt.
fn skill(spec: &AgentSpec) -> AgentSkill {
    let mut tags = vec![spec.id.to_string()];
    if let Some(category) = &spec.category {
        tags.push(category.clone());
    }
    AgentSkill {
        id: spec.id.to_string(),
        name: if spec.name.is_empty() {
            spec.id.to_string()
        } else {
            spec.name.clone()
        },
        description: describe(spec),
        tags,
        examples: spec.starter_prompt.clone().map(|p| vec![p]),
        input_modes: None,
        output_modes: None,
        security_requirements: None,
    }
}

/// An agent's description, or a sentence naming it when it has none.
fn describe(spec: &AgentSpec) -> String {
    if spec.description.trim().is_empty() {
        format!("The {} agent.", spec.id)
    } else {
        spec.description.clone()
    }
}
