//! `concierge`: run agents, chat with them, inspect agents, tools and sessions.

// Before the modules, so that theirs are these: output to a reader that
// has gone ends the program quietly (see `stdout`) instead of panicking.
macro_rules! println {
    () => {
        $crate::stdout::write(format_args!(""), true)
    };
    ($($arg:tt)*) => {
        $crate::stdout::write(format_args!($($arg)*), true)
    };
}

macro_rules! print {
    ($($arg:tt)*) => {
        $crate::stdout::write(format_args!($($arg)*), false)
    };
}

mod commands;
mod demo;
mod fake_server;
mod render;
mod setup;
mod stdout;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc: the runtime allocates from many threads at once, where glibc's
/// allocator contends (a third of a turn's CPU in profiles).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Durable, goal-driven, multi-agent assistants.
#[derive(Debug, Parser)]
#[command(name = "concierge", version, about, propagate_version = true)]
pub struct Cli {
    /// Configuration file [default: ./concierge.toml, if present].
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// The embedded engine's database [default: ./concierge.db].
    #[arg(long, global = true, value_name = "PATH", env = "CONCIERGE_DB")]
    pub db: Option<PathBuf>,
    /// The default model, as provider:name (openai:<name> for any
    /// OpenAI-compatible server, anthropic:<name>). Without one, agents that
    /// have rules run on their rules.
    #[arg(long, global = true, value_name = "PROVIDER:NAME", env = "CONCIERGE_MODEL")]
    pub model: Option<String>,
    /// The default model's base URL (e.g. http://127.0.0.1:8080/v1 for a
    /// local OpenAI-compatible server; Anthropic requests go to {base}/v1/messages).
    #[arg(long, global = true, value_name = "URL", env = "CONCIERGE_BASE_URL")]
    pub base_url: Option<String>,
    /// With the Temporal engine, also run every worker (the session
    /// workflows, the model calls, every agent's tools) in this process,
    /// so that it needs no `concierge worker` beside it.
    #[arg(long, global = true)]
    pub workers: bool,
    /// Logging on stderr (-v warnings and info, -vv debug); without it only
    /// errors the command does not report itself.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Runs one turn and prints the reply.
    Run(commands::run::RunArgs),
    /// A conversation in the terminal: shows tool calls, asks before side effects.
    Chat(commands::chat::ChatArgs),
    /// Answers a confirmation a run is waiting for.
    Confirm(commands::run::ConfirmArgs),
    /// Lists the agents.
    Agents(commands::inspect::ListArgs),
    /// The goals a person can choose from, with their starter prompts.
    Goals(commands::inspect::ListArgs),
    /// Lists the tools (or those of one --category), or shows one with its schema.
    Tools(commands::inspect::ToolsArgs),
    /// Shows a session's conversation.
    History(commands::inspect::HistoryArgs),
    /// Lists the sessions in the database, the most recently active first
    /// (a tenant's with --tenant, a page with --limit and --after).
    Sessions(commands::inspect::SessionsArgs),
    /// MCP: list a configured server's tools, or serve concierge over MCP.
    Mcp(commands::mcp::McpArgs),
    /// The MCP servers' prompts: `prompts list`, or `prompts get NAME --arg
    /// key=value` to fill one in and print its messages.
    Prompts(commands::prompts::PromptsArgs),
    /// Serves the HTTP API: sessions, runs, confirmations, choices, each
    /// session's events as Server-Sent Events, the catalogue, /openapi.json.
    Serve(commands::serve::ServeArgs),
    /// Runs Temporal workers (with `engine = "temporal"`): every worker, or
    /// only some agents' tool calls with --agents, until Ctrl-C.
    Worker(commands::worker::WorkerArgs),
    /// What is remembered about a person across conversations: `memory list
    /// --user U`, `memory forget ID`, `memory forget --all`, `memory export`.
    Memory(commands::memory::MemoryArgs),
    /// Runs at a time or on a cron expression, fired by a running `concierge
    /// serve`: `schedule add MESSAGE --cron "0 9 * * 1-5"`, `schedule list`,
    /// `schedule pause|resume|delete ID`.
    Schedule(commands::schedule::ScheduleArgs),
    /// Where a running `concierge serve` posts, signed, when runs finish,
    /// need the person or fail, and when schedules fire: `webhook add URL
    /// --event run.finished`, `webhook list`, `webhook deliveries ID`,
    /// `webhook pause|resume|delete ID`.
    Webhook(commands::webhook::WebhookArgs),
    /// Forks a conversation at one of its events into a new one (the
    /// original is untouched; what was done before is not done again):
    /// `fork SESSION --at 12`.
    Fork(commands::fork::ForkArgs),
    /// Runs a past run again against another model or planner, its tools
    /// answered from what the run recorded (no side effects), and shows both
    /// answers: `replay SESSION RUN --against-model openai:other`.
    Replay(commands::fork::ReplayArgs),
    /// Erases everything stored of a person, for good: their conversations'
    /// text, memories and schedules (`erase --user U --yes`).
    Erase(commands::erase::EraseArgs),
    /// Runs datasets of conversations against the agents and model and
    /// checks each turn: `eval evals/tasks.toml --replay evals/tasks.cassette.jsonl`
    /// (docs/evals.md).
    Eval(commands::eval::EvalArgs),
    /// API tokens for `concierge serve`: `token new --tenant T --user U`
    /// prints a token and the lines to put in concierge.toml.
    Token(commands::token::TokenArgs),
    /// Benchmarks the runtime against an OpenAI-compatible server (or serves
    /// the benchmark fixture with --serve-fake).
    Bench(commands::bench::BenchArgs),
}

fn main() -> ExitCode {
    // Every HTTP client of the process (models, MCP, `bench --http`) uses
    // rustls on ring: installed once, before any client is built.
    concierge::tls::install_crypto_provider();
    let cli = Cli::parse();
    // Without -v the command reports failures itself, once: the runtime's
    // warnings (each retry of a model call, for one) would say them again.
    let filter = match cli.verbose {
        // Errors, and the engine's word when a command waits for a session
        // another process holds or leaves a run for another process, or
        // when the Temporal server cannot be reached.
        0 => "error,concierge::engine::embedded::actor=warn,concierge_temporal=warn",
        1 => "info",
        _ => "debug",
    };
    tracing_subscriber::fmt()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(filter)),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(commands::dispatch(cli)) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", render::explain(&error));
            ExitCode::FAILURE
        }
    }
}
