//! `[mcp_servers.NAME]`: how to reach an MCP server.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::MAX_MESSAGE_BYTES;
use crate::error::{Error, Result};

/// An MCP server, as configured in `concierge.toml` or an agent file:
/// either a child process speaking stdio (`command`, `args`, `env`), or a
/// streamable-HTTP endpoint (`url`, `headers`).
///
/// ```toml
/// [mcp_servers.business]
/// command = "npx"
/// args = ["-y", "@company/business-mcp"]
/// included_tools = ["GetCustomerOrders", "UpdateOrderStatus"]
///
/// [mcp_servers.search]
/// url = "https://mcp.example.com/mcp"
/// headers = { Authorization = "Bearer ..." }
/// prefix = "search_"
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program to run (stdio transport). A bare name (no `/`) is the
    /// program of that name beside the running executable when there is
    /// one (so `concierge-orders` is the one built or installed with
    /// `concierge`), else looked up in `PATH` as usual; see
    /// [`McpServerConfig::program`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Arguments passed to `command`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Extra environment variables.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The directory `command` runs in; the current one when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// The endpoint (streamable-HTTP transport).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP headers (e.g. `Authorization`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// OAuth for a `url` server that requires it: concierge gets its own
    /// access token with the client-credentials grant and renews it when it
    /// expires or is refused. Needs the `mcp-oauth` feature (on in the CLI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<McpOAuth>,
    /// Only these of the server's tools (`included_tools`; the others are not offered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub included_tools: Option<Vec<String>>,
    /// Put before every tool name, so two servers' tools never collide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Per-call timeout in seconds (default 30); a server that does not
    /// answer in time is restarted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// Run the server's tools without asking, whatever their annotations.
    /// By default a tool that may change something (not `readOnlyHint`, and
    /// not `destructiveHint: false`; a tool without annotations counts as
    /// destructive, as the MCP specification says) asks a person first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trust: bool,
    /// The largest message the server may send, in bytes (default and most
    /// [`MAX_MESSAGE_BYTES`], 16 MiB); a call answered with more fails at
    /// once as too large.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_message_bytes: Option<usize>,
    /// Whether the server may use the model during its tool calls (MCP
    /// sampling): `deny` (the default), `allow`, or `ask` the person each
    /// time. See `docs/mcp.md`, "Sampling".
    #[serde(default, skip_serializing_if = "is_deny")]
    pub sampling: super::SamplingPolicy,
    /// The model a sampling request uses (a configured model's name); the
    /// calling agent's model by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling_model: Option<String>,
    /// The most tokens a sampled reply may have (default 1024); a request
    /// for more gets this many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling_max_tokens: Option<u32>,
}

/// `oauth` of an HTTP MCP server: how concierge gets its access token from
/// the server's authorization server (found from the server's
/// protected-resource metadata, RFC 9728).
///
/// With the client-credentials grant (the default; MCP's machine-to-machine
/// authorization) concierge is a registered client with a secret:
///
/// ```toml
/// [mcp_servers.crm]
/// url = "https://mcp.example.com/mcp"
/// oauth = { client_id = "concierge", client_secret_env = "CRM_MCP_SECRET", scopes = ["crm.read"] }
/// ```
///
/// With the authorization-code grant a person signs in once in a browser
/// (`concierge mcp login NAME`; PKCE, and dynamic client registration when
/// no `client_id` is given); the tokens are kept in `credentials_file` and
/// refreshed as they expire:
///
/// ```toml
/// [mcp_servers.docs]
/// url = "https://docs.example.com/mcp"
/// oauth = { grant = "authorization_code", scopes = ["docs.read"] }
/// ```
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpOAuth {
    /// How the token is got: `client_credentials` (the default) or
    /// `authorization_code`.
    #[serde(default, skip_serializing_if = "OAuthGrant::is_client_credentials")]
    pub grant: OAuthGrant,
    /// The client id the authorization server knows concierge by (for the
    /// authorization-code grant, empty: concierge registers itself).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub client_id: String,
    /// The environment variable that holds the client secret (a file never
    /// holds the secret itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_env: Option<String>,
    /// The client secret itself, for a program that holds it (set in code
    /// only: never read from or written to a file).
    #[serde(skip)]
    pub client_secret: Option<String>,
    /// The scopes to ask for; the server's defaults when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// The resource indicator (RFC 8707) to ask a token for; the server's
    /// URL by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// Authorization code: where the sign-in's tokens are kept (written
    /// readable by the owner only). The CLI's default is
    /// `.concierge/oauth/NAME.json` beside `concierge.toml`; a relative path
    /// is read from there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_file: Option<PathBuf>,
    /// Authorization code: the loopback port the sign-in's redirect comes
    /// back to (`http://127.0.0.1:PORT/callback`, what a registered client
    /// names as its redirect URI); any free port by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_port: Option<u16>,
}

/// How concierge gets an MCP server's access token (see [`McpOAuth`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OAuthGrant {
    /// Machine to machine: a registered client and its secret.
    #[default]
    ClientCredentials,
    /// A person signs in once in a browser (`concierge mcp login NAME`);
    /// the tokens are kept and refreshed.
    AuthorizationCode,
}

impl OAuthGrant {
    fn is_client_credentials(&self) -> bool {
        *self == OAuthGrant::ClientCredentials
    }
}

impl std::fmt::Debug for McpOAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpOAuth")
            .field("client_id", &self.client_id)
            .field("client_secret_env", &self.client_secret_env)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "<redacted>"))
            .field("scopes", &self.scopes)
            .field("resource", &self.resource)
            .field("grant", &self.grant)
            .field("credentials_file", &self.credentials_file)
            .field("redirect_port", &self.redirect_port)
            .finish()
    }
}

impl McpOAuth {
    /// The client `client_id`, its secret in the environment variable
    /// `client_secret_env`.
    pub fn client_credentials(client_id: impl Into<String>, client_secret_env: impl Into<String>) -> Self {
        Self {
            client_id: client_id.into(),
            client_secret_env: Some(client_secret_env.into()),
            ..Self::default()
        }
    }

    /// The client `client_id` with the secret `client_secret` (a program
    /// that holds the secret itself).
    pub fn with_secret(client_id: impl Into<String>, client_secret: impl Into<String>) -> Self {
        Self {
            client_id: client_id.into(),
            client_secret: Some(client_secret.into()),
            ..Self::default()
        }
    }

    /// A person signs in once in a browser (`concierge mcp login`, or
    /// [`login`](super::login)); the tokens are kept in `credentials_file`.
    pub fn authorization_code(credentials_file: impl Into<PathBuf>) -> Self {
        Self {
            grant: OAuthGrant::AuthorizationCode,
            credentials_file: Some(credentials_file.into()),
            ..Self::default()
        }
    }

    /// The client id the authorization server knows concierge by.
    #[must_use]
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = client_id.into();
        self
    }

    /// Where the sign-in's tokens are kept: `credentials_file`, or
    /// `.concierge/oauth/SERVER.json` under the working directory.
    pub fn credentials_path(&self, server: &str) -> PathBuf {
        self.credentials_file
            .clone()
            .unwrap_or_else(|| default_credentials_file(Path::new("."), server))
    }

    /// Asks for these scopes.
    #[must_use]
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The client secret: given, or read from the environment; `Err` says
    /// what to set.
    pub fn secret(&self, server: &str) -> std::result::Result<String, String> {
        if let Some(secret) = &self.client_secret {
            return Ok(secret.clone());
        }
        match &self.client_secret_env {
            Some(var) => std::env::var(var).map_err(|_| {
                format!(
                    "set {var} to the client secret of the OAuth client {:?} (MCP server {server})",
                    self.client_id
                )
            }),
            None => Err(format!(
                "MCP server {server}: oauth needs client_secret_env, the environment variable that holds the client \
                 secret"
            )),
        }
    }
}

/// Where the sign-in of MCP server `server` is kept by default, for a
/// project in `dir`.
pub fn default_credentials_file(dir: &Path, server: &str) -> PathBuf {
    dir.join(".concierge").join("oauth").join(format!("{server}.json"))
}

fn is_deny(policy: &super::SamplingPolicy) -> bool {
    *policy == super::SamplingPolicy::Deny
}

impl McpServerConfig {
    /// A stdio server: `command` with `args`.
    pub fn stdio(command: impl Into<String>, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            command: Some(command.into()),
            args: args.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// A streamable-HTTP server at `url`.
    pub fn http(url: impl Into<String>) -> Self {
        Self {
            url: Some(url.into()),
            ..Self::default()
        }
    }

    /// Authorizes with OAuth (see [`McpOAuth`]).
    #[must_use]
    pub fn oauth(mut self, oauth: McpOAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// Keeps only these tools.
    pub fn include(mut self, tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.included_tools = Some(tools.into_iter().map(Into::into).collect());
        self
    }

    /// Prefixes every tool name.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// Adds an environment variable (stdio).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Adds an HTTP header.
    pub fn header(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(key.into(), value.into());
        self
    }

    /// Trusts the server: its tools run without asking for confirmation.
    pub fn trusted(mut self) -> Self {
        self.trust = true;
        self
    }

    /// Sets what the server may do with the model (MCP sampling).
    pub fn sampling(mut self, policy: super::SamplingPolicy) -> Self {
        self.sampling = policy;
        self
    }

    /// Sets the per-call timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout_secs = Some(timeout.as_secs().max(1));
        self
    }

    /// Lowers the largest message the server may send, in bytes (at most
    /// [`MAX_MESSAGE_BYTES`]).
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = Some(bytes);
        self
    }

    /// The largest message the server may send, in bytes.
    pub fn message_limit(&self) -> usize {
        self.max_message_bytes
            .unwrap_or(MAX_MESSAGE_BYTES)
            .clamp(1, MAX_MESSAGE_BYTES)
    }

    /// The per-call timeout.
    pub fn call_timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs.unwrap_or(30))
    }

    /// Reads the server `name`'s relative paths (its working directory, its
    /// sign-in's credentials file) from `base`, the directory of the file
    /// that declares it; the sign-in is kept in `.concierge/oauth/` there
    /// unless the file says where.
    pub fn rebase(&mut self, name: &str, base: &Path) {
        self.cwd = Some(crate::rebase::rebase(
            base,
            self.cwd.take().unwrap_or_else(|| PathBuf::from(".")),
        ));
        if let Some(oauth) = self.oauth.as_mut().filter(|o| o.grant == OAuthGrant::AuthorizationCode) {
            oauth.credentials_file = Some(match oauth.credentials_file.take() {
                Some(path) => crate::rebase::rebase(base, path),
                None => default_credentials_file(base, name),
            });
        }
    }

    /// Checks that exactly one transport is set and the URL parses.
    pub fn check(&self, name: &str) -> Result<()> {
        if let Some(bytes) = self.max_message_bytes {
            if bytes == 0 || bytes > MAX_MESSAGE_BYTES {
                return Err(Error::InvalidConfig(format!(
                    "MCP server {name}: max_message_bytes is {bytes}; it must be between 1 and {MAX_MESSAGE_BYTES} \
                     (16 MiB, the most the MCP client reads in one message)"
                )));
            }
        }
        if let Some(oauth) = &self.oauth {
            if self.url.is_none() {
                return Err(Error::InvalidConfig(format!(
                    "MCP server {name}: oauth is for a server reached by url; a command's server is trusted as a \
                     local process (give it credentials with env)"
                )));
            }
            let no_secret = oauth.client_secret.is_none()
                && oauth
                    .client_secret_env
                    .as_deref()
                    .is_none_or(|var| var.trim().is_empty());
            let client_credentials = oauth.grant == OAuthGrant::ClientCredentials;
            if client_credentials && (oauth.client_id.trim().is_empty() || no_secret) {
                return Err(Error::InvalidConfig(format!(
                    "MCP server {name}: oauth needs client_id and client_secret_env (the environment variable \
                     that holds the client secret)"
                )));
            }
        }
        match (&self.command, &self.url) {
            (Some(_), None) => Ok(()),
            (None, Some(url)) => {
                let parsed = reqwest::Url::parse(url)
                    .map_err(|e| Error::InvalidConfig(format!("MCP server {name}: url {url:?} is not a URL: {e}")))?;
                if matches!(parsed.scheme(), "http" | "https") {
                    Ok(())
                } else {
                    Err(Error::InvalidConfig(format!(
                        "MCP server {name}: url {url:?} must be http(s)"
                    )))
                }
            }
            (Some(_), Some(_)) => Err(Error::InvalidConfig(format!(
                "MCP server {name} has both command and url: use command (stdio) or url (HTTP)"
            ))),
            (None, None) => Err(Error::InvalidConfig(format!(
                "MCP server {name} needs a command (stdio) or a url (streamable HTTP)"
            ))),
        }
    }

    /// The program `command` starts: a bare name (no path separator) is
    /// the file of that name beside the running executable (symbolic links
    /// followed) when one exists there; otherwise, and for a path, the
    /// command as written (a bare name is then looked up in `PATH`, a
    /// relative path is relative to `cwd`).
    pub fn program(&self) -> Option<PathBuf> {
        let command = self.command.as_deref()?;
        let exe = std::env::current_exe().ok();
        Some(program_beside(command, exe.as_deref().and_then(Path::parent)))
    }

    /// How the server is reached, for messages.
    pub fn describe(&self) -> String {
        match (&self.command, &self.url) {
            (Some(command), _) => {
                let mut line = command.clone();
                for arg in &self.args {
                    line.push(' ');
                    line.push_str(arg);
                }
                line
            }
            (None, Some(url)) => url.clone(),
            (None, None) => "(no transport)".into(),
        }
    }
}

/// `command` as [`McpServerConfig::program`] resolves it, beside `dir`.
fn program_beside(command: &str, dir: Option<&Path>) -> PathBuf {
    let bare = !command.is_empty() && !command.contains('/') && !command.contains(std::path::MAIN_SEPARATOR);
    if let (true, Some(dir)) = (bare, dir) {
        let suffix = std::env::consts::EXE_SUFFIX;
        let mut names = vec![command.to_string()];
        if !suffix.is_empty() && !command.ends_with(suffix) {
            names.push(format!("{command}{suffix}"));
        }
        if let Some(found) = names.into_iter().map(|name| dir.join(name)).find(|p| p.is_file()) {
            return found;
        }
    }
    PathBuf::from(command)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_command_is_the_program_beside_the_executable_when_there_is_one() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("concierge-orders"), "").unwrap();
        assert_eq!(
            program_beside("concierge-orders", Some(dir.path())),
            dir.path().join("concierge-orders")
        );
        // Not beside it: PATH, as usual.
        assert_eq!(program_beside("npx", Some(dir.path())), PathBuf::from("npx"));
        assert_eq!(
            program_beside("concierge-orders", None),
            PathBuf::from("concierge-orders")
        );
        // A path is used as written, even when a file of its name is there.
        assert_eq!(
            program_beside("./concierge-orders", Some(dir.path())),
            PathBuf::from("./concierge-orders")
        );
        // A directory of that name is not a program.
        std::fs::create_dir(dir.path().join("tools")).unwrap();
        assert_eq!(program_beside("tools", Some(dir.path())), PathBuf::from("tools"));
        // The running executable's directory (a test binary's: nothing there is called so).
        let server = McpServerConfig::stdio("no-such-program-here", Vec::<String>::new());
        assert_eq!(server.program(), Some(PathBuf::from("no-such-program-here")));
        assert_eq!(McpServerConfig::http("http://127.0.0.1:1/mcp").program(), None);
    }

    #[test]
    fn exactly_one_transport() {
        assert!(McpServerConfig::stdio("npx", ["x"]).check("a").is_ok());
        assert!(McpServerConfig::http("http://127.0.0.1:1/mcp").check("a").is_ok());
        assert!(McpServerConfig::default().check("a").is_err());
        assert!(McpServerConfig::http("ftp://x").check("a").is_err());
        let both = McpServerConfig {
            url: Some("http://x".into()),
            ..McpServerConfig::stdio("npx", ["x"])
        };
        assert!(both.check("a").unwrap_err().to_string().contains("both"));
        let parsed: McpServerConfig = toml::from_str(
            "command = \"npx\"\nargs = [\"-y\", \"pkg\"]\nincluded_tools = [\"a\"]\nprefix = \"p_\"\ntimeout_secs = 5\ntrust = true\n",
        )
        .unwrap();
        assert_eq!(parsed.call_timeout(), Duration::from_secs(5));
        assert_eq!(parsed.describe(), "npx -y pkg");
        assert!(parsed.trust);
        assert!(
            !McpServerConfig::stdio("npx", ["x"]).trust,
            "servers are not trusted by default"
        );
        assert!(toml::from_str::<McpServerConfig>("comand = \"x\"").is_err());
        assert_eq!(parsed.message_limit(), MAX_MESSAGE_BYTES);
        let small = McpServerConfig::http("http://127.0.0.1:1/mcp").max_message_bytes(4096);
        assert_eq!(small.message_limit(), 4096);
        let huge = McpServerConfig::http("http://127.0.0.1:1/mcp").max_message_bytes(MAX_MESSAGE_BYTES + 1);
        assert!(huge.check("a").unwrap_err().to_string().contains("max_message_bytes"));
    }
}
