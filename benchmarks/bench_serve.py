"""`dpmem serve` over HTTP: turns per second and p50/p99 latency at 1, 8 and 32 concurrent clients.

    .venv/bin/python benchmarks/bench_serve.py                     # the full table (docs/serve.md)
    .venv/bin/python benchmarks/bench_serve.py --turns 64 --clients 1 8 --stores sqlite

Each cell starts fresh `dpmem serve` processes (echo backend, the example agent
examples/agent/assistant.toml, OS entropy) on 127.0.0.1, one or two replicas on one ledger:
SQLite (one file, WAL) or PostgreSQL (the pip-installed server of tests/postgres_server.py,
Unix socket, fsync on). C client threads (each its own HTTP keep-alive connection; client i
talks to replica i mod R) send `--turns` POST /v1/turns in total, every request for a user
not queried before in that cell, cycling through the four routed queries, so nearly every
turn is a charged selection (charge committed before release). The figures: turns / wall
time from the first request to the last answer, and the latency percentiles of single
requests (client side: send to full answer).

Every turn is released at its fixed deadline (the runtime's DEFAULT_DURABLE_TURN_DEADLINE_S,
50 ms: the timing-side-channel mitigation), so one turn never answers faster than that;
throughput comes from concurrency (turns of different scopes run in parallel) and replicas.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.serve.live import DINNER, LiveServer, auth, httpx, marked_memory, write_keys  # noqa: E402

QUERIES = [DINNER, "Remind me about my doctor appointment", "Help me with my budget and bills", "Plan my weeknight evenings"]


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


def run_cell(urls: list[str], token: str, clients: int, turns: int, prefix: str) -> dict[str, Any]:
    latencies: list[float] = []
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)
    per_client = [turns // clients + (1 if i < turns % clients else 0) for i in range(clients)]

    def client(number: int) -> None:
        with httpx.Client(base_url=urls[number % len(urls)], timeout=120, trust_env=False) as http:
            http.get("/healthz")  # the connection is open before the clock starts
            start.wait()
            for turn in range(per_client[number]):
                body = {"user": f"{prefix}-{number}-{turn}", "interaction": "bench", "query": QUERIES[turn % len(QUERIES)]}
                sent = time.perf_counter()
                answer = http.post("/v1/turns", headers=auth(token), json=body)
                elapsed = time.perf_counter() - sent
                if answer.status_code != 200:
                    raise RuntimeError(f"turn answered {answer.status_code}: {answer.text[:200]}")
                with lock:
                    latencies.append(elapsed)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    return {
        "clients": clients,
        "turns": len(latencies),
        "turns_per_s": len(latencies) / wall,
        "p50_ms": percentile(latencies, 0.50) * 1e3,
        "p99_ms": percentile(latencies, 0.99) * 1e3,
        "mean_ms": statistics.fmean(latencies) * 1e3,
    }


def store_url(kind: str, folder: Path) -> str:
    if kind == "sqlite":
        return f"sqlite:///{folder / 'ledgers.db'}"
    from tests import postgres_server

    return postgres_server.new_database()


def bench(stores: list[str], replicas: list[int], clients: list[int], turns: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for kind in stores:
        for count in replicas:
            with tempfile.TemporaryDirectory(prefix="dpmem-bench-serve-") as name:
                folder = Path(name)
                users = [f"c{c}-{n}-{t}" for c in clients for n in range(c) for t in range(turns // c + 1)]
                keys, tokens = write_keys(folder, {"bench": users})
                memory, _ = marked_memory(folder)
                try:
                    url = store_url(kind, folder)
                except BaseException as error:  # noqa: BLE001  # pytest.skip outside pytest: no server here
                    print(f"bench_serve: {kind} unavailable ({type(error).__name__}: {error})", file=sys.stderr)
                    break
                servers = [LiveServer(folder, keys, memory, url, seed=None) for _ in range(count)]
                for server in servers:
                    server.start()
                try:
                    for c in clients:
                        row = run_cell([s.url for s in servers], tokens["bench"], c, turns, f"c{c}")
                        row.update(store=kind, replicas=count)
                        rows.append(row)
                        print(table_row(row), flush=True)
                finally:
                    for server in servers:
                        server.stop()
    return rows


HEADER = "| store | replicas | clients | turns | turns/s | p50 ms | p99 ms |\n|---|---:|---:|---:|---:|---:|---:|"


def table_row(row: dict[str, Any]) -> str:
    return (
        f"| {row['store']} | {row['replicas']} | {row['clients']} | {row['turns']} | {row['turns_per_s']:.1f} "
        f"| {row['p50_ms']:.0f} | {row['p99_ms']:.0f} |"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--turns", type=int, default=160, help="turns per cell (default 160)")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgresql"], choices=["sqlite", "postgresql"])
    parser.add_argument("--json", action="store_true", help="print the rows as JSON at the end")
    args = parser.parse_args(argv)
    if args.turns < max(args.clients) or args.turns > 100_000:
        parser.error("--turns must be at least the largest --clients and at most 100000")
    print(HEADER, flush=True)
    rows = bench(args.stores, args.replicas, args.clients, args.turns)
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
