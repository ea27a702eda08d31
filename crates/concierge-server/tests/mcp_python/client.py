"""The official MCP Python client against concierge's MCP server.

Usage: client.py URL approve|deny

Calls `ask_payer` with a progress callback, answering the elicitation the
server sends with `approve` true or false, and prints what it saw as JSON:
the questions, the progress messages, the tool result's structured content.
"""

import asyncio
import json
import sys

from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client


async def main(url: str, decision: str) -> None:
    asked: list[dict] = []
    progress: list[str] = []

    async def elicit(context, params):
        asked.append({"message": params.message, "schema": params.requested_schema})
        return types.ElicitResult(action="accept", content={"approve": decision == "approve"})

    async def on_progress(value, total, message):
        progress.append(message or "")

    async with streamable_http_client(url) as (read, write, *_):
        async with ClientSession(read, write, elicitation_callback=elicit) as session:
            await session.initialize()
            result = await session.call_tool(
                "ask_payer", {"message": "pay it"}, progress_callback=on_progress
            )
    print(json.dumps({
        "asked": asked,
        "progress": progress,
        "is_error": bool(result.isError) if hasattr(result, "isError") else bool(result.is_error),
        "structured": getattr(result, "structuredContent", None) or getattr(result, "structured_content", None),
        "text": [c.text for c in result.content if getattr(c, "type", "") == "text"],
    }))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
