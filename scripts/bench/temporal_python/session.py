"""The session workflow of the Python comparison worker: what concierge's
`concierge.session` workflow does per turn, written as a Python worker
would write it.

One workflow per session holds the conversation (OpenAI chat messages).
Each turn is an update (`turn`, sent with update-with-start, so the first
turn creates the workflow): the question is appended, the model activity
answers with a `calculator` tool call, the tool activity (on the agent's own
tools queue) computes it, the model activity answers again with the final
text, which the update returns. A session started with `local_model` in
its queues calls the model with local activities (in the sessions worker).
"""

import json
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

SYSTEM = (
    "You are a calculator assistant. For every computation, call the calculator tool: "
    "operation is one of add, subtract, multiply, divide, sqrt, abs; a is the first number; "
    "b is the second number (leave it out for sqrt and abs). Then answer with the result in one short sentence."
)

CALCULATOR = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Performs a basic arithmetic operation: add, subtract, multiply, divide "
        "(two operands a and b), sqrt or abs (one operand a).",
        "parameters": {
            "type": "object",
            "properties": {
                "operation": {
                    "type": "string",
                    "enum": ["add", "subtract", "multiply", "divide", "sqrt", "abs"],
                    "description": "The operation: add, subtract, multiply, divide, sqrt or abs.",
                },
                "a": {"type": "number", "description": "The first operand."},
                "b": {
                    "type": ["number", "null"],
                    "description": "The second operand; leave it out for sqrt and abs.",
                },
            },
            "required": ["operation", "a"],
        },
    },
}

# As concierge's workflow: retries for calls that may run again safely (the
# model, the read-only calculator), 600 s to complete, heartbeat timeouts.
RETRIES = RetryPolicy(
    initial_interval=timedelta(milliseconds=500),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=5,
)

# A turn asks the model at most this many times (a model that keeps calling
# tools is cut off, as concierge's run budget does).
MAX_MODEL_CALLS = 8


@workflow.defn(name="bench.session")
class Session:
    # The start input reaches the constructor, so an update that arrives
    # with the workflow's first task (update-with-start) sees the queues.
    @workflow.init
    def __init__(self, queues: dict) -> None:
        self.queues = queues
        self.messages: list = [{"role": "system", "content": SYSTEM}]
        self.ended = False

    @workflow.run
    async def run(self, queues: dict) -> None:
        await workflow.wait_condition(lambda: self.ended)

    @workflow.update
    async def turn(self, question: str) -> str:
        self.messages.append({"role": "user", "content": question})
        for _ in range(MAX_MODEL_CALLS):
            request = {"messages": self.messages, "tools": [CALCULATOR], "temperature": 0.0}
            if self.queues.get("local_model"):
                message = await workflow.execute_local_activity(
                    "call_model",
                    request,
                    start_to_close_timeout=timedelta(seconds=600),
                    retry_policy=RETRIES,
                )
            else:
                message = await workflow.execute_activity(
                    "call_model",
                    request,
                    task_queue=self.queues["models"],
                    start_to_close_timeout=timedelta(seconds=600),
                    heartbeat_timeout=timedelta(seconds=30),
                    retry_policy=RETRIES,
                )
            self.messages.append(message)
            calls = message.get("tool_calls") or []
            if not calls:
                return message.get("content") or ""
            for call in calls:
                try:
                    arguments = json.loads(call["function"]["arguments"])
                    result = await workflow.execute_activity(
                        "calculator",
                        arguments,
                        task_queue=self.queues["tools"],
                        start_to_close_timeout=timedelta(seconds=600),
                        heartbeat_timeout=timedelta(seconds=10),
                        retry_policy=RETRIES,
                    )
                    content = json.dumps(result)
                except Exception as error:  # the tool's failure goes to the model
                    content = json.dumps({"error": str(error)})
                self.messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
        return "the turn asked the model too many times"

    @workflow.update
    async def end(self) -> None:
        self.ended = True
