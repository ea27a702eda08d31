//! The tool-call gate: what happens to one call a planner asked for, before
//! anything runs.
//!
//! The rules, in order (the first that applies decides):
//!
//! 1. a `transfer_to_<agent>` call to an allowed agent is a **handoff** the
//!    core answers itself (one per batch; a second is refused);
//! 2. arguments that are not a JSON object are **refused** as
//!    `invalid_arguments`;
//! 3. a tool the agent does not have is **refused** as `unknown_tool`, with
//!    the agent's tools listed;
//! 4. a tool whose `requires` keys are missing from the blackboard is
//!    **refused** as `missing_information`, naming the tools that `provide`
//!    them;
//! 5. a `cacheable` tool already called in the session with the same
//!    argument fingerprint is **reused** from the log;
//! 6. past the run's `max_tool_calls`, the call is **refused** as
//!    `limit_reached` and the run reaches its tool-call cap;
//! 7. otherwise the call counts against the cap and either **runs** or,
//!    when the run's confirmation policy says so, **awaits approval**.
//!
//! The gate is a pure function of the call and what it is checked against.
//!
//! Before the gate, [`fill_from_blackboard`] gives a call the values its
//! tool `requires` that the planner left out, from the blackboard: a
//! rules-only agent can chain tools, and a user id never has to
//! pass through the model.

use serde_json::Value;

use crate::batch::Handoff;
use crate::blackboard::Blackboard;
use crate::catalog::{Catalog, ResolvedAgent};
use crate::fork::{DoneCall, REPLAY_REFUSAL};
use crate::id::CallId;
use crate::message::ToolCall;
use crate::policy::{Cap, ConfirmationPolicy, RunPolicy};
use crate::tool::{ToolError, ToolErrorKind, ToolOutcome, ToolSpec};

/// What a call is checked against.
pub(crate) struct Gate<'a> {
    /// The agent making the call.
    pub(crate) agent: &'a ResolvedAgent,
    /// The catalog the run plans with.
    pub(crate) catalog: &'a Catalog,
    /// The session's blackboard.
    pub(crate) blackboard: &'a Blackboard,
    /// The run's policy.
    pub(crate) policy: &'a RunPolicy,
    /// Tool calls the run has made so far (counting the batch's earlier calls).
    pub(crate) tool_calls: u32,
    /// Whether an earlier call of the batch hands off.
    pub(crate) handing_off: bool,
    /// How deep the session is (0 for a top-level one, 1 for a child...).
    pub(crate) depth: u32,
    /// Agent calls the run has made so far (counting the batch's earlier ones).
    pub(crate) agent_calls: u32,
    /// How many agent calls the run may make (its policy's, or what is left
    /// of its parent's if that is less).
    pub(crate) agent_budget: u32,
    /// For a replay: the replayed run's calls, the only answers its calls get.
    pub(crate) replay: Option<&'a [DoneCall]>,
}

/// The gate's verdict on one call.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Verdict {
    /// Hand the conversation over (the core answers the call).
    Handoff(Handoff),
    /// Do not run it; the planner sees this error.
    Refuse {
        /// The error the planner sees instead of a result.
        error: ToolError,
        /// The cap the refusal reaches, if any.
        cap: Option<Cap>,
    },
    /// Answer it with an earlier call's result.
    Reuse {
        /// The earlier call's result.
        outcome: ToolOutcome,
        /// The call it came from.
        from: CallId,
    },
    /// Run it now (it counts against the run's tool calls).
    Run,
    /// Run it once the person approves (it counts against the run's tool calls).
    AwaitApproval,
}

impl Verdict {
    /// Whether the call counts against the run's `max_tool_calls`.
    pub(crate) fn counts(&self) -> bool {
        matches!(self, Verdict::Run | Verdict::AwaitApproval)
    }
}

/// Fills in the arguments `spec` requires from the blackboard: each required
/// key that the tool's schema has as a property, that the call leaves out
/// (or sets to null) and that the blackboard holds. Returns whether it added any.
pub(crate) fn fill_from_blackboard(spec: &ToolSpec, blackboard: &Blackboard, arguments: &mut Value) -> bool {
    let Some(properties) = spec.input_schema.get("properties").and_then(Value::as_object) else {
        return false;
    };
    let Value::Object(map) = arguments else {
        return false;
    };
    let mut filled = false;
    for key in &spec.requires {
        if !properties.contains_key(key) || map.get(key).is_some_and(|v| !v.is_null()) {
            continue;
        }
        if let Some(value) = blackboard.available.get(key) {
            map.insert(key.clone(), value.clone());
            filled = true;
        }
    }
    filled
}

fn refuse(kind: ToolErrorKind, message: String) -> Verdict {
    Verdict::Refuse {
        error: ToolError::new(kind, message),
        cap: None,
    }
}

impl Gate<'_> {
    /// Decides what happens to `call`, whose arguments have `fingerprint`.
    pub(crate) fn check(&self, call: &ToolCall, fingerprint: &str) -> Verdict {
        if let Some(target) = self.agent.handoff_target(call.name.as_str()) {
            return self.handoff(call, target.clone());
        }
        if let Value::String(raw) = &call.arguments {
            return refuse(
                ToolErrorKind::InvalidArguments,
                format!("the arguments are not valid JSON: {raw}; send a JSON object that matches the tool's schema"),
            );
        }
        if !call.arguments.is_object() {
            return refuse(
                ToolErrorKind::InvalidArguments,
                format!("the arguments must be a JSON object, not {}", call.arguments),
            );
        }
        let spec: Option<&ToolSpec> = self
            .agent
            .has_tool(&call.name)
            .then(|| self.catalog.tool(&call.name))
            .flatten();
        let Some(spec) = spec else {
            return self.unknown(call);
        };
        if self.agent.spec.read_only && !spec.annotations.read_only {
            return refuse(
                ToolErrorKind::NotAllowed,
                format!(
                    "not run: agent {} only reads, and {} may change things; answer with what the read-only tools give",
                    self.agent.spec.id, spec.name
                ),
            );
        }
        if spec.agent.is_some() {
            if self.depth >= self.policy.max_depth {
                return Verdict::Refuse {
                    error: ToolError::new(
                        ToolErrorKind::LimitReached,
                        format!(
                            "not run: agents may call agents only {} levels deep, and this call would go deeper",
                            self.policy.max_depth
                        ),
                    ),
                    cap: Some(Cap::Depth),
                };
            }
            if self.agent_calls >= self.agent_budget {
                return Verdict::Refuse {
                    error: ToolError::new(
                        ToolErrorKind::LimitReached,
                        format!(
                            "not run: the run reached its limit of {} agent calls",
                            self.agent_budget
                        ),
                    ),
                    cap: Some(Cap::AgentCalls),
                };
            }
        }
        if let Some(refusal) = self.missing_information(spec) {
            return refusal;
        }
        // A cacheable call answered before, or a change the conversation
        // this one was forked from already made, is not made again.
        let earlier = if spec.annotations.cacheable {
            self.blackboard.cached(&spec.name, fingerprint)
        } else if !spec.annotations.read_only {
            self.blackboard.done_before_fork(&spec.name, fingerprint)
        } else {
            None
        };
        if let Some(previous) = earlier {
            return Verdict::Reuse {
                outcome: previous.outcome.clone(),
                from: previous.call_id.clone(),
            };
        }
        if let Some(recorded) = self.replay {
            return match recorded
                .iter()
                .find(|c| c.tool == spec.name && c.fingerprint == fingerprint)
            {
                Some(done) => Verdict::Reuse {
                    outcome: done.outcome.clone(),
                    from: done.call_id.clone(),
                },
                None => refuse(
                    ToolErrorKind::NotAllowed,
                    format!(
                        "{REPLAY_REFUSAL}, which calls no tool and answers only the calls the original run made, and it made no {} call with these arguments",
                        spec.name
                    ),
                ),
            };
        }
        if self.tool_calls >= self.policy.max_tool_calls {
            return Verdict::Refuse {
                error: ToolError::new(
                    ToolErrorKind::LimitReached,
                    format!(
                        "not run: the run reached its limit of {} tool calls",
                        self.policy.max_tool_calls
                    ),
                ),
                cap: Some(Cap::ToolCalls),
            };
        }
        let confirm = match self.policy.confirmation {
            ConfirmationPolicy::Annotated => spec.annotations.requires_confirmation,
            ConfirmationPolicy::SideEffects => spec.annotations.requires_confirmation || !spec.annotations.read_only,
            ConfirmationPolicy::Never => false,
        };
        if confirm { Verdict::AwaitApproval } else { Verdict::Run }
    }

    fn handoff(&self, call: &ToolCall, target: crate::id::AgentId) -> Verdict {
        if self.handing_off {
            return refuse(
                ToolErrorKind::Failed,
                "only one handoff per step; the conversation is already being handed over".into(),
            );
        }
        let reason = call
            .arguments
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("handoff")
            .to_string();
        let context = match call.arguments.get("context") {
            Some(Value::Object(map)) => map.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            _ => Default::default(),
        };
        Verdict::Handoff(Handoff {
            target,
            reason,
            context,
        })
    }

    fn unknown(&self, call: &ToolCall) -> Verdict {
        let mut names: Vec<&str> = self.agent.defs.iter().map(|d| d.name.as_str()).collect();
        names.sort_unstable();
        refuse(
            ToolErrorKind::UnknownTool,
            format!(
                "there is no tool named {:?}; the tools are: {}",
                call.name.as_str(),
                names.join(", ")
            ),
        )
    }

    fn missing_information(&self, spec: &ToolSpec) -> Option<Verdict> {
        let missing: Vec<&str> = spec
            .requires
            .iter()
            .filter(|k| !self.blackboard.available.contains_key(*k))
            .map(String::as_str)
            .collect();
        if missing.is_empty() {
            return None;
        }
        let providers: Vec<&str> = self
            .agent
            .tools
            .iter()
            .filter_map(|t| self.catalog.tool(t))
            .filter(|t| t.provides.iter().any(|p| missing.contains(&p.as_str())))
            .map(|t| t.name.as_str())
            .collect();
        let hint = if providers.is_empty() {
            "ask the person for it".to_string()
        } else {
            format!("ask the person for it or call {} first", providers.join(" or "))
        };
        Some(refuse(
            ToolErrorKind::MissingInformation,
            format!(
                "{} needs information that is missing: {}; {hint}",
                spec.name,
                missing.join(", ")
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::AgentSpec;
    use crate::blackboard::ToolExecution;
    use crate::tool::ToolAnnotations;

    fn catalog() -> Catalog {
        let annotated = |name: &str, annotations: ToolAnnotations| {
            ToolSpec::new(name, "a tool", json!({"type": "object"})).annotations(annotations)
        };
        Catalog::builder()
            .tool(annotated(
                "search",
                ToolAnnotations {
                    read_only: true,
                    cacheable: true,
                    ..ToolAnnotations::default()
                },
            ))
            .tool(annotated(
                "pay",
                ToolAnnotations {
                    requires_confirmation: true,
                    ..ToolAnnotations::default()
                },
            ))
            .tool(annotated("note", ToolAnnotations::default()))
            .tool(ToolSpec::new("login", "a tool", json!({"type": "object"})).provides("user_id"))
            .tool(ToolSpec::new("profile", "a tool", json!({"type": "object"})).requires("user_id"))
            .tool(ToolSpec::new("elsewhere", "a tool", json!({"type": "object"})))
            .agent(
                AgentSpec::new("main")
                    .tool("search")
                    .tool("pay")
                    .tool("note")
                    .tool("login")
                    .tool("profile")
                    .handoff("billing"),
            )
            .agent(AgentSpec::new("billing").tool("elsewhere"))
            .build()
            .unwrap()
    }

    fn call(name: &str, arguments: Value) -> ToolCall {
        ToolCall {
            id: "call_9".into(),
            name: name.into(),
            arguments,
        }
    }

    struct Case {
        catalog: Catalog,
        blackboard: Blackboard,
        policy: RunPolicy,
        tool_calls: u32,
        handing_off: bool,
    }

    impl Case {
        fn new() -> Self {
            Self {
                catalog: catalog(),
                blackboard: Blackboard::default(),
                policy: RunPolicy::default(),
                tool_calls: 0,
                handing_off: false,
            }
        }

        fn check(&self, name: &str, arguments: Value) -> Verdict {
            let gate = Gate {
                agent: self.catalog.agent(&"main".into()).unwrap(),
                catalog: &self.catalog,
                blackboard: &self.blackboard,
                policy: &self.policy,
                tool_calls: self.tool_calls,
                handing_off: self.handing_off,
                depth: 0,
                agent_calls: 0,
                agent_budget: self.policy.max_agent_calls,
                replay: None,
            };
            let call = call(name, arguments);
            let fingerprint = crate::canonical::fingerprint(&call.arguments);
            gate.check(&call, &fingerprint)
        }
    }

    fn refused(verdict: Verdict) -> (ToolErrorKind, String, Option<Cap>) {
        match verdict {
            Verdict::Refuse { error, cap } => (error.kind, error.message, cap),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn a_handoff_is_answered_by_the_core_once_per_batch() {
        let mut case = Case::new();
        let verdict = case.check("transfer_to_billing", json!({"reason": "an invoice"}));
        assert_eq!(
            verdict,
            Verdict::Handoff(Handoff {
                target: "billing".into(),
                reason: "an invoice".into(),
                context: Default::default(),
            })
        );
        assert!(!verdict.counts());
        case.handing_off = true;
        let (kind, message, _) = refused(case.check("transfer_to_billing", json!({})));
        assert_eq!(kind, ToolErrorKind::Failed);
        assert!(message.contains("only one handoff"), "{message}");
    }

    #[test]
    fn arguments_must_be_a_json_object() {
        let case = Case::new();
        let (kind, message, _) = refused(case.check("note", json!("{a: 1")));
        assert_eq!(kind, ToolErrorKind::InvalidArguments);
        assert!(message.contains("not valid JSON: {a: 1"), "{message}");
        let (kind, message, _) = refused(case.check("note", json!([1, 2])));
        assert_eq!(kind, ToolErrorKind::InvalidArguments);
        assert!(message.contains("must be a JSON object"), "{message}");
    }

    #[test]
    fn unknown_tools_list_the_agents_tools() {
        let case = Case::new();
        // `elsewhere` exists, but it is another agent's tool.
        for name in ["multiply", "elsewhere", "transfer_to_main"] {
            let (kind, message, _) = refused(case.check(name, json!({})));
            assert_eq!(kind, ToolErrorKind::UnknownTool, "{name}");
            assert!(
                message.contains("login, note, pay, profile, search, transfer_to_billing"),
                "{message}"
            );
        }
    }

    #[test]
    fn missing_information_names_the_tools_that_provide_it() {
        let mut case = Case::new();
        let (kind, message, _) = refused(case.check("profile", json!({})));
        assert_eq!(kind, ToolErrorKind::MissingInformation);
        assert!(
            message.contains("user_id") && message.contains("call login first"),
            "{message}"
        );
        case.blackboard.available.insert("user_id".into(), json!("u1"));
        assert_eq!(case.check("profile", json!({})), Verdict::Run);
    }

    #[test]
    fn required_values_come_from_the_blackboard_when_the_call_leaves_them_out() {
        let spec = ToolSpec::new(
            "profile",
            "a tool",
            json!({"type": "object", "properties": {"user_id": {"type": "string"}, "q": {"type": "string"}}}),
        )
        .requires("user_id")
        .requires("region");
        let mut blackboard = Blackboard::default();
        let mut args = json!({"q": "x"});
        assert!(
            !fill_from_blackboard(&spec, &blackboard, &mut args),
            "nothing to fill from"
        );
        blackboard.available.insert("user_id".into(), json!("u-7"));
        blackboard.available.insert("region".into(), json!("eu"));
        assert!(fill_from_blackboard(&spec, &blackboard, &mut args));
        assert_eq!(
            args,
            json!({"q": "x", "user_id": "u-7"}),
            "region is not a property of the tool"
        );
        let mut given = json!({"user_id": "u-1"});
        assert!(
            !fill_from_blackboard(&spec, &blackboard, &mut given),
            "a given value stays"
        );
        assert_eq!(given, json!({"user_id": "u-1"}));
        let mut null = json!({"user_id": null});
        assert!(fill_from_blackboard(&spec, &blackboard, &mut null));
        assert_eq!(null, json!({"user_id": "u-7"}));
    }

    #[test]
    fn cacheable_calls_reuse_an_earlier_success_with_the_same_arguments() {
        let mut case = Case::new();
        assert_eq!(case.check("search", json!({"q": "x"})), Verdict::Run);
        case.blackboard.log.push(ToolExecution {
            run_id: "r1".into(),
            call_id: "call_1".into(),
            tool: "search".into(),
            arguments: json!({"q": "x"}),
            fingerprint: crate::canonical::fingerprint(&json!({"q": "x"})),
            duration_ms: 4,
            outcome: ToolOutcome::Ok(json!("found")),
            reused_from: None,
            forked: false,
        });
        let verdict = case.check("search", json!({"q": "x"}));
        assert_eq!(
            verdict,
            Verdict::Reuse {
                outcome: ToolOutcome::Ok(json!("found")),
                from: "call_1".into()
            }
        );
        assert!(!verdict.counts(), "a reused call does not count against the cap");
        assert_eq!(case.check("search", json!({"q": "y"})), Verdict::Run);
        // Reuse comes before the cap: it costs nothing.
        case.tool_calls = case.policy.max_tool_calls;
        assert!(matches!(case.check("search", json!({"q": "x"})), Verdict::Reuse { .. }));
    }

    #[test]
    fn past_the_cap_calls_are_refused_and_reach_it() {
        let mut case = Case::new();
        case.policy.max_tool_calls = 2;
        case.tool_calls = 1;
        assert!(case.check("note", json!({})).counts());
        case.tool_calls = 2;
        let (kind, message, cap) = refused(case.check("note", json!({})));
        assert_eq!((kind, cap), (ToolErrorKind::LimitReached, Some(Cap::ToolCalls)));
        assert!(message.contains("limit of 2 tool calls"), "{message}");
    }

    #[test]
    fn the_confirmation_policy_decides_which_calls_await_approval() {
        let mut case = Case::new();
        assert_eq!(case.check("pay", json!({})), Verdict::AwaitApproval);
        assert_eq!(case.check("note", json!({})), Verdict::Run);
        case.policy.confirmation = ConfirmationPolicy::SideEffects;
        assert_eq!(case.check("note", json!({})), Verdict::AwaitApproval);
        assert_eq!(
            case.check("search", json!({})),
            Verdict::Run,
            "read-only tools never ask"
        );
        case.policy.confirmation = ConfirmationPolicy::Never;
        assert_eq!(case.check("pay", json!({})), Verdict::Run);
    }
}
