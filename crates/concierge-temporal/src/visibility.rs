//! How a session's workflow is found: the search attributes
//! `ConciergeTenant` and `ConciergeAgent` (Keyword), which the namespace
//! must have, and the memo (the session's agent, tenant and labels).

use std::collections::BTreeMap;

use concierge::{Error, Result};
use concierge_core::AgentId;
use serde_json::Value;
use temporalio_client::Client;
use temporalio_common::MemoValues;
use temporalio_common::protos::temporal::api::common::v1::SearchAttributes as ProtoSearchAttributes;
use temporalio_common::protos::temporal::api::enums::v1::IndexedValueType;
use temporalio_common::protos::temporal::api::operatorservice::v1::ListSearchAttributesRequest;
use temporalio_common::search_attributes::{SearchAttributeKey, SearchAttributes};

use crate::config::TemporalConfig;

/// The session's tenant, when it has one.
pub const TENANT: SearchAttributeKey<String> = SearchAttributeKey::keyword("ConciergeTenant");

/// The agent holding the session (upserted when a handoff changes it).
pub const AGENT: SearchAttributeKey<String> = SearchAttributeKey::keyword("ConciergeAgent");

/// The memo's field with the session's agent.
pub(crate) const MEMO_AGENT: &str = "agent";
/// The memo's field with the session's tenant.
pub(crate) const MEMO_TENANT: &str = "tenant";
/// The memo's field with the first run's labels.
const MEMO_LABELS: &str = "labels";

/// Checks that the namespace has concierge's search attributes (when they
/// are on): a workflow upserting one the namespace lacks would fail every
/// task, so a missing one is an error now, naming it and how to register it.
/// A server that does not let this client list them (Temporal Cloud without
/// the permission) is trusted, with a warning.
pub(crate) async fn check(client: &Client, config: &TemporalConfig) -> Result<()> {
    if !config.search_attributes {
        return Ok(());
    }
    let request = ListSearchAttributesRequest {
        namespace: config.namespace.clone(),
    };
    let listed = client
        .connection()
        .operator_service()
        .list_search_attributes(temporalio_client::tonic::Request::new(request))
        .await;
    let registered = match listed {
        Ok(response) => response.into_inner().custom_attributes,
        Err(status)
            if matches!(
                status.code(),
                temporalio_client::tonic::Code::Unimplemented | temporalio_client::tonic::Code::PermissionDenied
            ) =>
        {
            tracing::warn!(
                namespace = %config.namespace,
                "the search attributes ConciergeTenant and ConciergeAgent could not be checked ({}); \
                 sessions fail if the namespace lacks them",
                status.message()
            );
            return Ok(());
        }
        Err(status) => {
            return Err(Error::Storage(format!(
                "Temporal at {} could not list the search attributes of namespace {}: {}",
                config.address,
                config.namespace,
                status.message()
            )));
        }
    };
    let keyword = IndexedValueType::Keyword as i32;
    let missing: Vec<&str> = [TENANT.name(), AGENT.name()]
        .into_iter()
        .filter(|name| registered.get(*name) != Some(&keyword))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::InvalidConfig(missing_attributes(config, &missing)))
}

/// Why the engine cannot start without `missing`, and what to do: one
/// `temporal operator search-attribute create` per attribute (the CLI
/// registers only the first of several `--name`s), each naming the
/// namespace and the server, or the `[temporal]` key that turns them off.
fn missing_attributes(config: &TemporalConfig, missing: &[&str]) -> String {
    // The CLI takes `host:port`; TLS it is told with a flag.
    let address = config
        .address
        .split_once("://")
        .map_or(config.address.as_str(), |(_, rest)| rest);
    let address = address.trim_end_matches('/');
    let tls = if config.tls || config.api_key.is_some() {
        " --tls"
    } else {
        ""
    };
    let commands: Vec<String> = missing
        .iter()
        .map(|name| {
            format!(
                "`temporal operator search-attribute create --namespace {} --address {address}{tls} --name {name} \
                 --type Keyword`",
                config.namespace
            )
        })
        .collect();
    let flags: Vec<String> = missing
        .iter()
        .map(|name| format!("--search-attribute {name}=Keyword"))
        .collect();
    let cloud = if config.api_key.is_some() {
        " (on Temporal Cloud: `tcld namespace search-attributes add`, or the namespace's page in its console)"
    } else {
        ""
    };
    let them = if missing.len() == 1 {
        "it with"
    } else {
        "them, one command each:"
    };
    format!(
        "the Temporal namespace {} at {} has no Keyword search attribute {}, which concierge's session workflows \
         carry: register {them} {}{cloud} (a dev server: start it with {}), or turn concierge's search \
         attributes off with `search_attributes = false` in the [temporal] section of concierge.toml (sessions \
         then cannot be found by tenant or agent in the Temporal UI); then start again",
        config.namespace,
        config.address,
        missing.join(" and "),
        commands.join(" and "),
        flags.join(" "),
    )
}

/// The search attributes a new session's workflow starts with: its tenant
/// and first agent, then the caller's (which win).
pub(crate) fn start_attributes(
    config: &TemporalConfig,
    tenant: Option<&str>,
    agent: Option<&AgentId>,
    extra: Option<&SearchAttributes>,
) -> Option<SearchAttributes> {
    let mut fields = ProtoSearchAttributes::default();
    if config.search_attributes {
        let mut ours = Vec::new();
        if let Some(tenant) = tenant {
            ours.push(TENANT.value_set(tenant.to_string()));
        }
        if let Some(agent) = agent {
            ours.push(AGENT.value_set(agent.to_string()));
        }
        fields = SearchAttributes::new(ours).into_proto();
    }
    if let Some(extra) = extra {
        fields.indexed_fields.extend(extra.to_proto().indexed_fields);
    }
    (!fields.indexed_fields.is_empty()).then(|| SearchAttributes::from_proto(&fields))
}

/// The memo a new session's workflow starts with: its agent, tenant and
/// labels, then the caller's fields (which win).
pub(crate) fn start_memo(
    tenant: Option<&str>,
    agent: Option<&AgentId>,
    labels: &BTreeMap<String, String>,
    extra: &BTreeMap<String, Value>,
) -> MemoValues {
    let mut fields: BTreeMap<String, Value> = BTreeMap::new();
    if let Some(agent) = agent {
        fields.insert(MEMO_AGENT.into(), Value::from(agent.as_str()));
    }
    if let Some(tenant) = tenant {
        fields.insert(MEMO_TENANT.into(), Value::from(tenant));
    }
    if !labels.is_empty() {
        let labels = labels
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
            .collect();
        fields.insert(MEMO_LABELS.into(), Value::Object(labels));
    }
    fields.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    let mut memo = MemoValues::new();
    for (key, value) in fields {
        memo.insert(key, value);
    }
    memo
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_callers_attributes_and_memo_win_and_a_missing_attribute_says_how_to_register_it() {
        let config = TemporalConfig::new("127.0.0.1:7233").namespace("prod");
        let agent = AgentId::new("sales");
        let extra = SearchAttributes::new([
            AGENT.value_set("override".into()),
            SearchAttributeKey::<i64>::int("Priority").value_set(3),
        ]);
        let attrs = start_attributes(&config, Some("acme"), Some(&agent), Some(&extra)).unwrap_or_default();
        assert_eq!(attrs.get(&TENANT).as_deref(), Some("acme"));
        assert_eq!(attrs.get(&AGENT).as_deref(), Some("override"));
        assert_eq!(attrs.get(&SearchAttributeKey::<i64>::int("Priority")), Some(3));

        let off = config.clone().search_attributes(false);
        assert!(start_attributes(&off, Some("acme"), Some(&agent), None).is_none());

        let labels = BTreeMap::from([("channel".to_string(), "web".to_string())]);
        let extra = BTreeMap::from([("tenant".to_string(), Value::from("other"))]);
        let memo = start_memo(Some("acme"), Some(&agent), &labels, &extra);
        let keys: Vec<&str> = memo.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["agent", "labels", "tenant"]);

        let message = missing_attributes(&config, &["ConciergeAgent"]);
        assert!(
            message.contains(
                "`temporal operator search-attribute create --namespace prod --address 127.0.0.1:7233 --name \
                 ConciergeAgent --type Keyword`"
            ),
            "{message}"
        );
        assert!(
            message.contains("--search-attribute ConciergeAgent=Keyword"),
            "{message}"
        );
        assert!(
            message.contains("`search_attributes = false` in the [temporal] section"),
            "{message}"
        );
        assert!(!message.contains("TemporalConfig"), "{message}");

        // One command per attribute (the CLI registers only the first of
        // several names), with TLS when the engine uses it.
        let cloud = TemporalConfig::new("https://ns.acct.tmprl.cloud:7233")
            .namespace("ns.acct")
            .tls(true);
        let message = missing_attributes(&cloud, &["ConciergeTenant", "ConciergeAgent"]);
        for name in ["ConciergeTenant", "ConciergeAgent"] {
            let command = format!(
                "`temporal operator search-attribute create --namespace ns.acct --address ns.acct.tmprl.cloud:7233 \
                 --tls --name {name} --type Keyword`"
            );
            assert!(message.contains(&command), "{message}");
        }
    }
}
