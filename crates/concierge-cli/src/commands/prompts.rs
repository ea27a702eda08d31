//! `concierge prompts`: the MCP servers' prompts (conversation starters),
//! listed or filled in with their arguments.

use std::collections::BTreeMap;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use concierge::mcp::{FilledPrompt, McpPrompt, PromptRole};
use concierge::{Error, Result, Runtime};

/// `concierge prompts`.
#[derive(Debug, Args)]
pub struct PromptsArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: PromptsCommand,
}

/// The `prompts` subcommands.
#[derive(Debug, Subcommand)]
pub enum PromptsCommand {
    /// Lists the prompts of every configured MCP server (or of one), with their arguments.
    List {
        /// Only this server's prompts (`[mcp_servers.NAME]`).
        #[arg(long)]
        server: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Fills in a prompt with its arguments and prints its messages.
    Get {
        /// The prompt's name (`server:name` when several servers have one by that name).
        name: String,
        /// The server that offers it (needed only when several do).
        #[arg(long)]
        server: Option<String>,
        /// An argument, `key=value` (repeat for more).
        #[arg(long = "arg", value_name = "KEY=VALUE")]
        args: Vec<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn invalid(message: impl Into<String>) -> Error {
    Error::InvalidConfig(message.into())
}

/// The servers to look at: `only`, or every configured one.
fn servers(rt: &Runtime, only: Option<&str>) -> Result<Vec<String>> {
    let all = rt.mcp_servers();
    match only {
        Some(server) if all.iter().any(|s| s == server) => Ok(vec![server.to_string()]),
        Some(server) => Err(invalid(if all.is_empty() {
            format!("there is no MCP server {server}: none is configured (add one under [mcp_servers])")
        } else {
            format!("there is no MCP server {server}; the servers are {}", all.join(", "))
        })),
        None if all.is_empty() => Err(invalid(
            "no MCP server is configured, so there are no prompts: add one under [mcp_servers]",
        )),
        None => Ok(all),
    }
}

/// Every prompt of `servers`, with its server.
async fn listed(rt: &Runtime, servers: &[String]) -> Result<Vec<(String, McpPrompt)>> {
    let mut all = Vec::new();
    for server in servers {
        let Some(client) = rt.mcp_client(server) else { continue };
        for prompt in client.prompts().await? {
            all.push((server.clone(), prompt));
        }
    }
    Ok(all)
}

fn parse_args(args: &[String]) -> Result<BTreeMap<String, String>> {
    let mut parsed = BTreeMap::new();
    for arg in args {
        let Some((key, value)) = arg.split_once('=') else {
            return Err(invalid(format!(
                "--arg {arg:?} is not KEY=VALUE, e.g. --arg topic=refunds"
            )));
        };
        if key.trim().is_empty() {
            return Err(invalid(format!("--arg {arg:?} has no key before the =")));
        }
        parsed.insert(key.trim().to_string(), value.to_string());
    }
    Ok(parsed)
}

fn print_prompt(server: &str, prompt: &McpPrompt) {
    let about = prompt.title.as_deref().or(prompt.description.as_deref()).unwrap_or("");
    println!("{server}:{}  {about}", prompt.name);
    for argument in &prompt.arguments {
        let required = if argument.required { " (required)" } else { "" };
        let description = argument.description.as_deref().unwrap_or("");
        println!("  --arg {}=…{required}  {description}", argument.name);
    }
}

fn print_filled(filled: &FilledPrompt) {
    if let Some(description) = &filled.description {
        println!("# {description}");
    }
    for message in &filled.messages {
        let role = match message.role {
            PromptRole::User => "user",
            PromptRole::Assistant => "assistant",
        };
        println!("{role}: {}", message.text);
    }
}

fn json<T: serde::Serialize>(value: &T) -> Result<ExitCode> {
    let text = serde_json::to_string_pretty(value).map_err(|e| invalid(e.to_string()))?;
    println!("{text}");
    Ok(ExitCode::SUCCESS)
}

pub async fn prompts(rt: &Runtime, args: &PromptsArgs) -> Result<ExitCode> {
    match &args.command {
        PromptsCommand::List { server, json: as_json } => {
            let all = listed(rt, &servers(rt, server.as_deref())?).await?;
            if *as_json {
                let value: Vec<serde_json::Value> = all
                    .iter()
                    .map(|(server, prompt)| {
                        let mut v = serde_json::to_value(prompt).unwrap_or_default();
                        v["server"] = server.clone().into();
                        v
                    })
                    .collect();
                return json(&value);
            }
            if all.is_empty() {
                println!("(no prompts)");
            }
            for (server, prompt) in &all {
                print_prompt(server, prompt);
            }
            Ok(ExitCode::SUCCESS)
        }
        PromptsCommand::Get {
            name,
            server,
            args,
            json: as_json,
        } => {
            let arguments = parse_args(args)?;
            // `server:name` names the server too.
            let (server, name) = match (server, name.split_once(':')) {
                (None, Some((s, n))) if rt.mcp_servers().iter().any(|known| known == s) => {
                    (Some(s.to_string()), n.to_string())
                }
                _ => (server.clone(), name.clone()),
            };
            let all = listed(rt, &servers(rt, server.as_deref())?).await?;
            let offering: Vec<&(String, McpPrompt)> = all.iter().filter(|(_, p)| p.name == name).collect();
            let (server, prompt) = match offering.as_slice() {
                [one] => (&one.0, &one.1),
                [] => {
                    let known: Vec<String> = all.iter().map(|(s, p)| format!("{s}:{}", p.name)).collect();
                    return Err(invalid(if known.is_empty() {
                        format!("there is no prompt {name}: the MCP servers offer none")
                    } else {
                        format!("there is no prompt {name}; the prompts are {}", known.join(", "))
                    }));
                }
                several => {
                    let names: Vec<&str> = several.iter().map(|(s, _)| s.as_str()).collect();
                    return Err(invalid(format!(
                        "several MCP servers offer a prompt {name} ({}): say which with --server",
                        names.join(", ")
                    )));
                }
            };
            prompt.check_arguments(&arguments).map_err(invalid)?;
            let client = rt
                .mcp_client(server)
                .ok_or_else(|| invalid(format!("there is no MCP server {server}")))?;
            let filled = client.prompt(&name, arguments).await?;
            if *as_json {
                return json(&filled);
            }
            print_filled(&filled);
            Ok(ExitCode::SUCCESS)
        }
    }
}
