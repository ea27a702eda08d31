//! `concierge agents`, `tools`, `history`, `sessions`.

use std::process::ExitCode;

use clap::Args;
use concierge::{AgentSpec, Result, Runtime, SessionQuery, ToolSpec};
use serde::Serialize;

use crate::render;
use crate::render::clean;

/// Options of the listing commands.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `concierge sessions`.
#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// Only this tenant's sessions (as the server's tokens name tenants).
    #[arg(long, value_name = "TENANT")]
    pub tenant: Option<String>,
    /// At most this many, the most recently active first.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub limit: Option<u16>,
    /// The page after this session (the last one listed before; its full id).
    #[arg(long, value_name = "SESSION")]
    pub after: Option<String>,
    /// Child runs' sessions too.
    #[arg(long)]
    pub children: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `concierge tools`.
#[derive(Debug, Args)]
pub struct ToolsArgs {
    /// Show this tool with its schema.
    pub name: Option<String>,
    /// Only the tools of this category (e.g. finance).
    #[arg(long)]
    pub category: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `concierge history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The session.
    pub session: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

fn print_json<T: Serialize>(value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| concierge::Error::InvalidConfig(format!("cannot print JSON: {e}")))?;
    println!("{text}");
    Ok(())
}

pub async fn agents(rt: &Runtime, args: &ListArgs) -> Result<ExitCode> {
    let catalog = rt.catalog();
    let agents: Vec<&AgentSpec> = catalog.agents().map(|a| &a.spec).collect();
    if args.json {
        print_json(&agents)?;
        return Ok(ExitCode::SUCCESS);
    }
    for agent in agents {
        let tools: Vec<String> = catalog
            .tools_for(&agent.id)
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        println!("{}  ({})", clean(agent.id.as_str()), clean(&agent.name));
        if !agent.description.is_empty() {
            println!("    {}", clean(&agent.description));
        }
        println!(
            "    tools: {}",
            if tools.is_empty() {
                "-".into()
            } else {
                clean(&tools.join(", "))
            }
        );
        if !agent.handoffs.is_empty() {
            let handoffs: Vec<String> = agent.handoffs.iter().map(ToString::to_string).collect();
            println!("    hands off to: {}", clean(&handoffs.join(", ")));
        }
        let planner = if agent.rules.is_some() {
            "model, or rules without one"
        } else {
            "model"
        };
        println!("    plans with: {planner}");
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn tools(rt: &Runtime, args: &ToolsArgs) -> Result<ExitCode> {
    for server in rt.mcp_servers() {
        if let Err(error) = rt.discover(&server).await {
            eprintln!("warning: {error}");
        }
    }
    let catalog = rt.catalog();
    if let Some(name) = &args.name {
        let Some(spec) = catalog.tool(&name.as_str().into()) else {
            let names: Vec<String> = catalog.tools().map(|t| t.name.to_string()).collect();
            eprintln!(
                "error: no tool named \"{}\"; tools: {} (`concierge tools` lists them)",
                clean(name),
                clean(&names.join(", "))
            );
            return Ok(ExitCode::FAILURE);
        };
        if args.json {
            print_json(&spec)?;
            return Ok(ExitCode::SUCCESS);
        }
        println!("{}", clean(spec.name.as_str()));
        println!("  {}", clean(&spec.description).replace('\n', "\n  "));
        if let Some(category) = &spec.category {
            println!("  category: {}", clean(category));
        }
        let flags = render::annotations(spec);
        if !flags.is_empty() {
            println!("  annotations: {flags}");
        }
        if !spec.requires.is_empty() {
            println!("  requires: {}", clean(&spec.requires.join(", ")));
        }
        if !spec.provides.is_empty() {
            println!("  provides: {}", clean(&spec.provides.join(", ")));
        }
        let schema = serde_json::to_string_pretty(&spec.input_schema).unwrap_or_default();
        println!("  schema:\n    {}", schema.replace('\n', "\n    "));
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(category) = &args.category {
        let tools = catalog.tools_in_category(category);
        if tools.is_empty() {
            let known: Vec<String> = catalog.tool_categories().into_keys().collect();
            eprintln!(
                "error: no tool is in the category \"{}\"; categories: {}",
                clean(category),
                clean(&known.join(", "))
            );
            return Ok(ExitCode::FAILURE);
        }
        if args.json {
            print_json(&tools)?;
            return Ok(ExitCode::SUCCESS);
        }
        for spec in tools {
            let first = spec.description.lines().next().unwrap_or_default();
            println!("  {:<24} {}", clean(spec.name.as_str()), clean(first));
        }
        return Ok(ExitCode::SUCCESS);
    }
    if args.json {
        let tools: Vec<&ToolSpec> = catalog.tools().collect();
        print_json(&tools)?;
        return Ok(ExitCode::SUCCESS);
    }
    for (set, members) in catalog.toolsets() {
        println!("[{}]", clean(set.as_ref()));
        for spec in members.iter().filter_map(|t| catalog.tool(t)) {
            let first = spec.description.lines().next().unwrap_or_default();
            println!("  {:<24} {}", clean(spec.name.as_str()), clean(first));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `concierge goals`: the catalogue as a person sees it.
pub async fn goals(rt: &Runtime, args: &ListArgs) -> Result<ExitCode> {
    let catalog = rt.catalog();
    let goals = catalog.goals();
    if args.json {
        print_json(&goals)?;
        return Ok(ExitCode::SUCCESS);
    }
    println!("What I can help with:");
    for (i, goal) in goals.iter().enumerate() {
        let mut line = format!("{}. {}", i + 1, goal.name);
        if !goal.description.is_empty() {
            line.push_str(&format!(" — {}", goal.description));
        }
        println!("{}", clean(&line));
        if let Some(prompt) = &goal.starter_prompt {
            println!("   {}", clean(prompt));
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn history(rt: &Runtime, args: &HistoryArgs) -> Result<ExitCode> {
    let session = rt.session(args.session.as_str()).await?;
    if args.json {
        #[derive(Serialize)]
        struct History<'a> {
            session: &'a concierge::SessionId,
            agent: &'a concierge::AgentId,
            messages: &'a [concierge::Message],
            usage: concierge::Usage,
        }
        print_json(&History {
            session: session.id(),
            agent: session.agent(),
            messages: session.history(),
            usage: session.usage(),
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    for message in session.history() {
        println!("{}", render::message(message));
    }
    let usage = session.usage();
    let cost = match usage.cost_usd {
        Some(cost) => format!("${cost:.6}"),
        None => "unknown (no price configured for a model used)".to_string(),
    };
    println!(
        "-- session {} with {}; {} runs; tokens in {} / out {}; cost {cost}",
        clean(session.id().as_str()),
        clean(session.agent().as_str()),
        session.runs_started(),
        usage.input_tokens,
        usage.output_tokens
    );
    if let Some(pending) = session.pending_confirmation() {
        println!(
            "-- waiting for a confirmation of {} ({})",
            clean(pending.tool.as_str()),
            clean(pending.call_id.as_str())
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Lists sessions, the most recently active first: everyone's, or a
/// tenant's; every one, or a page of them.
pub async fn sessions(rt: &Runtime, args: &SessionsArgs) -> Result<ExitCode> {
    let mut query = SessionQuery::new();
    if let Some(tenant) = &args.tenant {
        query = query.tenant(Some(tenant.as_str()));
    }
    if args.children {
        query = query.with_children();
    }
    if let Some(after) = &args.after {
        query = query.after(after.as_str());
    }
    if let Some(limit) = args.limit {
        query = query.limit(usize::from(limit));
    }
    let (sessions, more) = if args.limit.is_some() || args.after.is_some() {
        let page = rt.session_page(query).await?;
        (page.sessions, page.more)
    } else {
        (rt.every_session(query).await?, false)
    };
    if args.json {
        print_json(&sessions)?;
        return Ok(ExitCode::SUCCESS);
    }
    for s in &sessions {
        let state = if s.live { "live" } else { "idle" };
        println!("{}  {}  {state}", clean(s.id.as_str()), clean(s.agent.as_str()));
    }
    if let (true, Some(last)) = (more, sessions.last()) {
        println!("-- more: --after {}", clean(last.id.as_str()));
    }
    Ok(ExitCode::SUCCESS)
}
