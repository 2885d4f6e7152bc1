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

Running Algorithm 1 for a method (its kernel interface, charge trace and DP conditioning) is
kernel_runs.py's; this module holds the registry, the public policy and the baselines.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dpmem_ref.channel.prompt import TurnConditioning

SIDES = ("M", "M'")


@dataclass(frozen=True)
class MethodSpec:
    """One compared interface or ablation.

    kind: generic | raw | typed-mask | task-min | output-filter | dp
    For kind "dp", the parts by their names in the kernel's registry of parts
    (dpmem_ref.config.registry, the names an interface file uses): budget ("online" |
    "preallocated"), scorer ("linear"), selector ("em" | "argmax"), cap_rule ("prospective" |
    "none"), control ("fallback" | "top-score" | ...); cap B_a and K (online) are the budget's
    parameters; incomplete_charge declares one-attribute charge sets (C2 broken).
    `violates` names the broken condition (Table 4).
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
    scorer: str = "linear"
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


# --- baselines (Table 8) ------------------------------------------------------------------


def _protected_positions(pair: Any, policy: PublicPolicy) -> set[int]:
    return set().union(*(set(g) for g in policy.groups_for(pair).values()))


def task_min_positions(pair: Any) -> frozenset[int]:
    """TaskMin (AirGapAgent adaptation): the fixed union of positions read by the target-relevant
    and same-domain (neutral) query families; distractor-only positions are excluded."""
    return frozenset(p for q in pair.queries if q.kind in ("target", "neutral") for p in q.read_positions)


def _store(pair: Any, side: str) -> Sequence[Any]:
    store: Sequence[Any] = pair.store_m if side == "M" else pair.store_m_prime
    return store


def baseline_conditioning(method: MethodSpec, pair: Any, side: str, policy: PublicPolicy, horizon: int,
                          asked: Sequence[Any] | None = None) -> tuple[TurnConditioning, ...]:
    """Per-turn response-LLM input of a deterministic baseline (Table 8): over the pair's first
    `horizon` queries, or over the queries `asked` in that order (a trajectory that repeats)."""
    store = _store(pair, side)
    protected = _protected_positions(pair, policy)
    taskmin = task_min_positions(pair)
    out = []
    for query in pair.queries[:horizon] if asked is None else asked:
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
