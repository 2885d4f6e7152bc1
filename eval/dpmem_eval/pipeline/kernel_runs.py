"""Algorithm 1 for a compared interface (methods.py): the method's `dpmem_ref.Interface`
for one pair, assembled from kernel parts; its run over the first T queries of one pair side
with the kernel's `run_turn` (the released views and the reconstructed charge, Table 4); and
the DP conditioning the response LLM receives (the released view texts only).

The kernel's router (`FixedRouter`) does not read the history, so the released views of a
whole trajectory can be drawn before any response is generated; `kernel_trace` checks this.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dpmem_eval.pipeline.methods import MethodSpec, PublicPolicy
from dpmem_ref.channel.prompt import TurnConditioning


def _seed_int(*parts: object) -> int:
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big")


def kernel_store(policy: PublicPolicy, store: Sequence[Any], name: str) -> Any:
    """A `dpmem_ref.Store` from a data-package store (store[i-1] has .tags and .text)."""
    from dpmem_ref.core.policy import Layout, MemoryItem, Store

    layout = Layout(tuple(policy.layout))
    items = tuple(MemoryItem(tags=frozenset(item.tags), text=item.text) for item in store)
    return Store(layout=layout, items=items, name=name)


def planned_counts(pair: Any, horizon: int, groups: Mapping[str, Sequence[int]] | None = None) -> dict[str, int]:
    """C_a: charged selections of a planned over the first T queries (public: the trajectory
    and the groups are fixed before the interaction, C4)."""
    sets = {a: set(g) for a, g in (groups.items() if groups is not None else pair.groups)}
    counts: dict[str, int] = {}
    for query in pair.queries[:horizon]:
        for attribute, group in sets.items():
            if group & set(query.read_positions):
                counts[attribute] = counts.get(attribute, 0) + 1
    return counts


def kernel_interface(method: MethodSpec, pair: Any, policy: PublicPolicy, horizon: int) -> Any:
    """Assemble the method's `dpmem_ref.Interface` for one pair from kernel parts."""
    from dpmem_ref.config.registry import BUDGET_RULES, CAP_RULES, CONTROLS, SCORERS, SELECTORS
    from dpmem_ref.core.policy import Attribute, Layout, Policy
    from dpmem_ref.core.transcript import Query, SlotRead
    from dpmem_ref.core.views import View, Vocabulary
    from dpmem_ref.interface import Interface

    layout = Layout(tuple(policy.layout))
    groups = policy.groups_for(pair)
    attributes = tuple(
        Attribute(name=a, group=frozenset(group), cap=Fraction(method.cap)) for a, group in sorted(groups.items())
    )
    kpolicy = Policy(layout=layout, attributes=attributes)
    vocabularies = tuple(
        Vocabulary(
            slot=slot,
            views=tuple(View(v.name, v.text, frozenset(v.compatible), frozenset(v.specific)) for v in views),
            generic=views[0].name,
        )
        for slot, views in policy.views.items()
    )
    queries = []
    for query in pair.queries[:horizon]:
        positions = frozenset(query.read_positions)
        charge = None
        if method.incomplete_charge:
            touched = sorted(kpolicy.gamma_star(positions))
            if len(touched) > 1:
                charge = frozenset(touched[:1])  # C2 broken: one affected attribute only
        relevance = {view: Fraction(value) for view, value in policy.relevance[query.family]}
        queries.append(Query(name=query.query_id, text=query.text,
                             reads=(SlotRead(slot=query.slot, positions=positions, relevance=relevance, charge=charge),)))
    field = f"method {method.key}"
    budget_arguments = method_budget_arguments(method, pair, horizon, groups)
    return Interface(
        policy=kpolicy,
        vocabularies=vocabularies,
        queries=tuple(queries),
        scorer=SCORERS.make(method.scorer, f"{field}.scorer"),
        budget=BUDGET_RULES.make(method.budget, f"{field}.budget", **budget_arguments),
        selector=SELECTORS.make(method.selector, f"{field}.selector"),
        cap_rule=CAP_RULES.make(method.cap_rule, f"{field}.cap_rule"),
        control=CONTROLS.make(method.control, f"{field}.control"),
        name=method.key,
    )


def method_budget_arguments(
    method: MethodSpec, pair: Any, horizon: int, groups: Mapping[str, Sequence[int]]
) -> dict[str, Any]:
    """The budget rule's factory arguments (dpmem_ref.config.registry.BUDGET_RULES): K for the
    online rule, the public plan C_a (attributes with a planned selection) for the preallocated."""
    if method.budget == "preallocated":
        return {"plan": {a: n for a, n in planned_counts(pair, horizon, groups).items() if n > 0}}
    return {"K": method.K}


@dataclass(frozen=True)
class KernelTurn:
    """Public facts of one DP-MemView turn plus the reconstructed charge (Table 4)."""

    views: tuple[tuple[str, str], ...]
    view_texts: tuple[str, ...]
    admitted: tuple[bool, ...]
    ledger_target: Fraction  # the operational ledger L_target after the turn
    reconstructed_target: Fraction  # sum of eps of admitted selections whose read touches I_target
    control: Any = None


@dataclass(frozen=True)
class KernelTrace:
    turns: tuple[KernelTurn, ...]
    selector_violates: str | None = None

    @property
    def final_ledger(self) -> Fraction:
        return self.turns[-1].ledger_target if self.turns else Fraction(0)

    @property
    def final_reconstructed(self) -> Fraction:
        return self.turns[-1].reconstructed_target if self.turns else Fraction(0)


def kernel_trace(method: MethodSpec, pair: Any, side: str, seed: int, policy: PublicPolicy, horizon: int) -> KernelTrace:
    """Run Algorithm 1 (`dpmem_ref.turn.run_turn`) over the first T queries on one side.

    M and M' of a pair share the random source seed (common random numbers); the kernel
    is strict (refuses any C1-C6 breach) except for the ablations, which are run with
    strict=False exactly as the kernel's counterexamples are.
    """
    from dpmem_ref.mechanism.randomness import SeededRandomSource
    from dpmem_ref.parts.routers import FixedRouter
    from dpmem_ref.turn import InterfaceState, run_turn

    interface = kernel_interface(method, pair, policy, horizon)
    if not isinstance(interface.router, FixedRouter):  # pragma: no cover - guarded assumption
        raise RuntimeError("views are drawn before responses only for a history-independent router")
    strict = method.violates is None
    store = kernel_store(policy, pair.store_m if side == "M" else pair.store_m_prime, name=side)
    source = SeededRandomSource(_seed_int("em", method.key, pair.pair_id, seed))
    state = InterfaceState.initial(interface)
    names = interface.policy.attribute_names
    target_index = names.index(pair.attribute)
    reconstructed = Fraction(0)
    turns = []
    for query in interface.queries:
        result = run_turn(interface, state, query, store, source, channel=None, strict=strict)
        for plan in result.plans:
            if plan.admitted and pair.attribute in interface.policy.gamma_star(plan.read.positions):
                reconstructed += plan.epsilon
        state = result.state
        texts = tuple(interface.vocabulary(slot).view(view).text for slot, view in result.record.views)
        turns.append(KernelTurn(
            views=result.record.views,
            view_texts=texts,
            admitted=result.record.admitted,
            ledger_target=state.ledgers[target_index],
            reconstructed_target=reconstructed,
            control=result.record.control,
        ))
    return KernelTrace(turns=tuple(turns), selector_violates=interface.selector.violates)


def dp_conditioning(pair: Any, trace: KernelTrace) -> tuple[TurnConditioning, ...]:
    """DP-MemView: the released view texts only (the store never reaches the prompt)."""
    # a trace covers only the first T of the pair's queries
    return tuple(TurnConditioning(q.text, "views", turn.view_texts)
                 for q, turn in zip(pair.queries, trace.turns, strict=False))
