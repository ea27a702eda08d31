//! `concierge serve` through the binary: loopback only without tokens,
//! `/healthz` answers, `/metrics` counts runs, SIGTERM stops it cleanly, and
//! `[server]`'s names and timeouts take effect.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

fn concierge(dir: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_concierge"));
    command
        .current_dir(dir)
        .env_remove("CONCIERGE_MODEL")
        .env_remove("CONCIERGE_BASE_URL")
        .env_remove("CONCIERGE_DB");
    command
}

#[test]
fn a_non_loopback_address_is_refused_without_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let out = concierge(dir.path())
        .args(["serve", "--addr", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("0.0.0.0:0 is not a loopback address"), "{err}");
    assert!(err.contains("--addr 127.0.0.1:PORT"), "says what to do: {err}");
}

#[cfg(unix)]
#[test]
fn serve_answers_healthz_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, addr) = serve(dir.path());
    let response = request(&addr, "GET", "/healthz", "", "");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.ends_with(r#"{"status":"ok"}"#), "{response}");

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "a clean stop: {status:?}");
}

/// `concierge serve` on a free loopback port in `dir`, and its address
/// (read from the URL it prints first).
#[cfg(unix)]
fn serve(dir: &std::path::Path) -> (std::process::Child, String) {
    let mut child = concierge(dir)
        .args(["serve", "--addr", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut url = String::new();
    stdout.read_line(&mut url).unwrap();
    let addr = url
        .trim()
        .strip_prefix("http://")
        .and_then(|rest| rest.strip_suffix('/'))
        .unwrap_or_else(|| panic!("the first line is the URL: {url:?}"))
        .to_string();
    (child, addr)
}

/// One HTTP/1.1 request on a fresh connection, with `headers` (each line
/// ending in CRLF); the whole response.
#[cfg(unix)]
fn request(addr: &str, method: &str, path: &str, headers: &str, body: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// A JSON request; the whole response.
#[cfg(unix)]
fn http(addr: &str, method: &str, path: &str, body: &str) -> String {
    request(addr, method, path, "Content-Type: application/json\r\n", body)
}

#[cfg(unix)]
#[test]
fn serve_counts_a_run_and_its_tool_call_at_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, addr) = serve(dir.path());

    let created = http(
        &addr,
        "POST",
        "/api/v1/sessions",
        r#"{"id": "m1", "agent": "calculator"}"#,
    );
    assert!(created.starts_with("HTTP/1.1 201"), "{created}");
    let answered = http(
        &addr,
        "POST",
        "/api/v1/sessions/m1/messages?wait=true",
        r#"{"text": "calculate 5 + 3"}"#,
    );
    assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
    let metrics = http(&addr, "GET", "/metrics", "");
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    for line in [
        r#"concierge_runs_started_total{agent="calculator"} 1"#,
        r#"concierge_runs_stopped_total{agent="calculator",status="completed"} 1"#,
        r#"concierge_tool_calls_total{agent="calculator",tool="calculator",outcome="ok"} 1"#,
    ] {
        assert!(metrics.lines().any(|l| l == line), "no {line:?} in {metrics}");
    }

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert!(child.wait().unwrap().success());
}

/// A GET to `addr` with an optional bearer token; the response's status line.
#[cfg(unix)]
fn status_of(addr: &str, path: &str, token: Option<&str>) -> String {
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let response = request(addr, "GET", path, &auth, "");
    response.lines().next().unwrap_or_default().to_string()
}

#[cfg(unix)]
#[test]
fn a_token_made_by_token_new_opens_the_api_and_nothing_else_does() {
    let dir = tempfile::tempdir().unwrap();
    let out = concierge(dir.path())
        .args(["token", "new", "--tenant", "acme", "--user", "jordan"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let token = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let lines = String::from_utf8(out.stderr).unwrap();
    assert!(lines.contains("shown once"), "{lines}");
    assert!(!lines.contains(&token), "only the hash goes in the file: {lines}");
    let config = &lines[lines.find("[[server.tokens]]").unwrap()..];
    std::fs::write(dir.path().join("concierge.toml"), config).unwrap();

    let (mut child, addr) = serve(dir.path());
    assert!(status_of(&addr, "/api/v1/sessions", None).contains("401"));
    assert!(status_of(&addr, "/api/v1/sessions", Some("cx_wrong")).contains("401"));
    assert!(status_of(&addr, "/api/v1/sessions", Some(&token)).contains("200"));
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_malformed_token_hash_in_the_config_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("concierge.toml"),
        "[[server.tokens]]\nhash = \"plain-text\"\ntenant = \"acme\"\nuser = \"jordan\"\n",
    )
    .unwrap();
    let out = concierge(dir.path())
        .args(["serve", "--addr", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("malformed hash") && err.contains("concierge token new"),
        "{err}"
    );
}

/// The status line of a GET to `addr` that names `host` as its Host.
#[cfg(unix)]
fn status_as(addr: &str, host: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response.lines().next().unwrap_or_default().to_string()
}

#[cfg(unix)]
#[test]
fn the_server_section_s_names_and_timeouts_take_effect() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("concierge.toml"),
        "[server]\nallowed_hosts = [\"chat.example.com\"]\nheader_read_timeout_secs = 1\nidle_timeout_secs = 1\nmax_connections = 64\n",
    )
    .unwrap();
    let (mut child, addr) = serve(dir.path());
    assert!(status_as(&addr, &addr, "/api/v1/sessions").contains("200"));
    assert!(status_as(&addr, "chat.example.com", "/api/v1/sessions").contains("200"));
    assert!(status_as(&addr, "evil.example", "/api/v1/sessions").contains("421"));
    // A connection that sends nothing is closed by the server.
    let mut silent = TcpStream::connect(&addr).unwrap();
    silent
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(silent.read(&mut buf).unwrap(), 0, "closed by the server");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_malformed_cors_origin_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("concierge.toml"),
        "[server]\ncors_origins = [\"app.example.com\"]\n",
    )
    .unwrap();
    let out = concierge(dir.path())
        .args(["serve", "--addr", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "no URL is printed");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("\"app.example.com\"") && err.contains("https://"), "{err}");
}
