"""Audit time and memoized states of the exact engine on the paper's evaluation configuration.

    .venv/bin/python benchmarks/bench_audit.py                      # T = 4, 8, 16, 32, 64
    .venv/bin/python benchmarks/bench_audit.py --naive              # plus the naive cross-check
    .venv/bin/python benchmarks/bench_audit.py --store-a M_debt_and_job_loss --store-b neutral

For each horizon the file is loaded afresh (no memo carried over between horizons) and
audited exactly as `dpmem audit` does (`worst_case_loss(..., strict=False)`, every query of
the catalogue available at every turn). Growth ratios are seconds(T) / seconds(T/2) and
states(T) / states(T/2).

--naive enumerates every transcript of a T = 6 slice under both stores
(`enumerate_transcripts`, exponential in T), takes the largest log ratio in each
direction and compares it with the memoized engine on the same slice, at mp.dps = 60. The
slice restricts the query catalogue (see NAIVE_QUERIES) to keep the enumeration tractable.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Hashable, Sequence
from pathlib import Path

import mpmath

from dpmem_ref.analysis import enumerate_transcripts, worst_case_loss
from dpmem_ref.audit import certify, decide_adjacency
from dpmem_ref.config import load_interface_file

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "examples" / "evaluation.toml"
HORIZONS = (4, 8, 16, 32, 64)
# Four queries that read I_diabetes from four slots (health, food, fitness; one also reads
# I_pregnancy): every admitted selection is charged to diabetes, so at most K = 3 of them
# branch over their whole vocabulary and the enumeration stays near 4^6 * 4^3 leaves.
NAIVE_QUERIES = ("checkup-prep", "afternoon-energy", "healthy-snacks", "after-dinner-activity")


def run_horizons(store_a: str, store_b: str, horizons: Sequence[int]) -> list[tuple[int, float, int, str, bool]]:
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--store-a", default="M_diabetes")
    parser.add_argument("--store-b", default="neutral")
    parser.add_argument("--horizons", type=int, nargs="+", default=list(HORIZONS))
    parser.add_argument("--naive", action="store_true", help="also run the naive T = 6 cross-check")
    args = parser.parse_args(argv)
    print(f"exact audit of {CONFIG.relative_to(ROOT)}: {args.store_a} vs {args.store_b}, full catalogue")
    print(f"{'T':>4} {'seconds':>9} {'states':>8} {'time x':>7} {'states x':>9}  worst-case loss        holds")
    previous: tuple[float, int] | None = None
    for horizon, seconds, states, loss, holds in run_horizons(args.store_a, args.store_b, args.horizons):
        ratio_t = f"{seconds / previous[0]:.2f}" if previous else "-"
        ratio_s = f"{states / previous[1]:.2f}" if previous else "-"
        print(f"{horizon:>4} {seconds:>9.3f} {states:>8} {ratio_t:>7} {ratio_s:>9}  {loss:<22} {holds}")
        previous = (seconds, states)
    if args.naive:
        naive_check(args.store_a, args.store_b)
    return 0


if __name__ == "__main__":
    sys.exit(main())
