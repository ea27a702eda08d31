//! Turns flags, environment and `concierge.toml` into a runtime.

use std::path::PathBuf;

use concierge::config::{Config, build_model, load_agents};
use concierge::{Result, RunOutput, Runtime, SessionId};

use crate::Cli;
use crate::render;

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

/// Builds the runtime: demo agents, file agents, the default model and the
/// models agents name, prices, the database. Opening the database resumes
/// its unfinished runs.
pub async fn runtime(cli: &Cli) -> Result<Runtime> {
    let resolved = resolve(cli)?;
    let config = &resolved.config;
    let mut agents = concierge_demo::agents();
    let mut servers = config.mcp_servers.clone();
    if let Some(dir) = &config.agents_dir {
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
    let mut builder = Runtime::builder().sqlite(&resolved.db).log_prompts(config.log_prompts);
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
    for (reference, price) in &config.prices {
        builder = builder.price(reference.clone(), *price);
    }
    builder.agents(agents).build().await
}

/// Finishes the runs the database had in flight (a process that opens a
/// database first finishes its unfinished runs). Returns the output of
/// `session`'s run if it was one of them.
pub async fn finish_recovered(rt: &Runtime, session: Option<&SessionId>) -> Result<Option<RunOutput>> {
    let mut mine = None;
    for id in rt.recovered().to_vec() {
        let Some(output) = rt.wait(id.clone()).await? else {
            continue;
        };
        if Some(&id) == session {
            mine = Some(output);
        } else {
            eprintln!("resumed session {id}: {}", render::one_line(&output));
        }
    }
    Ok(mine)
}
