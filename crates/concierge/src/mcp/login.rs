//! A person signs in to a remote MCP server ([`login`]): the
//! authorization-code grant with PKCE, through rmcp's authorization session
//! (metadata discovery, dynamic client registration when no client id is
//! configured, the code exchange). The browser comes back to a one-route
//! HTTP listener on loopback; the tokens go to the server's credentials
//! file, where every process that uses the server reads (and refreshes)
//! them.

use std::path::PathBuf;
use std::time::Duration;

use axum::extract::{RawQuery, State};
use axum::response::Html;
use rmcp::transport::auth::{AuthorizationManager, AuthorizationRequest, CredentialStore, OAuthState};
use tokio::sync::{mpsc, oneshot};

use super::config::{McpServerConfig, OAuthGrant};
use super::credentials::FileCredentials;

/// How long a sign-in may take before the listener gives up.
const SIGN_IN_TIME: Duration = Duration::from_secs(600);

/// Why a sign-in did not complete.
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    /// The server is a local command: it has nothing to sign in to.
    #[error("MCP server {server} is started as a command, not reached by url: only a remote server signs in")]
    NotRemote {
        /// The server's name.
        server: String,
    },
    /// The server's configuration has no sign-in.
    #[error(
        "MCP server {server} does not sign in with a browser: give it oauth = {{ grant = \"authorization_code\" }} \
         in [mcp_servers.{server}]"
    )]
    NoSignIn {
        /// The server's name.
        server: String,
    },
    /// The loopback listener for the redirect could not start.
    #[error(
        "could not listen for the sign-in's redirect on 127.0.0.1:{port} ({error}); free the port or change redirect_port"
    )]
    Listen {
        /// The port asked for (0: any).
        port: u16,
        /// Why.
        error: std::io::Error,
    },
    /// The authorization server (or the person) refused.
    #[error("the sign-in to MCP server {server} was refused: {why}")]
    Refused {
        /// The server's name.
        server: String,
        /// What the authorization server said.
        why: String,
    },
    /// Nobody finished signing in in time.
    #[error("nobody finished signing in to MCP server {server} within {minutes} minutes; run the login again")]
    TimedOut {
        /// The server's name.
        server: String,
        /// How long it waited.
        minutes: u64,
    },
    /// The discovery, the registration or the code exchange failed.
    #[error("the sign-in to MCP server {server} failed: {why}")]
    Failed {
        /// The server's name.
        server: String,
        /// What went wrong.
        why: String,
    },
}

/// A redirect that reached the listener, and where to say how it went.
type Arrival = (String, oneshot::Sender<Result<(), String>>);

/// The redirect's page: the sign-in's outcome, for the person in the browser.
async fn callback(State(arrivals): State<mpsc::Sender<Arrival>>, RawQuery(query): RawQuery) -> Html<String> {
    let (told, outcome) = oneshot::channel();
    let query = query.unwrap_or_default();
    if arrivals.send((query, told)).await.is_err() {
        return Html("<p>This sign-in is over; run the login again.</p>".into());
    }
    match outcome.await {
        Ok(Ok(())) => Html("<p>You are signed in. You can close this tab.</p>".into()),
        Ok(Err(why)) => Html(format!("<p>The sign-in did not complete: {}</p>", escape(&why))),
        Err(_) => Html("<p>The sign-in stopped; run the login again.</p>".into()),
    }
}

/// `text` safe inside an HTML element.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// Signs a person in to the MCP server `server` (configured as `config`,
/// with `oauth = { grant = "authorization_code" }`): `show` is given the
/// address to open in a browser; once the authorization server redirects
/// back, the code is exchanged and the tokens are kept in the server's
/// credentials file, whose path is returned.
pub async fn login(server: &str, config: &McpServerConfig, show: impl FnOnce(&str)) -> Result<PathBuf, LoginError> {
    let Some(url) = config.url.as_deref() else {
        return Err(LoginError::NotRemote { server: server.into() });
    };
    let Some(oauth) = config
        .oauth
        .as_ref()
        .filter(|o| o.grant == OAuthGrant::AuthorizationCode)
    else {
        return Err(LoginError::NoSignIn { server: server.into() });
    };
    let failed = |why: String| LoginError::Failed {
        server: server.into(),
        why,
    };
    let port = oauth.redirect_port.unwrap_or(0);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .map_err(|error| LoginError::Listen { port, error })?;
    let bound = listener
        .local_addr()
        .map_err(|error| LoginError::Listen { port, error })?;
    let redirect = format!("http://127.0.0.1:{}/callback", bound.port());

    let path = oauth.credentials_path(server);
    crate::tls::install_crypto_provider();
    let mut manager = AuthorizationManager::new(url)
        .await
        .map_err(|e| failed(e.to_string()))?;
    manager.set_credential_store(FileCredentials::new(&path));
    let mut state = OAuthState::Unauthorized(manager);
    let mut request = AuthorizationRequest::new(&redirect).with_client_name("concierge");
    if !oauth.scopes.is_empty() {
        request = request.with_scopes(oauth.scopes.iter());
    }
    if !oauth.client_id.is_empty() {
        request = request.with_preregistered_client(oauth.client_id.clone());
        if let Ok(secret) = oauth.secret(server) {
            request = request.with_client_secret(secret);
        }
    }
    state
        .start_authorization(request)
        .await
        .map_err(|e| failed(e.to_string()))?;
    let address = state.get_authorization_url().await.map_err(|e| failed(e.to_string()))?;

    let (arrivals, mut arrived) = mpsc::channel::<Arrival>(4);
    let app = axum::Router::new()
        .route("/callback", axum::routing::get(callback))
        .with_state(arrivals);
    let (stop, stopped) = oneshot::channel::<()>();
    let listening = tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await;
    });
    show(&address);

    let outcome = tokio::time::timeout(SIGN_IN_TIME, async {
        let Some((query, told)) = arrived.recv().await else {
            return Err(failed("the redirect listener stopped".into()));
        };
        let params: Vec<(String, String)> = reqwest::Url::parse(&format!("{redirect}?{query}"))
            .map(|u| u.query_pairs().into_owned().collect())
            .unwrap_or_default();
        let param = |name: &str| params.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        if let Some(error) = param("error") {
            let why = param("error_description").map_or(error.clone(), |d| format!("{error}: {d}"));
            let _ = told.send(Err(why.clone()));
            return Err(LoginError::Refused {
                server: server.into(),
                why,
            });
        }
        let exchanged = state.handle_callback_url(&format!("{redirect}?{query}")).await;
        let _ = told.send(exchanged.as_ref().map(|_| ()).map_err(ToString::to_string));
        exchanged.map_err(|e| failed(e.to_string()))
    })
    .await;
    // Redirects that came after the first are told the sign-in is over, so
    // the listener's graceful stop does not wait for them.
    drop(arrived);
    let _ = stop.send(());
    let _ = listening.await;
    match outcome {
        Ok(Ok(())) => Ok(path),
        Ok(Err(error)) => Err(error),
        Err(_) => Err(LoginError::TimedOut {
            server: server.into(),
            minutes: SIGN_IN_TIME.as_secs() / 60,
        }),
    }
}

/// Forgets the sign-in to the MCP server `server`: its credentials file is
/// removed. Answers whether there was one.
pub async fn logout(server: &str, config: &McpServerConfig) -> Result<bool, LoginError> {
    let Some(oauth) = config
        .oauth
        .as_ref()
        .filter(|o| o.grant == OAuthGrant::AuthorizationCode)
    else {
        return Err(LoginError::NoSignIn { server: server.into() });
    };
    let store = FileCredentials::new(oauth.credentials_path(server));
    let had = store.load().await.ok().flatten().is_some();
    store.clear().await.map_err(|e| LoginError::Failed {
        server: server.into(),
        why: e.to_string(),
    })?;
    Ok(had)
}
