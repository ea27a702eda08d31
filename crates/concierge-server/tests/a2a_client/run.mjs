// The official A2A JS client (@a2a-js/sdk) against `concierge serve`'s A2A
// endpoint, with the task manager's agents on their rules, through both
// bindings: an answer, a streamed answer, a confirmation answered by its
// data part and in words, re-subscribing to a task, a cancel, a push
// notification config (posted to a receiver here), and another tenant that
// finds nothing. Run by the ignored test `a2a_client` of
// concierge-cli (which starts the server) with A2A_URL, A2A_TOKEN_ACME and
// A2A_TOKEN_GLOBEX set:  node --test run.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { Role, TaskState } from "@a2a-js/sdk";
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory } from "@a2a-js/sdk/client";
import { TaskNotCancelableError, TaskNotFoundError } from "@a2a-js/sdk/errors";

const url = process.env.A2A_URL.replace(/\/$/, "");
const taskAgent = `${url}/a2a/agents/task`;

// A push receiver: what was posted to each path, with its headers.
const pushed = [];
const receiver = createServer((request, response) => {
  let body = "";
  request.on("data", (chunk) => (body += chunk));
  request.on("end", () => {
    pushed.push({ path: request.url, headers: request.headers, body: JSON.parse(body) });
    response.writeHead(200).end();
  });
});
await new Promise((ready) => receiver.listen(0, "127.0.0.1", ready));
receiver.unref();
const hooks = `http://127.0.0.1:${receiver.address().port}`;

/** The push to `path` of the task in `state` (waits for it). */
async function pushOf(path, state) {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const found = pushed.find((p) => p.path === path && p.body?.task?.status?.state === state);
    if (found) return found;
    await new Promise((wake) => setTimeout(wake, 50));
  }
  assert.fail(`no push of ${state} to ${path}: ${JSON.stringify(pushed)}`);
}

function withToken(token) {
  return (input, init = {}) => {
    const headers = new Headers(init.headers ?? {});
    headers.set("Authorization", `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
}

async function client(token, binding) {
  const fetchImpl = withToken(token);
  const transports = binding === "JSONRPC" ? [new JsonRpcTransportFactory({ fetchImpl })] : [new RestTransportFactory({ fetchImpl })];
  const factory = new ClientFactory({ transports, preferredTransports: [binding] });
  // The card is resolved relative to the base URL: the agent's path ends with a slash.
  return factory.createFromUrl(`${taskAgent}/`);
}

function message({ text, data, taskId, contextId }) {
  const parts = [];
  if (text !== undefined) parts.push({ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" });
  if (data !== undefined) parts.push({ content: { $case: "data", value: data }, metadata: undefined, filename: "", mediaType: "" });
  return {
    tenant: "",
    message: {
      messageId: randomUUID(),
      contextId: contextId ?? "",
      taskId: taskId ?? "",
      role: Role.ROLE_USER,
      parts,
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: undefined,
    metadata: undefined,
  };
}

const words = (task) => task.status.message.parts.map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
const dataOf = (task) => task.status.message.parts.find((p) => p.content?.$case === "data").content.value;

async function streamed(c, request) {
  const events = [];
  for await (const event of c.sendMessageStream(request)) events.push(event);
  assert.equal(events[0].payload.$case, "task", JSON.stringify(events[0]));
  const task = events[0].payload.value;
  for (const event of events.slice(1)) {
    if (event.payload.$case === "statusUpdate") task.status = event.payload.value.status;
  }
  return { events, task };
}

for (const binding of ["JSONRPC", "HTTP+JSON"]) {
  test(`${binding}: answers, streams, asks, resubscribes, cancels, and keeps tenants apart`, async () => {
    const acme = await client(process.env.A2A_TOKEN_ACME, binding);
    const globex = await client(process.env.A2A_TOKEN_GLOBEX, binding);

    const hello = await acme.sendMessage(message({ text: "hello" }));
    assert.equal(hello.status.state, TaskState.TASK_STATE_COMPLETED);
    assert.ok(hello.artifacts[0].parts[0].content.value.length > 0);
    const got = await acme.getTask({ tenant: "", id: hello.id, historyLength: undefined });
    assert.equal(got.status.state, TaskState.TASK_STATE_COMPLETED);

    const { events, task: again } = await streamed(acme, message({ text: "hello", contextId: hello.contextId }));
    assert.ok(events.length >= 2);
    assert.equal(again.contextId, hello.contextId);
    assert.equal(again.status.state, TaskState.TASK_STATE_COMPLETED);

    const asked = await acme.sendMessage(message({ text: "create a task to review the budget due Friday with high priority" }));
    assert.equal(asked.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    assert.match(words(asked), /^I'll /);
    const call = dataOf(asked);
    assert.equal(call.kind, "confirmation");
    await assert.rejects(
      acme.sendMessage(message({ data: { callId: call.callId, fingerprint: "wrong", decision: "approve" }, taskId: asked.id })),
      /fingerprint/,
    );
    const done = await acme.sendMessage(message({ data: { callId: call.callId, fingerprint: call.fingerprint, decision: "approve" }, taskId: asked.id }));
    assert.equal(done.id, asked.id);
    assert.equal(done.status.state, TaskState.TASK_STATE_COMPLETED);
    assert.match(done.artifacts[0].parts[0].content.value, /Created task/);

    const { task: waiting } = await streamed(acme, message({ text: "create a task to water the plants", contextId: asked.contextId }));
    assert.equal(waiting.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    const resumed = [];
    for await (const event of acme.resubscribeTask({ tenant: "", id: waiting.id })) resumed.push(event);
    assert.equal(resumed[0].payload.$case, "task");
    assert.equal(resumed[0].payload.value.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    const { task: yes } = await streamed(acme, message({ text: "yes", taskId: waiting.id }));
    assert.equal(yes.status.state, TaskState.TASK_STATE_COMPLETED);

    const parked = await acme.sendMessage(message({ text: "create a task to feed the cat" }));
    assert.equal(parked.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    const cancelled = await acme.cancelTask({ tenant: "", id: parked.id, metadata: undefined });
    assert.equal(cancelled.status.state, TaskState.TASK_STATE_CANCELED);
    await assert.rejects(acme.cancelTask({ tenant: "", id: parked.id, metadata: undefined }), TaskNotCancelableError);

    // A push notification config on a task that waits: its completion is posted.
    const watched = await acme.sendMessage(message({ text: "create a task to call the bank" }));
    assert.equal(watched.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
    const path = `/${binding}-js`;
    const config = await acme.createTaskPushNotificationConfig({
      tenant: "",
      id: "js",
      taskId: watched.id,
      url: `${hooks}${path}`,
      token: "tok-js",
      authentication: undefined,
    });
    assert.equal(config.id, "js");
    const configs = await acme.listTaskPushNotificationConfig({ tenant: "", taskId: watched.id, pageSize: 0, pageToken: "" });
    assert.equal(configs.configs.length, 1);
    await assert.rejects(
      globex.listTaskPushNotificationConfig({ tenant: "", taskId: watched.id, pageSize: 0, pageToken: "" }),
      TaskNotFoundError,
    );
    const approved = await acme.sendMessage(message({ text: "yes", taskId: watched.id }));
    assert.equal(approved.status.state, TaskState.TASK_STATE_COMPLETED);
    const push = await pushOf(path, "TASK_STATE_COMPLETED");
    assert.equal(push.headers["x-a2a-notification-token"], "tok-js");
    assert.equal(push.body.task.id, watched.id);
    await acme.deleteTaskPushNotificationConfig({ tenant: "", taskId: watched.id, id: "js" });
    const left = await acme.listTaskPushNotificationConfig({ tenant: "", taskId: watched.id, pageSize: 0, pageToken: "" });
    assert.equal(left.configs.length, 0);

    await assert.rejects(globex.getTask({ tenant: "", id: done.id, historyLength: undefined }), TaskNotFoundError);
    await assert.rejects(globex.cancelTask({ tenant: "", id: parked.id, metadata: undefined }), TaskNotFoundError);
    await assert.rejects(globex.sendMessage(message({ text: "yes", taskId: waiting.id })), TaskNotFoundError);
    const theirs = await globex.listTasks({ tenant: "", contextId: "", status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: "" });
    assert.equal(theirs.tasks.length, 0);
  });
}
