//! What a resume says: the answer to a confirmation (approve, deny, approve
//! with edited arguments) or to a choice (an option). An unclear answer to a
//! confirmation declines it: nothing runs that the person did not clearly approve.

use concierge::core::Decision;
use concierge::{ElicitationAction, ElicitationAnswer};
use serde_json::Value;

use super::events::ErrorCode;
use super::input::{ResumeEntry, ResumeStatus};
use super::interrupts::{Parked, Refusal};

/// The answer a resume gives to the parked call.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// The confirmation's decision.
    Confirm(Decision),
    /// The chosen option's number (from 1), said as the session's next message.
    Choose(usize),
    /// No option was chosen: said as the next message, the run goes on without one.
    NoChoice,
    /// The answer to a running call's question.
    Elicit(ElicitationAnswer),
}

/// The sentence a cancelled or unclear choice is answered with.
pub const NO_CHOICE: &str = "none of these";

/// Reads `entry` as the answer to `parked`. A confirmation's unclear answer
/// is a denial; a choice's answer that names no option is refused.
pub fn read(entry: &ResumeEntry, parked: &Parked) -> Result<Answer, Refusal> {
    match parked {
        Parked::Confirmation(_) => Ok(Answer::Confirm(decision(entry))),
        Parked::Question(_) => elicitation(entry).map(Answer::Elicit),
        Parked::Choice(pending) => {
            if entry.status == ResumeStatus::Cancelled {
                return Ok(Answer::NoChoice);
            }
            let options = &pending.choice.options;
            let n = options.len();
            let payload = entry.payload.as_ref();
            let by_number = payload
                .and_then(|p| p.get("option").or(Some(p)))
                .and_then(Value::as_u64)
                .map(|k| k as usize);
            let by_id = payload
                .and_then(|p| p.get("optionId"))
                .and_then(|id| options.iter().position(|o| &o.id == id))
                .map(|i| i + 1);
            match by_number.or(by_id) {
                Some(k) if (1..=n).contains(&k) => Ok(Answer::Choose(k)),
                _ => Err(Refusal {
                    code: ErrorCode::ResumeIncomplete,
                    message: format!(
                        "the answer names no option of the choice; send {{\"option\": n}} with n from 1 to {n}, or {{\"optionId\": id}}"
                    ),
                }),
            }
        }
    }
}

/// A question's answer: a cancelled resume cancels; `{"action": ...}` says
/// what the person does (with `content` for accept); any other object is
/// the form's content, accepted.
fn elicitation(entry: &ResumeEntry) -> Result<ElicitationAnswer, Refusal> {
    if entry.status == ResumeStatus::Cancelled {
        return Ok(ElicitationAnswer::new(ElicitationAction::Cancel));
    }
    let refuse = || Refusal {
        code: ErrorCode::ResumeIncomplete,
        message: "the answer to the question must be the form's values as an object, or {\"action\": \"decline\"} \
                  or {\"action\": \"cancel\"}"
            .to_string(),
    };
    let Some(Value::Object(map)) = &entry.payload else {
        return Err(refuse());
    };
    match map.get("action").and_then(Value::as_str) {
        Some("accept") => Ok(ElicitationAnswer {
            action: ElicitationAction::Accept,
            content: map.get("content").cloned(),
        }),
        Some("decline") => Ok(ElicitationAnswer::new(ElicitationAction::Decline)),
        Some("cancel") => Ok(ElicitationAnswer::new(ElicitationAction::Cancel)),
        Some(_) => Err(refuse()),
        None => Ok(ElicitationAnswer::accept(Value::Object(map.clone()))),
    }
}

/// A confirmation's decision: approve, amend or deny; deny unless clear.
fn decision(entry: &ResumeEntry) -> Decision {
    let unclear = || Decision::Deny {
        reason: Some("the answer was not a clear approval".to_string()),
    };
    if entry.status == ResumeStatus::Cancelled {
        return Decision::Deny {
            reason: Some("the person gave no answer".to_string()),
        };
    }
    let Some(payload) = &entry.payload else {
        return unclear();
    };
    let approved = match payload {
        Value::Bool(b) => Some(*b),
        Value::Object(map) => map.get("approved").and_then(Value::as_bool),
        _ => None,
    };
    match approved {
        Some(true) => match payload.get("editedArgs") {
            None | Some(Value::Null) => Decision::Approve,
            Some(arguments @ Value::Object(_)) => Decision::Amend {
                arguments: arguments.clone(),
            },
            Some(_) => unclear(),
        },
        Some(false) => Decision::Deny {
            reason: payload.get("reason").and_then(Value::as_str).map(str::to_string),
        },
        None => unclear(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use concierge::{CallId, Choice, PendingChoice, PendingConfirmation, RunId, ToolId};
    use serde_json::json;

    use super::*;

    fn entry(status: ResumeStatus, payload: Option<Value>) -> ResumeEntry {
        ResumeEntry {
            interrupt_id: "i".into(),
            status,
            payload,
            metadata: None,
        }
    }

    fn confirmation() -> Parked {
        Parked::Confirmation(PendingConfirmation {
            run_id: RunId::new("r"),
            call_id: CallId::new("call_1"),
            tool: ToolId::new("create_task"),
            arguments: json!({"title": "x"}),
            fingerprint: "fp".into(),
            message: "Create it?".into(),
            session: None,
        })
    }

    #[test]
    fn a_confirmation_is_denied_unless_clearly_approved() {
        let parked = confirmation();
        let approve = read(&entry(ResumeStatus::Resolved, Some(json!({"approved": true}))), &parked).unwrap();
        assert_eq!(approve, Answer::Confirm(Decision::Approve));
        let amend = read(
            &entry(
                ResumeStatus::Resolved,
                Some(json!({"approved": true, "editedArgs": {"title": "y"}})),
            ),
            &parked,
        )
        .unwrap();
        assert_eq!(
            amend,
            Answer::Confirm(Decision::Amend {
                arguments: json!({"title": "y"})
            })
        );
        for unclear in [
            Some(json!({"approved": "yes"})),
            Some(json!({"ok": true})),
            Some(json!({"approved": true, "editedArgs": "title y"})),
            Some(json!(1)),
            None,
        ] {
            let answer = read(&entry(ResumeStatus::Resolved, unclear.clone()), &parked).unwrap();
            assert!(
                matches!(answer, Answer::Confirm(Decision::Deny { .. })),
                "{unclear:?} -> {answer:?}"
            );
        }
        let cancelled = read(
            &entry(ResumeStatus::Cancelled, Some(json!({"approved": true}))),
            &parked,
        )
        .unwrap();
        assert!(matches!(cancelled, Answer::Confirm(Decision::Deny { .. })));
    }

    #[test]
    fn a_choice_is_answered_by_number_or_id() {
        let parked = Parked::Choice(PendingChoice {
            run_id: RunId::new("r"),
            call_id: CallId::new("call_1"),
            choice: Choice::new("Which?", "task_id")
                .option(json!(4), "four")
                .option(json!(5), "five"),
            session: None,
        });
        let by_number = read(&entry(ResumeStatus::Resolved, Some(json!({"option": 2}))), &parked).unwrap();
        assert_eq!(by_number, Answer::Choose(2));
        let by_id = read(&entry(ResumeStatus::Resolved, Some(json!({"optionId": 4}))), &parked).unwrap();
        assert_eq!(by_id, Answer::Choose(1));
        for bad in [
            json!({"option": 3}),
            json!({"option": 0}),
            json!({"optionId": 9}),
            json!("two"),
        ] {
            let refused = read(&entry(ResumeStatus::Resolved, Some(bad)), &parked).unwrap_err();
            assert_eq!(refused.code, ErrorCode::ResumeIncomplete);
        }
        let none = read(&entry(ResumeStatus::Cancelled, None), &parked).unwrap();
        assert_eq!(none, Answer::NoChoice);
    }

    #[test]
    fn a_question_is_answered_with_the_forms_values_or_an_action() {
        let parked = Parked::Question(concierge::PendingElicitation {
            run_id: RunId::new("r"),
            call_id: CallId::new("call_1"),
            question: 0,
            elicitation: concierge::Elicitation {
                server: "orders".into(),
                message: "Where to?".into(),
                mode: concierge::ElicitationMode::Form {
                    schema: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
                },
            },
            text: "Where to?".into(),
            session: None,
        });
        let accept = read(&entry(ResumeStatus::Resolved, Some(json!({"city": "Oslo"}))), &parked).unwrap();
        assert_eq!(
            accept,
            Answer::Elicit(ElicitationAnswer::accept(json!({"city": "Oslo"})))
        );
        let decline = read(
            &entry(ResumeStatus::Resolved, Some(json!({"action": "decline"}))),
            &parked,
        )
        .unwrap();
        assert_eq!(
            decline,
            Answer::Elicit(ElicitationAnswer::new(ElicitationAction::Decline))
        );
        let cancel = read(&entry(ResumeStatus::Cancelled, None), &parked).unwrap();
        assert_eq!(
            cancel,
            Answer::Elicit(ElicitationAnswer::new(ElicitationAction::Cancel))
        );
        let refused = read(&entry(ResumeStatus::Resolved, Some(json!("Oslo"))), &parked).unwrap_err();
        assert_eq!(refused.code, ErrorCode::ResumeIncomplete);
    }
}
