"""Audit time, memory and states of the exact engine, beside the starting main (one run).

    .venv/bin/python benchmarks/bench_audit.py                      # the issue-12 cells, ratios to main
    .venv/bin/python benchmarks/bench_audit.py --base /work/base    # where the old main is checked out
    .venv/bin/python benchmarks/bench_audit.py --horizons 4 8 16 32 64 256   # growth in T (this tree)
    .venv/bin/python benchmarks/bench_audit.py --naive              # plus the naive T = 6 cross-check

Cells (`audit_interfaces.py` builds the larger interfaces, deterministically): the paper's
evaluation configuration (`examples/evaluation.toml`, 4 attributes, K = 3) at T = 32 and
256; 6 and 8 attributes with K = 3 (6 slots, T = 32); 4 attributes with K = 16 (T = 32).
Pair: M_diabetes vs neutral. Every cell runs in a fresh process (`--worker`), audited as
`dpmem audit` does (`worst_case_loss(..., strict=False)`, the whole catalogue every turn),
once with this tree and once with `--base` on PYTHONPATH, side by side in this one run;
max RSS is the worker's peak resident memory. A base cell that runs past `--timeout`
seconds is stopped and reported as "> timeout" (the issue's figures for the old main are
printed beside it).

--naive enumerates every transcript of a T = 6 slice under both stores
(`enumerate_transcripts`, exponential in T), takes the largest log ratio in each
direction and compares it with the memoized engine on the same slice, at mp.dps = 60. The
slice restricts the query catalogue (see NAIVE_QUERIES) to keep the enumeration tractable.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Hashable, Sequence
from pathlib import Path

import mpmath

# The worker also runs against the old main (--base), so this tree's newer modules
# (dpmem_ref.audit) are imported only where this tree alone is measured.
from dpmem_ref.analysis import enumerate_transcripts, worst_case_loss
from dpmem_ref.config import load_interface_file

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = Path(__file__).resolve().parent
# (label, attributes, K, horizon, the figure for the old main on this machine)
CELLS = (
    ("evaluation.toml, T = 32", 4, 3, 32, ""),
    ("evaluation.toml, T = 256", 4, 3, 256, "issue: 3.7 s, 70k states"),
    ("6 attributes, K = 3, T = 32", 6, 3, 32, "issue: 14 s, 206k states"),
    ("8 attributes, K = 3, T = 32", 8, 3, 32, "issue: 243 s, 4.5 GB"),
    ("4 attributes, K = 16, T = 32", 4, 16, 32, "issue: 214 s, 4.5 GB"),
)
PAIR = ("M_diabetes", "neutral")
CONFIG = ROOT / "examples" / "evaluation.toml"
# Four queries that read I_diabetes from three slots (health twice, food, schedule): every
# admitted selection is charged to diabetes, so at most K = 3 of them branch over their whole
# vocabulary and the enumeration stays tractable.
NAIVE_QUERIES = ("diabetes.checkup-prep", "diabetes.steady-energy", "diabetes.dinner-ideas", "diabetes.morning-routine")


def run_horizons(store_a: str, store_b: str, horizons: Sequence[int]) -> list[tuple[int, float, int, str, bool]]:
    from dpmem_ref.audit import certify, decide_adjacency

    rows = []
    for horizon in horizons:
        loaded = load_interface_file(CONFIG)  # fresh: no score or plan memo from a previous T
        start = time.perf_counter()
        result = worst_case_loss(loaded.interface, loaded.store(store_a), loaded.store(store_b), horizon, strict=False)
        seconds = time.perf_counter() - start
        with mpmath.workdps(60):
            loss = "inf" if result.worst.is_infinite else mpmath.nstr(result.worst.midpoint, 20)
        holds, _ = certify(result, decide_adjacency(loaded, store_a, store_b).bound)
        rows.append((horizon, seconds, result.states_explored, loss, holds))
    return rows


def naive_worst(
    store_a: str, store_b: str, horizon: int, queries: Sequence[str]
) -> tuple[mpmath.mpf | str, mpmath.mpf | str, int]:
    """max over all transcripts of log Pr[w | A] - log Pr[w | B] (and reversed), by brute force."""
    loaded = load_interface_file(CONFIG)
    interface = loaded.interface
    catalogue = [interface.query(name) for name in queries]

    def table(store: str) -> dict[Hashable, mpmath.mpf]:
        out = {}
        for turns, logp in enumerate_transcripts(
            interface, loaded.store(store), horizon, queries=catalogue, strict=False
        ):
            out[tuple((t.query, t.views, t.control) for t in turns)] = logp
        return out

    with mpmath.workdps(60):
        on_a, on_b = table(store_a), table(store_b)

        def worst(num: dict[Hashable, mpmath.mpf], den: dict[Hashable, mpmath.mpf]) -> mpmath.mpf | str:
            best: mpmath.mpf | None = None
            for key, logp in num.items():
                if key not in den:
                    return "inf"
                value = logp - den[key]
                best = value if best is None or value > best else best
            assert best is not None
            return best

        return worst(on_a, on_b), worst(on_b, on_a), len(on_a) + len(on_b)


def naive_check(store_a: str, store_b: str, horizon: int = 6) -> None:
    start = time.perf_counter()
    naive_ab, naive_ba, count = naive_worst(store_a, store_b, horizon, NAIVE_QUERIES)
    naive_seconds = time.perf_counter() - start
    loaded = load_interface_file(CONFIG)
    catalogue = [loaded.interface.query(name) for name in NAIVE_QUERIES]
    memo = worst_case_loss(
        loaded.interface, loaded.store(store_a), loaded.store(store_b), horizon, queries=catalogue, strict=False
    )
    print(f"\nnaive enumeration vs memoized engine, T = {horizon}, queries {', '.join(NAIVE_QUERIES)}")
    print(f"  naive: {count} transcripts (both stores) in {naive_seconds:.1f} s; memo: {memo.states_explored} states")
    with mpmath.workdps(60):
        for label, naive, direction in (("a over b", naive_ab, memo.a_over_b), ("b over a", naive_ba, memo.b_over_a)):
            if isinstance(naive, str) or direction.is_infinite:
                print(f"  {label}: naive {naive}, memo {'inf' if direction.is_infinite else direction.midpoint}")
                continue
            difference = abs(naive - direction.midpoint)
            digits = "all 60" if difference == 0 else f"{float(-mpmath.log10(difference / abs(naive))):.1f}"
            print(f"  {label}: naive {mpmath.nstr(naive, 45)}")
            print(f"  {'':8}  memo  {mpmath.nstr(direction.midpoint, 45)}")
            print(f"  {'':8}  agreeing significant digits: {digits} (naive sums at mp.dps = 60)")


def worker(attributes: int, k: int, horizon: int, store_a: str, store_b: str) -> None:
    """One cell in this process, with whichever dpmem_ref is on the path; prints JSON."""
    sys.path.insert(0, str(BENCHMARKS))
    from audit_interfaces import interface_dict

    from dpmem_ref.analysis import worst_case_loss
    from dpmem_ref.config import interface_from_dict

    loaded = interface_from_dict(interface_dict(attributes, k))
    start = time.perf_counter()
    result = worst_case_loss(loaded.interface, loaded.store(store_a), loaded.store(store_b), horizon, strict=False)
    seconds = time.perf_counter() - start
    with mpmath.workdps(60):
        loss = "inf" if result.worst.is_infinite else mpmath.nstr(result.worst.midpoint, 45)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "states": result.states_explored, "loss": loss, "rss_mb": rss}))


def run_cell(root: Path, attributes: int, k: int, horizon: int, timeout: float) -> dict[str, object] | None:
    """A worker process for one cell against the tree at `root`; None past the timeout."""
    env = dict(os.environ, PYTHONPATH=f"{root}:{root / 'eval'}")
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", str(attributes), str(k), str(horizon), *PAIR]
    try:
        done = subprocess.run(command, env=env, cwd=root, capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def side_by_side(base: Path, timeout: float) -> None:
    print(f"exact audit, {PAIR[0]} vs {PAIR[1]}: this tree vs {base} (fresh process per cell, one run)")
    header = f"{'cell':<30} {'new s':>8} {'new MB':>7} {'new states':>10} {'main s':>9} {'main MB':>8} {'main states':>11} {'speed-up':>9}"
    print(header)
    for label, attributes, k, horizon, quoted in CELLS:
        new = run_cell(ROOT, attributes, k, horizon, timeout=600)
        old = run_cell(base, attributes, k, horizon, timeout)
        assert new is not None
        if old is None:
            main = f"{'> ' + str(int(timeout)):>9} {'-':>8} {'-':>11} {'> ' + format(timeout / float(new['seconds']), '.0f') + 'x':>9}"
        else:
            agree = "" if old["loss"] == new["loss"] else "  LOSS DIFFERS"
            ratio = float(old["seconds"]) / float(new["seconds"])
            main = (
                f"{float(old['seconds']):>9.3f} {float(old['rss_mb']):>8.0f} {old['states']:>11} {ratio:>8.1f}x{agree}"
            )
        print(
            f"{label:<30} {float(new['seconds']):>8.3f} {float(new['rss_mb']):>7.0f} {new['states']:>10} {main}"
            + (f"  ({quoted})" if quoted and old is None else "")
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--worker", nargs=5, metavar=("A", "K", "T", "STORE_A", "STORE_B"), help=argparse.SUPPRESS)
    parser.add_argument("--base", type=Path, default=Path("/work/base"), help="checkout of the old main")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a base cell is stopped")
    parser.add_argument("--store-a", default="M_diabetes")
    parser.add_argument("--store-b", default="neutral")
    parser.add_argument("--horizons", type=int, nargs="+", default=None, help="growth in T, this tree only")
    parser.add_argument("--naive", action="store_true", help="also run the naive T = 6 cross-check")
    args = parser.parse_args(argv)
    if args.worker:
        a, k, t, store_a, store_b = args.worker
        worker(int(a), int(k), int(t), store_a, store_b)
        return 0
    if args.horizons:
        print(f"exact audit of {CONFIG.relative_to(ROOT)}: {args.store_a} vs {args.store_b}, full catalogue")
        print(f"{'T':>4} {'seconds':>9} {'states':>8} {'time x':>7} {'states x':>9}  worst-case loss        holds")
        previous: tuple[float, int] | None = None
        for horizon, seconds, states, loss, holds in run_horizons(args.store_a, args.store_b, args.horizons):
            ratio_t = f"{seconds / previous[0]:.2f}" if previous else "-"
            ratio_s = f"{states / previous[1]:.2f}" if previous else "-"
            print(f"{horizon:>4} {seconds:>9.3f} {states:>8} {ratio_t:>7} {ratio_s:>9}  {loss:<22} {holds}")
            previous = (seconds, states)
    elif args.base.is_dir():
        side_by_side(args.base, args.timeout)
    else:
        print(f"no old main at {args.base}: pass --base, or --horizons for this tree alone")
    if args.naive:
        naive_check(args.store_a, args.store_b)
    return 0


if __name__ == "__main__":
    sys.exit(main())
