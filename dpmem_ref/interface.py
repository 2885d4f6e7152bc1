"""The interface record: policy, vocabularies, query catalogue and the parts of Algorithm 1.

With the default parts it satisfies Definition 1 (C1-C6). Deliberately broken parts
(`dpmem_ref.parts.broken`) declare the condition they break; the static check
(`dpmem_ref.contract`, one floor up: this module never imports it) reports them and the
strict kernel refuses them (`contract.require_contract`).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from fractions import Fraction
from functools import lru_cache

import attrs

from dpmem_ref.core.errors import ContractViolation, InputError
from dpmem_ref.core.ledgers import Units, common_scale, to_units
from dpmem_ref.core.limits import MAX_QUERY_LINES, check_ledger_digits
from dpmem_ref.core.memo import KernelMemo
from dpmem_ref.core.policy import MemoryItem, Policy, Store
from dpmem_ref.core.rational import require_positive_rational
from dpmem_ref.core.transcript import Query, SlotRead, TurnRecord
from dpmem_ref.core.views import Vocabulary
from dpmem_ref.mechanism.em import PointMass
from dpmem_ref.parts.broken import PrivateHooks
from dpmem_ref.parts.budget import BudgetRule
from dpmem_ref.parts.caps import ProspectiveCap
from dpmem_ref.parts.controls import FallbackControl
from dpmem_ref.parts.period import BudgetPeriod
from dpmem_ref.parts.protocols import CapRule, ControlRule, Router, Selector
from dpmem_ref.parts.reuse import ReusePolicy
from dpmem_ref.parts.routers import FixedRouter
from dpmem_ref.parts.scoring import Scorer
from dpmem_ref.parts.selectors import ExponentialMechanismSelector


@attrs.frozen
class ChargePlan:
    """What a read fixes before memory is touched: Gamma*(R) (Eq. 4), the charge set
    (declared or minimal, line 7), eps (line 8), the charged attributes' indices in policy
    order, and the 0-based item indices of the read set in position order."""

    required: frozenset[str]
    charge_set: frozenset[str]
    epsilon: Fraction
    indices: tuple[int, ...]
    item_indices: tuple[int, ...]
    complete: bool = attrs.field(init=False)  # required <= charge_set (C2)
    _steps: dict[int, int] = attrs.field(init=False, factory=dict, eq=False, repr=False)
    # eps is a positive plain Fraction (C3), decided once; False: the planner runs the full test
    _epsilon_positive: bool = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "complete", self.required <= self.charge_set)
        epsilon = self.epsilon
        object.__setattr__(self, "_epsilon_positive", type(epsilon) is Fraction and epsilon.numerator > 0)

    def step(self, scale: int) -> int | None:
        """eps * scale, the charge as an integer count (None if eps * scale is not whole)."""
        found = self._steps.get(scale)
        if found is None:
            epsilon = self.epsilon
            if scale % epsilon.denominator:
                return None
            found = self._steps[scale] = epsilon.numerator * (scale // epsilon.denominator)
        return found

    @classmethod
    def of(cls, interface: Interface, read: SlotRead) -> ChargePlan:
        policy = interface.policy
        required = policy.gamma_star(read.positions)
        charge_set = required if read.charge is None else read.charge
        return cls(
            required=required,
            charge_set=charge_set,
            epsilon=interface.epsilon_for(charge_set),
            indices=tuple(i for i, name in enumerate(policy.attribute_names) if name in charge_set),
            item_indices=tuple(p - 1 for p in sorted(read.positions)),
        )

    def items(self, store: Store) -> tuple[MemoryItem, ...]:
        """M_R: the read-set items in position order (Store.read without re-sorting)."""
        items = store.items
        return tuple([items[i] for i in self.item_indices])


@attrs.frozen
class Interface:
    """A DP-MemView interface: policy, vocabularies, query catalogue and the parts of
    Algorithm 1. With the default parts it satisfies Definition 1 (C1-C6)."""

    policy: Policy
    vocabularies: tuple[Vocabulary, ...]
    queries: tuple[Query, ...]
    scorer: Scorer
    budget: BudgetRule
    router: Router = FixedRouter()
    selector: Selector = ExponentialMechanismSelector()
    cap_rule: CapRule = ProspectiveCap()
    control: ControlRule = FallbackControl()
    hooks: PrivateHooks = PrivateHooks()
    uncharged_epsilon: Fraction = Fraction(1)
    name: str = "interface"
    # Reuse of released views at no charge (dpmem_ref.parts.reuse): post-processing of the
    # released history when the rule reads only public inputs (C4).
    reuse: ReusePolicy = ReusePolicy()
    # The public period the caps are renewed over (dpmem_ref.parts.period), or None: the
    # caps bound one interaction. k periods compose to k x B_a (basic composition).
    period: BudgetPeriod | None = None
    _vocabulary_by_slot: dict[str, Vocabulary] = attrs.field(init=False, repr=False, eq=False, hash=False)
    _query_by_name: dict[str, Query] = attrs.field(init=False, repr=False, eq=False, hash=False)
    # Private memos of pure functions of the frozen parts (dpmem_ref.core.memo).
    _memo: KernelMemo = attrs.field(init=False, repr=False, eq=False, hash=False, factory=KernelMemo)

    def __attrs_post_init__(self) -> None:
        _require_parts(self)
        slots = [v.slot for v in self.vocabularies]
        if len(set(slots)) != len(slots):
            raise InputError("slots", "one vocabulary per slot", slots)
        names = [q.name for q in self.queries]
        if len(set(names)) != len(names):
            raise InputError("queries", "unique query names", names)
        # eps of every uncharged selection (Lemma 1): exact and positive, like every eps (C3).
        object.__setattr__(
            self, "uncharged_epsilon", require_positive_rational(self.uncharged_epsilon, "uncharged_epsilon")
        )
        object.__setattr__(self, "_vocabulary_by_slot", {v.slot: v for v in self.vocabularies})
        object.__setattr__(self, "_query_by_name", {q.name: q for q in self.queries})
        _require_reuse(self)

    def vocabulary(self, slot: str) -> Vocabulary:
        found = self._vocabulary_by_slot.get(slot)
        if found is None:
            raise ContractViolation("C1.no_vocabulary", f"slot {slot}: no fixed public vocabulary")
        return found

    def vocabulary_or_none(self, slot: str) -> Vocabulary | None:
        return self._vocabulary_by_slot.get(slot)

    def epsilon_for(self, charge_set: frozenset[str]) -> Fraction:
        """BudgetRule(q, g, h, Gamma, {(L_a, B_a)}) for the rules here, which read only the
        charge set and the caps (both public and fixed): memoized per charge set. An
        uncharged read (Gamma empty) is adjacency-invariant for every attribute (Lemma 1)
        and runs at the policy-fixed `uncharged_epsilon`."""
        table = self._memo.epsilon
        found: Fraction | None = table.get(charge_set)
        if found is None:
            found = self.budget.epsilon(charge_set, self.caps) if charge_set else self.uncharged_epsilon
            KernelMemo.put(table, charge_set, found)
        return found

    def query(self, name: str) -> Query:
        table = self._query_by_name
        if name not in table:
            raise InputError("query", f"one of {sorted(table)}", name)
        return table[name]

    def state_key(self, history: tuple[TurnRecord, ...]) -> Hashable:
        """The part of the released history the future turns depend on (exact audits):
        the router's key, and the reuse rules' valid fresh views when there are rules."""
        key = self.router.state_key(history)
        return (key, self.reuse.state_key(history)) if self.reuse.rules else key

    @property
    def caps(self) -> Mapping[str, Fraction]:
        return self.policy.caps

    def charge_plan(self, read: SlotRead) -> ChargePlan:
        """Algorithm 1, lines 6-8 for a read: Gamma*(R) (Eq. 4), the charge set and eps.
        Public facts of the read alone (C4), memoized on it."""
        table = self._memo.reads
        found: ChargePlan | None = table.get(read)
        if found is None:
            found = ChargePlan.of(self, read)
            KernelMemo.put(table, read, found)
        return found

    # ------------------------------------------------------------ exact integer ledgers

    @property
    def ledger_scale(self) -> int:
        """The common denominator of the caps, `uncharged_epsilon` and the eps of every
        charge set the query catalogue declares (dpmem_ref.core.ledgers)."""
        memo = self._memo
        if memo.scale is None:
            values = list(self.caps.values()) + [self.uncharged_epsilon]
            for query in self.queries:
                for read in query.reads:
                    charge = self.policy.gamma_star(read.positions) if read.charge is None else read.charge
                    try:
                        epsilon = self.epsilon_for(charge)
                    except InputError:
                        continue  # a charge set the budget refuses: reported where it is planned
                    if isinstance(epsilon, Fraction) and epsilon > 0:  # else refused where planned (C3)
                        values.append(epsilon)
            memo.scale = common_scale(1, values)
        return memo.scale

    def cap_units(self, scale: int) -> Units:
        """The caps as integer counts over the ledger scale `scale`, B_a * scale in policy
        order (every cap denominator divides a ledger scale), memoized per scale."""
        tables = self._memo.cap_units
        found = tables.get(scale)
        if found is None:
            found = tables[scale] = to_units(tuple(a.cap for a in self.policy.attributes), scale)
        return found


# What each part must provide (dpmem_ref.parts.protocols): the methods, and the declared
# capabilities the planner reads on every turn. Checked once, at construction, so a wrong
# object is refused here by name and never fails deep inside a turn.
_PART_MEMBERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("scorer", ("scores", "sensitivity", "exact_sensitivity")),
    ("budget", ("epsilon",)),
    ("router", ("reads_history", "reads_released_views", "active_slots", "read")),
    ("selector", ("distribution",)),
    ("cap_rule", ("prospective", "admits")),
    ("control", ("reads_private", "observe")),
)


def _require_reuse(interface: Interface) -> None:
    """Reuse rules name declared slots and catalogue queries (public names only)."""
    reuse = interface.reuse
    if not isinstance(reuse, ReusePolicy):
        raise InputError("reuse", "a dpmem_ref.ReusePolicy", type(reuse).__name__)
    slots, queries = interface._vocabulary_by_slot, interface._query_by_name
    for rule in reuse.rules:
        where = f"reuse.{rule.slot}"
        if rule.slot not in slots:
            raise InputError(f"{where}.slot", f"a slot with a vocabulary {sorted(slots)}", rule.slot)
        for field, names in (("queries", rule.queries), ("refresh_on", rule.refresh_on)):
            unknown = sorted(names - set(queries))
            if unknown:
                raise InputError(f"{where}.{field}", f"queries of the catalogue {sorted(queries)}", unknown[0])
        idle = sorted(q for q in rule.queries if all(r.slot != rule.slot for r in queries[q].reads))
        if idle:
            raise InputError(f"{where}.queries", f"queries that read slot {rule.slot}", idle[0])


def _require_parts(interface: Interface) -> None:
    """Types of the interface's fields (the public constructor's boundary)."""
    if not isinstance(interface.policy, Policy):
        raise InputError("policy", "a dpmem_ref.Policy", type(interface.policy).__name__)
    for field, kind, members in (("vocabularies", Vocabulary, "Vocabulary"), ("queries", Query, "Query")):
        value = getattr(interface, field)
        if not isinstance(value, tuple):
            raise InputError(field, f"a tuple of {members} objects", type(value).__name__)
        for index, item in enumerate(value):
            if not isinstance(item, kind):
                raise InputError(f"{field}[{index}]", f"a {members}", type(item).__name__)
    for field, names in _PART_MEMBERS:
        part = getattr(interface, field)
        missing = [name for name in names if not hasattr(part, name)]
        if missing:
            raise InputError(
                field, f"a {field} part with {', '.join(names)}", f"{type(part).__name__} without {missing[0]}"
            )
    if not isinstance(interface.hooks, PrivateHooks):
        raise InputError("hooks", "a PrivateHooks", type(interface.hooks).__name__)
    if interface.period is not None and not isinstance(interface.period, BudgetPeriod):
        raise InputError("period", "a dpmem_ref.BudgetPeriod or None", type(interface.period).__name__)
    if not isinstance(interface.name, str):
        raise InputError("name", "a string", type(interface.name).__name__)


@lru_cache(maxsize=4096)
def fallback_distribution(vocabulary: Vocabulary) -> PointMass:
    """The fixed generic view at zero cost (Algorithm 1, line 10); one frozen record per
    vocabulary (memoized: a function of the frozen vocabulary alone)."""
    return PointMass(views=vocabulary.names, view=vocabulary.generic)


def check_ledger_size(interface: Interface, turns: int = MAX_QUERY_LINES) -> None:
    """Refuse an interface whose exact ledgers could outgrow MAX_LEDGER_DIGITS (C5 stays
    exact): every epsilon any read can be charged (singleton and declared charge sets;
    both budget rules take a minimum over singletons), the caps, and at most `turns`
    charges per slot."""
    caps = interface.caps
    charge_sets = {frozenset({a}) for a in caps}
    charge_sets |= {read.charge for query in interface.queries for read in query.reads if read.charge}
    epsilons = {interface.budget.epsilon(charge_set, caps) for charge_set in charge_sets}
    charges = turns * max(1, len(interface.vocabularies))
    check_ledger_digits(epsilons, caps.values(), charges, "attributes")
