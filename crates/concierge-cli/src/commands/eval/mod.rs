//! `concierge eval`: runs datasets of conversations against the configured
//! agents and model, checks what each turn did, and reports (docs/evals.md).
//!
//! Each case runs on a runtime of its own, in memory, with the domain data
//! a fresh copy in a directory of its own: an eval never touches real data.
//! With `--record` every model exchange is kept in a cassette; with
//! `--replay` the same cases run offline from it, the same way every time.

mod case;
mod dataset;
mod report;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use chrono::NaiveDate;
use clap::Args;
use concierge::config::build_model;
use concierge::model::{Cassette, CassetteMode};
use concierge::{Error, Model, Result, Runtime};
use futures::StreamExt;

use self::dataset::Case;
use self::report::Report;
use crate::Cli;
use crate::demo::Sandbox;
use crate::setup::{self, Declared, Resolved};

/// The variable every domain's store (the orders server's too) reads its pinned day from.
const TODAY_ENV: &str = "CONCIERGE_TODAY";

/// `concierge eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Dataset files: TOML (`[[case]]` with `[[case.turn]]`) or JSON Lines (a case per line).
    #[arg(required = true, value_name = "DATASET")]
    pub datasets: Vec<PathBuf>,
    /// Keep every model exchange in this cassette (JSON Lines), to replay later.
    #[arg(long, value_name = "CASSETTE", conflicts_with = "replay")]
    pub record: Option<PathBuf>,
    /// Answer every model call from this cassette: offline, deterministic,
    /// no key (a request it lacks fails its case, saying to record again).
    #[arg(long, value_name = "CASSETTE")]
    pub replay: Option<PathBuf>,
    /// Only the cases whose name contains this.
    #[arg(long, value_name = "TEXT")]
    pub case: Option<String>,
    /// Cases run at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub jobs: u16,
    /// The share of cases that must pass (0 to 1), else the exit status is 1.
    #[arg(long, default_value_t = 1.0, value_parser = share)]
    pub threshold: f64,
    /// Also write the report as JSON here (to `--compare` with later).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Also write the report as JUnit XML here (for CI).
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// The day the domain data takes for today (`YYYY-MM-DD`), for every
    /// case (a dataset's or case's `today` otherwise; the real day without either).
    #[arg(long, value_name = "DAY")]
    pub today: Option<NaiveDate>,
    /// Compare with an earlier JSON report (model A vs B, before vs after a prompt change).
    #[arg(long, value_name = "REPORT")]
    pub compare: Option<PathBuf>,
}

fn share(text: &str) -> std::result::Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("{text:?} is not a share from 0 to 1 (e.g. 0.9)")),
    }
}

/// The models the cases' runtimes get: the default and the ones agents name.
struct EvalModels {
    default: Option<Arc<dyn Model>>,
    named: Vec<(String, Arc<dyn Model>)>,
    /// The default model's name, for the report.
    name: Option<String>,
}

fn invalid(message: impl Into<String>) -> Error {
    Error::InvalidConfig(message.into())
}

/// Runs the datasets; the exit status says whether the pass rate reached the threshold.
pub async fn eval(cli: &Cli, args: &EvalArgs) -> Result<ExitCode> {
    let mut cases = dataset::load_all(&args.datasets).map_err(invalid)?;
    if let Some(filter) = &args.case {
        cases.retain(|c| c.name.contains(filter.as_str()));
        if cases.is_empty() {
            return Err(invalid(format!("no case's name contains {filter:?}")));
        }
    }
    let resolved = setup::resolve(cli)?;
    let declared = setup::declared(&resolved.config)?;
    let cassette = match (&args.record, &args.replay) {
        (Some(path), _) => Some(Cassette::open(path, CassetteMode::Record).map_err(|e| invalid(e.to_string()))?),
        (None, Some(path)) => Some(Cassette::open(path, CassetteMode::Replay).map_err(|e| invalid(e.to_string()))?),
        (None, None) => None,
    };
    let models = models(&resolved, &declared, cassette.as_ref())?;
    let judge = models.default.is_some();
    let skipped = cases
        .iter()
        .flat_map(|c| &c.turns)
        .filter(|t| t.expect.judge.is_some())
        .count();
    let reports: Vec<_> = futures::stream::iter(cases.iter())
        .map(|case| run_case(&resolved, &declared, &models, case, args.today.or(case.today), judge))
        .buffered(usize::from(args.jobs))
        .collect()
        .await;
    let mut cases_run = Vec::with_capacity(reports.len());
    for report in reports {
        cases_run.push(report?);
    }
    if let Some(cassette) = cassette.as_ref().filter(|c| c.mode() == CassetteMode::Record) {
        cassette.save().map_err(|e| invalid(e.to_string()))?;
    }
    let report = Report::new(models.name.clone(), cases_run);
    print!("{}", report.table());
    if !judge && skipped > 0 {
        println!("{skipped} judge criteria were not checked: no model is configured to judge (--model)");
    }
    if let Some(path) = &args.json {
        report.write_json(path).map_err(invalid)?;
    }
    if let Some(path) = &args.junit {
        let xml = report.junit().map_err(invalid)?;
        std::fs::write(path, xml).map_err(|e| invalid(format!("{} cannot be written: {e}", path.display())))?;
    }
    if let Some(path) = &args.compare {
        let before = Report::read_json(path).map_err(invalid)?;
        print!("\n{}", report.compare(&before));
    }
    if report.pass_rate + f64::EPSILON < args.threshold {
        eprintln!(
            "error: {:.0}% of the cases passed, below the threshold of {:.0}%",
            report.pass_rate * 100.0,
            args.threshold * 100.0
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// The models of the configuration, recorded into or replayed from `cassette`.
fn models(resolved: &Resolved, declared: &Declared, cassette: Option<&Cassette>) -> Result<EvalModels> {
    let config = &resolved.config;
    let mut references: Vec<String> = declared.agents.iter().filter_map(|a| a.model.clone()).collect();
    references.extend(config.models.iter().cloned());
    references.sort_unstable();
    references.dedup();
    if let Some(tape) = cassette.filter(|c| c.mode() == CassetteMode::Replay) {
        let recorded = tape.models();
        let name = match (&resolved.model, recorded.len()) {
            (Some(reference), _) => reference.clone(),
            (None, 1) => recorded.iter().next().cloned().unwrap_or_default(),
            (None, 0) => {
                return Err(invalid(
                    "the cassette holds no exchange: record it first with --record (and a --model)",
                ));
            }
            (None, _) => {
                return Err(invalid(format!(
                    "the cassette holds the replies of several models ({}): say which is the default with --model",
                    recorded.into_iter().collect::<Vec<_>>().join(", ")
                )));
            }
        };
        return Ok(EvalModels {
            default: Some(tape.replayer(name.as_str())),
            named: references
                .iter()
                .map(|r| (r.clone(), tape.replayer(r.as_str())))
                .collect(),
            name: Some(name),
        });
    }
    let tape = |model: Arc<dyn Model>| match cassette {
        Some(tape) => tape.model(model),
        None => model,
    };
    let default = match &resolved.model {
        Some(reference) => Some(tape(build_model(&config.model_settings(reference, true))?)),
        None if cassette.is_some() => {
            return Err(invalid(
                "--record needs a model to record: pass --model provider:name (and --base-url for a local server)",
            ));
        }
        None => None,
    };
    let mut named = Vec::new();
    for reference in &references {
        let is_default = resolved.model.as_deref() == Some(reference.as_str());
        named.push((
            reference.clone(),
            tape(build_model(&config.model_settings(reference, is_default))?),
        ));
    }
    Ok(EvalModels {
        default,
        named,
        name: resolved.model.clone(),
    })
}

/// Runs `case` on a runtime of its own, over a fresh copy of the domain data.
async fn run_case(
    resolved: &Resolved,
    declared: &Declared,
    models: &EvalModels,
    case: &Case,
    today: Option<NaiveDate>,
    judge: bool,
) -> Result<case::CaseReport> {
    let sandbox = tempfile::tempdir().map_err(|e| Error::Storage(format!("no directory for the case's data: {e}")))?;
    let rt = case_runtime(resolved, declared, models, sandbox.path(), today).await?;
    let report = case::run(&rt, case, judge).await;
    rt.shutdown().await;
    Ok(report)
}

/// A runtime in memory whose domain files live in `sandbox`: the ones the
/// configuration names are copied there first (a database a path names,
/// as it is now), the rest start fresh (seeded), every one on `today` if pinned.
async fn case_runtime(
    resolved: &Resolved,
    declared: &Declared,
    models: &EvalModels,
    sandbox: &Path,
    today: Option<NaiveDate>,
) -> Result<Runtime> {
    let config = &resolved.config;
    let mut paths = BTreeMap::new();
    for (name, path) in &declared.paths {
        let is_data = path.extension().is_some_and(|e| e == "db" || e == "sqlite");
        let path = match (is_data, path.file_name()) {
            (true, Some(file)) => {
                let copy = sandbox.join(file);
                if path.exists() {
                    std::fs::copy(path, &copy).map_err(|e| {
                        Error::Storage(format!("{} cannot be copied for the eval: {e}", path.display()))
                    })?;
                }
                copy
            }
            _ => path.clone(),
        };
        paths.insert(name.clone(), path);
    }
    let mut builder = Runtime::builder().in_memory().label("concierge eval");
    let servers = declared
        .servers
        .iter()
        .map(|(name, server)| (name.clone(), in_sandbox(server, sandbox, today)))
        .collect();
    // The environment's CONCIERGE_*_DB files are real data: not read here.
    builder = setup::tools(builder, config, servers, sandbox, paths, Some(Sandbox { today }))?;
    if let Some(model) = &models.default {
        builder = builder.model_arc(model.clone());
    }
    for (reference, model) in &models.named {
        builder = builder.named_model(reference.as_str(), model.clone());
    }
    let built = config.apply_hub(builder).agents(declared.agents.clone()).build().await;
    built.map_err(crate::demo::explain)
}

/// `server` (a stdio one) run in `sandbox`, so the files it makes in its
/// working directory land there: its command and arguments that are paths
/// relative to its own directory are made absolute first, the
/// `CONCIERGE_*_DB` variables (real data) it would read point into
/// `sandbox`, and `CONCIERGE_TODAY` pins its day when the case does.
fn in_sandbox(
    server: &concierge::mcp::McpServerConfig,
    sandbox: &Path,
    today: Option<NaiveDate>,
) -> concierge::mcp::McpServerConfig {
    let mut server = server.clone();
    if server.command.is_none() {
        return server;
    }
    let base = server.cwd.clone().unwrap_or_else(|| PathBuf::from("."));
    let here = |arg: &String| {
        let path = Path::new(arg);
        match std::fs::canonicalize(base.join(path)) {
            Ok(absolute) if path.is_relative() => absolute.to_string_lossy().into_owned(),
            _ => arg.clone(),
        }
    };
    server.command = server
        .command
        .as_ref()
        .map(|c| if c.contains('/') { here(c) } else { c.clone() });
    server.args = server.args.iter().map(here).collect();
    let databases: Vec<(String, String)> = std::env::vars()
        .chain(server.env.clone())
        .filter(|(name, _)| name.starts_with("CONCIERGE_") && name.ends_with("_DB"))
        .collect();
    for (name, value) in databases {
        let file = Path::new(&value)
            .file_name()
            .map_or_else(|| format!("{name}.db"), |f| f.to_string_lossy().into_owned());
        server
            .env
            .insert(name, sandbox.join(file).to_string_lossy().into_owned());
    }
    if let Some(day) = today {
        server
            .env
            .insert(TODAY_ENV.to_string(), day.format("%Y-%m-%d").to_string());
    }
    server.cwd = Some(sandbox.to_path_buf());
    server
}
