"""Timing side channel of the exact EM sampler: M vs M' latency, before and after mitigation.

For each setting, draws N releases under M and under M' (interleaved, so drift hits both
alike), records the latency from start to release, and prints the two-sample KS
statistic (scipy's p-value when scipy is installed) and the mean difference:
- plain: the view is released as soon as the exact sampler returns;
- deadline: `dpmem_ref.timing.DeadlineRelease` with a deadline calibrated on the public
  worst-case distribution (eps, Delta and vocabulary size only).

Settings:
- figure2-food: the paper's running example, food slot, eps = 2/3, Delta = 3/5, store M
  versus M_no_diabetes and versus `neutral` (the kernel's own plan_slot distributions);
- stress: 16 views, eps = 2, Delta = 3/5, one view at score 1 and the rest at 0 (M)
  versus all scores 0 (M'): the highest-contrast pair the score range allows.

Usage: .venv/bin/python benchmarks/timing_side_channel.py [--draws N] [--seed S]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from fractions import Fraction
from pathlib import Path

from dpmem_ref.config import load_interface_file
from dpmem_ref.interface import PublicPrefix
from dpmem_ref.mechanism import ReleaseDistribution, exponential_mechanism
from dpmem_ref.randomness import SeededRandomSource
from dpmem_ref.timing import DeadlineRelease, calibrate_deadline, ks_statistic, plain_release, public_round_bound
from dpmem_ref.turn import plan_slot, zero_ledgers

ROOT = Path(__file__).resolve().parents[1]


def figure2_pair(other: str) -> tuple[ReleaseDistribution, ReleaseDistribution, int, Fraction, Fraction]:
    loaded = load_interface_file(ROOT / "examples" / "figure2.toml")
    interface = loaded.interface
    prefix = PublicPrefix(history=(), query=interface.query("affordable-dinner"))
    plans = [plan_slot(interface, zero_ledgers(interface), prefix, "food", loaded.store(name)) for name in ("M", other)]
    vocabulary = interface.vocabulary("food")
    return (
        plans[0].distribution,
        plans[1].distribution,
        len(vocabulary.views),
        plans[0].epsilon,
        interface.scorer.sensitivity(vocabulary),
    )


def stress_pair() -> tuple[ReleaseDistribution, ReleaseDistribution, int, Fraction, Fraction]:
    views = tuple(f"v{i}" for i in range(16))
    epsilon, sensitivity = Fraction(2), Fraction(3, 5)
    high = exponential_mechanism(views, [Fraction(1)] + [Fraction(0)] * 15, epsilon, sensitivity)
    flat = exponential_mechanism(views, [Fraction(0)] * 16, epsilon, sensitivity)
    return high, flat, 16, epsilon, sensitivity


def ks_pvalue(a: list[int], b: list[int]) -> str:
    try:
        from scipy.stats import ks_2samp  # type: ignore[import-untyped]
    except ImportError:
        return "n/a (scipy not installed)"
    return f"{ks_2samp(a, b).pvalue:.3g}"


def measure(
    name: str,
    pair: tuple[ReleaseDistribution, ReleaseDistribution, int, Fraction, Fraction],
    draws: int,
    seed: int,
) -> dict[str, float]:
    dist_m, dist_m2, views, epsilon, sensitivity = pair
    source_m, source_m2 = SeededRandomSource(seed), SeededRandomSource(seed + 1)
    for _ in range(200):  # warm-up
        plain_release(dist_m, source_m)
        plain_release(dist_m2, source_m2)
    plain_m: list[int] = []
    plain_m2: list[int] = []
    for _ in range(draws):
        plain_m.append(plain_release(dist_m, source_m).elapsed_ns)
        plain_m2.append(plain_release(dist_m2, source_m2).elapsed_ns)
    deadline = calibrate_deadline(views, epsilon, sensitivity, SeededRandomSource(seed + 2), trials=2000)
    release = DeadlineRelease(deadline_s=deadline)
    fixed_m: list[int] = []
    fixed_m2: list[int] = []
    overruns = 0
    for _ in range(draws):
        a = release.sample(dist_m, source_m)
        b = release.sample(dist_m2, source_m2)
        fixed_m.append(a.elapsed_ns)
        fixed_m2.append(b.elapsed_ns)
        overruns += a.overran + b.overran
    ks_plain, ks_fixed = ks_statistic(plain_m, plain_m2), ks_statistic(fixed_m, fixed_m2)
    mean_plain = (statistics.fmean(plain_m) - statistics.fmean(plain_m2)) / 1000
    mean_fixed = (statistics.fmean(fixed_m) - statistics.fmean(fixed_m2)) / 1000
    rounds = public_round_bound(epsilon, sensitivity, 1e-9)
    print(f"\n== {name}: {views} views, eps = {epsilon}, Delta = {sensitivity}, {draws} draws per store")
    print(f"   public round bound R(1e-9) = {rounds}; calibrated deadline = {deadline * 1e6:.1f} us")
    print(
        f"   plain     mean M {statistics.fmean(plain_m) / 1000:8.2f} us, M' {statistics.fmean(plain_m2) / 1000:8.2f} us, "
        f"diff {mean_plain:+8.2f} us; median M {statistics.median(plain_m) / 1000:8.2f} us, "
        f"M' {statistics.median(plain_m2) / 1000:8.2f} us; KS = {ks_plain:.4f} (p = {ks_pvalue(plain_m, plain_m2)})"
    )
    print(
        f"   deadline  mean M {statistics.fmean(fixed_m) / 1000:8.2f} us, M' {statistics.fmean(fixed_m2) / 1000:8.2f} us, "
        f"diff {mean_fixed:+8.2f} us; median M {statistics.median(fixed_m) / 1000:8.2f} us, "
        f"M' {statistics.median(fixed_m2) / 1000:8.2f} us; KS = {ks_fixed:.4f} (p = {ks_pvalue(fixed_m, fixed_m2)}), "
        f"overruns {overruns}"
    )
    return {
        "ks_plain": ks_plain,
        "ks_deadline": ks_fixed,
        "mean_diff_plain_us": mean_plain,
        "mean_diff_deadline_us": mean_fixed,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--draws", type=int, default=5000, help="releases per store and setting (default 5000)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not 10 <= args.draws <= 1_000_000:
        parser.error("--draws: expected an integer in 10..1000000")
    print(f"python {sys.version.split()[0]}; latency = start of selection -> release (perf_counter_ns)")
    measure("figure2-food M vs M_no_diabetes", figure2_pair("M_no_diabetes"), args.draws, args.seed)
    measure("figure2-food M vs neutral", figure2_pair("neutral"), args.draws, args.seed)
    measure("stress (16 views, eps 2)", stress_pair(), args.draws, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
