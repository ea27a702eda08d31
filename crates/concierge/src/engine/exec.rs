//! Engine-neutral executors: calling a model and calling a tool, as plain
//! async functions that turn an effect into the input that answers it. The
//! embedded engine runs them as tasks; a workflow engine runs them as
//! activities. Retries are a parameter (an engine that retries by itself
//! turns ours off) and observability goes through [`ExecHooks`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use concierge_core::{
    AgentCall, AgentId, Choice, Effect, GuardStage, Guardrail, Guardrails, Input, ModelReply, ModelRequest, Question,
    RunId, RunOutput, SessionId, ToolCall, ToolError, ToolId, ToolOutcome, Usage,
};
use tracing::Instrument;

use crate::engine::now;
use crate::guardrail::Guards;
use crate::model::{ModelContext, ModelError, ModelErrorKind, Models, RetryPolicy, complete_with_retry};
use crate::tool::{ToolContext, ToolRegistry};

/// One model call, as hooks see it.
#[derive(Clone, Copy, Debug)]
pub struct ModelCall<'a> {
    /// The session the call serves.
    pub session: &'a SessionId,
    /// The run within it.
    pub run: &'a RunId,
    /// The model call's number within the run.
    pub call: u32,
    /// What the model is asked (system prompt, history, tools).
    pub request: &'a ModelRequest,
    /// The model's reference (`provider:name`, or `none:none` when none is configured).
    pub model: &'a str,
}

/// One tool call, as hooks see it.
#[derive(Clone, Copy, Debug)]
pub struct ToolCallInfo<'a> {
    /// The session, run, call and agent behind the call.
    pub context: &'a ToolContext,
    /// The tool called.
    pub tool: &'a ToolId,
}

/// Observes executions: tracing spans, metrics. Every method has a default
/// that does nothing.
pub trait ExecHooks: Send + Sync + 'static {
    /// The span a model call runs in (retries and provider logs land inside it).
    fn model_span(&self, call: &ModelCall<'_>) -> tracing::Span {
        let _ = call;
        tracing::Span::none()
    }

    /// A model call ended (after its retries).
    fn model_finished(
        &self,
        span: &tracing::Span,
        call: &ModelCall<'_>,
        result: Result<&ModelReply, &ModelError>,
        elapsed: Duration,
    ) {
        let _ = (span, call, result, elapsed);
    }

    /// A tool call ended (with its outcome and how long it took).
    fn tool_finished(&self, call: &ToolCallInfo<'_>, outcome: &ToolOutcome, elapsed: Duration) {
        let _ = (call, outcome, elapsed);
    }

    /// A run started in this process (child runs of agents-as-tools too).
    fn run_started(&self, run: &RunInfo<'_>) {
        let _ = run;
    }

    /// A run stopped in this process: it finished, failed, or parked for the
    /// person (a confirmation, a choice, a question); `output.status` says which.
    fn run_stopped(&self, output: &RunOutput) {
        let _ = output;
    }

    /// This process tried to deliver a webhook: `event` is what it tells
    /// (`run.finished`, …), `outcome` how it went: `delivered`, `failed`
    /// (it is retried) or `gave_up` (that was its last attempt).
    fn webhook_attempted(&self, event: &str, outcome: &str) {
        let _ = (event, outcome);
    }
}

/// A run that started, as hooks see it.
#[derive(Clone, Copy, Debug)]
pub struct RunInfo<'a> {
    /// The session the run belongs to.
    pub session: &'a SessionId,
    /// The run.
    pub run: &'a RunId,
    /// The agent that takes the run.
    pub agent: &'a AgentId,
}

/// The default hooks: an OpenTelemetry GenAI `chat` span per model call.
#[derive(Clone, Copy, Debug, Default)]
pub struct TracingHooks {
    /// Whether spans carry the prompt (off by default: prompts hold personal data).
    pub log_prompts: bool,
}

impl ExecHooks for TracingHooks {
    fn model_span(&self, call: &ModelCall<'_>) -> tracing::Span {
        let (system, model_name) = call.model.split_once(':').unwrap_or(("unknown", call.model));
        let span = tracing::info_span!(
            "chat",
            "gen_ai.operation.name" = "chat",
            "gen_ai.system" = system,
            "gen_ai.request.model" = model_name,
            "gen_ai.request.temperature" = call.request.temperature.map(f64::from),
            "gen_ai.usage.input_tokens" = tracing::field::Empty,
            "gen_ai.usage.output_tokens" = tracing::field::Empty,
            "gen_ai.response.finish_reasons" = tracing::field::Empty,
            "error.type" = tracing::field::Empty,
            "concierge.session" = %call.session,
            "concierge.run" = %call.run,
            "concierge.agent" = %call.request.agent,
        );
        if self.log_prompts {
            let prompt = serde_json::json!({"system": call.request.system, "messages": call.request.messages});
            tracing::info!(parent: &span, gen_ai.prompt = %prompt, "model prompt");
        }
        span
    }

    fn model_finished(
        &self,
        span: &tracing::Span,
        _call: &ModelCall<'_>,
        result: Result<&ModelReply, &ModelError>,
        _elapsed: Duration,
    ) {
        match result {
            Ok(reply) => {
                if let Some(usage) = &reply.usage {
                    span.record("gen_ai.usage.input_tokens", usage.input_tokens);
                    span.record("gen_ai.usage.output_tokens", usage.output_tokens);
                }
                if let Some(reason) = &reply.finish_reason {
                    span.record("gen_ai.response.finish_reasons", reason.as_str());
                }
            }
            Err(error) => {
                span.record("error.type", format!("{:?}", error.kind).as_str());
                tracing::warn!(parent: span, %error, "model call failed");
            }
        }
    }
}

/// Why an effect cannot be performed in this process (it then waits for a
/// process that can).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// No model is configured for the request.
    #[error("no model is configured for agent {agent}")]
    Model {
        /// The agent whose run asks.
        agent: String,
    },
    /// The tool is not registered here.
    #[error("tool {tool} is not available in this process")]
    Tool {
        /// The tool's name.
        tool: String,
    },
    /// The model could not be reached when a resumed run called it.
    #[error("its model could not be reached ({reason})")]
    Unreachable {
        /// The model's error.
        reason: String,
    },
}

/// Builds a child run's message from an agent tool's arguments (see
/// [`Executor::prompt_builder`]).
pub type PromptBuilder = Arc<dyn Fn(&serde_json::Value) -> String + Send + Sync>;

/// Whose text is checked: the session and run a classifier's model call
/// is counted for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Whose<'a> {
    pub(crate) session: &'a SessionId,
    pub(crate) run: &'a RunId,
}

/// Performs model and tool calls for any engine.
#[derive(Clone)]
pub struct Executor {
    models: Models,
    tools: Arc<ToolRegistry>,
    retry: Option<RetryPolicy>,
    hooks: Arc<dyn ExecHooks>,
    prompts: std::collections::HashMap<ToolId, PromptBuilder>,
    guards: Guards,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("models", &self.models)
            .field("tools", &self.tools)
            .field("retry", &self.retry)
            .finish()
    }
}

impl Executor {
    /// Executes with `models` and `tools`, retrying model calls by the
    /// default policy, traced by [`TracingHooks`].
    pub fn new(models: Models, tools: Arc<ToolRegistry>) -> Self {
        Self {
            models,
            tools,
            retry: Some(RetryPolicy::default()),
            hooks: Arc::new(TracingHooks::default()),
            prompts: std::collections::HashMap::new(),
            guards: Guards::default(),
        }
    }

    /// Runs agents' `custom` guardrails with `guards`.
    pub fn guards(mut self, guards: Guards) -> Self {
        self.guards = guards;
        self
    }

    /// The custom guardrails this executor knows.
    pub fn custom_guards(&self) -> &Guards {
        &self.guards
    }

    /// Builds the child's message of the agent tool `tool` with `builder`
    /// (over the call's arguments), instead of the tool's template.
    pub fn prompt_builder(mut self, tool: impl Into<ToolId>, builder: PromptBuilder) -> Self {
        self.prompts.insert(tool.into(), builder);
        self
    }

    /// `call` with its message built by the tool's prompt builder, if it has one.
    pub fn agent_call(&self, mut call: AgentCall) -> AgentCall {
        if let Some(builder) = self.prompts.get(&call.call.name) {
            call.prompt = builder(&call.call.arguments);
        }
        call
    }

    /// Retries failed model calls by `policy`.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }

    /// Tries each model call once: for engines that retry by themselves.
    pub fn without_retries(mut self) -> Self {
        self.retry = None;
        self
    }

    /// Observes executions with `hooks`.
    pub fn hooks(mut self, hooks: Arc<dyn ExecHooks>) -> Self {
        self.hooks = hooks;
        self
    }

    /// The hooks executions are observed with (engines call their run hooks).
    pub fn exec_hooks(&self) -> &Arc<dyn ExecHooks> {
        &self.hooks
    }

    /// The models calls are made with.
    pub fn models(&self) -> &Models {
        &self.models
    }

    /// The tools calls are made to.
    pub fn tools(&self) -> &Arc<ToolRegistry> {
        &self.tools
    }

    /// Whether this process can perform `effect` (a model call needs a
    /// model, a tool call its tool); other effects always can.
    pub fn check(&self, effect: &Effect) -> Result<(), Unavailable> {
        match effect {
            Effect::CallModel { request, .. } if self.models.for_request(request).is_none() => {
                Err(Unavailable::Model {
                    agent: request.agent.to_string(),
                })
            }
            Effect::CallTool { call, .. } if !self.tools.contains(&call.name) => Err(Unavailable::Tool {
                tool: call.name.to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// Calls the model for `request` and returns the input that answers the
    /// core: `ModelReplied` (with usage and cost) or `ModelFailed`, with the
    /// failure itself (an engine may hold a `ModelFailed` back when the model
    /// was [unavailable](ModelError::is_unavailable), to try again elsewhere).
    ///
    /// `guardrails` are the agent's output guardrails: the reply is checked
    /// with them before it is returned (redacted, or withheld with the trip
    /// in [`ModelReply::guardrail`]); with any, the reply is not streamed.
    pub async fn call_model(
        &self,
        session: &SessionId,
        run_id: RunId,
        call: u32,
        request: &ModelRequest,
        cx: &ModelContext,
        guardrails: &[Guardrail],
    ) -> (Input, Option<ModelError>) {
        let unstreamed = ModelContext::default();
        // Text a guardrail has not checked is not shown as it streams.
        let cx = if guardrails.is_empty() { cx } else { &unstreamed };
        let model = self.models.for_request(request);
        let name = model.as_ref().map_or_else(|| "none:none".to_string(), |m| m.name());
        let info = ModelCall {
            session,
            run: &run_id,
            call,
            request,
            model: &name,
        };
        let span = self.hooks.model_span(&info);
        let started = Instant::now();
        let result = match &model {
            Some(model) => {
                let once = RetryPolicy {
                    max_attempts: 1,
                    ..RetryPolicy::default()
                };
                let policy = self.retry.as_ref().unwrap_or(&once);
                complete_with_retry(model.as_ref(), request, cx, policy)
                    .instrument(span.clone())
                    .await
            }
            None => Err(ModelError::new(
                ModelErrorKind::NotConfigured,
                request.model.clone().unwrap_or_else(|| "default".into()),
                format!(
                    "no model is configured for agent {}; configure one (e.g. --model openai:<name> --base-url URL)",
                    request.agent
                ),
            )),
        };
        let result = result.map(|mut reply| {
            let usage = reply.usage.get_or_insert(Usage::tokens(0, 0));
            usage.cost_usd = self.models.cost(&name, usage.input_tokens, usage.output_tokens);
            reply
        });
        self.hooks
            .model_finished(&span, &info, result.as_ref(), started.elapsed());
        let result = match result {
            Ok(reply) if !guardrails.is_empty() => {
                let whose = Whose { session, run: &run_id };
                Ok(self.check_reply(reply, guardrails, whose).await)
            }
            other => other,
        };
        match result {
            Ok(reply) => (
                Input::ModelReplied {
                    run_id,
                    call,
                    reply,
                    at: now(),
                },
                None,
            ),
            Err(error) => (
                Input::ModelFailed {
                    run_id,
                    call,
                    error: error.to_string(),
                    at: now(),
                },
                Some(error),
            ),
        }
    }

    /// Runs a tool call (validation, coercion, timeout, panic capture) and
    /// returns the `ToolFinished` input for the core.
    ///
    /// `guardrails` are the agent's tool guardrails: the arguments are
    /// checked before the call runs, the result before it is returned (a
    /// trip answers with a [`ToolErrorKind::Blocked`](concierge_core::ToolErrorKind::Blocked) error).
    pub async fn call_tool(&self, cx: ToolContext, call: &ToolCall, guardrails: &Guardrails) -> Input {
        let started = Instant::now();
        let run_id = cx.run_id.clone();
        let whose = Whose {
            session: &cx.session_id,
            run: &run_id,
        };
        let mut checked_call;
        let mut call = call;
        if !guardrails.tool_input.is_empty() {
            let checked = self
                .check_value(
                    GuardStage::ToolInput,
                    &guardrails.tool_input,
                    &call.arguments,
                    &call.name,
                    whose,
                )
                .await;
            if let Some(trip) = checked.trip {
                return Input::ToolFinished {
                    run_id,
                    call_id: call.id.clone(),
                    outcome: ToolOutcome::Error(ToolError::blocked(trip)),
                    duration_ms: 0,
                    usage: None,
                    at: now(),
                };
            }
            checked_call = call.clone();
            checked_call.arguments = checked.value;
            call = &checked_call;
        }
        let (mut outcome, duration_ms) = self.tools.execute(call, cx.clone()).await;
        if let (ToolOutcome::Ok(value), false) = (&outcome, guardrails.tool_output.is_empty()) {
            let checked = self
                .check_value(
                    GuardStage::ToolOutput,
                    &guardrails.tool_output,
                    value,
                    &call.name,
                    whose,
                )
                .await;
            outcome = match checked.trip {
                Some(trip) => ToolOutcome::Error(ToolError::blocked(trip)),
                None => ToolOutcome::Ok(checked.value),
            };
        }
        self.hooks.tool_finished(
            &ToolCallInfo {
                context: &cx,
                tool: &call.name,
            },
            &outcome,
            started.elapsed(),
        );
        if let ToolOutcome::Ok(value) = &outcome {
            if let Some(choice) = Choice::from_value(value) {
                return Input::ToolAsked {
                    run_id,
                    call_id: call.id.clone(),
                    question: Question::Choice { choice },
                    usage: None,
                    checkpoint: None,
                    at: now(),
                };
            }
        }
        Input::ToolFinished {
            run_id,
            call_id: call.id.clone(),
            outcome,
            duration_ms,
            usage: None,
            at: now(),
        }
    }
}

impl Executor {
    /// `reply` checked with the agent's output guardrails: its text
    /// redacted, or withheld (text and calls) with the trip recorded.
    async fn check_reply(&self, mut reply: ModelReply, guardrails: &[Guardrail], whose: Whose<'_>) -> ModelReply {
        let checked = self
            .check_text(GuardStage::Output, guardrails, &reply.text, whose)
            .await;
        match checked.trip {
            Some(trip) => {
                reply.text.clear();
                reply.tool_calls.clear();
                reply.guardrail = Some(trip);
            }
            None => reply.text = checked.value,
        }
        reply
    }
}
