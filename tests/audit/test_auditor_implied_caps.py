"""Implied caps (analysis/reduction.py): a ledger charged only together with another one of no
larger cap never decides an admission and is dropped from the ledger programme's state.
Pinned by two small interfaces where each half of the rule matters (the generated
cross-checks in test_auditor_components.py and test_differential_audit.py fail too when
either half is dropped), and by the 12-attribute round-3 cell, whose state estimate falls
under the default --max-states."""

from __future__ import annotations

import sys
from pathlib import Path

import mpmath
import pytest

from dpmem_ref.analysis import DEFAULT_MAX_STATES, worst_case_loss
from dpmem_ref.analysis.ledger import LedgerSearch
from dpmem_ref.analysis.loss import IV_DPS, Loss
from dpmem_ref.config.load import interface_from_dict, load_interface_file
from dpmem_ref.mechanism.em import iv_precision

ROOT = Path(__file__).resolve().parents[2]

# qab reads position 1 (groups of a and b: charged to both), qb position 2 (b only), qa
# position 3 (a only, in the second variant); pass reads position 4 (no group). The stores
# differ at 1, 2 and 3.
TEMPLATE = """
name = "implied-caps"
positions = ["s", "s", "s", "s"]
[attributes.a]
group = [1, {a_extra}]
cap = {cap_a}
[attributes.b]
group = [1, 2]
cap = {cap_b}
[budget]
rule = "online"
K = 2
[scorer]
kind = "linear"
weights = {{ r = "0", c = "1", s = "0" }}
sensitivity = "1"
[slots.s]
generic = "v0"
[slots.s.views.v0]
compatible = ["none"]
[slots.s.views.v1]
compatible = ["evidence"]
[[queries]]
name = "qab"
reads = [{{ slot = "s", positions = [1] }}]
[[queries]]
name = "qb"
reads = [{{ slot = "s", positions = [2] }}]
{qa}
[[queries]]
name = "pass"
reads = [{{ slot = "s", positions = [4] }}]
[stores.M]
1 = ["evidence"]
2 = ["evidence"]
3 = ["evidence"]
[stores.M_prime]
"""
QA = """[[queries]]
name = "qa"
reads = [{ slot = "s", positions = [3] }]"""


def _loaded(tmp_path: Path, cap_a: str, cap_b: str, with_qa: bool) -> object:
    text = TEMPLATE.format(cap_a=cap_a, cap_b=cap_b, a_extra=3 if with_qa else 1, qa=QA if with_qa else "")
    path = tmp_path / "implied.toml"
    path.write_text(text)
    return load_interface_file(path)


def _agree(x: Loss, y: Loss) -> bool:
    with mpmath.workdps(80):
        return x.kind == y.kind and (
            not x.is_finite or bool(abs(x.midpoint - y.midpoint) <= mpmath.mpf(10) ** -40 * max(1, abs(x.midpoint)))
        )


@pytest.mark.parametrize(
    ("cap_a", "cap_b", "with_qa", "kept"),
    [
        ("2", "2", False, ("b",)),  # a charged only with b, same cap: implied, dropped
        ("3", "2", False, ("b",)),  # a larger cap: still implied
        ("1", "2", False, ("a", "b")),  # a smaller cap decides qab's admission: kept (the cap half)
        ("2", "2", True, ("a", "b")),  # qa charges a alone: not implied (the subset half)
    ],
)
def test_implied_cap_is_dropped_only_when_implied(
    tmp_path: Path, cap_a: str, cap_b: str, with_qa: bool, kept: tuple[str, ...]
) -> None:
    loaded = _loaded(tmp_path, cap_a, cap_b, with_qa)
    interface = loaded.interface  # type: ignore[attr-defined]
    a, b = loaded.store("M"), loaded.store("M_prime")  # type: ignore[attr-defined]
    with iv_precision(IV_DPS):
        search = LedgerSearch(interface, a, b, 6, interface.queries, False, 10**6)
    assert search.sliced == ("a", "b") and search.relevant == kept
    for horizon in (3, 6):
        fast = worst_case_loss(interface, a, b, horizon, strict=False)
        general = worst_case_loss(interface, a, b, horizon, strict=False, search="general")
        assert _agree(fast.a_over_b.value, general.a_over_b.value)
        assert _agree(fast.b_over_a.value, general.b_over_a.value)


def test_evaluation_pair_keeps_one_ledger_and_the_same_loss() -> None:
    """M_diabetes vs neutral: pregnancy is charged only together with diabetes (same cap),
    so the state is diabetes's ledger alone; the loss is the one the general search finds."""
    loaded = load_interface_file(ROOT / "examples" / "evaluation.toml")
    interface = loaded.interface
    a, b = loaded.store("M_diabetes"), loaded.store("neutral")
    with iv_precision(IV_DPS):
        search = LedgerSearch(interface, a, b, 8, interface.queries, False, 10**6)
        assert search.relevant == ("diabetes",) and search.estimate() == 4
    fast = worst_case_loss(interface, a, b, 3, strict=False)
    general = worst_case_loss(interface, a, b, 3, strict=False, search="general")
    assert _agree(fast.a_over_b.value, general.a_over_b.value) and _agree(fast.b_over_a.value, general.b_over_a.value)


def test_twelve_attribute_cell_is_estimated_under_the_default_limit() -> None:
    """The 12-attribute round-3 cell (every group differs, K = 3, T = 32) was
    estimated at 4^12 = 16.8M states (34,930 built) and needed --max-states 20000000; with
    the implied caps dropped its estimate is 4^7 = 16,384, an upper bound on what is built."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from audit_interfaces import all_differing_dict

    loaded = interface_from_dict(all_differing_dict(12, 3))
    interface = loaded.interface
    with iv_precision(IV_DPS):
        search = LedgerSearch(
            interface, loaded.store("M_all"), loaded.store("neutral"), 32, interface.queries, False, 10**6
        )
        estimate = search.estimate()
    assert len(search.sliced) == 12 and len(search.relevant) == 7
    assert estimate == 4**7 <= DEFAULT_MAX_STATES
