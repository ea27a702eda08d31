//! `concierge mcp login` and `logout`, driven as a person would, against a
//! remote MCP server behind OAuth on loopback
//! (`crates/concierge/tests/support/oauth_server.rs`): the command prints
//! the address to open, the test follows it as the person's browser would
//! (the authorization server consents at once and redirects back), the
//! sign-in is kept beside concierge.toml, later commands use it, and after
//! `logout` they say to sign in again.

#![cfg(feature = "mcp-oauth")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../concierge/tests/support/oauth_server.rs"]
mod oauth_server;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use oauth_server::{Issuer, serve};

fn concierge(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_concierge"));
    command
        .current_dir(dir)
        .env_remove("CONCIERGE_MODEL")
        .env_remove("CONCIERGE_BASE_URL")
        .env_remove("CONCIERGE_DB");
    command
}

fn run(dir: &Path, args: &[&str]) -> Output {
    concierge(dir).args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_signs_in_from_the_command_line_and_later_commands_use_it() {
    concierge::tls::install_crypto_provider();
    let issuer = Arc::new(Issuer::default());
    let addr = serve(issuer.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("concierge.toml"),
        format!(
            r#"
[mcp_servers.notes]
url = "http://{addr}/mcp"
trust = true
oauth = {{ grant = "authorization_code", scopes = ["crm.read"] }}

[mcp_servers.local]
command = "true"
"#
        ),
    )
    .unwrap();

    // Before the sign-in, a call says how to sign in.
    let out = run(dir.path(), &["mcp", "call", "notes", "whoami"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("concierge mcp login notes"),
        "{}",
        text(&out.stderr)
    );

    let mut login = concierge(dir.path())
        .args(["mcp", "login", "notes"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(login.stdout.take().unwrap());
    let address = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        line.trim().to_string()
    })
    .await
    .unwrap();
    assert!(address.starts_with(&format!("http://{addr}/authorize?")), "{address}");
    // The person's browser: to the authorization server and back.
    let page = reqwest::get(&address).await.unwrap().text().await.unwrap();
    assert!(page.contains("You are signed in"), "{page}");
    let (status, said) = tokio::task::spawn_blocking(move || {
        let mut said = String::new();
        login.stderr.take().unwrap().read_to_string(&mut said).unwrap();
        (login.wait().unwrap(), said)
    })
    .await
    .unwrap();
    assert!(status.success(), "{said}");
    assert!(said.contains("Open this address in a browser"), "{said}");
    assert!(said.contains("Signed in to notes"), "{said}");
    assert!(dir.path().join(".concierge/oauth/notes.json").exists());

    // Later commands, other processes, use the kept sign-in.
    let out = run(dir.path(), &["mcp", "call", "notes", "whoami"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("an authorized client"),
        "{}",
        text(&out.stdout)
    );

    let out = run(dir.path(), &["mcp", "logout", "notes"]);
    assert!(out.status.success());
    assert!(
        text(&out.stderr).contains("Signed out of notes"),
        "{}",
        text(&out.stderr)
    );
    assert!(!dir.path().join(".concierge/oauth/notes.json").exists());
    let out = run(dir.path(), &["mcp", "call", "notes", "whoami"]);
    assert!(
        text(&out.stderr).contains("concierge mcp login notes"),
        "{}",
        text(&out.stderr)
    );

    // What cannot sign in says why.
    let out = run(dir.path(), &["mcp", "login", "nope"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("there is no MCP server nope") && text(&out.stderr).contains("local, notes"),
        "{}",
        text(&out.stderr)
    );
    let out = run(dir.path(), &["mcp", "login", "local"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("only a remote server signs in"),
        "{}",
        text(&out.stderr)
    );
}
