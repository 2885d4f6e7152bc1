"""The compared interfaces (Table 1 / Table 8) and the safeguard ablations (Table 4).

Each method turns one pair side (store M or M') and the pair's fixed query trajectory into
the per-turn conditioning the response LLM receives. DP-MemView and its ablations are
`dpmem_ref.Interface` objects assembled from kernel parts and run turn by turn with the
kernel's `run_turn` (Algorithm 1); the only thing this module adds is which parts to plug in:

- DP-MemView (on):  OnlineBudget(K), eps = min_{a in Gamma} B_a / K
- DP-MemView (pre): PreallocatedBudget(C_a), eps = min_{a in Gamma} B_a / C_a, where C_a is
  the public planned number of charged selections of a in the first T queries
- IncompleteCharge (C2): each read touching several groups declares a one-attribute charge
  set (the first attribute of Gamma* in sorted order); run with strict=False
- CappedArgmax (C3): ArgmaxSelector, ledgers and fallback unchanged
- NoCap (C5): NoCap cap rule (EM, complete charging, no prospective check)
- score-channel diagnostic (C3/C6): TopScoreControl exposes the top internal score as c_t

The kernel's router (`FixedRouter`) does not read the history, so the released views of a
whole trajectory can be drawn before any response is generated; `kernel_trace` checks this.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dpmem_eval.pipeline.prompts import TurnConditioning

SIDES = ("M", "M'")


@dataclass(frozen=True)
class MethodSpec:
    """One compared interface or ablation.

    kind: generic | raw | typed-mask | task-min | output-filter | dp
    For kind "dp": budget ("online" | "preallocated"), cap B_a, K (online), selector
    ("em" | "argmax"), cap_rule ("prospective" | "none"), incomplete_charge, control
    ("fallback" | "top-score"). `violates` names the broken condition (Table 4).
    """

    key: str
    name: str
    kind: str
    stochastic: bool = False
    budget: str | None = None
    cap: Fraction = Fraction(2)
    K: int = 3
    selector: str = "em"
    cap_rule: str = "prospective"
    incomplete_charge: bool = False
    control: str = "fallback"
    violates: str | None = None
    table: str = "2"
    generates: bool = True

    @property
    def epsilon_label(self) -> str:
        if self.kind != "dp":
            return ""
        if self.budget == "online":
            return f"{float(self.cap / self.K):.3f}"
        return "B_a/C_a"


def _dp(key: str, name: str, budget: str = "online", cap: int = 2, K: int = 3, **kw: Any) -> MethodSpec:
    return MethodSpec(key=key, name=name, kind="dp", stochastic=kw.pop("stochastic", True), budget=budget,
                      cap=Fraction(cap), K=K, **kw)


MAIN_METHODS: tuple[MethodSpec, ...] = (
    MethodSpec("generic_only", "GenericOnly", "generic"),
    MethodSpec("raw_read_set", "RawReadSet", "raw"),
    MethodSpec("typed_mask", "TypedMask", "typed-mask"),
    MethodSpec("task_min", "TaskMin", "task-min"),
    MethodSpec("output_filter", "OutputFilter", "output-filter"),
    _dp("dp_on", "DP-MemView (on)"),
    _dp("dp_pre", "DP-MemView (pre)", budget="preallocated"),
)
ABLATIONS: tuple[MethodSpec, ...] = (
    _dp("incomplete_charge", "IncompleteCharge", incomplete_charge=True, violates="C2", table="4"),
    _dp("capped_argmax", "CappedArgmax", selector="argmax", violates="C3", table="4", stochastic=False),
    _dp("no_cap", "NoCap", cap_rule="none", violates="C5", table="4"),
)
SCORE_CHANNEL = _dp("score_channel", "Score channel (top internal score)", control="top-score",
                    violates="C3/C6", table="diag", generates=False)


def budget_grid(caps: Sequence[int] = (1, 2, 4, 8), ks: Sequence[int] = (2, 3, 4)) -> tuple[MethodSpec, ...]:
    """Table 3: DP-MemView (on) over B_a at K=3 and over K at B_a=2 (the main setting is shared)."""
    grid = []
    for cap in caps:
        if cap != 2:
            grid.append(_dp(f"dp_on_B{cap}_K3", f"DP-MemView (on) B_a={cap}, K=3", cap=cap, K=3, table="3"))
    for k in ks:
        if k != 3:
            grid.append(_dp(f"dp_on_B2_K{k}", f"DP-MemView (on) B_a=2, K={k}", cap=2, K=k, table="3"))
    return tuple(grid)


def all_methods(caps: Sequence[int] = (1, 2, 4, 8), ks: Sequence[int] = (2, 3, 4)) -> tuple[MethodSpec, ...]:
    return MAIN_METHODS + ABLATIONS + budget_grid(caps, ks) + (SCORE_CHANNEL,)


def method_by_key(methods: Sequence[MethodSpec], key: str) -> MethodSpec:
    for method in methods:
        if method.key == key:
            return method
    raise KeyError(key)


# --- the public policy (from the data package) ------------------------------------------


@dataclass(frozen=True)
class PublicPolicy:
    """The fixed, store-independent evaluation policy: layout, views, query relevance."""

    layout: tuple[str, ...]
    views: Mapping[str, tuple[Any, ...]]  # slot -> views with name/text/compatible/specific
    relevance: Mapping[str, tuple[tuple[str, str], ...]]  # query family -> (view, rational)
    protected_terms: Mapping[str, tuple[str, ...]]  # attribute -> labels and state phrases
    groups: Mapping[str, tuple[int, ...]] | None = None  # fixed I_a of the evaluation policy

    def groups_for(self, pair: Any) -> dict[str, tuple[int, ...]]:
        """The protected groups the interface uses: the fixed evaluation policy when there is
        one (the data package's union groups, as in its exported interface TOML; every pair's
        own groups are subsets, so charging is complete for every pair, C2), else the pair's."""
        return dict(self.groups) if self.groups is not None else dict(pair.groups)

    @property
    def generic(self) -> dict[str, str]:
        return {slot: views[0].name for slot, views in self.views.items()}


def load_public_policy() -> PublicPolicy:
    """The PairedMem policy as the data package defines it (Appendix C.2 S1, S4)."""
    from dpmem_eval.data import queries, scaffold

    return PublicPolicy(
        layout=tuple(scaffold.LAYOUT),
        views=dict(scaffold.VIEWS),
        relevance={name: tuple(f.relevance) for name, f in queries.FAMILY_BY_NAME.items()},
        protected_terms={a: tuple(scaffold.EVIDENCE_CUES[a]) for a in scaffold.EVIDENCE_CUES},
        groups={a: tuple(g) for a, g in scaffold.UNION_GROUPS.items()},
    )


# --- kernel assembly -------------------------------------------------------------------


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
    groups = {a: set(g) for a, g in (groups.items() if groups is not None else pair.groups)}
    counts: dict[str, int] = {}
    for query in pair.queries[:horizon]:
        for attribute, group in groups.items():
            if group & set(query.read_positions):
                counts[attribute] = counts.get(attribute, 0) + 1
    return counts


def kernel_interface(method: MethodSpec, pair: Any, policy: PublicPolicy, horizon: int) -> Any:
    """Assemble the method's `dpmem_ref.Interface` for one pair from kernel parts."""
    from dpmem_ref.core.policy import Attribute, Layout, Policy
    from dpmem_ref.core.transcript import Query, SlotRead
    from dpmem_ref.core.views import View, Vocabulary
    from dpmem_ref.interface import Interface
    from dpmem_ref.parts.broken import ArgmaxSelector, NoCap, TopScoreControl
    from dpmem_ref.parts.budget import OnlineBudget, PreallocatedBudget
    from dpmem_ref.parts.caps import ProspectiveCap
    from dpmem_ref.parts.controls import FallbackControl
    from dpmem_ref.parts.scoring import LinearTagScorer
    from dpmem_ref.parts.selectors import ExponentialMechanismSelector

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
    if method.budget == "online":
        budget = OnlineBudget(K=method.K)
    else:
        budget = PreallocatedBudget.from_mapping({a: n for a, n in planned_counts(pair, horizon, groups).items() if n > 0})
    return Interface(
        policy=kpolicy,
        vocabularies=vocabularies,
        queries=tuple(queries),
        scorer=LinearTagScorer(),
        budget=budget,
        selector=ArgmaxSelector() if method.selector == "argmax" else ExponentialMechanismSelector(),
        cap_rule=NoCap() if method.cap_rule == "none" else ProspectiveCap(),
        control=TopScoreControl() if method.control == "top-score" else FallbackControl(),
        name=method.key,
    )


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


# --- baselines (Table 8) ------------------------------------------------------------------


def _protected_positions(pair: Any, policy: PublicPolicy) -> set[int]:
    return set().union(*(set(g) for g in policy.groups_for(pair).values()))


def task_min_positions(pair: Any) -> frozenset[int]:
    """TaskMin (AirGapAgent adaptation): the fixed union of positions read by the target-relevant
    and same-domain (neutral) query families; distractor-only positions are excluded."""
    return frozenset(p for q in pair.queries if q.kind in ("target", "neutral") for p in q.read_positions)


def _store(pair: Any, side: str) -> Sequence[Any]:
    return pair.store_m if side == "M" else pair.store_m_prime


def baseline_conditioning(method: MethodSpec, pair: Any, side: str, policy: PublicPolicy, horizon: int) -> tuple[TurnConditioning, ...]:
    """Per-turn response-LLM input of a deterministic baseline (Table 8)."""
    store = _store(pair, side)
    protected = _protected_positions(pair, policy)
    taskmin = task_min_positions(pair)
    out = []
    for query in pair.queries[:horizon]:
        reads = sorted(query.read_positions)
        if method.kind == "generic":
            generic = policy.views[query.slot][0]
            out.append(TurnConditioning(query.text, "views", (generic.text,)))
        elif method.kind in ("raw", "output-filter"):
            out.append(TurnConditioning(query.text, "memory", tuple(store[p - 1].text for p in reads if store[p - 1].text)))
        elif method.kind == "typed-mask":
            lines = []
            for p in reads:
                if p in protected:
                    lines.append(f"[{policy.layout[p - 1]} item withheld]")
                elif store[p - 1].text:
                    lines.append(store[p - 1].text)
            out.append(TurnConditioning(query.text, "memory", tuple(lines)))
        elif method.kind == "task-min":
            positions = sorted(p for p in taskmin if policy.layout[p - 1] == query.slot)
            out.append(TurnConditioning(query.text, "memory", tuple(store[p - 1].text for p in positions if store[p - 1].text)))
        else:
            raise ValueError(f"method {method.key}: not a baseline")
    return tuple(out)


def dp_conditioning(pair: Any, trace: KernelTrace) -> tuple[TurnConditioning, ...]:
    """DP-MemView: the released view texts only (the store never reaches the prompt)."""
    # a trace covers only the first T of the pair's queries
    return tuple(TurnConditioning(q.text, "views", turn.view_texts)
                 for q, turn in zip(pair.queries, trace.turns, strict=False))


@dataclass(frozen=True)
class OutputFilter:
    """Post-generation deletion of explicit protected labels and sensitive-state phrases."""

    terms: tuple[str, ...]
    _pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        words = sorted(set(self.terms), key=len, reverse=True)
        pattern = re.compile(r"\b(" + "|".join(re.escape(w) for w in words) + r")\w*", re.IGNORECASE)
        object.__setattr__(self, "_pattern", pattern)

    def __call__(self, text: str) -> str:
        cleaned = self._pattern.sub("", text)
        return re.sub(r"[ \t]{2,}", " ", cleaned).strip()


def output_filter(policy: PublicPolicy) -> OutputFilter:
    return OutputFilter(tuple(t for terms in policy.protected_terms.values() for t in terms))


def infinite_or(value: Fraction | float) -> float:
    return math.inf if value == math.inf else float(value)
