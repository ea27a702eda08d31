//! The assistant of `examples/assistant/` as `concierge` builds it there:
//! every agent file it loads (its own and the task manager's and CRM's),
//! every demo toolset, each domain's database in a temp dir on a fixed
//! clock, and the hub in front.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use chrono::{NaiveDate, NaiveDateTime};
use concierge::config::{Config, load_agents};
use concierge::model::ScriptedModel;
use concierge::{RunOptions, RunOutput, Runtime};
use concierge_demo::finance::FinanceStore;
use concierge_demo::food::FoodStore;
use concierge_demo::hr::HrStore;
use tempfile::TempDir;

pub fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/assistant")
}

/// Wednesday 5 March 2025, 10:00: "next Friday" is 7 March.
pub fn now() -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2025, 3, 5)
        .unwrap()
        .and_hms_opt(10, 0, 0)
        .unwrap()
}

pub fn day(m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(2025, m, d).unwrap()
}

pub struct Assistant {
    pub rt: Runtime,
    pub finance: FinanceStore,
    pub hr: HrStore,
    pub food: FoodStore,
    pub dir: TempDir,
}

impl Assistant {
    /// A message in `session`, through the hub unless the session already
    /// talks to an agent.
    pub async fn say(&self, session: &str, text: &str) -> RunOutput {
        self.rt.send(text, options(session)).await.unwrap()
    }

    /// The same, asked by `user`.
    pub async fn say_as(&self, user: &str, session: &str, text: &str) -> RunOutput {
        self.rt.send(text, options(session).user(user)).await.unwrap()
    }
}

/// The options of a message written at the fixture's fixed time.
fn options(session: &str) -> RunOptions {
    let at = now().and_utc().timestamp_millis();
    RunOptions::new()
        .session_id(session)
        .asked_at(concierge::Timestamp(u64::try_from(at).unwrap()))
}

/// Every agent the assistant's concierge.toml loads.
pub fn agents() -> Vec<concierge::AgentSpec> {
    agent_files().0
}

/// Every agent the assistant's concierge.toml loads, and the MCP servers
/// their files declare (the orders goal's; started only if a run uses it).
pub fn agent_files() -> (
    Vec<concierge::AgentSpec>,
    std::collections::BTreeMap<String, concierge::mcp::McpServerConfig>,
) {
    let config = Config::load(&example().join("concierge.toml"), true).unwrap();
    let mut agents = Vec::new();
    let mut servers = std::collections::BTreeMap::new();
    let dirs = config.agents_dir.iter().chain(config.agents_dirs.iter());
    for dir in dirs {
        let files = load_agents(dir).unwrap();
        agents.extend(files.agents);
        servers.extend(files.mcp_servers);
    }
    (agents, servers)
}

pub async fn assistant(model: Option<ScriptedModel>) -> Assistant {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::load(&example().join("concierge.toml"), true).unwrap();
    let finance = FinanceStore::open(dir.path().join("finance.db")).at(now());
    let hr = HrStore::open(dir.path().join("hr.db")).at(now());
    let food = FoodStore::open(dir.path().join("food.db")).at(now());
    let tasks = concierge_demo::tasks::TaskStore::open(dir.path().join("tasks.db")).at(now());
    let knowledge = concierge_demo::tasks::Knowledge::open(example().join("../tasks/knowledge.md"));
    let crm = concierge_demo::crm::CrmStore::open(dir.path().join("crm.db")).at(now());
    let mine = ["finance", "hr", "food", "tasks", "crm"];
    let mut builder = Runtime::builder().sqlite(dir.path().join("concierge.db"));
    for set in concierge_demo::toolsets() {
        if !mine.contains(&set.name()) {
            builder = builder.toolset(set);
        }
    }
    builder = builder
        .toolset(concierge_demo::finance::toolset_with(finance.clone()))
        .toolset(concierge_demo::hr::toolset_with(hr.clone()))
        .toolset(concierge_demo::food::toolset_with(food.clone()))
        .toolset(concierge_demo::tasks::toolset_with(tasks, knowledge))
        .toolset(concierge_demo::crm::toolset_with(crm))
        .agents(concierge_demo::agents());
    let (agents, servers) = agent_files();
    builder = builder.agents(agents);
    for (name, server) in servers {
        builder = builder.mcp_server(name, server);
    }
    let mut builder = config.apply_hub(builder);
    if let Some(model) = model {
        builder = builder.model(model);
    }
    Assistant {
        rt: builder.build().await.unwrap(),
        finance,
        hr,
        food,
        dir,
    }
}
