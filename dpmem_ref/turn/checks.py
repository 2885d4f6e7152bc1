"""Checks at the public boundary of the turn kernel.

`begin_turn`, `plan_slot`, `run_turn`, `run_interaction` and the cursor's `rebase` /
`release(view, ledgers=...)` take values from callers; they check types and ranges here,
once, and raise `InputError` with one line naming the argument. What they hand on to the
planner is then well formed, and the planner's inner calls (`open_turn`, `plan_units`)
assume it (plain asserts where a check is cheap).

Ledgers (L_a in policy order; Fractions at this boundary, one `LedgerVector` inside):
- a tuple or list of exact rationals: `Fraction` or `int`; never bool, float (0.1 is not
  1/10; NaN and infinities are not numbers a ledger can hold), Decimal, str or a numpy
  scalar (`dpmem_ref.core.ledgers.exact_ledgers`; an `InterfaceState` applies it when it
  is built, naming `state.ledgers`);
- one per attribute;
- 0 <= L_a <= B_a (C5: no committed ledger exceeds its cap, and a negative ledger would
  re-grant budget: run_turn would admit selections past B_a); lenient runs (strict=False,
  broken cap rules) only L_a >= 0;
- each denominator of at most MAX_LEDGER_DIGITS digits (the exact-ledger bound of
  dpmem_ref.core.limits; past it integer ledger arithmetic grows without bound).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.ledgers import Ledgers, LedgerVector, exact_ledgers
from dpmem_ref.core.limits import MAX_LEDGER_DIGITS, digits
from dpmem_ref.core.policy import Store
from dpmem_ref.core.transcript import PublicPrefix, Query, TurnRecord
from dpmem_ref.core.validate import check_int
from dpmem_ref.interface import Interface
from dpmem_ref.mechanism.randomness import RandomSource
from dpmem_ref.turn.state import InterfaceState

_MAX_DENOMINATOR_BITS = int(MAX_LEDGER_DIGITS * 3.3219280948873626) + 1  # log2(10): a cheap first test


def type_name(value: object) -> str:
    """What a message reports as found for a value of the wrong type: its type, never the
    value (a ledger can come from anywhere; the type is what was wrong)."""
    return type(value).__name__


def require_interface(interface: object) -> Interface:
    if not isinstance(interface, Interface):
        raise InputError("interface", "a dpmem_ref.Interface", type_name(interface))
    return interface


def require_store(interface: Interface, store: object) -> Store:
    if not isinstance(store, Store):
        raise InputError("store", "a dpmem_ref.Store", type_name(store))
    if store.layout is not interface.policy.layout and store.layout != interface.policy.layout:
        raise InputError("store", "a store over the interface's layout", store.name or "another layout")
    return store


def require_strict(strict: object) -> bool:
    if not isinstance(strict, bool):
        raise InputError("strict", "True or False", type_name(strict))
    return strict


def require_query(query: object) -> Query | str:
    if type(query) is not str and not isinstance(query, Query | str):
        raise InputError("query", "a query name (str) or a Query", type_name(query))
    return query


def require_source(source: object) -> RandomSource:
    # Duck-typed, as the Protocol is: isinstance() on a runtime-checkable Protocol costs
    # more than a whole turn's planning.
    if not callable(getattr(source, "randbelow", None)):
        raise InputError("source", "a RandomSource (randbelow(bound) -> int)", type_name(source))
    return source  # type: ignore[return-value]


def require_channel(channel: object) -> None:
    if channel is not None and not callable(getattr(channel, "respond", None)):
        raise InputError("channel", "None or an LLMChannel (respond(query, views, prefix) -> str)", type_name(channel))


def require_exact_ledgers(interface: Interface, ledgers: object, field: str) -> Ledgers:
    """Type and length of a ledger vector, as a tuple of Fractions (`exact_ledgers`; the
    ranges and the size of the denominators are checked on its integer counts,
    `require_ledger_ranges`, which the planner computes anyway)."""
    return exact_ledgers(ledgers, field, len(interface.policy.attributes))


def require_ledger_vector(
    interface: Interface, ledgers: object, field: str, base_scale: int, strict: bool = True
) -> LedgerVector:
    """Caller-given ledgers (`require_exact_ledgers`) as the planner's `LedgerVector` over a
    multiple of `base_scale`, with their ranges checked (`require_ledger_ranges`)."""
    vector = LedgerVector.of(require_exact_ledgers(interface, ledgers, field), base_scale)
    require_ledger_ranges(interface, vector, field, strict)
    return vector


def require_ledger_ranges(interface: Interface, vector: LedgerVector, field: str, strict: bool = True) -> None:
    """0 <= L_a <= B_a for every attribute, on the exact integer counts (L_a = units_a / scale),
    and a common denominator of at most MAX_LEDGER_DIGITS digits (it bounds every ledger's).
    Lenient runs (strict=False: a broken cap rule such as NoCap, run for audits and
    counterexamples) may carry ledgers past B_a; they are still never negative."""
    units, scale = vector
    if scale.bit_length() > _MAX_DENOMINATOR_BITS and digits(scale) > MAX_LEDGER_DIGITS:
        raise InputError(field, f"ledgers whose denominators need at most {MAX_LEDGER_DIGITS} digits", "larger ones")
    caps = interface.cap_units(scale)
    for count, cap in zip(units, caps, strict=True):
        if count < 0 or (strict and count > cap):
            break
    else:
        return
    for index, (count, cap) in enumerate(zip(units, caps, strict=True)):
        if count < 0 or (strict and count > cap):
            attribute = interface.policy.attributes[index]
            raise InputError(
                f"{field}[{index}]",
                f"a ledger in [0, B_{attribute.name}] = [0, {attribute.cap}]" if strict else "a non-negative ledger",
                str(Fraction(count, scale)),
            )


def require_state(interface: Interface, state: object, records: bool = False) -> InterfaceState:
    """A turn index, ledgers and a history tuple. With `records`, every history entry is a
    TurnRecord too, unless the planner built the state (`finish`: its records are the
    kernel's own). That pass is O(T): `run_turn` makes it, where the LLM channel reads the
    history; `begin_turn`, which the exact engine calls at every state it explores, does not
    (routers and controls that read the history take it as given)."""
    if not isinstance(state, InterfaceState):
        raise InputError("state", "a dpmem_ref.InterfaceState", type_name(state))
    check_int(state.turn, "state.turn", low=0, expected="a non-negative integer turn index")
    counts = len(state.vector(1).units)  # exact by construction (`InterfaceState`): the length is left
    if counts != len(interface.policy.attributes):
        raise InputError("state.ledgers", f"{len(interface.policy.attributes)} values, one per attribute in policy order", counts)
    history = state.history
    if not isinstance(history, tuple):
        raise InputError("state.history", "a tuple of TurnRecords", type_name(history))
    if records and not state.built_by_planner:
        for index, record in enumerate(history):
            if not isinstance(record, TurnRecord):
                raise InputError(f"state.history[{index}]", "a TurnRecord", type_name(record))
    return state


def require_prefix(prefix: object) -> PublicPrefix:
    if not isinstance(prefix, PublicPrefix):
        raise InputError("prefix", "a dpmem_ref.PublicPrefix", type_name(prefix))
    if not isinstance(prefix.query, Query):
        raise InputError("prefix.query", "a Query", type_name(prefix.query))
    if not isinstance(prefix.history, tuple) or not all(isinstance(r, TurnRecord) for r in prefix.history):
        raise InputError("prefix.history", "a tuple of TurnRecords", type_name(prefix.history))
    if not isinstance(prefix.released, tuple) or not all(
        isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(name, str) for name in pair)
        for pair in prefix.released
    ):
        raise InputError("prefix.released", "a tuple of (slot, view) name pairs", type_name(prefix.released))
    return prefix


def require_slot(slot: object) -> str:
    if not isinstance(slot, str):
        raise InputError("slot", "a slot name (str)", type_name(slot))
    return slot


def require_queries(queries: object) -> Sequence[Query | str]:
    if isinstance(queries, str) or not isinstance(queries, Sequence):
        raise InputError("queries", "a sequence of query names or Queries", type_name(queries))
    for index, query in enumerate(queries):
        if not isinstance(query, Query | str):
            raise InputError(f"queries[{index}]", "a query name (str) or a Query", type_name(query))
    return queries
