"""The lattice programme (analysis/lattice.py) against the sparse ledger programme and the
general search, to 40 significant digits both ways, on generated deployments of the shape
it solves (tests/audit_generators.py `lattice_case`: one-slot queries, fallback or no
control, a pass, 1-3 coupled attributes, online and preallocated budgets, over-charged and
uncharged reads), including preallocated plans with C_a of 16-64 and horizons up to 256;
its witness replays to its loss; and the rules of its derivation pinned by cases that a
broken variant gets wrong (the chain condition (iv), the class maximum, the refused step)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import mpmath

from dpmem_ref.analysis import lattice, ledger, replay_transcript, worst_case_loss
from dpmem_ref.analysis.components import ComponentSearch
from dpmem_ref.analysis.ledger import LedgerSearch
from dpmem_ref.analysis.loss import IV_DPS, Loss
from dpmem_ref.config.load import interface_from_dict, load_interface_file
from dpmem_ref.core.errors import InputError
from dpmem_ref.mechanism.em import iv_precision
from tests.audit_generators import lattice_case

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))


def agree(x: Loss, y: Loss) -> bool:
    if x.kind != y.kind:
        return False
    if not x.is_finite:
        return True
    with mpmath.workdps(80):
        return bool(abs(x.midpoint - y.midpoint) <= mpmath.mpf(10) ** -40 * max(1, abs(x.midpoint)))


def uses_lattice(interface: object, store_a: object, store_b: object, horizon: int) -> bool:
    """Whether worst_case_loss(..., search="lattice") runs the lattice itself (not its
    fallback, the sparse programme, nor the component split)."""
    if not ledger.applies(interface, False):  # type: ignore[arg-type]
        return False
    with iv_precision(IV_DPS):
        split = ComponentSearch(interface, store_a, store_b, horizon, interface.queries, False, 10**6)  # type: ignore[arg-type,attr-defined]
        if split.splits:
            return False
        split.whole.lattice_mode = "always"
        split.whole.estimate()
    return split.whole.lattice_plan is not None


def replays(interface: object, store_a: object, store_b: object, direction: object, forward: bool) -> bool:
    """The witness, replayed under both stores, reaches the direction's loss."""
    first, second = (store_a, store_b) if forward else (store_b, store_a)
    side = "a" if forward else "b"
    value: Loss = direction.value  # type: ignore[attr-defined]
    if not value.is_finite:
        return True
    with mpmath.workdps(80):
        on_first = replay_transcript(interface, first, direction.witness, control_side=side, strict=False)  # type: ignore[arg-type,attr-defined]
        on_second = replay_transcript(interface, second, direction.witness, control_side=side, strict=False)  # type: ignore[arg-type,attr-defined]
        ratio = on_first.log_probability - on_second.log_probability
        # The replay sums 80-digit log probabilities; the lattice's ends are the witness
        # path's own lower ends and the exact maximum of the upper ends (70 digits each),
        # so the replay lies between them well beyond the 70th digit.
        slack = mpmath.mpf(10) ** -76 * max(1, abs(value.midpoint))
        return bool(value.lower - slack <= ratio <= value.upper + slack)


def test_lattice_agrees_with_the_sparse_programme_and_the_general_search() -> None:
    """300 generated deployments (horizons 4-12): lattice vs the sparse ledger programme on
    every one, vs the general search on every fifth; the witnesses replay to the loss. The
    lattice itself runs on 157 of them (the others: no ledger decides, a component split,
    a free differing read, or a chain longer than T: the fallback is checked as well)."""
    used = engine_agrees_on_lattice_cases("lattice", general_every=5, runs_itself=uses_lattice)
    assert used >= 150  # the lattice itself ran, not only its fallback


def engine_agrees_on_lattice_cases(search: str, general_every: int, runs_itself: Callable[..., object]) -> int:
    """Over 300 generated deployments (`lattice_case`): the engine `search` agrees with the
    sparse ledger programme on every one and with the general search on every
    `general_every`-th, and its witnesses replay to its loss; returns on how many the engine
    itself ran (`runs_itself(interface, store_a, store_b, horizon)`), not its fallback."""
    used = 0
    for seed in range(300):
        data, a, b, horizon = lattice_case(seed)
        loaded = interface_from_dict(data)
        interface, store_a, store_b = loaded.interface, loaded.store(a), loaded.store(b)
        mine = worst_case_loss(interface, store_a, store_b, horizon, strict=False, search=search)
        references = [worst_case_loss(interface, store_a, store_b, horizon, strict=False, search="ledger")]
        if seed % general_every == 0:
            references.append(worst_case_loss(interface, store_a, store_b, horizon, strict=False, search="general"))
        for theirs in references:
            assert agree(mine.a_over_b.value, theirs.a_over_b.value), seed
            assert agree(mine.b_over_a.value, theirs.b_over_a.value), seed
        assert replays(interface, store_a, store_b, mine.a_over_b, True), seed
        assert replays(interface, store_a, store_b, mine.b_over_a, False), seed
        used += bool(runs_itself(interface, store_a, store_b, horizon))
    return used


def engine_agrees_on_large_plans(search: str, reference: str, cases: int, runs_itself: Callable[..., object]) -> int:
    """Over `cases` generated deployments with preallocated plans of C_a = 16-64 and
    horizons of 64-256 (`lattice_case(seed, large=True)`): the engine `search` agrees with
    the engine `reference` to 40 digits both ways; returns on how many the engine itself ran."""
    used = 0
    for seed in range(cases):
        data, a, b, horizon = lattice_case(seed, large=True)
        loaded = interface_from_dict(data)
        interface, store_a, store_b = loaded.interface, loaded.store(a), loaded.store(b)
        mine = worst_case_loss(interface, store_a, store_b, horizon, strict=False, search=search)
        theirs = worst_case_loss(interface, store_a, store_b, horizon, strict=False, search=reference)
        assert agree(mine.a_over_b.value, theirs.a_over_b.value), seed
        assert agree(mine.b_over_a.value, theirs.b_over_a.value), seed
        used += bool(runs_itself(interface, store_a, store_b, horizon))
    return used


def test_lattice_agrees_on_large_preallocated_plans() -> None:
    """60 generated deployments: lattice vs the sparse ledger programme (the lattice itself
    runs on 29 of them)."""
    assert engine_agrees_on_large_plans("lattice", "ledger", 60, uses_lattice) >= 25


def test_round3_cells_in_the_lattice_shape_agree_with_the_sparse_programme() -> None:
    """Evaluation-derived deployments, every group differing (Corollary 1 pairs), the
    lattice vs the sparse programme: 3 attributes with K = 8 (729 cells) and 4 with K = 5."""
    from audit_interfaces import all_differing_dict

    for attributes, k in ((3, 8), (4, 5)):
        loaded = interface_from_dict(all_differing_dict(attributes, k))
        interface, store_a, store_b = loaded.interface, loaded.store("M_all"), loaded.store("neutral")
        assert uses_lattice(interface, store_a, store_b, 64)
        mine = worst_case_loss(interface, store_a, store_b, 64, strict=False, search="lattice")
        theirs = worst_case_loss(interface, store_a, store_b, 64, strict=False, search="ledger")
        assert agree(mine.a_over_b.value, theirs.a_over_b.value) and agree(mine.b_over_a.value, theirs.b_over_a.value)
        assert mine.fixed_point is None


# qa and qb each raise one ledger (eps = 1/3 against caps of 1), qab both, pass neither:
# qa, qa, qa, qb, qb, qb is a chain of 6 admissions, while every ledger state is reached
# within 3 turns (qab raises both). The stores differ at positions 1-3.
LONG_CHAIN = """
name = "long-chain-with-pass"
positions = ["s", "s", "s", "s"]
[attributes.a]
group = [1, 3]
cap = 1
[attributes.b]
group = [2, 3]
cap = 1
[budget]
rule = "online"
K = 3
[scorer]
kind = "linear"
weights = { r = "0", c = "1", s = "0" }
sensitivity = "1"
[slots.s]
generic = "v0"
[slots.s.views.v0]
compatible = ["none"]
[slots.s.views.v1]
compatible = ["evidence"]
[[queries]]
name = "qa"
reads = [{ slot = "s", positions = [1] }]
[[queries]]
name = "qb"
reads = [{ slot = "s", positions = [2] }]
[[queries]]
name = "qab"
reads = [{ slot = "s", positions = [3] }]
[[queries]]
name = "pass"
reads = [{ slot = "s", positions = [4] }]
[stores.M]
1 = ["evidence"]
2 = ["evidence"]
3 = ["evidence"]
[stores.M_prime]
"""


def test_lattice_declines_when_the_chain_exceeds_the_horizon(tmp_path: Path) -> None:
    """Condition (iv): at T = 4 the chain (6) does not fit, so the horizon binds and the
    lattice must decline (the sparse programme's value iteration runs); a lattice that
    ignored (iv) reports the 6-turn loss at T = 4. At T = 6 and 9 it applies and agrees
    with the general search."""
    path = tmp_path / "chain.toml"
    path.write_text(LONG_CHAIN)
    loaded = load_interface_file(path)
    interface, a, b = loaded.interface, loaded.store("M"), loaded.store("M_prime")
    for horizon, applies in ((4, False), (5, False), (6, True), (9, True)):
        assert uses_lattice(interface, a, b, horizon) is applies
        mine = worst_case_loss(interface, a, b, horizon, strict=False, search="lattice")
        general = worst_case_loss(interface, a, b, horizon, strict=False, search="general")
        assert agree(mine.a_over_b.value, general.a_over_b.value) and agree(mine.b_over_a.value, general.b_over_a.value)


def test_a_class_counts_its_largest_step() -> None:
    """Queries with the same move vector form one class whose step is the largest of theirs
    (both ends); evaluation's M_diabetes vs neutral has classes of several queries with
    different steps. A class that took its first member's step understates the loss."""
    loaded = load_interface_file(ROOT / "examples" / "evaluation.toml")
    interface, a, b = loaded.interface, loaded.store("M_diabetes"), loaded.store("neutral")
    with iv_precision(IV_DPS):
        search = LedgerSearch(interface, a, b, 16, interface.queries, False, 10**6)
        found = lattice.plan(search, 10**6)
    assert found is not None
    assert any(len({m[1].hi for m in k.members}) > 1 for k in found.classes)
    for horizon in (3, 16):
        mine = worst_case_loss(interface, a, b, horizon, strict=False, search="lattice")
        theirs = worst_case_loss(interface, a, b, horizon, strict=False, search="ledger")
        assert agree(mine.a_over_b.value, theirs.a_over_b.value) and agree(mine.b_over_a.value, theirs.b_over_a.value)


def test_k64_cell_is_exact_fast_and_estimated_by_its_box() -> None:
    """The cell 3 coupled attributes, K = 64, T = 256: the loss main 1c454c6's
    sparse programme computed (274,674 states, 20-47 CPU-s: recorded here, to 45 digits),
    from the lattice (its box, 65^3 cells) in about a second, and from the frontier
    programme (the auditor's choice: a few thousand table entries) to the same digits; a
    limit below the frontier's table and the lower bound on the sparse states is refused
    within a second, in one line naming the lower bound (every ledger has its own differing
    query: all 65^3 states are reached) and the flag."""
    from audit_interfaces import all_differing_dict

    loaded = interface_from_dict(all_differing_dict(3, 64))
    interface, store_a, store_b = loaded.interface, loaded.store("M_all"), loaded.store("neutral")
    for search in ("lattice", "auto"):
        started = time.process_time()
        result = worst_case_loss(interface, store_a, store_b, 256, strict=False, search=search)
        assert time.process_time() - started < 10
        if search == "lattice":
            assert result.states_built == 65**3  # the box
            assert result.states_explored - 65**3 < 100  # the box plus the per-pattern summaries
        else:
            assert result.states_built < 10_000  # the frontier's tables
        with mpmath.workdps(60):
            assert mpmath.nstr(result.worst.midpoint, 45) == "2.34279183147048962117055989974240824396820923"
            assert result.worst.upper - result.worst.lower < mpmath.mpf(10) ** -60
    limit = result.states_built - 1
    started = time.process_time()
    try:
        worst_case_loss(interface, store_a, store_b, 256, strict=False, max_states=limit)
    except InputError as error:
        message = str(error)
    else:  # pragma: no cover
        raise AssertionError("the audit ran past --max-states")
    assert time.process_time() - started < 1
    assert "\n" not in message and "at least 274625 sparse ledger states" in message and f"--max-states {limit}" in message


def test_pathological_audit_is_refused_within_a_second() -> None:
    """12 coupled attributes with K = 64 (an upper bound of 4.9e12 ledger
    states) are refused before any state is built, within one CPU second, in one line giving
    a lower bound on the states (over 10^7: the work is real) and the flag."""
    from audit_interfaces import all_differing_dict

    loaded = interface_from_dict(all_differing_dict(12, 64))
    interface, store_a, store_b = loaded.interface, loaded.store("M_all"), loaded.store("neutral")
    started = time.process_time()
    try:
        worst_case_loss(interface, store_a, store_b, 256, strict=False)
    except InputError as error:
        message = str(error)
    else:  # pragma: no cover
        raise AssertionError("the audit ran past --max-states")
    assert time.process_time() - started < 1
    assert "\n" not in message and "--max-states 1000000" in message
    least = int(message.split("at least ")[1].split()[0])
    assert least > 10**7
