"""The session template (`dpmem_ref.ledger.session`): what it adds over the backends' primitives.

Behaviour common to every backend is pinned by the contract suite (test_ledger_contract.py,
run on every row of `urls.SCHEMES`); here, the template's own checks.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpmem_ref.core.errors import ContractViolation
from dpmem_ref.ledger.facts import ReleaseRequest, SessionKey
from dpmem_ref.ledger.memory import MemoryLedgerStore
from dpmem_ref.ledger.session import assert_within_caps

CAPS = {"diabetes": Fraction(2), "debt": Fraction(2)}


def request(release_id: str = "01") -> ReleaseRequest:
    return ReleaseRequest(
        release_id=release_id,
        turn_id="01",
        index=0,
        slot="food",
        view="low-glycemic",
        fallback_view="balanced-meals",
        charge_set=frozenset({"diabetes"}),
        epsilon=Fraction(2, 3),
    )


def test_the_invariant_names_c5_the_session_and_the_attribute() -> None:
    key = SessionKey(user="u", interaction="i")
    assert_within_caps(key, {"diabetes": Fraction(2), "debt": Fraction(0)}, CAPS)  # L_a = B_a holds
    with pytest.raises(ContractViolation, match=r"^C5: session u/i, attribute debt: L_a > B_a") as raised:
        assert_within_caps(key, {"diabetes": Fraction(0), "debt": Fraction(7, 3)}, CAPS)
    assert raised.value.condition == "C5"


def test_a_ledger_above_its_cap_refuses_the_charge_before_anything_is_written() -> None:
    """The in-process store has no rollback: every scope is checked before the first write."""
    ledger_store = MemoryLedgerStore()
    session = ledger_store.open_session("u", "i", CAPS)
    ledger_store._sessions[session.key].ledgers["debt"] = Fraction(3)  # a broken ledger (not the charged attribute)
    with pytest.raises(ContractViolation, match="^C5: "):
        session.charge_and_record(request())
    snapshot = session.load()
    assert snapshot.ledger_map() == {"diabetes": 0, "debt": 3} and snapshot.releases == ()
    ledger_store._sessions[session.key].ledgers["debt"] = Fraction(0)
    assert session.charge_and_record(request()).release.seq == 1  # the refused charge took no seq nor id
