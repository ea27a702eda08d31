"""A third-party A2A 1.0 agent made with the official Python SDK (PyPI
`a2a-sdk`, its server side), for crates/concierge-cli/tests/a2a_remote_sdk.rs:
concierge's A2A client calls it as a tool.

One agent, "booking" (streaming, unless `A2A_SERVER_STREAMING=0`): "book <thing>" makes a task that goes
`working` ("Looking for <thing>…"), then `input-required` with the
question "Book <thing> for 120 EUR?". A reply on the same task of "yes"
completes it with the artifact "Booked <thing>." and the task metadata
`{"usage": {"inputTokens": 50, "outputTokens": 7}}`; anything else completes
it with "Nothing booked.".

`GET /stats` says how many tasks it made, how many bookings and how many
tasks were cancelled, so the test can tell a resent message from a followed
task. When `A2A_SERVER_TOKEN` is
set, the A2A endpoint wants `Authorization: Bearer <it>` (401 otherwise; the
card and the stats stay public, as an agent's card usually is).

Prints `READY http://127.0.0.1:PORT` on stdout once it listens.
"""

import asyncio
import os
import socket
import sys

import uvicorn
from starlette.applications import Starlette
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.responses import JSONResponse
from starlette.routing import Route

from a2a.helpers.proto_helpers import (
    new_task_from_user_message,
    new_text_message,
    new_text_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    TaskState,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH

RPC_PATH = "/a2a"


class Stats:
    """What the agent did: tasks made, bookings made, tasks cancelled."""

    def __init__(self) -> None:
        self.tasks = 0
        self.bookings = 0
        self.cancelled = 0


class BookingAgent(AgentExecutor):
    """Books what it is asked to, once the person says yes."""

    def __init__(self, stats: Stats) -> None:
        self.stats = stats
        # The thing each waiting task would book, by task id.
        self.waiting: dict[str, str] = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input().strip()
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
            self.stats.tasks += 1
        updater = TaskUpdater(event_queue, task.id, task.context_id)

        def say(words: str):
            return new_text_message(words, context_id=task.context_id, task_id=task.id)

        thing = self.waiting.pop(task.id, None)
        if thing is None:
            # A new request: look, then ask.
            thing = text.removeprefix("book").strip() or "a seat"
            await updater.start_work(say(f"Looking for {thing}…"))
            self.waiting[task.id] = thing
            await updater.requires_input(say(f"Book {thing} for 120 EUR?"))
            return
        # The person's reply to the question.
        await updater.start_work(say("Booking…"))
        if text.lower().strip(" .!") == "yes":
            self.stats.bookings += 1
            await updater.add_artifact([new_text_part(f"Booked {thing}.")], name="booking")
            await updater.update_status(
                TaskState.TASK_STATE_COMPLETED,
                metadata={"usage": {"inputTokens": 50, "outputTokens": 7}},
            )
        else:
            await updater.add_artifact([new_text_part("Nothing booked.")], name="booking")
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            return
        self.waiting.pop(task.id, None)
        self.stats.cancelled += 1
        await TaskUpdater(event_queue, task.id, task.context_id).cancel()


class BearerToken(BaseHTTPMiddleware):
    """Wants `Authorization: Bearer <token>` on the A2A endpoint."""

    def __init__(self, app, token: str) -> None:
        super().__init__(app)
        self.token = token

    async def dispatch(self, request, call_next):
        if request.url.path.startswith(RPC_PATH):
            if request.headers.get("authorization") != f"Bearer {self.token}":
                return JSONResponse({"error": "a valid bearer token is required"}, status_code=401)
        return await call_next(request)


def card(base: str, streaming: bool) -> AgentCard:
    return AgentCard(
        name="booking",
        description="Books seats after asking the person.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=base + RPC_PATH, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="book",
                name="Book",
                description="Books a seat, asking the person first.",
                tags=["booking"],
                examples=["book a seat to Oslo"],
            )
        ],
    )


async def main() -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{listener.getsockname()[1]}"
    stats = Stats()
    agent_card = card(base, os.environ.get("A2A_SERVER_STREAMING", "1") != "0")
    handler = DefaultRequestHandler(
        agent_executor=BookingAgent(stats),
        task_store=InMemoryTaskStore(),
        agent_card=agent_card,
    )

    async def stats_route(_request):
        return JSONResponse({"tasks": stats.tasks, "bookings": stats.bookings, "cancelled": stats.cancelled})

    routes = [
        *create_agent_card_routes(agent_card, card_url=AGENT_CARD_WELL_KNOWN_PATH),
        *create_jsonrpc_routes(handler, rpc_url=RPC_PATH),
        Route("/stats", stats_route, methods=["GET"]),
    ]
    app = Starlette(routes=routes)
    token = os.environ.get("A2A_SERVER_TOKEN")
    if token:
        app.add_middleware(BearerToken, token=token)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    serving = asyncio.create_task(server.serve(sockets=[listener]))
    while not server.started:
        if serving.done():
            serving.result()
            sys.exit("the server stopped before it started")
        await asyncio.sleep(0.02)
    print(f"READY {base}", flush=True)
    await serving


if __name__ == "__main__":
    asyncio.run(main())
