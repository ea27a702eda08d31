//! A server's resources (`resources/list`, `resources/templates/list`,
//! `resources/read`, `resources/subscribe`): what an agent can be given as
//! context, read with the built-in `read_resource` tool, or what a person
//! attaches to a message.

use rmcp::model::{ReadResourceRequestParams, ResourceContents, SubscribeRequestParams, UnsubscribeRequestParams};
use serde::{Deserialize, Serialize};

use super::McpClient;
use crate::error::McpError;

/// The most of a resource's text that is kept (in bytes): a longer text is
/// cut there, with a note saying so.
pub const MAX_RESOURCE_BYTES: usize = 32 * 1024;

/// A resource a server offers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpResource {
    /// Its URI (what `resources/read` takes).
    pub uri: String,
    /// Its name on the server.
    pub name: String,
    /// A title for people, when the server gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it holds, in the server's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// A family of resources a server can read, named by a URI template
/// (RFC 6570, e.g. `notes://{id}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpResourceTemplate {
    /// The URI template.
    pub uri_template: String,
    /// Its name on the server.
    pub name: String,
    /// A title for people, when the server gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What its resources hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of its resources, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// A resource as read: its text (binary parts described, not included),
/// at most [`MAX_RESOURCE_BYTES`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceText {
    /// The server's name.
    pub server: String,
    /// The resource's URI.
    pub uri: String,
    /// The MIME type of its first part, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its text.
    pub text: String,
}

/// A resource named as `server:uri` (e.g. `docs:file:///handbook.md`), as
/// agent files and the built-in tools name them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourceRef {
    /// The MCP server's name (as in `[mcp_servers.NAME]`).
    pub server: String,
    /// The resource's URI on that server.
    pub uri: String,
}

impl ResourceRef {
    /// Reads `server:uri`: the server's name is everything before the first `:`.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.split_once(':') {
            Some((server, uri)) if !server.trim().is_empty() && !uri.trim().is_empty() => Ok(Self {
                server: server.trim().to_string(),
                uri: uri.trim().to_string(),
            }),
            _ => Err(format!(
                "{text:?} does not name a resource: write the MCP server's name, a colon and the resource's URI, \
                 e.g. docs:file:///handbook.md"
            )),
        }
    }
}

impl std::fmt::Display for ResourceRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.server, self.uri)
    }
}

/// `text` cut to at most `limit` bytes (on a character boundary), with a note
/// when it was cut.
fn cut(text: String, limit: usize) -> String {
    if text.len() <= limit {
        return text;
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[… cut: the resource has {} bytes, {limit} are shown]",
        &text[..end],
        text.len()
    )
}

impl McpClient {
    /// The server's resources (every page); none when it offers no resources.
    pub async fn resources(&self) -> Result<Vec<McpResource>, McpError> {
        if self.server_capabilities().await?.resources.is_none() {
            return Ok(Vec::new());
        }
        let listed = self
            .request("resources/list", |peer| async move { peer.list_all_resources().await })
            .await?;
        Ok(listed
            .into_iter()
            .map(|r| McpResource {
                uri: r.uri.clone(),
                name: r.name.clone(),
                title: r.title.clone(),
                description: r.description.clone(),
                mime_type: r.mime_type.clone(),
            })
            .collect())
    }

    /// The server's resource templates (every page); none when it offers no resources.
    pub async fn resource_templates(&self) -> Result<Vec<McpResourceTemplate>, McpError> {
        if self.server_capabilities().await?.resources.is_none() {
            return Ok(Vec::new());
        }
        let listed = self
            .request("resources/templates/list", |peer| async move {
                peer.list_all_resource_templates().await
            })
            .await?;
        Ok(listed
            .into_iter()
            .map(|t| McpResourceTemplate {
                uri_template: t.uri_template.clone(),
                name: t.name.clone(),
                title: t.title.clone(),
                description: t.description.clone(),
                mime_type: t.mime_type.clone(),
            })
            .collect())
    }

    /// Reads a resource (a listed one, or a URI made from a template): its
    /// text parts joined, binary parts described.
    pub async fn read_resource(&self, uri: &str) -> Result<ResourceText, McpError> {
        if self.server_capabilities().await?.resources.is_none() {
            return Err(self.error(format!("offers no resources, so {uri} cannot be read")));
        }
        let params = ReadResourceRequestParams::new(uri);
        let read = self
            .request("resources/read", |peer| async move { peer.read_resource(params).await })
            .await?;
        let mut mime_type = None;
        let mut parts = Vec::new();
        for contents in read.contents {
            match contents {
                ResourceContents::TextResourceContents {
                    mime_type: mime, text, ..
                } => {
                    mime_type = mime_type.or(mime);
                    parts.push(text);
                }
                ResourceContents::BlobResourceContents {
                    mime_type: mime, blob, ..
                } => {
                    let kind = mime.clone().unwrap_or_else(|| "unknown type".into());
                    mime_type = mime_type.or(mime);
                    parts.push(format!(
                        "[binary content ({kind}, {} bytes base64), not shown]",
                        blob.len()
                    ));
                }
                _ => parts.push("[content of a kind concierge does not know, not shown]".into()),
            }
        }
        if parts.is_empty() {
            return Err(self.error(format!("answered resources/read of {uri} with no content")));
        }
        Ok(ResourceText {
            server: self.name().to_string(),
            uri: uri.to_string(),
            mime_type,
            text: cut(parts.join("\n"), MAX_RESOURCE_BYTES),
        })
    }

    /// Asks the server to say when a resource changes
    /// ([`McpChange::ResourceUpdated`](super::McpChange::ResourceUpdated) on
    /// [`McpClient::changes`]). It is made again whenever the server is
    /// started again (a subscription lasts as long as its connection).
    pub async fn subscribe(&self, uri: &str) -> Result<(), McpError> {
        let offers = self
            .server_capabilities()
            .await?
            .resources
            .is_some_and(|r| r.subscribe == Some(true));
        if !offers {
            return Err(self.error(format!(
                "does not offer resource subscriptions, so changes of {uri} cannot be followed; read it again instead"
            )));
        }
        let params = SubscribeRequestParams::new(uri);
        // Deprecated for protocol versions after those concierge speaks.
        #[allow(deprecated)]
        self.request(
            "resources/subscribe",
            |peer| async move { peer.subscribe(params).await },
        )
        .await?;
        self.remember_subscription(uri, true);
        Ok(())
    }

    /// Ends a subscription made with [`McpClient::subscribe`].
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), McpError> {
        self.remember_subscription(uri, false);
        let params = UnsubscribeRequestParams::new(uri);
        #[allow(deprecated)]
        self.request(
            "resources/unsubscribe",
            |peer| async move { peer.unsubscribe(params).await },
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_splits_at_the_first_colon() {
        let r = ResourceRef::parse("docs:file:///a.md").unwrap();
        assert_eq!((r.server.as_str(), r.uri.as_str()), ("docs", "file:///a.md"));
        assert_eq!(r.to_string(), "docs:file:///a.md");
        assert!(ResourceRef::parse("no-colon").is_err());
        assert!(ResourceRef::parse(":file:///a").is_err());
    }

    #[test]
    fn long_text_is_cut_with_a_note() {
        let text = cut("é".repeat(10), 5);
        assert!(text.starts_with("éé\n[… cut"), "{text}");
        assert_eq!(cut("short".into(), 10), "short");
    }
}
