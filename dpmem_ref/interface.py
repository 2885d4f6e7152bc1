"""The interface: public orchestration parts, the selection rule, the cap rule and controls.

Everything the mechanism decides before touching memory is a function of the *public
prefix* h_{t,j} = (released history, q_t, views already released this turn). The
`PublicPrefix` type has no path to a store: that is the C4 argument in types.

Deliberately broken parts (argmax selection, no cap, a memory-dependent control, ...)
are ordinary parts with a `violates` tag, so a counterexample or an audited deployment
runs through the same engine as the real interface, and the strict kernel refuses them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from fractions import Fraction
from types import MappingProxyType
from typing import Any, Protocol

import attrs

from dpmem_ref.budget import BudgetRule
from dpmem_ref.errors import ContractViolation, InputError
from dpmem_ref.mechanism import PointMass, ReleaseDistribution, argmax_view, exponential_mechanism
from dpmem_ref.policy import MemoryItem, Policy, Store
from dpmem_ref.scoring import Scorer
from dpmem_ref.views import Vocabulary


def _relevance_items(
    value: Mapping[str, Fraction] | tuple[tuple[str, Fraction], ...],
) -> tuple[tuple[str, Fraction], ...]:
    items = value.items() if isinstance(value, Mapping) else value
    return tuple(sorted(items))


@attrs.frozen(cache_hash=True)
class SlotRead:
    """One active slot of a query: its read set R_{t,g}, public relevance r(q, v) and an
    optional declared charge set (None means the minimal sound Gamma*(R), Eq. 4)."""

    slot: str
    positions: frozenset[int]
    relevance: tuple[tuple[str, Fraction], ...] = attrs.field(default=(), converter=_relevance_items)
    charge: frozenset[str] | None = None
    _relevance_map: Mapping[str, Fraction] = attrs.field(init=False, repr=False, eq=False, hash=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_relevance_map", MappingProxyType(dict(self.relevance)))

    @property
    def relevance_map(self) -> Mapping[str, Fraction]:
        return self._relevance_map


@attrs.frozen
class Query:
    """A public query q_t and the ordered slots it activates (the router's table row)."""

    name: str
    text: str
    reads: tuple[SlotRead, ...]

    def read_for(self, slot: str) -> SlotRead:
        for read in self.reads:
            if read.slot == slot:
                return read
        raise InputError(f"queries.{self.name}", f"a read for slot {slot!r}", [r.slot for r in self.reads])


@attrs.frozen
class TurnRecord:
    """One turn of the augmented transcript (q_t, v_t, c_t, y_t) (Eq. 1), plus the public
    accounting facts that follow from the public prefix (charge sets, eps, admission)."""

    query: str
    views: tuple[tuple[str, str], ...]
    control: Hashable
    response: str
    admitted: tuple[bool, ...]
    charges: tuple[tuple[str, frozenset[str], Fraction], ...]

    def ordinary(self) -> tuple[str, Hashable, str]:
        """The application-facing projection (q_t, c_t, y_t)."""
        return (self.query, self.control, self.response)


@attrs.frozen
class PublicPrefix:
    """h_{t,j}: completed history, current query, views released earlier this turn.

    Holds no store and no score: every function of a PublicPrefix is public (C4).
    """

    history: tuple[TurnRecord, ...]
    query: Query
    released: tuple[tuple[str, str], ...] = ()


class Router(Protocol):
    """Slot(q, history) and ReadPolicy(q, g, h): public orchestration (C4)."""

    def active_slots(self, query: Query, history: tuple[TurnRecord, ...]) -> tuple[str, ...]: ...

    def read(self, prefix: PublicPrefix, slot: str) -> SlotRead: ...

    def state_key(self, history: tuple[TurnRecord, ...]) -> Hashable:
        """The part of the history that future routing depends on (for exact audits)."""
        ...


@attrs.frozen
class FixedRouter:
    """Each query activates its declared slots in order, with fixed read sets; the history
    is not consulted, so the future depends on no part of it (state_key is constant)."""

    # Optional router flags read by the exact engine (absent means True, the safe answer):
    # whether routing reads the views released earlier in the turn, or the history.
    reads_released_views: bool = False
    reads_history: bool = False

    def active_slots(self, query: Query, history: tuple[TurnRecord, ...]) -> tuple[str, ...]:
        return tuple(read.slot for read in query.reads)

    def read(self, prefix: PublicPrefix, slot: str) -> SlotRead:
        return prefix.query.read_for(slot)

    def state_key(self, history: tuple[TurnRecord, ...]) -> Hashable:
        return ()


class Selector(Protocol):
    """How an admitted selection picks a view. Only the EM satisfies C3."""

    @property
    def name(self) -> str: ...

    @property
    def violates(self) -> str | None: ...

    def distribution(
        self, views: tuple[str, ...], scores: Sequence[Fraction], epsilon: Fraction, sensitivity: Fraction
    ) -> ReleaseDistribution: ...


@attrs.frozen
class ExponentialMechanismSelector:
    """Eq. (7)."""

    name: str = "em"
    violates: str | None = None

    def distribution(
        self, views: tuple[str, ...], scores: Sequence[Fraction], epsilon: Fraction, sensitivity: Fraction
    ) -> ReleaseDistribution:
        return exponential_mechanism(views, scores, epsilon, sensitivity)


@attrs.frozen
class ArgmaxSelector:
    """Deterministic highest-score selection (the CappedArgmax ablation): breaks C3."""

    name: str = "argmax"
    violates: str | None = "C3"

    def distribution(
        self, views: tuple[str, ...], scores: Sequence[Fraction], epsilon: Fraction, sensitivity: Fraction
    ) -> ReleaseDistribution:
        return argmax_view(views, scores)


class CapRule(Protocol):
    """The admission test before a charged selection (C5)."""

    @property
    def name(self) -> str: ...

    @property
    def violates(self) -> str | None: ...

    def admits(
        self,
        ledgers: Mapping[str, Fraction],
        caps: Mapping[str, Fraction],
        charge_set: frozenset[str],
        epsilon: Fraction,
    ) -> bool: ...


@attrs.frozen
class ProspectiveCap:
    """Admit only if L_a + eps <= B_a for every charged a (Algorithm 1, line 9)."""

    name: str = "prospective"
    violates: str | None = None

    def admits(
        self,
        ledgers: Mapping[str, Fraction],
        caps: Mapping[str, Fraction],
        charge_set: frozenset[str],
        epsilon: Fraction,
    ) -> bool:
        return all(ledgers[a] + epsilon <= caps[a] for a in charge_set)


@attrs.frozen
class NoCap:
    """Always admit (the NoCap ablation): breaks C5."""

    name: str = "none"
    violates: str | None = "C5"

    def admits(
        self,
        ledgers: Mapping[str, Fraction],
        caps: Mapping[str, Fraction],
        charge_set: frozenset[str],
        epsilon: Fraction,
    ) -> bool:
        return True


@attrs.frozen
class ControlContext:
    """Public inputs of the observable control c_t (C6): query, released views, history,
    and the ledger state induced by that history."""

    query: Query
    views: tuple[tuple[str, str], ...]
    admitted: tuple[bool, ...]
    history: tuple[TurnRecord, ...]
    ledgers: tuple[tuple[str, Fraction], ...]
    caps: tuple[tuple[str, Fraction], ...]


@attrs.frozen(repr=False)
class PrivateTurnData:
    """What a *broken* control may peek at: read items and internal scores per slot."""

    items: tuple[tuple[MemoryItem, ...], ...]
    scores: tuple[tuple[Fraction, ...] | None, ...]
    vocabularies: tuple[Vocabulary, ...]

    def __repr__(self) -> str:
        return "PrivateTurnData(<private>)"


class ControlRule(Protocol):
    """c_t. `reads_views`: whether the value depends on which views were released (the
    exact engine may then not share one continuation across release outcomes)."""

    @property
    def name(self) -> str: ...

    @property
    def violates(self) -> str | None: ...

    @property
    def reads_private(self) -> bool: ...

    @property
    def reads_views(self) -> bool: ...

    def observe(self, context: ControlContext, private: PrivateTurnData | None) -> Hashable: ...


@attrs.frozen
class FallbackControl:
    """c_t = which slots fell back: a function of ledgers and eps, hence public (C6)."""

    name: str = "fallback"
    violates: str | None = None
    reads_private: bool = False
    reads_views: bool = False

    def observe(self, context: ControlContext, private: PrivateTurnData | None) -> Hashable:
        return tuple(
            (slot, "released" if ok else "fallback")
            for (slot, _), ok in zip(context.views, context.admitted, strict=True)
        )


@attrs.frozen
class NoControl:
    """No observable control signal."""

    name: str = "none"
    violates: str | None = None
    reads_private: bool = False
    reads_views: bool = False

    def observe(self, context: ControlContext, private: PrivateTurnData | None) -> Hashable:
        return None


@attrs.frozen
class RawEvidenceControl:
    """c_t = 1{some read item carries evidence for a non-generic view}: breaks C6."""

    name: str = "raw-evidence"
    violates: str | None = "C6"
    reads_private: bool = True
    reads_views: bool = False

    def observe(self, context: ControlContext, private: PrivateTurnData | None) -> Hashable:
        assert private is not None
        for items, vocabulary in zip(private.items, private.vocabularies, strict=True):
            tags: frozenset[str] = frozenset().union(*(item.tags for item in items))
            if any(v.compatible & tags for v in vocabulary.views if v.name != vocabulary.generic):
                return 1
        return 0


@attrs.frozen
class TopScoreControl:
    """c_t = the top internal score of the turn's selections: breaks C3/C6."""

    name: str = "top-score"
    violates: str | None = "C6"
    reads_private: bool = True
    reads_views: bool = False

    def observe(self, context: ControlContext, private: PrivateTurnData | None) -> Hashable:
        assert private is not None
        return tuple(None if s is None else max(s) for s in private.scores)


VocabularyHook = Callable[[str, Store], Vocabulary]
RoutingHook = Callable[[Query, tuple[TurnRecord, ...], Store], tuple[str, ...]]
FallbackHook = Callable[[Sequence[Fraction]], bool]


@attrs.frozen
class PrivateHooks:
    """Deliberate contract breaches that read raw memory or scores (Appendix B.5).

    vocabulary: a store-dependent vocabulary (C1); routing: memory-dependent slot
    activation (C4); fallback: a fallback decided from internal scores (C4/C5).
    The strict kernel refuses an interface with any hook set.
    """

    vocabulary: VocabularyHook | None = None
    routing: RoutingHook | None = None
    fallback: FallbackHook | None = None

    def violations(self) -> list[tuple[str, str]]:
        found = []
        if self.vocabulary is not None:
            found.append(("C1", "the view vocabulary depends on the store"))
        if self.routing is not None:
            found.append(("C4", "slot activation reads raw memory"))
        if self.fallback is not None:
            found.append(("C4", "the fallback decision reads internal scores"))
        return found


@attrs.frozen
class Violation:
    condition: str
    message: str


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
    _vocabulary_by_slot: dict[str, Vocabulary] = attrs.field(init=False, repr=False, eq=False, hash=False)
    _query_by_name: dict[str, Query] = attrs.field(init=False, repr=False, eq=False, hash=False)
    # Memo of the static contract check (the interface is frozen, so it is computed once).
    _violations: list[Violation] = attrs.field(init=False, repr=False, eq=False, hash=False, factory=list)
    _checked: list[bool] = attrs.field(init=False, repr=False, eq=False, hash=False, factory=list)
    # Memo of (scores, release distribution) per (vocabulary, read, items, eps): pure in them.
    selection_memo: dict[Any, Any] = attrs.field(init=False, repr=False, eq=False, hash=False, factory=dict)
    epsilon_memo: dict[frozenset[str], Fraction] = attrs.field(init=False, repr=False, eq=False, hash=False, factory=dict)

    def __attrs_post_init__(self) -> None:
        slots = [v.slot for v in self.vocabularies]
        if len(set(slots)) != len(slots):
            raise InputError("slots", "one vocabulary per slot", slots)
        names = [q.name for q in self.queries]
        if len(set(names)) != len(names):
            raise InputError("queries", "unique query names", names)
        if self.uncharged_epsilon <= 0:
            raise InputError("uncharged_epsilon", "a positive exact rational", self.uncharged_epsilon)
        object.__setattr__(self, "_vocabulary_by_slot", {v.slot: v for v in self.vocabularies})
        object.__setattr__(self, "_query_by_name", {q.name: q for q in self.queries})

    def vocabulary(self, slot: str) -> Vocabulary:
        table = self._vocabulary_by_slot
        if slot not in table:
            raise ContractViolation("C1", f"slot {slot}: no fixed public vocabulary")
        return table[slot]

    def epsilon_for(self, charge_set: frozenset[str]) -> Fraction:
        """BudgetRule(q, g, h, Gamma, {(L_a, B_a)}) for the rules here, which read only the
        charge set and the caps (both public and fixed): memoized per charge set. An
        uncharged read (Gamma empty) is adjacency-invariant for every attribute (Lemma 1)
        and runs at the policy-fixed `uncharged_epsilon`."""
        found = self.epsilon_memo.get(charge_set)
        if found is None:
            found = self.budget.epsilon(charge_set, self.caps) if charge_set else self.uncharged_epsilon
            self.epsilon_memo[charge_set] = found
        return found

    def query(self, name: str) -> Query:
        table = self._query_by_name
        if name not in table:
            raise InputError("query", f"one of {sorted(table)}", name)
        return table[name]

    @property
    def caps(self) -> Mapping[str, Fraction]:
        return self.policy.caps

    def contract_violations(self) -> list[Violation]:
        """Static check of Definition 1 on the declared parts and routes."""
        if not self._checked:
            self._violations.extend(self._find_violations())
            self._checked.append(True)
        return list(self._violations)

    def _find_violations(self) -> list[Violation]:
        found = [Violation(c, m) for c, m in self.hooks.violations()]
        if self.selector.violates:
            found.append(
                Violation(
                    self.selector.violates, f"selector {self.selector.name!r} is not the exponential mechanism (Eq. 7)"
                )
            )
        if self.cap_rule.violates:
            found.append(
                Violation(
                    self.cap_rule.violates, f"cap rule {self.cap_rule.name!r} does not keep L_a <= B_a on every path"
                )
            )
        if self.control.violates:
            found.append(
                Violation(
                    self.control.violates,
                    f"observable control {self.control.name!r} reads raw memory or internal scores",
                )
            )
        slots = set(self.policy.layout.slots)
        for vocabulary in self.vocabularies:
            if vocabulary.slot not in slots:
                found.append(Violation("C1", f"slot {vocabulary.slot}: vocabulary for a slot with no positions"))
        attributes = set(self.policy.attribute_names)
        for query in self.queries:
            for read in query.reads:
                where = f"query {query.name}, slot {read.slot}"
                if read.slot not in self._vocabulary_by_slot:
                    found.append(Violation("C1", f"{where}: no fixed public vocabulary"))
                    continue
                vocabulary = self.vocabulary(read.slot)
                unknown_views = sorted(set(read.relevance_map) - set(vocabulary.names))
                if unknown_views:
                    found.append(
                        Violation("C1", f"{where}: relevance names views outside the vocabulary: {unknown_views}")
                    )
                outside = sorted(p for p in read.positions if self.policy.layout.slot_of(p) != read.slot)
                if outside:
                    found.append(Violation("C4", f"{where}: read set includes positions of other slots {outside}"))
                if read.charge is not None:
                    unknown = sorted(read.charge - attributes)
                    if unknown:
                        found.append(Violation("C2", f"{where}: charge names unknown attributes {unknown}"))
                    missing = sorted(self.policy.gamma_star(read.positions) - read.charge)
                    for attribute in missing:
                        found.append(
                            Violation(
                                "C2",
                                f"{where}, attribute {attribute}: read touches I_{attribute} but the declared charge set omits it",
                            )
                        )
                if self.policy.gamma_star(read.positions):
                    declared = self.scorer.sensitivity(vocabulary)
                    if declared <= 0:
                        found.append(Violation("C3", f"{where}: sensitivity bound must be positive"))
                    # Eq. (6): where the scorer's form gives the exact sup, a smaller declared
                    # bound is refused rather than trusted.
                    exact_sensitivity = getattr(self.scorer, "exact_sensitivity", None)
                    if exact_sensitivity is not None:
                        exact = exact_sensitivity(vocabulary)
                        if declared < exact:
                            found.append(
                                Violation(
                                    "C3",
                                    f"{where}: declared sensitivity {declared} is below the scorer's bound {exact} (Eq. 6)",
                                )
                            )
        return found

    def require_contract(self) -> None:
        """Raise the first violation (strict kernel)."""
        violations = self.contract_violations()
        if violations:
            first = violations[0]
            raise ContractViolation(first.condition, first.message)


def fallback_distribution(vocabulary: Vocabulary) -> PointMass:
    """The fixed generic view at zero cost (Algorithm 1, line 10)."""
    return PointMass(views=vocabulary.names, view=vocabulary.generic)
