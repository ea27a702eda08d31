"""The official A2A Python SDK (PyPI a2a-sdk) against `concierge serve`'s
A2A endpoint, with the task manager's agents on their rules, through both
bindings (JSON-RPC and HTTP+JSON): an answer, a streamed answer, a
confirmation answered by its data part and in words, re-subscribing to a
task, a cancel, and another tenant that finds nothing.

Run by the ignored test `a2a_client` of concierge-cli (which starts the
server), with A2A_URL, A2A_TOKEN_ACME and A2A_TOKEN_GLOBEX set. Exits
non-zero, saying what failed, on the first surprise.
"""

import asyncio
import os
import sys
import uuid

import httpx
from a2a.client import ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import A2AError, TaskNotCancelableError, TaskNotFoundError
from google.protobuf import json_format, struct_pb2

URL = os.environ["A2A_URL"].rstrip("/")
TASK_AGENT = f"{URL}/a2a/agents/task"
ACME = os.environ["A2A_TOKEN_ACME"]
GLOBEX = os.environ["A2A_TOKEN_GLOBEX"]


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
    for binding in ("JSONRPC", "HTTP+JSON"):
        await run(binding)


asyncio.run(main())
