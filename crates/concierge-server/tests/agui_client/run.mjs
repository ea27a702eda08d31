// The official AG-UI client (`@ag-ui/client`'s HttpAgent, from npm) against
// real `concierge serve` processes: examples/tasks at AGUI_URL and
// examples/crm (a router calling specialists as tools) at AGUI_CRM_URL. The client validates every event and the order of the stream itself:
// a stream it rejects fails the run. Run by the Rust test
// crates/concierge-cli/tests/agui_client.rs (node --test run.mjs).

import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { HttpAgent, buildResumeArray } from "@ag-ui/client";

const base = process.env.AGUI_URL;
const crm = process.env.AGUI_CRM_URL;
if (!base || !crm) {
  throw new Error("AGUI_URL and AGUI_CRM_URL name the servers, e.g. http://127.0.0.1:8080");
}

/** An agent on a new thread of the server at `server`, with the person's first message. */
function agentWith(text, server = base) {
  return new HttpAgent({
    url: `${server}/api/v1/agui`,
    threadId: `node-${randomUUID()}`,
    initialMessages: [{ id: randomUUID(), role: "user", content: text }],
  });
}

/** Runs the agent; every event the client applied, and the run's outcome. */
async function run(agent, parameters = {}) {
  const events = [];
  let outcome;
  let error;
  await agent.runAgent(parameters, {
    onEvent({ event }) {
      events.push(event);
    },
    onRunFinishedEvent(params) {
      outcome = params.outcome;
    },
    onRunErrorEvent({ event }) {
      error = event;
    },
  });
  return { events, outcome, error, types: events.map((e) => e.type) };
}

function textOf(events) {
  return events
    .filter((e) => e.type === "TEXT_MESSAGE_CONTENT")
    .map((e) => e.delta)
    .join("");
}

test("a run streams text, tool calls, state and messages the client accepts", async () => {
  const agent = agentWith("what should I work on?");
  const { events, outcome, types } = await run(agent, { forwardedProps: { agent: "tracking" } });
  assert.equal(types[0], "RUN_STARTED");
  assert.equal(types.at(-1), "RUN_FINISHED");
  assert.equal(outcome, "success");
  const start = events.find((e) => e.type === "TOOL_CALL_START");
  assert.ok(start, `a tool call: ${types}`);
  const result = events.find((e) => e.type === "TOOL_CALL_RESULT");
  assert.equal(result.toolCallId, start.toolCallId);
  assert.ok(textOf(events).length > 0, "the agent's answer as text");
  assert.ok(types.includes("STATE_SNAPSHOT") && types.includes("MESSAGES_SNAPSHOT"), `${types}`);
  // The client's state is the session's blackboard, with the run's goal.
  assert.equal(agent.state.goal.description, "what should I work on?");
  // The client's messages are the session's: the question, the call, its
  // result and the answer.
  const roles = agent.messages.map((m) => m.role);
  assert.deepEqual(roles.slice(0, 1), ["user"]);
  assert.ok(roles.includes("tool") && roles.at(-1) === "assistant", `${roles}`);
  assert.equal(agent.messages.at(-1).content, textOf(events));

  // The thread goes on with the client's next message.
  agent.addMessage({ id: randomUUID(), role: "user", content: "how am I doing?" });
  const next = await run(agent);
  assert.equal(next.outcome, "success");
  assert.ok(agent.messages.length > roles.length, "the history grew");
});

test("a confirmation is an interrupt that a resume approves", async () => {
  const agent = agentWith("create a task to fix the printer");
  const first = await run(agent, { forwardedProps: { agent: "task" } });
  assert.equal(first.outcome, "interrupt");
  assert.equal(agent.pendingInterrupts.length, 1);
  const [interrupt] = agent.pendingInterrupts;
  assert.equal(interrupt.reason, "tool_call");
  assert.match(interrupt.message, /fix the printer/);
  assert.ok(interrupt.responseSchema.properties.approved);
  assert.ok(new Date(interrupt.expiresAt) > new Date(), interrupt.expiresAt);
  const call = first.events.find((e) => e.type === "TOOL_CALL_START");
  assert.equal(interrupt.toolCallId, call.toolCallId);

  const resume = buildResumeArray(agent.pendingInterrupts, {
    [interrupt.id]: { status: "resolved", payload: { approved: true } },
  });
  const second = await run(agent, { resume });
  assert.equal(second.outcome, "success", `${second.types}`);
  assert.deepEqual(agent.pendingInterrupts, []);
  const result = second.events.find((e) => e.type === "TOOL_CALL_RESULT");
  assert.equal(result.toolCallId, interrupt.toolCallId);
  assert.match(textOf(second.events), /Created task #\d+ 'Fix the printer'/);

  // The same answer again is refused with RUN_ERROR: nothing runs twice.
  const replay = new HttpAgent({ url: `${base}/api/v1/agui`, threadId: agent.threadId });
  const replayed = await run(replay, { resume }).catch((e) => ({ thrown: e }));
  const refusal = replayed.thrown ? replayed.thrown : replayed.error;
  assert.ok(refusal, "the replay is refused");
  assert.match(String(refusal.message), /answered already/);
});

test("a choice is an interrupt answered with an option, then a confirmation", async () => {
  const agent = agentWith("complete the fix");
  const first = await run(agent, { forwardedProps: { agent: "task" } });
  assert.equal(first.outcome, "interrupt");
  const [choice] = agent.pendingInterrupts;
  assert.equal(choice.reason, "input_required");
  assert.equal(choice.metadata.kind, "choice");
  const second = choice.metadata.options[1];
  assert.equal(second.number, 2);

  const chosen = await run(agent, {
    resume: buildResumeArray(agent.pendingInterrupts, {
      [choice.id]: { status: "resolved", payload: { option: 2 } },
    }),
  });
  assert.equal(chosen.outcome, "interrupt");
  const [confirmation] = agent.pendingInterrupts;
  assert.equal(confirmation.metadata.kind, "confirmation");
  // "#5 'Fix logout button alignment' (89% match)": the chosen task's number.
  const chosenTask = second.label.split(" ")[0];
  assert.ok(confirmation.message.includes(`mark ${chosenTask},`), `${confirmation.message} / ${second.label}`);

  const denied = await run(agent, {
    resume: buildResumeArray(agent.pendingInterrupts, {
      [confirmation.id]: { status: "resolved", payload: { approved: false } },
    }),
  });
  assert.equal(denied.outcome, "success");
  const resolved = denied.events.find((e) => e.type === "CUSTOM" && e.name === "confirmation_resolved");
  assert.equal(resolved.value.approved, false);
});

test("agents called as tools are subagents, and a subagent's question is the run's interrupt", async () => {
  const agent = agentWith("Log a call with John about the renewal", crm);
  const first = await run(agent);
  assert.equal(first.outcome, "interrupt", `${first.types}`);
  const started = first.events.find((e) => e.type === "SUBAGENT_STARTED");
  assert.equal(started.name, "interaction");
  const parent = first.events.find((e) => e.type === "TOOL_CALL_START" && e.subagentRunId === undefined);
  assert.equal(started.parentToolCallId, parent.toolCallId);
  const inner = first.events.find((e) => e.type === "TOOL_CALL_START" && e.subagentRunId === started.subagentRunId);
  assert.equal(inner.toolCallName, "add_interaction_to_contact");
  const [question] = agent.pendingInterrupts;
  assert.equal(question.subagentRunId, started.subagentRunId);
  assert.equal(question.message, "Which John do you mean?");
  const suspended = first.events.find((e) => e.type === "SUBAGENT_FINISHED");
  assert.deepEqual(suspended.outcome, { type: "suspended", interruptIds: [question.id] });

  const answered = await run(agent, {
    resume: buildResumeArray(agent.pendingInterrupts, {
      [question.id]: { status: "resolved", payload: { option: 2 } },
    }),
  });
  assert.equal(answered.outcome, "success", `${answered.types}`);
  assert.match(textOf(answered.events), /John Park/);
});
