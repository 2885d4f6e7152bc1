"""Kernel benchmark (issue 2): exact EM sampler vs a numpy float sampler vs OpenDP, and
microseconds per turn of Algorithm 1 for 6 slots / 4 attributes. Measured side by side
in one run; prints figures, asserts nothing (targets are read, not timed in tests).

    .venv/bin/python benchmarks/bench_kernel.py [--draws N]
"""

from __future__ import annotations

import argparse
import platform
import time
from fractions import Fraction

import numpy as np

from dpmem_ref import (
    Attribute,
    Interface,
    InterfaceState,
    Layout,
    LinearTagScorer,
    MemoryItem,
    OnlineBudget,
    Policy,
    Query,
    SeededRandomSource,
    SlotRead,
    Store,
    View,
    Vocabulary,
    exponential_mechanism,
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


def evaluation_shaped_interface() -> tuple[Interface, Store]:
    slots = ["health", "food", "finance", "work", "schedule", "household"]
    positions = [slot for slot in slots for _ in range(4)] + ["health", "food", "finance", "work"]
    layout = Layout(position_slots=tuple(positions))
    attributes = (
        Attribute("diabetes", frozenset({1, 2, 5, 25}), Fraction(2)),
        Attribute("pregnancy", frozenset({3, 4, 6, 21}), Fraction(2)),
        Attribute("debt", frozenset({9, 10, 11, 27, 6}), Fraction(2)),
        Attribute("job_loss", frozenset({13, 14, 15, 28, 17}), Fraction(2)),
    )
    policy = Policy(layout=layout, attributes=attributes)
    vocabularies = tuple(
        Vocabulary(
            slot=slot,
            views=(View(f"{slot}-generic"),)
            + tuple(View(f"{slot}-mode{k}", compatible=frozenset({f"{slot}-tag{k}"}), specific=frozenset({f"{slot}-tag{k}", f"{slot}-extra"})) for k in range(4)),
            generic=f"{slot}-generic",
        )
        for slot in slots
    )
    reads = tuple(
        SlotRead(slot=slot, positions=layout.positions_of(slot), relevance={f"{slot}-mode1": Fraction(1, 2)})
        for slot in slots
    )
    queries = (Query(name="all-slots", text="Plan my week.", reads=reads),) + tuple(
        Query(name=f"only-{read.slot}", text=f"A {read.slot} question.", reads=(read,)) for read in reads
    )
    interface = Interface(
        policy=policy,
        vocabularies=vocabularies,
        queries=queries,
        scorer=LinearTagScorer(),
        budget=OnlineBudget(K=3),
        name="bench-6-slots",
    )
    items = {i: MemoryItem(tags=frozenset({f"{positions[i - 1]}-tag{i % 4}", f"{positions[i - 1]}-extra"})) for i in range(1, 29)}
    return interface, Store.from_mapping(layout, items, name="M")


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=50_000)
    parser.add_argument("--turns", type=int, default=5_000)
    args = parser.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}, numpy {np.__version__}")
    bench_samplers(args.draws)
    bench_turn(args.turns)


if __name__ == "__main__":
    main()
