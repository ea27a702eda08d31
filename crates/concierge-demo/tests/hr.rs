//! The assistant's HR goal through the assistant's hub (first messages name no
//! agent), on rules and with a scripted model; hr.db checked afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod assistant;

use assistant::{assistant, day};
use concierge::model::ScriptedModel;
use concierge::{ModelReply, RunStatus};

fn balance(a: &assistant::Assistant, id: &str) -> f64 {
    a.hr.employee(id).unwrap().unwrap().pto_days
}

#[tokio::test]
async fn rules_someone_who_is_not_an_employee_is_told_who_is_and_how_to_ask_as_them() {
    let a = assistant(None).await;
    let out = a.say_as("hank", "s1", "how much PTO do I have?").await;
    let reply = out.reply.unwrap_or_default();
    assert!(reply.contains("I do not know an employee called 'hank'"), "{reply}");
    assert!(reply.contains("Jordan Avery"), "{reply}");
    assert!(reply.contains("a token made for that user"), "{reply}");
    assert!(!reply.contains("Ask with --user"), "{reply}");
}

#[tokio::test]
async fn rules_take_next_friday_off_books_after_yes_and_the_balance_drops_by_one_day() {
    let a = assistant(None).await;
    let out = a.say("s1", "I'd like to take next Friday off").await;
    assert_eq!(out.agent.as_str(), "hr", "{out:?}");
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    let pending = out.pending_confirmation.as_ref().unwrap();
    assert_eq!(pending.tool.as_str(), "book_pto");
    assert_eq!(pending.message, "I'll book PTO for next Friday. Proceed?");
    assert_eq!(balance(&a, "E-1001"), 12.5, "nothing is booked before yes");
    assert!(a.hr.bookings().unwrap().is_empty());

    let out = a.say("s1", "yes").await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(
        out.reply.as_deref(),
        Some("Booked PTO for Friday, Mar 7 (1 working day). Jordan Avery has 11.5 days left.")
    );
    assert_eq!(balance(&a, "E-1001"), 11.5);
    let bookings = a.hr.bookings().unwrap();
    assert_eq!(bookings.len(), 1);
    let b = &bookings[0];
    assert_eq!(
        (b.employee_id.as_str(), b.start, b.end, b.days),
        ("E-1001", day(3, 7), day(3, 7), 1.0)
    );
    assert_eq!(balance(&a, "E-1002"), 4.0, "only the asker's balance changed");
    // Booking finished the goal: the next message is routed afresh.
    let sessions = a.rt.sessions().await.unwrap();
    assert_eq!(
        sessions.iter().find(|s| s.id.as_str() == "s1").unwrap().agent.as_str(),
        "hub"
    );
}

#[tokio::test]
async fn rules_pto_is_booked_in_whole_days_and_other_hours_are_asked_about_again() {
    let a = assistant(None).await;
    let out = a.say("s1", "book PTO on next Friday for 8 hours").await;
    assert_eq!(out.agent.as_str(), "hr", "{out:?}");
    assert_eq!(
        out.pending_confirmation.as_ref().map(|p| p.message.as_str()),
        Some("I'll book PTO for next Friday. Proceed?"),
        "{out:?}"
    );
    a.say("s1", "no").await;
    for (session, asked) in [
        ("s2", "book PTO on next Friday for 4 hours"),
        ("s3", "I'd like to take half a day off tomorrow"),
        ("s4", "can I take two hours off on Monday?"),
    ] {
        let out = a.say(session, asked).await;
        assert_eq!(out.agent.as_str(), "hr", "{asked}: {out:?}");
        assert_eq!(out.status, RunStatus::Completed, "{asked}: {out:?}");
        let reply = out.reply.unwrap_or_default();
        assert!(
            reply.starts_with("I book PTO in whole working days of 8 hours"),
            "{asked}: {reply}"
        );
    }
    assert!(a.hr.bookings().unwrap().is_empty());
    assert_eq!(balance(&a, "E-1001"), 12.5);
}

#[tokio::test]
async fn rules_a_declined_booking_books_nothing() {
    let a = assistant(None).await;
    let out = a.say("s1", "book PTO from next Monday to next Wednesday").await;
    assert_eq!(out.agent.as_str(), "hr");
    assert_eq!(
        out.pending_confirmation.as_ref().unwrap().message,
        "I'll book PTO for next Monday to next Wednesday. Proceed?"
    );
    let out = a.say("s1", "no").await;
    assert_eq!(out.reply.as_deref(), Some("OK, I did not do that."));
    assert_eq!(balance(&a, "E-1001"), 12.5);
    assert!(a.hr.bookings().unwrap().is_empty());
}

#[tokio::test]
async fn rules_a_range_takes_its_working_days_and_too_much_is_refused() {
    let a = assistant(None).await;
    // Friday 7 to Tuesday 11 March: Fri, Mon, Tue.
    a.say_as("sam", "s1", "book PTO from next Friday to March 11").await;
    let out = a.say_as("sam", "s1", "yes").await;
    assert_eq!(
        out.reply.as_deref(),
        Some(
            "I could not do that: Sam Okafor has 0.5 days of PTO, and Friday, Mar 7 to Tuesday, Mar 11 takes 3 days: I did not book anything."
        ),
        "{out:?}"
    );
    assert_eq!(balance(&a, "E-1003"), 0.5);
    assert!(a.hr.bookings().unwrap().is_empty());
    assert_eq!(a.hr.db().applied_count().unwrap(), 0, "a refusal is not recorded");

    a.say("s2", "book PTO from next Friday to March 11").await;
    let out = a.say("s2", "yes").await;
    assert_eq!(
        out.reply.as_deref(),
        Some("Booked PTO for Friday, Mar 7 to Tuesday, Mar 11 (3 working days). Jordan Avery has 9.5 days left.")
    );
    assert_eq!(balance(&a, "E-1001"), 9.5);
}

#[tokio::test]
async fn rules_balances_now_and_ahead_and_the_paycheck() {
    let a = assistant(None).await;
    let out = a.say("s1", "how much PTO do I have?").await;
    assert_eq!(out.agent.as_str(), "hr");
    assert_eq!(
        out.reply.as_deref(),
        Some("Jordan Avery has 12.5 days of PTO (100 hours).")
    );
    let out = a.say("s2", "how much PTO will I have on June 1?").await;
    assert_eq!(
        out.reply.as_deref(),
        Some(
            "On 2025-06-01 Jordan Avery will have 16.25 days of PTO: 12.5 days now plus 3 monthly accruals of 1.25 days."
        )
    );
    let out = a.say("s3", "was my paycheck deposited?").await;
    assert_eq!(out.agent.as_str(), "hr");
    assert_eq!(
        out.reply.as_deref(),
        Some(
            "Jordan Avery's paycheck of $2,884.62 for Feb 28 was deposited to the First Demo Bank account ending 4321 on Feb 27. The next payday is Friday, Mar 14."
        )
    );
    let out = a.say_as("priya", "s4", "did my paycheck reach the bank?").await;
    let reply = out.reply.unwrap();
    assert!(
        reply.starts_with("Priya Natarajan's paycheck of $3,125.00 for Feb 28 was not deposited: the bank returned"),
        "{reply}"
    );
    assert_eq!(a.hr.db().applied_count().unwrap(), 0, "questions change nothing");
}

#[tokio::test]
async fn model_take_next_friday_off_books_after_yes_and_the_balance_drops_by_one_day() {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("book_pto", r#"{"start": "next Friday"}"#))
        .reply(ModelReply::text("Done: next Friday is booked off."));
    let a = assistant(Some(model.clone())).await;
    let out = a.say("m1", "I'd like to take next Friday off").await;
    assert_eq!(out.agent.as_str(), "hr", "the hub routed by HR's intents");
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    assert_eq!(
        out.pending_confirmation.as_ref().unwrap().message,
        "I'll book PTO for next Friday. Proceed?"
    );
    assert_eq!(balance(&a, "E-1001"), 12.5);
    let out = a.say("m1", "yes").await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(out.reply.as_deref(), Some("Done: next Friday is booked off."));
    assert_eq!(balance(&a, "E-1001"), 11.5);
    let bookings = a.hr.bookings().unwrap();
    assert_eq!(
        (bookings.len(), bookings[0].start),
        (1, day(3, 7)),
        "next Friday, from the question's day"
    );
    assert_eq!(model.requests().len(), 2, "the routing needed no model call");
}

#[tokio::test]
async fn model_projects_the_balance_from_a_date_in_words() {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call("future_pto_balance", r#"{"date": "Jun 1"}"#))
        .reply(ModelReply::text("You will have 16.25 days."));
    let a = assistant(Some(model.clone())).await;
    let out = a.say("m1", "how much PTO will I have on June 1?").await;
    assert_eq!(out.agent.as_str(), "hr");
    assert_eq!(out.reply.as_deref(), Some("You will have 16.25 days."));
    let result = match &out.tool_executions[0].outcome {
        concierge::ToolOutcome::Ok(v) => v.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(result["date"], "2025-06-01");
    assert_eq!(result["projected_pto_days"], 16.25);
}
