//! The demo's built-in agents and tools (`concierge-demo`: the calculator,
//! travel, the hint game, tasks, CRM…), linked in with the `demo` feature
//! (on by default; `scripts/demo.sh` turns it on explicitly). A `concierge`
//! built without it runs the agents its files declare, with their MCP tools.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::NaiveDate;
use concierge::{AgentSpec, Error, Result, RuntimeBuilder};

/// An eval's sandbox for the demo's files: no environment variable names
/// one (they name real data), and the day may be pinned so seeded rows and
/// relative dates read the same on any day.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sandbox {
    /// The day every domain takes for today, if pinned.
    pub today: Option<NaiveDate>,
}

/// What a `concierge` built without the demo says when its files need it.
#[cfg(not(feature = "demo"))]
pub const NO_DEMO: &str = "this concierge was built without the demo's agents and tools: build it with \
     `cargo build --locked -p concierge-cli --features demo` (the feature is on unless --no-default-features is given)";

/// The demo's agents (none without the feature).
pub fn agents() -> Vec<AgentSpec> {
    #[cfg(feature = "demo")]
    return concierge_demo::agents();
    #[cfg(not(feature = "demo"))]
    Vec::new()
}

/// Adds the demo's toolsets to `builder`: their files are the ones `paths`
/// names (relative to the file that names them), the rest in `dir`; in a
/// `sandbox`, the environment names none and the day may be pinned. Without
/// the feature, a `[paths]` entry (a demo tool's file) is an error that says
/// how to build the demo in.
pub fn toolsets(
    builder: RuntimeBuilder,
    dir: &Path,
    paths: BTreeMap<String, PathBuf>,
    sandbox: Option<Sandbox>,
) -> Result<RuntimeBuilder> {
    #[cfg(feature = "demo")]
    {
        let mut paths = concierge_demo::DemoPaths::in_dir(dir).named(paths);
        if let Some(sandbox) = sandbox {
            paths = paths.isolated();
            if let Some(day) = sandbox.today {
                paths = paths.on(day);
            }
        }
        paths.check().map_err(Error::InvalidConfig)?;
        Ok(concierge_demo::toolsets_with(&paths)
            .into_iter()
            .fold(builder, RuntimeBuilder::toolset))
    }
    #[cfg(not(feature = "demo"))]
    {
        let _ = (dir, sandbox);
        match paths.keys().next() {
            Some(name) => Err(Error::InvalidConfig(format!("[paths] {name}: {NO_DEMO}"))),
            None => Ok(builder),
        }
    }
}

/// A catalog that names an agent or toolset it does not have says, in a
/// `concierge` built without the demo, that the demo may be what is missing.
pub fn explain(error: Error) -> Error {
    #[cfg(not(feature = "demo"))]
    if let Error::Catalog(catalog) = &error {
        return Error::InvalidConfig(format!("{catalog} ({NO_DEMO})"));
    }
    error
}

/// The demo's runtime for `concierge bench`: its agents and tools.
pub fn install(builder: RuntimeBuilder) -> Result<RuntimeBuilder> {
    #[cfg(feature = "demo")]
    return Ok(concierge_demo::install(builder));
    #[cfg(not(feature = "demo"))]
    {
        let _ = builder;
        Err(Error::InvalidConfig(format!(
            "concierge bench runs the demo's calculator agent; {NO_DEMO}"
        )))
    }
}
