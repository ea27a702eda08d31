//! Turns flags, environment and `concierge.toml` into a runtime.

use std::path::PathBuf;
use std::time::Duration;

use concierge::config::{Config, ModelSettings, build_model, load_agents};
use concierge::{Result, RunOutput, Runtime, SessionId};

use crate::Cli;
use crate::render;

/// Settings after flags > environment > file > defaults.
pub struct Resolved {
    pub db: PathBuf,
    pub model: Option<ModelSettings>,
    pub agents_dir: Option<PathBuf>,
}

pub fn resolve(cli: &Cli) -> Result<Resolved> {
    let (path, required) = match &cli.config {
        Some(path) => (path.clone(), true),
        None => (PathBuf::from("concierge.toml"), false),
    };
    let file = Config::load(&path, required)?;
    let db = cli
        .db
        .clone()
        .or(file.db)
        .unwrap_or_else(|| PathBuf::from("concierge.db"));
    let reference = cli.model.clone().or(file.model);
    let api_key = file
        .api_key
        .or_else(|| file.api_key_env.as_ref().and_then(|var| std::env::var(var).ok()))
        .or_else(|| std::env::var("OPENAI_API_KEY").ok())
        .filter(|k| !k.is_empty());
    let model = reference.map(|reference| ModelSettings {
        reference,
        base_url: cli.base_url.clone().or(file.base_url.clone()),
        api_key,
        timeout: file.model_timeout_secs.map(Duration::from_secs),
    });
    if model.is_none() && (cli.base_url.is_some() || file.base_url.is_some()) {
        return Err(concierge::Error::InvalidConfig(
            "a base URL was given without a model: pass --model openai:<name> too".into(),
        ));
    }
    Ok(Resolved {
        db,
        model,
        agents_dir: file.agents_dir,
    })
}

/// Builds the runtime: demo agents, file agents, the model, the database.
/// Opening the database resumes its unfinished runs.
pub async fn runtime(cli: &Cli) -> Result<Runtime> {
    let resolved = resolve(cli)?;
    let mut builder = concierge_demo::install(Runtime::builder()).sqlite(&resolved.db);
    if let Some(dir) = &resolved.agents_dir {
        builder = builder.agents(load_agents(dir)?);
    }
    if let Some(settings) = &resolved.model {
        builder = builder.model_arc(build_model(settings)?);
    }
    builder.build().await
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
