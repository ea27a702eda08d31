//! Crash recovery of the assistant's side-effecting tools: the runtime runs
//! in a child process (this test binary, re-executed) that is killed with
//! SIGKILL inside `move_money`, `book_pto` or `checkout`, after the tool's
//! write committed and before its result was journaled. A new process on
//! the same databases resumes the run: the tool is called again with the
//! same idempotency key, and the data is as if it ran once.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;

use chrono::{NaiveDate, NaiveDateTime};
use concierge::config::load_agents;
use concierge::tool::DynTool;
use concierge::{RunOptions, Runtime, ToolContext, ToolError, ToolSpec, Toolset};
use concierge_demo::finance::{FinanceStore, tools as fin};
use concierge_demo::food::{FoodStore, tools as food};
use concierge_demo::hr::{HrStore, tools as hr};
use futures::future::BoxFuture;
use serde_json::Value;

const SESSION: &str = "s1";

fn now() -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2025, 3, 5)
        .unwrap()
        .and_hms_opt(10, 0, 0)
        .unwrap()
}

fn announce(what: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "READY {what}");
    let _ = out.flush();
}

/// The real tool, then (when `CRASH_AT` names it) a stop that never ends:
/// its write has committed, its result is not journaled yet.
struct StopsAfter(Arc<dyn DynTool>);

impl DynTool for StopsAfter {
    fn spec(&self) -> ToolSpec {
        self.0.spec()
    }

    fn call_json(&self, args: Value, cx: ToolContext) -> BoxFuture<'_, Result<Value, ToolError>> {
        Box::pin(async move {
            let result = self.0.call_json(args, cx).await;
            let name = self.0.spec().name.to_string();
            if std::env::var("CRASH_AT").ok().as_deref() == Some(name.as_str()) {
                announce(&name);
                futures::future::pending::<()>().await;
            }
            result
        })
    }
}

fn toolset(name: &str, tools: Vec<Arc<dyn DynTool>>) -> Toolset {
    tools
        .into_iter()
        .fold(Toolset::new(name), |set, tool| set.tool(StopsAfter(tool)))
}

fn agents_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/assistant/agents")
}

/// The child process. Not a test by itself: the tests below run it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "child process entry for the crash tests"]
async fn assistant_crash_child() {
    let dir = PathBuf::from(std::env::var("CRASH_DIR").expect("CRASH_DIR"));
    let kind = std::env::var("CRASH_KIND").expect("CRASH_KIND");
    let (agent, set) = match kind.as_str() {
        "finance" => {
            let s = Arc::new(FinanceStore::open(dir.join("finance.db")).at(now()));
            let tools: Vec<Arc<dyn DynTool>> = vec![
                Arc::new(fin::CheckAccountValid::new(Arc::clone(&s))),
                Arc::new(fin::GetAccountBalances::new(Arc::clone(&s))),
                Arc::new(fin::MoveMoney::new(Arc::clone(&s))),
                Arc::new(fin::SubmitLoanApplication::new(s)),
            ];
            ("finance", toolset("finance", tools))
        }
        "hr" => {
            let s = Arc::new(HrStore::open(dir.join("hr.db")).at(now()));
            let tools: Vec<Arc<dyn DynTool>> = vec![
                Arc::new(hr::CurrentPto::new(Arc::clone(&s))),
                Arc::new(hr::FuturePtoBalance::new(Arc::clone(&s))),
                Arc::new(hr::BookPto::new(Arc::clone(&s))),
                Arc::new(hr::PaycheckDepositStatus::new(s)),
            ];
            ("hr", toolset("hr", tools))
        }
        _ => {
            let s = Arc::new(FoodStore::open(dir.join("food.db")).at(now()));
            let tools: Vec<Arc<dyn DynTool>> = vec![
                Arc::new(food::BrowseMenu::new(Arc::clone(&s))),
                Arc::new(food::AddToCart::new(Arc::clone(&s))),
                Arc::new(food::ShowCart::new(Arc::clone(&s))),
                Arc::new(food::Checkout::new(s)),
            ];
            ("food", toolset("food", tools))
        }
    };
    let spec = load_agents(&agents_dir())
        .unwrap()
        .agents
        .into_iter()
        .find(|a| a.id.as_str() == agent)
        .unwrap();
    let rt = Runtime::builder()
        .sqlite(dir.join("concierge.db"))
        .toolset(set)
        .agent(spec)
        .build()
        .await
        .unwrap();
    let output = if std::env::var("CRASH_MODE").as_deref() == Ok("resume") {
        assert!(
            rt.recovered().contains(&SESSION.into()),
            "the run in flight is resumed: {:?}",
            rt.recovered()
        );
        // A liveness guard, not a timing assertion.
        tokio::time::timeout(std::time::Duration::from_secs(60), rt.wait(SESSION))
            .await
            .expect("the resumed run did not finish")
            .unwrap()
            .expect("a run was in flight")
    } else {
        let client = rt.client(agent).unwrap();
        let run = |text: &'static str| client.run(text, RunOptions::new().session_id(SESSION));
        let asked = match kind.as_str() {
            "finance" => run("move $500 from checking to savings").await.unwrap(),
            "hr" => run("I'd like to take 2025-03-07 off").await.unwrap(),
            _ => {
                run("add 2 margherita pizzas to my cart").await.unwrap();
                run("check out").await.unwrap()
            }
        };
        let pending = asked.pending_confirmation.expect("the change is asked about first");
        rt.answer(&pending, SESSION, true).await.unwrap()
    };
    println!("REPLY {}", output.reply.unwrap_or_default());
}

fn spawn(dir: &Path, kind: &str, crash_at: &str, mode: &str) -> (Child, BufReader<ChildStdout>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "assistant_crash_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("CRASH_DIR", dir)
        .env("CRASH_KIND", kind)
        .env("CRASH_AT", crash_at)
        .env("CRASH_MODE", mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdout)
}

fn read_until(stdout: &mut BufReader<ChildStdout>, prefix: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        let n = stdout.read_line(&mut line).unwrap();
        assert!(n > 0, "the child exited before printing {prefix:?}");
        if let Some(at) = line.find(prefix) {
            return line[at + prefix.len()..].trim().to_string();
        }
    }
}

/// Kills the child inside `tool`, checks (with `committed`) that its write
/// is in the database, then resumes in a new process; returns the reply.
fn killed_inside_then_resumed(dir: &Path, kind: &str, tool: &str, committed: impl Fn()) -> String {
    let (mut child, mut out) = spawn(dir, kind, tool, "run");
    read_until(&mut out, &format!("READY {tool}"));
    child.kill().unwrap(); // SIGKILL
    assert!(!child.wait().unwrap().success());
    committed();
    let (mut child, mut out) = spawn(dir, kind, "", "resume");
    let reply = read_until(&mut out, "REPLY ");
    assert!(child.wait().unwrap().success());
    reply
}

#[test]
fn killed_inside_move_money_both_balances_are_as_if_it_ran_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = FinanceStore::open(dir.path().join("finance.db")).at(now());
    let balances = || {
        (
            store.account("CHK-1001").unwrap().unwrap().balance_cents,
            store.account("SAV-1002").unwrap().unwrap().balance_cents,
        )
    };
    let reply = killed_inside_then_resumed(dir.path(), "finance", "move_money", || {
        assert_eq!(
            balances(),
            (195_000, 1_070_000),
            "the transfer committed before the crash"
        );
    });
    assert_eq!(
        reply,
        "Moved $500.00 from Everyday Checking to Rainy Day Savings. Everyday Checking now has $1,950.00 and Rainy Day Savings $10,700.00."
    );
    assert_eq!(balances(), (195_000, 1_070_000), "moved once, not twice");
    assert_eq!(store.transfers().unwrap().len(), 1);
    assert_eq!(store.db().applied_count().unwrap(), 1);
}

#[test]
fn killed_inside_book_pto_the_balance_drops_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = HrStore::open(dir.path().join("hr.db")).at(now());
    let pto = || store.employee("E-1001").unwrap().unwrap().pto_days;
    let reply = killed_inside_then_resumed(dir.path(), "hr", "book_pto", || {
        assert_eq!(pto(), 11.5, "the booking committed before the crash");
    });
    assert_eq!(
        reply,
        "Booked PTO for Friday, Mar 7 (1 working day). Jordan Avery has 11.5 days left."
    );
    assert_eq!(pto(), 11.5, "booked once, not twice");
    assert_eq!(store.bookings().unwrap().len(), 1);
}

#[test]
fn killed_inside_checkout_one_order_is_placed() {
    let dir = tempfile::tempdir().unwrap();
    let store = FoodStore::open(dir.path().join("food.db")).at(now());
    let reply = killed_inside_then_resumed(dir.path(), "food", "checkout", || {
        assert_eq!(store.orders().unwrap().len(), 1, "the order committed before the crash");
    });
    assert_eq!(
        reply,
        "Placed order #1 with Trattoria Demo: 2 × Margherita pizza, $25.00. It will be ready in about 30 minutes."
    );
    let orders = store.orders().unwrap();
    assert_eq!(orders.len(), 1, "ordered once, not twice");
    assert_eq!(orders[0].total_cents, 2_500);
    assert!(store.cart(&format!("session:{SESSION}")).unwrap().is_empty());
}
