//! A run's answer as OpenAI's `chat.completion`: the assistant's text is
//! what the run says to the person, whether it answered, asks for approval
//! ("I'll ... Proceed?"), offers numbered options, or failed.

use concierge::core::Usage;
use concierge::{RunOutput, RunStatus};
use serde::Serialize;
use utoipa::ToSchema;

/// `POST /v1/chat/completions` without `stream`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChatCompletion {
    /// `chatcmpl-<session>.<run>`: derived from the run that answered.
    pub id: String,
    /// Always `chat.completion`.
    pub object: CompletionObject,
    /// Unix seconds.
    pub created: u64,
    /// The model as the request named it.
    pub model: String,
    /// One choice.
    pub choices: Vec<CompletionChoice>,
    /// The run's tokens.
    pub usage: CompletionUsage,
}

/// The `object` of a completion.
#[derive(Clone, Copy, Debug, Serialize, ToSchema)]
pub enum CompletionObject {
    /// A completion.
    #[serde(rename = "chat.completion")]
    ChatCompletion,
}

/// The one choice of a completion.
#[derive(Debug, Serialize, ToSchema)]
pub struct CompletionChoice {
    /// Always 0.
    pub index: u32,
    /// The assistant's message.
    pub message: AssistantMessage,
    /// Why the answer ends.
    pub finish_reason: FinishReason,
}

/// The assistant's message.
#[derive(Debug, Serialize, ToSchema)]
pub struct AssistantMessage {
    /// Always `assistant`.
    pub role: AssistantRole,
    /// What the run says to the person.
    pub content: String,
}

/// The `assistant` role.
#[derive(Clone, Copy, Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AssistantRole {
    /// The assistant.
    Assistant,
}

/// Why an answer ends.
#[derive(Clone, Copy, Debug, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The run stopped: it answered, waits for the person (a confirmation
    /// or a choice, answered by the next message), or failed (the text says why).
    Stop,
    /// A guardrail stopped the run; the text says why.
    ContentFilter,
}

impl FinishReason {
    /// Why a run's answer ends.
    pub fn of(output: &RunOutput) -> Self {
        match output.status {
            RunStatus::Blocked => FinishReason::ContentFilter,
            _ => FinishReason::Stop,
        }
    }
}

/// Tokens a run used.
#[derive(Clone, Copy, Debug, Serialize, ToSchema, PartialEq, Eq)]
pub struct CompletionUsage {
    /// Tokens sent to the model.
    pub prompt_tokens: u64,
    /// Tokens the model answered with.
    pub completion_tokens: u64,
    /// Their sum.
    pub total_tokens: u64,
}

impl From<Usage> for CompletionUsage {
    fn from(usage: Usage) -> Self {
        Self {
            prompt_tokens: usage.input_tokens,
            completion_tokens: usage.output_tokens,
            total_tokens: usage.input_tokens + usage.output_tokens,
        }
    }
}

/// The completion id of the run `run` in the caller's session `session`
/// (the id the client named or was given, never the engine's own).
pub fn completion_id(session: &str, run: &str) -> String {
    format!("chatcmpl-{session}.{run}")
}

/// What the run says to the person: its reply (the answer, the question,
/// the confirmation's sentence or the numbered options), else the pending
/// call's question, else what went wrong.
pub fn answer_text(output: &RunOutput) -> String {
    if let Some(reply) = output.reply.as_deref().filter(|r| !r.trim().is_empty()) {
        return reply.to_string();
    }
    if let Some(pending) = output.pending_confirmation.as_ref().filter(|p| !p.message.is_empty()) {
        return pending.message.clone();
    }
    if let Some(choice) = &output.pending_choice {
        return choice.choice.text();
    }
    if let Some(question) = &output.pending_elicitation {
        // The question in words; the next user message answers it.
        return output.reply.clone().unwrap_or_else(|| question.text.clone());
    }
    if let Some(error) = &output.error {
        return format!("Something went wrong: {error}");
    }
    match output.status {
        RunStatus::Cancelled => "The session was ended before the answer came.".to_string(),
        RunStatus::Failed => "The run failed without saying why.".to_string(),
        RunStatus::Completed
        | RunStatus::Blocked
        | RunStatus::NeedsInput
        | RunStatus::AwaitingConfirmation
        | RunStatus::AwaitingChoice
        | RunStatus::AwaitingInput => "(no answer)".to_string(),
    }
}

/// The completion for a run's output, under the model name the request used.
pub fn completion(output: &RunOutput, session: &str, model: &str, created: u64) -> ChatCompletion {
    ChatCompletion {
        id: completion_id(session, output.run_id.as_str()),
        object: CompletionObject::ChatCompletion,
        created,
        model: model.to_string(),
        choices: vec![CompletionChoice {
            index: 0,
            message: AssistantMessage {
                role: AssistantRole::Assistant,
                content: answer_text(output),
            },
            finish_reason: FinishReason::of(output),
        }],
        usage: output.usage.into(),
    }
}
