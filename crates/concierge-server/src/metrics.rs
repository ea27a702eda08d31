//! Prometheus metrics at `/metrics` (behind the API's tokens when there are
//! any; [`HttpApi::metrics_listener`](crate::HttpApi::metrics_listener)
//! serves them alone, without a token, on an address of their own): runs
//! started and stopped (by status),
//! model calls, tool calls (by tool and outcome), their latencies and run
//! durations as histograms, tokens and cost, every one labelled with its
//! agent.
//!
//! The runtime reports through [`ExecHooks`]: build it with
//! [`Metrics::hooks`] installed, and hand the same [`Metrics`] to
//! [`HttpApi::metrics`](crate::HttpApi::metrics). Rendered with the
//! Prometheus project's own Rust client (`prometheus-client`), whose registry
//! belongs to this server rather than to the process, in the OpenMetrics text
//! format Prometheus scrapes.
//!
//! ```no_run
//! # async fn serve() -> concierge::Result<()> {
//! use std::sync::Arc;
//! use concierge::engine::TracingHooks;
//! use concierge_server::metrics::Metrics;
//!
//! let metrics = Arc::new(Metrics::new());
//! let rt = concierge::Runtime::builder()
//!     .hooks(metrics.hooks(TracingHooks::default()))
//!     .build()
//!     .await?;
//! let api = concierge_server::HttpApi::new(rt).metrics(metrics);
//! # let _ = api;
//! # Ok(())
//! # }
//! ```

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use concierge::core::{ModelReply, RunId, RunOutput, SessionId, ToolOutcome};
use concierge::engine::{ExecHooks, ModelCall, RunInfo, ToolCallInfo, TracingHooks};
use concierge::model::ModelError;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::ground::ApiError;

/// The media type of the OpenMetrics text format.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Labels of a metric about an agent.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AgentLabels {
    agent: String,
}

/// Labels of a run that stopped.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RunLabels {
    agent: String,
    /// `completed`, `needs_input`, `awaiting_confirmation`, `awaiting_choice`,
    /// `awaiting_input`, `failed`, `cancelled` or `blocked`.
    status: String,
}

/// Labels of a model call.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelLabels {
    agent: String,
    /// The model's reference (`provider:name`).
    model: String,
    /// `ok` or `error`.
    outcome: String,
}

/// Labels of a model call's latency.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelTimeLabels {
    agent: String,
    model: String,
}

/// Labels of a tool call.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    agent: String,
    tool: String,
    /// `ok`, or the error's kind (`invalid_arguments`, `failed`, `timeout`...).
    outcome: String,
}

/// Labels of a tool call's latency.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolTimeLabels {
    agent: String,
    tool: String,
}

/// Labels of a token count.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    agent: String,
    /// `input` or `output`.
    direction: String,
}

/// Labels of a webhook delivery attempt.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabels {
    /// What it told: `run.finished`, `run.needs_input`, `run.failed`, `schedule.fired`.
    event: String,
    /// `delivered`, `failed` (retried) or `gave_up` (its last attempt failed).
    outcome: String,
}

/// Labels of a guardrail that stopped a run.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GuardrailLabels {
    agent: String,
    /// `input`, `output`, `tool_input` or `tool_output`.
    stage: String,
    /// The check's name (its kind's, unless the agent named it).
    guardrail: String,
}

type Latencies<L> = Family<L, Histogram, fn() -> Histogram>;

/// Latency buckets from 1 ms to about 2 minutes (×2.5 each).
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.5, 14))
}

/// The server's metrics: a registry and the runtime's hooks that fill it.
pub struct Metrics {
    registry: Registry,
    runs_started: Family<AgentLabels, Counter>,
    runs_stopped: Family<RunLabels, Counter>,
    run_seconds: Latencies<AgentLabels>,
    model_calls: Family<ModelLabels, Counter>,
    model_seconds: Latencies<ModelTimeLabels>,
    tool_calls: Family<ToolLabels, Counter>,
    tool_seconds: Latencies<ToolTimeLabels>,
    tokens: Family<TokenLabels, Counter>,
    cost: Family<AgentLabels, Counter<f64, AtomicU64>>,
    webhook_attempts: Family<WebhookLabels, Counter>,
    guardrail_trips: Family<GuardrailLabels, Counter>,
    /// When each run in progress started (removed when it stops).
    running: Mutex<HashMap<(SessionId, RunId), Instant>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Empty metrics, every name prefixed `concierge_`.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("concierge");
        let runs_started = Family::default();
        let runs_stopped = Family::default();
        let run_seconds: Latencies<AgentLabels> = Family::new_with_constructor(latency_histogram);
        let model_calls = Family::default();
        let model_seconds: Latencies<ModelTimeLabels> = Family::new_with_constructor(latency_histogram);
        let tool_calls = Family::default();
        let tool_seconds: Latencies<ToolTimeLabels> = Family::new_with_constructor(latency_histogram);
        let tokens = Family::default();
        let cost = Family::default();
        registry.register("runs_started", "Runs started, by agent", runs_started.clone());
        registry.register(
            "runs_stopped",
            "Runs that stopped, by agent and status (a run parked for the person stops as awaiting_confirmation, awaiting_choice or needs_input)",
            runs_stopped.clone(),
        );
        registry.register(
            "run_duration_seconds",
            "From a run's start to its first stop (finished, failed or parked), by agent",
            run_seconds.clone(),
        );
        registry.register(
            "model_calls",
            "Model calls (after retries), by agent, model and outcome",
            model_calls.clone(),
        );
        registry.register(
            "model_call_duration_seconds",
            "How long model calls took (retries included), by agent and model",
            model_seconds.clone(),
        );
        registry.register(
            "tool_calls",
            "Tool calls, by agent, tool and outcome",
            tool_calls.clone(),
        );
        registry.register(
            "tool_call_duration_seconds",
            "How long tool calls took, by agent and tool",
            tool_seconds.clone(),
        );
        registry.register(
            "model_tokens",
            "Tokens models read (input) and wrote (output), by agent",
            tokens.clone(),
        );
        registry.register(
            "model_cost_usd",
            "What model calls cost in US dollars, by agent (calls of models without a price count nothing)",
            cost.clone(),
        );
        let webhook_attempts = Family::<WebhookLabels, Counter>::default();
        registry.register(
            "webhook_deliveries",
            "Attempts to deliver webhooks from this process, by event and outcome (delivered, failed and retried, gave up)",
            webhook_attempts.clone(),
        );
        let guardrail_trips = Family::<GuardrailLabels, Counter>::default();
        registry.register(
            "guardrail_trips",
            "Runs a guardrail stopped, by agent, stage and guardrail",
            guardrail_trips.clone(),
        );
        Self {
            registry,
            webhook_attempts,
            guardrail_trips,
            runs_started,
            runs_stopped,
            run_seconds,
            model_calls,
            model_seconds,
            tool_calls,
            tool_seconds,
            tokens,
            cost,
            running: Mutex::default(),
        }
    }

    /// The runtime's hooks that record into these metrics; model calls are
    /// traced by `tracing` as before (its spans, its prompt logging).
    pub fn hooks(self: &Arc<Self>, tracing: TracingHooks) -> Arc<dyn ExecHooks> {
        Arc::new(MetricsHooks {
            metrics: Arc::clone(self),
            tracing,
        })
    }

    /// The metrics in the OpenMetrics text format.
    pub fn render(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }

    /// The routes: `GET /metrics`.
    pub fn router<S: Clone + Send + Sync + 'static>(self: &Arc<Self>) -> Router<S> {
        Router::new()
            .route("/metrics", get(scrape))
            .with_state(Arc::clone(self))
    }

    fn webhook_attempted(&self, event: &str, outcome: &str) {
        self.webhook_attempts
            .get_or_create(&WebhookLabels {
                event: event.to_string(),
                outcome: outcome.to_string(),
            })
            .inc();
    }

    fn run_started(&self, run: &RunInfo<'_>) {
        self.runs_started
            .get_or_create(&AgentLabels {
                agent: run.agent.to_string(),
            })
            .inc();
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        running.insert((run.session.clone(), run.run.clone()), Instant::now());
    }

    fn run_stopped(&self, output: &RunOutput) {
        let agent = output.agent.to_string();
        self.runs_stopped
            .get_or_create(&RunLabels {
                agent: agent.clone(),
                status: output.status.as_str().to_string(),
            })
            .inc();
        if let Some(trip) = &output.guardrail {
            self.guardrail_trips
                .get_or_create(&GuardrailLabels {
                    agent: agent.clone(),
                    stage: trip.stage.as_str().to_string(),
                    guardrail: trip.guardrail.clone(),
                })
                .inc();
        }
        let started = {
            let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
            running.remove(&(output.session_id.clone(), output.run_id.clone()))
        };
        // A run resumed here after a restart (or after a person's answer)
        // has no start in this process: it is counted, not timed.
        if let Some(started) = started {
            self.run_seconds
                .get_or_create(&AgentLabels { agent })
                .observe(started.elapsed().as_secs_f64());
        }
    }

    fn model_finished(&self, call: &ModelCall<'_>, result: Result<&ModelReply, &ModelError>, elapsed: Duration) {
        let agent = call.request.agent.to_string();
        let model = call.model.to_string();
        self.model_calls
            .get_or_create(&ModelLabels {
                agent: agent.clone(),
                model: model.clone(),
                outcome: if result.is_ok() { "ok" } else { "error" }.to_string(),
            })
            .inc();
        self.model_seconds
            .get_or_create(&ModelTimeLabels {
                agent: agent.clone(),
                model,
            })
            .observe(elapsed.as_secs_f64());
        let Ok(reply) = result else {
            return;
        };
        let Some(usage) = &reply.usage else {
            return;
        };
        for (direction, count) in [("input", usage.input_tokens), ("output", usage.output_tokens)] {
            self.tokens
                .get_or_create(&TokenLabels {
                    agent: agent.clone(),
                    direction: direction.to_string(),
                })
                .inc_by(count);
        }
        if let Some(cost) = usage.cost_usd.filter(|c| c.is_finite() && *c > 0.0) {
            self.cost.get_or_create(&AgentLabels { agent }).inc_by(cost);
        }
    }

    fn tool_finished(&self, call: &ToolCallInfo<'_>, outcome: &ToolOutcome, elapsed: Duration) {
        let agent = call.context.agent.to_string();
        let tool = call.tool.to_string();
        let outcome = match outcome {
            ToolOutcome::Ok(_) => "ok",
            ToolOutcome::Error(error) => error.kind.as_str(),
        };
        self.tool_calls
            .get_or_create(&ToolLabels {
                agent: agent.clone(),
                tool: tool.clone(),
                outcome: outcome.to_string(),
            })
            .inc();
        self.tool_seconds
            .get_or_create(&ToolTimeLabels { agent, tool })
            .observe(elapsed.as_secs_f64());
    }
}

/// The hooks the runtime calls: tracing as usual, then the metrics.
struct MetricsHooks {
    metrics: Arc<Metrics>,
    tracing: TracingHooks,
}

impl ExecHooks for MetricsHooks {
    fn model_span(&self, call: &ModelCall<'_>) -> tracing::Span {
        self.tracing.model_span(call)
    }

    fn model_finished(
        &self,
        span: &tracing::Span,
        call: &ModelCall<'_>,
        result: Result<&ModelReply, &ModelError>,
        elapsed: Duration,
    ) {
        self.tracing.model_finished(span, call, result, elapsed);
        self.metrics.model_finished(call, result, elapsed);
    }

    fn tool_finished(&self, call: &ToolCallInfo<'_>, outcome: &ToolOutcome, elapsed: Duration) {
        self.tracing.tool_finished(call, outcome, elapsed);
        self.metrics.tool_finished(call, outcome, elapsed);
    }

    fn run_started(&self, run: &RunInfo<'_>) {
        self.metrics.run_started(run);
    }

    fn run_stopped(&self, output: &RunOutput) {
        self.metrics.run_stopped(output);
    }

    fn webhook_attempted(&self, event: &str, outcome: &str) {
        self.metrics.webhook_attempted(event, outcome);
    }
}

/// `GET /metrics`.
async fn scrape(State(metrics): State<Arc<Metrics>>) -> Response {
    match metrics.render() {
        Ok(text) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response(),
        Err(_) => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the metrics could not be written out; try again",
        )
        .into_response(),
    }
}
