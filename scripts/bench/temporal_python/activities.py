"""The Python comparison worker's activities: a model call (OpenAI chat
completions over HTTP, to the same bench fake model concierge calls) and the
calculator tool."""

import math
import os

import httpx
from temporalio import activity
from temporalio.exceptions import ApplicationError

_client: httpx.AsyncClient | None = None


def _http() -> httpx.AsyncClient:
    global _client
    if _client is None:
        _client = httpx.AsyncClient(timeout=600.0, limits=httpx.Limits(max_connections=200))
    return _client


@activity.defn(name="call_model")
async def call_model(request: dict) -> dict:
    base = os.environ["BENCH_BASE_URL"].rstrip("/")
    body = {"model": os.environ.get("BENCH_MODEL", "fake"), **request}
    response = await _http().post(f"{base}/chat/completions", json=body)
    response.raise_for_status()
    return response.json()["choices"][0]["message"]


def _number(x: float) -> str:
    return str(int(x)) if x == int(x) and abs(x) < 1e15 else repr(x)


@activity.defn(name="calculator")
async def calculator(args: dict) -> dict:
    operation, a, b = args.get("operation"), float(args.get("a", 0)), args.get("b")
    symbols = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}
    if operation in symbols:
        if b is None:
            raise ApplicationError(f"The operation {symbols[operation]} needs a second operand b.", non_retryable=True)
        b = float(b)
        if operation == "divide" and b == 0:
            raise ApplicationError("Cannot divide by zero. Provide a non-zero divisor b.", non_retryable=True)
        result = {"add": a + b, "subtract": a - b, "multiply": a * b, "divide": a / b if b else 0}[operation]
        formula = f"{_number(a)} {symbols[operation]} {_number(b)} = {_number(result)}"
    elif operation == "sqrt":
        if a < 0:
            raise ApplicationError(f"Cannot take the square root of a negative number ({_number(a)}).", non_retryable=True)
        result = math.sqrt(a)
        formula = f"sqrt({_number(a)}) = {_number(result)}"
    elif operation == "abs":
        result = abs(a)
        formula = f"|{_number(a)}| = {_number(result)}"
    else:
        raise ApplicationError(f"Unknown operation {operation!r}.", non_retryable=True)
    return {"result": result, "formula": formula}
