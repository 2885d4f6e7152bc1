"""Table 4 (RQ2): the safeguard ablations at B_a = 2, K = 3, T = 16, reconstructed.

The evaluation configuration's policy, loaded from `examples/evaluation.toml` (the one
evaluation configuration: the eval's `dpmem-eval data export-interface` writes it, the kernel
reads it): 28 positions in 6 slots, four protected attributes with groups of 5-6 positions,
the target group I_debt overlapping I_job_loss at position 14, the paper's scorer
u = 0.4 r + 0.4 c + 0.2 s with Delta = 0.6, online budgets eps = min B_a / K = 2/3 - and
Table 4's own finance vocabulary, stores and schedule: one slot per turn, one 16-query block of
8 target-relevant queries (4 reading I_debt only, 4 reading the overlap), 4 same-domain
neutral and 4 distractor queries. M and M' differ only inside I_debt: M' replaces the debt
evidence by saving habits and keeps the job-loss evidence at the overlap position.

Variants (paper, RQ2): DP-MemView (on); IncompleteCharge (C2: a read touching two groups
is charged to the other attribute only); CappedArgmax (C3: argmax instead of the EM,
ledger and fallback unchanged); NoCap (C5: no prospective check, complete charging).

The DP-bound column is reconstructed from the kernel's charge trace, exactly as the paper
reconstructs it: run the 16 turns through `run_turn`, and for every admitted selection
whose read set touches I_debt (Gamma*(R), Eq. 4) add its eps, whether or not the declared
charge set contained debt; a non-EM selection has no finite local bound (inf). Beside it,
the kernel's exact worst-case loss for the pair: along this 16-query trajectory (every
release outcome, via a public schedule router) and over every adaptive strategy that may
ask any of the 16 queries at every turn.
"""

from __future__ import annotations

from fractions import Fraction
from functools import cache
from pathlib import Path

import attrs
import mpmath

from counterexamples.base import Construction, ScheduledRouter
from counterexamples.engine import EngineResult, exact_worst_case
from dpmem_ref import InterfaceFile, load_interface_file
from dpmem_ref.core.policy import Layout, MemoryItem, Policy, Store
from dpmem_ref.core.transcript import Query, SlotRead
from dpmem_ref.core.views import View, Vocabulary
from dpmem_ref.interface import Interface
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.parts.broken import ArgmaxSelector, NoCap
from dpmem_ref.turn import InterfaceState, run_turn

EVALUATION = Path(__file__).resolve().parent / "evaluation.toml"
"""The evaluation configuration, shipped inside the package (the wheel carries it: an installed
`dpmem-counterexamples` has no examples/ folder beside it); a byte-for-byte copy of
examples/evaluation.toml, which a test holds."""


@cache
def evaluation() -> InterfaceFile:
    """The one evaluation configuration (policy, budget, scorer), as the kernel loads it."""
    return load_interface_file(EVALUATION)


TARGET = "debt"
CAP = evaluation().interface.policy.attribute(TARGET).cap
HORIZON = 16

TARGET_ONLY = frozenset({11, 12})
OVERLAP = frozenset({13, 14})

PAPER_DP_BOUND = {
    "DP-MemView (on)": "2.0 <= B_a",
    "IncompleteCharge": "4.0 > B_a",
    "CappedArgmax": "inf",
    "NoCap": "5.33 > B_a",
}


def _view(name: str, text: str, tags: frozenset[str] = frozenset(), specific: frozenset[str] | None = None) -> View:
    return View(name=name, text=text, compatible=tags, specific=tags if specific is None else specific)


def vocabularies() -> tuple[Vocabulary, ...]:
    def two(slot: str, generic: str, tailored: str, tags: set[str]) -> Vocabulary:
        return Vocabulary(
            slot=slot,
            views=(_view(generic, "generic"), _view(tailored, "tailored", frozenset(tags))),
            generic=generic,
        )

    saver = frozenset({"saver"})
    finance = Vocabulary(
        slot="finance",
        views=(
            _view("finance-generic", "Give general, widely applicable money tips."),
            _view(
                "strict-budget",
                "Keep suggestions within a strict budget.",
                frozenset({"debt"}),
                frozenset({"debt", "arrears"}),
            ),
            _view("savings-first", "Suggest growing savings first.", saver),
            _view("travel-fund", "Suggest a travel fund.", saver),
            _view("invest-surplus", "Suggest investing surplus cash.", saver),
        ),
        generic="finance-generic",
    )
    return (
        two("health", "health-generic", "blood-sugar-conscious", {"blood-sugar"}),
        two("food", "balanced-meals", "low-glycemic", {"blood-sugar"}),
        finance,
        two("work", "work-generic", "job-search", {"job-loss"}),
        two("schedule", "family-generic", "prenatal", {"prenatal"}),
        two("household", "schedule-generic", "quick-prep", {"busy"}),
    )


def _read(
    slot: str, positions: frozenset[int], relevance: dict[str, Fraction], charge: frozenset[str] | None = None
) -> SlotRead:
    return SlotRead(slot=slot, positions=positions, relevance=relevance, charge=charge)


FINANCE_RELEVANCE = {
    name: Fraction(1, 2) for name in ("strict-budget", "savings-first", "travel-fund", "invest-surplus")
}


def queries(incomplete_charge: bool = False) -> tuple[Query, ...]:
    """The 16-query block; with `incomplete_charge` the overlap reads are charged {job_loss}."""
    overlap_charge = frozenset({"job_loss"}) if incomplete_charge else None
    block = []
    for i in (1, 3, 5, 7):
        block.append(Query(f"target-{i}", f"money question {i}", (_read("finance", TARGET_ONLY, FINANCE_RELEVANCE),)))
    for i in (2, 4, 6, 8):
        block.append(
            Query(f"target-{i}", f"money question {i}", (_read("finance", OVERLAP, FINANCE_RELEVANCE, overlap_charge),))
        )
    for i in (1, 2, 3, 4):
        block.append(Query(f"neutral-{i}", f"banking question {i}", (_read("finance", frozenset({15}), {}),)))
    block.append(
        Query(
            "distractor-1",
            "health question",
            (_read("health", frozenset({1, 2}), {"blood-sugar-conscious": Fraction(1)}),),
        )
    )
    block.append(
        Query("distractor-2", "meal question", (_read("food", frozenset({6, 8}), {"low-glycemic": Fraction(1)}),))
    )
    block.append(
        Query("distractor-3", "family question", (_read("schedule", frozenset({21, 23}), {"prenatal": Fraction(1)}),))
    )
    block.append(
        Query(
            "distractor-4", "evening question", (_read("household", frozenset({26, 28}), {"quick-prep": Fraction(1)}),)
        )
    )
    return tuple(block)


# The trajectory order: target-relevant turns interleaved with neutral and distractor turns.
SCHEDULE = (
    "target-1", "neutral-1", "target-2", "distractor-1",
    "target-3", "target-4", "neutral-2", "distractor-2",
    "target-5", "target-6", "neutral-3", "distractor-3",
    "target-7", "target-8", "neutral-4", "distractor-4",
)  # fmt: skip


def policy() -> Policy:
    return evaluation().interface.policy


def stores(layout: Layout) -> tuple[Store, Store]:
    """M holds debt evidence in I_debt; M' replaces it with saving habits (and keeps the
    job-loss evidence at the overlap position 14); they agree outside I_debt."""

    def item(*tags: str) -> MemoryItem:
        return MemoryItem(tags=frozenset(tags), text=" ".join(tags))

    shared = {
        1: item("blood-sugar"), 2: item("blood-sugar"), 6: item("blood-sugar"), 8: item("cooking"),
        15: item("bank-transfer"), 16: item("job-loss"), 17: item("job-loss"), 21: item("family"),
        23: item("family"), 26: item("busy"), 28: item("busy"),
    }  # fmt: skip
    with_debt = {
        11: item("debt", "arrears"),
        12: item("debt"),
        13: item("debt", "arrears"),
        14: item("debt", "arrears", "job-loss"),
    }
    without_debt = {11: item("saver"), 12: item("saver"), 13: item("saver"), 14: item("saver", "job-loss")}
    return (
        Store.from_mapping(layout, {**shared, **with_debt}, "M"),
        Store.from_mapping(layout, {**shared, **without_debt}, "M_prime"),
    )


def variants() -> dict[str, Interface]:
    base = Interface(
        policy=policy(),
        vocabularies=vocabularies(),
        queries=queries(),
        scorer=evaluation().interface.scorer,
        budget=evaluation().interface.budget,
        name="DP-MemView (on)",
    )
    return {
        "DP-MemView (on)": base,
        "IncompleteCharge": attrs.evolve(base, queries=queries(incomplete_charge=True), name="IncompleteCharge"),
        "CappedArgmax": attrs.evolve(base, selector=ArgmaxSelector(), name="CappedArgmax"),
        "NoCap": attrs.evolve(base, cap_rule=NoCap(), name="NoCap"),
    }


@attrs.frozen
class ChargeTrace:
    """The target's charges along the trajectory, read off the kernel's turn records."""

    ledger_reports: Fraction
    reconstructed: Fraction
    admitted_target_reads: int
    omitted_charges: int
    dp_bound: Fraction | None  # None = inf (a non-EM selection touched I_target)


def charge_trace(interface: Interface, store: Store, seed: int = 0) -> ChargeTrace:
    """Run the trajectory with run_turn(strict=False) and compare each admitted selection's
    declared charge set (TurnRecord.charges) with Gamma*(R) (Eq. 4)."""
    state = InterfaceState.initial(interface)
    source = SeededRandomSource(seed)
    reconstructed = Fraction(0)
    admitted_reads = 0
    omitted = 0
    non_em = False
    for name in SCHEDULE:
        result = run_turn(interface, state, name, store, source, strict=False)
        state = result.state
        for plan, (_slot, charged, epsilon) in zip(result.plans, result.record.charges, strict=True):
            if not plan.admitted or TARGET not in interface.policy.gamma_star(plan.read.positions):
                continue
            admitted_reads += 1
            reconstructed += epsilon
            omitted += TARGET not in charged
            non_em = non_em or interface.selector.violates == "C3"
    return ChargeTrace(
        ledger_reports=state.ledger_map(interface)[TARGET],
        reconstructed=reconstructed,
        admitted_target_reads=admitted_reads,
        omitted_charges=omitted,
        dp_bound=None if non_em else reconstructed,
    )


@attrs.frozen
class Row:
    variant: str
    violates: str
    trace: ChargeTrace
    trajectory: EngineResult
    adaptive: EngineResult | None


VIOLATES = {"DP-MemView (on)": "-", "IncompleteCharge": "C2", "CappedArgmax": "C3", "NoCap": "C5"}


def rows(adaptive: bool = True) -> list[Row]:
    result = []
    for name, interface in variants().items():
        store_a, store_b = stores(interface.policy.layout)
        scheduled = attrs.evolve(interface, router=ScheduledRouter(SCHEDULE))
        result.append(
            Row(
                variant=name,
                violates=VIOLATES[name],
                trace=charge_trace(interface, store_a),
                trajectory=exact_worst_case(scheduled, store_a, store_b, HORIZON),
                adaptive=exact_worst_case(interface, store_a, store_b, HORIZON) if adaptive else None,
            )
        )
    return result


def release_log_ratio() -> mpmath.mpf:
    """Closed form of one admitted finance release of `strict-budget` (M over M').

    eps / (2 Delta) = (2/3) / (6/5) = 5/9. strict-budget scores 0.8 under M and 0.2 under
    M' (exponents 4/9, 1/9); the three saver views the reverse; the generic view 0. So
    Pr[sb | M] = e^{4/9} / (1 + e^{4/9} + 3 e^{1/9}), Pr[sb | M'] = e^{1/9} / (1 + e^{1/9} + 3 e^{4/9}).
    """
    low, high = mpmath.mpf(1) / 9, mpmath.mpf(4) / 9
    p_m = mpmath.exp(high) / (1 + mpmath.exp(high) + 3 * mpmath.exp(low))
    p_m_prime = mpmath.exp(low) / (1 + mpmath.exp(low) + 3 * mpmath.exp(high))
    return mpmath.log(p_m / p_m_prime)


# Admitted target-touching releases along the trajectory (the paper's reconstruction:
# 2.0 = 3 x 2/3, 4.0 = 6 x 2/3, 5.33 = 8 x 2/3); CappedArgmax has no finite bound.
RELEASES = {"DP-MemView (on)": 3, "IncompleteCharge": 6, "CappedArgmax": None, "NoCap": 8}


def construction(variant: str) -> Construction:
    """A Table 4 ablation as a construction: the trajectory worst case, bound B_debt = 2."""
    if VIOLATES[variant] == "-":
        raise ValueError(f"{variant} is the compliant reference row, not a counterexample")
    interface = variants()[variant]
    store_a, store_b = stores(interface.policy.layout)
    scheduled = attrs.evolve(interface, router=ScheduledRouter(SCHEDULE))
    releases = RELEASES[variant]

    def closed_form() -> mpmath.mpf:
        return mpmath.inf if releases is None else releases * release_log_ratio()

    def extra() -> dict[str, object]:
        trace = charge_trace(interface, store_a)
        return {
            "ledger_reports": _decimal(trace.ledger_reports),
            "reconstructed_charge": _decimal(trace.reconstructed),
            "dp_bound_reconstructed": "inf" if trace.dp_bound is None else _decimal(trace.dp_bound),
            "paper_dp_bound": PAPER_DP_BOUND[variant],
        }

    return Construction(
        name="table4-" + variant.lower(),
        kind="Table 4",
        violates=VIOLATES[variant],
        title=f"{variant}: evaluation-shaped configuration, B_a = 2, K = 3, T = 16",
        interface=scheduled,
        store_a=store_a,
        store_b=store_b,
        horizon=HORIZON,
        bound=CAP,
        event="the worst release sequence along the 16-query trajectory (8 target-relevant)",
        closed_form=closed_form,
        attribute=TARGET,
        extra=extra,
    )


def _decimal(value: Fraction, digits: int = 2) -> str:
    return f"{float(value):.{digits}f}"
