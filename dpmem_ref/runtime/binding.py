"""Binding a ledger database to the interface the runtime serves, across interface changes.

The database records the interface it serves (`runtime.interface`: the canonical
description and the per-user caps), the current budget epoch (`runtime.epoch`) and the
log of every binding change (`runtime.epochs`: epoch, fingerprint, reason, changes).
`bind` compares the recorded interface with the one being opened (`evolution.classify`):
no change -> nothing to do; only safe changes -> the ledgers carry over (one `rebind`
transaction, caps re-checked, C5); an unsafe change -> refused unless `new_epoch` gives a
reason, which starts epoch + 1 (fresh scopes; the old ones stay, recorded).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from dpmem_ref.core.errors import InputError
from dpmem_ref.interface import Interface
from dpmem_ref.ledger.contract import LedgerStore, SessionKey, fraction_to_text
from dpmem_ref.ledger.fingerprint import interface_description, interface_fingerprint
from dpmem_ref.runtime.evolution import Change, classify
from dpmem_ref.runtime.scopes import parse_scope

RECORD_KEY = "runtime.interface"
EPOCH_KEY = "runtime.epoch"
EPOCHS_KEY = "runtime.epochs"
MAX_REASON = 200


def interface_record(
    interface: Interface,
    user_caps: Mapping[str, Fraction] | None,
    shares: Mapping[str, Mapping[str, Fraction]] | None = None,
) -> dict[str, Any]:
    caps = None if user_caps is None else {a: fraction_to_text(c) for a, c in sorted(user_caps.items())}
    record: dict[str, Any] = {"interface": interface_description(interface), "user_caps": caps}
    if shares is not None:
        record["shares"] = {
            app: {a: fraction_to_text(c) for a, c in sorted(share.items())} for app, share in sorted(shares.items())
        }
    return record


def _text(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def current_epoch(ledger_store: LedgerStore) -> int:
    text = ledger_store.read_meta(EPOCH_KEY)
    return 0 if text is None else int(text)


def epoch_log(ledger_store: LedgerStore) -> list[dict[str, Any]]:
    text = ledger_store.read_meta(EPOCHS_KEY)
    return [] if text is None else list(json.loads(text))


def check_reason(reason: object) -> str:
    if not isinstance(reason, str) or not reason.strip() or len(reason) > MAX_REASON or not reason.isprintable():
        raise InputError("--new-epoch", f"a printable reason of 1..{MAX_REASON} characters", "an unusable reason")
    return reason


def bind(
    ledger_store: LedgerStore,
    interface: Interface,
    user_caps: Mapping[str, Fraction] | None,
    new_epoch: str | None,
    shares: Mapping[str, Mapping[str, Fraction]] | None = None,
) -> tuple[int, list[Change]]:
    """Bind `ledger_store` to `interface`; returns the budget epoch to serve and the changes found."""
    if new_epoch is not None:
        check_reason(new_epoch)
    fingerprint = interface_fingerprint(interface)
    record = interface_record(interface, user_caps, shares)
    stored = ledger_store.fingerprint
    entry: dict[str, Any] = {"fingerprint": fingerprint}
    if stored is None:
        entry.update(epoch=0, reason=new_epoch or "created", changes=[])
        meta = {RECORD_KEY: _text(record), EPOCH_KEY: "0", EPOCHS_KEY: _text([entry])}
        ledger_store.rebind(None, fingerprint, meta)
        return 0, []
    epoch = current_epoch(ledger_store)
    old_text = ledger_store.read_meta(RECORD_KEY)
    old = None if old_text is None else json.loads(old_text)
    if stored == fingerprint and old is None:
        old = record  # a database of `dpmem run` sessions: same interface, nothing to compare
    changes = [] if (stored == fingerprint and old == record) else classify(old, record)
    if not changes and new_epoch is None:
        if old_text is None:
            ledger_store.rebind(stored, fingerprint, {RECORD_KEY: _text(record)})
        return epoch, []
    log = epoch_log(ledger_store)
    if new_epoch is not None:
        entry.update(epoch=epoch + 1, reason=new_epoch, changes=[c.to_json() for c in changes])
        meta = {RECORD_KEY: _text(record), EPOCH_KEY: str(epoch + 1), EPOCHS_KEY: _text([*log, entry])}
        ledger_store.rebind(stored, fingerprint, meta)
        return epoch + 1, changes
    unsafe = [c for c in changes if not c.safe]
    if unsafe:
        raise InputError(
            "interface",
            "a change that carries the ledgers over, or a new budget epoch (--new-epoch REASON)",
            f"unsafe change {unsafe[0].kind} ({unsafe[0].detail}; {len(unsafe)} unsafe)",
        )
    entry.update(epoch=epoch, reason="carried over", changes=[c.to_json() for c in changes])
    meta = {RECORD_KEY: _text(record), EPOCHS_KEY: _text([*log, entry])}

    def caps_for(key: SessionKey) -> Mapping[str, Fraction] | None:
        scope = parse_scope(key.interaction)
        if scope is None:
            return interface.caps  # a `dpmem run` session of the same database
        if scope[0] != epoch:
            return None  # an earlier epoch: kept as recorded
        if scope[1] is None:
            return user_caps  # a per-user session of a database written before shares
        if shares is None:
            return interface.caps
        return shares.get(scope[1])  # an application without a share now: kept as recorded

    ledger_store.rebind(stored, fingerprint, meta, caps_for=caps_for)
    return epoch, changes
