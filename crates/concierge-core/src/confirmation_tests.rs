use serde_json::json;

use super::*;

fn create_task() -> ToolSpec {
    ToolSpec::new(
        "create_task",
        "Creates a task.",
        json!({
            "type": "object",
            "properties": {
                "title": {"type": "string", "title": "Title"},
                "priority": {"type": "string", "enum": ["low", "medium", "high"]},
                "due": {"type": "string"},
                "estimate_hours": {"type": "integer", "minimum": 0}
            },
            "required": ["title"]
        }),
    )
}

// 2024-03-06 was a Wednesday.
const WEDNESDAY: Timestamp = Timestamp(1_709_683_200_000 + 3_600_000);

#[test]
fn a_template_is_filled_from_the_arguments() {
    let spec = create_task().confirm("I'll create a task '{title}' due {due}, priority {priority}. Proceed?");
    let args = json!({"title": "Fix login bug", "due": "Friday", "priority": "high"});
    assert_eq!(
        confirmation_message(&spec, &args),
        "I'll create a task 'Fix login bug' due Friday, priority high. Proceed?"
    );
    assert_eq!(
        fill_template("{title} {{literal}} {missing} {not a name}", &args),
        "Fix login bug {literal} not set {not a name}"
    );
    let optional = "I'll create '{title}'[ due {due}][, assigned to {assignee}] [sic]. Proceed?";
    assert_eq!(
        fill_template(optional, &args),
        "I'll create 'Fix login bug' due Friday [sic]. Proceed?"
    );
}

#[test]
fn the_default_lists_arguments_by_title_never_as_json() {
    let spec = create_task();
    let args = json!({"priority": "high", "title": "Fix login bug", "estimate_hours": 3});
    assert_eq!(
        confirmation_message(&spec, &args),
        "Run *create task* with Title: Fix login bug, Estimate hours: 3, Priority: high? (yes/no)"
    );
    assert_eq!(confirmation_message(&spec, &json!({})), "Run *create task*? (yes/no)");
    let nested = ToolSpec::new("sendEmail", "d", json!({"type": "object"}));
    assert_eq!(
        confirmation_message(
            &nested,
            &json!({"to": ["a@x", "b@x"], "urgent": true, "meta": {"thread_id": 4}})
        ),
        "Run *send email* with Meta: thread id: 4, To: a@x, b@x, Urgent: yes? (yes/no)"
    );
}

#[test]
fn yes_and_no_in_their_common_forms() {
    let spec = create_task();
    let args = json!({"title": "x"});
    for yes in [
        "yes",
        "Y",
        "yep!",
        "Sure.",
        "ok",
        "okay",
        "go ahead",
        "Confirm",
        "approve",
        "yes please",
        "Yes, thanks",
    ] {
        assert_eq!(interpret_answer(yes, &spec, &args, WEDNESDAY), Answer::Approve, "{yes}");
    }
    for no in ["no", "N", "nope", "cancel", "stop", "don't", "Don’t", "no thanks"] {
        assert_eq!(
            interpret_answer(no, &spec, &args, WEDNESDAY),
            Answer::Decline { reason: None },
            "{no}"
        );
    }
    assert_eq!(
        interpret_answer("no, wrong task", &spec, &args, WEDNESDAY),
        Answer::Decline {
            reason: Some("wrong task".into())
        }
    );
    for unclear in [
        "what is 2 plus 3",
        "nothing",
        "yesterday",
        "maybe",
        "yes, but something else",
    ] {
        assert_eq!(
            interpret_answer(unclear, &spec, &args, WEDNESDAY),
            Answer::Unclear,
            "{unclear}"
        );
    }
}

#[test]
fn changes_are_read_against_the_schema() {
    let spec = create_task();
    let args = json!({"title": "Review code", "priority": "low"});
    assert_eq!(
        interpret_answer("Yes, but high priority and due Friday", &spec, &args, WEDNESDAY),
        Answer::Amend {
            arguments: json!({"title": "Review code", "priority": "high", "due": "Friday"})
        }
    );
    assert_eq!(
        interpret_answer(
            "priority medium, estimate hours 4, title 'Review the code'",
            &spec,
            &args,
            WEDNESDAY
        ),
        Answer::Amend {
            arguments: json!({"title": "Review the code", "priority": "medium", "estimate_hours": 4})
        }
    );
    // A change that changes nothing is a plain yes (after a yes) or not an answer.
    assert_eq!(
        interpret_answer("yes, low priority", &spec, &args, WEDNESDAY),
        Answer::Approve
    );
    assert_eq!(
        interpret_answer("low priority", &spec, &args, WEDNESDAY),
        Answer::Unclear
    );
}

#[test]
fn dates_resolve_to_iso_for_date_fields() {
    let spec = ToolSpec::new(
        "book",
        "d",
        json!({"type": "object", "properties": {"due_date": {"type": "string", "format": "date"}}}),
    );
    let answer = |text: &str| match interpret_answer(text, &spec, &json!({}), WEDNESDAY) {
        Answer::Amend { arguments } => arguments["due_date"].clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(answer("yes, due Friday"), json!("2024-03-08"));
    assert_eq!(answer("due tomorrow"), json!("2024-03-07"));
    assert_eq!(answer("by next wednesday"), json!("2024-03-13"));
    assert_eq!(answer("due date 2024-04-01"), json!("2024-04-01"));
    assert_eq!(civil_from_days(0), (1970, 1, 1));
    assert_eq!(civil_from_days(19_788), (2024, 3, 6));
}

#[test]
fn checks_catch_wrong_values_in_words() {
    let spec = create_task();
    assert_eq!(
        check_arguments(&spec, &json!({"title": "x", "priority": "high"})),
        Ok(())
    );
    assert_eq!(
        check_arguments(&spec, &json!({"title": "x", "priority": "urgent"})),
        Err("Priority must be one of: low, medium, high".into())
    );
    assert_eq!(
        check_arguments(&spec, &json!({"priority": "low"})),
        Err("Title is required".into())
    );
    assert_eq!(
        check_arguments(&spec, &json!({"title": "x", "estimate_hours": -1})),
        Err("Estimate hours must be at least 0".into())
    );
    assert_eq!(
        check_arguments(&spec, &json!({"title": 4})),
        Err("Title must be text".into())
    );
}

#[test]
fn a_money_placeholder_shows_dollars_and_cents() {
    let template = "I'll move {amount|money} from {from} to {to}.[ Fee {fee|money}.] Proceed?";
    let ask = |args: Value| fill_template(template, &args);
    assert_eq!(
        ask(json!({"amount": 500, "from": "checking", "to": "savings"})),
        "I'll move $500.00 from checking to savings. Proceed?"
    );
    assert_eq!(
        ask(json!({"amount": "$1,250.5", "from": "a", "to": "b", "fee": 0.999})),
        "I'll move $1,250.50 from a to b. Fee $1.00. Proceed?"
    );
    // Text that is not an amount shows as written; an unknown filter is literal.
    assert_eq!(
        ask(json!({"amount": "five hundred", "from": "a", "to": "b"})),
        "I'll move five hundred from a to b. Proceed?"
    );
    assert_eq!(fill_template("{amount|shout}", &json!({"amount": 1})), "{amount|shout}");
    assert_eq!(fill_template("{n|money}", &json!({"n": 1234567.891})), "$1,234,567.89");
    assert_eq!(fill_template("{n|money}", &json!({"n": -20})), "-$20.00");
}
