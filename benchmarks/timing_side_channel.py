"""Timing side channel of the exact EM sampler: M vs M' latency, before and after mitigation.

For each setting, draws N releases under M and under M' (interleaved, so drift hits both
alike), records the latency from start to release, and prints the two-sample KS
statistic (scipy's p-value when scipy is installed) and the mean difference:
- plain: the view is released as soon as the exact sampler returns;
- deadline: `dpmem_ref.mechanism.timing.DeadlineRelease` with a deadline calibrated on the public
  worst-case distribution (eps, Delta and vocabulary size only).

Observation points (`--turns`, one run): a 64-view pair (one view at score 1 under M, every
view at 0 under M', eps = 4, Delta = 3/5) served turn by turn by `DurableSession` and by
`dpmem run`, with and without the release deadline (DEFAULT_TURN_DEADLINE_S). Per turn,
measured from the turn's start: the return of `run_turn`, the `on_release` callback, the
kernel's DEBUG log record; for the CLI, the gap between consecutive turn output lines.

Settings (sampler alone):
- figure2-food: the paper's running example, food slot, eps = 2/3, Delta = 3/5, store M
  versus M_no_diabetes and versus `neutral` (the kernel's own plan_slot distributions);
- stress: 16 views, eps = 2, Delta = 3/5, one view at score 1 and the rest at 0 (M)
  versus all scores 0 (M'): the highest-contrast pair the score range allows.

Usage: .venv/bin/python benchmarks/timing_side_channel.py [--draws N] [--seed S]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import statistics
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

from dpmem_ref.cli import main as dpmem_main
from dpmem_ref.config.load import interface_from_dict, load_interface_file
from dpmem_ref.core.transcript import PublicPrefix
from dpmem_ref.ledger import MemoryLedgerStore, SlotRelease
from dpmem_ref.mechanism.construction import exponential_mechanism
from dpmem_ref.mechanism.em import ReleaseDistribution
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.mechanism.timing import (
    DEFAULT_TURN_DEADLINE_S,
    DeadlineRelease,
    calibrate_deadline,
    ks_statistic,
    plain_release,
    public_round_bound,
)
from dpmem_ref.turn import plan_slot, zero_ledgers
from dpmem_ref.turn.durable import DurableSession

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


def pair64(turns: int) -> dict[str, object]:
    """64 views; M holds the one tag of view v1 (score 3/5 + ... = 3/5 vs 0), M' nothing.
    eps = B/K = 4 for every one of `turns` turns (cap 4 * turns, K = turns)."""
    views = {"g": {}} | {f"v{i}": {"compatible": [f"t{i}"], "specific": [f"t{i}"]} for i in range(1, 64)}
    return {
        "name": "pair64",
        "positions": ["s"],
        "attributes": {"a": {"group": [1], "cap": 4 * turns}},
        "budget": {"rule": "online", "K": turns},
        "scorer": {"kind": "linear", "sensitivity": "3/5"},
        "slots": {"s": {"generic": "g", "views": views}},
        "queries": [{"name": "q", "reads": [{"slot": "s", "positions": [1]}]}],
        "stores": {"M": {"1": ["t1"]}, "Mprime": {"1": []}},
    }


class _Stamps(logging.Handler):
    """Records the perf_counter_ns of every log record it sees."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.stamps: list[int] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.stamps.append(time.perf_counter_ns())


def durable_points(turns: int, seed: int, deadline: float | None) -> dict[str, dict[str, list[int]]]:
    """Latency from turn start to return / first callback / first log record, per store."""
    loaded = interface_from_dict(pair64(turns))
    handler = _Stamps()
    log = logging.getLogger("dpmem_ref.durable")
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    points: dict[str, dict[str, list[int]]] = {}
    sessions = {}
    callbacks: list[int] = []

    def on_release(release: SlotRelease) -> None:
        callbacks.append(time.perf_counter_ns())

    for offset, name in enumerate(("M", "Mprime")):
        sessions[name] = DurableSession.open(
            loaded.interface,
            MemoryLedgerStore(),
            "u",
            name,
            loaded.store(name),
            SeededRandomSource(seed + offset),
            on_release=on_release,
            turn_deadline_s=deadline,
        )
        points[name] = {"return": [], "callback": [], "log record": []}
    try:
        for _ in range(turns):
            for name, session in sessions.items():
                callbacks.clear()
                handler.stamps.clear()
                start = time.perf_counter_ns()
                session.run_turn("q")
                points[name]["return"].append(time.perf_counter_ns() - start)
                points[name]["callback"].append(callbacks[0] - start)
                points[name]["log record"].append(handler.stamps[0] - start)
    finally:
        log.removeHandler(handler)
        log.setLevel(logging.NOTSET)
    return points


class _LineStamps(io.TextIOBase):
    """stdout stand-in: the perf_counter_ns at which each turn's first line is written."""

    def __init__(self) -> None:
        self.stamps: list[int] = []

    def write(self, text: str) -> int:
        if text.startswith("turn "):
            self.stamps.append(time.perf_counter_ns())
        return len(text)


def cli_points(turns: int, seed: int, deadline: bool, chunks: int = 10) -> dict[str, list[int]]:
    """Gaps between consecutive turn lines of `dpmem run`, per store, in alternating chunks."""
    gaps: dict[str, list[int]] = {"M": [], "Mprime": []}
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "pair64.toml"
        config.write_text(_toml(pair64(turns)))
        queries = Path(folder) / "queries.txt"
        queries.write_text("q\n" * max(2, turns // chunks))
        flags = [] if deadline else ["--no-release-deadline"]
        for chunk in range(chunks):
            for name in gaps:
                out = _LineStamps()
                argv = ["run", str(config), "--store", name, "--queries", str(queries), "--seed", str(seed + chunk)]
                with contextlib.redirect_stdout(out):  # type: ignore[type-var]
                    dpmem_main([*argv, *flags])
                gaps[name] += [b - a for a, b in zip(out.stamps, out.stamps[1:], strict=False)]
    return gaps


def _toml(data: dict[str, object]) -> str:
    import json

    def value(v: object) -> str:
        if isinstance(v, dict):
            return "{" + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items()) + "}"
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return json.dumps(v)

    return "".join(f"{json.dumps(k)} = {value(v)}\n" for k, v in data.items())


def observation_points(turns: int, seed: int) -> None:
    print(f"\n== observation points: 64-view pair, eps 4, Delta 3/5, {turns} turns per store and setting")
    print(f"   deadline = DEFAULT_TURN_DEADLINE_S = {DEFAULT_TURN_DEADLINE_S * 1e3:g} ms per turn")
    print(f"   {'point':<28} {'KS no deadline (p)':>24} {'KS deadline (p)':>24} {'median M/M2 no deadline (us)':>30}")
    plain = durable_points(turns, seed, None)
    fixed = durable_points(turns, seed, DEFAULT_TURN_DEADLINE_S)
    for point in ("return", "callback", "log record"):
        a, b = plain["M"][point], plain["Mprime"][point]
        ks_plain = ks_statistic(a, b)
        ks_fixed = ks_statistic(fixed["M"][point], fixed["Mprime"][point])
        medians = f"{statistics.median(a) / 1000:.1f}/{statistics.median(b) / 1000:.1f}"
        p_plain = ks_pvalue(a, b)
        p_fixed = ks_pvalue(fixed["M"][point], fixed["Mprime"][point])
        print(
            f"   DurableSession {point:<13} {f'{ks_plain:.4f} ({p_plain})':>24} "
            f"{f'{ks_fixed:.4f} ({p_fixed})':>24} {medians:>30}"
        )
    cli_plain = cli_points(turns, seed, deadline=False)
    cli_fixed = cli_points(turns, seed, deadline=True)
    a, b = cli_plain["M"], cli_plain["Mprime"]
    medians = f"{statistics.median(a) / 1000:.1f}/{statistics.median(b) / 1000:.1f}"
    ks_plain, ks_fixed = ks_statistic(a, b), ks_statistic(cli_fixed["M"], cli_fixed["Mprime"])
    p_plain, p_fixed = ks_pvalue(a, b), ks_pvalue(cli_fixed["M"], cli_fixed["Mprime"])
    print(
        f"   {'dpmem run output line':<28} {f'{ks_plain:.4f} ({p_plain})':>24} "
        f"{f'{ks_fixed:.4f} ({p_fixed})':>24} {medians:>30}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--draws", type=int, default=5000, help="releases per store and setting (default 5000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--turns", type=int, default=1000, help="turns per store at each observation point")
    args = parser.parse_args(argv)
    if not 10 <= args.draws <= 1_000_000:
        parser.error("--draws: expected an integer in 10..1000000")
    print(f"python {sys.version.split()[0]}; latency = start of selection -> release (perf_counter_ns)")
    measure("figure2-food M vs M_no_diabetes", figure2_pair("M_no_diabetes"), args.draws, args.seed)
    measure("figure2-food M vs neutral", figure2_pair("neutral"), args.draws, args.seed)
    measure("stress (16 views, eps 2)", stress_pair(), args.draws, args.seed)
    observation_points(args.turns, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
