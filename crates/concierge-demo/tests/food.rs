//! The assistant's food ordering goal through the assistant's hub (first
//! messages name no agent), on rules and with a scripted model; food.db
//! checked afterwards.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod assistant;

use assistant::assistant;
use concierge::model::ScriptedModel;
use concierge::{ModelReply, RunStatus};

#[tokio::test]
async fn rules_menu_cart_and_checkout_after_yes() {
    let a = assistant(None).await;
    let out = a.say("s1", "show me the food menu").await;
    assert_eq!(out.agent.as_str(), "food", "{out:?}");
    assert!(
        out.reply
            .unwrap()
            .starts_with("Trattoria Demo's menu: #1 Margherita pizza $12.50;")
    );

    let out = a.say("s1", "add 2 margherita pizzas to my cart").await;
    assert_eq!(
        out.reply.as_deref(),
        Some("Added 2 × Margherita pizza to your cart. Your cart: 2 × Margherita pizza (2 items), $25.00.")
    );
    let out = a.say("s1", "add a tiramisu to my cart").await;
    assert_eq!(
        out.reply.as_deref(),
        Some("Added 1 × Tiramisu to your cart. Your cart: 2 × Margherita pizza, 1 × Tiramisu (3 items), $31.50.")
    );
    let out = a.say("s1", "check out").await;
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    assert_eq!(
        out.pending_confirmation.as_ref().unwrap().message,
        "I'll place your order of 2 × Margherita pizza, 1 × Tiramisu for $31.50. Proceed?"
    );
    assert!(a.food.orders().unwrap().is_empty());
    let out = a.say("s1", "yes").await;
    assert_eq!(
        out.reply.as_deref(),
        Some(
            "Placed order #1 with Trattoria Demo: 2 × Margherita pizza, 1 × Tiramisu, $31.50. It will be ready in about 30 minutes."
        )
    );
    let orders = a.food.orders().unwrap();
    assert_eq!(orders.len(), 1);
    assert_eq!((orders[0].owner.as_str(), orders[0].total_cents), ("session:s1", 3_150));
    assert_eq!(orders[0].lines.len(), 2);
    assert!(
        a.food.cart("session:s1").unwrap().is_empty(),
        "checking out empties the cart"
    );
    // Back at the hub; an empty cart has nothing to check out.
    let out = a.say("s1", "check out").await;
    assert_eq!(out.status, RunStatus::Completed);
    assert_eq!(
        out.reply.as_deref(),
        Some("Your cart is empty. Say \"show the food menu\" to pick something.")
    );
    assert_eq!(a.food.orders().unwrap().len(), 1);
}

#[tokio::test]
async fn rules_carts_belong_to_sessions_or_users_and_a_vague_dish_is_a_choice() {
    let a = assistant(None).await;
    a.say("s1", "add 1 lemonade to my cart").await;
    a.say_as("jordan", "s2", "add 3 garlic bread to my cart").await;
    assert_eq!(a.food.cart("session:s1").unwrap().len(), 1);
    assert_eq!(a.food.cart("user:jordan").unwrap()[0].quantity, 3);

    let out = a.say("s3", "add a pizza to my cart").await;
    assert_eq!(out.status, RunStatus::AwaitingChoice, "{out:?}");
    assert!(a.food.cart("session:s3").unwrap().is_empty());
    let out = a.say("s3", "the second").await;
    let reply = out.reply.unwrap();
    assert!(reply.starts_with("Added 1 × Pepperoni pizza to your cart."), "{reply}");
    // Declining the checkout keeps the cart.
    a.say("s3", "check out").await;
    let out = a.say("s3", "no").await;
    assert_eq!(
        out.reply.as_deref(),
        Some("OK, I did not place the order. Your cart still has 1 × Pepperoni pizza.")
    );
    assert_eq!(a.food.cart("session:s3").unwrap().len(), 1);
    assert!(a.food.orders().unwrap().is_empty());
}

#[tokio::test]
async fn model_adds_then_checks_out_what_it_showed() {
    let model = ScriptedModel::new()
        .reply(ModelReply::tool_call(
            "add_to_cart",
            r#"{"item": "margherita pizza", "quantity": "2"}"#,
        ))
        .reply(ModelReply::text("Two margheritas are in your cart ($25.00)."))
        .reply(ModelReply::tool_call("show_cart", "{}"))
        .reply(ModelReply::tool_call(
            "checkout",
            r#"{"items": "2 × Margherita pizza", "total": "25"}"#,
        ))
        .reply(ModelReply::text("Order #1 is placed."));
    let a = assistant(Some(model.clone())).await;
    let out = a.say("m1", "add 2 margherita pizzas to my cart").await;
    assert_eq!(out.agent.as_str(), "food", "{out:?}");
    assert_eq!(out.reply.as_deref(), Some("Two margheritas are in your cart ($25.00)."));
    let out = a.say("m1", "check out").await;
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    assert_eq!(
        out.pending_confirmation.as_ref().unwrap().message,
        "I'll place your order of 2 × Margherita pizza for $25.00. Proceed?"
    );
    let out = a.say("m1", "yes").await;
    assert_eq!(out.reply.as_deref(), Some("Order #1 is placed."), "{out:?}");
    let orders = a.food.orders().unwrap();
    assert_eq!((orders.len(), orders[0].total_cents), (1, 2_500));
    assert!(a.food.cart("session:m1").unwrap().is_empty());
}

#[tokio::test]
async fn one_session_books_pto_orders_food_and_moves_money() {
    let a = assistant(None).await;
    let out = a.say("s1", "I'd like to take next Friday off").await;
    assert_eq!(out.agent.as_str(), "hr");
    a.say("s1", "yes").await;
    let out = a.say("s1", "add 2 margherita pizzas to my cart").await;
    assert_eq!(out.agent.as_str(), "food", "{out:?}");
    let out = a.say("s1", "check out").await;
    assert_eq!(out.status, RunStatus::AwaitingConfirmation, "{out:?}");
    a.say("s1", "yes").await;
    let out = a.say("s1", "move $500 from checking to savings").await;
    assert_eq!(out.agent.as_str(), "finance", "{out:?}");
    a.say("s1", "yes").await;
    assert_eq!(a.hr.employee("E-1001").unwrap().unwrap().pto_days, 11.5);
    assert_eq!(a.food.orders().unwrap().len(), 1);
    assert_eq!(a.finance.account("SAV-1002").unwrap().unwrap().balance_cents, 1_070_000);
}
