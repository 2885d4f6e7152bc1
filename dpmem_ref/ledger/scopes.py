"""Budget scopes in the ledger stores (docs/agent.md): one charge debiting several
sessions in one transaction, caps carried over an interface change, extra meta rows.

Kept apart from `contract` so the single-scope contract reads as before; every backend
calls these helpers under its own lock or transaction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.validate import PRINTABLE_ASCII
from dpmem_ref.ledger.contract import (
    ReleaseRequest,
    SessionKey,
    check_caps,
    check_fingerprint,
    committed_charge,
)


def committed_scopes(
    scopes: Sequence[tuple[Mapping[str, Fraction], Mapping[str, Fraction]]], request: ReleaseRequest
) -> list[dict[str, Fraction]] | None:
    """`committed_charge` for every scope (spent, caps) of one multi-scope charge: the
    ledgers after it, in order, or None when any scope refuses (then none is charged)."""
    after = [committed_charge(spent, caps, request) for spent, caps in scopes]
    if any(scope is None for scope in after):
        return None
    return [scope for scope in after if scope is not None]


def check_scope_keys(key: SessionKey, also: Sequence[SessionKey]) -> tuple[SessionKey, ...]:
    """The scopes of one charge: this session first, then `also`, each once."""
    keys = (key, *also)
    if not all(isinstance(k, SessionKey) for k in keys) or len(set(keys)) != len(keys):
        raise InputError("also", "distinct SessionKeys other than this session's", [str(k) for k in also])
    return keys


def rebound_caps(
    spent: Mapping[str, Fraction], caps: Mapping[str, Fraction], where: str
) -> dict[str, tuple[Fraction, Fraction]]:
    """A session's (spent, cap) per attribute under new caps (an interface change that
    carries the ledgers over, docs/agent.md): a new attribute starts at 0, a removed
    one or a cap below what was spent is refused (C5: L_a <= B_a on every path)."""
    checked = check_caps(caps)
    dropped = sorted(set(spent) - set(checked))
    if dropped:
        raise InputError(f"{where}.caps", "every attribute the ledgers already count", f"no cap for {dropped}")
    out = {a: (spent.get(a, Fraction(0)), cap) for a, cap in checked.items()}
    over = sorted(a for a, (s, cap) in out.items() if s > cap)
    if over:
        raise InputError(f"{where}.caps", "caps at least the spent ledgers (C5)", f"below the ledger for {over}")
    return out


META_PREFIX = "runtime."


def check_meta_key(key: object) -> str:
    """Extra meta rows (the runtime's interface record and budget epochs) live under
    META_PREFIX, apart from the store's own 'schema' and 'fingerprint' rows."""
    if not isinstance(key, str) or not key.startswith(META_PREFIX) or not PRINTABLE_ASCII.issuperset(key):
        raise InputError("meta key", f"printable ASCII text starting with {META_PREFIX!r}", key)
    return key


def checked_rebind(fingerprint: str, meta: Mapping[str, str]) -> dict[str, str]:
    """The arguments of every store's `rebind`, checked before any transaction opens: the new
    fingerprint, and the meta rows under META_PREFIX (as text)."""
    check_fingerprint(fingerprint)
    return {check_meta_key(k): str(v) for k, v in meta.items()}


def grouped_ledgers(
    rows: Sequence[Sequence[object]],
) -> list[tuple[str, dict[str, Fraction], dict[str, Fraction]]]:
    """(interaction, attribute, spent, cap) rows -> one (interaction, spent, caps) per session."""
    from dpmem_ref.ledger.contract import fraction_from_text

    out: dict[str, tuple[dict[str, Fraction], dict[str, Fraction]]] = {}
    for interaction, attribute, spent, cap in rows:
        spent_map, caps_map = out.setdefault(str(interaction), ({}, {}))
        spent_map[str(attribute)] = fraction_from_text(spent, "ledgers.spent")
        caps_map[str(attribute)] = fraction_from_text(cap, "ledgers.cap")
    return [(interaction, spent_map, caps_map) for interaction, (spent_map, caps_map) in sorted(out.items())]
