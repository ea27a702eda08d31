//! An eval's report: a table for people, JSON to keep and compare, JUnit
//! XML for CI.

use std::collections::BTreeMap;
use std::path::Path;

use quick_junit::{NonSuccessKind, Report as Junit, TestCase, TestCaseStatus, TestSuite};
use serde::{Deserialize, Serialize};

use super::case::CaseReport;
use crate::render::clean;

/// Every case's report, and the totals.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    /// The model the cases ran against (none: rules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The cases.
    pub cases: Vec<CaseReport>,
    /// The share of cases that passed, from 0 to 1.
    pub pass_rate: f64,
    /// Cases that passed.
    pub passed: usize,
    /// Model calls of every case.
    pub model_calls: u64,
    /// Tokens read, every case.
    pub input_tokens: u64,
    /// Tokens written, every case.
    pub output_tokens: u64,
}

impl Report {
    /// The report of `cases`.
    pub fn new(model: Option<String>, cases: Vec<CaseReport>) -> Self {
        let passed = cases.iter().filter(|c| c.passed).count();
        let pass_rate = if cases.is_empty() {
            0.0
        } else {
            passed as f64 / cases.len() as f64
        };
        Self {
            model,
            pass_rate,
            passed,
            model_calls: cases.iter().map(|c| c.model_calls).sum(),
            input_tokens: cases.iter().map(|c| c.input_tokens).sum(),
            output_tokens: cases.iter().map(|c| c.output_tokens).sum(),
            cases,
        }
    }

    /// The table: a line per case, a line per expectation that failed.
    pub fn table(&self) -> String {
        let width = self
            .cases
            .iter()
            .map(|c| c.name.chars().count())
            .max()
            .unwrap_or(4)
            .max(4);
        let mut out = format!(
            "{:<width$}  {:<6}  {:>6}  {:>5}  {:>8}  {:>9}\n",
            "case", "result", "checks", "calls", "tokens", "time"
        );
        for case in &self.cases {
            let held = case.checks.iter().filter(|c| c.passed).count();
            out.push_str(&format!(
                "{:<width$}  {:<6}  {:>6}  {:>5}  {:>8}  {:>7}ms\n",
                clean(&case.name),
                if case.passed { "pass" } else { "FAIL" },
                format!("{held}/{}", case.checks.len()),
                case.model_calls,
                case.input_tokens + case.output_tokens,
                case.latency_ms,
            ));
            if let Some(error) = &case.error {
                out.push_str(&format!("    error: {}\n", clean(error)));
            }
            for check in case.checks.iter().filter(|c| !c.passed) {
                out.push_str(&format!(
                    "    turn {}: expected {}: {}\n",
                    check.turn,
                    clean(&check.expected),
                    clean(&check.detail)
                ));
            }
        }
        out.push_str(&format!(
            "\n{} of {} cases passed ({:.0}%); {} model calls, {} tokens",
            self.passed,
            self.cases.len(),
            self.pass_rate * 100.0,
            self.model_calls,
            self.input_tokens + self.output_tokens
        ));
        let cost: f64 = self.cases.iter().filter_map(|c| c.cost_usd).sum();
        if cost > 0.0 {
            out.push_str(&format!(", ${cost:.4}"));
        }
        out.push('\n');
        out
    }

    /// The report as JUnit XML: a test case per eval case.
    pub fn junit(&self) -> Result<String, String> {
        let mut suite = TestSuite::new("concierge eval");
        for case in &self.cases {
            let status = if case.passed {
                TestCaseStatus::success()
            } else {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                let failed: Vec<String> = case
                    .error
                    .iter()
                    .cloned()
                    .chain(
                        case.checks
                            .iter()
                            .filter(|c| !c.passed)
                            .map(|c| format!("turn {}: expected {}: {}", c.turn, c.expected, c.detail)),
                    )
                    .collect();
                status.set_message(failed.first().cloned().unwrap_or_default());
                status.set_description(failed.join("\n"));
                status
            };
            let mut test = TestCase::new(case.name.as_str(), status);
            test.set_time(std::time::Duration::from_millis(case.latency_ms));
            suite.add_test_case(test);
        }
        let mut report = Junit::new("concierge");
        report.add_test_suite(suite);
        report
            .to_string()
            .map_err(|e| format!("the JUnit report could not be written: {e}"))
    }

    /// Writes the report as JSON to `path`.
    pub fn write_json(&self, path: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("{} cannot be written: {e}", path.display()))
    }

    /// Reads a report [`Report::write_json`] wrote.
    pub fn read_json(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{} cannot be read: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{} is not an eval report: {e}", path.display()))
    }

    /// This report beside `before`: each case that changed, and the totals.
    pub fn compare(&self, before: &Report) -> String {
        let old: BTreeMap<&str, &CaseReport> = before.cases.iter().map(|c| (c.name.as_str(), c)).collect();
        let mut out = String::new();
        let (mut fixed, mut broken) = (0, 0);
        for case in &self.cases {
            match old.get(case.name.as_str()) {
                None => out.push_str(&format!("new       {}\n", clean(&case.name))),
                Some(was) if was.passed && !case.passed => {
                    broken += 1;
                    out.push_str(&format!("now FAILS {}\n", clean(&case.name)));
                }
                Some(was) if !was.passed && case.passed => {
                    fixed += 1;
                    out.push_str(&format!("now passes {}\n", clean(&case.name)));
                }
                Some(_) => {}
            }
        }
        for case in &before.cases {
            if !self.cases.iter().any(|c| c.name == case.name) {
                out.push_str(&format!("gone      {}\n", clean(&case.name)));
            }
        }
        let name = |m: &Option<String>| m.clone().unwrap_or_else(|| "rules".into());
        out.push_str(&format!(
            "\n{} -> {}: pass rate {:.0}% -> {:.0}% ({fixed} fixed, {broken} broken); model calls {} -> {}; tokens {} -> {}\n",
            name(&before.model),
            name(&self.model),
            before.pass_rate * 100.0,
            self.pass_rate * 100.0,
            before.model_calls,
            self.model_calls,
            before.input_tokens + before.output_tokens,
            self.input_tokens + self.output_tokens,
        ));
        out
    }
}
