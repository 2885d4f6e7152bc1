"""Kernel benchmark (issue 2): exact EM sampler vs a numpy float sampler vs OpenDP, and
microseconds per turn of Algorithm 1 for 6 slots / 4 attributes. Measured side by side
in one run; prints figures, asserts nothing (targets are read, not timed in tests).

    .venv/bin/python benchmarks/bench_kernel.py [--draws N] [--turns N] [--base /work/base] [--only-turn]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import attrs
import numpy as np

from dpmem_ref import (
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

SCORE_VECTORS = {
    "paper-like (5 views)": [Fraction(4, 5), Fraction(2, 5), Fraction(3, 5), Fraction(0), Fraction(1, 5)],
    "ties (4 views)": [Fraction(1, 2)] * 4,
    "extreme gap (3 views)": [Fraction(1), Fraction(0), Fraction(0)],
}
EPSILON = Fraction(2, 3)
SENSITIVITY = Fraction(3, 5)


def per_second(function, repeats: int) -> float:
    start = time.perf_counter()
    for _ in range(repeats):
        function()
    return repeats / (time.perf_counter() - start)


def bench_samplers(draws: int) -> None:
    print(f"EM sampler draws/s (eps={EPSILON}, Delta={SENSITIVITY}), {draws} draws each, one call per draw")
    try:
        import opendp.prelude as dp

        dp.enable_features("contrib")
    except ImportError:
        dp = None
        print("  (opendp not installed: pip install -e '.[bench]' to add its column)")
    header = f"  {'scores':<24}{'exact':>12}{'numpy float':>14}{'opendp':>12}{'float/exact':>13}{'opendp/exact':>14}"
    print(header)
    for label, scores in SCORE_VECTORS.items():
        views = tuple(f"v{i}" for i in range(len(scores)))
        distribution = exponential_mechanism(views, scores, EPSILON, SENSITIVITY)
        source = SeededRandomSource(0)
        exact = per_second(lambda d=distribution, s=source: d.sample(s), draws)

        rng = np.random.default_rng(0)
        float_scores = np.array([float(s) for s in scores])
        scale = float(EPSILON) / (2 * float(SENSITIVITY))

        def float_draw(rng: np.random.Generator = rng, float_scores: np.ndarray = float_scores, scale: float = scale) -> int:
            weights = np.exp(scale * (float_scores - float_scores.max()))
            return int(rng.choice(len(weights), p=weights / weights.sum()))

        floating = per_second(float_draw, draws)
        opendp_rate = float("nan")
        if dp is not None:
            space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float)
            measurement = dp.m.make_noisy_max(*space, dp.max_divergence(), scale=2 * float(SENSITIVITY) / float(EPSILON))
            values = [float(s) for s in scores]
            opendp_rate = per_second(lambda m=measurement, v=values: m(v), draws)
        print(
            f"  {label:<24}{exact:>12,.0f}{floating:>14,.0f}{opendp_rate:>12,.0f}"
            f"{floating / exact:>13.2f}{opendp_rate / exact:>14.2f}"
        )


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


TURN_CELL = """
import sys, time
sys.path.insert(0, {bench!r})
from bench_kernel import evaluation_shaped_interface
from dpmem_ref import InterfaceState, SeededRandomSource, run_turn
interface, store = evaluation_shaped_interface()
source, initial = SeededRandomSource(1), InterfaceState.initial(interface)
query = interface.query("all-slots")
run_turn(interface, initial, query, store, source)
best = float("inf")
for _ in range({repeats}):
    start = time.perf_counter()
    for _ in range({turns}):
        run_turn(interface, initial, query, store, source)
    best = min(best, (time.perf_counter() - start) / {turns} * 1e6)
print(best)
"""


def bench_turn_against_base(turns: int, base: str, rounds: int = 3) -> None:
    """The 6-slot turn in this tree and in `base` (the starting main), alternating fresh
    interpreters (-P: the tree comes from PYTHONPATH only); best of each."""
    here = str(Path(__file__).resolve().parents[1])
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
    parser.add_argument("--draws", type=int, default=50_000)
    parser.add_argument("--turns", type=int, default=5_000)
    parser.add_argument("--base", default="/work/base", help="checkout of the starting main for the turn ratio")
    parser.add_argument("--only-turn", action="store_true", help="skip the sampler cells")
    args = parser.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}, numpy {np.__version__}")
    if not args.only_turn:
        bench_samplers(args.draws)
    bench_turn(args.turns)
    if Path(args.base).is_dir():
        bench_turn_against_base(args.turns, args.base)


if __name__ == "__main__":
    main()
