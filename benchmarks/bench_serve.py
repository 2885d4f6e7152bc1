"""`dpmem serve` over HTTP: turns per second, p50/p99 latency and server CPU per turn at 1, 8 and
32 concurrent clients, beside a bare FastAPI endpoint and (optionally) another checkout's server.

    .venv/bin/python benchmarks/bench_serve.py                     # the full table (docs/serve.md)
    .venv/bin/python benchmarks/bench_serve.py --turns 64 --clients 1 8 --stores sqlite
    git worktree add /tmp/base-serve bbc32bb                       # today's main, for comparison
    .venv/bin/python benchmarks/bench_serve.py --stores sqlite --replicas 1 --baseline /tmp/base-serve

Rows: `bare` is a FastAPI/uvicorn endpoint that parses the same JSON body and answers a
constant (the floor of HTTP + framework on this host); `base` is the `dpmem serve` of the
checkout given by --baseline (its code first on PYTHONPATH); `this` is this checkout's. Server
CPU per turn is the server process's user+system CPU time over the cell (/proc), divided by
the turns. The load average of the host is printed beside every row: the machine may be
shared with other jobs.

Each cell starts fresh `dpmem serve` processes (echo backend, the example agent
examples/agent/assistant.toml with its application `recipes` and its share, OS entropy, the
ledger key of DPMEM_LEDGER_KEY / DPMEM_LEDGER_KEY_FILE or a fresh random one) on 127.0.0.1, one or two replicas on one ledger:
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
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.serve.live import DINNER, LiveServer, agent_of, auth, httpx, marked_memory, write_keys  # noqa: E402

APP = "recipes"
"""The application the clients speak as: one with a share of the per-user caps in the shipped agent
file (`dpmem serve` refuses to start with an application that has none)."""
QUERIES = [DINNER, "Remind me about my doctor appointment", "Help me with my budget and bills", "Plan my weeknight evenings"]


def ledger_key() -> dict[str, str]:
    """The ledger chain's key for the servers (docs/durability.md): DPMEM_LEDGER_KEY or
    DPMEM_LEDGER_KEY_FILE as set by the caller, else a fresh random key for this run, set in this
    process too (the independent check verifies the chain with it)."""
    if os.environ.get("DPMEM_LEDGER_KEY") or os.environ.get("DPMEM_LEDGER_KEY_FILE"):
        return {}
    os.environ["DPMEM_LEDGER_KEY"] = secrets.token_hex(32)
    return {"DPMEM_LEDGER_KEY": os.environ["DPMEM_LEDGER_KEY"]}


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


def run_cell(
    urls: list[str], token: str, clients: int, turns: int, prefix: str, answers: list[Any] | None = None
) -> dict[str, Any]:
    latencies: list[float] = []
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)
    per_client = [turns // clients + (1 if i < turns % clients else 0) for i in range(clients)]

    def client(number: int) -> None:
        # TCP_NODELAY: without it the client's body waits for the ACK of its headers (Nagle) and the
        # server's delayed ACK adds ~40 ms to a keep-alive request, for every server alike.
        transport = httpx.HTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
        with httpx.Client(base_url=urls[number % len(urls)], timeout=120, trust_env=False, transport=transport) as http:
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
                    if answers is not None:
                        answers.append((body["user"], APP, answer.json()))

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


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its reaped children (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def load_average() -> str:
    return " / ".join(f"{v:.1f}" for v in os.getloadavg())


BARE_APP = """
import sys, uvicorn
from fastapi import FastAPI
from pydantic import BaseModel
class Body(BaseModel):
    user: str
    interaction: str
    query: str
app = FastAPI()
@app.post("/v1/turns")
def turn(body: Body) -> dict:
    return {"response": "ok", "control": None, "remaining": {}}
@app.get("/healthz")
def healthz() -> dict:
    return {"status": "ok"}
config = uvicorn.Config(app, host="127.0.0.1", port=int(sys.argv[1]), log_config=None, access_log=False)
server = uvicorn.Server(config)
print("ready", flush=True)
server.run()
"""


def bare_cells(clients: list[int], turns: int) -> list[dict[str, Any]]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, "-c", BARE_APP, str(port)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    rows = []
    try:
        assert process.stdout is not None
        process.stdout.readline()
        url = f"http://127.0.0.1:{port}"
        for _ in range(200):  # "ready" is printed before uvicorn binds: poll /healthz (bounded)
            try:
                httpx.get(url + "/healthz", timeout=1, trust_env=False)
                break
            except httpx.TransportError:
                time.sleep(0.05)
        for c in clients:
            before = cpu_seconds(process.pid)
            row = run_cell([url], "unused", c, turns, f"bare{c}")
            row.update(server="bare", store="-", replicas=1, cpu_ms=(cpu_seconds(process.pid) - before) / row["turns"] * 1e3)
            row["load"] = load_average()
            rows.append(row)
            print(table_row(row), flush=True)
    finally:
        process.terminate()
        process.wait(30)
    return rows


def store_url(kind: str, folder: Path) -> str:
    if kind == "sqlite":
        return f"sqlite:///{folder / 'ledgers.db'}"
    from tests import postgres_server

    return postgres_server.new_database()


def bench(
    stores: list[str],
    replicas: list[int],
    clients: list[int],
    turns: int,
    baseline: str | None = None,
    workers: int | None = None,
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    servers_to_run = [("this", None)] + ([("base", baseline)] if baseline else [])
    for (label, checkout), kind, count in [(s, k, r) for s in servers_to_run for k in stores for r in replicas]:
        with tempfile.TemporaryDirectory(prefix="dpmem-bench-serve-") as name:
            folder = Path(name)
            users = [f"c{c}-{n}-{t}" for c in clients for n in range(c) for t in range(turns // c + 1)]
            keys, tokens = write_keys(folder, {APP: users})  # the served agent file: the shipped one
            memory, _ = marked_memory(folder)
            try:
                url = store_url(kind, folder)
            except BaseException as error:  # noqa: BLE001  # pytest.skip outside pytest: no server here
                print(f"bench_serve: {kind} unavailable ({type(error).__name__}: {error})", file=sys.stderr)
                continue
            env = {} if checkout is None else {"PYTHONPATH": os.pathsep.join([checkout, str(Path(checkout) / "eval")])}
            env.update(ledger_key())
            extra = [] if checkout is not None or workers is None else ["--workers", str(workers)]
            servers = [LiveServer(folder, keys, memory, url, seed=None, env=env, extra=extra) for _ in range(count)]
            for server in servers:
                server.start()
            answers: list[Any] = []
            try:
                for c in clients:
                    pids = [s.process.pid for s in servers if s.process is not None]
                    before = sum(cpu_seconds(pid) for pid in pids)
                    row = run_cell([s.url for s in servers], tokens[APP], c, turns, f"c{c}", answers)
                    spent = sum(cpu_seconds(pid) for pid in pids) - before
                    row.update(server=label, store=kind, replicas=count, cpu_ms=spent / row["turns"] * 1e3, load=load_average())
                    rows.append(row)
                    print(table_row(row), flush=True)
            finally:
                for server in servers:
                    server.stop()
            if kind == "sqlite" and label == "this":  # the independent SQL check of the whole run
                from tests.serve.sqlcheck import chain_verifies, sqlite_check

                found = sqlite_check(folder / "ledgers.db", answers, agent_of(keys))
                print(
                    f"bench_serve: {label} {kind}: independent SQL check over {len(answers)} turns: "
                    f"{found['overruns']} overruns, {found['uncharged']} uncharged releases, "
                    f"{found['charged_received']} charged views received; chain verifies: {chain_verifies(folder / 'ledgers.db')}",
                    file=sys.stderr,
                    flush=True,
                )
    return rows


HEADER = (
    "| server | store | replicas | clients | turns | turns/s | p50 ms | p99 ms | server CPU ms/turn | load 1/5/15 min |\n"
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"
)


def table_row(row: dict[str, Any]) -> str:
    return (
        f"| {row['server']} | {row['store']} | {row['replicas']} | {row['clients']} | {row['turns']} | {row['turns_per_s']:.1f} "
        f"| {row['p50_ms']:.0f} | {row['p99_ms']:.0f} | {row['cpu_ms']:.2f} | {row['load']} |"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--turns", type=int, default=160, help="turns per cell (default 160)")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgresql"], choices=["sqlite", "postgresql"])
    parser.add_argument("--baseline", default=None, help="another checkout (a git worktree) whose server is measured too")
    parser.add_argument("--workers", type=int, default=None, help="this checkout's --workers (default: the server's)")
    parser.add_argument("--no-bare", action="store_true", help="skip the bare FastAPI endpoint")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON at the end")
    args = parser.parse_args(argv)
    if args.turns < max(args.clients) or args.turns > 100_000:
        parser.error("--turns must be at least the largest --clients and at most 100000")
    print(HEADER, flush=True)
    rows = [] if args.no_bare else bare_cells(args.clients, args.turns)
    rows += bench(args.stores, args.replicas, args.clients, args.turns, args.baseline, args.workers)
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
