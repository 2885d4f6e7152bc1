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


def test_a_ledger_vector_hashes_by_its_value_in_lowest_terms():
    """Equal values hash alike over any scale (zero ledgers included: 0/4 is 0/2), and the
    hash carries the value: distinct ledgers, huge counts and scales past a float's 53 bits
    included, hash apart (integers hash to themselves modulo 2**61 - 1, so these are exact)."""
    from dpmem_ref.core.ledgers import LedgerVector

    equal = [
        (LedgerVector((0, 0), 4), LedgerVector((0, 0), 2)),
        (LedgerVector((0, 0), 1), LedgerVector((0, 0), 12)),
        (LedgerVector((2, 4), 6), LedgerVector((1, 2), 3)),
        (LedgerVector((3,), 6), LedgerVector((1,), 2)),
        (LedgerVector((2**61,), 2**62), LedgerVector((1,), 2)),
    ]
    for a, b in equal:
        assert a == b and hash(a) == hash(b)
    distinct = [
        LedgerVector((1,), 2),
        LedgerVector((1,), 3),
        LedgerVector((2,), 3),
        LedgerVector((0,), 1),
        LedgerVector((2**60,), 1),
        LedgerVector((2**60 + 1,), 1),
        LedgerVector((1,), 2**60),
        LedgerVector((1,), 2**60 + 1),
    ]
    assert len({hash(vector) for vector in distinct}) == len(distinct)


def test_a_ledger_vector_is_unequal_to_anything_that_is_not_a_ledger_vector():
    """`!=` against another type is True (Python's fallback), never a truth value of
    NotImplemented. (A plain tuple of the same two fields compares equal: it is a named tuple.)"""
    from dpmem_ref.core.ledgers import LedgerVector

    vector = LedgerVector((1, 2), 3)
    assert vector == ((1, 2), 3) and not (vector != ((1, 2), 3))
    for other in (((1, 2), 4), (1, 2), "L", None, 1):
        assert vector != other and not (vector == other)
        assert other != vector and not (other == vector)
