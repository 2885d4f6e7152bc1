"""Tests that kill mutants mutmut found surviving (or untested) in the kernel's core
modules (see docs/mutation-report.md).

Each test checks behaviour through public names (top-level `dpmem_ref` where it exports
them), so it survives the Round-2 restructure of the modules it was written against.
Error messages are part of the behaviour: bad input names its field (HELPERS rules).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpmem_ref import (
    Attribute,
    ContractViolation,
    FunctionScorer,
    InputError,
    Interface,
    InterfaceState,
    Layout,
    MemoryItem,
    OnlineBudget,
    Policy,
    PreallocatedBudget,
    PublicPrefix,
    Query,
    SeededRandomSource,
    SlotRead,
    Store,
    TemplateChannel,
    View,
    Vocabulary,
    adjacent_attributes,
    differing_positions,
    is_adjacent,
    plan_slot,
    run_interaction,
)
from dpmem_ref.core.policy import MAX_ATTRIBUTES, MAX_POSITIONS, require_adjacent
from dpmem_ref.mechanism.construction import argmax_view

LAYOUT = Layout(("g", "g", "g", "h"))
POLICY = Policy(
    LAYOUT,
    (
        Attribute("a", frozenset({1, 2}), Fraction(1)),
        Attribute("b", frozenset({2, 3}), Fraction(2)),
    ),
)


def item(*tags: str) -> MemoryItem:
    return MemoryItem(frozenset(tags), " ".join(tags))


def store(name: str = "M", **changes: MemoryItem) -> Store:
    contents = {1: item("x"), 2: item("y"), 3: item("z"), 4: item("w")}
    contents.update({int(k[1:]): v for k, v in changes.items()})
    return Store.from_mapping(LAYOUT, contents, name)


# ---------------------------------------------------------------------------------------
# Stores and adjacency (Corollary 1's D, the ~_a relation)


def test_store_replace_changes_only_the_given_positions():
    base = store()
    other = base.replace({2: item("q")}, name="M2")
    assert other.name == "M2"
    assert other.items[1] == item("q")
    assert other.items[0] == base.items[0] and other.items[2:] == base.items[2:]
    assert base.items[1] == item("y")  # frozen: the original is untouched
    assert differing_positions(base, other) == frozenset({2})
    assert base.replace({}).items == base.items and base.replace({}).name == ""
    with pytest.raises(InputError) as error:
        base.replace({5: item("q")})
    assert error.value.field == "position"


def test_differing_positions_are_one_based_and_need_one_layout():
    base = store()
    assert differing_positions(base, base) == frozenset()
    assert differing_positions(base, store(p1=item("v"), p4=item("v"))) == frozenset({1, 4})
    with pytest.raises(InputError) as error:
        differing_positions(base, Store.from_mapping(Layout(("g",)), {}, "tiny"))
    assert error.value.field == "stores"
    assert "same layout" in error.value.expected


def test_adjacency_follows_the_groups():
    base = store()
    only_2 = store("M'", p2=item("v"))  # inside I_a and I_b
    only_1 = store("M'", p1=item("v"))  # inside I_a only
    both = store("M'", p1=item("v"), p3=item("v"))  # needs I_a and I_b
    outside = store("M'", p4=item("v"))  # in no group
    assert adjacent_attributes(POLICY, base, only_2) == ("a", "b")
    assert adjacent_attributes(POLICY, base, only_1) == ("a",)
    assert adjacent_attributes(POLICY, base, both) == ()
    assert adjacent_attributes(POLICY, base, base) == ("a", "b")
    assert is_adjacent(POLICY, "a", base, only_1) and not is_adjacent(POLICY, "b", base, only_1)
    assert is_adjacent(POLICY, "b", base, only_2) and not is_adjacent(POLICY, "a", base, outside)
    require_adjacent(POLICY, "a", base, only_1)
    require_adjacent(POLICY, "b", base, base)
    with pytest.raises(InputError) as error:
        require_adjacent(POLICY, "b", base, both)
    assert error.value.field == "stores M/M'"
    assert error.value.expected == "stores equal outside I_b"
    assert error.value.found == "differences at positions [1]"
    unnamed = Store.from_mapping(LAYOUT, {})
    with pytest.raises(InputError) as error:
        require_adjacent(POLICY, "a", unnamed, unnamed.replace({4: item("v")}))
    assert error.value.field == "stores A/B"
    assert error.value.found == "differences at positions [4]"


def test_memory_contents_never_appear_in_reprs():
    secret = item("diabetes-secret")
    assert repr(secret) == "MemoryItem(<private>)"
    text = repr(store(p1=secret))
    assert "secret" not in text and text == "Store(name='M', positions=4, <private contents>)"


# ---------------------------------------------------------------------------------------
# Mechanism, scorer, turn


def test_argmax_breaks_ties_towards_the_first_view():
    views = ("v0", "v1", "v2")
    assert argmax_view(views, (Fraction(1, 2), Fraction(1), Fraction(1))).view == "v1"
    assert argmax_view(views, (Fraction(1), Fraction(1), Fraction(1))).view == "v0"
    assert argmax_view(views, (Fraction(0), Fraction(0), Fraction(1))).view == "v2"
    released = argmax_view(views, (Fraction(0), Fraction(0), Fraction(1)))
    assert released.views == views and released.support() == ("v2",)


def test_function_scorer_passes_relevance_through():
    vocabulary = Vocabulary("g", (View("g.gen"), View("g.v1")), "g.gen")
    scorer = FunctionScorer(lambda relevance, vocab, items: (Fraction(0), relevance["g.v1"]), Fraction(1))
    assert scorer.scores({"g.v1": Fraction(1, 3)}, vocabulary, ()) == (Fraction(0), Fraction(1, 3))
    assert scorer.sensitivity(vocabulary) == Fraction(1)


def _interface(budget=None, under_charged: bool = False) -> Interface:
    vocabularies = (
        Vocabulary("g", (View("g.gen"), View("g.v1")), "g.gen"),
        Vocabulary("h", (View("h.gen"), View("h.v1")), "h.gen"),
    )
    return Interface(
        policy=POLICY,
        vocabularies=vocabularies,
        queries=(Query("q", "q", (SlotRead("g", frozenset({1})),)),)
        + ((Query("under", "under", (SlotRead("g", frozenset({2}), charge=frozenset({"a"})),)),) if under_charged else ()),
        scorer=FunctionScorer(lambda relevance, vocab, items: (Fraction(0), Fraction(1)), Fraction(1)),
        budget=budget or OnlineBudget(K=2),
    )


def test_run_interaction_charges_then_falls_back():
    interface = _interface()
    state = run_interaction(interface, ["q", "q", "q"], store(), SeededRandomSource(0))
    assert state.turn == 3 and len(state.history) == 3
    assert state.ledger_map(interface) == {"a": Fraction(1), "b": Fraction(0)}
    assert [record.admitted for record in state.history] == [(True,), (True,), (False,)]
    assert state.history[2].views == (("g", "g.gen"),)
    assert run_interaction(interface, [], store(), SeededRandomSource(0)) == InterfaceState.initial(interface)


def test_ledger_map_needs_one_ledger_per_attribute():
    interface = _interface()
    with pytest.raises(ValueError):
        InterfaceState(turn=0, ledgers=(Fraction(0),), history=()).ledger_map(interface)


def test_c2_message_names_query_slot_and_attribute():
    interface = _interface(under_charged=True)
    prefix = PublicPrefix(history=(), query=interface.query("under"), released=())
    with pytest.raises(ContractViolation) as error:
        plan_slot(interface, (Fraction(0), Fraction(0)), prefix, "g", store())
    assert error.value.condition == "C2"
    assert error.value.message.startswith("query under, slot g, attribute b: ")


def test_template_channel_restates_its_conditioning():
    channel = TemplateChannel()
    assert channel.respond("dinner?", (("g", "cheap"), ("h", "quick")), ()) == (
        "Answer to 'dinner?' following [g: cheap; h: quick]"
    )
    assert channel.respond("dinner?", (), ()) == "Answer to 'dinner?' following [no memory conditioning]"


def test_budget_rules_name_bad_input():
    caps = {"a": Fraction(1), "b": Fraction(2)}
    assert OnlineBudget(K=4).epsilon(frozenset({"a", "b"}), caps) == Fraction(1, 4)
    assert PreallocatedBudget.from_mapping({"a": 2, "b": 8}).epsilon(frozenset({"a", "b"}), caps) == Fraction(1, 4)
    for bad in (0, True, 1.5):
        with pytest.raises(InputError) as error:
            OnlineBudget(K=bad)
        assert error.value.field == "budget.K"
    with pytest.raises(InputError) as error:
        PreallocatedBudget.from_mapping({"a": 0})
    assert error.value.field == "budget.plan.a"
    with pytest.raises(InputError) as error:
        OnlineBudget(K=1).epsilon(frozenset(), caps)
    assert error.value.field == "charge set"
    with pytest.raises(InputError) as error:
        OnlineBudget(K=1).epsilon(frozenset({"zz"}), caps)
    assert error.value.field == "charge set" and error.value.found == ["zz"]
    with pytest.raises(InputError) as error:
        PreallocatedBudget.from_mapping({"a": 1}).epsilon(frozenset({"a", "b"}), caps)
    assert error.value.field == "budget.plan" and error.value.found == "none for ['b']"


class _ScriptedSource:
    """A RandomSource whose randbelow returns scripted integers and records the bounds."""

    def __init__(self, *values: int) -> None:
        self.values = list(values)
        self.bounds: list[int] = []

    def randbelow(self, n: int) -> int:
        self.bounds.append(n)
        return self.values.pop(0)


def test_bernoulli_rational_draws_below_the_denominator():
    from dpmem_ref.mechanism.bernoulli import bernoulli_rational

    source = _ScriptedSource(1, 2)
    assert bernoulli_rational(Fraction(2, 3), source) is True  # 1 < 2
    assert bernoulli_rational(Fraction(2, 3), source) is False  # 2 < 2 fails
    assert source.bounds == [3, 3]


def test_adjacency_includes_a_difference_filling_the_whole_group():
    base = store()
    whole_a = store("M'", p1=item("v"), p2=item("v"))  # D = I_a exactly
    assert adjacent_attributes(POLICY, base, whole_a) == ("a",)
    assert is_adjacent(POLICY, "a", base, whole_a)
    require_adjacent(POLICY, "a", base, whole_a)


def test_differing_positions_error_is_complete():
    with pytest.raises(InputError) as error:
        differing_positions(store(), Store.from_mapping(Layout(("g",)), {}, "tiny"))
    assert str(error.value) == "stores: expected two stores with the same layout (same scaffold), found 'different layouts'"


def test_run_turn_refuses_a_store_over_another_layout():
    from dpmem_ref import run_turn

    interface = _interface()
    other = Store.from_mapping(Layout(("g",)), {}, "tiny")
    with pytest.raises(InputError) as error:
        run_turn(interface, InterfaceState.initial(interface), "q", other, SeededRandomSource(0))
    assert str(error.value) == "store: expected a store over the interface's layout, found 'tiny'"
    with pytest.raises(InputError) as error:
        run_turn(interface, InterfaceState.initial(interface), "q", Store.from_mapping(Layout(("g",)), {}),
                 SeededRandomSource(0))
    assert error.value.found == "another layout"


def test_run_interaction_is_strict_by_default_and_calls_the_channel():
    broken = _interface(under_charged=True)
    with pytest.raises(ContractViolation) as error:
        run_interaction(broken, ["q"], store(), SeededRandomSource(0))
    assert error.value.condition == "C2"
    relaxed = run_interaction(broken, ["q"], store(), SeededRandomSource(0), strict=False)
    assert relaxed.turn == 1
    interface = _interface()
    state = run_interaction(interface, ["q"], store(), SeededRandomSource(0), channel=TemplateChannel())
    assert state.history[0].response.startswith("Answer to 'q' following [g: ")
    assert run_interaction(interface, ["q"], store(), SeededRandomSource(0)).history[0].response == ""


class _EveryOtherTurnRouter:
    """A public router (C4): slots are active on even turns only, and the read narrows
    to the slot's first position once there is history. Reads the history only."""

    name = "every-other-turn"
    violates = None
    reads_history = True  # declared capabilities (dpmem_ref.parts.protocols.Router)
    reads_released_views = False

    def active_slots(self, query, history):
        return tuple(read.slot for read in query.reads) if len(history) % 2 == 0 else ()

    def read(self, prefix, slot):
        read = prefix.query.read_for(slot)
        if prefix.history:
            import attrs

            return attrs.evolve(read, positions=frozenset({min(read.positions)}))
        return read

    def state_key(self, history):
        return len(history)


def test_run_turn_routes_and_reads_from_the_history():
    import attrs

    interface = attrs.evolve(_interface(), router=_EveryOtherTurnRouter(),
                             queries=(Query("q", "q", (SlotRead("g", frozenset({1, 3})),)),))
    state = run_interaction(interface, ["q", "q", "q"], store(), SeededRandomSource(0))
    assert [record.views != () for record in state.history] == [True, False, True]
    # Turn 1 reads {1, 3} (charged to a and b); turn 3 reads {1} (charged to a only).
    assert [charges for record in state.history for charges in record.charges] == [
        ("g", frozenset({"a", "b"}), Fraction(1, 2)),
        ("g", frozenset({"a"}), Fraction(1, 2)),
    ]
    assert state.ledger_map(interface) == {"a": Fraction(1), "b": Fraction(1, 2)}


def test_run_turn_hands_the_store_to_a_routing_hook():
    """A memory-dependent routing hook (a C4 breach, run with strict=False) sees the store."""
    import attrs

    from dpmem_ref import PrivateHooks, run_turn

    def routing(query, history, memory):
        return ("g",) if "x" in memory.items[0].tags else ()

    interface = attrs.evolve(_interface(), hooks=PrivateHooks(routing=routing))
    state = InterfaceState.initial(interface)
    with_x = run_turn(interface, state, "q", store(), SeededRandomSource(0), strict=False)
    without = run_turn(interface, state, "q", store(p1=item("v")), SeededRandomSource(0), strict=False)
    assert len(with_x.record.views) == 1 and without.record.views == ()


class _QueryAndTurnControl:
    """c_t = (query name, turns so far, ledgers): public inputs and ledger state only (C6)."""

    name = "query-and-turn"
    violates = None
    reads_private = False
    reads_views = False

    def observe(self, context, private):
        return (context.query.name, len(context.history), context.ledgers)


def test_run_turn_gives_the_control_the_query_history_and_ledgers():
    import attrs

    interface = attrs.evolve(_interface(), control=_QueryAndTurnControl())
    state = run_interaction(interface, ["q", "q"], store(), SeededRandomSource(0))
    assert [record.control for record in state.history] == [
        ("q", 0, (("a", Fraction(1, 2)), ("b", Fraction(0)))),
        ("q", 1, (("a", Fraction(1)), ("b", Fraction(0)))),
    ]


def test_relaxed_run_plans_without_the_contract_checks():
    broken = _interface(under_charged=True)
    state = run_interaction(broken, ["under"], store(), SeededRandomSource(0), strict=False)
    assert state.history[0].charges == (("g", frozenset({"a"}), Fraction(1, 2)),)  # b omitted: the C2 breach


def test_the_channel_sees_view_texts_not_names():
    import attrs

    vocabularies = (
        Vocabulary("g", (View("g.gen", "generic advice"), View("g.v1", "cheap dinners")), "g.gen"),
        Vocabulary("h", (View("h.gen"), View("h.v1")), "h.gen"),
    )
    interface = attrs.evolve(_interface(), vocabularies=vocabularies)
    state = run_interaction(interface, ["q"], store(), SeededRandomSource(0), channel=TemplateChannel())
    view = state.history[0].views[0][1]
    expected = {"g.gen": "generic advice", "g.v1": "cheap dinners"}[view]
    assert state.history[0].response == f"Answer to 'q' following [g: {expected}]"


@pytest.mark.parametrize(
    ("gamma", "tape", "bounds", "result"),
    [
        # gamma = 1/2: A_k ~ Bernoulli(gamma / k) = [randbelow(2k) < 1] until the first failure at K;
        # the result is [K odd] (Canonne, Kamath, Steinke 2020, Algorithm 1).
        (Fraction(1, 2), [1], [2], True),
        (Fraction(1, 2), [0, 1], [2, 4], False),
        (Fraction(1, 2), [0, 0, 3], [2, 4, 6], True),
        (Fraction(1, 2), [0, 0, 0, 7], [2, 4, 6, 8], False),
        (Fraction(2, 3), [2], [3], True),  # 2 < 2 fails: the comparison is strict
        (Fraction(2, 3), [1, 2], [3, 6], False),
        # gamma = 3/2 = 1 + 1/2: one exp(-1) factor (randbelow(k) < 1), then exp(-1/2).
        (Fraction(3, 2), [0, 1], [1, 2], False),
        (Fraction(3, 2), [0, 0, 2, 1], [1, 2, 3, 2], True),
        (Fraction(0), [], [], True),
    ],
)
def test_bernoulli_exp_minus_follows_the_algorithm_on_scripted_draws(gamma, tape, bounds, result):
    from dpmem_ref import bernoulli_exp_minus

    source = _ScriptedSource(*tape)
    assert bernoulli_exp_minus(gamma, source) is result
    assert source.bounds == bounds and source.values == []


def test_bernoulli_exp_minus_names_a_negative_gamma():
    from dpmem_ref import bernoulli_exp_minus

    with pytest.raises(InputError) as error:
        bernoulli_exp_minus(Fraction(-1, 2), _ScriptedSource())
    assert str(error.value) == "gamma: expected a non-negative rational, found Fraction(-1, 2)"


def test_point_mass_likelihoods():
    import mpmath

    from dpmem_ref import PointMass

    fallback = PointMass(views=("g.gen", "g.v1"), view="g.gen")
    assert fallback.support() == ("g.gen",)
    assert fallback.sample(_ScriptedSource()) == "g.gen"  # draws nothing
    assert fallback.log_probability("g.gen") == 0
    assert fallback.log_probability("g.v1") == mpmath.mpf("-inf")
    certain = fallback.log_probability_interval("g.gen")
    assert certain is not None and certain.a == 0 and certain.b == 0
    assert fallback.log_probability_interval("g.v1") is None


def test_em_likelihoods_follow_the_working_precision():
    """The normaliser is cached per precision: a value computed at 15 digits must not be
    served at 80 (mp) or 150 (interval) digits."""
    import mpmath

    from dpmem_ref import exponential_mechanism
    from dpmem_ref.mechanism.em import iv_precision

    em = exponential_mechanism(("a", "b", "c"), (Fraction(0), Fraction(1, 2), Fraction(1)), Fraction(1), Fraction(1))
    with mpmath.workdps(15):
        em.log_probability("b")
    em.log_probability_interval("b")
    with mpmath.workdps(160):
        exact = mpmath.mpf(1) / 4 - mpmath.log(1 + mpmath.exp(mpmath.mpf(1) / 4) + mpmath.exp(mpmath.mpf(1) / 2))
        with mpmath.workdps(80):
            assert abs(em.log_probability("b") - exact) < mpmath.mpf(10) ** -75
        with iv_precision(150):
            enclosure = em.log_probability_interval("b")
            assert enclosure.a <= exact <= enclosure.b
            assert enclosure.delta < mpmath.mpf(10) ** -140
    assert em.log_probability("zzz") == mpmath.mpf("-inf")
    assert em.log_probability_interval("zzz") is None


def test_linear_scorer_bounds_and_fields():
    from dpmem_ref import LinearTagScorer, LinearWeights

    compatible_only = Vocabulary("g", (View("g.gen"), View("g.v1", compatible=frozenset({"t"}))), "g.gen")
    specific_only = Vocabulary("g", (View("g.gen"), View("g.v1", specific=frozenset({"t"}))), "g.gen")
    scorer = LinearTagScorer()  # 0.4 r + 0.4 c + 0.2 s
    assert scorer.exact_sensitivity(compatible_only) == Fraction(2, 5)
    assert scorer.exact_sensitivity(specific_only) == Fraction(1, 5)
    with pytest.raises(InputError) as error:
        LinearTagScorer(declared_sensitivity=Fraction(0))
    assert error.value.field == "scorer.sensitivity"
    for name, weights in (("r", (-1, 0, 0)), ("c", (0, -1, 0)), ("s", (0, 0, -1))):
        with pytest.raises(InputError) as error:
            LinearWeights(*(Fraction(w) for w in weights))
        assert error.value.field == f"scorer.weights.{name}"
    for weights in ((1, 1, 1), (0, 2, 2), (2, 0, 2), (2, 2, 0)):  # sums 3/2 and 4/3: above 1
        with pytest.raises(InputError) as error:
            LinearWeights(*(Fraction(w, 3 if sum(weights) == 4 else 2) for w in weights))
        assert error.value.field == "scorer.weights"
    assert LinearWeights(Fraction(1, 2), Fraction(1, 4), Fraction(1, 4)).specificity == Fraction(1, 4)


def test_preallocated_plan_counts_are_positive_integers():
    for bad in (0, -1, True, 1.5):
        with pytest.raises(InputError) as error:
            PreallocatedBudget.from_mapping({"a": bad})
        assert str(error.value) == f"budget.plan.a: expected a positive integer count, found {bad!r}"


def test_policy_and_layout_name_bad_lookups():
    with pytest.raises(InputError) as error:
        POLICY.attribute("zz")
    assert str(error.value) == "attribute: expected one of ['a', 'b'], found 'zz'"
    with pytest.raises(InputError) as error:
        LAYOUT.slot_of(9)
    assert error.value.field == "position"


def test_weights_above_one_are_named_with_their_sum():
    from dpmem_ref import LinearWeights

    with pytest.raises(InputError) as error:
        LinearWeights(Fraction(1, 2), Fraction(1, 2), Fraction(1, 2))
    assert str(error.value) == "scorer.weights: expected non-negative weights summing to at most 1, found '3/2'"


def test_a_fallback_records_no_charge():
    interface = _interface()
    state = run_interaction(interface, ["q", "q", "q"], store(), SeededRandomSource(0))
    assert [record.charges for record in state.history] == [
        (("g", frozenset({"a"}), Fraction(1, 2)),),
        (("g", frozenset({"a"}), Fraction(1, 2)),),
        (("g", frozenset(), Fraction(0)),),
    ]


def test_budget_and_mechanism_inputs_are_named_whole():
    from dpmem_ref import ExponentialWeights

    with pytest.raises(InputError) as error:
        OnlineBudget(K=0)
    assert str(error.value) == "budget.K: expected a positive integer, found 0"
    with pytest.raises(InputError) as error:
        ExponentialWeights(views=("a", "b"), exponents=(Fraction(0),))
    assert str(error.value) == "exponential mechanism: expected one exponent per view, found 1"
    with pytest.raises(InputError):
        ExponentialWeights(views=(), exponents=())


def test_routing_hook_sees_query_and_history():
    import attrs

    from dpmem_ref import PrivateHooks

    def routing(query, history, memory):
        return ("g",) if query.name == "q" and len(history) == 0 else ()

    interface = attrs.evolve(_interface(), hooks=PrivateHooks(routing=routing))
    state = run_interaction(interface, ["q", "q"], store(), SeededRandomSource(0), strict=False)
    assert [len(record.views) for record in state.history] == [1, 0]


def test_the_c5_assertion_checks_the_ledgers_it_moved():
    """A ledger the selection does not charge is not re-checked (it did not move): an
    over-cap uncharged ledger does not turn into a C5 at this read. The public entry points
    refuse such a ledger at the boundary (InputError, issue 21), so the planner's inner
    function is driven directly, on integer counts over scale 2."""
    from dpmem_ref.core.ledgers import LedgerVector
    from dpmem_ref.turn import TurnFrame, plan_units

    interface = _interface()
    query = interface.query("q")
    plan = plan_units(TurnFrame(interface, store(), query, (), 0, ("g",)), LedgerVector((0, 6), 2), (), "g")  # b = 3 > B_b = 2, uncharged
    assert plan.admitted and plan.ledgers_after == (Fraction(1, 2), Fraction(3))
    with pytest.raises(InputError, match=r"ledgers\[1\]: expected a ledger in \[0, B_b\] = \[0, 2\], found '3'"):
        plan_slot(interface, (Fraction(0), Fraction(3)), PublicPrefix(history=(), query=query, released=()), "g", store())


def test_controls_get_private_data_only_when_they_declare_it():
    import attrs

    from dpmem_ref import PrivateHooks, TopScoreControl, run_turn

    class _SeesPrivate:
        name = "sees-private"
        violates = None
        reads_private = False
        reads_views = False

        def observe(self, context, private):
            return private is None

    public = attrs.evolve(_interface(), control=_SeesPrivate())
    assert run_interaction(public, ["q"], store(), SeededRandomSource(0)).history[0].control is True
    leaky = attrs.evolve(_interface(), control=TopScoreControl())
    assert run_interaction(leaky, ["q"], store(), SeededRandomSource(0), strict=False).history[0].control == (
        Fraction(1),
    )
    # A state whose ledger vector does not match the attributes is refused even when no slot runs.
    idle = attrs.evolve(_interface(), hooks=PrivateHooks(routing=lambda query, history, memory: ()))
    with pytest.raises(ValueError):
        run_turn(idle, InterfaceState(turn=0, ledgers=(Fraction(0),), history=()), "q", store(),
                 SeededRandomSource(0), strict=False)


class _FixedEpsilon:
    """A budget rule returning a fixed (possibly invalid) eps: C3 must catch it."""

    name = "fixed"

    def __init__(self, value) -> None:
        self.value = value

    def epsilon(self, charge_set, caps):
        return self.value


def _plan_with(scorer=None, budget=None):
    import attrs

    interface = _interface()
    if scorer is not None:
        interface = attrs.evolve(interface, scorer=scorer)
    if budget is not None:
        interface = attrs.evolve(interface, budget=budget)
    prefix = PublicPrefix(history=(), query=interface.query("q"), released=())
    return plan_slot(interface, (Fraction(0), Fraction(0)), prefix, "g", store())


@pytest.mark.parametrize(
    ("scorer", "budget", "message"),
    [
        (None, _FixedEpsilon(Fraction(0)), "slot g: epsilon must be a positive exact rational, found 0"),
        (None, _FixedEpsilon(0.25), "slot g: epsilon must be a positive exact rational, found 0.25"),
        (FunctionScorer(lambda r, v, i: (Fraction(0), Fraction(1)), Fraction(0)), None,
         "slot g: sensitivity bound must be positive, found 0"),
        (FunctionScorer(lambda r, v, i: (Fraction(0), Fraction(1)), 0.5), None,
         "slot g: sensitivity bound must be positive, found 0.5"),
        (FunctionScorer(lambda r, v, i: (Fraction(0), 1.0), Fraction(1)), None, "slot g: score #1 is not an exact rational"),
        (FunctionScorer(lambda r, v, i: (Fraction(0), Fraction(3, 2)), Fraction(1)), None,
         "slot g: score #1 lies outside [0, 1]"),
        (FunctionScorer(lambda r, v, i: (Fraction(0),), Fraction(1)), None,
         "query q, slot g: scorer returned 1 scores for 2 views"),
    ],
)
def test_c3_refuses_invalid_em_inputs_by_name(scorer, budget, message):
    with pytest.raises(ContractViolation) as error:
        _plan_with(scorer, budget)
    assert error.value.condition == "C3"
    assert error.value.message == message


def test_em_exponents_must_be_exact():
    from dpmem_ref import ExponentialWeights

    with pytest.raises(InputError) as error:
        ExponentialWeights(views=("a", "b"), exponents=(Fraction(0), 0.5))
    assert str(error.value) == "exponential mechanism exponent #1: expected an exact rational (Fraction), found 'float'"


def test_plan_slot_edges():
    import attrs

    from dpmem_ref import PrivateHooks

    interface = _interface()
    prefix = PublicPrefix(history=(), query=interface.query("q"), released=())
    # A fallback plan carries no scores (nothing was scored).
    refused = plan_slot(interface, (Fraction(1), Fraction(0)), prefix, "g", store())
    assert not refused.admitted and refused.scores is None
    assert refused.distribution.support() == ("g.gen",)
    # A ledger vector of the wrong length is refused even when the read falls back.
    with pytest.raises(ValueError):
        plan_slot(interface, (Fraction(1),), prefix, "g", store())
    # A store-dependent vocabulary hook (a C1 breach, strict=False) is asked with the slot and store.
    small = Vocabulary("g", (View("g.gen"), View("g.v1")), "g.gen")
    large = Vocabulary("g", (View("g.gen"), View("g.v1"), View("g.v2")), "g.gen")
    hooked = attrs.evolve(
        interface,
        scorer=FunctionScorer(lambda r, v, i: tuple(Fraction(0) for _ in v.views), Fraction(1)),
        hooks=PrivateHooks(vocabulary=lambda slot, memory: large if slot == "g" and "x" in memory.items[0].tags else small),
    )
    assert plan_slot(hooked, (Fraction(0), Fraction(0)), prefix, "g", store(), strict=False).vocabulary == large
    assert plan_slot(hooked, (Fraction(0), Fraction(0)), prefix, "g", store(p1=item("v")), strict=False).vocabulary == small


def test_an_empty_charge_set_is_named():
    with pytest.raises(InputError) as error:
        OnlineBudget(K=1).epsilon(frozenset(), {"a": Fraction(1)})
    assert str(error.value) == "charge set: expected a non-empty set of attributes, found '{}'"


def test_plan_fields_on_every_branch():
    import attrs

    from dpmem_ref import NoCap, PrivateHooks

    interface = _interface()
    query = interface.query("q")
    prefix = PublicPrefix(history=(), query=query, released=())
    admitted = plan_slot(interface, (Fraction(0), Fraction(0)), prefix, "g", store())
    refused = plan_slot(interface, (Fraction(1), Fraction(0)), prefix, "g", store())
    for plan in (admitted, refused):
        assert plan.read == query.reads[0] and plan.charge_set == frozenset({"a"})
        assert plan.items == (item("x"),) and plan.epsilon == Fraction(1, 2)
    assert admitted.scores == (Fraction(0), Fraction(1))
    # A fallback decided from the scores (a C4 breach, strict=False) keeps the scores it read.
    seen = []

    def fallback(scores):
        seen.append(tuple(scores))
        return scores[1] == 1

    hooked = attrs.evolve(interface, hooks=PrivateHooks(fallback=fallback))
    plan = plan_slot(hooked, (Fraction(0), Fraction(0)), prefix, "g", store(), strict=False)
    assert not plan.admitted and plan.scores == (Fraction(0), Fraction(1)) and seen == [(Fraction(0), Fraction(1))]
    assert plan.ledgers_after == (Fraction(0), Fraction(0)) and plan.distribution.support() == ("g.gen",)
    # Without the prospective check, the C5 assertion names where the cap was crossed.
    uncapped = attrs.evolve(interface, cap_rule=NoCap())
    with pytest.raises(ContractViolation) as error:
        plan_slot(uncapped, (Fraction(1), Fraction(0)), prefix, "g", store())
    assert error.value.condition == "C5"
    assert error.value.message == "query q, slot g, attribute a: ledger 3/2 exceeds cap 1"


def test_store_size_is_named():
    with pytest.raises(InputError) as error:
        Store(layout=LAYOUT, items=(item("x"),), name="M")
    assert str(error.value) == "stores.M: expected 4 items, found 1"
    with pytest.raises(InputError) as error:
        Store(layout=LAYOUT, items=())
    assert error.value.field == "stores.?"


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Attribute("debt", frozenset({1}), Fraction(0)), "attributes.debt.cap: expected a positive exact rational, found Fraction(0, 1)"),
        (lambda: Attribute("debt", frozenset({1}), 0.5), "attributes.debt.cap: expected a positive exact rational, found 0.5"),
        (lambda: Attribute("debt", frozenset(), Fraction(1)), "attributes.debt.group: expected a non-empty list of positions, found '[]'"),
        (lambda: Policy(LAYOUT, (Attribute("a", frozenset({1}), Fraction(1)),) * 2),
         "attributes: expected unique attribute names, found ['a', 'a']"),
        (lambda: Store.from_mapping(LAYOUT, {7: item("x")}, "M"), "stores.M: expected a position in 1..4, found 7"),
        (lambda: Store.from_mapping(LAYOUT, {0: item("x")}), "stores.?: expected a position in 1..4, found 0"),
        (lambda: Store.from_mapping(LAYOUT, {True: item("x")}), "stores.?: expected a position in 1..4, found True"),
        (lambda: LAYOUT.slot_of("1"), "position: expected a position in 1..4, found '1'"),
        (lambda: Layout(()), "positions: expected at least one position, found 'an empty list'"),
        (lambda: Layout(("g", "")), "positions[2]: expected a slot name, found ''"),
        (lambda: Layout(("g", 5)), "positions[2]: expected a slot name, found 5"),
        (lambda: Layout(("g",) * (MAX_POSITIONS + 1)),
         f"positions: expected at most {MAX_POSITIONS} positions, found {MAX_POSITIONS + 1}"),
        (lambda: Policy(LAYOUT, tuple(Attribute(f"a{k}", frozenset({1}), Fraction(1)) for k in range(MAX_ATTRIBUTES + 1))),
         f"attributes: expected at most {MAX_ATTRIBUTES} attributes, found {MAX_ATTRIBUTES + 1}"),
        (lambda: Policy(LAYOUT, (Attribute("a", frozenset({5}), Fraction(1)),)),
         "attributes.a.group: expected a position in 1..4, found 5"),
    ],
)
def test_policy_inputs_are_named_whole(build, message):
    with pytest.raises(InputError) as error:
        build()
    assert str(error.value) == message


def test_the_largest_policy_is_accepted():
    names = Policy(LAYOUT, tuple(Attribute(f"a{k}", frozenset({1}), Fraction(1)) for k in range(MAX_ATTRIBUTES)))
    assert len(names.attribute_names) == MAX_ATTRIBUTES
    assert Layout(("g",) * MAX_POSITIONS).size == MAX_POSITIONS
