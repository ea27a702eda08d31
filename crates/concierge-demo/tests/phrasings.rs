//! The calculator agent on its rules (no model) understands what a person
//! types, and refuses clearly what it cannot read.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use concierge::{RunOptions, Runtime};

async fn runtime() -> Runtime {
    concierge_demo::install(Runtime::builder())
        .in_memory()
        .build()
        .await
        .unwrap()
}

async fn ask(rt: &Runtime, session: &str, text: &str) -> String {
    let out = rt
        .client("calculator")
        .unwrap()
        .run(text, RunOptions::new().session_id(session))
        .await
        .unwrap();
    out.reply.unwrap_or_default()
}

#[tokio::test]
async fn phrasings_a_person_types_get_their_answer() {
    let rt = runtime().await;
    let cases = [
        ("calculate 5 + 3", "5 + 3 = 8"),
        ("what is 17 plus 25?", "17 + 25 = 42"),
        ("divide 10 by 2", "10 / 2 = 5"),
        ("what's 6 times 7", "6 * 7 = 42"),
        ("What's 6 times 7?", "6 * 7 = 42"),
        ("square root of 16", "sqrt(16) = 4"),
        ("what is the square root of 16?", "sqrt(16) = 4"),
        ("multiply 6 by 7", "6 * 7 = 42"),
        ("subtract 3 from 10", "10 - 3 = 7"),
        ("add 2 and 3", "2 + 3 = 5"),
        ("add 2 to 3", "2 + 3 = 5"),
        ("calculate 2e3 + 1", "2000 + 1 = 2001"),
        ("calculate 1.5E2 * 2", "150 * 2 = 300"),
        ("what is 10 - 4.", "10 - 4 = 6"),
        ("calculate 5 + 3, please", "5 + 3 = 8"),
        ("10 divided by 4", "10 / 4 = 2.5"),
        ("what is -3 times 4", "-3 * 4 = -12"),
        ("absolute value of -7", "|-7| = 7"),
    ];
    for (i, (question, answer)) in cases.iter().enumerate() {
        assert_eq!(ask(&rt, &format!("s{i}"), question).await, *answer, "{question}");
    }
}

#[tokio::test]
async fn what_it_cannot_read_is_refused_not_misread() {
    let rt = runtime().await;
    for (i, question) in ["calculate 1,000 + 1", "calculate 2e + 1", "what is 3x"]
        .iter()
        .enumerate()
    {
        let reply = ask(&rt, &format!("r{i}"), question).await;
        assert!(reply.starts_with("I can add, subtract"), "{question}: {reply}");
    }
    let reply = ask(&rt, "big", "calculate 1e400 + 1").await;
    assert!(reply.starts_with("I could not calculate that"), "{reply}");
}
