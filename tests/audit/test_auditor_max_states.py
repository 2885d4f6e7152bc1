"""--max-states refuses only when the work is real (analysis/bounds.py): over generated
interfaces, an audit run at exactly the states it builds at an unbounded limit is not
refused and builds the same states; no run builds more states than its limit; the lower
bound an audit is refused on up front never exceeds what the sparse programme builds, and
the upper bound never falls below it; the refusal's advice lowers the work enough; and no
engine has a recursion limit (the general search at T = 256)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from dpmem_ref.analysis import ledger, worst_case_loss
from dpmem_ref.analysis.components import ComponentSearch
from dpmem_ref.analysis.loss import IV_DPS
from dpmem_ref.config.load import interface_from_dict, load_interface_file
from dpmem_ref.core.errors import InputError
from dpmem_ref.mechanism.em import iv_precision
from tests.audit.test_auditor_lattice import agree
from tests.audit_generators import coupled_case, interface_case, lattice_case

ROOT = Path(__file__).resolve().parents[2]
UNBOUNDED = 10**9


def cases() -> list[tuple[str, dict[str, Any], str, str, int]]:
    """Generated interfaces of every shape the engines see, with a horizon each."""
    out: list[tuple[str, dict[str, Any], str, str, int]] = []
    for seed in range(40):
        data, a, b = interface_case(seed)
        out.append((f"interface {seed}", data, a, b, 2 + seed % 4))
    for seed in range(40):
        data, a, b, horizon = lattice_case(seed)
        out.append((f"lattice {seed}", data, a, b, horizon))
    for attributes, k, two_slot in itertools.product((3, 6, 10), (2, 3), (False, True)):
        data, a, b = coupled_case(attributes, k, two_slot)
        out.append((f"coupled {attributes} K={k} two={two_slot}", data, a, b, 6))
    return out


@pytest.mark.parametrize("search", ["auto", "ledger"])
def test_an_audit_that_fits_its_built_states_is_never_refused(search: str) -> None:
    """At the limit N = the states built at an unbounded limit the audit runs and builds N
    states (the same engine, the same loss); at N - 1 it either refuses or builds at most
    N - 1 (another engine that fits). The coupled two-slot chains are the audits main's
    estimate refused (4^10 = 1.05M estimated for 1,109 built)."""
    refused_below = 0
    for label, data, a, b, horizon in cases():
        loaded = interface_from_dict(data)
        interface, store_a, store_b = loaded.interface, loaded.store(a), loaded.store(b)
        run = dict(strict=False, search=search)
        full = worst_case_loss(interface, store_a, store_b, horizon, max_states=UNBOUNDED, **run)  # type: ignore[arg-type]
        built = full.states_built
        assert built >= 1, label
        exact = worst_case_loss(interface, store_a, store_b, horizon, max_states=built, **run)  # type: ignore[arg-type]
        assert exact.states_built == built, label
        assert agree(exact.a_over_b.value, full.a_over_b.value), label
        assert agree(exact.b_over_a.value, full.b_over_a.value), label
        if built == 1:
            continue
        try:
            tight = worst_case_loss(interface, store_a, store_b, horizon, max_states=built - 1, **run)  # type: ignore[arg-type]
        except InputError as error:
            assert "--max-states" in str(error) and "\n" not in str(error), label
            refused_below += 1
        else:
            assert tight.states_built <= built - 1, label
    assert refused_below >= 40  # the limit does bind


def test_the_bounds_enclose_what_the_sparse_programme_builds() -> None:
    """least_states <= ledger states built <= estimate, for the sparse ledger programme, on
    every generated interface it applies to, at several horizons (the lower bound counts
    only the states within T - 1 turns)."""
    checked = tight = 0
    for label, data, a, b, _ in cases():
        loaded = interface_from_dict(data)
        interface, store_a, store_b = loaded.interface, loaded.store(a), loaded.store(b)
        if not ledger.applies(interface, False):
            continue
        for horizon in (1, 2, 3, 5, 9):
            with iv_precision(IV_DPS):
                split = ComponentSearch(interface, store_a, store_b, horizon, interface.queries, False, UNBOUNDED)
                programme = split if split.splits else split.whole
                if not split.splits:
                    split.whole.lattice_mode = "never"
                upper = programme.estimate()
                least, _ = programme.least_states()
                programme.run()
            assert least <= programme.state_count <= upper, (label, horizon)
            checked += 1
            tight += least == programme.state_count and least > 1
    assert checked >= 300 and tight >= 20


def test_the_refusal_names_a_horizon_that_fits() -> None:
    """The sparse programme stopped at the limit names a horizon; the audit at that horizon
    and that limit runs (breadth first, every state within that depth was built)."""
    data, a, b = coupled_case(10, 3, two_slot=True)
    loaded = interface_from_dict(data)
    interface, store_a, store_b = loaded.interface, loaded.store(a), loaded.store(b)
    full = worst_case_loss(interface, store_a, store_b, 32, strict=False)
    limit = full.states_built // 3
    with pytest.raises(InputError) as refused:
        worst_case_loss(interface, store_a, store_b, 32, strict=False, max_states=limit)
    message = str(refused.value)
    assert "\n" not in message and f"--max-states {limit}" in message
    horizon = int(message.split("lower --horizon to at most ")[1].split()[0])
    assert 1 <= horizon < 32
    assert worst_case_loss(interface, store_a, store_b, horizon, strict=False, max_states=limit).states_built <= limit


def test_the_lower_bound_refusal_is_at_once_and_names_the_bound() -> None:
    """A limit below the lower bound: refused before any state is built, naming the bound,
    which is at most what the audit builds at an unbounded limit."""
    data, a, b = coupled_case(6, 3)
    loaded = interface_from_dict(data)
    interface, store_a, store_b = loaded.interface, loaded.store(a), loaded.store(b)
    full = worst_case_loss(interface, store_a, store_b, 5, strict=False, search="ledger")
    with pytest.raises(InputError, match="a lower bound") as refused:
        worst_case_loss(interface, store_a, store_b, 5, strict=False, search="ledger", max_states=2)
    least = int(str(refused.value).split("at least ")[1].split()[0])
    assert 2 < least <= full.states_built


def test_the_general_search_has_no_recursion_limit() -> None:
    """T = 256 (the largest horizon) through the general search, whose recursion over turns
    runs on an explicit stack; the same loss as the ledger programme."""
    loaded = load_interface_file(ROOT / "examples" / "figure2.toml")
    interface, store_a, store_b = loaded.interface, loaded.store("M"), loaded.store("M_no_diabetes")
    general = worst_case_loss(interface, store_a, store_b, 256, strict=False, search="general")
    programme = worst_case_loss(interface, store_a, store_b, 256, strict=False)
    assert agree(general.a_over_b.value, programme.a_over_b.value)
    assert agree(general.b_over_a.value, programme.b_over_a.value)
    assert general.states_built == general.states_explored > 256


def test_the_general_search_refusal_counts_its_nodes() -> None:
    """The general search at its own node count runs; one below, it stops with one line."""
    loaded = load_interface_file(ROOT / "examples" / "figure2.toml")
    interface, store_a, store_b = loaded.interface, loaded.store("M"), loaded.store("M_no_diabetes")
    full = worst_case_loss(interface, store_a, store_b, 6, search="general", max_states=UNBOUNDED)
    at = worst_case_loss(interface, store_a, store_b, 6, search="general", max_states=full.states_built)
    assert at.states_built == full.states_built and agree(at.a_over_b.value, full.a_over_b.value)
    with pytest.raises(InputError, match="search nodes.*lower --horizon"):
        worst_case_loss(interface, store_a, store_b, 6, search="general", max_states=full.states_built - 1)


def test_the_lower_bound_counts_combinations_within_the_turns_exactly() -> None:
    """combinations_within(counts, T) = #{n : 0 <= n_i <= counts_i, sum n <= T}, by brute force."""
    from dpmem_ref.analysis.bounds import combinations_within

    for counts in ([], [0], [3], [2, 3], [1, 1, 1], [4, 0, 2], [5, 5, 1, 2]):
        for turns in range(0, 12):
            brute = sum(1 for n in itertools.product(*(range(c + 1) for c in counts)) if sum(n) <= turns)
            assert combinations_within(counts, turns) == brute, (counts, turns)
