//! OAuth for a remote MCP server: concierge's own access token, from the
//! client-credentials grant (MCP's machine-to-machine authorization), got
//! through rmcp's authorization manager (metadata discovery, the token
//! request) and renewed when it expires or the server refuses it.

use rmcp::transport::auth::{AuthError, AuthorizationManager, ClientCredentialsConfig, OAuthState};
use tokio::sync::Mutex;

use super::config::McpOAuth;

/// The access token of one server's connection.
pub(crate) struct OAuthToken {
    /// The server's name in the configuration, for messages.
    server: String,
    /// The server's endpoint: its metadata names the authorization server.
    url: String,
    config: McpOAuth,
    /// The authorized manager once a token was got.
    manager: Mutex<Option<AuthorizationManager>>,
}

impl std::fmt::Debug for OAuthToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthToken")
            .field("server", &self.server)
            .field("client_id", &self.config.client_id)
            .finish_non_exhaustive()
    }
}

impl OAuthToken {
    /// For the server `server` at `url`, authorized as `config` says.
    pub(crate) fn new(server: &str, url: &str, config: McpOAuth) -> Self {
        Self {
            server: server.to_string(),
            url: url.to_string(),
            config,
            manager: Mutex::new(None),
        }
    }

    /// A token that has not expired: the one held, or a new one.
    pub(crate) async fn token(&self) -> Result<String, AuthError> {
        let mut held = self.manager.lock().await;
        if let Some(manager) = held.as_ref() {
            match manager.get_access_token().await {
                Ok(token) => return Ok(token),
                // Expired, and the grant gives no refresh token: ask again.
                Err(AuthError::AuthorizationRequired) => {}
                Err(error) => return Err(error),
            }
        }
        let manager = self.authorize().await?;
        let token = manager.get_access_token().await?;
        *held = Some(manager);
        Ok(token)
    }

    /// The server refused the token it was given (revoked, or expired
    /// early): a new one.
    pub(crate) async fn renew(&self) -> Result<String, AuthError> {
        self.manager.lock().await.take();
        self.token().await
    }

    /// Discovers the authorization server and asks it for a token.
    async fn authorize(&self) -> Result<AuthorizationManager, AuthError> {
        let secret = self
            .config
            .secret(&self.server)
            .map_err(AuthError::ClientCredentialsError)?;
        let credentials = ClientCredentialsConfig::ClientSecret {
            client_id: self.config.client_id.clone(),
            client_secret: secret,
            scopes: self.config.scopes.clone(),
            resource: Some(self.config.resource.clone().unwrap_or_else(|| self.url.clone())),
        };
        let mut state = OAuthState::new(self.url.as_str(), None).await?;
        state.authenticate_client_credentials(credentials).await?;
        state
            .into_authorization_manager()
            .ok_or_else(|| AuthError::InternalError("the client-credentials grant left no authorized client".into()))
    }
}
