//! `/metrics` through real HTTP on loopback: runs over the API move their
//! agent's counters (runs, tool calls, model calls, tokens, cost), and the
//! page is well-formed Prometheus (OpenMetrics) text.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::Arc;

use concierge::core::ModelReply;
use concierge::engine::TracingHooks;
use concierge::model::{Price, ScriptedModel};
use concierge::{AgentSpec, Runtime};
use concierge_server::HttpApi;
use concierge_server::metrics::Metrics;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// One sample: its metric name and its labels, sorted.
type Key = (String, BTreeMap<String, String>);

/// Parses the exposition: every line is a `# HELP`, `# TYPE` or `# UNIT`
/// comment, a sample `name{label="value",...} number` of a declared family,
/// or the final `# EOF`. Panics naming the first line that is none of these.
fn parse(text: &str) -> BTreeMap<Key, f64> {
    let mut samples = BTreeMap::new();
    let mut families: Vec<(String, String)> = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.last(), Some(&"# EOF"), "the exposition must end with # EOF");
    for line in &lines[..lines.len() - 1] {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or_else(|| panic!("bad TYPE line {line:?}"));
            assert!(
                ["counter", "gauge", "histogram", "info", "unknown"].contains(&kind),
                "unknown type in {line:?}"
            );
            families.push((name.to_string(), kind.to_string()));
            continue;
        }
        if line.starts_with("# HELP ") || line.starts_with("# UNIT ") {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("no value in {line:?}"));
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("bad value in {line:?}"));
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => {
                let body = rest
                    .strip_suffix('}')
                    .unwrap_or_else(|| panic!("unclosed labels in {line:?}"));
                let mut labels = BTreeMap::new();
                for pair in body.split("\",").filter(|p| !p.is_empty()) {
                    let (key, value) = pair
                        .split_once("=\"")
                        .unwrap_or_else(|| panic!("bad label in {line:?}"));
                    labels.insert(key.to_string(), value.trim_end_matches('"').to_string());
                }
                (name.to_string(), labels)
            }
            None => (series.to_string(), BTreeMap::new()),
        };
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "bad metric name in {line:?}"
        );
        let declared = families.iter().any(|(family, kind)| {
            name == *family
                || (kind == "counter" && name == format!("{family}_total"))
                || (kind == "counter" && name == format!("{family}_created"))
                || (kind == "histogram"
                    && ["_bucket", "_sum", "_count", "_created"]
                        .iter()
                        .any(|suffix| name == format!("{family}{suffix}")))
        });
        assert!(declared, "a sample of no declared family: {line:?}");
        samples.insert((name, labels), value);
    }
    samples
}

fn value(samples: &BTreeMap<Key, f64>, name: &str, labels: &[(&str, &str)]) -> f64 {
    let labels: BTreeMap<String, String> = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    samples.get(&(name.to_string(), labels)).copied().unwrap_or(0.0)
}

async fn scrape(http: &reqwest::Client, base: &str) -> BTreeMap<Key, f64> {
    let response = http.get(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let kind = response.headers()["content-type"].to_str().unwrap().to_string();
    assert!(kind.starts_with("application/openmetrics-text"), "{kind}");
    parse(&response.text().await.unwrap())
}

async fn say(http: &reqwest::Client, base: &str, agent: &str, text: &str) -> Value {
    let response = http
        .post(format!("{base}/api/v1/sessions"))
        .json(&json!({ "agent": agent }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let session: Value = response.json().await.unwrap();
    let id = session["id"].as_str().unwrap();
    let response = http
        .post(format!("{base}/api/v1/sessions/{id}/messages?wait=true"))
        .json(&json!({ "text": text }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.unwrap()
}

#[tokio::test]
async fn runs_over_the_api_move_their_agents_counters() {
    // The calculator plans on its rules (a tool call, no model); the writer
    // on a scripted model that reports its tokens, at a price.
    let writer_model = ScriptedModel::new()
        .named("scripted:writer")
        .reply(ModelReply::text("A short poem.").with_usage(1_000, 500));
    let writer = AgentSpec::new("writer")
        .description("Writes short texts.")
        .instructions("Write what you are asked for.")
        .model("scripted:writer");
    let metrics = Arc::new(Metrics::new());
    let rt = Runtime::builder()
        .in_memory()
        .toolset(concierge_demo::calculator::toolset())
        .agents(concierge_demo::agents())
        .agent(writer)
        .named_model("scripted:writer", Arc::new(writer_model))
        .price(
            "scripted:writer",
            Price {
                input: 1.0,
                output: 2.0,
            },
        )
        .hooks(metrics.hooks(TracingHooks::default()))
        .build()
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    let served = tokio::spawn(HttpApi::new(rt.clone()).metrics(metrics).serve(listener, async move {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::new();

    let before = scrape(&http, &base).await;
    assert_eq!(
        value(&before, "concierge_runs_started_total", &[("agent", "calculator")]),
        0.0
    );

    let out = say(&http, &base, "calculator", "calculate 5 + 3").await;
    assert_eq!(out["status"], "completed", "{out}");
    let after = scrape(&http, &base).await;
    let calculator = [("agent", "calculator")];
    assert_eq!(value(&after, "concierge_runs_started_total", &calculator), 1.0);
    assert_eq!(
        value(
            &after,
            "concierge_runs_stopped_total",
            &[("agent", "calculator"), ("status", "completed")]
        ),
        1.0
    );
    assert_eq!(value(&after, "concierge_run_duration_seconds_count", &calculator), 1.0);
    assert_eq!(
        value(
            &after,
            "concierge_tool_calls_total",
            &[("agent", "calculator"), ("tool", "calculator"), ("outcome", "ok")]
        ),
        1.0
    );
    assert_eq!(
        value(
            &after,
            "concierge_tool_call_duration_seconds_count",
            &[("agent", "calculator"), ("tool", "calculator")]
        ),
        1.0
    );
    // On rules, no model was called.
    assert!(
        !after.keys().any(|(name, _)| name == "concierge_model_calls_total"),
        "{after:?}"
    );

    let out = say(&http, &base, "writer", "a poem about rain").await;
    assert_eq!(out["reply"], "A short poem.", "{out}");
    let after = scrape(&http, &base).await;
    let writer = [("agent", "writer")];
    assert_eq!(value(&after, "concierge_runs_started_total", &writer), 1.0);
    assert_eq!(
        value(
            &after,
            "concierge_model_calls_total",
            &[("agent", "writer"), ("model", "scripted:writer"), ("outcome", "ok")]
        ),
        1.0
    );
    assert_eq!(
        value(
            &after,
            "concierge_model_call_duration_seconds_count",
            &[("agent", "writer"), ("model", "scripted:writer")]
        ),
        1.0
    );
    assert_eq!(
        value(
            &after,
            "concierge_model_tokens_total",
            &[("agent", "writer"), ("direction", "input")]
        ),
        1_000.0
    );
    assert_eq!(
        value(
            &after,
            "concierge_model_tokens_total",
            &[("agent", "writer"), ("direction", "output")]
        ),
        500.0
    );
    // 1,000 tokens at $1 and 500 at $2 per million.
    let cost = value(&after, "concierge_model_cost_usd_total", &writer);
    assert!((cost - 0.002).abs() < 1e-12, "{cost}");
    // The calculator's counters did not move.
    assert_eq!(value(&after, "concierge_runs_started_total", &calculator), 1.0);

    let _ = stop.send(());
    served.await.unwrap().unwrap();
    rt.shutdown().await;
}

#[tokio::test]
async fn without_metrics_there_is_no_metrics_page() {
    let rt = Runtime::builder()
        .in_memory()
        .toolset(concierge_demo::calculator::toolset())
        .agents(concierge_demo::agents())
        .build()
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    let served = tokio::spawn(HttpApi::new(rt.clone()).serve(listener, async move {
        let _ = stopped.await;
    }));
    let response = reqwest::get(format!("{base}/metrics")).await.unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let _ = stop.send(());
    served.await.unwrap().unwrap();
    rt.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_deliveries_are_counted_by_event_and_outcome() {
    let metrics = Arc::new(Metrics::new());
    let rt = Runtime::builder()
        .in_memory()
        .toolset(concierge_demo::calculator::toolset())
        .agents(concierge_demo::agents())
        .hooks(metrics.hooks(TracingHooks::default()))
        .build()
        .await
        .unwrap();
    // A receiver that refuses the first attempt and takes the second.
    let refused = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let app = axum::Router::new().route(
        "/hooks",
        axum::routing::post(move || {
            let refused = refused.clone();
            async move {
                if refused.swap(true, std::sync::atomic::Ordering::SeqCst) {
                    reqwest::StatusCode::OK
                } else {
                    reqwest::StatusCode::SERVICE_UNAVAILABLE
                }
            }
        }),
    );
    let hooks = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks", hooks.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(hooks, app).await;
    });
    rt.add_webhook(
        concierge::webhook::NewWebhook::new(None, url, vec![concierge::webhook::WebhookEvent::RunFinished]).unwrap(),
    )
    .await
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    let served = tokio::spawn(HttpApi::new(rt.clone()).metrics(metrics).serve(listener, async move {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::new();
    let out = say(&http, &base, "calculator", "calculate 5 + 3").await;
    assert_eq!(out["status"], "completed", "{out}");
    let labels = |outcome| [("event", "run.finished"), ("outcome", outcome)];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let samples = scrape(&http, &base).await;
        if value(&samples, "concierge_webhook_deliveries_total", &labels("delivered")) == 1.0 {
            assert_eq!(
                value(&samples, "concierge_webhook_deliveries_total", &labels("failed")),
                1.0
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no delivery counted: {samples:?}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let _ = stop.send(());
    served.await.unwrap().unwrap();
    rt.shutdown().await;
}
