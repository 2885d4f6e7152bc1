"""The fast audit vs the general search vs the replayed witness, as a
property over generated interfaces, not on one hand-written example.

The ledger programme (`dpmem_ref.analysis.ledger`, the `auto` search wherever it applies)
and the general memoized search (`dpmem_ref.analysis.general`) enclose the same exact loss
in both directions. Each is a valid outward-rounded enclosure, computed along a different
order of additions, so the two may differ in width and in their last digits (T = 1, no cap:
lower ends -9.06e-72 and 0.0 for the same exact 0). What must hold: the two enclosures
intersect, each is narrow (width at most 10^-40 relative to the value, absolute 10^-40
below 1), their midpoints agree to 40 significant digits, and each direction's witness,
replayed under both stores (`replay_transcript`), gives a log ratio inside both enclosures. The generated interfaces are multi-slot,
with over- and under-charged declared charge sets, uncharged reads, preallocated plans,
and, with strict off, the contract-breaking parts the auditor meets in deployments:
NoCap (C5), the argmax selector (C3) and controls that read private data (C6).
"""

from __future__ import annotations

from fractions import Fraction

import attrs
import mpmath
from hypothesis import event, example, given, target
from hypothesis import strategies as st

from dpmem_ref import (
    Attribute,
    FallbackControl,
    Layout,
    LinearTagScorer,
    LinearWeights,
    MemoryItem,
    NoControl,
    Policy,
    PreallocatedBudget,
    Query,
    Store,
    View,
    Vocabulary,
)
from dpmem_ref.analysis import IV_DPS, Direction, Loss, replay_transcript, worst_case_loss
from dpmem_ref.analysis import ledger as ledger_programme
from dpmem_ref.config.load import interface_from_dict
from dpmem_ref.core.transcript import SlotRead
from dpmem_ref.interface import Interface
from dpmem_ref.parts.broken import ArgmaxSelector, NoCap, RawEvidenceControl, TopScoreControl
from proofs_as_tests.strategies import BudgetStatusControl, Case, Channel, QueryStrategy, cases
from tests.audit.test_auditor_lattice import uses_lattice
from tests.audit_generators import lattice_case

CONTROLS = {
    "fallback": FallbackControl(),
    "none": NoControl(),
    "budget": BudgetStatusControl(),
    "raw-evidence": RawEvidenceControl(),  # reads private data (C6): strict off only
    "top-score": TopScoreControl(),  # reads internal scores (C3/C6): strict off only
}


def _under_charged(interface: Interface, read: SlotRead, draw: st.DrawFn) -> SlotRead:
    """A declared charge set that misses one attribute of Gamma*(R) (breaks C2)."""
    required = sorted(interface.policy.gamma_star(read.positions))
    if not required:
        return read
    dropped = draw(st.sampled_from(required))
    return attrs.evolve(read, charge=frozenset(required) - {dropped})


@st.composite
def audited(draw: st.DrawFn) -> tuple[Interface, Case, bool, int]:
    """A generated deployment, possibly broken, that the ledger programme applies to."""
    case = draw(cases(adaptive=False, max_horizon=3))
    interface = case.interface
    control = draw(st.sampled_from(sorted(CONTROLS)))
    changes: dict[str, object] = {"control": CONTROLS[control]}
    broken = set()
    if control in ("raw-evidence", "top-score"):
        broken.add("C6")
    if draw(st.integers(0, 3)) == 0:
        changes["cap_rule"] = NoCap()
        broken.add("C5")
    if draw(st.integers(0, 4)) == 0:
        changes["selector"] = ArgmaxSelector()
        broken.add("C3")
    if draw(st.integers(0, 3)) == 0:
        queries = tuple(
            attrs.evolve(q, reads=tuple(_under_charged(interface, r, draw) if draw(st.booleans()) else r for r in q.reads))
            for q in interface.queries
        )
        if queries != interface.queries:
            changes["queries"] = queries
            broken.add("C2")
    interface = attrs.evolve(interface, **changes)  # type: ignore[arg-type]
    strict = not broken
    for code in sorted(broken):
        event(f"broken {code} (strict off)")
    horizon = draw(st.integers(1, 5))
    return interface, case, strict, horizon


def _pruning_trap() -> tuple[Interface, Case, bool, int]:
    """A known hard shape for the ledger programme (its dominance pruning is sound for
    one-slot turns only): "both" reads x (charged {a, b}) then y (charged {b}, the only
    position the stores differ at); "spend" charges a alone and releases the same law
    under both stores; "pass" is uncharged. At T = 3 the worst strategy first spends a
    (a zero-loss move that only raises a ledger), so that "both" keeps refusing x and
    admits y twice: 2 differing releases instead of 1."""
    layout = Layout(position_slots=("x", "y", "z", "w"))
    policy = Policy(
        layout=layout,
        attributes=(Attribute("a", frozenset({1, 3}), Fraction(1)), Attribute("b", frozenset({1, 2}), Fraction(2))),
    )
    vocabularies = tuple(
        Vocabulary(slot=s, views=(View(f"{s}-generic"), View(f"{s}-t", compatible=frozenset({"t"}))), generic=f"{s}-generic")
        for s in ("x", "y", "z", "w")
    )
    queries = (
        Query(name="both", text="both", reads=(SlotRead("x", frozenset({1})), SlotRead("y", frozenset({2})))),
        Query(name="spend", text="spend", reads=(SlotRead("z", frozenset({3})),)),
        Query(name="pass", text="pass", reads=(SlotRead("w", frozenset({4})),)),
    )
    interface = Interface(
        policy=policy,
        vocabularies=vocabularies,
        queries=queries,
        scorer=LinearTagScorer(weights=LinearWeights(Fraction(0), Fraction(1), Fraction(0)), declared_sensitivity=Fraction(1)),
        budget=PreallocatedBudget.from_mapping({"a": 1, "b": 2}),  # eps = 1 for every charged read
        control=FallbackControl(),
        name="pruning-trap",
    )
    store_a = Store.from_mapping(layout, {2: MemoryItem(tags=frozenset({"t"}))}, name="M")
    store_b = Store.from_mapping(layout, {}, name="M'")
    case = Case(interface, store_a, store_b, "b", QueryStrategy(kind="fixed", sequence=("both",)), Channel(kind="constant"), 3)
    return interface, case, True, 3


def _fixed_point_trap() -> tuple[Interface, Case, bool, int]:
    """The pruning trap plus a long chain of small charges ("nibble": eps 1/4 on {a, d}), so
    that the chain of ledger moves is longer than T and the programme iterates values: V_2
    equals V_1 at the start state while V_3 doubles (spend a first, then "both" twice)."""
    interface, case, strict, horizon = _pruning_trap()
    layout = Layout(position_slots=(*interface.policy.layout.position_slots, "v"))
    policy = Policy(
        layout=layout,
        attributes=(
            Attribute("a", frozenset({1, 3, 5}), Fraction(1)),
            Attribute("b", frozenset({1, 2}), Fraction(2)),
            Attribute("d", frozenset({5}), Fraction(1)),
        ),
    )
    vocabularies = (*interface.vocabularies, Vocabulary(slot="v", views=(View("v-generic"), View("v-t")), generic="v-generic"))
    queries = (*interface.queries, Query(name="nibble", text="nibble", reads=(SlotRead("v", frozenset({5})),)))
    interface = attrs.evolve(
        interface, policy=policy, vocabularies=vocabularies, queries=queries,
        budget=PreallocatedBudget.from_mapping({"a": 1, "b": 2, "d": 4}), name="fixed-point-trap",
    )  # fmt: skip
    store_a = Store.from_mapping(layout, {2: MemoryItem(tags=frozenset({"t"}))}, name="M")
    store_b = Store.from_mapping(layout, {}, name="M'")
    return interface, attrs.evolve(case, interface=interface, store_a=store_a, store_b=store_b), strict, horizon


def _report_shape(interface: Interface) -> None:
    policy = interface.policy
    reads = [r for q in interface.queries for r in q.reads]
    if any(len(q.reads) > 1 for q in interface.queries):
        event("multi-slot turn")
    if any(not policy.gamma_star(r.positions) and r.charge is None for r in reads):
        event("uncharged read")
    if any(r.charge is not None and r.charge > policy.gamma_star(r.positions) for r in reads):
        event("over-charged declaration")
    if any(r.charge is not None and not policy.gamma_star(r.positions) <= r.charge for r in reads):
        event("under-charged declaration")
    if isinstance(interface.budget, PreallocatedBudget):
        event("preallocated plan")


DIGITS = mpmath.mpf(10) ** -40  # the agreement asked of two enclosures of one exact loss
WORK = 2 * IV_DPS  # decimal digits of the checks' own arithmetic (the ends carry IV_DPS = 70)


def _tolerance(*values: mpmath.mpf) -> mpmath.mpf:
    """10^-40 relative to the largest magnitude, absolute 10^-40 below 1 (near 0)."""
    return DIGITS * max(mpmath.mpf(1), *(abs(v) for v in values))


def _show(*values: Loss) -> str:
    return "; ".join(f"[{mpmath.nstr(v.lower, 75)}, {mpmath.nstr(v.upper, 75)}]" for v in values)


def _check_enclosures(mine: Loss, theirs: Loss) -> None:
    """Two enclosures of one exact finite loss: they meet, each is narrow, and their
    midpoints agree to 40 significant digits."""
    with mpmath.workdps(WORK):
        _check_enclosures_at_work_precision(mine, theirs)


def _check_enclosures_at_work_precision(mine: Loss, theirs: Loss) -> None:
    assert max(mine.lower, theirs.lower) <= min(mine.upper, theirs.upper), f"disjoint: {_show(mine, theirs)}"
    for value in (mine, theirs):
        assert value.upper - value.lower <= _tolerance(value.midpoint), f"wide: {_show(value)}"
    assert abs(mine.midpoint - theirs.midpoint) <= _tolerance(mine.midpoint, theirs.midpoint), (
        f"midpoints differ: {_show(mine, theirs)}"
    )


def _check_witness(
    interface: Interface, case: Case, strict: bool, direction: Direction, forward: bool, enclosures: tuple[Loss, ...]
) -> None:
    """The witness of `direction` replays, under both stores, to a log ratio inside every
    enclosure of the loss in `enclosures` (both engines')."""
    witness = direction.witness
    value = direction.value
    first, second = (case.store_a, case.store_b) if forward else (case.store_b, case.store_a)
    # The witness is a transcript of its own side, controls included: replayed under the
    # other store with the same controls (they are equal wherever the loss is finite).
    side = "a" if forward else "b"
    on_first = replay_transcript(interface, first, witness, control_side=side, strict=strict)
    on_second = replay_transcript(interface, second, witness, control_side=side, strict=strict)
    if value.is_impossible:
        return
    assert on_first.log_probability > mpmath.mpf("-inf")  # the witness is a transcript of its own side
    if value.is_infinite:
        assert on_second.log_probability == mpmath.mpf("-inf")
        return
    # The replay's log probabilities carry 60 digits (DEFAULT_DPS); their difference and the
    # comparisons are taken at WORK digits, not at the ambient 15 (which would blur them at 1e-16).
    with mpmath.workdps(WORK):
        ratio = on_first.log_probability - on_second.log_probability
        slack = _tolerance(ratio)
        for enclosure in enclosures:
            assert enclosure.lower - slack <= ratio <= enclosure.upper + slack, f"replay {mpmath.nstr(ratio, 75)} outside {_show(enclosure)}"


@given(st.integers(0, 2**32 - 1), st.integers(0, 3))
def test_lattice_equals_the_sparse_programme_and_the_general_search(seed: int, kind: int) -> None:
    """The lattice programme (analysis/lattice.py) on generated deployments of its
    shape (tests/audit_generators.py `lattice_case`; kind 0: preallocated plans with C_a of
    16-64 and horizons up to 256) against the sparse ledger programme and, below those
    sizes, the general search, to 40 digits both ways; its witness replays to its loss."""
    large = kind == 0
    data, a, b, horizon = lattice_case(seed, large=large)
    loaded = interface_from_dict(data)
    interface, store_a, store_b = loaded.interface, loaded.store(a), loaded.store(b)
    mine = worst_case_loss(interface, store_a, store_b, horizon, strict=False, search="lattice")
    references = [worst_case_loss(interface, store_a, store_b, horizon, strict=False, search="ledger")]
    if not large:
        references.append(worst_case_loss(interface, store_a, store_b, horizon, strict=False, search="general"))
    if uses_lattice(interface, store_a, store_b, horizon):
        event("lattice programme" + (", C_a >= 16" if large else ""))
    for theirs in references:
        for x, y in ((mine.a_over_b.value, theirs.a_over_b.value), (mine.b_over_a.value, theirs.b_over_a.value)):
            assert x.kind == y.kind
            if x.is_finite:
                _check_enclosures(x, y)
    case = Case(interface, store_a, store_b, "", QueryStrategy(kind="fixed", sequence=()), Channel(kind="constant"), 1)
    engines = (mine, *references)
    _check_witness(interface, case, False, mine.a_over_b, True, tuple(e.a_over_b.value for e in engines))
    _check_witness(interface, case, False, mine.b_over_a, False, tuple(e.b_over_a.value for e in engines))


@example(_pruning_trap())
@example(_fixed_point_trap())
@given(audited())
def test_fast_audit_equals_general_search_and_the_witness_replays(drawn: tuple[Interface, Case, bool, int]) -> None:
    interface, case, strict, horizon = drawn
    assert ledger_programme.applies(interface, strict)  # else "auto" would be the general search
    _report_shape(interface)
    fast = worst_case_loss(interface, case.store_a, case.store_b, horizon, strict=strict)
    slow = worst_case_loss(interface, case.store_a, case.store_b, horizon, strict=strict, search="general")
    assert slow.fixed_point is None
    for mine, theirs in ((fast.a_over_b, slow.a_over_b), (fast.b_over_a, slow.b_over_a)):
        assert mine.value.is_infinite == theirs.value.is_infinite
        assert mine.value.is_impossible == theirs.value.is_impossible
        if mine.value.is_finite:
            _check_enclosures(mine.value, theirs.value)
    if fast.worst.value.is_infinite:
        event("infinite loss")
    elif fast.worst.upper > 0:
        event("positive finite loss")
        cap = min(a.cap for a in interface.policy.attributes)
        target(float(fast.worst.upper) / float(cap), label="loss / min cap")
    both_ab, both_ba = (fast.a_over_b.value, slow.a_over_b.value), (fast.b_over_a.value, slow.b_over_a.value)
    for engine in (fast, slow):
        _check_witness(interface, case, strict, engine.a_over_b, forward=True, enclosures=both_ab)
        _check_witness(interface, case, strict, engine.b_over_a, forward=False, enclosures=both_ba)
