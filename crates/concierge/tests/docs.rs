//! Every example in `docs/agents.md` loads: blocks marked `toml config` as a
//! `concierge.toml`, blocks marked `toml agent` as an agent file.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use concierge::config::{Config, load_agents};

/// The fenced blocks of `text` whose info string is `toml <kind>`.
fn blocks<'a>(text: &'a str, kind: &str) -> Vec<&'a str> {
    let fence = format!("```toml {kind}\n");
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(&fence) {
        let body = &rest[start + fence.len()..];
        let end = body.find("\n```").expect("an unclosed block");
        found.push(&body[..end]);
        rest = &body[end..];
    }
    found
}

#[test]
fn every_example_in_the_goal_file_reference_loads() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/agents.md")).unwrap();
    let configs = blocks(&text, "config");
    let agents = blocks(&text, "agent");
    assert!(!configs.is_empty() && agents.len() >= 6, "the examples are found");

    let dir = tempfile::tempdir().unwrap();
    for (i, block) in configs.iter().enumerate() {
        let path = dir.path().join(format!("concierge-{i}.toml"));
        std::fs::write(&path, block).unwrap();
        let config = Config::load(&path, true).unwrap_or_else(|e| panic!("config example {i}: {e}"));
        assert!(config.db.is_some());
        assert_eq!(config.tools["move_money"].writes, ["accounts"]);
        // The server reads its own section (concierge_server::ServerConfig).
        assert_eq!(config.server["max_runs_per_tenant"].as_integer(), Some(16));
        assert_eq!(config.server["tokens"][0]["tenant"].as_str(), Some("acme"));
        assert_eq!(
            config.mcp_servers["orders_http"].included_tools.as_deref(),
            Some(&["GetCustomerOrders".to_string(), "UpdateOrderStatus".to_string()][..])
        );
    }
    for (i, block) in agents.iter().enumerate() {
        let one = dir.path().join(format!("agent-{i}"));
        std::fs::create_dir(&one).unwrap();
        std::fs::write(one.join("agent.toml"), block).unwrap();
        let files = load_agents(&one).unwrap_or_else(|e| panic!("agent example {i}: {e}\n{block}"));
        assert_eq!(files.agents.len(), 1, "agent example {i}");
    }
    // A typo is refused, so the examples above really were checked field by field.
    let typo = dir.path().join("typo");
    std::fs::create_dir(&typo).unwrap();
    std::fs::write(typo.join("agent.toml"), "id = \"hr\"\nfinish_onn = [\"book_pto\"]\n").unwrap();
    assert!(load_agents(&typo).is_err());
}

#[test]
fn the_memory_pages_agent_loads_with_its_recall() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/memory.md")).unwrap();
    let agents = blocks(&text, "agent");
    assert_eq!(agents.len(), 1);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("agent.toml"), agents[0]).unwrap();
    let files = load_agents(dir.path()).unwrap();
    assert_eq!(files.agents[0].memory.recall, 5);
    assert_eq!(files.agents[0].toolsets, ["memory"]);
}
