"""One ledger form (dpmem_ref.core.ledgers.LedgerVector): exact integer counts over a scale,
L_a = units_a / scale; widening to a scale that holds new values, and equality and hashing
by value whatever the scale (the slot plans that carry a vector compare the same way).
"""

from __future__ import annotations

from fractions import Fraction

from dpmem_ref import (
    PublicPrefix,
    plan_slot,
)
from dpmem_ref.turn.plan import zero_ledgers
from tests.kernel_fixtures import (
    XYZW_STORE,
    interface_reading_1_3,
)


def test_a_ledger_vector_widens_exactly():
    from dpmem_ref.core.ledgers import LedgerVector

    assert LedgerVector((1, 0, 5), 3).widened((Fraction(1, 4),)) == ((4, 0, 20), 12)
    assert LedgerVector((1, 0, 5), 3).widened((Fraction(1, 4),)).scale == 12
    assert LedgerVector((3**40,), 7).widened((Fraction(2, 3),)) == ((3**41,), 21)  # past a float's 53 bits
    same = LedgerVector((1, 2), 6)
    assert same.widened((Fraction(1, 3), Fraction(1, 2))) is same  # the scale already holds them
    assert LedgerVector.of((Fraction(1, 2), Fraction(2, 3)), 4) == ((6, 8), 12)
    assert LedgerVector.of((Fraction(1, 2), Fraction(2, 3)), 4).scale == 12


def test_slot_plans_compare_and_hash_on_their_values_whatever_the_scale_of_their_counts():
    from dpmem_ref.core.ledgers import LedgerVector

    interface = interface_reading_1_3()
    prefix = PublicPrefix((), interface.query("q"), ())
    plan = plan_slot(interface, zero_ledgers(interface), prefix, "g", XYZW_STORE)
    again = plan_slot(interface, zero_ledgers(interface), prefix, "g", XYZW_STORE)
    units, scale = plan.vector_after
    rescaled = plan._replace(vector_after=LedgerVector(tuple(2 * u for u in units), 2 * scale))
    assert rescaled.vector_after == plan.vector_after and not (rescaled.vector_after != plan.vector_after)
    assert hash(rescaled.vector_after) == hash(plan.vector_after)
    assert LedgerVector((1, 2), 3) != LedgerVector((1, 3), 3) and LedgerVector((2, 4), 6) == LedgerVector((1, 2), 3)
    assert LedgerVector((2, 4), 6) != LedgerVector((1, 2), 4) and LedgerVector((1,), 3) != LedgerVector((1, 0), 3)
    for same in (again, rescaled):
        assert same is not plan and same == plan and not (same != plan) and hash(same) == hash(plan)
    later = plan_slot(interface, plan.ledgers_after, prefix, "g", XYZW_STORE)
    assert later != plan and not (later == plan)
    # Distinct plans hash apart (tuples of public values: a collision has probability ~2**-64).
    assert hash(later) != hash(plan)
