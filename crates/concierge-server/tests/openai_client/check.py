"""The official OpenAI Python client against `concierge serve`.

Usage: python check.py BASE_URL   (e.g. http://127.0.0.1:8080/v1)

The server runs the task manager's example (examples/tasks) on its rules.
Each check asserts what an OpenAI client sees: the models, a completion
whole and streamed, the session named by the X-Concierge-Session header, a
confirmation and a numbered choice answered by the next message, and the
errors it raises. Exits non-zero on the first failed check.
"""

import os
import sys

import openai

SESSION = "X-Concierge-Session"


def main(base_url: str) -> None:
    client = openai.OpenAI(base_url=base_url, api_key="not-needed", max_retries=0)
    run = f"py{os.getpid()}"

    # The agents are the models, and `concierge` is the hub.
    ids = [m.id for m in client.models.list()]
    assert ids[0] == "concierge", ids
    assert "task" in ids and "calculator" in ids, ids

    # A completion, not streamed: a new session, named in the answer's header.
    raw = client.chat.completions.with_raw_response.create(
        model="calculator",
        messages=[{"role": "user", "content": "calculate 5 + 3"}],
        temperature=0.2,
    )
    session = raw.headers.get(SESSION)
    assert session, dict(raw.headers)
    completion = raw.parse()
    content = completion.choices[0].message.content
    assert "8" in content, content
    assert completion.choices[0].finish_reason == "stop", completion
    assert completion.id.startswith(f"chatcmpl-{session}."), completion.id
    assert completion.usage is not None and completion.usage.total_tokens == 0, completion.usage

    # Streamed, in the same session (named by the header).
    raw = client.chat.completions.with_raw_response.create(
        model="calculator",
        messages=[{"role": "user", "content": "calculate 6 * 7"}],
        stream=True,
        stream_options={"include_usage": True},
        extra_headers={SESSION: session},
    )
    assert raw.headers.get(SESSION) == session, dict(raw.headers)
    text, finishes, usage = "", [], None
    for chunk in raw.parse():
        for choice in chunk.choices:
            text += choice.delta.content or ""
            assert not choice.delta.tool_calls, chunk
            if choice.finish_reason:
                finishes.append(choice.finish_reason)
        if chunk.usage is not None:
            usage = chunk.usage
    assert "42" in text, text
    assert finishes == ["stop"], finishes
    assert usage is not None and usage.total_tokens == 0, usage

    # A confirmation through the hub: asked in words, answered by "yes".
    confirm = f"{run}-confirm"

    def say(session_id: str, model: str, message: str, stream: bool = False) -> str:
        if stream:
            chunks = client.chat.completions.create(
                model=model,
                messages=[{"role": "user", "content": message}],
                stream=True,
                extra_headers={SESSION: session_id},
            )
            return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        reply = client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": message}],
            extra_headers={SESSION: session_id},
        )
        return reply.choices[0].message.content

    asked = say(confirm, "concierge", "create a task to call the plumber due Friday with high priority")
    assert asked.startswith("I'll "), asked
    done = say(confirm, "concierge", "yes")
    assert "Created task" in done and "plumber" in done.lower(), done

    # Streamed: asked, then declined.
    asked = say(confirm, "concierge", "create a task to water the plants", stream=True)
    assert asked.startswith("I'll "), asked
    declined = say(confirm, "concierge", "no", stream=True)
    assert "Created task" not in declined, declined

    # A numbered choice answered by "2", then its confirmation by "yes".
    choice = f"{run}-choice"
    offered = say(choice, "task", "complete the fix", stream=True)
    assert "Which one do you mean?" in offered and "2. " in offered, offered
    asked = say(choice, "task", "2")
    assert asked.startswith("I'll mark #5"), asked
    done = say(choice, "task", "yes")
    assert not done.startswith("I'll "), done

    # The errors OpenAI clients expect.
    try:
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        raise AssertionError("an unknown model was accepted")
    except openai.NotFoundError as error:
        assert error.code == "model_not_found" and error.param == "model", error.body
        assert "calculator" in error.message, error.message
    try:
        client.chat.completions.create(model="calculator", messages=[])
        raise AssertionError("an empty conversation was accepted")
    except openai.BadRequestError as error:
        assert error.param == "messages", error.body
    try:
        client.chat.completions.create(
            model="calculator",
            messages=[{"role": "user", "content": "hi"}],
            n=2,
        )
        raise AssertionError("n=2 was accepted")
    except openai.BadRequestError as error:
        assert error.param == "n", error.body
    print("the OpenAI Python client: every check passed")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: check.py BASE_URL (e.g. http://127.0.0.1:8080/v1)")
    main(sys.argv[1])
