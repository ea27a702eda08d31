//! File configuration (`concierge.toml`) and agent files (`agents/*.toml`).
//!
//! ```toml
//! db = "concierge.db"                     # the embedded engine's database
//! model = "openai:gpt-4o-mini"            # the default model (provider:name)
//! base_url = "http://127.0.0.1:8080/v1"   # for OpenAI-compatible local servers
//! api_key_env = "OPENAI_API_KEY"          # where the key is (optional for local servers)
//! agents_dir = "agents"                   # one agent per file
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use concierge_core::AgentSpec;
use serde::Deserialize;

use crate::error::{Error, Result};
use crate::model::{Model, OpenAiCompatible};

/// `concierge.toml`. Every field is optional.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The database of the embedded engine.
    pub db: Option<PathBuf>,
    /// The default model, `provider:name` (e.g. `openai:gpt-4o-mini`).
    pub model: Option<String>,
    /// The provider's base URL.
    pub base_url: Option<String>,
    /// The API key itself (prefer `api_key_env`).
    pub api_key: Option<String>,
    /// The environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// Per-request model timeout in seconds.
    pub model_timeout_secs: Option<u64>,
    /// A directory of agent files (`*.toml`, one agent each).
    pub agents_dir: Option<PathBuf>,
}

impl Config {
    /// Reads `path`. A missing file is an empty configuration when
    /// `required` is false; a file that does not parse is an error that says where.
    pub fn load(path: &Path, required: bool) -> Result<Self> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => return Ok(Self::default()),
            Err(e) => return Err(Error::InvalidConfig(format!("cannot read {}: {e}", path.display()))),
        };
        let mut config: Config =
            toml::from_str(&text).map_err(|e| Error::InvalidConfig(format!("{}: {e}", path.display())))?;
        // Relative paths in the file are relative to the file.
        let base = path.parent().unwrap_or_else(|| Path::new(""));
        config.db = config.db.map(|p| rebase(base, p));
        config.agents_dir = config.agents_dir.map(|p| rebase(base, p));
        Ok(config)
    }
}

fn rebase(base: &Path, path: PathBuf) -> PathBuf {
    if path.is_absolute() || base.as_os_str().is_empty() {
        path
    } else {
        base.join(path)
    }
}

/// Where a model's settings come from: the reference and the connection.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelSettings {
    /// `provider:name`.
    pub reference: String,
    /// Base URL override.
    pub base_url: Option<String>,
    /// The key.
    pub api_key: Option<String>,
    /// Per-request timeout.
    pub timeout: Option<Duration>,
}

/// Builds a model from `provider:name`; a provider that cannot work (no key
/// for a hosted endpoint, a bad URL, an unknown provider) is an error now,
/// not at the first call.
pub fn build_model(settings: &ModelSettings) -> Result<Arc<dyn Model>> {
    let Some((provider, name)) = settings.reference.split_once(':') else {
        return Err(Error::InvalidConfig(format!(
            "model {:?} must be written provider:name, e.g. openai:gpt-4o-mini",
            settings.reference
        )));
    };
    if name.trim().is_empty() {
        return Err(Error::InvalidConfig(format!(
            "model {:?} has no name after the provider",
            settings.reference
        )));
    }
    if let Some(url) = &settings.base_url {
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| Error::InvalidConfig(format!("base URL {url:?} is not a URL: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(Error::InvalidConfig(format!(
                "base URL {url:?} must start with http:// or https://"
            )));
        }
    }
    match provider {
        "openai" => {
            let base = settings
                .base_url
                .clone()
                .unwrap_or_else(|| OpenAiCompatible::DEFAULT_BASE_URL.to_string());
            let hosted = base.contains("api.openai.com");
            if hosted && settings.api_key.is_none() {
                return Err(Error::InvalidConfig(
                    "OpenAI needs an API key: set OPENAI_API_KEY (or api_key_env in concierge.toml); \
                     for a local OpenAI-compatible server pass --base-url"
                        .into(),
                ));
            }
            let mut model = OpenAiCompatible::new(name)
                .base_url(base)
                .api_key(settings.api_key.clone());
            if let Some(timeout) = settings.timeout {
                model = model.timeout(timeout);
            }
            Ok(Arc::new(model))
        }
        other => Err(Error::InvalidConfig(format!(
            "unknown model provider {other:?}; supported: openai (OpenAI-compatible servers)"
        ))),
    }
}

/// Reads every `*.toml` in `dir` as an [`AgentSpec`], sorted by file name.
pub fn load_agents(dir: &Path) -> Result<Vec<AgentSpec>> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| Error::InvalidConfig(format!("cannot read agents directory {}: {e}", dir.display())))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Error::InvalidConfig(format!("cannot read {}: {e}", path.display())))?;
            toml::from_str::<AgentSpec>(&text).map_err(|e| Error::InvalidConfig(format!("{}: {e}", path.display())))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_references_are_checked_at_startup() {
        let s = |r: &str, url: Option<&str>, key: Option<&str>| ModelSettings {
            reference: r.into(),
            base_url: url.map(Into::into),
            api_key: key.map(Into::into),
            timeout: None,
        };
        assert!(build_model(&s("gpt-4o", None, None)).is_err());
        assert!(build_model(&s("openai:", None, None)).is_err());
        let hosted = build_model(&s("openai:gpt-4o", None, None)).err().unwrap().to_string();
        assert!(hosted.contains("OPENAI_API_KEY"), "{hosted}");
        assert!(build_model(&s("openai:gpt-4o", None, Some("k"))).is_ok());
        assert!(build_model(&s("openai:smollm2", Some("http://127.0.0.1:1/v1"), None)).is_ok());
        assert!(build_model(&s("openai:x", Some("localhost:8080"), None)).is_err());
        assert!(build_model(&s("mystery:x", None, None)).is_err());
    }

    #[test]
    fn files_parse_and_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("concierge.toml");
        std::fs::write(
            &config,
            "db = \"data/c.db\"\nmodel = \"openai:m\"\nagents_dir = \"agents\"\n",
        )
        .unwrap();
        let parsed = Config::load(&config, true).unwrap();
        assert_eq!(parsed.db, Some(dir.path().join("data/c.db")));
        assert_eq!(parsed.model.as_deref(), Some("openai:m"));
        assert_eq!(
            Config::load(&dir.path().join("missing.toml"), false).unwrap(),
            Config::default()
        );
        assert!(Config::load(&dir.path().join("missing.toml"), true).is_err());
        std::fs::write(&config, "modle = 1\n").unwrap();
        let error = Config::load(&config, true).unwrap_err().to_string();
        assert!(error.contains("concierge.toml") && error.contains("modle"), "{error}");

        let agents = dir.path().join("agents");
        std::fs::create_dir(&agents).unwrap();
        std::fs::write(
            agents.join("helper.toml"),
            r#"
id = "helper"
name = "Helper"
description = "Answers questions"
instructions = "Be brief."
tools = ["calculator"]

[[rules.routes]]
keywords = ["hello"]
reply = "Hi!"
"#,
        )
        .unwrap();
        let specs = load_agents(&agents).unwrap();
        assert_eq!(specs[0].id, "helper");
        assert_eq!(specs[0].tools, ["calculator".into()] as [concierge_core::ToolId; 1]);
        assert!(specs[0].rules.is_some());
    }
}
