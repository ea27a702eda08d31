#!/usr/bin/env python3
"""Memory per idle open event stream of a running `concierge serve`.

Opens N Server-Sent Event streams on one session (no dependencies beyond the
standard library), waits until they are idle, and prints the server's
resident memory before and after, and the difference per connection.

    concierge serve --addr 127.0.0.1:8080 &          # in examples/assistant
    curl -s -XPOST 127.0.0.1:8080/api/v1/sessions -H 'content-type: application/json' -d '{"id":"idle"}'
    python3 scripts/bench/sse_idle.py --port 8080 --session idle --connections 10000 --pid $(pgrep -f 'concierge serve')

Each process needs one file descriptor per connection (`ulimit -n`).
"""

import argparse
import asyncio
import time


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


async def open_stream(host: str, port: int, session: str, streams: list) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(
        f"GET /api/v1/sessions/{session}/events HTTP/1.1\r\nHost: {host}\r\n"
        "Accept: text/event-stream\r\n\r\n".encode()
    )
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    status = head.split(b"\r\n")[0]
    if b" 200 " not in status:
        raise RuntimeError(f"the server answered {status!r}")
    streams.append((reader, writer))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--session", required=True)
    parser.add_argument("--connections", type=int, default=10000)
    parser.add_argument("--pid", type=int, required=True, help="the server's process id")
    args = parser.parse_args()

    before = rss_kib(args.pid)
    streams: list = []
    started = time.time()
    batch = 500
    for first in range(0, args.connections, batch):
        last = min(args.connections, first + batch)
        await asyncio.gather(*(open_stream(args.host, args.port, args.session, streams) for _ in range(first, last)))
    await asyncio.sleep(2)
    after = rss_kib(args.pid)
    per = (after - before) * 1024 / len(streams)
    print(
        f"{len(streams)} idle streams: server RSS {before / 1024:.1f} MiB -> {after / 1024:.1f} MiB, "
        f"{per / 1024:.1f} KiB per stream (opened in {time.time() - started:.1f} s)"
    )
    for _, writer in streams:
        writer.close()


asyncio.run(main())
