"""Audit time, memory and states of the exact engine, beside the starting main (one run).

    .venv/bin/python benchmarks/bench_audit.py                      # the issue-12 cells, ratios to main
    .venv/bin/python benchmarks/bench_audit.py --base /work/base    # where the old main is checked out
    .venv/bin/python benchmarks/bench_audit.py --horizons 4 8 16 32 64 256   # growth in T (this tree)
    .venv/bin/python benchmarks/bench_audit.py --naive              # plus the naive T = 6 cross-check
    .venv/bin/python benchmarks/bench_audit.py --round3 --base /tmp/base-audit --timeout 120   # issue-26 cells vs 1c454c6
    .venv/bin/python benchmarks/bench_audit.py --kappa              # kappa by branch and bound, A = 1..40
    .venv/bin/python benchmarks/bench_audit.py --round4 --base /tmp/base-audit   # issue-35 cells vs bbc32bb

Cells (`audit_interfaces.py` builds the larger interfaces, deterministically): the paper's
evaluation configuration (`examples/evaluation.toml`, 4 attributes, K = 3) at T = 32 and
256; 6 and 8 attributes with K = 3 (6 slots, T = 32); 4 attributes with K = 16 (T = 32).
Pair: M_diabetes vs neutral. Every cell runs in a fresh process (`--worker`), audited as
`dpmem audit` does (`worst_case_loss(..., strict=False)`, the whole catalogue every turn),
once with this tree and once with `--base` on PYTHONPATH, side by side in this one run;
max RSS is the worker's peak resident memory. A base cell that runs past `--timeout`
seconds is stopped and reported as "> timeout" (the issue's figures for the old main are
printed beside it).

--round4 (issue 35: refusal only when the work is real): chains of coupled attributes
(`tests/audit_generators.py` `coupled_case`: attribute i protects positions i and i + 1)
with A = 8..16 and K = 2, 3 at T = 32, one- and two-slot turns; 3 coupled attributes, every
group differing, K = 4..128 at T = 256; the chain of 8 with K = 3 at T = 8..256. Both trees
run at the default --max-states first; a cell the base refuses is rerun there without a
limit, time-boxed at --timeout (10 s unless given), and printed as "> N s" past it. CPU
seconds and states (states_explored; built = the states counted against --max-states).

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
from dpmem_ref.config.load import load_interface_file

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = Path(__file__).resolve().parent
# (label, shape, attributes, K, horizon, the figure for the old main on this machine).
# Shapes (audit_interfaces.py): "one" = M_diabetes vs neutral (one differing group);
# "all" = M_all vs neutral (every group differs: a Corollary 1 pair); "two" = the same pair
# with the queries paired into two-slot turns.
CELLS = (
    ("evaluation.toml, T = 32", "one", 4, 3, 32, ""),
    ("evaluation.toml, T = 256", "one", 4, 3, 256, "issue: 3.7 s, 70k states"),
    ("6 attributes, K = 3, T = 32", "one", 6, 3, 32, "issue: 14 s, 206k states"),
    ("8 attributes, K = 3, T = 32", "one", 8, 3, 32, "issue: 243 s, 4.5 GB"),
    ("4 attributes, K = 16, T = 32", "one", 4, 16, 32, "issue: 214 s, 4.5 GB"),
)
# Issue 26, point 1: coupled attributes at scale (targets: < 10 s, < 10 s, < 60 s, < 10 s).
# The quoted figures are the last measurements of the starting main, 1c454c6
# (docs/performance.md), printed where its cell is stopped at --timeout.
ROUND3_CELLS = (
    ("6 attrs, all differ, K=3, T=32", "all", 6, 3, 32, "1c454c6: 0.83 CPU-s, 3,209 states"),
    ("8 attrs, all differ, K=3, T=32", "all", 8, 3, 32, "1c454c6: 5.58 CPU-s, 20,489 states"),
    ("two-slot, 8 attrs, K=3, T=32", "two", 8, 3, 32, "1c454c6: 6.32 CPU-s, 32,082 states"),
    ("12 attrs, all differ, K=3, T=32", "all", 12, 3, 32, "1c454c6: 9.23 CPU-s, 34,924 states"),
    ("3 attrs, all differ, K=64, T=256", "all", 3, 64, 256, "1c454c6: 47.3 CPU-s, 274,674 states"),
)
# Issue 35 (round 4): (label, shape, attributes, K, horizon). "chain" / "chain2": coupled_case,
# one- / two-slot turns.
ROUND4_CELLS = (
    *((f"chain A={a}, K={k}, T=32", "chain", a, k, 32) for k in (2, 3) for a in (8, 10, 12, 14, 16)),
    *((f"two-slot chain A={a}, K={k}, T=32", "chain2", a, k, 32) for a, k in ((10, 3), (16, 2), (16, 3))),
    *((f"3 attrs all differ, K={k}, T=256", "all", 3, k, 256) for k in (4, 8, 16, 32, 64, 128)),
    *((f"chain A=8, K=3, T={t}", "chain", 8, 3, t) for t in (8, 16, 24, 32, 64, 128, 256)),
)
PAIRS = {
    "one": ("M_diabetes", "neutral"),
    "all": ("M_all", "neutral"),
    "two": ("M_all", "neutral"),
    "chain": ("M", "M_prime"),
    "chain2": ("M", "M_prime"),
}
PAIR = PAIRS["one"]
CONFIG = ROOT / "examples" / "evaluation.toml"
# Four queries that read I_diabetes from three slots (health twice, food, schedule): every
# admitted selection is charged to diabetes, so at most K = 3 of them branch over their whole
# vocabulary and the enumeration stays tractable.
NAIVE_QUERIES = ("diabetes.checkup-prep", "diabetes.steady-energy", "diabetes.dinner-ideas", "diabetes.morning-routine")


def run_horizons(store_a: str, store_b: str, horizons: Sequence[int]) -> list[tuple[int, float, int, str, bool]]:
    from dpmem_ref.audit.adjacency import decide_adjacency
    from dpmem_ref.audit.verdict import certify

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


def worker(
    attributes: int, k: int, horizon: int, store_a: str, store_b: str, shape: str = "one", max_states: int = 10**9
) -> None:
    """One cell in this process, with whichever dpmem_ref is on the path; prints JSON (a
    refusal at `max_states` as {"refused": the message})."""
    sys.path.insert(0, str(BENCHMARKS))
    sys.path.insert(0, str(ROOT / "tests"))
    from audit_generators import coupled_case
    from audit_interfaces import all_differing_dict, interface_dict, two_slot_dict

    from dpmem_ref.analysis import worst_case_loss
    from dpmem_ref.config.load import interface_from_dict
    from dpmem_ref.core.errors import InputError

    builders = {
        "one": interface_dict,
        "all": all_differing_dict,
        "two": two_slot_dict,
        "chain": lambda a, k: coupled_case(a, k)[0],
        "chain2": lambda a, k: coupled_case(a, k, two_slot=True)[0],
    }
    loaded = interface_from_dict(builders[shape](attributes, k))
    start, cpu = time.perf_counter(), time.process_time()
    try:
        result = worst_case_loss(
            loaded.interface, loaded.store(store_a), loaded.store(store_b), horizon, strict=False, max_states=max_states
        )
    except InputError as error:
        print(json.dumps({"refused": str(error), "cpu": time.process_time() - cpu}))
        return
    seconds = time.perf_counter() - start
    with mpmath.workdps(60):
        loss = "inf" if result.worst.is_infinite else mpmath.nstr(result.worst.midpoint, 45)
    cpu = time.process_time() - cpu
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    built = getattr(result, "states_built", None)
    print(
        json.dumps(
            {"seconds": seconds, "cpu": cpu, "states": result.states_explored, "built": built, "loss": loss, "rss_mb": rss}
        )
    )


def run_cell(
    root: Path, attributes: int, k: int, horizon: int, timeout: float, shape: str = "one", max_states: int = 10**9
) -> dict[str, object] | None:
    """A worker process for one cell against the tree at `root`; None past the timeout."""
    env = dict(os.environ, PYTHONPATH=f"{root}:{root / 'eval'}")
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", str(attributes), str(k), str(horizon)]
    command += [*PAIRS[shape], "--shape", shape, "--max-states", str(max_states)]
    try:
        done = subprocess.run(command, env=env, cwd=root, capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def round4(base: Path, timeout: float, new_timeout: float) -> None:
    """Issue 35's cells with this tree and with `base`, at the default --max-states (and,
    where the base refuses, the base again without a limit, time-boxed)."""
    from dpmem_ref.analysis import DEFAULT_MAX_STATES

    print(f"exact audit, issue 35: this tree vs {base} (fresh process per cell; --max-states {DEFAULT_MAX_STATES})")
    print(f"{'cell':<36} {'new CPU s':>9} {'new states':>10} {'new built':>9}   main (same run)")
    for label, shape, attributes, k, horizon in ROUND4_CELLS:
        new = run_cell(ROOT, attributes, k, horizon, new_timeout, shape, DEFAULT_MAX_STATES)
        if new is None:
            mine = f"{label:<36} {'> ' + str(int(new_timeout)) + ' s':>9} {'-':>10} {'-':>9}"
        elif "refused" in new:
            mine = f"{label:<36} {'refused':>9} {'-':>10} {'-':>9}"
        else:
            mine = f"{label:<36} {float(new['cpu']):>9.2f} {new['states']:>10} {new['built']!s:>9}"
        old = run_cell(base, attributes, k, horizon, timeout, shape, DEFAULT_MAX_STATES)
        if old is not None and "refused" in old:
            estimate = str(old["refused"]).split("needs ")[1].split(" memoized")[0]
            unbounded = run_cell(base, attributes, k, horizon, timeout, shape)
            theirs = f"refused ({estimate}); unbounded: " + _brief(unbounded, timeout, new)
        else:
            theirs = _brief(old, timeout, new)
        print(f"{mine}   {theirs}")


def _brief(old: dict[str, object] | None, timeout: float, new: dict[str, object] | None) -> str:
    """A base cell in a few words: CPU seconds and states (or past the time box), the CPU
    ratio and whether the losses agree to the 45 digits printed."""
    if old is None:
        return f"> {int(timeout)} s"
    if "refused" in old:
        return "refused at --max-states 10^9 too"
    text = f"{float(old['cpu']):.2f} CPU s, {old['states']} states"
    if new is not None and "loss" in new:
        ratio = float(old["cpu"]) / max(float(new["cpu"]), 1e-9)  # type: ignore[arg-type]
        text += f", {ratio:.1f}x, {'same loss' if old['loss'] == new['loss'] else 'LOSS DIFFERS'}"
    return text


def side_by_side(base: Path, timeout: float, cells: Sequence[tuple[str, str, int, int, int, str]], new_timeout: float) -> None:
    """Each cell with this tree and with `base`, one after the other in this one run: wall
    and CPU seconds, peak RSS, states, the CPU ratio, and whether the losses agree (both
    printed to 45 digits)."""
    print(f"exact audit: this tree vs {base} (fresh process per cell, one run; pairs {PAIRS})")
    header = (
        f"{'cell':<34} {'new s':>7} {'new CPU':>8} {'new MB':>7} {'new states':>10} "
        f"{'main s':>8} {'main CPU':>9} {'main MB':>8} {'main states':>11} {'CPU ratio':>10}"
    )
    print(header)
    for label, shape, attributes, k, horizon, quoted in cells:
        new = run_cell(ROOT, attributes, k, horizon, new_timeout, shape)
        old = run_cell(base, attributes, k, horizon, timeout, shape)
        if new is None:
            print(f"{label:<34} {'> ' + str(int(new_timeout)):>7}")
            continue
        mine = (
            f"{label:<34} {float(new['seconds']):>7.2f} {float(new.get('cpu', 0.0)):>8.2f} "
            f"{float(new['rss_mb']):>7.0f} {new['states']:>10}"
        )
        if old is None:
            print(f"{mine} {'> ' + str(int(timeout)):>8} {'-':>9} {'-':>8} {'-':>11} {'-':>10}  ({quoted})")
            continue
        agree = "same loss" if old["loss"] == new["loss"] else "LOSS DIFFERS"
        ratio = float(old.get("cpu", old["seconds"])) / max(float(new.get("cpu", new["seconds"])), 1e-9)
        print(
            f"{mine} {float(old['seconds']):>8.2f} {float(old.get('cpu', 0.0)):>9.2f} {float(old['rss_mb']):>8.0f} "
            f"{old['states']:>11} {ratio:>9.1f}x  {agree}"
        )


def kappa_times() -> None:
    """kappa (Eq. 8) by branch and bound, A = 1..40 attributes over 30 positions, every
    position differing; groups of 2-8 positions, caps 1..9 (seeded), plus equal caps."""
    import random
    from fractions import Fraction

    from dpmem_ref.audit.cover import minimum_cover
    from dpmem_ref.core.policy import Attribute, Layout, Policy

    print(f"{'A':>3} {'seconds':>9} {'seconds (equal caps)':>21}  kappa")
    worst = 0.0
    for count in range(1, 41):
        row = []
        for equal in (False, True):
            rng = random.Random(count)
            groups = [frozenset(rng.sample(range(1, 31), rng.randint(2, 8))) for _ in range(count)]
            caps = [Fraction(1) if equal else Fraction(rng.randint(1, 9)) for _ in range(count)]
            policy = Policy(Layout(("s",) * 30), tuple(Attribute(f"a{i}", g, c) for i, (g, c) in enumerate(zip(groups, caps, strict=True))))
            differing = frozenset().union(*groups)
            start = time.perf_counter()
            found = minimum_cover(policy, differing)
            row.append((time.perf_counter() - start, found))
        worst = max(worst, row[0][0], row[1][0])
        kappa = "inf" if row[0][1] is None else str(row[0][1].cost)
        print(f"{count:>3} {row[0][0]:>9.4f} {row[1][0]:>21.4f}  {kappa}")
    print(f"slowest: {worst:.4f} s")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--worker", nargs=5, metavar=("A", "K", "T", "STORE_A", "STORE_B"), help=argparse.SUPPRESS)
    parser.add_argument("--shape", default="one", choices=sorted(PAIRS), help=argparse.SUPPRESS)
    parser.add_argument("--round3", action="store_true", help="the issue-26 cells (coupled attributes at scale) instead")
    parser.add_argument("--round4", action="store_true", help="the issue-35 cells (refusals, coupled chains, K, T)")
    parser.add_argument("--max-states", type=int, default=10**9, help=argparse.SUPPRESS)
    parser.add_argument("--new-timeout", type=float, default=600.0, help="seconds before a cell of this tree is stopped")
    parser.add_argument("--kappa", action="store_true", help="kappa's branch and bound for A = 1..40 (times)")
    parser.add_argument("--base", type=Path, default=Path("/work/base"), help="checkout of the old main")
    parser.add_argument("--timeout", type=float, default=None, help="seconds before a base cell is stopped (60; 10 for --round4)")
    parser.add_argument("--store-a", default="M_diabetes")
    parser.add_argument("--store-b", default="neutral")
    parser.add_argument("--horizons", type=int, nargs="+", default=None, help="growth in T, this tree only")
    parser.add_argument("--naive", action="store_true", help="also run the naive T = 6 cross-check")
    args = parser.parse_args(argv)
    if args.worker:
        a, k, t, store_a, store_b = args.worker
        worker(int(a), int(k), int(t), store_a, store_b, args.shape, args.max_states)
        return 0
    if args.kappa:
        kappa_times()
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
    elif args.round4 and args.base.is_dir():
        round4(args.base, 10.0 if args.timeout is None else args.timeout, args.new_timeout)
    elif args.base.is_dir():
        timeout = 60.0 if args.timeout is None else args.timeout
        side_by_side(args.base, timeout, ROUND3_CELLS if args.round3 else CELLS, args.new_timeout)
    else:
        print(f"no old main at {args.base}: pass --base, or --horizons for this tree alone")
    if args.naive:
        naive_check(args.store_a, args.store_b)
    return 0


if __name__ == "__main__":
    sys.exit(main())
