//! `[a2a_agents.NAME]`: how to reach a remote A2A agent.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The longest a remote agent's task may take by default (its questions to
/// the person not counted).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// A remote agent reached over A2A, as configured in `concierge.toml`:
/// agents that name it in `toolsets` may call it like a tool.
///
/// ```toml
/// [a2a_agents.booking]
/// url = "https://booking.example.com/a2a"   # where /.well-known/agent-card.json is
/// token_env = "BOOKING_A2A_TOKEN"            # a bearer token, from the environment
/// description = "Books trains and hotels."   # what our agents' models are told
/// timeout_secs = 300                         # how long a task may take (questions to the person not counted)
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct A2aAgentConfig {
    /// The agent's base URL: its card is at `{url}/.well-known/agent-card.json`
    /// (or the card's own URL, ending in `.json`).
    pub url: String,
    /// The environment variable holding a bearer token for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_env: Option<String>,
    /// More HTTP headers on every request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// What the calling agent's model is told the remote agent does (say
    /// it: without it the model only knows the agent's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// How long one task may take, in seconds (default 300); the person's
    /// time answering its questions does not count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// Ask the person before every message to the agent, with this question
    /// (`{message}` is the message). By default the remote agent asks its
    /// own questions (`input-required`) and none is asked first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<String>,
}

impl A2aAgentConfig {
    /// An agent at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            ..Self::default()
        }
    }

    /// Reads the bearer token from `variable`.
    pub fn token_env(mut self, variable: impl Into<String>) -> Self {
        self.token_env = Some(variable.into());
        self
    }

    /// Tells the calling agent's model what the remote agent does.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Bounds one task's time.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout_secs = Some(timeout.as_secs().max(1));
        self
    }

    /// How long one task may take.
    pub fn task_timeout(&self) -> Duration {
        self.timeout_secs.map_or(DEFAULT_TIMEOUT, Duration::from_secs)
    }

    /// Where the agent's card is.
    pub fn card_url(&self) -> String {
        let url = self.url.trim_end_matches('/');
        if url.ends_with(".json") {
            url.to_string()
        } else {
            format!("{url}/.well-known/agent-card.json")
        }
    }

    /// The headers every request carries: the configured ones and, when
    /// `token_env` is set, `Authorization: Bearer …`. Fails, naming the
    /// variable, when it is not set.
    pub fn request_headers(&self, name: &str) -> Result<BTreeMap<String, String>> {
        let mut headers = self.headers.clone();
        if let Some(variable) = &self.token_env {
            let token = std::env::var(variable).map_err(|_| {
                Error::InvalidConfig(format!(
                    "the A2A agent {name} takes its token from {variable}, which is not set: set it, or remove token_env from [a2a_agents.{name}]"
                ))
            })?;
            headers.insert("Authorization".into(), format!("Bearer {}", token.trim()));
        }
        Ok(headers)
    }

    /// Checks the settings, naming what is wrong.
    pub fn check(&self, name: &str) -> Result<()> {
        let url = self.url.trim();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(Error::InvalidConfig(format!(
                "[a2a_agents.{name}] url must be an http:// or https:// address, not {url:?}"
            )));
        }
        concierge_core::check_name("an A2A agent", name).map_err(Error::InvalidConfig)?;
        Ok(())
    }
}
