//! `concierge serve`'s settings: the `[server]` section of `concierge.toml`.

use serde::Deserialize;

/// `concierge serve`'s settings (`[server]`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// API tokens, stored hashed (`concierge token new` makes one). With
    /// none, the server listens on loopback only and every caller is the
    /// same, tenant-less one.
    #[serde(default)]
    pub tokens: Vec<TokenConfig>,
    /// How many runs one tenant may have in progress at once (16 by
    /// default); past it a new run is refused with 429.
    pub max_runs_per_tenant: Option<usize>,
    /// The names the server answers to besides the address it listens on
    /// (`"chat.example.com"`, any port, or `"chat.example.com:8443"`). A
    /// request whose `Host` is none of them is refused with 421: always on
    /// a server without tokens (against DNS rebinding), and on one with
    /// tokens once this list is given.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Web origins whose pages may call the API (`"https://app.example.com"`):
    /// their cross-origin requests and CORS preflights are answered. A
    /// request from any other page's origin is refused with 403.
    #[serde(default)]
    pub cors_origins: Vec<String>,
    /// How long a client has to send a request's headers, in seconds,
    /// counted from when the connection starts waiting for a request (10 by
    /// default); a slower connection is closed.
    pub header_read_timeout_secs: Option<u64>,
    /// How long a connection may sit idle, in seconds (60 by default): one
    /// with no request in progress is closed, and a request whose body stops
    /// arriving for this long is refused. Event streams are not idle.
    pub idle_timeout_secs: Option<u64>,
    /// How many connections the server holds open at once (512 by
    /// default); past it a new connection waits until one closes. Keep it
    /// under the process's open-file limit (`ulimit -n`).
    pub max_connections: Option<usize>,
    /// Also serve `/metrics` on this address (`"127.0.0.1:9464"`), without
    /// a token; off by default (then `/metrics` is on the API's address,
    /// behind the API's tokens when there are any).
    pub metrics_addr: Option<String>,
    /// The URL the server is reached at from outside
    /// (`"https://agents.example.com"`), for the endpoints the A2A agent
    /// cards name; without it they name the request's `Host`.
    pub public_url: Option<String>,
    /// Whether tenants' webhooks may post to loopback, private and
    /// link-local addresses (a cloud's metadata service, an admin port).
    /// By default only on a server without tokens; a server with tokens
    /// posts to public addresses only unless this says `true`.
    pub webhooks_to_private_addresses: Option<bool>,
}

/// One API token (`[[server.tokens]]`): its hash, and whom it speaks for.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenConfig {
    /// `sha256:` and the token's SHA-256 in hex; the token itself is never stored.
    pub hash: String,
    /// The tenant the token's requests act for: they see its sessions only.
    pub tenant: String,
    /// The user the token's runs are for (tools see it; "my tasks").
    pub user: String,
}

impl ServerConfig {
    /// The `[server]` section of `config` (the defaults without one).
    pub fn from_config(config: &concierge::config::Config) -> concierge::Result<Self> {
        config.section("server")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn config(text: &str) -> concierge::config::Config {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn the_server_section_is_read_key_by_key_and_a_typo_names_the_key() {
        let server = ServerConfig::from_config(&config(
            "[server]\nmax_runs_per_tenant = 16\nallowed_hosts = [\"chat.example.com\"]\n\
             [[server.tokens]]\nhash = \"sha256:00\"\ntenant = \"acme\"\nuser = \"ana\"\n",
        ))
        .unwrap();
        assert_eq!(server.max_runs_per_tenant, Some(16));
        assert_eq!(server.tokens[0].tenant, "acme");
        assert_eq!(server.allowed_hosts, ["chat.example.com"]);
        assert_eq!(ServerConfig::from_config(&config("")).unwrap(), ServerConfig::default());
        let typo = ServerConfig::from_config(&config("[server]\nmax_run_per_tenant = 3\n")).unwrap_err();
        assert!(typo.to_string().contains("max_run_per_tenant"), "{typo}");
    }
}
