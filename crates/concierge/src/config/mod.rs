//! File configuration (`concierge.toml`) and agent files (`agents/*.toml`).
//!
//! ```toml
//! engine = "embedded"                    # embedded (SQLite, the default) or temporal; env CONCIERGE_ENGINE
//! db = "concierge.db"                     # the embedded engine's database
//! model = "openai:gpt-4o-mini"            # the default model (provider:name)
//! base_url = "http://127.0.0.1:8080/v1"   # the default model's provider base URL
//! agents_dir = "agents"                   # one agent per file (an agent may name its own model)
//! log_prompts = false                     # prompt text in traces (off by default)
//! mode = "multi"                          # multi (the hub finds the agent) or single; env CONCIERGE_MODE
//! agent = "calculator"                    # the agent single mode uses; env CONCIERGE_AGENT
//! intent_detection = true                 # the hub routes by intents (off: it shows the catalogue); env CONCIERGE_INTENT_DETECTION=on|off
//! fallback = "general"                    # the agent for greetings and small talk; env CONCIERGE_FALLBACK
//!
//! [providers.openai]                      # settings per provider
//! api_key_env = "OPENAI_API_KEY"
//! connect_timeout_secs = 10               # connecting (default 10)
//! timeout_secs = 60                       # one attempt, answer included (default 120)
//! total_timeout_secs = 180                # the whole call, retries included (default 300)
//! max_request_bytes = 8388608             # larger requests fail before sending (default 8 MiB)
//! headers = { "OpenAI-Organization" = "org-123" }
//!
//! [providers.anthropic]
//! api_key_env = "ANTHROPIC_API_KEY"
//! max_tokens = 2048
//!
//! [prices."openai:gpt-4o-mini"]           # USD per million tokens
//! input = 0.15
//! output = 0.60
//!
//! [a2a_agents.booking]                    # a remote A2A agent, a toolset of one tool (docs/a2a.md)
//! url = "https://booking.example.com/a2a"
//! token_env = "BOOKING_A2A_TOKEN"
//! description = "Books trains and hotels."
//!
//! [temporal]                              # with engine = "temporal" (docs/temporal.md)
//! address = "temporal.example.com:7233"
//! namespace = "concierge"
//! task_queue_prefix = "concierge"         # queues <prefix>-sessions, -models, -tools-<agent>
//! api_key_env = "TEMPORAL_API_KEY"        # an API key's variable (Temporal Cloud; TLS then on)
//! tls = true
//! tool_heartbeat_timeout_secs = 10        # a tool call's worker counts as lost after this long without a heartbeat
//! model_heartbeat_timeout_secs = 30       # the same for a model call (model_calls = "activity")
//! max_payload_bytes = 2000000             # a larger tool or model payload fails fast, naming it
//! search_attributes = true                # ConciergeTenant / ConciergeAgent (registered in the namespace)
//! grpc_compression = true                 # gzip on the wire (off saves CPU on a LAN)
//! model_calls = "activity"                # or "local": model calls in the session's worker, half the history
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use concierge_core::Mode;
use serde::Deserialize;

mod model;

pub use crate::agent_files::{AgentFiles, load_agents};
use crate::error::{Error, Result};
pub use crate::model::Price;
use crate::rebase::rebase;
pub use model::{ModelSettings, build_model, default_key_env};

/// `concierge.toml`. Every field is optional.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The engine that runs sessions (embedded by default). `CONCIERGE_ENGINE` wins.
    pub engine: Option<EngineKind>,
    /// Where the Temporal engine's server is (with `engine = "temporal"`):
    /// the `[temporal]` section, which the Temporal engine reads
    /// (`concierge_temporal::TemporalSection`, through [`Config::section`]).
    #[serde(default)]
    pub temporal: toml::Table,
    /// The database of the embedded engine.
    pub db: Option<PathBuf>,
    /// How many model, tool and agent calls of the runs taken over at start
    /// are under way at once on the embedded engine (default 128): after a
    /// restart with thousands of runs in flight, they resume in waves.
    pub resume_concurrency: Option<usize>,
    /// The default model, `provider:name` (e.g. `openai:gpt-4o-mini`).
    pub model: Option<String>,
    /// The default model's provider base URL.
    pub base_url: Option<String>,
    /// The default model's API key itself (prefer `api_key_env`).
    pub api_key: Option<String>,
    /// The environment variable holding the default model's API key.
    pub api_key_env: Option<String>,
    /// How long one model attempt may take, in seconds (a provider's
    /// `timeout_secs` wins).
    pub model_timeout_secs: Option<u64>,
    /// How long connecting to a model may take, in seconds (a provider's
    /// `connect_timeout_secs` wins).
    pub model_connect_timeout_secs: Option<u64>,
    /// How long one model call may take across its retries, in seconds (a
    /// provider's `total_timeout_secs` wins).
    pub model_total_timeout_secs: Option<u64>,
    /// A directory of agent files (`*.toml`, one agent each).
    pub agents_dir: Option<PathBuf>,
    /// More directories of agent files (another example's agents, say).
    #[serde(default)]
    pub agents_dirs: Vec<PathBuf>,
    /// Whether traces carry prompt text (off by default).
    #[serde(default)]
    pub log_prompts: bool,
    /// `multi` (the default: a new session starts at the hub, which finds
    /// the agent) or `single` (one agent). `CONCIERGE_MODE` wins.
    pub mode: Option<Mode>,
    /// The agent single mode uses. `CONCIERGE_AGENT` wins.
    pub agent: Option<String>,
    /// Whether the hub routes by the agents' intents (default true; off, it
    /// always shows the catalogue). `CONCIERGE_INTENT_DETECTION` wins.
    pub intent_detection: Option<bool>,
    /// The agent that takes greetings and small talk. `CONCIERGE_FALLBACK` wins.
    pub fallback: Option<String>,
    /// Settings per provider (`openai`, `anthropic`).
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    /// More models, `provider:name`, that runs may name besides the default
    /// and the agents' own: a replay against another model names one.
    #[serde(default)]
    pub models: Vec<String>,
    /// Prices per model reference, in USD per million tokens.
    #[serde(default)]
    pub prices: BTreeMap<String, Price>,
    /// Settings per tool, by the tool's name (native or MCP).
    #[serde(default)]
    pub tools: BTreeMap<String, ToolConfig>,
    /// MCP servers, by name (agents use them as toolsets).
    #[cfg(feature = "mcp")]
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, crate::mcp::McpServerConfig>,
    /// Remote A2A agents, by name (agents use them as toolsets: the tool
    /// of the same name sends the agent a message).
    #[cfg(feature = "a2a")]
    #[serde(default)]
    pub a2a_agents: BTreeMap<String, crate::a2a::A2aAgentConfig>,
    /// `concierge serve`'s settings (API tokens, the cap on runs per tenant,
    /// connection limits): the `[server]` section, which the server reads
    /// (`concierge_server::ServerConfig`, through [`Config::section`]).
    #[serde(default)]
    pub server: toml::Table,
    /// Files the tools use, by name (`[paths]`, e.g. `tasks_knowledge =
    /// "knowledge.md"`): relative to this file once loaded. What a name
    /// means is up to the tools that read it (the CLI's demo tools: see
    /// `concierge_demo::DemoPaths`).
    #[serde(default)]
    pub paths: BTreeMap<String, PathBuf>,
    /// The file it was read from (for messages about its sections).
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

/// Which engine runs sessions (`engine = "..."`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// The embedded engine: one process (or several) on one SQLite database.
    #[default]
    Embedded,
    /// The Temporal engine: sessions are workflows on a Temporal server
    /// (the `[temporal]` section says where); workers run the effects.
    Temporal,
}

impl std::str::FromStr for EngineKind {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "embedded" | "sqlite" => Ok(Self::Embedded),
            "temporal" => Ok(Self::Temporal),
            other => Err(format!("{other:?} is not an engine; use embedded or temporal")),
        }
    }
}

/// One tool's settings in `concierge.toml` (`[tools.<name>]`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolConfig {
    /// Ask the person before every call, with this question; `{argument}`
    /// placeholders are filled from the call ("Delete {path}?").
    pub confirm: Option<String>,
    /// What the tool's calls write (table names, say): calls of one batch
    /// that write the same thing run one after another.
    #[serde(default)]
    pub writes: Vec<String>,
}

/// One provider's connection settings.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// The provider's base URL (e.g. a proxy or a local server's `/v1`).
    pub base_url: Option<String>,
    /// The key itself (prefer `api_key_env`).
    pub api_key: Option<String>,
    /// The environment variable holding the key.
    pub api_key_env: Option<String>,
    /// Extra headers on every request.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// How long one attempt (one request, its answer included) may take, in
    /// seconds (default 120).
    pub timeout_secs: Option<u64>,
    /// How long connecting may take, in seconds (default 10).
    pub connect_timeout_secs: Option<u64>,
    /// How long one model call may take across all its attempts and the
    /// waits between them, in seconds (default 300).
    pub total_timeout_secs: Option<u64>,
    /// The largest request body sent, in bytes (default 8 MiB); a larger
    /// request fails before it is sent.
    pub max_request_bytes: Option<usize>,
    /// `max_tokens` (Anthropic requires one; default 1024).
    pub max_tokens: Option<u32>,
    /// Whether to stream when deltas are wanted (default true).
    pub stream: Option<bool>,
}

impl Config {
    /// Reads `path`. A missing file is an empty configuration when
    /// `required` is false; a file that does not parse is an error that says where.
    pub fn load(path: &Path, required: bool) -> Result<Self> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => return Ok(Self::default()),
            Err(e) => return Err(Error::InvalidConfig(format!("cannot read {}: {e}", path.display()))),
        };
        let mut config: Config =
            toml::from_str(&text).map_err(|e| Error::InvalidConfig(format!("{}: {e}", path.display())))?;
        // Relative paths in the file are relative to the file.
        let base = path.parent().unwrap_or_else(|| Path::new(""));
        config.source = Some(path.to_path_buf());
        config.db = config.db.map(|p| rebase(base, p));
        config.agents_dir = config.agents_dir.map(|p| rebase(base, p));
        config.agents_dirs = config.agents_dirs.into_iter().map(|p| rebase(base, p)).collect();
        config.paths = std::mem::take(&mut config.paths)
            .into_iter()
            .map(|(name, p)| (name, rebase(base, p)))
            .collect();
        #[cfg(feature = "mcp")]
        for (name, server) in &mut config.mcp_servers {
            server.rebase(name, base);
        }
        Ok(config)
    }

    /// Applies the environment's hub switches over the file's:
    /// `CONCIERGE_MODE=single|multi`, `CONCIERGE_AGENT=<id>`,
    /// `CONCIERGE_INTENT_DETECTION=on|off`, `CONCIERGE_FALLBACK=<id>`.
    pub fn apply_env(&mut self) -> Result<()> {
        self.apply_env_from(|name| std::env::var(name).ok())
    }

    /// [`Config::apply_env`] over any source of variables (for tests).
    pub fn apply_env_from(&mut self, var: impl Fn(&str) -> Option<String>) -> Result<()> {
        let set = |name: &str| var(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        if let Some(mode) = set("CONCIERGE_MODE") {
            self.mode = Some(
                mode.parse()
                    .map_err(|e: String| Error::InvalidConfig(format!("CONCIERGE_MODE: {e}")))?,
            );
        }
        if let Some(agent) = set("CONCIERGE_AGENT") {
            self.agent = Some(agent);
        }
        if let Some(value) = set("CONCIERGE_INTENT_DETECTION") {
            self.intent_detection = Some(match value.to_ascii_lowercase().as_str() {
                "on" | "true" | "1" | "yes" => true,
                "off" | "false" | "0" | "no" => false,
                other => {
                    return Err(Error::InvalidConfig(format!(
                        "CONCIERGE_INTENT_DETECTION is {other:?}; use on or off"
                    )));
                }
            });
        }
        if let Some(agent) = set("CONCIERGE_FALLBACK") {
            self.fallback = Some(agent);
        }
        if let Some(engine) = set("CONCIERGE_ENGINE") {
            self.engine = Some(
                engine
                    .parse()
                    .map_err(|e: String| Error::InvalidConfig(format!("CONCIERGE_ENGINE: {e}")))?,
            );
        }
        Ok(())
    }

    /// A section that another crate owns, read as that crate's type:
    /// `server` (`concierge_server::ServerConfig`) or `temporal`
    /// (`concierge_temporal::TemporalSection`). A section that does not fit
    /// is an error naming the file, the section and the key.
    pub fn section<T: serde::de::DeserializeOwned>(&self, name: &str) -> Result<T> {
        let table = match name {
            "server" => &self.server,
            "temporal" => &self.temporal,
            other => {
                return Err(Error::InvalidConfig(format!(
                    "concierge.toml has no [{other}] section; the sections other crates read are [server] and [temporal]"
                )));
            }
        };
        let file = self
            .source
            .as_ref()
            .map_or_else(|| "concierge.toml".to_string(), |p| p.display().to_string());
        toml::Value::Table(table.clone())
            .try_into()
            .map_err(|e| Error::InvalidConfig(format!("{file}: [{name}]: {e}")))
    }

    /// Applies the hub switches (mode, agent, intent detection, fallback) to a runtime builder.
    pub fn apply_hub(&self, mut builder: crate::RuntimeBuilder) -> crate::RuntimeBuilder {
        if let Some(mode) = self.mode {
            builder = builder.mode(mode);
        }
        if let Some(agent) = &self.agent {
            builder = builder.single_agent(agent.as_str());
        }
        if let Some(on) = self.intent_detection {
            builder = builder.intent_detection(on);
        }
        if let Some(agent) = &self.fallback {
            builder = builder.fallback(agent.as_str());
        }
        builder
    }

    /// The settings to build `reference` with: its provider's section, with
    /// the top-level `base_url`/`api_key` applied when it is the default model.
    pub fn model_settings(&self, reference: &str, default: bool) -> ModelSettings {
        let provider = reference.split_once(':').map_or(reference, |(p, _)| p);
        let section = self.providers.get(provider).cloned().unwrap_or_default();
        let env_key = |var: &Option<String>| var.as_ref().and_then(|v| std::env::var(v).ok());
        let mut api_key = section.api_key.clone().or_else(|| env_key(&section.api_key_env));
        let mut base_url = section.base_url.clone();
        if default {
            base_url = self.base_url.clone().or(base_url);
            api_key = self.api_key.clone().or_else(|| env_key(&self.api_key_env)).or(api_key);
        }
        let api_key = api_key.or_else(|| std::env::var(default_key_env(provider)).ok());
        ModelSettings {
            reference: reference.to_string(),
            base_url,
            api_key: api_key.filter(|k| !k.is_empty()),
            timeout: section
                .timeout_secs
                .or(self.model_timeout_secs)
                .map(Duration::from_secs),
            connect_timeout: section
                .connect_timeout_secs
                .or(self.model_connect_timeout_secs)
                .map(Duration::from_secs),
            total_timeout: section
                .total_timeout_secs
                .or(self.model_total_timeout_secs)
                .map(Duration::from_secs),
            max_request_bytes: section.max_request_bytes,
            headers: section.headers.into_iter().collect(),
            max_tokens: section.max_tokens,
            stream: section.stream.unwrap_or(true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(r: &str, url: Option<&str>, key: Option<&str>) -> ModelSettings {
        ModelSettings {
            base_url: url.map(Into::into),
            api_key: key.map(Into::into),
            ..ModelSettings::new(r)
        }
    }

    #[test]
    fn hub_switches_come_from_the_file_and_the_environment_wins() {
        let mut config: Config =
            toml::from_str("mode = \"multi\"\nagent = \"a\"\nintent_detection = true\nfallback = \"general\"\n")
                .unwrap();
        assert_eq!(config.mode, Some(Mode::Multi));
        let env = |name: &str| match name {
            "CONCIERGE_MODE" => Some("single".to_string()),
            "CONCIERGE_AGENT" => Some("hr".to_string()),
            "CONCIERGE_INTENT_DETECTION" => Some("off".to_string()),
            _ => None,
        };
        config.apply_env_from(env).unwrap();
        assert_eq!(config.mode, Some(Mode::Single));
        assert_eq!(config.agent.as_deref(), Some("hr"));
        assert_eq!(config.intent_detection, Some(false));
        assert_eq!(config.fallback.as_deref(), Some("general"));
        let bad = config.apply_env_from(|n| (n == "CONCIERGE_MODE").then(|| "both".to_string()));
        assert!(bad.unwrap_err().to_string().contains("neither"));
    }

    #[test]
    fn the_engine_comes_from_the_file_and_the_environment_wins_and_sections_are_read_as_their_owner_says() {
        let mut config: Config =
            toml::from_str("engine = \"temporal\"\n[temporal]\naddress = \"t.example.com:7233\"\n").unwrap();
        assert_eq!(config.engine, Some(EngineKind::Temporal));
        config
            .apply_env_from(|n| (n == "CONCIERGE_ENGINE").then(|| "embedded".to_string()))
            .unwrap();
        assert_eq!(config.engine, Some(EngineKind::Embedded));
        let bad = config.apply_env_from(|n| (n == "CONCIERGE_ENGINE").then(|| "postgres".to_string()));
        assert!(bad.unwrap_err().to_string().contains("embedded or temporal"));

        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Section {
            address: String,
        }
        let section: Section = config.section("temporal").unwrap();
        assert_eq!(section.address, "t.example.com:7233");
        let wrong: Config = toml::from_str("[temporal]\nadress = \"x\"\n").unwrap();
        let error = wrong.section::<Section>("temporal").unwrap_err().to_string();
        assert!(error.contains("[temporal]") && error.contains("adress"), "{error}");
        assert!(config.section::<Section>("nope").is_err());
    }

    #[test]
    fn model_references_are_checked_at_startup() {
        assert!(build_model(&s("gpt-4o", None, None)).is_err());
        assert!(build_model(&s("openai:", None, None)).is_err());
        let hosted = build_model(&s("openai:gpt-4o", None, None)).err().unwrap().to_string();
        assert!(hosted.contains("OPENAI_API_KEY"), "{hosted}");
        let hosted = build_model(&s("anthropic:claude", None, None))
            .err()
            .unwrap()
            .to_string();
        assert!(hosted.contains("ANTHROPIC_API_KEY"), "{hosted}");
        assert!(build_model(&s("openai:gpt-4o", None, Some("k"))).is_ok());
        assert_eq!(
            build_model(&s("anthropic:claude", None, Some("k"))).unwrap().name(),
            "anthropic:claude"
        );
        assert!(build_model(&s("openai:smollm2", Some("http://127.0.0.1:1/v1"), None)).is_ok());
        assert!(build_model(&s("anthropic:c", Some("http://127.0.0.1:1"), None)).is_ok());
        assert!(build_model(&s("openai:x", Some("localhost:8080"), None)).is_err());
        assert!(build_model(&s("mystery:x", None, None)).is_err());
    }

    #[test]
    fn provider_sections_and_the_default_model() {
        let config: Config = toml::from_str(
            r#"
model = "openai:m"
base_url = "http://top/v1"
model_total_timeout_secs = 40
[providers.openai]
base_url = "http://section/v1"
timeout_secs = 7
connect_timeout_secs = 2
max_request_bytes = 1000
headers = { "X-A" = "b" }
[providers.anthropic]
api_key = "secret"
max_tokens = 99
stream = false
[prices."openai:m"]
input = 1.0
output = 2.0
"#,
        )
        .unwrap();
        let default = config.model_settings("openai:m", true);
        assert_eq!(default.base_url.as_deref(), Some("http://top/v1"));
        assert_eq!(default.timeout, Some(Duration::from_secs(7)));
        assert_eq!(default.connect_timeout, Some(Duration::from_secs(2)));
        assert_eq!(
            default.total_timeout,
            Some(Duration::from_secs(40)),
            "the top level applies"
        );
        assert_eq!(default.max_request_bytes, Some(1000));
        let model = build_model(&default).unwrap();
        assert_eq!(model.call_budget(), Some(Duration::from_secs(40)));
        let zero = ModelSettings {
            total_timeout: Some(Duration::ZERO),
            ..default.clone()
        };
        let error = build_model(&zero).err().unwrap().to_string();
        assert!(
            error.contains("total_timeout_secs") && error.contains("more than zero"),
            "{error}"
        );
        assert_eq!(default.headers, vec![("X-A".to_string(), "b".to_string())]);
        let other = config.model_settings("openai:other", false);
        assert_eq!(other.base_url.as_deref(), Some("http://section/v1"));
        let claude = config.model_settings("anthropic:c", false);
        assert_eq!(claude.api_key.as_deref(), Some("secret"));
        assert_eq!(claude.max_tokens, Some(99));
        assert!(!claude.stream);
        assert_eq!(config.prices["openai:m"].cost(1_000_000, 500_000), 2.0);
    }

    #[test]
    fn files_parse_and_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("concierge.toml");
        std::fs::write(
            &config,
            "db = \"data/c.db\"\nmodel = \"openai:m\"\nagents_dir = \"agents\"\n",
        )
        .unwrap();
        let parsed = Config::load(&config, true).unwrap();
        assert_eq!(parsed.db, Some(dir.path().join("data/c.db")));
        assert_eq!(parsed.model.as_deref(), Some("openai:m"));
        assert_eq!(
            Config::load(&dir.path().join("missing.toml"), false).unwrap(),
            Config::default()
        );
        assert!(Config::load(&dir.path().join("missing.toml"), true).is_err());
        std::fs::write(&config, "modle = 1\n").unwrap();
        let error = Config::load(&config, true).unwrap_err().to_string();
        assert!(error.contains("concierge.toml") && error.contains("modle"), "{error}");

        let agents = dir.path().join("agents");
        std::fs::create_dir(&agents).unwrap();
        std::fs::write(
            agents.join("helper.toml"),
            r#"
id = "helper"
name = "Helper"
description = "Answers questions"
instructions = "Be brief."
tools = ["calculator"]
model = "anthropic:claude-3-5-haiku-latest"

[[rules.routes]]
keywords = ["hello"]
reply = "Hi!"
"#,
        )
        .unwrap();
        let specs = load_agents(&agents).unwrap().agents;
        assert_eq!(specs[0].id, "helper");
        assert_eq!(specs[0].tools, ["calculator".into()] as [concierge_core::ToolId; 1]);
        assert_eq!(specs[0].model.as_deref(), Some("anthropic:claude-3-5-haiku-latest"));
        assert!(specs[0].rules.is_some());

        std::fs::write(agents.join("typo.toml"), "id = \"t\"\ninstructons = \"x\"\n").unwrap();
        let error = load_agents(&agents).unwrap_err().to_string();
        assert!(error.contains("typo.toml") && error.contains("instructons"), "{error}");
    }

    #[cfg(feature = "mcp")]
    #[test]
    fn agent_files_declare_their_mcp_servers() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("shop.toml"),
            r#"
id = "shop"
tools = ["calculator"]

[mcp_servers.business]
command = "node"
args = ["server.js"]
cwd = "servers"
included_tools = ["GetCustomerOrders"]
"#,
        )
        .unwrap();
        let files = load_agents(dir.path()).unwrap();
        assert_eq!(files.agents[0].toolsets, ["business"]);
        let server = &files.mcp_servers["business"];
        assert_eq!(server.cwd, Some(dir.path().join("servers")));
        let config_dir = tempfile::tempdir().unwrap();
        let path = config_dir.path().join("concierge.toml");
        std::fs::write(&path, "[mcp_servers.e]\ncommand = \"node\"\n").unwrap();
        let config = Config::load(&path, true).unwrap();
        assert_eq!(
            config.mcp_servers["e"].cwd,
            Some(config_dir.path().join(".")),
            "relative to the file"
        );
        assert_eq!(
            server.included_tools.as_deref(),
            Some(&["GetCustomerOrders".to_string()][..])
        );
    }

    #[test]
    fn paths_are_relative_to_the_file_that_names_them() {
        let dir = tempfile::tempdir().unwrap();
        let agents = dir.path().join("agents");
        std::fs::create_dir(&agents).unwrap();
        let qa = "id = \"qa\"\n\n[paths]\ntasks_knowledge = \"../knowledge.md\"\n";
        std::fs::write(agents.join("qa.toml"), qa).unwrap();
        std::fs::write(agents.join("qa2.toml"), qa.replace("\"qa\"", "\"qa2\"")).unwrap();
        let files = load_agents(&agents).unwrap();
        assert_eq!(files.paths["tasks_knowledge"], agents.join("../knowledge.md"));
        assert!(
            files.agents.iter().all(|a| a.tools.is_empty()),
            "[paths] is not the agent's"
        );

        std::fs::write(
            agents.join("qa2.toml"),
            "id = \"qa2\"\n[paths]\ntasks_knowledge = \"other.md\"\n",
        )
        .unwrap();
        let error = load_agents(&agents).unwrap_err().to_string();
        assert!(
            error.contains("tasks_knowledge") && error.contains("other.md"),
            "{error}"
        );

        let path = dir.path().join("concierge.toml");
        std::fs::write(
            &path,
            "[paths]\ntasks_db = \"data/tasks.db\"\nabsolute = \"/srv/x.db\"\n",
        )
        .unwrap();
        let config = Config::load(&path, true).unwrap();
        assert_eq!(config.paths["tasks_db"], dir.path().join("data/tasks.db"));
        assert_eq!(config.paths["absolute"], PathBuf::from("/srv/x.db"));
    }
}
