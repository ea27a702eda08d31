//! A server's requests to use the model during a tool call (MCP sampling,
//! `sampling/createMessage`), by the server's policy: `deny` (the
//! default), `allow`, or `ask` the person first. An allowed request goes
//! through the session's executor: the agent's model (or the server's
//! `sampling_model`), at most `sampling_max_tokens` tokens, its usage and
//! cost counted in the session's totals. See `docs/mcp.md`, "Sampling".

#![expect(
    deprecated,
    reason = "MCP sampling is deprecated by SEP-2577 but still what servers send"
)]

use std::sync::Arc;

use concierge_core::{AgentId, Elicitation, ElicitationAction, ElicitationMode, Message, ModelRequest, ToolChoice};
use rmcp::ErrorData;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, Role, SamplingMessage, SamplingMessageContentBlock,
};
use serde::{Deserialize, Serialize};

use super::elicitation::LiveCalls;
use crate::tool::ChannelError;

/// Tokens a sampled reply may have when the server's configuration does
/// not say.
pub const DEFAULT_SAMPLING_MAX_TOKENS: u32 = 1024;

/// What a server may do with the model (`[mcp_servers.NAME] sampling`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SamplingPolicy {
    /// Never (the default): a server's prompt runs on our model, on our
    /// bill, with words we did not write; nothing should do that unasked.
    #[default]
    Deny,
    /// Always, within the token cap.
    Allow,
    /// Ask the person each time, showing what the server wants to send.
    Ask,
}

/// What sampling needs from the server's configuration.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sampling {
    pub(crate) policy: SamplingPolicy,
    pub(crate) model: Option<String>,
    pub(crate) max_tokens: Option<u32>,
}

/// The request in words, for the person asked to allow it.
fn describe(params: &CreateMessageRequestParams) -> String {
    let last = params
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(text_of)
        .unwrap_or_default();
    let mut text: String = last.chars().take(400).collect();
    if last.chars().count() > 400 {
        text.push('…');
    }
    if let Some(system) = params.system_prompt.as_deref().filter(|s| !s.trim().is_empty()) {
        text.push_str(&format!(
            " (with the instructions: {})",
            system.chars().take(200).collect::<String>()
        ));
    }
    text
}

fn text_of(message: &SamplingMessage) -> String {
    message
        .content
        .clone()
        .into_vec()
        .into_iter()
        .filter_map(|block| match block {
            SamplingMessageContentBlock::Text(text) => Some(text.text),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The model request for the server's, on behalf of `agent`.
fn request(agent: AgentId, sampling: &Sampling, params: &CreateMessageRequestParams) -> ModelRequest {
    let messages = params
        .messages
        .iter()
        .map(|m| match m.role {
            Role::User => Message::user(text_of(m)),
            Role::Assistant => Message::assistant(agent.clone(), text_of(m)),
        })
        .collect();
    let cap = sampling.max_tokens.unwrap_or(DEFAULT_SAMPLING_MAX_TOKENS);
    ModelRequest {
        agent,
        model: sampling.model.clone(),
        system: params.system_prompt.clone().unwrap_or_default(),
        messages,
        tools: Arc::from(Vec::new()),
        tool_choice: ToolChoice::None,
        temperature: params.temperature,
        max_tokens: Some(params.max_tokens.clamp(1, cap)),
    }
}

/// Answers the server's `sampling/createMessage` for the call it belongs
/// to, by the server's policy.
pub(crate) async fn sample(
    server: &str,
    sampling: &Sampling,
    live: &LiveCalls,
    params: CreateMessageRequestParams,
) -> Result<CreateMessageResult, ErrorData> {
    let refuse = |why: String| {
        tracing::warn!(server, "refused a sampling request: {why}");
        Err(ErrorData::invalid_request(why, None))
    };
    if sampling.policy == SamplingPolicy::Deny {
        return refuse(format!(
            "the MCP server {server} may not use the model (its sampling policy is deny; set sampling = \"allow\" \
             or \"ask\" in [mcp_servers.{server}] to let it)"
        ));
    }
    let call = match live.owner() {
        Ok(call) => call,
        Err(why) => return refuse(why.to_string()),
    };
    let (Some(cx), Some(channel)) = (call.cx.as_ref(), call.cx.as_ref().and_then(|cx| cx.channel.clone())) else {
        return refuse("this engine cannot run a server's model request during a tool call".into());
    };
    let _hold = call.hold();
    if sampling.policy == SamplingPolicy::Ask {
        let question = Elicitation {
            server: server.to_string(),
            message: format!("The {server} server wants to use the model."),
            mode: ElicitationMode::Sampling {
                request: describe(&params),
            },
        };
        match channel.0.ask(question).await {
            Ok(answer) if answer.action == ElicitationAction::Accept => {}
            Ok(_) => return refuse("the person did not allow it".into()),
            Err(error) => return refuse(error.to_string()),
        }
    }
    let request = request(cx.agent.clone(), sampling, &params);
    match channel.0.sample(request).await {
        Ok(reply) => {
            let stop = match reply.finish_reason.as_deref() {
                Some("length" | "max_tokens") => CreateMessageResult::STOP_REASON_END_MAX_TOKEN,
                _ => CreateMessageResult::STOP_REASON_END_TURN,
            };
            let model = sampling.model.clone().unwrap_or_else(|| "concierge".to_string());
            Ok(CreateMessageResult::new(SamplingMessage::assistant_text(reply.text), model).with_stop_reason(stop))
        }
        Err(ChannelError::Unsupported) => {
            refuse("this engine cannot run a server's model request during a tool call".into())
        }
        Err(error) => {
            tracing::warn!(server, %error, "a sampling request failed");
            Err(ErrorData::internal_error(error.to_string(), None))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_max_tokens_are_capped_by_the_configuration() {
        let params = CreateMessageRequestParams::new(vec![SamplingMessage::user_text("hi")], 5000);
        let sampling = Sampling {
            policy: SamplingPolicy::Allow,
            model: None,
            max_tokens: Some(200),
        };
        let request = request("a".into(), &sampling, &params);
        assert_eq!(request.max_tokens, Some(200));
        assert_eq!(request.messages, vec![Message::user("hi")]);
        let small = CreateMessageRequestParams::new(vec![SamplingMessage::user_text("hi")], 50);
        assert_eq!(super::request("a".into(), &sampling, &small).max_tokens, Some(50));
        assert_eq!(SamplingPolicy::default(), SamplingPolicy::Deny);
    }
}
