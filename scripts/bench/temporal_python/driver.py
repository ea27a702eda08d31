"""Drives the Python comparison worker with concierge bench's workload: S
sessions of T turns ("what is A plus B?"), C sessions at a time, each turn
one update-with-start of the session's workflow that returns the answer.
Prints one JSON line: turns/s, latencies, this driver's CPU, the worker's
and the server's CPU (from /proc, by pid), and the sessions' history
(events and bytes per turn, the first session's events by type).

    python driver.py --address 127.0.0.1:7233 --namespace concierge --prefix py \
        --worker-pid PID --server-pid PID --sessions 200 --turns 10 --concurrency 50
"""

import argparse
import asyncio
import collections
import json
import resource
import sys
import time

from temporalio.client import Client, WithStartWorkflowOperation
from temporalio.common import WorkflowIDConflictPolicy

from worker import queues


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process `pid` has used, from procfs."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0


def own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def percentile(values: list, p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", required=True)
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--prefix", default="py")
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--worker-pid", type=int)
    parser.add_argument("--server-pid", type=int)
    parser.add_argument(
        "--local-model",
        action="store_true",
        help="the sessions call the model with local activities (as concierge's model_calls = \"local\")",
    )
    args = parser.parse_args()
    client = await Client.connect(args.address, namespace=args.namespace)
    names = queues(args.prefix)
    if args.local_model:
        names["local_model"] = "yes"
    semaphore = asyncio.Semaphore(args.concurrency)
    latencies: list = []
    errors = 0

    def workflow_id(s: int) -> str:
        return f"{args.prefix}:session:bench-{s}"

    async def session(s: int) -> None:
        nonlocal errors
        async with semaphore:
            for t in range(args.turns):
                question = f"what is {10 + s % 90} plus {t + 1}?"
                start = time.perf_counter()
                try:
                    answer = await client.execute_update_with_start_workflow(
                        "turn",
                        question,
                        start_workflow_operation=WithStartWorkflowOperation(
                            "bench.session",
                            names,
                            id=workflow_id(s),
                            task_queue=names["sessions"],
                            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                        ),
                        result_type=str,
                    )
                    if not answer.startswith("The answer:"):
                        errors += 1
                        print(f"session {s} turn {t}: unexpected answer {answer!r}", file=sys.stderr)
                except Exception as error:
                    errors += 1
                    print(f"session {s} turn {t} failed: {error}", file=sys.stderr)
                latencies.append((time.perf_counter() - start) * 1000)

    cpu0, worker0 = own_cpu_s(), args.worker_pid and process_cpu_s(args.worker_pid)
    server0 = args.server_pid and process_cpu_s(args.server_pid)
    started = time.perf_counter()
    await asyncio.gather(*(session(s) for s in range(args.sessions)))
    wall = time.perf_counter() - started
    cpu = own_cpu_s() - cpu0
    worker = args.worker_pid and process_cpu_s(args.worker_pid) - worker0
    server = args.server_pid and process_cpu_s(args.server_pid) - server0
    turns = args.sessions * args.turns

    events = size = 0
    for s in range(args.sessions):
        info = (await client.get_workflow_handle(workflow_id(s)).describe()).raw_description.workflow_execution_info
        events += info.history_length
        size += info.history_size_bytes
    by_type: collections.Counter = collections.Counter()
    async for event in client.get_workflow_handle(workflow_id(0)).fetch_history_events():
        from temporalio.api.enums.v1 import EventType

        by_type[EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")] += 1

    per_turn = lambda x: round(x * 1000 / turns, 3)  # noqa: E731
    report = {
        "engine": "python",
        "sessions": args.sessions,
        "turns": args.turns,
        "concurrency": args.concurrency,
        "wall_s": round(wall, 3),
        "turns_per_s": round(turns / wall, 3),
        "p50_turn_ms": round(percentile(latencies, 50), 2),
        "p95_turn_ms": round(percentile(latencies, 95), 2),
        "errors": errors,
        "driver_cpu_ms_per_turn": per_turn(cpu),
        "worker_cpu_ms_per_turn": per_turn(worker) if args.worker_pid else None,
        "server_cpu_ms_per_turn": per_turn(server) if args.server_pid else None,
        "history_events_per_turn": round(events / turns, 2),
        "history_bytes_per_turn": round(size / turns),
        "history_events_by_type_per_turn": {k: round(v / args.turns, 2) for k, v in sorted(by_type.items())},
    }
    print(json.dumps(report))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
