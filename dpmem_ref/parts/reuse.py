"""Reuse of released views: re-serving the latest fresh view of a slot at no charge.

A view released earlier in an interaction is public: it is part of the released history.
Serving it again for a later query is post-processing of that history, so Theorem 1 holds
unchanged *provided the decision to reuse is itself a function of public inputs and the
released history only* (C4: orchestration reads the public prefix; C6: what is released
is public). The rule here reads exactly that:

- the query family: the queries whose turns may share a slot's released view (public
  catalogue names);
- the refresh rule: a fresh view serves the family for `refresh_after` later turns (the
  turn count is public: it is the length of the released history), and a turn of any
  query named in `refresh_on` makes it stale at once (a public event, e.g. a
  "memory-updated" query the deployment issues itself and so declares public);
- optionally, when the cap test refuses a refresh (the ledgers are public, C5), the latest
  fresh view at any age rather than the generic view (`reuse_when_exhausted`, default on);
- the latest *fresh* release (an admitted, charged selection: `TurnRecord.admitted`) of the
  slot in a turn of the family.

A refresh triggered by a change of memory that is not a declared public event reads the
store: which turns select afresh would then depend on memory, and the pattern of charged
selections (and the control c_t) would reveal the change. Such a rule declares
`memory_change=True` without `memory_change_public`, and the contract check refuses it
(`C4.reuse_reads_memory`); the lenient kernel runs it as deployed (the refresh happens
whenever the store holds memory at the slot's read set) so the auditor measures the leak.

`ReusePolicy.reused_view(history, query, slot)` is the one decision; the planner
(`dpmem_ref.turn.plan.plan_units`) calls it before the read, and on a hit releases the
stored view as a point mass with no read, no charge and no cap test. `state_key` is the
part of the history the future decisions depend on (for exact audits).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import attrs

from dpmem_ref.core.errors import ContractViolation, InputError
from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.core.validate import check_int

MAX_REFRESH_AFTER = 1_000_000


def _names(value: object, field: str) -> frozenset[str]:
    if isinstance(value, str) or not isinstance(value, frozenset | set | tuple | list):
        raise InputError(field, "a set of query names", type(value).__name__)
    names = frozenset(value)
    if not all(isinstance(name, str) and name for name in names):
        raise InputError(field, "non-empty query names", sorted(map(str, names)))
    return names


@attrs.frozen(cache_hash=True)
class ReuseRule:
    """Reuse the latest fresh view of `slot` released in a turn of one of `queries` for the
    next `refresh_after` turns of those queries; a turn of a `refresh_on` query makes it
    stale. `reuse_when_exhausted`: when a refresh is refused by the cap test (Algorithm 1,
    line 9), re-serve the latest fresh view (any age) instead of the generic view; the cap
    decision is public (C5), so this too is post-processing. `memory_change`: the rule also refreshes when the memory under the slot
    changes, which is public only with `memory_change_public` (and then the change must
    reach the interface as a `refresh_on` event query); otherwise a C4 breach."""

    slot: str
    queries: frozenset[str]
    refresh_after: int
    refresh_on: frozenset[str] = frozenset()
    memory_change: bool = False
    memory_change_public: bool = False
    reuse_when_exhausted: bool = True

    def __attrs_post_init__(self) -> None:
        where = f"reuse.{self.slot}"
        if not isinstance(self.slot, str) or not self.slot:
            raise InputError("reuse.slot", "a slot name", self.slot)
        object.__setattr__(self, "queries", _names(self.queries, f"{where}.queries"))
        if not self.queries:
            raise InputError(f"{where}.queries", "at least one query of the family", "none")
        object.__setattr__(self, "refresh_on", _names(self.refresh_on, f"{where}.refresh_on"))
        expected = f"an integer number of turns in 1..{MAX_REFRESH_AFTER}"
        check_int(self.refresh_after, f"{where}.refresh_after", 1, MAX_REFRESH_AFTER, expected=expected)
        for flag in ("memory_change", "memory_change_public", "reuse_when_exhausted"):
            if not isinstance(getattr(self, flag), bool):
                raise InputError(f"{where}.{flag}", "true or false", getattr(self, flag))
        if self.memory_change_public and not self.memory_change:
            raise InputError(f"{where}.memory_change_public", "only with memory_change = true", "memory_change = false")
        if self.memory_change_public and not self.refresh_on:
            raise InputError(
                f"{where}.refresh_on",
                "the public event query that announces a memory change (memory_change_public = true)",
                "none",
            )

    @property
    def reads_memory(self) -> bool:
        """True when the refresh decision reads the store (a C4 breach)."""
        return self.memory_change and not self.memory_change_public

    def latest(self, history: tuple[TurnRecord, ...]) -> tuple[str, int] | None:
        """(view, age) of the latest fresh release of the slot in a turn of the family with
        no `refresh_on` event since (age = turns since it), or None. With
        `reuse_when_exhausted` the age is not bounded; otherwise only a release at most
        `refresh_after` turns old is returned. A function of the released history (C4)."""
        now = len(history)
        slot, family, events = self.slot, self.queries, self.refresh_on
        floor = 0 if self.reuse_when_exhausted else max(0, now - self.refresh_after)
        for index in range(now - 1, floor - 1, -1):
            record = history[index]
            if record.query in events:
                return None
            if record.query not in family:
                continue
            for (released_slot, view), admitted in zip(record.views, record.admitted, strict=False):
                if released_slot == slot and admitted:
                    return view, now - index
        return None

    def serves(self, history: tuple[TurnRecord, ...], exhausted: bool) -> str | None:
        """The view to re-serve: the latest fresh view while it is at most `refresh_after`
        turns old, or (with `reuse_when_exhausted`) at any age when the cap test has just
        refused a fresh selection (`exhausted`, a function of the public ledgers, C5)."""
        found = self.latest(history)
        if found is None:
            return None
        view, age = found
        return view if age <= self.refresh_after or (exhausted and self.reuse_when_exhausted) else None

    def serve(
        self, history: tuple[TurnRecord, ...], exhausted: bool, strict: bool, evidence: Callable[[], bool]
    ) -> str | None:
        """`serves`, as the planner calls it. A rule that refreshes on a memory change it does
        not declare public breaks C4: refused when `strict`; the lenient kernel runs it as
        deployed, refreshing whenever `evidence()` (the read set holds memory evidence:
        a read of the store) is true, so the auditor measures the leak."""
        view = self.serves(history, exhausted)
        if view is None or not self.reads_memory:
            return view
        if strict:
            raise ContractViolation(
                "C4.reuse_reads_memory",
                f"reuse rule of slot {self.slot}: refresh reads a memory change not declared public",
            )
        return None if evidence() else view

    def state_key(self, history: tuple[TurnRecord, ...]) -> Hashable:
        """What this rule's future decisions depend on: the latest fresh view and its age,
        ages past `refresh_after` collapsed into one (only `reuse_when_exhausted` reads them)."""
        found = self.latest(history)
        if found is None:
            return None
        view, age = found
        return (view, min(age, self.refresh_after + 1))


@attrs.frozen
class ReusePolicy:
    """The interface's reuse rules, at most one per slot (none: every read selects afresh)."""

    rules: tuple[ReuseRule, ...] = ()
    _by_slot: dict[str, ReuseRule] = attrs.field(init=False, repr=False, eq=False, hash=False)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.rules, tuple) or not all(isinstance(r, ReuseRule) for r in self.rules):
            raise InputError("reuse", "a tuple of ReuseRule", type(self.rules).__name__)
        slots = [rule.slot for rule in self.rules]
        if len(set(slots)) != len(slots):
            twice = sorted({s for s in slots if slots.count(s) > 1})
            raise InputError("reuse", "at most one reuse rule per slot", f"two for slot {twice[0]}")
        object.__setattr__(self, "_by_slot", {rule.slot: rule for rule in self.rules})

    def __bool__(self) -> bool:
        return bool(self.rules)

    def rule_for(self, query: str, slot: str) -> ReuseRule | None:
        rule = self._by_slot.get(slot)
        return rule if rule is not None and query in rule.queries else None

    def reused_view(
        self, history: tuple[TurnRecord, ...], query: str, slot: str, exhausted: bool = False
    ) -> str | None:
        """The view to re-serve for `slot` in a turn of `query` after `history`, or None to
        select afresh (`exhausted`: the cap test refused the fresh selection). Public inputs,
        the ledgers and the released history only (C4) for every rule that does not read
        memory (`ReuseRule.reads_memory`; the planner handles that breach)."""
        rule = self.rule_for(query, slot)
        return None if rule is None else rule.serves(history, exhausted)

    def state_key(self, history: tuple[TurnRecord, ...]) -> Hashable:
        """What the future reuse decisions depend on (for exact audits): per rule, its
        `ReuseRule.state_key`. Empty without rules."""
        return tuple(rule.state_key(history) for rule in self.rules)

    @property
    def reads_memory(self) -> tuple[ReuseRule, ...]:
        """The rules whose refresh reads the store (C4 breaches)."""
        return tuple(rule for rule in self.rules if rule.reads_memory)
