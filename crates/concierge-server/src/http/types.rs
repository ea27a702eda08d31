//! The API's request and response bodies; their schemas in `/openapi.json`
//! are derived from these types.

use std::collections::BTreeMap;

use concierge::core::{AgentSpec, ForkOrigin, Message, PendingChoice, PendingConfirmation, ToolSpec, Usage};
use concierge::{ElicitationAction, PendingElicitation, RunOutput, RunStatus, Session, SessionSummary};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

/// `POST /api/v1/sessions`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSession {
    /// The session's id, in the caller's tenant's own id space (another
    /// tenant may have a session by the same id); a random one (`s-` and 32
    /// hex digits) when absent. Letters, digits, `-`, `_` and `.`, at most
    /// 128 characters.
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z0-9_.-]{1,128}$")]
    pub id: Option<String>,
    /// The agent that takes the session's first message; without one the
    /// default agent does (the hub when there are several).
    #[serde(default)]
    pub agent: Option<String>,
}

/// `POST /api/v1/sessions/{id}/messages`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PostMessage {
    /// What the person says (not blank).
    #[schema(min_length = 1, pattern = "[^\\s\\u0085\\u001c-\\u001f\\ufeff]")]
    pub text: String,
    /// The run's id, new in the session (a run id names one run: an id an
    /// earlier run had is a 409); a random one (`run-` and 32 hex digits)
    /// when absent. Letters, digits, `-`, `_` and `.`, at most 128 characters.
    #[serde(default)]
    #[schema(pattern = "^[A-Za-z0-9_.-]{1,128}$")]
    pub run_id: Option<String>,
    /// What the message does if a run of the session is still working:
    /// `reject` (409), `enqueue` (it runs as soon as that run stops) or
    /// `interrupt` (that run is cancelled first). Without it: the agent's
    /// `multitask`, else `enqueue` with `?wait=true` and `reject` without.
    #[serde(default)]
    #[schema(value_type = Option<String>, pattern = "^(reject|enqueue|interrupt)$")]
    pub multitask: Option<concierge::Multitask>,
}

/// Whether to wait for the run (`?wait=true`) or answer at once with its id.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WaitQuery {
    /// Wait for the run to finish or park and answer with its output.
    #[serde(default)]
    pub wait: bool,
}

/// What to do with a call that waits for approval.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// Run the call as it stands.
    Approve,
    /// Do not run it.
    Deny,
    /// Run it with other arguments (given in `arguments`; new arguments are
    /// shown back for a final approval).
    Amend,
}

/// What the person does with a running call's question.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum AnswerAction {
    /// Answer it (with the form's values in `content`).
    Accept,
    /// Say no; the call goes on without the information.
    Decline,
    /// Dismiss it; the server stops what it asked for.
    Cancel,
}

impl From<AnswerAction> for ElicitationAction {
    fn from(action: AnswerAction) -> Self {
        match action {
            AnswerAction::Accept => ElicitationAction::Accept,
            AnswerAction::Decline => ElicitationAction::Decline,
            AnswerAction::Cancel => ElicitationAction::Cancel,
        }
    }
}

/// `POST /api/v1/sessions/{id}/confirm`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfirmRequest {
    /// The parked call's id, as the pending confirmation gives it.
    pub call_id: String,
    /// The parked call's argument fingerprint, as the pending confirmation gives it.
    pub fingerprint: String,
    /// Approve, deny or amend.
    pub decision: DecisionKind,
    /// Why the call is denied (for `deny`).
    #[serde(default)]
    pub reason: Option<String>,
    /// The complete new arguments (for `amend`).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub arguments: Option<Value>,
}

/// `POST /api/v1/sessions/{id}/answer`: the person's answer to the
/// question a running call asks (MCP elicitation).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerRequest {
    /// The call that asks, as the pending question gives it.
    pub call_id: String,
    /// Which of its questions, as the pending question gives it.
    #[serde(default, deserialize_with = "whole_number")]
    pub question: u32,
    /// `accept`, `decline` or `cancel`.
    pub action: AnswerAction,
    /// The form's values, for `accept` (an object of the requested fields).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub content: Option<Value>,
}

/// `POST /api/v1/sessions/{id}/choose`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChooseRequest {
    /// The chosen option's number, from 1, as the pending choice numbers them.
    #[serde(deserialize_with = "whole_number")]
    #[schema(minimum = 1)]
    pub option: u32,
}

/// A whole number in range, written `2` or `2.0` (JSON Schema's integers
/// include `2.0`, so clients and validators may send it so).
fn whole_number<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    whole(serde_json::Number::deserialize(deserializer)?)
}

/// [`whole_number`], or nothing (absent or `null`).
pub(crate) fn optional_whole_number<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<u32>, D::Error> {
    Option::<serde_json::Number>::deserialize(deserializer)?
        .map(whole)
        .transpose()
}

fn whole<E: serde::de::Error>(number: serde_json::Number) -> Result<u32, E> {
    let whole = match number.as_u64() {
        Some(n) => Some(n),
        None => number
            .as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= f64::from(u32::MAX))
            .map(|f| f as u64),
    };
    whole
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| E::custom(format!("{number} is not a whole number")))
}

/// `POST /api/v1/sessions/{id}/end` (the body is optional).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EndRequest {
    /// Why the session ends, recorded with it.
    #[serde(default)]
    pub reason: Option<String>,
}

/// A session in the list.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionListItem {
    /// The session's id.
    pub id: String,
    /// The agent that has the conversation now (or takes its first message).
    pub agent: Option<String>,
    /// Whether a run is under way.
    pub live: bool,
    /// When its last input was accepted (its creation, for a session with
    /// no message yet), in milliseconds since the Unix epoch.
    pub updated_at: u64,
}

impl From<SessionSummary> for SessionListItem {
    fn from(s: SessionSummary) -> Self {
        Self {
            id: s.id.to_string(),
            agent: Some(s.agent.to_string()),
            live: s.live,
            updated_at: s.updated_at.0,
        }
    }
}

/// `GET /api/v1/sessions`: a page of the caller's sessions.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionList {
    /// The sessions, most recently active first.
    pub sessions: Vec<SessionListItem>,
    /// When more follow: what to pass as `?after=` for the next page (the
    /// last session's id).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub next: Option<String>,
}

/// `?limit=&after=` for the list of sessions.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SessionListQuery {
    /// At most this many sessions (default 100, most 1,000).
    #[serde(default)]
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
    /// The page after this session: the `next` of the previous page.
    #[serde(default)]
    #[param(nullable = false, pattern = "^[A-Za-z0-9_.-]{1,128}$")]
    pub after: Option<String>,
}

/// One message of a session's history.
#[derive(Debug, Serialize, ToSchema)]
pub struct MessageView {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The text (a tool message's outcome as text).
    pub text: String,
    /// The agent that spoke or called the tool.
    pub agent: Option<String>,
    /// For a tool message: the tool that ran.
    pub tool: Option<String>,
    /// For a tool message: the call it answers.
    pub call_id: Option<String>,
    /// For an assistant message: the tools it called, by name.
    pub tool_calls: Vec<String>,
}

impl From<&Message> for MessageView {
    fn from(m: &Message) -> Self {
        let (agent, tool, call_id, tool_calls) = match m {
            Message::Assistant { agent, tool_calls, .. } => (
                Some(agent.to_string()),
                None,
                None,
                tool_calls.iter().map(|c| c.name.to_string()).collect(),
            ),
            Message::Tool {
                agent, call_id, tool, ..
            } => (
                Some(agent.to_string()),
                Some(tool.to_string()),
                Some(call_id.to_string()),
                Vec::new(),
            ),
            Message::System { .. } | Message::User { .. } => (None, None, None, Vec::new()),
        };
        Self {
            role: m.role().to_string(),
            text: m.text(),
            agent,
            tool,
            call_id,
            tool_calls,
        }
    }
}

/// A call that waits for the person's approval.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConfirmationView {
    /// The parked run.
    pub run_id: String,
    /// The call's id (quote it to confirm).
    pub call_id: String,
    /// The tool the call runs.
    pub tool: String,
    /// The exact arguments it runs with if approved.
    #[schema(value_type = Object)]
    pub arguments: Value,
    /// The arguments' fingerprint (quote it to confirm).
    pub fingerprint: String,
    /// The question for the person.
    pub message: String,
}

impl From<PendingConfirmation> for ConfirmationView {
    fn from(p: PendingConfirmation) -> Self {
        Self {
            run_id: p.run_id.to_string(),
            call_id: p.call_id.to_string(),
            tool: p.tool.to_string(),
            arguments: p.arguments,
            fingerprint: p.fingerprint,
            message: p.message,
        }
    }
}

/// A numbered question the run waits on.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChoiceView {
    /// The parked run.
    pub run_id: String,
    /// The call that asked.
    pub call_id: String,
    /// The question.
    pub question: String,
    /// The options, numbered from 1 in this order.
    pub options: Vec<ChoiceOptionView>,
}

/// One option of a choice.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChoiceOptionView {
    /// Its number (send it to `choose`).
    pub number: u32,
    /// What the person reads.
    pub label: String,
}

impl From<PendingChoice> for ChoiceView {
    fn from(p: PendingChoice) -> Self {
        Self {
            run_id: p.run_id.to_string(),
            call_id: p.call_id.to_string(),
            question: p.choice.question,
            options: p
                .choice
                .options
                .into_iter()
                .zip(1u32..)
                .map(|(o, number)| ChoiceOptionView { number, label: o.label })
                .collect(),
        }
    }
}

/// Tokens and cost.
#[derive(Debug, Serialize, ToSchema)]
pub struct UsageView {
    /// Tokens sent to models.
    pub input_tokens: u64,
    /// Tokens models answered with.
    pub output_tokens: u64,
    /// Cost in US dollars; none when a model's price is not known.
    pub cost_usd: Option<f64>,
}

impl From<Usage> for UsageView {
    fn from(u: Usage) -> Self {
        Self {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cost_usd: u.cost_usd,
        }
    }
}

/// `GET /api/v1/sessions/{id}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionView {
    /// The session's id.
    pub id: String,
    /// The agent that has the conversation (or takes its first message).
    pub agent: Option<String>,
    /// The phase of the run under way or parked (`initialize`, `planning`,
    /// `clarifying`, ...); none when no run is.
    pub phase: Option<String>,
    /// The run under way, if any.
    pub active_run: Option<String>,
    /// Whether the session was ended.
    pub ended: bool,
    /// The conversation.
    pub history: Vec<MessageView>,
    /// What the session knows, by key.
    #[schema(value_type = Object)]
    pub blackboard: BTreeMap<String, Value>,
    /// The call waiting for approval.
    pub pending_confirmation: Option<ConfirmationView>,
    /// The choice waiting for an answer.
    pub pending_choice: Option<ChoiceView>,
    /// The question a running call asks the person (MCP elicitation): its
    /// call and number, the server, the message, the mode with the
    /// requested schema or URL, and the question in words.
    #[schema(value_type = Option<Object>)]
    pub pending_elicitation: Option<PendingElicitation>,
    /// Tokens and cost of the whole session.
    pub usage: UsageView,
    /// The id of its last durable event (resume its event stream after it).
    pub last_event_id: String,
    /// For a fork: the session it was forked from, at which event, and what
    /// that means for actions already done.
    pub forked_from: Option<ForkedFromView>,
}

impl SessionView {
    /// The view of a session the engine has, which the client calls `id`.
    pub fn of(session: &Session, id: &str) -> Self {
        Self {
            id: id.to_string(),
            agent: Some(session.agent().to_string()),
            phase: session.phase().map(phase_name),
            active_run: session.active_run().map(ToString::to_string),
            ended: session.is_ended(),
            history: session.history().iter().map(MessageView::from).collect(),
            blackboard: session.blackboard().available.clone(),
            pending_confirmation: session.pending_confirmation().map(ConfirmationView::from),
            pending_choice: session.pending_choice().map(ChoiceView::from),
            pending_elicitation: session.pending_elicitation(),
            usage: session.usage().into(),
            last_event_id: session.last_seq().to_string(),
            forked_from: session
                .forked_from()
                .map(|origin| ForkedFromView::of(origin, session.tenant())),
        }
    }

    /// The view of a session created here that has had no message yet.
    pub fn opened(id: &str, agent: Option<&str>) -> Self {
        Self {
            id: id.to_string(),
            agent: agent.map(str::to_string),
            phase: None,
            active_run: None,
            ended: false,
            history: Vec::new(),
            blackboard: BTreeMap::new(),
            pending_confirmation: None,
            pending_choice: None,
            pending_elicitation: None,
            usage: Usage::default().into(),
            last_event_id: "0".into(),
            forked_from: None,
        }
    }
}

/// Where a forked session came from (in its [`SessionView`]).
#[derive(Debug, Serialize, ToSchema)]
pub struct ForkedFromView {
    /// The session it was forked from.
    pub session_id: String,
    /// The last event of that session it carries.
    pub event: u64,
    /// What the fork means for actions already done, in words.
    pub note: String,
}

impl ForkedFromView {
    /// The view of `origin`, a session of `tenant`.
    pub fn of(origin: &ForkOrigin, tenant: Option<&str>) -> Self {
        Self {
            session_id: origin.session.local_in(tenant).unwrap_or_default().to_string(),
            event: origin.seq,
            note: origin.note.clone(),
        }
    }
}

fn phase_name(phase: concierge::core::Phase) -> String {
    match serde_json::to_value(phase) {
        Ok(Value::String(name)) => name,
        _ => format!("{phase:?}").to_lowercase(),
    }
}

/// How a run ended.
#[derive(Clone, Copy, Debug, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RunStatusView {
    /// The agent answered.
    Completed,
    /// The agent asked the person a question.
    NeedsInput,
    /// The run waits for the person to approve or deny a call (`confirm`).
    AwaitingConfirmation,
    /// The run waits for the person to pick an option (`choose`).
    AwaitingChoice,
    /// A running call asks the person a question (MCP elicitation).
    AwaitingInput,
    /// The run failed.
    Failed,
    /// The session was ended during the run.
    Cancelled,
    /// A guardrail stopped the run; the reply says why.
    Blocked,
}

impl From<RunStatus> for RunStatusView {
    fn from(s: RunStatus) -> Self {
        match s {
            RunStatus::Completed => Self::Completed,
            RunStatus::NeedsInput => Self::NeedsInput,
            RunStatus::AwaitingConfirmation => Self::AwaitingConfirmation,
            RunStatus::AwaitingChoice => Self::AwaitingChoice,
            RunStatus::AwaitingInput => Self::AwaitingInput,
            RunStatus::Failed => Self::Failed,
            RunStatus::Cancelled => Self::Cancelled,
            RunStatus::Blocked => Self::Blocked,
        }
    }
}

/// One tool call of a run.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolCallView {
    /// The call's id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// Its arguments.
    #[schema(value_type = Object)]
    pub arguments: Value,
    /// Whether it succeeded.
    pub ok: bool,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
}

/// What a run came to (`?wait=true`, `confirm`, `end`).
#[derive(Debug, Serialize, ToSchema)]
pub struct RunOutputView {
    /// The session.
    pub session_id: String,
    /// The run.
    pub run_id: String,
    /// The agent that answered.
    pub agent: String,
    /// How the run ended or parked.
    pub status: RunStatusView,
    /// The answer, or the question for the person.
    pub reply: Option<String>,
    /// What failed, when the run failed.
    pub error: Option<String>,
    /// The run's tool calls.
    pub tool_calls: Vec<ToolCallView>,
    /// The call waiting for approval, when the run parked for one.
    pub pending_confirmation: Option<ConfirmationView>,
    /// The choice waiting for an answer, when the run parked for one.
    pub pending_choice: Option<ChoiceView>,
    /// The question a running call asks the person, when the run waits for an answer.
    #[schema(value_type = Option<Object>)]
    pub pending_elicitation: Option<PendingElicitation>,
    /// The guardrail that stopped the run, when its status is `blocked`:
    /// `stage`, `guardrail`, `reason` and the `tool` it checked.
    #[schema(value_type = Option<Object>)]
    pub guardrail: Option<concierge::GuardrailTrip>,
    /// Tokens and cost of this run.
    pub usage: UsageView,
}

impl RunOutputView {
    /// The view of `output`, of the session the client calls `session`.
    pub fn of(output: RunOutput, session: &str) -> Self {
        Self {
            session_id: session.to_string(),
            ..Self::from(output)
        }
    }
}

impl From<RunOutput> for RunOutputView {
    fn from(o: RunOutput) -> Self {
        Self {
            session_id: o.session_id.to_string(),
            run_id: o.run_id.to_string(),
            agent: o.agent.to_string(),
            status: o.status.into(),
            reply: o.reply,
            error: o.error,
            tool_calls: o
                .tool_executions
                .iter()
                .map(|e| ToolCallView {
                    call_id: e.call_id.to_string(),
                    tool: e.tool.to_string(),
                    arguments: e.arguments.clone(),
                    ok: e.success(),
                    duration_ms: e.duration_ms,
                })
                .collect(),
            pending_confirmation: o.pending_confirmation.map(Into::into),
            pending_choice: o.pending_choice.map(Into::into),
            pending_elicitation: o.pending_elicitation,
            guardrail: o.guardrail,
            usage: o.usage.into(),
        }
    }
}

/// A run started without waiting (202).
#[derive(Debug, Serialize, ToSchema)]
pub struct RunAccepted {
    /// The session.
    pub session_id: String,
    /// The started run.
    pub run_id: String,
    /// The id of the event before the run's first one: stream the session's
    /// events with this as `Last-Event-ID` to see the whole run.
    pub after_event_id: String,
    /// Where the session's events stream.
    pub events: String,
}

/// An agent.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentView {
    /// Its id.
    pub id: String,
    /// Its display name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its category.
    pub category: Option<String>,
    /// What it says first, as a prompt a person can start with.
    pub starter_prompt: Option<String>,
    /// The tools it may call, by name.
    pub tools: Vec<String>,
    /// Whether the catalogue offers it as a goal (otherwise it is reached
    /// through another agent).
    pub goal: bool,
}

impl AgentView {
    /// The view of `spec`; `goal` says whether the catalogue offers it.
    pub fn of(spec: &AgentSpec, goal: bool) -> Self {
        Self {
            id: spec.id.to_string(),
            name: spec.name.clone(),
            description: spec.description.clone(),
            category: spec.category.clone(),
            starter_prompt: spec.starter_prompt.clone(),
            tools: spec.tools.iter().map(ToString::to_string).collect(),
            goal,
        }
    }
}

/// `GET /api/v1/agents`.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentList {
    /// Every agent.
    pub agents: Vec<AgentView>,
}

/// `GET /api/v1/goals`: the catalogue a person chooses from.
#[derive(Debug, Serialize, ToSchema)]
pub struct GoalList {
    /// The goals, in the order the hub offers them.
    pub goals: Vec<AgentView>,
}

/// A tool with its schema.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolView {
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its category.
    pub category: Option<String>,
    /// The JSON Schema of its arguments.
    #[schema(value_type = Object)]
    pub input_schema: Value,
    /// It only reads.
    pub read_only: bool,
    /// It may destroy data.
    pub destructive: bool,
    /// The person approves each call first.
    pub requires_confirmation: bool,
}

impl From<&ToolSpec> for ToolView {
    fn from(t: &ToolSpec) -> Self {
        Self {
            name: t.name.to_string(),
            description: t.description.clone(),
            category: t.category.clone(),
            input_schema: t.input_schema.clone(),
            read_only: t.annotations.read_only,
            destructive: t.annotations.destructive,
            requires_confirmation: t.annotations.requires_confirmation || t.confirm.is_some(),
        }
    }
}

/// `GET /api/v1/tools`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolList {
    /// The tools.
    pub tools: Vec<ToolView>,
}

/// `?category=` for the tool list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ToolQuery {
    /// Only the tools of this category (case-insensitive).
    #[serde(default)]
    pub category: Option<String>,
}

/// `GET /healthz`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// Always `ok` while the server answers.
    pub status: String,
}

/// `GET /readyz`: whether the unfinished runs the server found at start
/// (a crash, a deploy) are all under way again.
#[derive(Debug, Serialize, ToSchema)]
pub struct Ready {
    /// `ready`, `recovering` (still resuming them) or `failed`.
    pub status: String,
    /// Why they could not be resumed (with `failed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
