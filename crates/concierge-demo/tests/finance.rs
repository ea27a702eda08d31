//! The assistant's finance goal through the assistant's hub (first messages name
//! no agent), on rules and with a scripted model; finance.db checked afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod assistant;

use assistant::assistant;
use concierge::model::ScriptedModel;
use concierge::{ModelReply, RunStatus};

fn balance(a: &assistant::Assistant, id: &str) -> i64 {
    a.finance.account(id).unwrap().unwrap().balance_cents
}

#[tokio::test]
async fn rules_move_500_from_checking_to_savings_after_yes() {
    let a = assistant(None).await;
    let out = a.say("s1", "move $500 from checking to savings").await;
    assert_eq!(out.agent.as_str(), "finance", "{out:?}");
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    assert_eq!(
        out.pending_confirmation.as_ref().unwrap().message,
        "I'll move $500.00 from checking to savings. Proceed?"
    );
    assert_eq!((balance(&a, "CHK-1001"), balance(&a, "SAV-1002")), (245_000, 1_020_000));
    let out = a.say("s1", "yes").await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!(
        out.reply.as_deref(),
        Some(
            "Moved $500.00 from Everyday Checking to Rainy Day Savings. Everyday Checking now has $1,950.00 and Rainy Day Savings $10,700.00."
        )
    );
    assert_eq!((balance(&a, "CHK-1001"), balance(&a, "SAV-1002")), (195_000, 1_070_000));
    let transfers = a.finance.transfers().unwrap();
    assert_eq!(transfers.len(), 1);
    assert_eq!(
        (
            transfers[0].from_account.as_str(),
            transfers[0].to_account.as_str(),
            transfers[0].amount_cents
        ),
        ("CHK-1001", "SAV-1002", 50_000)
    );
}

#[tokio::test]
async fn rules_an_overdraft_is_refused_with_a_sentence_and_nothing_moves() {
    let a = assistant(None).await;
    a.say("s1", "transfer $5000 from checking to savings").await;
    let out = a.say("s1", "yes").await;
    assert_eq!(
        out.reply.as_deref(),
        Some(
            "I could not do that: Everyday Checking (CHK-1001) has $2,450.00, less than $5,000.00: I did not move anything. Try a smaller amount."
        ),
        "{out:?}"
    );
    assert_eq!((balance(&a, "CHK-1001"), balance(&a, "SAV-1002")), (245_000, 1_020_000));
    assert!(a.finance.transfers().unwrap().is_empty());
    assert_eq!(a.finance.db().applied_count().unwrap(), 0);
}

#[tokio::test]
async fn rules_someone_who_is_not_a_customer_is_told_who_is_and_how_to_ask_as_them() {
    let a = assistant(None).await;
    let out = a.say_as("hank", "s1", "what are my account balances?").await;
    let reply = out.reply.unwrap_or_default();
    assert!(reply.contains("I do not know a bank customer called 'hank'"), "{reply}");
    assert!(reply.contains("Priya Natarajan"), "{reply}");
    assert!(reply.contains("a token made for that user"), "{reply}");
}

#[tokio::test]
async fn rules_another_customer_moves_their_own_money() {
    let a = assistant(None).await;
    let out = a
        .say_as(
            "priya.natarajan@example.com",
            "s1",
            "move 20.50 from savings to checking",
        )
        .await;
    assert_eq!(
        out.pending_confirmation.as_ref().unwrap().message,
        "I'll move $20.50 from savings to checking. Proceed?"
    );
    a.say_as("priya.natarajan@example.com", "s1", "yes").await;
    assert_eq!((balance(&a, "SAV-2002"), balance(&a, "CHK-2001")), (297_950, 84_065));
    assert_eq!(balance(&a, "CHK-1001"), 245_000, "Jordan's money did not move");
}

#[tokio::test]
async fn rules_balances_validity_and_a_loan() {
    let a = assistant(None).await;
    let out = a.say("s1", "what are my account balances?").await;
    assert_eq!(out.agent.as_str(), "finance");
    assert_eq!(
        out.reply.as_deref(),
        Some(
            "Jordan Avery's balances: Everyday Checking (CHK-1001) $2,450.00; Rainy Day Savings (SAV-1002) $10,200.00."
        )
    );
    let out = a.say("s2", "is my checking account valid?").await;
    assert_eq!(
        out.reply.as_deref(),
        Some("Everyday Checking (CHK-1001) is valid and open, held by Jordan Avery.")
    );
    let out = a.say_as("sam", "s3", "is my savings account valid?").await;
    assert_eq!(
        out.reply.as_deref(),
        Some("Savings (SAV-3002) is frozen, so it cannot be used.")
    );

    let out = a.say("s4", "apply for a loan of $15000 for a new car").await;
    assert_eq!(out.agent.as_str(), "finance");
    assert_eq!(
        out.pending_confirmation.as_ref().unwrap().message,
        "I'll submit a loan application for $15,000.00 for a new car. Proceed?"
    );
    assert!(a.finance.loan_applications().unwrap().is_empty());
    let out = a.say("s4", "yes").await;
    assert_eq!(
        out.reply.as_deref(),
        Some(
            "Submitted loan application #1 for $15,000.00 over 36 months (a new car) for Jordan Avery. It is under review; expect an answer within 3 business days."
        )
    );
    let loans = a.finance.loan_applications().unwrap();
    assert_eq!(loans.len(), 1);
    assert_eq!(
        (
            loans[0].customer_id.as_str(),
            loans[0].amount_cents,
            loans[0].term_months,
            loans[0].status.as_str()
        ),
        ("C-1001", 1_500_000, 36, "under_review")
    );
}

#[tokio::test]
async fn model_moves_money_with_the_amount_as_text() {
    // The model passes the amount as the person wrote it ("$500"): the
    // schema says number, so the validator coerces it before the tool runs.
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call(
            "move_money",
            r#"{"amount": "$500", "from": "checking", "to": "savings"}"#,
        ))
        .reply(ModelReply::text("Moved $500.00 to savings."));
    let a = assistant(Some(model.clone())).await;
    let out = a
        .say("m1", "please move five hundred dollars from checking to savings")
        .await;
    assert_eq!(out.agent.as_str(), "finance", "{out:?}");
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    assert_eq!(
        out.pending_confirmation.as_ref().unwrap().message,
        "I'll move $500.00 from checking to savings. Proceed?"
    );
    let out = a.say("m1", "yes").await;
    assert_eq!(out.reply.as_deref(), Some("Moved $500.00 to savings."), "{out:?}");
    assert_eq!((balance(&a, "CHK-1001"), balance(&a, "SAV-1002")), (195_000, 1_070_000));
    assert_eq!(model.requests().len(), 2);
}

#[tokio::test]
async fn model_moves_money_with_the_amount_in_words() {
    // "five hundred" where the schema says number: the validator reads it.
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call(
            "move_money",
            r#"{"amount": "five hundred", "from": "checking", "to": "savings"}"#,
        ))
        .reply(ModelReply::text("Moved five hundred dollars to savings."));
    let a = assistant(Some(model)).await;
    let out = a
        .say("m2", "please move five hundred dollars from checking to savings")
        .await;
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    let out = a.say("m2", "yes").await;
    assert_eq!(out.status, RunStatus::Completed, "{out:?}");
    assert_eq!((balance(&a, "CHK-1001"), balance(&a, "SAV-1002")), (195_000, 1_070_000));
}
