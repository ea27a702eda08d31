"""A small MCP server over stdio (standard library only) for the web chat's
browser test: the resources notes://handbook and notes://faq, and the
prompts `greet` (no arguments) and `summarize` (argument `topic`)."""

import json
import sys

TEXTS = {"notes://handbook": "Refunds take five days.", "notes://faq": "Ask us anything."}
PROMPTS = [
    {"name": "greet", "title": "Say hello", "description": "Start with a greeting"},
    {"name": "summarize", "title": "Summarize a topic", "description": "Summarize the notes on a topic",
     "arguments": [{"name": "topic", "description": "What about", "required": True}]},
]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(method, params):
    if method == "initialize":
        return {"protocolVersion": params["protocolVersion"],
                "capabilities": {"resources": {}, "prompts": {}, "tools": {}},
                "serverInfo": {"name": "notes", "version": "1"}}
    if method == "tools/list":
        return {"tools": []}
    if method == "resources/list":
        return {"resources": [{"uri": uri, "name": uri.split("//")[1], "mimeType": "text/plain"} for uri in TEXTS]}
    if method == "resources/templates/list":
        return {"resourceTemplates": []}
    if method == "resources/read":
        uri = params["uri"]
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": TEXTS[uri]}]}
    if method == "prompts/list":
        return {"prompts": PROMPTS}
    if method == "prompts/get":
        args = params.get("arguments") or {}
        if params["name"] == "greet":
            text = "Hello!"
        else:
            text = "Summarize what the notes say about " + args.get("topic", "?") + "."
        return {"messages": [{"role": "user", "content": {"type": "text", "text": text}}]}
    return None


for line in sys.stdin:
    message = json.loads(line)
    if message.get("id") is None:
        continue
    result = answer(message.get("method"), message.get("params") or {})
    if result is None:
        send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "not supported"}})
    else:
        send({"jsonrpc": "2.0", "id": message["id"], "result": result})
