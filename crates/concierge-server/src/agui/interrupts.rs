//! Interrupts: a run that parks on a confirmation or a choice finishes with
//! an interrupt outcome, and the next input's `resume` answers it.
//!
//! The ledger remembers every interrupt this server raised: the thread, the
//! parked call (its id and, for a confirmation, its arguments' fingerprint)
//! and when it expires. A resume is checked against it and against what the
//! session waits for now; an answered interrupt is remembered as answered, so
//! a replay is refused. The ledger lives in memory: after a restart the
//! thread's next input is refused with the interrupt raised again (a fresh id
//! and expiry), which the client then answers.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use concierge::{
    CallId, ChoiceOption, ElicitationMode, PendingChoice, PendingConfirmation, PendingElicitation, SessionId,
};
use serde_json::{Value, json};

use super::events::{ErrorCode, Interrupt};

/// How long an interrupt can be answered, unless the server is told otherwise.
pub const DEFAULT_INTERRUPT_TTL: Duration = Duration::from_secs(60 * 60);

/// How many answered interrupts are remembered (to refuse their replays).
const ANSWERED_KEPT: usize = 10_000;

/// What a run is parked on.
#[derive(Clone, Debug, PartialEq)]
pub enum Parked {
    /// A call waits for approval.
    Confirmation(PendingConfirmation),
    /// A call waits for the person to pick an option.
    Choice(PendingChoice),
    /// A running call's server asks the person something (MCP elicitation).
    Question(PendingElicitation),
}

impl Parked {
    /// The parked call's id (in the session it is parked in).
    pub fn call_id(&self) -> &CallId {
        match self {
            Parked::Confirmation(p) => &p.call_id,
            Parked::Choice(p) => &p.call_id,
            Parked::Question(p) => &p.call_id,
        }
    }

    /// The child session the call is parked in, when a child run asked.
    pub fn child(&self) -> Option<&SessionId> {
        match self {
            Parked::Confirmation(p) => p.session.as_ref(),
            Parked::Choice(p) => p.session.as_ref(),
            Parked::Question(_) => None,
        }
    }

    /// Whether `other` is the same park: the same call, the same arguments
    /// (a confirmation) or the same question (a choice).
    fn same_as(&self, other: &Parked) -> bool {
        match (self, other) {
            (Parked::Confirmation(a), Parked::Confirmation(b)) => {
                a.call_id == b.call_id && a.fingerprint == b.fingerprint
            }
            (Parked::Choice(a), Parked::Choice(b)) => a.call_id == b.call_id && a.choice == b.choice,
            (Parked::Question(a), Parked::Question(b)) => a == b,
            _ => false,
        }
    }

    /// The session's own pending confirmation or choice, if it waits for one.
    pub fn of(session: &concierge::Session) -> Option<Parked> {
        if let Some(pending) = session.pending_confirmation() {
            return Some(Parked::Confirmation(pending));
        }
        if let Some(pending) = session.pending_choice() {
            return Some(Parked::Choice(pending));
        }
        session.pending_elicitation().map(Parked::Question)
    }
}

/// An interrupt the ledger holds open.
#[derive(Clone, Debug)]
struct Open {
    thread: SessionId,
    parked: Parked,
    expires: SystemTime,
    interrupt: Interrupt,
}

#[derive(Debug, Default)]
struct Ledger {
    next: u64,
    open: BTreeMap<String, Open>,
    /// Answered (or expired) interrupts by id, with their thread, oldest first.
    closed: BTreeMap<String, (SessionId, Closed)>,
    order: VecDeque<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Closed {
    Answered,
    Expired,
}

impl Ledger {
    fn close(&mut self, id: &str, thread: SessionId, how: Closed) {
        self.open.remove(id);
        if self.closed.insert(id.to_string(), (thread, how)).is_none() {
            self.order.push_back(id.to_string());
        }
        while self.order.len() > ANSWERED_KEPT {
            if let Some(oldest) = self.order.pop_front() {
                self.closed.remove(&oldest);
            }
        }
    }
}

/// A resume refused: nothing runs, the client is told why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The machine-readable reason.
    pub code: ErrorCode,
    /// The reason in a sentence.
    pub message: String,
}

impl Refusal {
    fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

/// The interrupts this server raised, and how long they can be answered.
#[derive(Clone)]
pub struct Interrupts {
    ledger: Arc<Mutex<Ledger>>,
    ttl: Duration,
    seed: u64,
}

impl std::fmt::Debug for Interrupts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interrupts")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl Default for Interrupts {
    fn default() -> Self {
        Self::new(DEFAULT_INTERRUPT_TTL)
    }
}

impl Interrupts {
    /// A ledger whose interrupts can be answered for `ttl` after they are raised.
    pub fn new(ttl: Duration) -> Self {
        let seed = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or_default();
        Self {
            ledger: Arc::default(),
            ttl,
            seed,
        }
    }

    /// How long an interrupt can be answered.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The interrupt for `parked` in `thread`: the open one if this park was
    /// raised already, else a new one that expires after the ttl.
    /// `tool_call_id` is the call's AG-UI id; `subagent` the child run, if any.
    pub fn raise(
        &self,
        thread: &SessionId,
        parked: &Parked,
        tool_call_id: String,
        subagent: Option<String>,
    ) -> Interrupt {
        let mut ledger = self.ledger();
        let raised = ledger
            .open
            .iter()
            .find(|(_, o)| &o.thread == thread && o.parked.same_as(parked))
            .map(|(id, o)| (id.clone(), o.clone()));
        if let Some((id, open)) = raised {
            if SystemTime::now() < open.expires {
                return open.interrupt;
            }
            // Expired unanswered: asked again under a new id.
            ledger.close(&id, thread.clone(), Closed::Expired);
        }
        ledger.next += 1;
        // 128 random bits: nobody answers an interrupt by guessing its id
        // (the counter only if the system has no randomness to give).
        let id = crate::ground::random_id("int").unwrap_or_else(|_| format!("int-{}-{}", self.seed, ledger.next));
        let expires = SystemTime::now() + self.ttl;
        let interrupt = describe(&id, parked, tool_call_id, subagent, expires);
        ledger.open.insert(
            id,
            Open {
                thread: thread.clone(),
                parked: parked.clone(),
                expires,
                interrupt: interrupt.clone(),
            },
        );
        interrupt
    }

    /// Checks a resume of `thread`, which waits on `now_parked` (if anything):
    /// `answers` are its entries as (interrupt id, fingerprint the client
    /// quoted, if any). `accept` reads the answer to the interrupt it names;
    /// once it accepts, the interrupt is closed (a replay is refused) and its
    /// answer returned with the parked call. Otherwise nothing changes, and
    /// the refusal says why.
    pub fn answer<T>(
        &self,
        thread: &SessionId,
        now_parked: Option<&Parked>,
        answers: &[(String, Option<String>)],
        accept: impl FnOnce(&str, &Parked) -> Result<T, Refusal>,
    ) -> Result<(T, Parked), Refusal> {
        let mut ledger = self.ledger();
        let now = SystemTime::now();
        for (id, _) in answers {
            match ledger.closed.get(id) {
                Some((owner, Closed::Answered)) if owner == thread => {
                    return Err(Refusal::new(
                        ErrorCode::InterruptAnswered,
                        format!("interrupt {id} was answered already; an answer counts once, so nothing runs"),
                    ));
                }
                Some((owner, Closed::Expired)) if owner == thread => {
                    return Err(Refusal::new(
                        ErrorCode::InterruptExpired,
                        format!("interrupt {id} expired before it was answered; send a new message to be asked again"),
                    ));
                }
                _ => {}
            }
            match ledger.open.get(id) {
                Some(open) if &open.thread == thread => {}
                _ => {
                    return Err(Refusal::new(
                        ErrorCode::UnknownInterrupt,
                        format!(
                            "this thread has no interrupt {id}; answer the interrupt its last run finished with (a new message without a resume shows it again)"
                        ),
                    ));
                }
            }
        }
        let Some(parked) = now_parked else {
            // Every named interrupt is open, but the session waits for nothing:
            // it was answered some other way (the HTTP API, say).
            for (id, _) in answers {
                ledger.close(id, thread.clone(), Closed::Answered);
            }
            return Err(Refusal::new(
                ErrorCode::NothingToResume,
                "this thread waits for no answer now, so the resume has nothing to answer; send a message instead",
            ));
        };
        let open_here: Vec<(String, Open)> = ledger
            .open
            .iter()
            .filter(|(_, o)| &o.thread == thread && o.parked.same_as(parked))
            .map(|(id, o)| (id.clone(), o.clone()))
            .collect();
        let Some((id, open)) = open_here
            .into_iter()
            .find(|(id, _)| answers.iter().any(|(answered, _)| answered == id))
        else {
            return Err(Refusal::new(
                ErrorCode::InterruptMismatch,
                format!(
                    "the resume does not answer what the thread waits for now (call {}); answer the interrupt its last run finished with",
                    parked.call_id()
                ),
            ));
        };
        if answers.len() > 1 {
            return Err(Refusal::new(
                ErrorCode::ResumeIncomplete,
                format!(
                    "the thread waits for one answer (interrupt {id}), and the resume has {}; send exactly one",
                    answers.len()
                ),
            ));
        }
        if now >= open.expires {
            ledger.close(&id, thread.clone(), Closed::Expired);
            return Err(Refusal::new(
                ErrorCode::InterruptExpired,
                format!(
                    "interrupt {id} expired at {} before it was answered; send a new message to be asked again",
                    open.interrupt.expires_at
                ),
            ));
        }
        if let Parked::Confirmation(pending) = &open.parked {
            let quoted = answers.iter().find_map(|(_, fp)| fp.as_deref());
            if quoted.is_some_and(|quoted| quoted != pending.fingerprint) {
                return Err(Refusal::new(
                    ErrorCode::InterruptMismatch,
                    format!(
                        "the resume quotes other arguments than those of the parked call {} (their fingerprint differs), so nothing runs; answer the call as it was asked",
                        pending.call_id
                    ),
                ));
            }
        }
        let answer = accept(&id, parked)?;
        ledger.close(&id, thread.clone(), Closed::Answered);
        Ok((answer, parked.clone()))
    }
}

/// The interrupt's wire form.
fn describe(
    id: &str,
    parked: &Parked,
    tool_call_id: String,
    subagent: Option<String>,
    expires: SystemTime,
) -> Interrupt {
    let expires_at =
        chrono::DateTime::<chrono::Utc>::from(expires).to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    match parked {
        Parked::Confirmation(p) => Interrupt {
            id: id.to_string(),
            reason: "tool_call",
            message: p.message.clone(),
            tool_call_id,
            response_schema: json!({
                "type": "object",
                "properties": {
                    "approved": {"type": "boolean", "description": "true runs the call; false declines it"},
                    "editedArgs": {
                        "type": "object",
                        "description": "The call's complete new arguments (a full replacement, not merged); approves the call with them"
                    },
                    "reason": {"type": "string", "description": "Why the call is declined (told to the agent)"}
                },
                "required": ["approved"]
            }),
            expires_at,
            metadata: json!({
                "kind": "confirmation",
                "callId": p.call_id,
                "fingerprint": p.fingerprint,
                "tool": p.tool,
                "arguments": p.arguments,
            }),
            subagent_run_id: subagent,
        },
        Parked::Question(p) => question(id, p, tool_call_id, expires_at),
        Parked::Choice(p) => {
            let n = p.choice.options.len();
            let ids: Vec<&Value> = p.choice.options.iter().map(|o| &o.id).collect();
            Interrupt {
                id: id.to_string(),
                reason: "input_required",
                message: p.choice.question.clone(),
                tool_call_id,
                response_schema: json!({
                    "type": "object",
                    "properties": {
                        "option": {"type": "integer", "minimum": 1, "maximum": n, "description": "The chosen option's number"},
                        "optionId": {"enum": ids, "description": "The chosen option's id"}
                    },
                    "anyOf": [{"required": ["option"]}, {"required": ["optionId"]}]
                }),
                expires_at,
                metadata: json!({
                    "kind": "choice",
                    "callId": p.call_id,
                    "argument": p.choice.argument,
                    "options": numbered(&p.choice.options),
                }),
                subagent_run_id: subagent,
            }
        }
    }
}

/// A running call's question: the resume's payload is the form's content
/// (accept), or `{"action": "decline" | "cancel"}`; a cancelled resume cancels.
fn question(id: &str, p: &PendingElicitation, tool_call_id: String, expires_at: String) -> Interrupt {
    let (mode, content) = match &p.elicitation.mode {
        ElicitationMode::Form { schema } => ("form", schema.clone()),
        ElicitationMode::Url { .. } => ("url", json!({"type": "object"})),
        ElicitationMode::Sampling { .. } => ("sampling", json!({"type": "object"})),
        ElicitationMode::Reply { .. } => (
            "reply",
            json!({
                "type": "object",
                "properties": {"text": {"type": "string", "title": "Your reply", "minLength": 1}},
                "required": ["text"]
            }),
        ),
    };
    let mut metadata = json!({
        "kind": "elicitation",
        "callId": p.call_id,
        "question": p.question,
        "server": p.elicitation.server,
        "mode": mode,
    });
    match &p.elicitation.mode {
        ElicitationMode::Url { url } => metadata["url"] = json!(url),
        ElicitationMode::Sampling { request } => metadata["request"] = json!(request),
        ElicitationMode::Form { .. } | ElicitationMode::Reply { .. } => {}
    }
    Interrupt {
        id: id.to_string(),
        reason: "input_required",
        message: p.text.clone(),
        tool_call_id,
        response_schema: json!({
            "anyOf": [
                content,
                {
                    "type": "object",
                    "properties": {
                        "action": {"enum": ["accept", "decline", "cancel"], "description": "What the person does with the question"},
                        "content": {"type": "object", "description": "The form's values, for accept"}
                    },
                    "required": ["action"]
                }
            ]
        }),
        expires_at,
        metadata,
        subagent_run_id: None,
    }
}

fn numbered(options: &[ChoiceOption]) -> Vec<Value> {
    options
        .iter()
        .enumerate()
        .map(|(i, o)| json!({"number": i + 1, "id": o.id, "label": o.label}))
        .collect()
}
