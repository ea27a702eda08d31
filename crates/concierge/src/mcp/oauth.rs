//! OAuth for a remote MCP server: concierge's access token, got through
//! rmcp's authorization manager (metadata discovery, the token request)
//! either with the client-credentials grant (MCP's machine-to-machine
//! authorization) or from a person's sign-in kept on disk
//! ([`login`](super::login), the authorization-code grant), and renewed
//! when it expires or the server refuses it.

use rmcp::transport::auth::{AuthError, AuthorizationManager, ClientCredentialsConfig, OAuthClientConfig, OAuthState};
use tokio::sync::Mutex;

use super::config::{McpOAuth, OAuthGrant};
use super::credentials::FileCredentials;

/// The redirect URI a signed-in client is configured with when it refreshes
/// (a refresh sends none; rmcp's client configuration wants one).
const REFRESH_REDIRECT: &str = "http://127.0.0.1/callback";

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

    /// A token that has not expired: the one held (refreshed when it is
    /// about to expire and the grant gave a refresh token), or a new one.
    pub(crate) async fn token(&self) -> Result<String, AuthError> {
        let mut held = self.manager.lock().await;
        if let Some(manager) = held.as_ref() {
            match manager.get_access_token().await {
                Ok(token) => return Ok(token),
                // Expired, and no refresh token (or it was refused): ask again.
                Err(AuthError::AuthorizationRequired) => {}
                Err(error) => return Err(error),
            }
        }
        let manager = self.authorize().await?;
        let token = match manager.get_access_token().await {
            Err(AuthError::AuthorizationRequired) if self.config.grant == OAuthGrant::AuthorizationCode => {
                return Err(self.sign_in_again());
            }
            other => other?,
        };
        *held = Some(manager);
        Ok(token)
    }

    /// The server refused the token it was given (revoked, or expired
    /// early): a new one (a signed-in client refreshes its token).
    pub(crate) async fn renew(&self) -> Result<String, AuthError> {
        let mut held = self.manager.lock().await;
        let manager = held.take();
        if self.config.grant == OAuthGrant::AuthorizationCode {
            let manager = match manager {
                Some(manager) => manager,
                None => self.authorize().await?,
            };
            if manager.refresh_token().await.is_err() {
                return Err(self.sign_in_again());
            }
            let token = manager.get_access_token().await?;
            *held = Some(manager);
            return Ok(token);
        }
        drop(held);
        self.token().await
    }

    /// Discovers the authorization server and gets a token as the grant says.
    async fn authorize(&self) -> Result<AuthorizationManager, AuthError> {
        match self.config.grant {
            OAuthGrant::ClientCredentials => self.client_credentials().await,
            OAuthGrant::AuthorizationCode => self.signed_in().await,
        }
    }

    /// Asks the authorization server for a token with the client's secret.
    async fn client_credentials(&self) -> Result<AuthorizationManager, AuthError> {
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

    /// The tokens a person's sign-in left in the credentials file.
    async fn signed_in(&self) -> Result<AuthorizationManager, AuthError> {
        let path = self.config.credentials_path(&self.server);
        let mut manager = AuthorizationManager::new(self.url.as_str()).await?;
        manager.set_credential_store(FileCredentials::new(&path));
        if !manager.initialize_from_store().await? {
            return Err(AuthError::AuthorizationFailed(format!(
                "nobody has signed in to MCP server {server} yet (no sign-in in {}): run `concierge mcp login \
                 {server}`",
                path.display(),
                server = self.server
            )));
        }
        // A registered client with a secret refreshes with it.
        if !self.config.client_id.is_empty() {
            if let Ok(secret) = self.config.secret(&self.server) {
                let client = OAuthClientConfig::new(self.config.client_id.clone(), REFRESH_REDIRECT)
                    .with_client_secret(secret)
                    .with_scopes(self.config.scopes.clone());
                manager.configure_client(client)?;
            }
        }
        Ok(manager)
    }

    /// The sign-in expired and cannot be refreshed.
    fn sign_in_again(&self) -> AuthError {
        AuthError::AuthorizationFailed(format!(
            "the sign-in to MCP server {server} has expired and could not be renewed: run `concierge mcp login \
             {server}` again",
            server = self.server
        ))
    }
}
