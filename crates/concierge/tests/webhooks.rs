//! Webhooks: a run's stop and a schedule's firing posted to a receiver,
//! signed, once per event; retried while the receiver is down; kept in the
//! database's outbox when the process that found them goes away; and only
//! ever to the tenant that registered the webhook.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use concierge::memory::MemoryOwner;
use concierge::model::{Model, ModelContext, ModelError};
use concierge::schedule::{NewSchedule, When};
use concierge::webhook::{DeliveryState, NewWebhook, WebhookEvent, verify};
use concierge::{AgentSpec, Message, ModelReply, ModelRequest, RunOptions, Runtime, Timestamp};
use futures::future::BoxFuture;
use serde_json::Value;

/// Answers every message with what it was asked, at once.
struct Echo;

impl Model for Echo {
    fn name(&self) -> String {
        "echo".into()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        _: &'a ModelContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        let asked = request
            .messages
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::User { .. } => Some(m.text().to_string()),
                _ => None,
            })
            .unwrap_or_default();
        Box::pin(async move { Ok(ModelReply::text(format!("On it: {asked}"))) })
    }
}

/// A webhook receiver: checks each delivery's signature with the secret it
/// is given, answers 503 to the first `refuse` requests, and keeps the
/// deliveries it took by event id (counting repeats).
#[derive(Clone, Default)]
struct Receiver {
    secret: Arc<Mutex<String>>,
    refuse: Arc<AtomicUsize>,
    requests: Arc<AtomicUsize>,
    taken: Arc<Mutex<HashMap<String, (Value, usize)>>>,
    bad_signatures: Arc<AtomicUsize>,
}

async fn receive(State(receiver): State<Receiver>, headers: HeaderMap, body: Bytes) -> StatusCode {
    receiver.requests.fetch_add(1, Ordering::SeqCst);
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let (id, timestamp, signature) = (
        header("webhook-id"),
        header("webhook-timestamp"),
        header("webhook-signature"),
    );
    let secret = receiver.secret.lock().unwrap().clone();
    if !verify(&secret, &id, timestamp.parse().unwrap_or_default(), &body, &signature) {
        receiver.bad_signatures.fetch_add(1, Ordering::SeqCst);
        return StatusCode::UNAUTHORIZED;
    }
    if receiver
        .refuse
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
    {
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    let value: Value = serde_json::from_slice(&body).unwrap();
    let mut taken = receiver.taken.lock().unwrap();
    taken.entry(id).or_insert((value, 0)).1 += 1;
    StatusCode::NO_CONTENT
}

impl Receiver {
    async fn serve(&self) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hooks", listener.local_addr().unwrap());
        let app = axum::Router::new()
            .route("/hooks", axum::routing::post(receive))
            .with_state(self.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        url
    }

    fn of_type(&self, kind: &str) -> Vec<(Value, usize)> {
        self.taken
            .lock()
            .unwrap()
            .values()
            .filter(|(v, _)| v["type"] == kind)
            .cloned()
            .collect()
    }
}

/// Waits (a liveness guard, not a timing assertion) until `done` holds.
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(Instant::now() < deadline, "{what} did not happen");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn runtime(path: Option<&std::path::Path>) -> Runtime {
    let builder = Runtime::builder()
        .agent(AgentSpec::new("assistant").instructions("Help."))
        .model(Echo);
    let builder = match path {
        Some(path) => builder.sqlite(path),
        None => builder.in_memory(),
    };
    builder.build().await.unwrap()
}

fn acme(session: &str) -> RunOptions {
    RunOptions::new().tenant("acme").session_id(format!("acme/{session}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_run_is_posted_signed_once_and_only_to_its_tenant() {
    let receiver = Receiver::default();
    let url = receiver.serve().await;
    let rt = runtime(None).await;
    let created = rt
        .add_webhook(NewWebhook::new(Some("acme"), url.as_str(), WebhookEvent::ALL.to_vec()).unwrap())
        .await
        .unwrap();
    *receiver.secret.lock().unwrap() = created.secret.clone();

    rt.send("hello", acme("s1")).await.unwrap();
    // Another tenant's run is not acme's news.
    rt.send("secret plans", RunOptions::new().tenant("evil").session_id("evil/s1"))
        .await
        .unwrap();
    rt.send("again", acme("s1")).await.unwrap();

    // The counter moves once the delivery is recorded as delivered.
    eventually("two run.finished deliveries, recorded", || {
        receiver.of_type("run.finished").len() == 2 && rt.webhook_stats().delivered == 2
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let finished = receiver.of_type("run.finished");
    assert_eq!(finished.len(), 2, "one delivery per run: {finished:?}");
    let mut replies: Vec<&str> = finished
        .iter()
        .map(|(v, _)| v["data"]["reply"].as_str().unwrap())
        .collect();
    replies.sort_unstable();
    assert_eq!(replies, ["On it: again", "On it: hello"]);
    for (value, times) in &finished {
        assert_eq!(*times, 1, "each event taken once");
        assert_eq!(value["data"]["session"], "s1", "the session as the tenant names it");
        assert_eq!(value["data"]["status"], "completed");
    }
    assert_eq!(receiver.bad_signatures.load(Ordering::SeqCst), 0);
    let all = receiver.taken.lock().unwrap().clone();
    assert!(!all.values().any(|(v, _)| v.to_string().contains("secret plans")));
    let deliveries = rt
        .webhooks()
        .deliveries(Some("acme"), &created.webhook.id, 10)
        .await
        .unwrap()
        .unwrap();
    assert!(deliveries.iter().all(|d| d.state == DeliveryState::Delivered));
    assert_eq!(rt.webhook_stats().delivered, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_is_down_gets_the_delivery_when_it_is_back() {
    let receiver = Receiver::default();
    receiver.refuse.store(3, Ordering::SeqCst);
    let url = receiver.serve().await;
    let rt = runtime(None).await;
    let created = rt
        .add_webhook(NewWebhook::new(Some("acme"), url.as_str(), vec![WebhookEvent::RunFinished]).unwrap())
        .await
        .unwrap();
    *receiver.secret.lock().unwrap() = created.secret.clone();
    rt.send("hello", acme("s1")).await.unwrap();
    eventually("the delivery after three refusals, recorded", || {
        receiver.of_type("run.finished").len() == 1 && rt.webhook_stats().delivered == 1
    })
    .await;
    assert_eq!(receiver.requests.load(Ordering::SeqCst), 4);
    let stats = rt.webhook_stats();
    assert_eq!((stats.delivered, stats.failed_attempts), (1, 3));
    let delivery = rt
        .webhooks()
        .deliveries(Some("acme"), &created.webhook.id, 10)
        .await
        .unwrap()
        .unwrap()
        .remove(0);
    assert_eq!((delivery.state, delivery.attempts), (DeliveryState::Delivered, 4));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_firing_and_its_run_are_both_posted() {
    let receiver = Receiver::default();
    let url = receiver.serve().await;
    let rt = runtime(None).await;
    let created = rt
        .add_webhook(NewWebhook::new(Some("acme"), url.as_str(), WebhookEvent::ALL.to_vec()).unwrap())
        .await
        .unwrap();
    *receiver.secret.lock().unwrap() = created.secret.clone();
    let soon = Timestamp(Timestamp::from(std::time::SystemTime::now()).0 + 300);
    let schedule = rt
        .schedule(NewSchedule::new(
            MemoryOwner::new("acme", "ana"),
            "Call Sarah",
            When::at(soon),
        ))
        .await
        .unwrap();
    eventually("schedule.fired and run.finished", || {
        receiver.of_type("schedule.fired").len() == 1 && receiver.of_type("run.finished").len() == 1
    })
    .await;
    let fired = &receiver.of_type("schedule.fired")[0].0;
    assert_eq!(fired["data"]["schedule"], schedule.id.as_str());
    assert_eq!(fired["data"]["message"], "Call Sarah");
    let finished = &receiver.of_type("run.finished")[0].0;
    assert_eq!(finished["data"]["reply"], "On it: Call Sarah");
    assert_eq!(finished["data"]["run"], fired["data"]["run"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_wait_in_the_database_for_the_next_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("concierge.db");
    // Nothing listens here yet: every attempt fails to connect.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/hooks");
    let first = runtime(Some(&path)).await;
    let created = first
        .add_webhook(NewWebhook::new(Some("acme"), url.as_str(), vec![WebhookEvent::RunFinished]).unwrap())
        .await
        .unwrap();
    first.send("hello", acme("s1")).await.unwrap();
    eventually("a failed attempt", || first.webhook_stats().failed_attempts >= 1).await;
    first.shutdown().await;
    drop(first);

    let receiver = Receiver::default();
    *receiver.secret.lock().unwrap() = created.secret.clone();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.unwrap();
    let app = axum::Router::new()
        .route("/hooks", axum::routing::post(receive))
        .with_state(receiver.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let second = runtime(Some(&path)).await;
    eventually("the delivery from the second process", || {
        receiver.of_type("run.finished").len() == 1
    })
    .await;
    assert_eq!(receiver.of_type("run.finished")[0].0["data"]["reply"], "On it: hello");
    second.shutdown().await;
}

#[tokio::test]
async fn a_deployment_that_keeps_webhooks_public_refuses_inside_addresses() {
    let rt = Runtime::builder()
        .agent(AgentSpec::new("assistant"))
        .model(Echo)
        .in_memory()
        .webhooks_to_private_addresses(false)
        .build()
        .await
        .unwrap();
    for url in [
        "http://127.0.0.1:9/x",
        "http://localhost/x",
        "http://169.254.169.254/latest",
        "http://[::1]/x",
    ] {
        let error = rt
            .add_webhook(NewWebhook::new(Some("acme"), url, vec![WebhookEvent::RunFinished]).unwrap())
            .await
            .unwrap_err();
        assert!(error.to_string().contains("public addresses"), "{url}: {error}");
    }
    assert!(
        rt.add_webhook(
            NewWebhook::new(
                Some("acme"),
                "https://hooks.example.com/x",
                vec![WebhookEvent::RunFinished]
            )
            .unwrap()
        )
        .await
        .is_ok()
    );
}
