//! A server's prompts (`prompts/list`, `prompts/get`): templates of a first
//! message that a person picks as a conversation starter, filling in their
//! arguments.

use std::collections::BTreeMap;

use rmcp::model::{ContentBlock, GetPromptRequestParams, JsonObject, ResourceContents, Role};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::McpClient;
use crate::error::McpError;

/// A prompt a server offers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpPrompt {
    /// Its name (what `prompts/get` takes).
    pub name: String,
    /// A title for people, when the server gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for, in the server's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments it takes.
    #[serde(default)]
    pub arguments: Vec<McpPromptArgument>,
}

/// An argument of a prompt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpPromptArgument {
    /// Its name.
    pub name: String,
    /// What to give, in the server's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the prompt cannot be had without it.
    #[serde(default)]
    pub required: bool,
}

/// Who says a message of a prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptRole {
    /// The person.
    User,
    /// The assistant.
    Assistant,
}

/// One message of a filled-in prompt, as text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// Who says it.
    pub role: PromptRole,
    /// What is said (embedded resources as their text, other media described).
    pub text: String,
}

/// A prompt filled in with its arguments.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilledPrompt {
    /// The server's name.
    pub server: String,
    /// The prompt's name.
    pub name: String,
    /// What the server says about the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its messages, in order.
    pub messages: Vec<PromptMessage>,
}

impl FilledPrompt {
    /// The text a person sends to start a conversation with it: its user
    /// messages, one paragraph each.
    pub fn user_text(&self) -> String {
        self.messages
            .iter()
            .filter(|m| m.role == PromptRole::User)
            .map(|m| m.text.as_str())
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

impl McpPrompt {
    /// Whether `arguments` fit the prompt: every required one given (not
    /// blank), none it does not take. The error names them.
    pub fn check_arguments(&self, arguments: &BTreeMap<String, String>) -> Result<(), String> {
        let name = &self.name;
        let missing: Vec<&str> = self
            .arguments
            .iter()
            .filter(|a| a.required && arguments.get(&a.name).is_none_or(|v| v.trim().is_empty()))
            .map(|a| a.name.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "the prompt {name} needs {}: give {}",
                if missing.len() == 1 { "an argument" } else { "arguments" },
                missing.join(", ")
            ));
        }
        if let Some(unknown) = arguments.keys().find(|k| !self.arguments.iter().any(|a| &a.name == *k)) {
            let takes: Vec<&str> = self.arguments.iter().map(|a| a.name.as_str()).collect();
            return Err(if takes.is_empty() {
                format!("the prompt {name} takes no arguments, so not {unknown}")
            } else {
                format!(
                    "the prompt {name} takes no argument {unknown}; it takes {}",
                    takes.join(", ")
                )
            });
        }
        Ok(())
    }
}

fn text_of(content: &ContentBlock) -> String {
    match content {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { text, .. } => text.clone(),
            ResourceContents::BlobResourceContents { uri, mime_type, .. } => format!(
                "[binary resource {uri} ({}), not shown]",
                mime_type.as_deref().unwrap_or("unknown type")
            ),
            _ => "[a resource of a kind concierge does not know, not shown]".into(),
        },
        ContentBlock::ResourceLink(resource) => format!("[resource {}]", resource.uri),
        ContentBlock::Image(image) => format!("[an image ({}), not shown]", image.mime_type),
        ContentBlock::Audio(audio) => format!("[audio ({}), not shown]", audio.mime_type),
        _ => "[content of a kind concierge does not know, not shown]".into(),
    }
}

impl McpClient {
    /// The server's prompts (every page); none when it offers no prompts.
    pub async fn prompts(&self) -> Result<Vec<McpPrompt>, McpError> {
        if self.server_capabilities().await?.prompts.is_none() {
            return Ok(Vec::new());
        }
        let listed = self
            .request("prompts/list", |peer| async move { peer.list_all_prompts().await })
            .await?;
        Ok(listed
            .into_iter()
            .map(|p| McpPrompt {
                name: p.name.clone(),
                title: p.title.clone(),
                description: p.description.clone(),
                arguments: p
                    .arguments
                    .clone()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|a| McpPromptArgument {
                        name: a.name,
                        description: a.description,
                        required: a.required == Some(true),
                    })
                    .collect(),
            })
            .collect())
    }

    /// Fills in a prompt (`prompts/get`). A missing required argument, or
    /// one the prompt does not take, is refused before the server is asked,
    /// naming it.
    pub async fn prompt(&self, name: &str, arguments: BTreeMap<String, String>) -> Result<FilledPrompt, McpError> {
        let prompts = self.prompts().await?;
        let Some(prompt) = prompts.iter().find(|p| p.name == name) else {
            let known: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
            return Err(self.error(if known.is_empty() {
                format!("offers no prompts, so there is no prompt {name}")
            } else {
                format!("has no prompt {name}; it offers {}", known.join(", "))
            }));
        };
        prompt.check_arguments(&arguments).map_err(|e| self.error(e))?;
        let mut params = GetPromptRequestParams::new(name);
        if !arguments.is_empty() {
            let object: JsonObject = arguments.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
            params = params.with_arguments(object);
        }
        let got = self
            .request("prompts/get", |peer| async move { peer.get_prompt(params).await })
            .await?;
        Ok(FilledPrompt {
            server: self.name().to_string(),
            name: name.to_string(),
            description: got.description.clone(),
            messages: got
                .messages
                .iter()
                .map(|m| PromptMessage {
                    role: match m.role {
                        Role::User => PromptRole::User,
                        Role::Assistant => PromptRole::Assistant,
                    },
                    text: text_of(&m.content),
                })
                .collect(),
        })
    }
}
