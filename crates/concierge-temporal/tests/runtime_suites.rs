//! The runtime's integration tests on the Temporal engine: the shared cases
//! of `crates/concierge/tests/cases/` (which concierge's own roots run on the
//! embedded engine), each runtime on a task queue prefix of its own with its
//! workers in this process, against one Temporal dev server for the whole
//! binary (ignored: needs the dev server,
//! `CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh) cargo test -p concierge-temporal --test runtime_suites -- --ignored`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use concierge::RuntimeBuilder;
use concierge_temporal::{ModelCalls, Temporal, TemporalConfig, Workers};
use tokio::sync::OnceCell;

mod support;

/// The address of the binary's dev server, started by the first test that
/// needs it.
static SERVER: OnceCell<String> = OnceCell::const_new();

/// Runs the server (`$0 "$@"`) and stops it when this test process is gone,
/// however it ended: nothing else would, as a static is never dropped.
const WATCHDOG: &str = r#"
"$0" "$@" &
server=$!
while kill -0 "$PPID" 2>/dev/null && kill -0 "$server" 2>/dev/null; do sleep 1; done
kill "$server" 2>/dev/null
wait "$server"
"#;

/// Starts a dev server (in-memory database, free loopback port) under the
/// watchdog and waits until it answers; its log is in Cargo's temporary
/// directory for the tests.
async fn start_server() -> String {
    let port = support::free_port();
    let address = format!("127.0.0.1:{port}");
    let log = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("runtime_suites-temporal.log");
    let _ = std::fs::remove_file(&log);
    let attributes = support::SEARCH_ATTRIBUTES.map(String::from);
    let server = support::command(port, None, &attributes, &log);
    let mut watchdog = Command::new("sh")
        .arg("-c")
        .arg(WATCHDOG)
        .arg(server.get_program())
        .args(server.get_args())
        .stdin(Stdio::null())
        .stdout(std::fs::OpenOptions::new().append(true).open(&log).unwrap())
        .stderr(std::fs::OpenOptions::new().append(true).open(&log).unwrap())
        .spawn()
        .unwrap();
    // Reaped if it ends before this process does (a server that failed).
    std::thread::spawn(move || watchdog.wait());
    support::wait_ready(&address, &log).await;
    address
}

/// The engine a shared case builds its runtimes on: Temporal, each runtime
/// with its own task queues and workflow ids and every worker in this
/// process (so its scripted model and tools are the ones that run).
pub struct EngineUnderTest {
    address: String,
    /// This test's number, in the prefixes of its durable stores.
    test: usize,
    /// How the sessions call their model.
    model_calls: ModelCalls,
}

impl EngineUnderTest {
    /// Model deltas are streamed: the model calls run in this process's
    /// workers, beside the subscriber.
    pub const STREAMS_MODEL_DELTAS: bool = true;

    /// The tools an MCP server offered are remembered in this process only
    /// (`remember_toolset`).
    pub const REMEMBERS_TOOLSETS: bool = false;

    /// The binary's dev server, started if no test has yet; sessions call
    /// their model as `model_calls` says.
    async fn start(model_calls: ModelCalls) -> Self {
        static TESTS: AtomicUsize = AtomicUsize::new(0);
        let address = SERVER.get_or_init(start_server).await.clone();
        Self {
            address,
            test: TESTS.fetch_add(1, Ordering::Relaxed),
            model_calls,
        }
    }

    /// `builder` on the queues and workflow ids of `prefix`, with every
    /// worker in this process.
    fn on_prefix(&self, builder: RuntimeBuilder, prefix: String) -> RuntimeBuilder {
        let config = TemporalConfig::new(self.address.clone())
            .namespace(support::NAMESPACE)
            .task_queue_prefix(prefix)
            .poll_interval(Duration::from_millis(50))
            .model_calls(self.model_calls);
        builder.engine(Temporal::new(config).workers(Workers::all()))
    }

    /// `builder` on this engine: a runtime of its own, sharing nothing with
    /// another built here.
    pub fn on(&self, builder: RuntimeBuilder) -> RuntimeBuilder {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        self.on_prefix(builder, format!("rt{}", NEXT.fetch_add(1, Ordering::Relaxed)))
    }

    /// `builder` on this test's durable store `name`: runtimes built on the
    /// same name share their sessions (the same queues and workflow ids),
    /// as processes on one Temporal namespace do.
    pub fn on_store(&self, builder: RuntimeBuilder, name: &str) -> RuntimeBuilder {
        self.on_prefix(builder, format!("test{}-{name}", self.test))
    }
}

/// A runtime builder on the engine under test.
pub trait OnEngine {
    /// This builder on `engine`.
    fn on_engine(self, engine: &EngineUnderTest) -> Self;

    /// This builder on `engine`'s durable store `name`.
    fn on_engine_store(self, engine: &EngineUnderTest, name: &str) -> Self;
}

impl OnEngine for RuntimeBuilder {
    fn on_engine(self, engine: &EngineUnderTest) -> Self {
        engine.on(self)
    }

    fn on_engine_store(self, engine: &EngineUnderTest, name: &str) -> Self {
        engine.on_store(self, name)
    }
}

/// Each named case of the module `$cases` as two tests on Temporal, one
/// with the model called by activities on the models queue, one by local
/// activities (a case left out is dead code, which the build refuses),
/// ignored for `$why` (by default: it needs the dev server).
macro_rules! on_temporal {
    ($cases:ident; ignore = $why:literal; $($case:ident),* $(,)?) => {$(
        mod $case {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[ignore = $why]
            async fn model_activities() {
                let engine = crate::EngineUnderTest::start(concierge_temporal::ModelCalls::Activity).await;
                crate::$cases::$case(&engine).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[ignore = $why]
            async fn local_model_calls() {
                let engine = crate::EngineUnderTest::start(concierge_temporal::ModelCalls::Local).await;
                crate::$cases::$case(&engine).await
            }
        }
    )*};
    ($cases:ident; $($case:ident),* $(,)?) => {
        on_temporal!($cases;
            ignore = "needs the Temporal dev server: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh)";
            $($case),*
        );
    };
}

#[path = "../../concierge/tests/cases/runtime.rs"]
mod runtime_cases;

mod runtime {
    on_temporal!(runtime_cases;
        arguments_are_coerced_and_a_schema_error_is_corrected_by_the_model,
        a_panicking_tool_is_a_tool_error_and_the_run_goes_on,
        confirmation_parks_the_run_and_only_the_exact_call_is_approved,
        a_declined_call_is_reported_to_the_model,
        arguments_are_validated_before_the_person_is_asked,
        results_and_messages_over_their_limits_fail_fast_and_say_so,
        events_are_ordered_and_a_subscriber_resumes_from_any_seq,
        events_replayed_from_the_database_are_the_events_that_were_emitted,
        a_live_subscriber_sees_a_later_run,
        typed_errors_for_bad_calls,
        an_agent_without_model_or_rules_is_refused_with_what_to_do,
        policy_overrides_apply_to_new_runs,
        introspection_lists_agents_toolsets_and_schemas,
        ending_a_session_cancels_its_run,
        failing_models_are_retried_then_reported,
        a_model_naming_a_missing_tool_or_sending_bad_json_is_corrected,
        a_templated_confirmation_is_answered_by_a_plain_yes_through_send,
        a_tool_reads_who_asks_and_the_blackboard_from_its_context,
        a_new_session_naming_no_agent_starts_at_the_hub_which_routes_by_rules,
        the_hub_asks_the_model_when_no_rule_is_confident,
        single_mode_has_no_hub_and_offers_no_hub_tools,
    );
}

#[path = "../../concierge/tests/cases/agents_as_tools.rs"]
mod agents_as_tools_cases;

mod agents_as_tools {
    on_temporal!(agents_as_tools_cases;
        a_router_answers_a_compound_statement_once_with_each_specialists_part_in_order,
        a_specialists_choice_and_confirmation_reach_the_person_through_the_router,
        a_new_runtime_on_the_same_database_finishes_a_parked_tree_without_repeating_a_child,
        a_prompt_template_and_a_prompt_builder_write_the_childs_message,
        what_a_tool_writes_is_declared_in_rust_or_by_configuration,
        a_subscriber_that_stops_anywhere_in_a_childs_events_resumes_with_every_event_exactly_once,
        ending_the_router_ends_the_specialist_waiting_under_it,
    );
}

#[path = "../../concierge/tests/cases/tenants.rs"]
mod tenants_cases;

mod tenants {
    on_temporal!(tenants_cases;
        an_opened_session_is_durable_listed_and_its_first_message_goes_to_its_agent,
        another_tenants_session_is_not_found_and_runs_nothing,
        a_child_session_belongs_to_its_parents_tenant_and_a_write_says_what_changed,
        a_message_for_a_busy_session_is_refused_queued_or_interrupts_as_asked,
        an_erased_person_s_conversations_are_gone_and_another_s_stay,
        a_conversation_begun_just_before_an_erase_is_erased_with_it,
        erasing_a_conversation_erases_its_child_runs_and_not_one_named_like_them,
    );
}

#[path = "../../concierge/tests/cases/confirmation_answers.rs"]
mod confirmation_answers_cases;

mod confirmation_answers {
    on_temporal!(confirmation_answers_cases;
        a_change_the_rules_miss_is_read_by_the_model_and_shown_back_before_it_runs,
        a_plain_no_never_reaches_the_model,
        a_model_answer_that_is_no_decision_leaves_the_call_parked_with_a_reminder,
        without_a_model_the_rules_alone_answer,
    );
}

#[path = "../../concierge/tests/cases/observability.rs"]
mod observability_cases;

mod observability {
    on_temporal!(observability_cases;
        usage_and_cost_per_call_run_and_session,
        a_models_deltas_reach_a_live_subscriber_where_the_engine_streams_them,
        a_subscriber_that_reads_late_still_gets_every_delta,
    );
}

#[path = "../../concierge/tests/cases/typed_calls.rs"]
mod typed_calls_cases;

mod typed_calls {
    on_temporal!(typed_calls_cases; a_custom_planners_typed_call_runs_through_the_runtime);
}

#[path = "../../concierge/tests/cases/mcp.rs"]
mod mcp_cases;

mod mcp {
    on_temporal!(mcp_cases;
        a_server_that_will_not_start_is_an_error_quoting_its_stderr,
        http_calls_errors_idempotency_keys_and_list_changed,
        http_server_gone_mid_conversation_is_reported_then_reconnected,
        http_a_tool_without_annotations_asks_first_and_a_read_only_one_does_not,
        http_a_call_that_times_out_is_cancelled_on_the_server,
        http_a_call_whose_caller_stops_waiting_is_cancelled_on_the_server,
        http_structured_content_counts_against_the_result_limit,
        http_an_answer_over_the_message_limit_is_reported_as_too_large_not_as_a_timeout,
        stdio_an_answer_over_the_message_limit_is_reported_as_too_large_not_as_a_timeout,
        a_server_answering_an_unsupported_protocol_version_is_refused,
    );
    on_temporal!(mcp_cases;
        ignore = "needs the Temporal dev server and npm packages: CONCIERGE_TEMPORAL_BIN=$(scripts/setup-temporal.sh), scripts/setup-mcp.sh";
        stdio_discovery_filtering_coercion_rejection_and_content,
        stdio_included_tools_the_server_lacks_is_an_error_naming_what_it_offers,
        stdio_server_killed_mid_call_is_reported_and_restarted,
        stdio_server_that_hangs_times_out_on_its_own_timeout_and_is_restarted,
        stdio_progress_extends_a_calls_timeout_and_is_reported,
        stdio_destructive_tools_ask_first_unless_read_only_or_the_server_is_trusted,
    );
}

#[path = "../../concierge/tests/cases/elicitation.rs"]
mod elicitation_cases;

mod elicitation {
    on_temporal!(elicitation_cases;
        accept_decline_and_cancel_reach_the_server_and_content_that_does_not_fit_is_refused,
        a_childs_question_is_asked_and_answered_through_the_parent,
        sampling_is_denied_by_default_allowed_within_the_cap_or_asked_and_its_tokens_count,
    );
}

#[path = "../../concierge/tests/cases/schedule_timer.rs"]
mod schedule_timer_cases;

mod schedule_timer {
    on_temporal!(schedule_timer_cases; a_schedule_fires_once_even_when_its_process_stopped_before_it_was_due);
}

#[path = "../../concierge/tests/cases/forks.rs"]
mod forks_cases;

mod forks {
    on_temporal!(forks_cases;
        a_fork_carries_the_conversation_and_does_not_redo_what_was_done,
        a_replay_runs_against_another_model_without_side_effects,
    );
}

#[path = "../../concierge/tests/cases/guardrails.rs"]
mod guardrails_cases;

mod guardrails {
    on_temporal!(guardrails_cases; guardrails_redact_and_stop_at_every_stage);
}

#[path = "../../concierge/tests/cases/replay.rs"]
mod replay_cases;

mod replay {
    on_temporal!(replay_cases; a_session_replays_against_the_tools_its_run_saw);
}
