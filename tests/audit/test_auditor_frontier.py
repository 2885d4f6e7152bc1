"""The frontier programme (analysis/frontier.py) against the sparse ledger programme and the
general search, to 40 significant digits both ways, on generated deployments of the
lattice's shape (`lattice_case`, horizons 4-12, where the horizon often binds) and on
chains of coupled attributes (`coupled_case`); its witness replays to its loss; it runs the
coupled chains the box cannot (16 attributes) in well under a second; past --max-states it
hands over to the sparse programme instead of refusing."""

from __future__ import annotations

import time

from dpmem_ref.analysis import ledger, worst_case_loss
from dpmem_ref.analysis.components import ComponentSearch
from dpmem_ref.analysis.loss import IV_DPS
from dpmem_ref.config.load import interface_from_dict
from dpmem_ref.mechanism.em import iv_precision
from tests.audit.test_auditor_lattice import (
    agree,
    engine_agrees_on_large_plans,
    engine_agrees_on_lattice_cases,
    replays,
)
from tests.audit_generators import coupled_case


def uses_frontier(interface: object, store_a: object, store_b: object, horizon: int) -> bool:
    """Whether worst_case_loss(..., search="frontier") runs the frontier programme itself."""
    if not ledger.applies(interface, False):  # type: ignore[arg-type]
        return False
    with iv_precision(IV_DPS):
        split = ComponentSearch(interface, store_a, store_b, horizon, interface.queries, False, 10**6)  # type: ignore[arg-type,attr-defined]
        if split.splits:
            return False
        split.whole.lattice_mode = "frontier"
        split.whole.estimate()
    return split.whole.frontier_plan is not None


def test_frontier_agrees_with_the_sparse_programme_and_the_general_search() -> None:
    """300 generated deployments: frontier vs the sparse ledger programme on every one, vs
    the general search on every tenth; the witnesses replay to the loss."""
    used = engine_agrees_on_lattice_cases("frontier", general_every=10, runs_itself=uses_frontier)
    assert used >= 150  # the frontier itself ran, not only its fallback


def test_frontier_agrees_on_coupled_chains_at_every_horizon() -> None:
    """Chains of 2-7 coupled attributes, K = 2 and 3, horizons from 1 (the horizon binds:
    the turns are a constraint) to past the longest chain of admissions."""
    for attributes in range(2, 8):
        for k in (2, 3):
            data, a, b = coupled_case(attributes, k)
            loaded = interface_from_dict(data)
            interface, store_a, store_b = loaded.interface, loaded.store(a), loaded.store(b)
            for horizon in (1, 2, 3, 5, 8, 13):
                assert uses_frontier(interface, store_a, store_b, horizon)
                mine = worst_case_loss(interface, store_a, store_b, horizon, strict=False, search="frontier")
                theirs = worst_case_loss(interface, store_a, store_b, horizon, strict=False, search="ledger")
                case = (attributes, k, horizon)
                assert agree(mine.a_over_b.value, theirs.a_over_b.value), case
                assert agree(mine.b_over_a.value, theirs.b_over_a.value), case
                assert replays(interface, store_a, store_b, mine.a_over_b, True), case
                assert replays(interface, store_a, store_b, mine.b_over_a, False), case


def test_sixteen_coupled_attributes_run_in_seconds() -> None:
    """16 coupled attributes with K = 2 (3^16 = 43M ledger vectors by the upper bound; main
    refused it at the default limit, and the sparse programme ran past 300 CPU-s), one- and
    two-slot turns, under 10 CPU-s each at T = 32, and the same loss at T = 16 and 256 where
    the chain of admissions fits the horizon."""
    for two_slot in (False, True):
        data, a, b = coupled_case(16, 2, two_slot)
        loaded = interface_from_dict(data)
        interface, store_a, store_b = loaded.interface, loaded.store(a), loaded.store(b)
        started = time.process_time()
        result = worst_case_loss(interface, store_a, store_b, 32, strict=False)
        assert time.process_time() - started < 10
        assert result.states_built <= 100_000 and not result.worst.is_infinite
        longer = worst_case_loss(interface, store_a, store_b, 256, strict=False)
        assert agree(result.a_over_b.value, longer.a_over_b.value)


def test_frontier_past_the_limit_hands_over_to_the_sparse_programme() -> None:
    """A limit below the frontier's table but above the sparse programme's states: the
    audit runs (sparse), with the same loss, and is not refused."""
    data, a, b = coupled_case(4, 3)
    loaded = interface_from_dict(data)
    interface, store_a, store_b = loaded.interface, loaded.store(a), loaded.store(b)
    frontier = worst_case_loss(interface, store_a, store_b, 3, strict=False, search="frontier")
    sparse = worst_case_loss(interface, store_a, store_b, 3, strict=False, search="ledger")
    assert sparse.states_built < frontier.states_built
    limit = frontier.states_built - 1
    handed = worst_case_loss(interface, store_a, store_b, 3, strict=False, search="frontier", max_states=limit)
    assert handed.states_built == sparse.states_built <= limit
    assert agree(handed.a_over_b.value, frontier.a_over_b.value)
    assert agree(handed.b_over_a.value, frontier.b_over_a.value)


def test_frontier_agrees_with_the_lattice_on_large_preallocated_plans() -> None:
    """40 generated deployments with preallocated plans of C_a = 16-64 and horizons of
    64-256 (the horizon binds on some): frontier vs lattice (itself checked against the
    sparse programme on the same deployments), to 40 digits both ways."""
    assert engine_agrees_on_large_plans("frontier", "lattice", 40, uses_frontier) >= 20
