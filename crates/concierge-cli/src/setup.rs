//! Turns flags, environment and `concierge.toml` into a runtime.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use concierge::config::{Config, EngineKind, build_model, load_agents};
use concierge::mcp::McpServerConfig;
use concierge::{Result, RunOutput, Runtime, SessionId};

use crate::Cli;

/// Settings after flags > environment > file > defaults.
pub struct Resolved {
    pub db: PathBuf,
    pub config: Config,
    /// The default model's reference, if any.
    pub model: Option<String>,
}

pub fn resolve(cli: &Cli) -> Result<Resolved> {
    let (path, required) = match &cli.config {
        Some(path) => (path.clone(), true),
        None => (PathBuf::from("concierge.toml"), false),
    };
    let mut config = Config::load(&path, required)?;
    config.apply_env()?;
    let db = cli
        .db
        .clone()
        .or(config.db.clone())
        .unwrap_or_else(|| PathBuf::from("concierge.db"));
    let model = cli.model.clone().or(config.model.clone());
    if let Some(url) = &cli.base_url {
        config.base_url = Some(url.clone());
    }
    if model.is_none() && config.base_url.is_some() {
        return Err(concierge::Error::InvalidConfig(
            "a base URL was given without a model: pass --model openai:<name> (or anthropic:<name>) too".into(),
        ));
    }
    Ok(Resolved { db, config, model })
}

/// Which Temporal workers a command runs in its own process (with
/// `engine = "temporal"`; the embedded engine needs none).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum WorkerSet {
    /// None: the process is a client (it starts runs, reads sessions).
    #[default]
    None,
    /// All of them: the session workflows, the model calls, every agent's tools.
    All,
    /// The tool calls of these agents only.
    ToolsOf(Vec<String>),
    /// The session workflows and the model calls, no tools.
    NoTools,
}

/// What a command needs of its runtime.
pub struct Role<'a> {
    /// Whether it writes (runs, confirms) or only reads.
    pub access: Access,
    /// How the process names itself to other processes on the database.
    pub label: &'a str,
    /// Counters for `/metrics`, when the command serves them.
    pub metrics: Option<&'a Arc<concierge_server::metrics::Metrics>>,
    /// The Temporal workers it runs.
    pub workers: WorkerSet,
    /// It answers before the unfinished runs it finds are resumed (a
    /// server: its liveness at once, its readiness once they are).
    pub recover_in_background: bool,
    /// It fires the schedules that are due and delivers webhooks (a process
    /// that lives on: a server, a chat, a worker; not a one-shot command).
    pub works_in_background: bool,
    /// More models its runs may name, besides the configured ones (a
    /// replay's `--against-model`).
    pub models: Vec<String>,
}

/// How a command uses the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// It runs, confirms or ends: it takes over what dead processes left.
    Write,
    /// It only looks: it takes nothing over, resumes nothing.
    Read,
}

/// What the configuration declares besides concierge.toml's own settings:
/// the demo's agents and the agent files', the MCP servers of both, and the
/// domains' files.
pub struct Declared {
    /// The demo's agents, then the agent files'.
    pub agents: Vec<concierge::AgentSpec>,
    /// concierge.toml's MCP servers and the agent files'.
    pub servers: BTreeMap<String, McpServerConfig>,
    /// concierge.toml's `[paths]`, then the agent files'.
    pub paths: BTreeMap<String, PathBuf>,
}

/// Reads the agent files `config` names, with its own agents, servers and paths.
pub fn declared(config: &Config) -> Result<Declared> {
    let mut agents = crate::demo::agents();
    let mut servers = config.mcp_servers.clone();
    let mut paths = config.paths.clone();
    for dir in config.agents_dir.iter().chain(&config.agents_dirs) {
        let files = load_agents(dir)?;
        agents.extend(files.agents);
        for (name, path) in files.paths {
            // concierge.toml's own [paths] win over the agent files'.
            paths.entry(name).or_insert(path);
        }
        for (name, server) in files.mcp_servers {
            if servers.insert(name.clone(), server).is_some() {
                return Err(concierge::Error::InvalidConfig(format!(
                    "MCP server {name} is declared both in concierge.toml and in an agent file"
                )));
            }
        }
    }
    Ok(Declared { agents, servers, paths })
}

/// Builds the runtime: demo agents, file agents, the default model and the
/// models agents name, prices, the engine. On the embedded engine a writer
/// resumes the runs that processes now gone left unfinished and a reader
/// takes nothing over; on Temporal the process runs the workers its role
/// names (Temporal resumes workflows itself). With `metrics`, model calls,
/// tool calls and runs are counted into them.
pub async fn runtime(cli: &Cli, role: Role<'_>) -> Result<Runtime> {
    let Role {
        access,
        label,
        metrics,
        workers,
        recover_in_background,
        works_in_background,
        models,
    } = role;
    let resolved = resolve(cli)?;
    let config = &resolved.config;
    let Declared { agents, servers, paths } = declared(config)?;
    let mut builder = Runtime::builder()
        .label(label)
        .log_prompts(config.log_prompts)
        .recover_in_background(recover_in_background)
        .fire_schedules(works_in_background)
        .deliver_webhooks(works_in_background)
        .webhooks_to_private_addresses(webhooks_to_private(config)?);
    match config.engine.unwrap_or_default() {
        EngineKind::Embedded => {
            #[cfg(not(feature = "temporal"))]
            if workers != WorkerSet::None {
                return Err(concierge::Error::InvalidConfig(NO_TEMPORAL.into()));
            }
            if workers != WorkerSet::None {
                return Err(concierge::Error::InvalidConfig(
                    "Temporal workers run only with the Temporal engine: set engine = \"temporal\" and a [temporal] section in concierge.toml (or CONCIERGE_ENGINE=temporal)".into(),
                ));
            }
            builder = builder.sqlite(&resolved.db);
            if let Some(calls) = config.resume_concurrency {
                builder = builder.resume_concurrency(calls);
            }
            if access == Access::Read {
                builder = builder.read_only();
            }
        }
        EngineKind::Temporal => builder = temporal(builder, config, &agents, workers)?,
    }
    if let Some(metrics) = metrics {
        builder = builder.hooks(metrics.hooks(concierge::engine::TracingHooks {
            log_prompts: config.log_prompts,
        }));
    }
    let data = resolved.db.parent().unwrap_or_else(|| Path::new(""));
    builder = tools(builder, config, servers, data, paths, None)?;
    if let Some(reference) = &resolved.model {
        builder = builder.model_arc(build_model(&config.model_settings(reference, true))?);
    }
    let mut named: Vec<&str> = agents.iter().filter_map(|a| a.model.as_deref()).collect();
    named.extend(config.models.iter().map(String::as_str));
    named.extend(models.iter().map(String::as_str));
    named.extend(resolved.model.as_deref());
    named.sort_unstable();
    named.dedup();
    for reference in named {
        let default = resolved.model.as_deref() == Some(reference);
        builder = builder.named_model(reference, build_model(&config.model_settings(reference, default))?);
    }
    let built = config.apply_hub(builder).agents(agents).build().await;
    built.map_err(crate::demo::explain)
}

/// The configuration's tools on `builder`: the MCP servers, the A2A agents,
/// the demo domains' toolsets over their files (the ones `paths` names, the
/// rest in `data`; in an eval's `sandbox` the environment's `CONCIERGE_*_DB`
/// variables are not read), the tools' settings and the models' prices.
pub fn tools(
    mut builder: concierge::RuntimeBuilder,
    config: &Config,
    servers: BTreeMap<String, McpServerConfig>,
    data: &Path,
    paths: BTreeMap<String, PathBuf>,
    sandbox: Option<crate::demo::Sandbox>,
) -> Result<concierge::RuntimeBuilder> {
    for (name, server) in servers {
        builder = builder.mcp_server(name, server);
    }
    #[cfg(feature = "a2a")]
    for (name, agent) in &config.a2a_agents {
        builder = builder.a2a_agent(name.as_str(), agent.clone());
    }
    // The demo domains' files: the ones [paths] names (relative to the file
    // that names them), the rest next to the engine's database.
    builder = crate::demo::toolsets(builder, data, paths, sandbox)?;
    for (tool, settings) in &config.tools {
        if let Some(question) = &settings.confirm {
            builder = builder.confirm_tool(tool.as_str(), question.clone());
        }
        for resource in &settings.writes {
            builder = builder.tool_writes(tool.as_str(), resource.clone());
        }
    }
    for (reference, price) in &config.prices {
        builder = builder.price(reference.clone(), *price);
    }
    Ok(builder)
}

/// Lists the MCP servers whose tools the Temporal workers of this process
/// run or plan with (every server, or those of the agents a tools-only
/// worker serves), so that a session's workflow and its tool calls find
/// them: on Temporal the process that starts a run is not the one that
/// plans it. A server that cannot start takes its agents' tools away, not
/// the worker's.
pub async fn discover_for_workers(rt: &Runtime, workers: &WorkerSet) {
    let servers = rt.mcp_servers();
    let wanted: Vec<String> = match workers {
        WorkerSet::None => return,
        WorkerSet::All | WorkerSet::NoTools => servers,
        WorkerSet::ToolsOf(names) => rt
            .catalog()
            .agents()
            .map(|a| &a.spec)
            .filter(|a| names.iter().any(|n| n.as_str() == a.id.as_str()))
            .flat_map(|a| a.toolsets.iter().filter(|t| servers.contains(t)).cloned())
            .collect(),
    };
    for server in wanted {
        if let Err(error) = rt.discover(&server).await {
            eprintln!("warning: the MCP server {server} could not be listed; its tools are unavailable: {error}");
        }
    }
}

/// Puts the Temporal engine the configuration's `[temporal]` section names
/// under `builder`, with `workers` in this process.
#[cfg(feature = "temporal")]
fn temporal(
    builder: concierge::RuntimeBuilder,
    config: &Config,
    agents: &[concierge::AgentSpec],
    workers: WorkerSet,
) -> Result<concierge::RuntimeBuilder> {
    use concierge_temporal::{Temporal, TemporalConfig, Workers};
    let settings = TemporalConfig::from_section(&concierge_temporal::TemporalSection::from_config(config)?)?;
    let workers = match workers {
        WorkerSet::None => Workers::none(),
        WorkerSet::All => Workers::all(),
        WorkerSet::NoTools => Workers::all().no_tools(),
        WorkerSet::ToolsOf(names) => {
            if let Some(unknown) = names
                .iter()
                .find(|n| !agents.iter().any(|a| a.id.as_str() == n.as_str()))
            {
                let mut known: Vec<&str> = agents.iter().map(|a| a.id.as_str()).collect();
                known.sort_unstable();
                return Err(concierge::Error::InvalidConfig(format!(
                    "there is no agent {unknown} to run tools for; the agents are {}",
                    known.join(", ")
                )));
            }
            Workers::none().tools_of(names)
        }
    };
    Ok(builder.engine(Temporal::new(settings).workers(workers)))
}

/// What a `concierge` built without the `temporal` feature says when asked
/// for the Temporal engine or its workers.
#[cfg(not(feature = "temporal"))]
pub const NO_TEMPORAL: &str = "this concierge was built without the Temporal engine (scripts/demo.sh leaves it out, \
     so that the demo builds sooner): build it with `cargo build --locked -p concierge-cli --features temporal` \
     (the feature is on unless --no-default-features is given)";

/// Without the `temporal` feature, the Temporal engine is a clear error.
#[cfg(not(feature = "temporal"))]
fn temporal(
    _: concierge::RuntimeBuilder,
    _: &Config,
    _: &[concierge::AgentSpec],
    _: WorkerSet,
) -> Result<concierge::RuntimeBuilder> {
    Err(concierge::Error::InvalidConfig(format!(
        "{NO_TEMPORAL}, or set engine = \"embedded\""
    )))
}

/// The output of `session`'s run if this process resumed it when it opened
/// the database (a run a process now gone left unfinished), once it stops.
/// Other resumed runs go on in the background while the command runs; if the
/// process ends first, the next process takes them over.
pub async fn finish_recovered(rt: &Runtime, session: &SessionId) -> Result<Option<RunOutput>> {
    if !rt.recovered().contains(session) {
        return Ok(None);
    }
    rt.wait(session.clone()).await
}

/// Whether webhooks may post to loopback and private addresses:
/// `[server] webhooks_to_private_addresses`, by default only for a
/// deployment without tokens (one trusted person on their own machine).
fn webhooks_to_private(config: &concierge::config::Config) -> Result<bool> {
    let server = concierge_server::ServerConfig::from_config(config)?;
    Ok(server.webhooks_to_private_addresses.unwrap_or(server.tokens.is_empty()))
}
