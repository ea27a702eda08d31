//! Versions of a runtime's catalog.
//!
//! Tools discovered at run time (an MCP server's) change the catalog while
//! sessions run. A run records the version it started with
//! ([`StartRun::catalog_version`](concierge_core::StartRun::catalog_version))
//! and every input of the run is stepped with that version, so replaying a
//! session gives the same history whatever the servers offer today. A version
//! is named by the fingerprint of the discovered toolsets; tools compiled into
//! the program and agents from its configuration are the program's own and
//! are not versioned (a run on the compiled-in tools alone records no version).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, RwLock};

use concierge_core::{Catalog, CatalogError, ToolSpec, fingerprint};

/// The toolsets filled at run time, by name: what a version records.
type Discovered = BTreeMap<String, Vec<ToolSpec>>;

/// One version of the catalog.
#[derive(Clone, Debug)]
pub struct CatalogVersion {
    /// The version's name (`None`: the program's own tools only).
    pub id: Option<String>,
    /// The agents and tools a run of this version plans with.
    pub catalog: Arc<Catalog>,
}

/// A catalog version that cannot be rebuilt.
#[derive(Debug, thiserror::Error)]
pub enum VersionError {
    /// The stored toolsets do not parse.
    #[error("the recorded tools of catalog version {version} are unreadable: {reason}")]
    Unreadable {
        /// The version that cannot be read.
        version: String,
        /// What the parser said.
        reason: String,
    },
    /// The stored toolsets no longer fit the program's catalog.
    #[error("catalog version {version} cannot be rebuilt with this program's agents and tools: {source}")]
    Incompatible {
        /// The version that does not fit.
        version: String,
        /// What the catalog refused.
        source: CatalogError,
    },
    /// The rebuilt catalog is not the recorded one.
    #[error("catalog version {version} rebuilt differently (as {got}); the program's dynamic toolsets changed")]
    Mismatch {
        /// The version the journal names.
        version: String,
        /// What it rebuilt as.
        got: String,
    },
}

struct State {
    current: CatalogVersion,
    versions: HashMap<String, Arc<Catalog>>,
    recorded: HashMap<String, String>,
}

/// The catalog's versions: the current one, and every one seen in this process.
pub struct Catalogs {
    base: Arc<Catalog>,
    dynamic: BTreeSet<String>,
    state: RwLock<State>,
}

impl std::fmt::Debug for Catalogs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalogs")
            .field("dynamic", &self.dynamic)
            .field("current", &self.current().id)
            .finish()
    }
}

fn discovered(catalog: &Catalog, dynamic: &BTreeSet<String>) -> Discovered {
    dynamic
        .iter()
        .map(|name| {
            let specs = catalog
                .toolsets()
                .get(name)
                .map(|ids| ids.iter().filter_map(|id| catalog.tool(id).cloned()).collect())
                .unwrap_or_default();
            (name.clone(), specs)
        })
        .collect()
}

fn version_of(found: &Discovered) -> Option<(String, String)> {
    if found.values().all(Vec::is_empty) {
        return None;
    }
    let value = serde_json::to_value(found).ok()?;
    let json = serde_json::to_string(found).ok()?;
    Some((fingerprint(&value), json))
}

impl Catalogs {
    /// The versions of `catalog`, whose toolsets named in `dynamic` are
    /// filled at run time (they may be empty or hold remembered tools now).
    pub fn new(catalog: Catalog, dynamic: impl IntoIterator<Item = String>) -> Self {
        let dynamic: BTreeSet<String> = dynamic.into_iter().collect();
        let catalog = Arc::new(catalog);
        let mut versions = HashMap::new();
        let mut recorded = HashMap::new();
        let id = version_of(&discovered(&catalog, &dynamic)).map(|(id, json)| {
            versions.insert(id.clone(), catalog.clone());
            recorded.insert(id.clone(), json);
            id
        });
        let base_toolsets: Discovered = dynamic.iter().map(|n| (n.clone(), Vec::new())).collect();
        let base = base_toolsets
            .iter()
            .fold(catalog.to_builder(), |b, (name, specs)| {
                b.set_toolset(name.clone(), specs.clone())
            })
            .build()
            .map(Arc::new)
            .unwrap_or_else(|_| catalog.clone());
        Self {
            base,
            dynamic,
            state: RwLock::new(State {
                current: CatalogVersion { id, catalog },
                versions,
                recorded,
            }),
        }
    }

    /// The version runs start with now.
    pub fn current(&self) -> CatalogVersion {
        match self.state.read() {
            Ok(state) => state.current.clone(),
            Err(poisoned) => poisoned.into_inner().current.clone(),
        }
    }

    /// Replaces a dynamic toolset's tools; returns whether the catalog changed.
    pub fn set_toolset(&self, name: &str, specs: Vec<ToolSpec>) -> Result<bool, CatalogError> {
        let mut state = self.state.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        let current = state.current.catalog.clone();
        let unchanged = current
            .toolsets()
            .get(name)
            .is_some_and(|ids| ids.len() == specs.len() && specs.iter().all(|s| current.tool(&s.name) == Some(s)));
        if unchanged {
            return Ok(false);
        }
        let next = Arc::new(current.to_builder().set_toolset(name, specs).build()?);
        let id = version_of(&discovered(&next, &self.dynamic)).map(|(id, json)| {
            state.versions.insert(id.clone(), next.clone());
            state.recorded.insert(id.clone(), json);
            id
        });
        state.current = CatalogVersion { id, catalog: next };
        Ok(true)
    }

    /// The catalog of a version seen in this process (`None`: the program's own).
    pub fn get(&self, version: Option<&str>) -> Option<Arc<Catalog>> {
        let state = self.state.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        match version {
            None => Some(if state.current.id.is_none() {
                state.current.catalog.clone()
            } else {
                self.base.clone()
            }),
            Some(id) => state.versions.get(id).cloned(),
        }
    }

    /// What to store so that another process can rebuild `version` (JSON).
    pub fn record(&self, version: &str) -> Option<String> {
        let state = self.state.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        state.recorded.get(version).cloned()
    }

    /// Rebuilds `version` from what [`Catalogs::record`] gave, and keeps it.
    pub fn restore(&self, version: &str, recorded: &str) -> Result<Arc<Catalog>, VersionError> {
        let found: Discovered = serde_json::from_str(recorded).map_err(|e| VersionError::Unreadable {
            version: version.to_string(),
            reason: e.to_string(),
        })?;
        let catalog = found
            .iter()
            .fold(self.base.to_builder(), |b, (name, specs)| {
                b.set_toolset(name.clone(), specs.clone())
            })
            .build()
            .map_err(|source| VersionError::Incompatible {
                version: version.to_string(),
                source,
            })?;
        let got = version_of(&discovered(&catalog, &self.dynamic)).map(|(id, _)| id);
        if got.as_deref() != Some(version) {
            return Err(VersionError::Mismatch {
                version: version.to_string(),
                got: got.unwrap_or_else(|| "no version".into()),
            });
        }
        let catalog = Arc::new(catalog);
        let mut state = self.state.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        state.versions.insert(version.to_string(), catalog.clone());
        state.recorded.insert(version.to_string(), recorded.to_string());
        Ok(catalog)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use concierge_core::AgentSpec;
    use serde_json::json;

    use super::*;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec::new(name, "A tool.", json!({"type": "object"}))
    }

    fn catalogs() -> Catalogs {
        let catalog = Catalog::builder()
            .toolset("own", [spec("add")])
            .toolset("server", Vec::<ToolSpec>::new())
            .agent(AgentSpec::new("a").toolset("own").toolset("server"))
            .build()
            .unwrap();
        Catalogs::new(catalog, ["server".to_string()])
    }

    #[test]
    fn discovery_makes_versions_that_another_process_rebuilds() {
        let here = catalogs();
        assert_eq!(here.current().id, None, "nothing discovered yet");
        assert!(here.set_toolset("server", vec![spec("echo")]).unwrap());
        let v1 = here.current().id.unwrap();
        assert!(!here.set_toolset("server", vec![spec("echo")]).unwrap(), "same tools");
        assert!(here.set_toolset("server", vec![spec("echo"), spec("sum")]).unwrap());
        let v2 = here.current().id.unwrap();
        assert_ne!(v1, v2);
        assert_eq!(here.get(Some(&v1)).unwrap().tools_for(&"a".into()).len(), 2);
        assert_eq!(here.get(None).unwrap().tools_for(&"a".into()).len(), 1);

        let there = catalogs();
        assert!(there.get(Some(&v1)).is_none());
        let rebuilt = there.restore(&v1, &here.record(&v1).unwrap()).unwrap();
        let names: Vec<String> = rebuilt
            .tools_for(&"a".into())
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        assert_eq!(names, ["add", "echo"]);
        assert!(matches!(
            there.restore(&v2, &here.record(&v1).unwrap()),
            Err(VersionError::Mismatch { .. })
        ));
        assert!(matches!(there.restore(&v2, "{"), Err(VersionError::Unreadable { .. })));
    }
}
