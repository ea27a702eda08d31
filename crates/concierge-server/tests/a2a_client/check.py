"""The official A2A Python SDK (PyPI a2a-sdk) against `concierge serve`'s
A2A endpoint, with the task manager's agents on their rules, through both
bindings (JSON-RPC and HTTP+JSON): an answer, a streamed answer, a
confirmation answered by its data part and in words, re-subscribing to a
task, a cancel, push notifications (a config sent with a message and one
set on the task, posted to a receiver here), and another tenant that finds
nothing.

Run by the ignored test `a2a_client` of concierge-cli (which starts the
server), with A2A_URL, A2A_TOKEN_ACME and A2A_TOKEN_GLOBEX set. Exits
non-zero, saying what failed, on the first surprise.
"""

import asyncio
import http.server
import json
import os
import sys
import threading
import time
import uuid

import httpx
from a2a.client import ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import A2AError, TaskNotCancelableError, TaskNotFoundError
from google.protobuf import json_format, struct_pb2

URL = os.environ["A2A_URL"].rstrip("/")
TASK_AGENT = f"{URL}/a2a/agents/task"
ACME = os.environ["A2A_TOKEN_ACME"]
GLOBEX = os.environ["A2A_TOKEN_GLOBEX"]

# What the push receiver was sent: (path, headers, body).
PUSHED = []


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        PUSHED.append((self.path.strip("/"), {k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def receiver():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


async def pushed(path, state):
    """The push to `path` of the task in `state` (waits for it)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for p, headers, body in list(PUSHED):
            if p == path and body.get("task", {}).get("status", {}).get("state") == state:
                return headers, body
        await asyncio.sleep(0.05)
    check(False, f"a push of {state} to /{path}: {PUSHED}")


def check(condition, what):
    if not condition:
        print(f"FAILED: {what}", file=sys.stderr)
        sys.exit(1)


def message(text=None, data=None, task_id=None, context_id=None):
    parts = []
    if text is not None:
        parts.append(Part(text=text))
    if data is not None:
        parts.append(Part(data=json_format.ParseDict(data, struct_pb2.Value())))
    m = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=parts)
    if task_id:
        m.task_id = task_id
    if context_id:
        m.context_id = context_id
    return SendMessageRequest(message=m)


async def client(token, binding, streaming, url=TASK_AGENT):
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    config = ClientConfig(
        httpx_client=http,
        streaming=streaming,
        supported_protocol_bindings=[binding],
    )
    return await create_client(url, client_config=config)


async def events(c, request):
    return [event async for event in c.send_message(request)]


def final_task(evs):
    """The task a send answered with (blocking), or as its last update left it."""
    check(evs and evs[0].HasField("task"), f"a task first: {evs}")
    task = evs[0].task
    for ev in evs[1:]:
        if ev.HasField("status_update"):
            task.status.CopyFrom(ev.status_update.status)
    return task


def data_of(task):
    for part in task.status.message.parts:
        if part.HasField("data"):
            return json_format.MessageToDict(part.data)
    check(False, f"a data part in {task.status}")


def text_of(task):
    return "".join(p.text for p in task.status.message.parts if p.text)


async def run(binding):
    blocking = await client(ACME, binding, streaming=False)
    streaming = await client(ACME, binding, streaming=True)
    globex = await client(GLOBEX, binding, streaming=False)
    check(blocking._card.name == "Task manager" or blocking._card.skills[0].id == "task", "the task agent's card")

    # An answer.
    task = final_task(await events(blocking, message("hello")))
    check(task.status.state == TaskState.TASK_STATE_COMPLETED, f"hello completes: {task}")
    check(task.artifacts and task.artifacts[0].parts[0].text, f"a reply: {task}")
    got = await blocking.get_task(GetTaskRequest(id=task.id))
    check(got.status.state == TaskState.TASK_STATE_COMPLETED, "GetTask reads it back")

    # Streaming: the task, then updates, ending completed.
    evs = await events(streaming, message("hello", context_id=task.context_id))
    streamed = final_task(evs)
    check(len(evs) >= 2, f"updates after the task: {evs}")
    check(streamed.context_id == task.context_id, "the same context")
    check(streamed.status.state == TaskState.TASK_STATE_COMPLETED, f"streamed: {evs}")
    listed = await blocking.list_tasks(ListTasksRequest(context_id=task.context_id))
    check(len(listed.tasks) == 2, f"two tasks in the context: {listed}")

    # A confirmation: input-required, answered by its data part.
    asked = final_task(await events(blocking, message("create a task to review the budget due Friday with high priority")))
    check(asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, f"asks: {asked}")
    check(text_of(asked).startswith("I'll "), f"in words: {asked.status}")
    data = data_of(asked)
    check(data["kind"] == "confirmation" and data["fingerprint"], f"the call: {data}")
    try:
        await events(blocking, message(data={"callId": data["callId"], "fingerprint": "wrong", "decision": "approve"}, task_id=asked.id))
        check(False, "a wrong fingerprint is refused")
    except A2AError as refused:
        check("fingerprint" in str(refused), f"the refusal names the fingerprint: {refused}")
    done = final_task(await events(blocking, message(data={"callId": data["callId"], "fingerprint": data["fingerprint"], "decision": "approve"}, task_id=asked.id)))
    check(done.id == asked.id, "the same task")
    check(done.status.state == TaskState.TASK_STATE_COMPLETED, f"approved: {done}")
    check("Created task" in done.artifacts[0].parts[0].text, f"created: {done.artifacts}")

    # In words, streamed; and re-subscribing while it waits.
    evs = await events(streaming, message("create a task to water the plants", context_id=asked.context_id))
    waiting = final_task(evs)
    check(waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, f"asks again: {evs}")
    again = [ev async for ev in streaming.subscribe(SubscribeToTaskRequest(id=waiting.id))]
    check(again and again[0].HasField("task"), f"re-subscribed: {again}")
    check(again[0].task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, f"still waits: {again}")
    yes = final_task(await events(streaming, message("yes", task_id=waiting.id)))
    check(yes.status.state == TaskState.TASK_STATE_COMPLETED, f"yes: {yes}")

    # A cancel of a task that waits on a confirmation.
    parked = final_task(await events(blocking, message("create a task to feed the cat")))
    check(parked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, f"asks: {parked}")
    cancelled = await blocking.cancel_task(CancelTaskRequest(id=parked.id))
    check(cancelled.status.state == TaskState.TASK_STATE_CANCELED, f"cancelled: {cancelled}")
    try:
        await blocking.cancel_task(CancelTaskRequest(id=parked.id))
        check(False, "an ended task is not cancelable")
    except TaskNotCancelableError:
        pass

    # Push notifications: a config sent with the message sees its first stop;
    # one set on the task later sees the next.
    request = message("create a task to call the bank")
    request.configuration.CopyFrom(
        SendMessageConfiguration(
            task_push_notification_config=TaskPushNotificationConfig(url=f"{HOOKS}/{binding}-first", token="tok-1")
        )
    )
    watched = final_task(await events(blocking, request))
    check(watched.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, f"asks: {watched}")
    headers, body = await pushed(f"{binding}-first", "TASK_STATE_INPUT_REQUIRED")
    check(body["task"]["id"] == watched.id, f"the task pushed: {body}")
    check(headers.get("x-a2a-notification-token") == "tok-1", f"the token: {headers}")
    second = await blocking.create_task_push_notification_config(
        TaskPushNotificationConfig(task_id=watched.id, id="second", url=f"{HOOKS}/{binding}-second", token="tok-2")
    )
    check(second.id == "second" and second.task_id == watched.id, f"set: {second}")
    configs = await blocking.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id=watched.id))
    check(len(configs.configs) == 2, f"two configs: {configs}")
    try:
        await globex.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id=watched.id))
        check(False, "another tenant's task has no configs to list")
    except TaskNotFoundError:
        pass
    yes = final_task(await events(blocking, message("yes", task_id=watched.id)))
    check(yes.status.state == TaskState.TASK_STATE_COMPLETED, f"yes: {yes}")
    await pushed(f"{binding}-first", "TASK_STATE_COMPLETED")
    headers, _ = await pushed(f"{binding}-second", "TASK_STATE_COMPLETED")
    check(headers.get("x-a2a-notification-token") == "tok-2", f"the second token: {headers}")
    await blocking.delete_task_push_notification_config(
        DeleteTaskPushNotificationConfigRequest(task_id=watched.id, id="second")
    )
    configs = await blocking.list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest(task_id=watched.id))
    check(len(configs.configs) == 1, f"one left: {configs}")

    # Another tenant finds nothing.
    for call in (
        lambda: globex.get_task(GetTaskRequest(id=done.id)),
        lambda: globex.cancel_task(CancelTaskRequest(id=parked.id)),
        lambda: events(globex, message("yes", task_id=waiting.id)),
    ):
        try:
            await call()
            check(False, "another tenant's task is not found")
        except TaskNotFoundError:
            pass
    theirs = await globex.list_tasks(ListTasksRequest())
    check(len(theirs.tasks) == 0, f"globex lists none of acme's: {theirs}")
    for c in (blocking, streaming, globex):
        await c.close()
    print(f"{binding}: ok")


async def main():
    global HOOKS
    HOOKS = receiver()
    for binding in ("JSONRPC", "HTTP+JSON"):
        await run(binding)


asyncio.run(main())
