"""The kernel's hot path, this tree and another checkout side by side (issue 25):
`bench_kernel.py --hot-path --base DIR` runs every cell below in fresh interpreters,
alternating the two trees (the order flips every round) for `--rounds` rounds, and prints
medians over the rounds, the ratio base / this tree, the median of the per-round ratios, and
the machine load before and after. Within one interpreter a build or turn figure is the
best of 15 batches (on a shared machine other jobs only ever add time); a durable figure
is the median of 5 batches (fsync times are bimodal).

Cells (each a pure function of public APIs that both trees have):
- `build 5` / `build 1024 random` / `build 1024 one-hot`: `exponential_mechanism(views,
  scores, eps = 2/3, Delta = 3/5)` with its memo cleared before every call (a release
  distribution built from scratch), microseconds;
- `turn 6 slots`: `run_turn` of the evaluation-shaped interface with six charged slots
  (bench_kernel.evaluation_shaped_interface), microseconds;
- `durable turn`: `DurableSession.run_turn` on a fresh SQLite ledger (bench_ledger's
  one-slot charged interface, HMAC chain keyed), milliseconds, WITHOUT the release
  deadline (`turn_deadline_s=None`); `durable turn + deadline` is the same with the default
  deadline (the padding, reported separately);
- `import dpmem_ref` / `dpmem --help` / `dpmem run` / `dpmem audit` (examples/figure2.toml):
  wall time of a fresh interpreter, milliseconds (the commands run `dpmem_ref.cli.main`,
  which the `dpmem` script calls); both trees' help texts and run transcripts must be
  identical.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

BUILD_CELL = """
import json, random, statistics, time
from fractions import Fraction
from dpmem_ref import exponential_mechanism
try:  # this tree; a base tree from before the mechanism package has dpmem_ref/mechanism.py
    from dpmem_ref.mechanism.construction import _exponential_mechanism
except ImportError:
    from dpmem_ref.mechanism import _exponential_mechanism
views_count, kind = {views}, {kind!r}
if kind == "paper":
    scores = [Fraction(4, 5), Fraction(2, 5), Fraction(3, 5), Fraction(0), Fraction(1, 5)]
elif kind == "one-hot":
    scores = [Fraction(1)] + [Fraction(0)] * (views_count - 1)
else:
    rng = random.Random(views_count)
    scores = [Fraction(rng.randrange(101), 100) for _ in range(views_count)]
views = tuple(f"v{{i}}" for i in range(views_count))
eps, delta = Fraction(2, 3), Fraction(3, 5)
calls = {calls}
figures = []
for _ in range(15):
    start = time.perf_counter()
    for _ in range(calls):
        _exponential_mechanism.cache_clear()
        exponential_mechanism(views, scores, eps, delta)
    figures.append((time.perf_counter() - start) / calls * 1e6)
print(json.dumps(min(figures)))
"""

TURN_CELL = """
import json, statistics, sys, time
sys.path.insert(0, {bench!r})
from bench_kernel import evaluation_shaped_interface
from dpmem_ref import InterfaceState, SeededRandomSource, run_turn
interface, store = evaluation_shaped_interface()
source, initial = SeededRandomSource(1), InterfaceState.initial(interface)
query = interface.query("all-slots")
run_turn(interface, initial, query, store, source)
figures = []
for _ in range({repeats}):
    start = time.perf_counter()
    for _ in range({turns}):
        run_turn(interface, initial, query, store, source)
    figures.append((time.perf_counter() - start) / {turns} * 1e6)
print(json.dumps(min(figures)))
"""
"""The 6-slot turn (best of `repeats` batches of `turns`, us per turn), in a fresh interpreter:
`--hot-path` and bench_kernel's `--base` turn figure both run it."""

DURABLE_CELL = """
import json, os, statistics, sys, tempfile, time
sys.path.insert(0, {bench!r})
from bench_ledger import INTERFACE
from dpmem_ref import SeededRandomSource, interface_from_dict
try:  # the durable session's module: turn/durable.py since the floors, durable.py before
    from dpmem_ref.turn.durable import DurableSession
except ImportError:
    from dpmem_ref.durable import DurableSession
from dpmem_ref.ledger import SQLiteLedgerStore
loaded = interface_from_dict(INTERFACE)
with tempfile.TemporaryDirectory(prefix="dpmem-hot-") as folder:
    ledger_store = SQLiteLedgerStore(os.path.join(folder, "ledger.db"))
    kwargs = {{}} if {deadline} else {{"turn_deadline_s": None}}
    session = DurableSession.open(loaded.interface, ledger_store, "user", "bench", loaded.store("M"), SeededRandomSource(0), **kwargs)
    session.run_turn("dinner")
    figures, cpu = [], []
    for _ in range(5):
        start, start_cpu = time.perf_counter(), time.process_time()
        for _ in range({turns}):
            session.run_turn("dinner")
        figures.append((time.perf_counter() - start) / {turns} * 1e3)
        cpu.append((time.process_time() - start_cpu) / {turns} * 1e3)
print(json.dumps({{"wall": statistics.median(figures), "CPU": statistics.median(cpu)}}))
"""

HELP = "import sys; from dpmem_ref.cli import main; sys.argv = ['dpmem', '--help']; sys.exit(main())"
RUN = ("import sys; from dpmem_ref.cli import main; sys.argv = ['dpmem', 'run', 'examples/figure2.toml', '--store', 'M', "
       "'--queries', 'examples/figure2-queries.txt', '--seed', '0', '--no-release-deadline']; sys.exit(main())")
AUDIT = ("import sys; from dpmem_ref.cli import main; sys.argv = ['dpmem', 'audit', 'examples/figure2.toml', '--store-a', 'M', "
         "'--store-b', 'M_no_diabetes', '--horizon', '16']; sys.exit(main())")


def _environment(root: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=f"{root}:{root}/eval", DPMEM_LEDGER_KEY="bench-hot-path-key-0123456789abcdef")


def _in_process(code: str, root: str) -> dict[str, float]:
    """The cell's figures: {"": value}, or {"wall": ..., "CPU": ...} for the durable cells."""
    done = subprocess.run([sys.executable, "-P", "-c", code], env=_environment(root), cwd=root, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"cell failed in {root}: {done.stderr.strip().splitlines()[-1:]}")
    value = json.loads(done.stdout.strip().splitlines()[-1])
    return {key: float(figure) for key, figure in value.items()} if isinstance(value, dict) else {"": float(value)}


def _wall(code: str, root: str, repeats: int = 3) -> tuple[float, str]:
    """Milliseconds of a fresh interpreter running `code` (median of `repeats`), and its stdout."""
    figures, output = [], ""
    for _ in range(repeats):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-P", "-c", code], env=_environment(root), cwd=root, capture_output=True, text=True)
        figures.append((time.perf_counter() - start) * 1e3)
        if done.returncode != 0:
            raise SystemExit(f"{code!r} failed in {root}: {done.stderr.strip().splitlines()[-1:]}")
        output = done.stdout
    return statistics.median(figures), output


def cells(turns: int, durable_turns: int) -> list[tuple[str, str, object]]:
    """(label, unit, how to measure it in one tree)."""
    bench = str(HERE)
    return [
        ("build 5 views", "us", BUILD_CELL.format(views=5, kind="paper", calls=1000)),
        ("build 1,024 views, random", "us", BUILD_CELL.format(views=1024, kind="random", calls=10)),
        ("build 1,024 views, one-hot", "us", BUILD_CELL.format(views=1024, kind="one-hot", calls=10)),
        ("turn, 6 slots", "us", TURN_CELL.format(bench=bench, repeats=15, turns=max(turns // 3, 1))),
        ("durable SQLite turn", "ms", DURABLE_CELL.format(bench=bench, turns=durable_turns, deadline=False)),
        ("durable SQLite turn + deadline", "ms", DURABLE_CELL.format(bench=bench, turns=durable_turns, deadline=True)),
        ("python -c 'import dpmem_ref'", "ms", ("wall", "import dpmem_ref")),
        ("dpmem --help", "ms", ("wall", HELP)),
        ("dpmem run figure2 (10 turns, seed 0)", "ms", ("wall", RUN)),
        ("dpmem audit figure2 (T = 16)", "ms", ("wall", AUDIT)),
    ]


def run(base: str, rounds: int, turns: int, durable_turns: int, only: list[str] | None = None) -> None:
    here = str(ROOT)
    trees = {"new": here, "base": base}
    load_before = os.getloadavg()
    chosen = [c for c in cells(turns, durable_turns) if not only or any(word in c[0] for word in only)]
    figures: dict[str, dict[str, list[float]]] = {}
    units: dict[str, str] = {}
    helps: dict[str, str] = {}
    for index in range(rounds):
        order = ("new", "base") if index % 2 == 0 else ("base", "new")
        for label, unit, how in chosen:
            for tree in order:
                if isinstance(how, tuple):
                    value, output = _wall(how[1], trees[tree])
                    values = {"": value}
                    if "--help" in label or "run figure2" in label:
                        helps[f"{label} {tree}"] = output
                else:
                    values = _in_process(str(how), trees[tree])
                for key, value in values.items():
                    row = f"{label} ({key})" if key else label
                    units[row] = unit
                    figures.setdefault(row, {"new": [], "base": []})[tree].append(value)
    load_after = os.getloadavg()
    print(f"hot path: this tree {here} vs base {base}; {rounds} rounds, trees alternating, fresh interpreter per figure")
    print(f"load average (1, 5, 15 min): before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}; {os.cpu_count()} CPUs")
    print("base / new = ratio of the medians; paired = median over rounds of base_i / new_i (same round, adjacent runs)")
    print("| cell | unit | base | new | base / new | paired |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for row, per in figures.items():
        old, new = statistics.median(per["base"]), statistics.median(per["new"])
        paired = statistics.median(b / n for b, n in zip(per["base"], per["new"], strict=True))
        print(f"| {row} | {units[row]} | {old:,.1f} | {new:,.1f} | {old / new:.2f}x | {paired:.2f}x |")
    for label in ("dpmem --help", "dpmem run figure2 (10 turns, seed 0)"):
        if f"{label} new" in helps:
            print(f"{label}: output identical in both trees:", helps[f"{label} new"] == helps[f"{label} base"])
    print(json.dumps(figures))
