//! The rules planner: keyword and regex routes, no model.

use regex::Regex;
use serde_json::{Map, Value, json};

use super::{Plan, PlanView, PlannedCall, Planner};
use crate::agent::AgentSpec;
use crate::agent::{RouteAction, Rules, Then};
use crate::handoff::{HANDOFF_PREFIX, handoff_tool_name};
use crate::message::Message;
use crate::model::ModelReply;
use crate::policy::Cap;
use crate::text::{content_words, tokens};
use crate::tool::{ToolErrorKind, ToolOutcome};

/// Rules with their patterns compiled (done once, when the catalog is built).
#[derive(Clone, Debug)]
pub struct CompiledRules {
    routes: Vec<CompiledRoute>,
    answer: Option<String>,
    error_answer: Option<String>,
    fallback: Option<String>,
    every_match: bool,
}

#[derive(Clone, Debug)]
struct CompiledRoute {
    keywords: Vec<String>,
    pattern: Option<Regex>,
    answer: Option<String>,
    then: Option<Then>,
    action: RouteAction,
}

impl CompiledRules {
    /// Compiles `rules`; an error says which route is wrong and why.
    pub fn compile(rules: &Rules) -> Result<Self, String> {
        let mut routes = Vec::with_capacity(rules.routes.len());
        for (i, route) in rules.routes.iter().enumerate() {
            if route.keywords.is_empty() && route.pattern.is_none() {
                return Err(format!("route {i} has neither keywords nor a pattern"));
            }
            let pattern = match &route.pattern {
                Some(p) => Some(Regex::new(p).map_err(|e| format!("route {i}: invalid pattern: {e}"))?),
                None => None,
            };
            routes.push(CompiledRoute {
                keywords: route.keywords.iter().map(|k| k.to_lowercase()).collect(),
                pattern,
                answer: route.answer.clone(),
                then: route.then.clone(),
                action: route.action.clone(),
            });
        }
        Ok(Self {
            routes,
            answer: rules.answer.clone(),
            error_answer: rules.error_answer.clone(),
            fallback: rules.fallback.clone(),
            every_match: rules.every_match,
        })
    }
}

impl CompiledRules {
    /// Whether a route matches `text` (otherwise the rules fall back).
    pub(crate) fn places(&self, text: &str) -> bool {
        let lower = text.to_lowercase();
        self.routes.iter().any(|route| {
            (route.keywords.is_empty() || route.keywords.iter().any(|k| lower.contains(k.as_str())))
                && route.pattern.as_ref().is_none_or(|re| re.is_match(text))
        })
    }
}

/// The words an agent is called by: its id, name and category.
fn own_names(agent: &AgentSpec) -> Vec<String> {
    let mut names = tokens(&agent.id.as_str().replace(['_', '-'], " "));
    names.extend(tokens(&agent.name));
    if let Some(category) = &agent.category {
        names.extend(tokens(category));
    }
    names
}

/// Whether a tool route's captured values are only the agent's own name
/// (the item in "order some food" is the food goal's name): the message
/// asks for the goal, it does not give the tool anything to work with, so
/// the route is a misreading and is passed over.
fn names_only_the_agent(route: &CompiledRoute, values: &Map<String, Value>, names: &[String]) -> bool {
    if !matches!(route.action, RouteAction::Tool { .. }) {
        return false;
    }
    let mut captured = values
        .iter()
        .filter(|(name, _)| name.as_str() != "message")
        .filter_map(|(_, value)| value.as_str())
        .map(|value| content_words(&tokens(value)))
        .peekable();
    captured.peek().is_some() && captured.all(|words| !words.is_empty() && words.iter().all(|w| names.contains(w)))
}

/// Routes the person's text with an agent's rules; after tools ran, answers
/// from their results with the rules' templates.
#[derive(Clone, Copy, Debug)]
pub struct RulesPlanner<'a> {
    rules: &'a CompiledRules,
}

impl<'a> RulesPlanner<'a> {
    /// A planner over compiled rules.
    pub fn new(rules: &'a CompiledRules) -> Self {
        Self { rules }
    }

    /// The first route that matches `text`, with its placeholder values
    /// (the regex's named groups and `message`).
    fn matching(&self, text: &str) -> Option<(&CompiledRoute, Map<String, Value>)> {
        self.matching_where(text, |_, _| true)
    }

    /// The first route that matches `text` and passes `accept`.
    fn matching_where(
        &self,
        text: &str,
        accept: impl Fn(&CompiledRoute, &Map<String, Value>) -> bool,
    ) -> Option<(&CompiledRoute, Map<String, Value>)> {
        let lower = text.to_lowercase();
        for route in &self.rules.routes {
            if !route.keywords.is_empty() && !route.keywords.iter().any(|k| lower.contains(k.as_str())) {
                continue;
            }
            let mut values = Map::new();
            if let Some(re) = &route.pattern {
                let Some(captures) = re.captures(text) else {
                    continue;
                };
                for name in re.capture_names().flatten() {
                    if let Some(m) = captures.name(name) {
                        values.insert(name.to_string(), Value::String(m.as_str().to_string()));
                    }
                }
            }
            values.insert("message".to_string(), Value::String(text.to_string()));
            if accept(route, &values) {
                return Some((route, values));
            }
        }
        None
    }

    /// Every tool route that matches `text` and passes `accept`, in the
    /// order the matches start in the text.
    fn matching_all(
        &self,
        text: &str,
        accept: impl Fn(&CompiledRoute, &Map<String, Value>) -> bool,
    ) -> Vec<(&CompiledRoute, Map<String, Value>)> {
        let lower = text.to_lowercase();
        let mut found: Vec<(usize, &CompiledRoute, Map<String, Value>)> = Vec::new();
        for route in &self.rules.routes {
            if !matches!(route.action, RouteAction::Tool { .. }) {
                continue;
            }
            let mut keyword_at = 0;
            if !route.keywords.is_empty() {
                match route.keywords.iter().filter_map(|k| lower.find(k.as_str())).min() {
                    Some(at) => keyword_at = at,
                    None => continue,
                }
            }
            // A pattern may match several parts of the statement: each is a call.
            let matches: Vec<(usize, Map<String, Value>)> = match &route.pattern {
                Some(re) => re
                    .captures_iter(text)
                    .map(|captures| {
                        let mut values = Map::new();
                        for name in re.capture_names().flatten() {
                            if let Some(m) = captures.name(name) {
                                values.insert(name.to_string(), Value::String(m.as_str().to_string()));
                            }
                        }
                        (captures.get(0).map_or(0, |m| m.start()), values)
                    })
                    .collect(),
                None => vec![(keyword_at, Map::new())],
            };
            for (start, mut values) in matches {
                values.insert("message".to_string(), Value::String(text.to_string()));
                if accept(route, &values) {
                    found.push((start, route, values));
                }
            }
        }
        found.sort_by_key(|(start, ..)| *start);
        found.into_iter().map(|(_, route, values)| (route, values)).collect()
    }

    /// Plans the first route that matches `text`. Placeholders are the
    /// route's named groups, `{message}`, then what the blackboard knows (a
    /// handoff's context, a tool's `provides`); a tool route whose arguments
    /// name a value that none of them has is passed over, so a call never
    /// carries a `{placeholder}` as its value.
    fn route(&self, view: &PlanView<'_>, text: &str) -> Plan {
        let known = |values: &Map<String, Value>, name: &str| -> Option<String> {
            values
                .get(name)
                .or_else(|| view.blackboard.available.get(name).filter(|v| !v.is_null()))
                .map(render_value)
        };
        let complete = |route: &CompiledRoute, values: &Map<String, Value>| match &route.action {
            RouteAction::Tool { arguments, .. } => placeholders_in(&Value::Object(arguments.clone()))
                .iter()
                .all(|name| known(values, name).is_some()),
            _ => true,
        };
        if self.rules.every_match {
            let calls: Vec<PlannedCall> = self
                .matching_all(text, complete)
                .into_iter()
                .filter_map(|(route, values)| match &route.action {
                    RouteAction::Tool { tool, arguments } => Some(PlannedCall {
                        name: tool.to_string(),
                        arguments: substitute(&Value::Object(arguments.clone()), &|name: &str| known(&values, name)),
                    }),
                    _ => None,
                })
                .collect();
            if !calls.is_empty() {
                return Plan::CallTools {
                    text: String::new(),
                    calls,
                };
            }
        }
        let names = own_names(view.agent);
        let accept = |route: &CompiledRoute, values: &Map<String, Value>| {
            complete(route, values) && !names_only_the_agent(route, values, &names)
        };
        if let Some((route, values)) = self.matching_where(text, accept) {
            let lookup = |name: &str| known(&values, name);
            return match &route.action {
                RouteAction::Tool { tool, arguments } => Plan::CallTools {
                    text: String::new(),
                    calls: vec![PlannedCall {
                        name: tool.to_string(),
                        arguments: substitute(&Value::Object(arguments.clone()), &lookup),
                    }],
                },
                RouteAction::Handoff { handoff, context } => Plan::CallTools {
                    text: String::new(),
                    calls: vec![PlannedCall {
                        name: handoff_tool_name(handoff).to_string(),
                        arguments: json!({
                            "reason": format!("the request matched {handoff}'s route"),
                            "context": substitute(&Value::Object(context.clone()), &lookup),
                        }),
                    }],
                },
                RouteAction::Reply { reply } => Plan::Answer(render(reply, &lookup)),
            };
        }
        let fallback = self
            .rules
            .fallback
            .clone()
            .or_else(|| view.agent.starter_prompt.clone())
            .unwrap_or_else(|| {
                format!(
                    "I did not understand that. I am {}: {}",
                    view.agent.name, view.agent.description
                )
            });
        Plan::Clarify(fallback)
    }

    /// The matching route's second step, when its first call succeeded:
    /// the second call (first result only, every placeholder filled), or
    /// the `declined` answer when the person declined it.
    fn then_step(&self, results: &[&Message], text: &str) -> Option<Plan> {
        let (route, values) = self.matching(text)?;
        let then = route.then.as_ref()?;
        let RouteAction::Tool { tool: first_tool, .. } = &route.action else {
            return None;
        };
        let Some(Message::Tool {
            tool,
            outcome: ToolOutcome::Ok(first),
            ..
        }) = results.first()
        else {
            return None;
        };
        if tool != first_tool {
            return None;
        }
        let lookup = |name: &str| -> Option<String> {
            match name.strip_prefix("result.") {
                Some(path) => field(first, path).map(render_value),
                None if name == "result" => Some(render_value(first)),
                None => values.get(name).map(render_value),
            }
        };
        match results {
            [_] => {
                let arguments = Value::Object(then.arguments.clone());
                let all_known = placeholders_in(&arguments).iter().all(|name| lookup(name).is_some());
                all_known.then(|| Plan::CallTools {
                    text: String::new(),
                    calls: vec![PlannedCall {
                        name: then.tool.to_string(),
                        arguments: substitute(&arguments, &lookup),
                    }],
                })
            }
            [
                _,
                ..,
                Message::Tool {
                    tool,
                    outcome: ToolOutcome::Error(e),
                    ..
                },
            ] if tool == &then.tool && e.kind == ToolErrorKind::Declined => {
                then.declined.as_deref().map(|t| Plan::Answer(render(t, &lookup)))
            }
            _ => None,
        }
    }

    fn answer(&self, view: &PlanView<'_>, results: &[&Message], text: &str) -> Plan {
        if let Some(plan) = self.then_step(results, text) {
            return plan;
        }
        if self.rules.every_match && results.len() > 1 {
            // One answer per call, in call order (the order of the statement).
            let parts: Vec<String> = results
                .iter()
                .filter_map(|m| match self.answer(view, std::slice::from_ref(m), text) {
                    Plan::Answer(part) => Some(part.trim().to_string()).filter(|p| !p.is_empty()),
                    _ => None,
                })
                .collect();
            return Plan::Answer(parts.join(" "));
        }
        let Some(Message::Tool { tool, outcome, .. }) = results.last() else {
            return Plan::Answer(summarize_results(view));
        };
        // The person said no: not an error to report back to them.
        if matches!(outcome, ToolOutcome::Error(e) if e.kind == ToolErrorKind::Declined) {
            return Plan::Answer("OK, I did not do that.".to_string());
        }
        // The answer of the route that calls this tool, else the rules' own.
        let route_answer = self.rules.routes.iter().find_map(|r| match &r.action {
            RouteAction::Tool { tool: t, .. } if t == tool => r.answer.as_deref(),
            _ => None,
        });
        let template = match outcome {
            ToolOutcome::Ok(_) => route_answer.or(self.rules.answer.as_deref()),
            ToolOutcome::Error(_) => Some(self.rules.error_answer.as_deref().unwrap_or("{tool} failed: {error}")),
        };
        let Some(template) = template else {
            return Plan::Answer(summarize_results(view));
        };
        let lookup = |name: &str| -> Option<String> {
            match (name, outcome) {
                ("tool", _) => Some(tool.to_string()),
                ("message", _) => Some(text.to_string()),
                ("error", ToolOutcome::Error(e)) => Some(e.message.clone()),
                ("result", ToolOutcome::Ok(v)) => Some(render_value(v)),
                (path, ToolOutcome::Ok(v)) => field(v, path.strip_prefix("result.")?).map(render_value),
                _ => None,
            }
        };
        Plan::Answer(render(template, &lookup))
    }
}

/// Tool messages answering the current agent's calls since the latest user
/// message, handoffs excluded.
fn own_results<'m>(view: &PlanView<'m>) -> Vec<&'m Message> {
    let start = view.last_user_message().map(|(i, _)| i + 1).unwrap_or(0);
    let history: &'m [Message] = view.history;
    history[start..]
        .iter()
        .filter(|m| matches!(m, Message::Tool { agent, tool, .. } if agent == &view.agent.id && !tool.as_str().starts_with(HANDOFF_PREFIX)))
        .collect()
}

/// A plain summary of the tool results since the latest user message, one
/// `tool: result` line each (used when no template or model is available).
pub fn summarize_results(view: &PlanView<'_>) -> String {
    let results = own_results(view);
    if results.is_empty() {
        return "I have no results to report.".to_string();
    }
    let lines: Vec<String> = results
        .iter()
        .filter_map(|m| match m {
            Message::Tool { tool, outcome, .. } => Some(match outcome {
                ToolOutcome::Ok(v) => format!("{tool}: {}", render_value(v)),
                ToolOutcome::Error(e) => format!("{tool} failed: {}", e.message),
            }),
            _ => None,
        })
        .collect();
    lines.join("\n")
}

impl Planner for RulesPlanner<'_> {
    fn next(&self, view: &PlanView<'_>) -> Plan {
        let Some((_, text)) = view.last_user_message() else {
            return Plan::Clarify("What can I do for you?".to_string());
        };
        let results = own_results(view);
        if results.is_empty() {
            self.route(view, text)
        } else {
            self.answer(view, &results, text)
        }
    }

    fn on_model_reply(&self, _view: &PlanView<'_>, reply: &ModelReply) -> Plan {
        Plan::Answer(reply.text.clone())
    }

    fn synthesize(&self, view: &PlanView<'_>, cap: Cap) -> Plan {
        Plan::Answer(format!("I stopped at {cap}. {}", summarize_results(view)))
    }
}

/// Renders a JSON value for people: strings as is, whole floats without `.0`.
pub fn render_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// Replaces `{name}` placeholders in `template` with `lookup(name)`; unknown
/// placeholders are left as they are.
pub fn render(template: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) if is_placeholder(&after[..close]) => {
                let name = &after[..close];
                match lookup(name) {
                    Some(value) => out.push_str(&value),
                    None => {
                        out.push('{');
                        out.push_str(name);
                        out.push('}');
                    }
                }
                rest = &after[close + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The value at a dotted `path` in `value` (`match.id`; array items by
/// index, `candidates.0.title`); null counts as missing.
fn field<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.')
        .try_fold(value, |cur, part| match cur {
            Value::Array(items) => part.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => cur.get(part),
        })
        .filter(|v| !v.is_null())
}

/// The placeholder names in the string values of `value`.
fn placeholders_in(value: &Value) -> Vec<String> {
    match value {
        Value::String(s) => {
            let mut names = Vec::new();
            let mut rest = s.as_str();
            while let Some(open) = rest.find('{') {
                let after = &rest[open + 1..];
                match after.find('}') {
                    Some(close) if is_placeholder(&after[..close]) => {
                        names.push(after[..close].to_string());
                        rest = &after[close + 1..];
                    }
                    _ => rest = after,
                }
            }
            names
        }
        Value::Array(items) => items.iter().flat_map(placeholders_in).collect(),
        Value::Object(map) => map.values().flat_map(placeholders_in).collect(),
        _ => Vec::new(),
    }
}

fn is_placeholder(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

fn substitute(value: &Value, lookup: &dyn Fn(&str) -> Option<String>) -> Value {
    match value {
        Value::String(s) => {
            if let Some(name) = s.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
                if is_placeholder(name) {
                    if let Some(v) = lookup(name) {
                        return Value::String(v);
                    }
                }
            }
            Value::String(render(s, lookup))
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, lookup)).collect()),
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                out.insert(k.clone(), substitute(v, lookup));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_substitutes_known_placeholders_only() {
        let lookup = |n: &str| (n == "a").then(|| "5".to_string());
        assert_eq!(render("{a} + {b} = {", &lookup), "5 + {b} = {");
        assert_eq!(render("{ not a placeholder }", &lookup), "{ not a placeholder }");
    }

    #[test]
    fn values_render_for_people() {
        assert_eq!(render_value(&json!(8.0)), "8");
        assert_eq!(render_value(&json!(2.5)), "2.5");
        assert_eq!(render_value(&json!("hi")), "hi");
        assert_eq!(render_value(&json!({"a": 1})), r#"{"a":1}"#);
    }
}
