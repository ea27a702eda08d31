//! A remote MCP server behind OAuth: concierge finds the authorization
//! server from the server's protected-resource metadata, gets a token with
//! the client-credentials grant, sends it on every request, gets a new one
//! when the server refuses it, and a wrong secret is reported naming the
//! server; a person signs in once (the authorization-code grant with PKCE
//! and dynamic registration, `concierge::mcp::login`) and every process
//! uses and refreshes the kept sign-in. The authorization server and the MCP
//! server are real HTTP servers on loopback (axum and rmcp), written here;
//! the test stands in for the person's browser.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod support {
    pub mod oauth_server;
}

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use concierge::mcp::{LoginError, McpOAuth, McpServerConfig, OAuthGrant, login, logout};
use concierge::model::{Model, ModelContext};
use concierge::{AgentSpec, Message, ModelError, ModelReply, ModelRequest, RunOptions, Runtime};
use futures::future::BoxFuture;
use support::oauth_server::{CLIENT, Issuer, SECRET, serve};

/// Calls `whoami`, then says what it answered.
struct Caller;

impl Model for Caller {
    fn name(&self) -> String {
        "caller".into()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        _: &'a ModelContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        let result = request.messages.iter().rev().find_map(|m| match m {
            Message::Tool { .. } => Some(m.text()),
            Message::User { .. } => Some(String::new()),
            _ => None,
        });
        let reply = match result {
            Some(text) if !text.is_empty() => ModelReply::text(format!("the server says: {text}")),
            _ => ModelReply::tool_call("whoami", "{}"),
        };
        Box::pin(async move { Ok(reply) })
    }
}

async fn runtime(addr: SocketAddr, oauth: McpOAuth) -> Runtime {
    runtime_for(server(addr, oauth)).await
}

fn server(addr: SocketAddr, oauth: McpOAuth) -> McpServerConfig {
    McpServerConfig::http(format!("http://{addr}/mcp"))
        .trusted()
        .oauth(oauth)
}

async fn runtime_for(server: McpServerConfig) -> Runtime {
    Runtime::builder()
        .mcp_server("crm", server)
        .agent(AgentSpec::new("desk").toolset("crm"))
        .model(Caller)
        .in_memory()
        .build()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_behind_oauth_is_called_with_a_token_and_a_refused_token_is_renewed() {
    let issuer = Arc::new(Issuer::default());
    let addr = serve(issuer.clone()).await;
    let rt = runtime(addr, McpOAuth::with_secret(CLIENT, SECRET).scopes(["crm.read"])).await;
    let desk = rt.client("desk").unwrap();

    let out = desk.run("who am I?", RunOptions::new().session_id("a")).await.unwrap();
    assert_eq!(
        out.reply.as_deref(),
        Some("the server says: an authorized client"),
        "{out:?}"
    );
    assert_eq!(
        issuer.issued.load(Ordering::SeqCst),
        1,
        "one token for the whole connection"
    );
    assert_eq!(
        issuer.grants.lock().unwrap()[0],
        "client_credentials concierge crm.read",
        "the client-credentials grant, with the configured scopes"
    );

    // The server stops accepting the token (revoked): the next request is
    // refused, a new token is got, and the call goes through.
    *issuer.valid.lock().unwrap() = Some("revoked".into());
    let out = desk
        .run("who am I now?", RunOptions::new().session_id("b"))
        .await
        .unwrap();
    assert_eq!(
        out.reply.as_deref(),
        Some("the server says: an authorized client"),
        "{out:?}"
    );
    assert_eq!(issuer.issued.load(Ordering::SeqCst), 2, "renewed once");
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_secret_or_a_missing_one_is_reported_naming_the_server() {
    let issuer = Arc::new(Issuer::default());
    let addr = serve(issuer.clone()).await;

    let refused = refusal(runtime(addr, McpOAuth::with_secret(CLIENT, "not-it")).await).await;
    assert!(refused.contains("crm"), "names the server: {refused}");
    assert!(
        refused.contains("could not get an OAuth access token") && refused.contains("invalid_client"),
        "says why: {refused}"
    );
    assert_eq!(issuer.issued.load(Ordering::SeqCst), 0);

    let rt = runtime(
        addr,
        McpOAuth::client_credentials(CLIENT, "CONCIERGE_TEST_NO_SUCH_SECRET_VAR"),
    )
    .await;
    let refused = refusal(rt).await;
    assert!(
        refused.contains("set CONCIERGE_TEST_NO_SUCH_SECRET_VAR to the client secret"),
        "says what to set: {refused}"
    );
}

/// Why `rt`'s run that needs the server fails (`rt` is shut down after).
async fn refusal(rt: Runtime) -> String {
    let refused = rt
        .client("desk")
        .unwrap()
        .run("who am I?", RunOptions::new().session_id("a"))
        .await
        .unwrap_err()
        .to_string();
    rt.shutdown().await;
    refused
}

#[test]
fn oauth_is_read_from_the_configuration_and_checked() {
    let config: McpServerConfig = toml::from_str(
        r#"
url = "https://mcp.example.com/mcp"
oauth = { client_id = "concierge", client_secret_env = "CRM_SECRET", scopes = ["crm.read"] }
"#,
    )
    .unwrap();
    let oauth = config.oauth.clone().unwrap();
    assert_eq!(oauth.client_id, "concierge");
    assert_eq!(oauth.client_secret_env.as_deref(), Some("CRM_SECRET"));
    assert_eq!(oauth.scopes, ["crm.read"]);
    config.check("crm").unwrap();
    assert!(
        !format!("{:?}", McpOAuth::with_secret("c", "hidden")).contains("hidden"),
        "redacted"
    );

    let stdio =
        McpServerConfig::stdio("crm-server", Vec::<String>::new()).oauth(McpOAuth::client_credentials("c", "S"));
    let refused = stdio.check("crm").unwrap_err().to_string();
    assert!(refused.contains("oauth is for a server reached by url"), "{refused}");
    let no_secret = McpServerConfig::http("https://mcp.example.com/mcp").oauth(McpOAuth {
        client_id: "c".into(),
        ..McpOAuth::default()
    });
    let refused = no_secret.check("crm").unwrap_err().to_string();
    assert!(refused.contains("client_secret_env"), "{refused}");
    let unknown = toml::from_str::<McpServerConfig>(
        r#"
url = "https://mcp.example.com/mcp"
oauth = { client_id = "c", client_secret = "in-a-file" }
"#,
    );
    assert!(unknown.is_err(), "a secret is never read from a file");
}

/// The desk's reply in session `session` to "who am I?", or the error's words.
async fn ask(rt: &Runtime, session: &str) -> String {
    rt.client("desk")
        .unwrap()
        .run("who am I?", RunOptions::new().session_id(session))
        .await
        .map(|out| out.reply.unwrap_or_default())
        .unwrap_or_else(|e| e.to_string())
}

/// The person's browser: opens `address`, follows the redirects back to
/// concierge's listener, and answers with the page it shows.
fn browse(address: &str) -> tokio::task::JoinHandle<String> {
    concierge::tls::install_crypto_provider();
    let address = address.to_string();
    tokio::spawn(async move { reqwest::get(&address).await.unwrap().text().await.unwrap() })
}

/// Signs in to the `crm` server as `config` says; the page the browser showed.
async fn sign_in(config: &McpServerConfig) -> (Result<std::path::PathBuf, LoginError>, String) {
    let mut browser = None;
    let signed = login("crm", config, |address| browser = Some(browse(address))).await;
    let page = match browser {
        Some(browser) => browser.await.unwrap(),
        None => String::new(),
    };
    (signed, page)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_signs_in_once_and_every_process_uses_and_renews_the_sign_in() {
    let issuer = Arc::new(Issuer::default());
    let addr = serve(issuer.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let kept = dir.path().join(".concierge/oauth/crm.json");
    let config = server(addr, McpOAuth::authorization_code(&kept).scopes(["crm.read"]));

    // Before anyone signed in, a run that needs the server says what to do.
    let refused = refusal(runtime_for(config.clone()).await).await;
    assert!(refused.contains("concierge mcp login crm"), "{refused}");

    let (signed, page) = sign_in(&config).await;
    assert_eq!(signed.unwrap(), kept);
    assert!(page.contains("You are signed in"), "{page}");
    assert_eq!(issuer.registered.load(Ordering::SeqCst), 1, "registered itself");
    assert_eq!(
        issuer.grants.lock().unwrap().last().unwrap(),
        "authorization_code dyn-1 ",
        "the code exchanged with the PKCE verifier"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&kept).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the sign-in is readable by its owner only");
    }

    // Another process uses the kept sign-in.
    let rt = runtime_for(config.clone()).await;
    assert_eq!(ask(&rt, "a").await, "the server says: an authorized client");

    // The server stops accepting the token: it is refreshed (the refresh
    // token rotates), and the call goes through.
    *issuer.valid.lock().unwrap() = Some("revoked".into());
    assert_eq!(ask(&rt, "b").await, "the server says: an authorized client");
    assert!(
        issuer
            .grants
            .lock()
            .unwrap()
            .last()
            .unwrap()
            .starts_with("refresh_token dyn-1"),
        "{:?}",
        issuer.grants.lock().unwrap()
    );
    rt.shutdown().await;
    // The refreshed sign-in was kept: the next process starts with it.
    let issued = issuer.issued.load(Ordering::SeqCst);
    let rt = runtime_for(config.clone()).await;
    assert_eq!(ask(&rt, "a").await, "the server says: an authorized client");
    assert_eq!(issuer.issued.load(Ordering::SeqCst), issued, "no new token needed");

    // The token and the refresh token are both revoked: sign in again.
    *issuer.valid.lock().unwrap() = Some("revoked".into());
    *issuer.refresh.lock().unwrap() = None;
    let refused = ask(&rt, "c").await;
    assert!(refused.contains("concierge mcp login crm"), "{refused}");
    rt.shutdown().await;

    assert!(logout("crm", &config).await.unwrap(), "a sign-in was forgotten");
    assert!(!kept.exists());
    assert!(!logout("crm", &config).await.unwrap(), "nothing left to forget");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_sign_in_or_a_server_without_one_says_so() {
    let issuer = Arc::new(Issuer::default());
    issuer.deny.store(true, Ordering::SeqCst);
    let addr = serve(issuer.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let config = server(addr, McpOAuth::authorization_code(dir.path().join("crm.json")));
    let (signed, page) = sign_in(&config).await;
    let error = signed.unwrap_err().to_string();
    assert!(
        error.contains("refused") && error.contains("the person said no"),
        "{error}"
    );
    assert!(page.contains("did not complete"), "{page}");
    assert!(!dir.path().join("crm.json").exists());

    let machine = server(addr, McpOAuth::with_secret(CLIENT, SECRET));
    let error = login("crm", &machine, |_| {}).await.unwrap_err().to_string();
    assert!(error.contains("grant = \"authorization_code\""), "{error}");
    let local = McpServerConfig::stdio("crm-server", Vec::<String>::new());
    let error = login("crm", &local, |_| {}).await.unwrap_err().to_string();
    assert!(error.contains("only a remote server signs in"), "{error}");
}

#[test]
fn a_sign_in_is_read_from_the_configuration_and_kept_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("concierge.toml");
    std::fs::write(
        &file,
        r#"
[mcp_servers.docs]
url = "https://docs.example.com/mcp"
oauth = { grant = "authorization_code", scopes = ["docs.read"] }

[mcp_servers.wiki]
url = "https://wiki.example.com/mcp"
oauth = { grant = "authorization_code", client_id = "registered", credentials_file = "secrets/wiki.json", redirect_port = 8765 }
"#,
    )
    .unwrap();
    let config = concierge::config::Config::load(&file, true).unwrap();
    let docs = config.mcp_servers["docs"].oauth.clone().unwrap();
    assert_eq!(docs.grant, OAuthGrant::AuthorizationCode);
    assert_eq!(
        docs.credentials_file,
        Some(dir.path().join(".concierge/oauth/docs.json"))
    );
    config.mcp_servers["docs"].check("docs").unwrap();
    let wiki = config.mcp_servers["wiki"].oauth.clone().unwrap();
    assert_eq!(wiki.credentials_file, Some(dir.path().join("secrets/wiki.json")));
    assert_eq!(
        (wiki.client_id.as_str(), wiki.redirect_port),
        ("registered", Some(8765))
    );
}
