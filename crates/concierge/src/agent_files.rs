//! Agent files (`agents/*.toml`): one agent each, with the MCP servers and
//! the files its tools use, named relative to the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use concierge_core::AgentSpec;

use crate::error::{Error, Result};
use crate::rebase::rebase;

/// Agents read from files, and the MCP servers the files declare.
#[derive(Clone, Debug, Default)]
pub struct AgentFiles {
    /// The agents, sorted by file name.
    pub agents: Vec<AgentSpec>,
    /// MCP servers declared in agent files (each file's own servers are in its agent's toolsets).
    #[cfg(feature = "mcp")]
    pub mcp_servers: BTreeMap<String, crate::mcp::McpServerConfig>,
    /// Files the agents' tools use, by name (each file's `[paths]` table),
    /// relative to the file that names them.
    pub paths: BTreeMap<String, PathBuf>,
}

/// Reads every `*.toml` in `dir`: one [`AgentSpec`] each, plus optional
/// `[mcp_servers.NAME]` tables (the file's agent uses them; a relative `cwd`
/// is relative to the file) and an optional `[paths]` table (files its
/// tools use, by name, relative to the file; two files may name the same
/// one only if they mean the same file).
pub fn load_agents(dir: &Path) -> Result<AgentFiles> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| Error::InvalidConfig(format!("cannot read agents directory {}: {e}", dir.display())))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    let mut files = AgentFiles::default();
    for path in &paths {
        let invalid = |e: &dyn std::fmt::Display| Error::InvalidConfig(format!("{}: {e}", path.display()));
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::InvalidConfig(format!("cannot read {}: {e}", path.display())))?;
        let mut table: toml::Table = toml::from_str(&text).map_err(|e| invalid(&e))?;
        let servers = table.remove("mcp_servers");
        if let Some(paths) = table.remove("paths") {
            let paths: BTreeMap<String, PathBuf> = paths.try_into().map_err(|e| invalid(&e))?;
            let base = path.parent().unwrap_or_else(|| Path::new(""));
            for (name, named) in paths {
                let named = rebase(base, named);
                match files.paths.get(&name) {
                    Some(earlier) if *earlier != named => {
                        return Err(invalid(&format!(
                            "[paths] {name} is {}, but another agent file names it {}: \
                             name one file, or give them different names",
                            named.display(),
                            earlier.display()
                        )));
                    }
                    _ => {
                        files.paths.insert(name, named);
                    }
                }
            }
        }
        #[allow(unused_mut)]
        let mut agent: AgentSpec = toml::Value::Table(table).try_into().map_err(|e| invalid(&e))?;
        #[cfg(feature = "mcp")]
        if let Some(servers) = servers {
            let servers: BTreeMap<String, crate::mcp::McpServerConfig> = servers.try_into().map_err(|e| invalid(&e))?;
            let base = path.parent().unwrap_or_else(|| Path::new(""));
            for (name, mut server) in servers {
                if files.mcp_servers.contains_key(&name) {
                    return Err(invalid(&format!("MCP server {name} is declared twice")));
                }
                server.rebase(&name, base);
                if !agent.toolsets.contains(&name) {
                    agent.toolsets.push(name.clone());
                }
                files.mcp_servers.insert(name, server);
            }
        }
        #[cfg(not(feature = "mcp"))]
        if servers.is_some() {
            return Err(invalid(&"mcp_servers needs the `mcp` feature"));
        }
        files.agents.push(agent);
    }
    Ok(files)
}
