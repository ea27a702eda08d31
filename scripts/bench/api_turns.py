#!/usr/bin/env python3
"""Turns per second through a running `concierge serve`'s HTTP API.

S sessions of T turns, C sessions at a time: each session is created with
POST /api/v1/sessions (with --agent), and each turn is
POST /api/v1/sessions/{id}/messages?wait=true, one after another on one
keep-alive connection per session (standard library only).

    python3 scripts/bench/api_turns.py --port 8080 --agent calculator --sessions 1000 --turns 10 --concurrency 100
"""

import argparse
import asyncio
import json
import time


async def request(reader, writer, host, method, path, body):
    data = json.dumps(body).encode()
    writer.write(
        f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n\r\n".encode() + data
    )
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    length = next(int(l.split(":")[1]) for l in lines if l.lower().startswith("content-length"))
    payload = await reader.readexactly(length)
    return status, json.loads(payload)


async def session(args, n, latencies, errors):
    reader, writer = await asyncio.open_connection(args.host, args.port)
    sid = f"bench-{args.run}-{n}"
    status, body = await request(reader, writer, args.host, "POST", "/api/v1/sessions", {"id": sid, "agent": args.agent})
    if status != 201:
        errors.append(f"create {status}: {body}")
        return
    for turn in range(args.turns):
        started = time.perf_counter()
        status, body = await request(
            reader, writer, args.host, "POST", f"/api/v1/sessions/{sid}/messages?wait=true",
            {"text": f"calculate {turn} + {n}"},
        )
        latencies.append(time.perf_counter() - started)
        if status != 200 or body.get("status") != "completed":
            errors.append(f"turn {status}: {body}")
    writer.close()


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--agent", default="calculator")
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--run", default=str(int(time.time())))
    args = parser.parse_args()
    latencies, errors = [], []
    gate = asyncio.Semaphore(args.concurrency)

    async def one(n):
        async with gate:
            await session(args, n, latencies, errors)

    started = time.perf_counter()
    await asyncio.gather(*(one(n) for n in range(args.sessions)))
    elapsed = time.perf_counter() - started
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000
    print(
        f"{len(latencies)} turns in {elapsed:.1f} s: {len(latencies) / elapsed:.0f} turns/s, "
        f"p50 {pick(0.5):.1f} ms, p99 {pick(0.99):.1f} ms, errors {len(errors)}"
    )
    for e in errors[:3]:
        print(" ", e)


asyncio.run(main())
