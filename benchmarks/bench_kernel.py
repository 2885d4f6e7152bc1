"""Kernel benchmark (issues 2, 14): exact EM sampler (single and batch) vs numpy float
samplers vs OpenDP (permute-and-flip and the Gumbel EM), and microseconds per turn of
Algorithm 1 for 6 slots / 4 attributes. Measured side by side in one run; prints figures,
asserts nothing (targets are read, not timed in tests).

    .venv/bin/python benchmarks/bench_kernel.py [--budget S] [--batch N] [--turns N] [--base /work/base] [--only-turn]
    .venv/bin/python benchmarks/bench_kernel.py --hot-path --base /tmp/base [--rounds 5] [--cells build turn]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import attrs
import numpy as np

from dpmem_ref import (
    ExponentialWeights,
    Interface,
    InterfaceState,
    Query,
    SeededRandomSource,
    SlotRead,
    Store,
    exponential_mechanism,
    load_interface_file,
    run_turn,
)

EPSILON = Fraction(2, 3)
SENSITIVITY = Fraction(3, 5)


def sampler_cells() -> list[tuple[str, list[Fraction], Fraction]]:
    """(label, scores, eps) at Delta = 3/5: the paper-like vectors, then a grid of view
    counts x eps x {one dominant view, seeded random scores}. One-hot at eps = 12 and
    1,024 views is the case where the uniform proposal needs ~1,000 rounds."""
    cells = [
        ("paper-like, 5 views", [Fraction(4, 5), Fraction(2, 5), Fraction(3, 5), Fraction(0), Fraction(1, 5)], EPSILON),
        ("ties, 4 views", [Fraction(1, 2)] * 4, EPSILON),
        ("extreme gap, 3 views", [Fraction(1), Fraction(0), Fraction(0)], EPSILON),
    ]
    for views in (16, 256, 1024):
        rng = random.Random(views)
        shapes = {"one-hot": [Fraction(1)] + [Fraction(0)] * (views - 1),
                  "random": [Fraction(rng.randrange(101), 100) for _ in range(views)]}
        for kind, scores in shapes.items():
            for epsilon in (EPSILON, Fraction(4), Fraction(12)):
                cells.append((f"{kind}, {views} views, eps {epsilon}", scores, epsilon))
    return cells


def us_per_call(function, budget_s: float, per_call: int = 1) -> float:
    """Microseconds per item: calls `function` (each call yields per_call items) for budget_s."""
    function()  # warm: tables, caches
    calls, start = 0, time.perf_counter()
    while True:
        function()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= budget_s:
            return elapsed / (calls * per_call) * 1e6


def exact_single_column(budget_s: float) -> dict[str, float]:
    """The kernel's `sample`, one call per draw (run under /work/base too: old vs new)."""
    result = {}
    for label, scores, epsilon in sampler_cells():
        distribution = exponential_mechanism(tuple(f"v{i}" for i in range(len(scores))), scores, epsilon, SENSITIVITY)
        source = SeededRandomSource(0)
        result[label] = us_per_call(lambda d=distribution, s=source: d.sample(s), budget_s)
    return result


def baseline_column(base: str, budget_s: float) -> dict[str, float]:
    """The same exact-single column measured on another checkout's kernel (one subprocess)."""
    env = dict(os.environ, PYTHONPATH=f"{base}:{base}/eval")
    command = [sys.executable, __file__, "--exact-json", "--budget", str(budget_s)]
    output = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    return {label: float(value) for label, value in json.loads(output).items()}


def bench_samplers(budget_s: float, base: str | None, batch: int) -> None:
    print(f"EM samplers, microseconds per draw (Delta = {SENSITIVITY}); {budget_s:.2f} s per figure; batches of {batch:,}")
    print("  exact = ExponentialWeights.sample (one call per draw); cold = a fresh ExponentialWeights (gaps, tables)")
    print("  and one draw; batch = sample_many(batch) per draw; base = `exact` on the --base checkout's kernel;")
    print("  np call = numpy float EM, exp + rng.choice per call; np vec = rng.choice(size=batch, p) per draw;")
    print("  odp P&F = OpenDP make_noisy_max(max_divergence): exponential noise = permute-and-flip, NOT the EM;")
    print("  odp EM = OpenDP make_noisy_max(zero_concentrated_divergence): Gumbel noise = the EM's law")
    try:
        import opendp.prelude as dp

        dp.enable_features("contrib")
    except ImportError:
        dp = None
        print("  (opendp not installed: pip install -e '.[bench]' to add its columns)")
    old = baseline_column(base, budget_s) if base else {}
    new = exact_single_column(budget_s)
    header = (f"  {'cell':<32}{'exact':>8}{'cold':>8}{'batch':>8}{'np call':>9}{'np vec':>8}{'odp P&F':>9}{'odp EM':>8}"
              f"{'base':>9}{'exact/np call':>15}{'batch/np vec':>14}{'base/exact':>12}")
    print(header)
    worst_single = worst_batch = 0.0
    for label, scores, epsilon in sampler_cells():
        views = tuple(f"v{i}" for i in range(len(scores)))
        distribution = exponential_mechanism(views, scores, epsilon, SENSITIVITY)
        source = SeededRandomSource(1)
        batched = us_per_call(lambda d=distribution, s=source: d.sample_many(batch, s), budget_s, batch)
        exponents = distribution.exponents
        cold = us_per_call(lambda e=exponents, v=views, s=source: ExponentialWeights(views=v, exponents=e).sample(s), budget_s)

        rng = np.random.default_rng(0)
        float_scores = np.array([float(u) for u in scores])
        scale = float(epsilon) / (2 * float(SENSITIVITY))

        def float_draw(rng: np.random.Generator = rng, float_scores: np.ndarray = float_scores, scale: float = scale) -> int:
            weights = np.exp(scale * (float_scores - float_scores.max()))
            return int(rng.choice(len(weights), p=weights / weights.sum()))

        def float_batch(rng: np.random.Generator = rng, float_scores: np.ndarray = float_scores, scale: float = scale) -> np.ndarray:
            weights = np.exp(scale * (float_scores - float_scores.max()))
            return rng.choice(len(weights), size=batch, p=weights / weights.sum())

        per_call = us_per_call(float_draw, budget_s)
        vectorised = us_per_call(float_batch, budget_s, batch)
        permute_and_flip = gumbel = float("nan")
        if dp is not None:
            space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float)
            noise_scale = 2 * float(SENSITIVITY) / float(epsilon)  # EM: Pr ~ exp(eps u / (2 Delta))
            values = [float(u) for u in scores]
            flip = dp.m.make_noisy_max(*space, dp.max_divergence(), scale=noise_scale)
            em = dp.m.make_noisy_max(*space, dp.zero_concentrated_divergence(), scale=noise_scale)
            permute_and_flip = us_per_call(lambda m=flip, v=values: m(v), budget_s)
            gumbel = us_per_call(lambda m=em, v=values: m(v), budget_s)
        exact = new[label]
        before = old.get(label, float("nan"))
        worst_single, worst_batch = max(worst_single, exact / per_call), max(worst_batch, batched / vectorised)
        print(f"  {label:<32}{exact:>8.1f}{cold:>8.1f}{batched:>8.2f}{per_call:>9.1f}{vectorised:>8.3f}{permute_and_flip:>9.1f}{gumbel:>8.1f}"
              f"{before:>9.1f}{exact / per_call:>15.2f}{batched / vectorised:>14.1f}{before / exact:>12.1f}")
    print(f"  worst cell: exact/np call = {worst_single:.2f} (target <= 2), batch/np vec = {worst_batch:.1f} (target <= 10)")


EVALUATION = Path(__file__).resolve().parent.parent / "examples" / "evaluation.toml"


def evaluation_shaped_interface() -> tuple[Interface, Store]:
    """The evaluation configuration (examples/evaluation.toml, the data package's export) plus
    one query reading every slot in full and one query per slot, so that every active slot's
    read touches a group and runs a charged EM selection; store M_debt_and_job_loss."""
    loaded = load_interface_file(EVALUATION)
    interface = loaded.interface
    layout = interface.policy.layout
    reads = tuple(
        SlotRead(slot=v.slot, positions=layout.positions_of(v.slot), relevance={v.views[1].name: Fraction(1, 2)})
        for v in interface.vocabularies
    )
    queries = (Query(name="all-slots", text="Plan my week.", reads=reads),) + tuple(
        Query(name=f"only-{read.slot}", text=f"A {read.slot} question.", reads=(read,)) for read in reads
    )
    bench = attrs.evolve(interface, queries=interface.queries + queries, name="bench-evaluation")
    return bench, loaded.store("M_debt_and_job_loss")


def bench_turn(turns: int) -> None:
    interface, store = evaluation_shaped_interface()
    source = SeededRandomSource(1)
    query = interface.query("all-slots")
    # Every turn starts from fresh ledgers so that all 6 slots run a charged EM selection.
    initial = InterfaceState.initial(interface)
    run_turn(interface, initial, query, store, source)  # warm the contract-check memo
    start = time.perf_counter()
    for _ in range(turns):
        run_turn(interface, initial, query, store, source)
    elapsed = time.perf_counter() - start
    per_turn = elapsed / turns * 1e6
    print(f"Algorithm 1, one turn with 6 active slots / 4 attributes (all charged EM): {per_turn:,.1f} us/turn "
          f"({per_turn / 6:,.1f} us per slot), {turns} turns")
    # The evaluation activates one slot per turn: cycle through the six one-slot queries.
    one_slot = [interface.query(f"only-{slot}") for slot in interface.policy.layout.slots]
    start = time.perf_counter()
    for index in range(turns):
        run_turn(interface, initial, one_slot[index % 6], store, source)
    per_turn = (time.perf_counter() - start) / turns * 1e6
    print(f"Algorithm 1, one turn with 1 active slot (the evaluation's shape), 6 slots / 4 attributes: {per_turn:,.1f} us/turn")


def bench_turn_against_base(turns: int, base: str, rounds: int = 3) -> None:
    """The 6-slot turn in this tree and in `base` (the starting main), alternating fresh
    interpreters (-P: the tree comes from PYTHONPATH only); best of each."""
    here = str(Path(__file__).resolve().parents[1])
    from hot_path import TURN_CELL  # the same cell as --hot-path's

    code = TURN_CELL.format(bench=str(Path(__file__).resolve().parent), repeats=5, turns=max(turns // 5, 1))
    best = {"this tree": float("inf"), "base": float("inf")}
    for _ in range(rounds):
        for label, root in (("this tree", here), ("base", base)):
            env = dict(os.environ, PYTHONPATH=f"{root}:{root}/eval")
            done = subprocess.run([sys.executable, "-P", "-c", code], env=env, cwd=root, capture_output=True, text=True)
            if done.returncode != 0:
                print(f"{label} ({root}) failed: {done.stderr.strip().splitlines()[-1:]}")
                return
            best[label] = min(best[label], float(done.stdout))
    print(f"Algorithm 1, 6 slots / 4 attributes, best of {rounds} alternating runs: this tree "
          f"{best['this tree']:,.1f} us/turn, base ({base}) {best['base']:,.1f} us/turn, "
          f"ratio base/this = {best['base'] / best['this tree']:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=0.3, help="seconds per sampler figure")
    parser.add_argument("--batch", type=int, default=20_000, help="draws per sample_many / vectorised call")
    parser.add_argument("--base", default=None,
                        help="a checkout of the starting main (e.g. /work/base): its sampler and turn side by side")
    parser.add_argument("--exact-json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--turns", type=int, default=5_000)
    parser.add_argument("--only-turn", action="store_true", help="skip the sampler cells")
    parser.add_argument("--hot-path", action="store_true",
                        help="issue 25's hot-path cells against --base, side by side (benchmarks/hot_path.py)")
    parser.add_argument("--rounds", type=int, default=5, help="--hot-path: alternating rounds (medians)")
    parser.add_argument("--durable-turns", type=int, default=40, help="--hot-path: durable turns per figure")
    parser.add_argument("--cells", nargs="*", default=None, help="--hot-path: only cells whose label holds one of these")
    args = parser.parse_args()
    if args.hot_path:
        from hot_path import run as hot_path

        if not args.base:
            parser.error("--hot-path needs --base DIR (a checkout of the starting main)")
        hot_path(args.base, args.rounds, max(args.turns // 5, 1), args.durable_turns, args.cells)
        return
    if args.exact_json:  # the --base subprocess: only `sample`, which every kernel version has
        print(json.dumps(exact_single_column(args.budget)))
        return
    print(f"python {platform.python_version()} on {platform.machine()}, numpy {np.__version__}")
    if not args.only_turn:
        bench_samplers(args.budget, args.base, args.batch)
    bench_turn(args.turns)
    if args.base and Path(args.base).is_dir():
        bench_turn_against_base(args.turns, args.base)


if __name__ == "__main__":
    main()
