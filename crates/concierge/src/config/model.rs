//! Building a model from its settings (`provider:name`, a base URL, a key,
//! timeouts): what `concierge.toml`'s model keys and `[providers.*]` come to.

use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::model::http::Connection;
use crate::model::{Anthropic, Model, OpenAiCompatible};

/// The environment variable a provider's key is read from by default.
pub fn default_key_env(provider: &str) -> &'static str {
    match provider {
        "anthropic" => "ANTHROPIC_API_KEY",
        _ => "OPENAI_API_KEY",
    }
}

/// Everything needed to build one model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelSettings {
    /// `provider:name`.
    pub reference: String,
    /// The provider's base URL, instead of its default.
    pub base_url: Option<String>,
    /// The API key, if the provider needs one.
    pub api_key: Option<String>,
    /// How long one attempt may take (default 120 s).
    pub timeout: Option<Duration>,
    /// How long connecting may take (default 10 s).
    pub connect_timeout: Option<Duration>,
    /// How long the whole call may take, retries included (default 300 s).
    pub total_timeout: Option<Duration>,
    /// The largest request body sent, in bytes (default 8 MiB).
    pub max_request_bytes: Option<usize>,
    /// Extra HTTP headers sent on every request.
    pub headers: Vec<(String, String)>,
    /// `max_tokens` (Anthropic).
    pub max_tokens: Option<u32>,
    /// Whether to stream when deltas are wanted.
    pub stream: bool,
}

impl ModelSettings {
    /// Settings for `reference` with nothing else set (streaming on).
    pub fn new(reference: impl Into<String>) -> Self {
        Self {
            reference: reference.into(),
            stream: true,
            ..Self::default()
        }
    }
}

/// Builds a model from `provider:name`; a provider that cannot work (no key
/// for a hosted endpoint, a bad URL, an unknown provider) is an error now,
/// not at the first call.
pub fn build_model(settings: &ModelSettings) -> Result<Arc<dyn Model>> {
    let Some((provider, name)) = settings.reference.split_once(':') else {
        return Err(Error::InvalidConfig(format!(
            "model {:?} must be written provider:name, e.g. openai:gpt-4o-mini or anthropic:claude-3-5-haiku-latest",
            settings.reference
        )));
    };
    if name.trim().is_empty() {
        return Err(Error::InvalidConfig(format!(
            "model {:?} has no name after the provider",
            settings.reference
        )));
    }
    let zero = |what: &str| Error::InvalidConfig(format!("{what} for {} must be more than zero", settings.reference));
    for (value, what) in [
        (settings.timeout, "timeout_secs"),
        (settings.connect_timeout, "connect_timeout_secs"),
        (settings.total_timeout, "total_timeout_secs"),
    ] {
        if value.is_some_and(|d| d.is_zero()) {
            return Err(zero(what));
        }
    }
    if settings.max_request_bytes == Some(0) {
        return Err(zero("max_request_bytes"));
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
    let missing_key = |hosted: &str| {
        Error::InvalidConfig(format!(
            "{} needs an API key for {hosted}: set {} (or api_key_env in concierge.toml); \
             for a local server pass --base-url",
            settings.reference,
            default_key_env(provider)
        ))
    };
    // A hosted endpoint without a key is an error now, not at the first call.
    let connect = |connection: &mut Connection, default_base: &str, hosted: &str| -> Result<()> {
        let base = settings.base_url.as_deref().unwrap_or(default_base);
        if base.contains(hosted) && settings.api_key.is_none() {
            return Err(missing_key(hosted));
        }
        connection.base_url = base.trim_end_matches('/').to_string();
        connection.api_key = settings.api_key.clone().filter(|k| !k.is_empty());
        connection.stream = settings.stream;
        connection.headers.extend(settings.headers.iter().cloned());
        if let Some(timeout) = settings.timeout {
            connection.timeout = timeout;
        }
        if let Some(timeout) = settings.connect_timeout {
            connection.set_connect_timeout(timeout);
        }
        if let Some(timeout) = settings.total_timeout {
            connection.total_timeout = timeout;
        }
        if let Some(bytes) = settings.max_request_bytes {
            connection.max_request_bytes = bytes;
        }
        Ok(())
    };
    match provider {
        "openai" => {
            let mut model = OpenAiCompatible::new(name);
            connect(
                model.connection_mut(),
                OpenAiCompatible::DEFAULT_BASE_URL,
                "api.openai.com",
            )?;
            Ok(Arc::new(model))
        }
        "anthropic" => {
            let mut model = Anthropic::new(name);
            connect(model.connection_mut(), Anthropic::DEFAULT_BASE_URL, "api.anthropic.com")?;
            if let Some(max) = settings.max_tokens {
                model = model.max_tokens(max);
            }
            Ok(Arc::new(model))
        }
        other => Err(Error::InvalidConfig(format!(
            "unknown model provider {other:?}; supported: openai (OpenAI-compatible servers) and anthropic"
        ))),
    }
}
