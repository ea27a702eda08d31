"""The Python comparison worker: the session workflows, the model calls and
the calculator's tool calls, on three task queues (as concierge's
`<prefix>-sessions`, `<prefix>-models`, `<prefix>-tools-calculator`), in one
process. The sessions worker also runs the model calls of sessions the
driver started with --local-model (local activities). Stops on SIGTERM or
SIGINT.

    BENCH_BASE_URL=http://127.0.0.1:8090/v1 python worker.py --address 127.0.0.1:7233 \
        --namespace concierge --prefix py
"""

import argparse
import asyncio
import signal

from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from activities import calculator, call_model
from session import Session


def queues(prefix: str) -> dict:
    return {"sessions": f"{prefix}-sessions", "models": f"{prefix}-models", "tools": f"{prefix}-tools-calculator"}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", required=True)
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--prefix", default="py")
    parser.add_argument(
        "--unsandboxed",
        action="store_true",
        help="run workflows without the Python SDK's sandbox (faster, less safe; the default keeps it)",
    )
    args = parser.parse_args()
    client = await Client.connect(args.address, namespace=args.namespace)
    names = queues(args.prefix)
    extra = {"workflow_runner": UnsandboxedWorkflowRunner()} if args.unsandboxed else {}
    workers = [
        Worker(client, task_queue=names["sessions"], workflows=[Session], activities=[call_model], **extra),
        Worker(client, task_queue=names["models"], activities=[call_model]),
        Worker(client, task_queue=names["tools"], activities=[calculator]),
    ]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    runs = [asyncio.create_task(w.run()) for w in workers]
    print("ready", flush=True)
    await stop.wait()
    await asyncio.gather(*(w.shutdown() for w in workers))
    await asyncio.gather(*runs, return_exceptions=True)


if __name__ == "__main__":
    asyncio.run(main())
