"""The planner's memos (dpmem_ref.turn.caches.PlanCaches): one object per interface, and a
cached step never changes a plan or skips a refusal (C2 is strict-dependent, C3 is never
cached past)."""

from __future__ import annotations

from fractions import Fraction

import attrs
import pytest

from dpmem_ref import ContractViolation, PublicPrefix, plan_slot
from dpmem_ref.turn.caches import caches_of
from dpmem_ref.turn.plan import zero_ledgers
from tests.kernel_fixtures import XYZW_STORE, interface_reading_1, interface_reading_1_3, make_store


def test_one_plan_caches_object_per_interface():
    interface = interface_reading_1()
    assert caches_of(interface) is caches_of(interface)
    assert caches_of(attrs.evolve(interface, name="other")) is not caches_of(interface)  # a new interface, new memos


def test_a_plan_from_the_caches_equals_a_plan_made_afresh():
    interface = interface_reading_1_3()
    prefix = PublicPrefix((), interface.query("q"), ())
    ledgers = (Fraction(1, 3), Fraction(0))
    first = plan_slot(interface, ledgers, prefix, "g", XYZW_STORE)
    again = plan_slot(interface, ledgers, prefix, "g", XYZW_STORE)  # every step answered by a memo
    fresh = plan_slot(attrs.evolve(interface, name="fresh"), ledgers, prefix, "g", XYZW_STORE)  # empty memos
    for plan in (again, fresh):
        assert plan.public_shape == first.public_shape and plan.vector_after == first.vector_after
        assert plan.items == first.items and plan.scores == first.scores
        assert plan.distribution.support() == first.distribution.support()
        assert [plan.distribution.log_probability(v) for v in plan.distribution.support()] == [
            first.distribution.log_probability(v) for v in first.distribution.support()
        ]


def test_a_lenient_plan_cached_first_does_not_let_a_strict_plan_past_c2():
    interface = interface_reading_1(under_charged=True)
    prefix = PublicPrefix((), interface.query("under"), ())
    lenient = plan_slot(interface, zero_ledgers(interface), prefix, "g", make_store(), strict=False)
    assert lenient.charge_set == frozenset({"a"})
    for _ in range(2):
        with pytest.raises(ContractViolation) as error:
            plan_slot(interface, zero_ledgers(interface), prefix, "g", make_store())
        assert error.value.code == "C2.uncharged_read"


@attrs.frozen
class _ConstantBudget:
    value: Fraction
    name: str = "constant"

    def epsilon(self, charge_set, caps):  # type: ignore[no-untyped-def]
        return self.value


def test_an_eps_refused_by_c3_is_refused_at_every_plan():
    interface = attrs.evolve(interface_reading_1_3(), budget=_ConstantBudget(Fraction(0)))
    prefix = PublicPrefix((), interface.query("q"), ())
    for strict in (False, True, False):
        with pytest.raises(ContractViolation) as error:
            plan_slot(interface, zero_ledgers(interface), prefix, "g", XYZW_STORE, strict=strict)
        assert error.value.code == "C3.invalid_epsilon"
