//! Where the Temporal server is and how concierge names what it puts there.

use std::time::Duration;

use concierge::config::Config;
use concierge_core::{AgentId, SessionId};
use serde::Deserialize;

/// The `[temporal]` section: where the Temporal engine's server is and how
/// concierge names what it puts there. Every key is optional.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemporalSection {
    /// The frontend's address, `host:port` or a URL (default `127.0.0.1:7233`).
    /// `CONCIERGE_TEMPORAL_ADDRESS` wins.
    pub address: Option<String>,
    /// The namespace (default `default`). `CONCIERGE_TEMPORAL_NAMESPACE` wins.
    pub namespace: Option<String>,
    /// The prefix of task queues and workflow ids (default `concierge`).
    pub task_queue_prefix: Option<String>,
    /// The environment variable holding an API key (Temporal Cloud; TLS then on).
    pub api_key_env: Option<String>,
    /// Whether to connect with TLS (default: only with an API key).
    #[serde(default)]
    pub tls: bool,
    /// How long a tool call may go without a heartbeat before Temporal
    /// counts its worker as lost, in seconds (default 10): a read-only or
    /// idempotent tool then runs again on another worker, another fails.
    pub tool_heartbeat_timeout_secs: Option<u64>,
    /// How long a model call may go without a heartbeat before Temporal
    /// counts its worker as lost and calls the model again on another, in
    /// seconds (default 30). Read by the session workers, which schedule the
    /// calls; a local model call (`model_calls = "local"`) has none.
    pub model_heartbeat_timeout_secs: Option<u64>,
    /// The largest tool or model payload sent through Temporal, in bytes
    /// (default 2,000,000; Temporal refuses more than 2 MiB per payload).
    pub max_payload_bytes: Option<usize>,
    /// Whether session workflows carry the `ConciergeTenant` and
    /// `ConciergeAgent` search attributes (default true; the namespace must
    /// have them registered).
    pub search_attributes: Option<bool>,
    /// Whether gRPC messages are gzip-compressed (default true; off saves
    /// CPU on loopback or a LAN).
    pub grpc_compression: Option<bool>,
    /// How a session's workflow calls its model: `activity` (default), an
    /// activity on the shared models queue, or `local`, a local activity
    /// in the worker that runs the workflow (half the history and server
    /// work per turn; docs/temporal.md says what it costs).
    pub model_calls: Option<ModelCalls>,
}

/// How a session's workflow on Temporal calls its model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelCalls {
    /// An activity on the shared models queue, run by any worker that
    /// serves that queue (scaled on its own, its own history events).
    #[default]
    Activity,
    /// A local activity, run by the worker that runs the session's
    /// workflow and recorded as one marker: no task queue round trip.
    Local,
}

impl TemporalSection {
    /// `concierge.toml`'s `[temporal]` section, with the environment's
    /// `CONCIERGE_TEMPORAL_ADDRESS` and `CONCIERGE_TEMPORAL_NAMESPACE` over it.
    pub fn from_config(config: &Config) -> concierge::Result<Self> {
        Self::from_config_with(config, |name| std::env::var(name).ok())
    }

    /// [`TemporalSection::from_config`] over any source of variables (for tests).
    pub fn from_config_with(config: &Config, var: impl Fn(&str) -> Option<String>) -> concierge::Result<Self> {
        let mut section: Self = config.section("temporal")?;
        let set = |name: &str| var(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        if let Some(address) = set("CONCIERGE_TEMPORAL_ADDRESS") {
            section.address = Some(address);
        }
        if let Some(namespace) = set("CONCIERGE_TEMPORAL_NAMESPACE") {
            section.namespace = Some(namespace);
        }
        Ok(section)
    }
}

/// How to reach Temporal and name concierge's queues and workflows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemporalConfig {
    /// The frontend's address, `host:port` or a URL (`http://127.0.0.1:7233`).
    pub address: String,
    /// The namespace the sessions live in.
    pub namespace: String,
    /// Prefixes every task queue and workflow id (two deployments sharing a
    /// namespace keep apart with different prefixes).
    pub task_queue_prefix: String,
    /// An API key (Temporal Cloud); setting one turns TLS on.
    pub api_key: Option<String>,
    /// Whether to connect with TLS (the system's roots verify the server).
    pub tls: bool,
    /// How long connecting may take before the server counts as unreachable.
    pub connect_timeout: Duration,
    /// How long a query (a session's snapshot, its events) may wait for a
    /// worker to answer.
    pub query_timeout: Duration,
    /// How often a subscriber asks for new events when none came.
    pub poll_interval: Duration,
    /// How long an input (a run's start, a confirmation, the end) may wait
    /// for a worker to take it before it fails.
    pub input_timeout: Duration,
    /// How long a tool call may go without a heartbeat before Temporal
    /// counts its worker as lost (a working call heartbeats three times as
    /// often).
    pub tool_heartbeat_timeout: Duration,
    /// How long a model call may go without a heartbeat before Temporal
    /// counts its worker as lost and calls the model again elsewhere (a
    /// working call heartbeats three times as often). Set by the session
    /// workers, which schedule the calls; not for local model calls.
    pub model_heartbeat_timeout: Duration,
    /// A session's workflow continues as new (its state carried over) at
    /// the first idle point after its history has this many events, or
    /// when Temporal suggests it (4 MB or 4,096 events by default).
    pub continue_after_events: u32,
    /// The largest activity input or result concierge hands Temporal, in
    /// bytes (2 MB by default; Temporal refuses payloads over 2 MiB by
    /// default): a larger one fails at once, naming the tool or model.
    pub max_payload_bytes: usize,
    /// A model request up to this size (serialized, in bytes) travels in
    /// the model call's activity input; a larger one stays in the session's
    /// workflow and the activity fetches it (a query), so the workflow's
    /// history does not grow by the whole conversation at every model call.
    pub inline_request_bytes: usize,
    /// Whether session workflows carry the search attributes
    /// `ConciergeTenant` and `ConciergeAgent` (and the engine checks at
    /// start that the namespace has them). On by default.
    pub search_attributes: bool,
    /// Whether gRPC messages to and from the server are gzip-compressed (on
    /// by default, as the SDK does): worth it over a WAN (Temporal Cloud),
    /// about a tenth of a worker's CPU per turn on loopback or a LAN.
    pub grpc_compression: bool,
    /// How the sessions this client starts call their model: activities on
    /// the models queue (default) or local activities in the worker that
    /// runs the session. A session keeps the way it started with, across
    /// continue-as-new and for its children, whatever a later client says.
    pub model_calls: ModelCalls,
}

impl Default for TemporalConfig {
    fn default() -> Self {
        Self {
            address: "127.0.0.1:7233".into(),
            namespace: "default".into(),
            task_queue_prefix: "concierge".into(),
            api_key: None,
            tls: false,
            connect_timeout: Duration::from_secs(5),
            query_timeout: Duration::from_secs(10),
            poll_interval: Duration::from_millis(250),
            input_timeout: Duration::from_secs(30),
            tool_heartbeat_timeout: Duration::from_secs(10),
            model_heartbeat_timeout: Duration::from_secs(30),
            continue_after_events: 2_000,
            max_payload_bytes: 2_000_000,
            inline_request_bytes: 8 * 1024,
            search_attributes: true,
            grpc_compression: true,
            model_calls: ModelCalls::Activity,
        }
    }
}

impl TemporalConfig {
    /// A configuration for the server at `address`, namespace `default`.
    pub fn new(address: impl Into<String>) -> Self {
        Self {
            address: address.into(),
            ..Self::default()
        }
    }

    /// Uses `namespace`.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// Prefixes task queues and workflow ids with `prefix`.
    pub fn task_queue_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.task_queue_prefix = prefix.into();
        self
    }

    /// Authenticates with `key` (and connects with TLS).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Connects with TLS.
    pub fn tls(mut self, on: bool) -> Self {
        self.tls = on;
        self
    }

    /// Subscribers ask for new events this often when none came.
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.poll_interval = every;
        self
    }

    /// An input fails when no worker took it within `timeout`.
    pub fn input_timeout(mut self, timeout: Duration) -> Self {
        self.input_timeout = timeout;
        self
    }

    /// Counts a tool call's worker as lost after `timeout` without a heartbeat.
    pub fn tool_heartbeat_timeout(mut self, timeout: Duration) -> Self {
        self.tool_heartbeat_timeout = timeout;
        self
    }

    /// Counts a model call's worker as lost after `timeout` without a heartbeat.
    pub fn model_heartbeat_timeout(mut self, timeout: Duration) -> Self {
        self.model_heartbeat_timeout = timeout;
        self
    }

    /// Continues a session's workflow as new after `events` history events.
    pub fn continue_after_events(mut self, events: u32) -> Self {
        self.continue_after_events = events;
        self
    }

    /// Fails an activity input or result larger than `bytes` at once.
    pub fn max_payload_bytes(mut self, bytes: usize) -> Self {
        self.max_payload_bytes = bytes;
        self
    }

    /// Model requests larger than `bytes` are fetched by the model call
    /// instead of travelling in its input (0: always fetched).
    pub fn inline_request_bytes(mut self, bytes: usize) -> Self {
        self.inline_request_bytes = bytes;
        self
    }

    /// Whether session workflows carry the `ConciergeTenant` and
    /// `ConciergeAgent` search attributes (the namespace must have them).
    pub fn search_attributes(mut self, on: bool) -> Self {
        self.search_attributes = on;
        self
    }

    /// Compresses gRPC messages with gzip, or not.
    pub fn grpc_compression(mut self, on: bool) -> Self {
        self.grpc_compression = on;
        self
    }

    /// Calls models with activities on the models queue, or locally in
    /// the session's worker ([`ModelCalls`]).
    pub fn model_calls(mut self, how: ModelCalls) -> Self {
        self.model_calls = how;
        self
    }

    /// The address as a URL (a bare `host:port` gets `http://`, or
    /// `https://` with TLS).
    pub(crate) fn url(&self) -> String {
        if self.address.contains("://") {
            return self.address.clone();
        }
        let scheme = if self.tls || self.api_key.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.address)
    }

    /// The queue the session workflows run on.
    pub fn sessions_queue(&self) -> String {
        format!("{}-sessions", self.task_queue_prefix)
    }

    /// The queue model calls run on.
    pub fn models_queue(&self) -> String {
        format!("{}-models", self.task_queue_prefix)
    }

    /// The queue `agent`'s tool calls run on.
    pub fn tools_queue(&self, agent: &AgentId) -> String {
        format!("{}-tools-{agent}", self.task_queue_prefix)
    }

    /// The id of `session`'s workflow.
    pub fn workflow_id(&self, session: &SessionId) -> String {
        format!("{}:session:{session}", self.task_queue_prefix)
    }

    /// The id of the workflow that keeps the time of schedules (one per prefix).
    pub fn scheduler_workflow_id(&self) -> String {
        format!("{}:scheduler", self.task_queue_prefix)
    }
}

impl TemporalConfig {
    /// The configuration a `[temporal]` section of `concierge.toml`
    /// describes (the API key read from its variable, which must then be set).
    pub fn from_section(section: &TemporalSection) -> concierge::Result<Self> {
        let mut config = Self::default();
        if let Some(address) = &section.address {
            config.address = address.clone();
        }
        if let Some(namespace) = &section.namespace {
            config.namespace = namespace.clone();
        }
        if let Some(prefix) = &section.task_queue_prefix {
            if prefix.is_empty() || prefix.contains(char::is_whitespace) {
                return Err(concierge::Error::InvalidConfig(format!(
                    "temporal.task_queue_prefix {prefix:?} must be a non-empty name without spaces"
                )));
            }
            config.task_queue_prefix = prefix.clone();
        }
        if let Some(var) = &section.api_key_env {
            match std::env::var(var) {
                Ok(key) if !key.is_empty() => config.api_key = Some(key),
                _ => {
                    return Err(concierge::Error::InvalidConfig(format!(
                        "temporal.api_key_env names {var}, which is not set: set it to the Temporal API key"
                    )));
                }
            }
        }
        config.tls = section.tls;
        if let Some(secs) = section.tool_heartbeat_timeout_secs {
            config.tool_heartbeat_timeout = heartbeat("tool_heartbeat_timeout_secs", secs)?;
        }
        if let Some(secs) = section.model_heartbeat_timeout_secs {
            config.model_heartbeat_timeout = heartbeat("model_heartbeat_timeout_secs", secs)?;
        }
        if let Some(bytes) = section.max_payload_bytes {
            config.max_payload_bytes = bytes;
        }
        if let Some(on) = section.search_attributes {
            config.search_attributes = on;
        }
        if let Some(on) = section.grpc_compression {
            config.grpc_compression = on;
        }
        if let Some(how) = section.model_calls {
            config.model_calls = how;
        }
        Ok(config)
    }
}

/// A heartbeat timeout of `secs` seconds (at least one: Temporal reads 0
/// as none, and a lost worker would then go unnoticed until the call's own
/// timeout).
fn heartbeat(key: &str, secs: u64) -> concierge::Result<Duration> {
    if secs == 0 {
        return Err(concierge::Error::InvalidConfig(format!(
            "temporal.{key} is 0: give it at least 1 (seconds), or leave it out for the default"
        )));
    }
    Ok(Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_section_comes_from_the_file_and_the_environment_wins() {
        let config: Config = toml::from_str(
            "engine = \"temporal\"\n[temporal]\naddress = \"t.example.com:7233\"\nnamespace = \"prod\"\ntls = true\n",
        )
        .unwrap();
        let env = |name: &str| (name == "CONCIERGE_TEMPORAL_NAMESPACE").then(|| "staging".to_string());
        let section = TemporalSection::from_config_with(&config, env).unwrap();
        assert_eq!(section.address.as_deref(), Some("t.example.com:7233"));
        assert_eq!(section.namespace.as_deref(), Some("staging"));
        assert!(section.tls);
        let unknown: Config = toml::from_str("[temporal]\nadress = \"x\"\n").unwrap();
        let error = TemporalSection::from_config_with(&unknown, |_| None)
            .unwrap_err()
            .to_string();
        assert!(error.contains("adress"), "{error}");
    }

    #[test]
    fn a_section_gives_the_configuration_and_names_what_is_wrong() {
        let section = TemporalSection {
            address: Some("temporal.example.com:7233".into()),
            namespace: Some("concierge".into()),
            task_queue_prefix: Some("prod".into()),
            api_key_env: None,
            tls: true,
            tool_heartbeat_timeout_secs: Some(20),
            model_heartbeat_timeout_secs: Some(90),
            max_payload_bytes: Some(1_000_000),
            search_attributes: Some(false),
            grpc_compression: Some(false),
            model_calls: Some(ModelCalls::Local),
        };
        let config = TemporalConfig::from_section(&section).unwrap();
        assert_eq!(config.url(), "https://temporal.example.com:7233");
        assert_eq!(config.namespace, "concierge");
        assert_eq!(config.max_payload_bytes, 1_000_000);
        assert_eq!(config.tool_heartbeat_timeout, Duration::from_secs(20));
        assert_eq!(config.model_heartbeat_timeout, Duration::from_secs(90));
        assert!(!config.search_attributes);
        assert!(!config.grpc_compression);
        assert_eq!(config.model_calls, ModelCalls::Local);
        assert_eq!(config.sessions_queue(), "prod-sessions");
        assert_eq!(config.tools_queue(&AgentId::new("crm")), "prod-tools-crm");
        assert_eq!(config.workflow_id(&SessionId::new("s1")), "prod:session:s1");

        let defaults = TemporalConfig::from_section(&TemporalSection::default()).unwrap();
        assert_eq!(defaults.url(), "http://127.0.0.1:7233");
        assert_eq!(defaults.model_calls, ModelCalls::Activity);
        assert_eq!(defaults.tool_heartbeat_timeout, Duration::from_secs(10));
        assert_eq!(defaults.model_heartbeat_timeout, Duration::from_secs(30));

        let never = TemporalSection {
            model_heartbeat_timeout_secs: Some(0),
            ..TemporalSection::default()
        };
        let error = TemporalConfig::from_section(&never).unwrap_err().to_string();
        assert!(error.contains("model_heartbeat_timeout_secs"), "{error}");

        let missing = TemporalSection {
            api_key_env: Some("CONCIERGE_TEST_NO_SUCH_VARIABLE".into()),
            ..TemporalSection::default()
        };
        let error = TemporalConfig::from_section(&missing).unwrap_err().to_string();
        assert!(error.contains("CONCIERGE_TEST_NO_SUCH_VARIABLE"), "{error}");

        let spaced = TemporalSection {
            task_queue_prefix: Some("my queue".into()),
            ..TemporalSection::default()
        };
        assert!(
            TemporalConfig::from_section(&spaced)
                .unwrap_err()
                .to_string()
                .contains("task_queue_prefix")
        );
    }
}
