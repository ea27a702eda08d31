//! Turns flags, environment and `concierge.toml` into a runtime.

use std::path::PathBuf;
use std::sync::Arc;

use concierge::config::{Config, build_model, load_agents};
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

/// How a command uses the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// It runs, confirms or ends: it takes over what dead processes left.
    Write,
    /// It only looks: it takes nothing over, resumes nothing.
    Read,
}

/// Builds the runtime: demo agents, file agents, the default model and the
/// models agents name, prices, the database. A writer resumes the runs that
/// processes now gone left unfinished; a reader takes nothing over. With
/// `metrics`, model calls, tool calls and runs are counted into them.
pub async fn runtime(
    cli: &Cli,
    access: Access,
    label: &str,
    metrics: Option<&Arc<concierge_server::metrics::Metrics>>,
) -> Result<Runtime> {
    let resolved = resolve(cli)?;
    let config = &resolved.config;
    let mut agents = concierge_demo::agents();
    let mut servers = config.mcp_servers.clone();
    for dir in config.agents_dir.iter().chain(&config.agents_dirs) {
        let files = load_agents(dir)?;
        agents.extend(files.agents);
        for (name, server) in files.mcp_servers {
            if servers.insert(name.clone(), server).is_some() {
                return Err(concierge::Error::InvalidConfig(format!(
                    "MCP server {name} is declared both in concierge.toml and in an agent file"
                )));
            }
        }
    }
    let mut builder = Runtime::builder()
        .sqlite(&resolved.db)
        .label(label)
        .log_prompts(config.log_prompts);
    if access == Access::Read {
        builder = builder.read_only();
    }
    if let Some(metrics) = metrics {
        builder = builder.hooks(metrics.hooks(concierge::engine::TracingHooks {
            log_prompts: config.log_prompts,
        }));
    }
    for (name, server) in servers {
        builder = builder.mcp_server(name, server);
    }
    for set in concierge_demo::toolsets() {
        builder = builder.toolset(set);
    }
    if let Some(reference) = &resolved.model {
        builder = builder.model_arc(build_model(&config.model_settings(reference, true))?);
    }
    let mut named: Vec<&str> = agents.iter().filter_map(|a| a.model.as_deref()).collect();
    named.sort_unstable();
    named.dedup();
    for reference in named {
        let default = resolved.model.as_deref() == Some(reference);
        builder = builder.named_model(reference, build_model(&config.model_settings(reference, default))?);
    }
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
    config.apply_hub(builder).agents(agents).build().await
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
