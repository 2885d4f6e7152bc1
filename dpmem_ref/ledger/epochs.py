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
from dpmem_ref.ledger.codecs import fraction_to_text
from dpmem_ref.ledger.contract import LedgerStore
from dpmem_ref.ledger.evolution import Change, classify
from dpmem_ref.ledger.facts import SessionKey
from dpmem_ref.ledger.fingerprint import interface_description, interface_fingerprint
from dpmem_ref.ledger.periods import epoch_ends, epoch_origins, period_index
from dpmem_ref.ledger.scopes import ScopeKey
from dpmem_ref.parts.period import CAVEAT, BudgetPeriod, ComposedGuarantee

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
    if interface.period is not None:  # which scopes hold the budget: a change needs a new epoch
        record["period"] = interface.period.label
    if shares is not None:
        record["shares"] = {
            app: {a: fraction_to_text(c) for a, c in sorted(share.items())} for app, share in sorted(shares.items())
        }
    return record


def _text(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def epoch_log(ledger_store: LedgerStore) -> list[dict[str, Any]]:
    text = ledger_store.read_meta(EPOCHS_KEY)
    if text is None:
        return []
    try:
        log = json.loads(text)
    except ValueError:
        raise InputError(EPOCHS_KEY, "the binding log the runtime wrote (JSON)", "an edited row") from None
    if not isinstance(log, list) or not all(isinstance(entry, dict) for entry in log):
        raise InputError(EPOCHS_KEY, "the binding log the runtime wrote (a list of entries)", "an edited row")
    return log


def current_epoch(ledger_store: LedgerStore) -> int:
    """The current budget epoch: the last one the binding log started. Epochs start at 0 and
    only move forward, one at a time; the `runtime.epoch` row must agree with the log, so a
    single edited meta row (a negative or an earlier epoch, or a fresh one without a logged
    reason) is refused in one line instead of granting fresh scopes."""
    log = epoch_log(ledger_store)
    text = ledger_store.read_meta(EPOCH_KEY)
    if not log:
        if text not in (None, "0"):
            raise InputError(EPOCH_KEY, "epoch 0 (the binding log records no epoch start)", "another value (an edited row)")
        return 0
    found = [entry.get("epoch") for entry in log]
    epochs = [e for e in found if type(e) is int and e >= 0]
    if len(epochs) != len(found) or epochs[0] != 0:
        raise InputError(EPOCHS_KEY, "a binding log of epochs from 0 up", "an edited log")
    if any(b not in (a, a + 1) for a, b in zip(epochs, epochs[1:], strict=False)):
        raise InputError(EPOCHS_KEY, "epochs that only move forward, one at a time", "an edited log")
    last = epochs[-1]
    if text != str(last):
        raise InputError(EPOCH_KEY, f"the epoch the binding log last started ({last})", "another value (an edited row)")
    return last


def epoch_guarantee(
    log: list[dict[str, Any]],
    interface: Interface,
    user_caps: Mapping[str, Fraction] | None,
    now: Fraction | None = None,
    shares: Mapping[str, Mapping[str, Fraction]] | None = None,
) -> dict[str, Any]:
    """The total guarantee over every epoch started and, within an epoch that declares a
    budget period, every period elapsed (basic composition: the caps add up; each epoch's
    k periods compose to k x cap through the kernel's `ComposedGuarantee`), and the epochs
    started with no interface change (`fresh_budget`). An epoch logged before the caps were
    recorded counts with the current caps. An epoch with a period counts the periods from
    its origin to the next epoch's logged start, or to `now` (an upper bound where the next
    start was not logged). With a period, "current_epoch" states the current epoch's
    composed bound per application share, per application (B_a) and per subject (U_a), one
    line each with the caveat."""
    starts: dict[int, dict[str, Any]] = {}
    for entry in log:
        starts.setdefault(int(entry["epoch"]), entry)
    origins, ends = epoch_origins(log), epoch_ends(log)
    current = {a: fraction_to_text(c) for a, c in interface.caps.items()}
    users = None if user_caps is None else {a: fraction_to_text(c) for a, c in user_caps.items()}
    per_app = {a: Fraction(0) for a in interface.caps}
    per_user: dict[str, Fraction] | None = None if users is None else {a: Fraction(0) for a in users}
    elapsed: dict[int, int] = {}

    def composed(epoch: int, cap: Fraction) -> Fraction:
        found = origins.get(epoch)
        if found is None:
            return ComposedGuarantee(1, None, cap).composed
        return ComposedGuarantee(elapsed[epoch], BudgetPeriod.parse(found[1]), cap).composed

    for epoch, (origin, label) in origins.items():
        end = Fraction(ends[epoch]) if epoch in ends else now
        if end is None:
            raise InputError("clock", "the runtime's clock (periods elapsed)", "none")
        elapsed[epoch] = period_index(origin, end, BudgetPeriod.parse(label)) + 1
    for epoch, entry in starts.items():
        caps = entry.get("caps") or current
        for a in per_app:
            per_app[a] += composed(epoch, Fraction(caps.get(a, current[a])))
        if per_user is not None and users is not None:
            epoch_users = entry.get("user_caps") or users
            for a in per_user:
                per_user[a] += composed(epoch, Fraction(epoch_users.get(a, users[a])))
    report: dict[str, Any] = {
        "epochs": len(starts),
        "fresh_budget_epochs": sorted(e for e, entry in starts.items() if entry.get("fresh_budget")),
        "per_application": {a: fraction_to_text(v) for a, v in sorted(per_app.items())},
        "per_user": None if per_user is None else {a: fraction_to_text(v) for a, v in sorted(per_user.items())},
    }
    if origins:
        report["periods_per_epoch"] = {str(e): k for e, k in sorted(elapsed.items())}
        report["caveat"] = CAVEAT
    last = max(starts, default=0)
    if last in origins and interface.period is not None:
        report["current_epoch"] = _current_periods(last, origins[last][0], elapsed[last], interface, user_caps, shares)
    return report


def _current_periods(
    epoch: int,
    origin: int,
    periods: int,
    interface: Interface,
    user_caps: Mapping[str, Fraction] | None,
    shares: Mapping[str, Mapping[str, Fraction]] | None,
) -> dict[str, Any]:
    """The current epoch's k periods: k x share per application, k x B_a, k x U_a."""
    period = interface.period

    def bound(cap: Fraction) -> ComposedGuarantee:
        return ComposedGuarantee(periods, period, cap)

    lines = []
    per_share: dict[str, dict[str, str]] = {}
    for app, share in sorted((shares or {}).items()):
        per_share[app] = {}
        for a, cap in sorted(share.items()):
            per_share[app][a] = fraction_to_text(bound(cap).composed)
            lines.append(f"application {app}, {a}: {bound(cap).line(f'share({app}, {a})')}")
    if shares is None:
        lines += [f"each application, {a}: {bound(cap).line(f'B_{a}')}" for a, cap in sorted(interface.caps.items())]
    if user_caps is not None:
        lines += [f"each subject (all applications), {a}: {bound(cap).line(f'U_{a}')}" for a, cap in sorted(user_caps.items())]
    return {
        "epoch": epoch,
        "period": None if period is None else period.label,
        "origin": origin,
        "period_index": periods - 1,
        "periods": periods,
        "per_share": per_share or None,
        "per_application": {a: fraction_to_text(bound(cap).composed) for a, cap in sorted(interface.caps.items())},
        "per_user": None if user_caps is None else {a: fraction_to_text(bound(c).composed) for a, c in sorted(user_caps.items())},
        "lines": lines,
        "caveat": CAVEAT,
    }


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
    fresh_budget: bool = False,
    now: int | None = None,
) -> tuple[int, list[Change]]:
    """Bind `ledger_store` to `interface`; returns the budget epoch to serve and the changes found.
    A new epoch over an unchanged interface resets every budget: it needs `fresh_budget`,
    and is logged as such (`epoch_guarantee` reports it with the total over epochs).
    `now` (whole seconds of the runtime's clock): logged as "at" with every new entry, and,
    when the interface declares a budget period and the epoch has no origin yet, as the
    epoch's period origin ("origin", written once: `periods`)."""
    if new_epoch is not None:
        check_reason(new_epoch)
    elif fresh_budget:
        raise InputError("--fresh-budget", "--new-epoch REASON with it (a new epoch over an unchanged interface)", "no --new-epoch")
    fingerprint = interface_fingerprint(interface)
    record = interface_record(interface, user_caps, shares)
    stored = ledger_store.fingerprint
    entry: dict[str, Any] = {"fingerprint": fingerprint, "caps": {a: fraction_to_text(c) for a, c in interface.caps.items()}}
    if user_caps is not None:
        entry["user_caps"] = {a: fraction_to_text(c) for a, c in user_caps.items()}
    if now is not None:
        entry["at"] = now

    def with_origin(epoch: int, log: list[dict[str, Any]]) -> None:
        """The epoch's period origin, in this entry, unless the log already holds one."""
        if interface.period is not None and epoch not in epoch_origins(log):
            if now is None:
                raise InputError("clock", "the runtime's clock (a period origin to record)", "none")
            entry.update(period=interface.period.label, origin=now)

    if stored is None:
        entry.update(epoch=0, reason=new_epoch or "created", changes=[])
        with_origin(0, [])
        meta = {RECORD_KEY: _text(record), EPOCH_KEY: "0", EPOCHS_KEY: _text([entry])}
        ledger_store.rebind(None, fingerprint, meta)
        return 0, []
    epoch = current_epoch(ledger_store)
    old_text = ledger_store.read_meta(RECORD_KEY)
    old = None if old_text is None else json.loads(old_text)
    if stored == fingerprint and old is None:
        old = record  # a database of `dpmem run` sessions: same interface, nothing to compare
    changes = [] if (stored == fingerprint and old == record) else classify(old, record)
    log = epoch_log(ledger_store)
    if not changes and new_epoch is None:
        with_origin(epoch, log)
        if "origin" in entry:  # a period first served in this epoch (a database of `dpmem run` sessions)
            entry.update(epoch=epoch, reason="period origin", changes=[])
            meta = {RECORD_KEY: _text(record), EPOCH_KEY: str(epoch), EPOCHS_KEY: _text([*log, entry])}
            ledger_store.rebind(stored, fingerprint, meta)
        elif old_text is None:
            ledger_store.rebind(stored, fingerprint, {RECORD_KEY: _text(record)})
        return epoch, []
    if new_epoch is not None:
        if not changes and not fresh_budget:
            raise InputError(
                "--new-epoch",
                "an interface change to start a new epoch for (or --fresh-budget: reset every budget on purpose)",
                "an unchanged interface",
            )
        entry.update(epoch=epoch + 1, reason=new_epoch, changes=[c.to_json() for c in changes])
        if not changes:
            entry["fresh_budget"] = True
        with_origin(epoch + 1, log)
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
    with_origin(epoch, log)
    meta = {RECORD_KEY: _text(record), EPOCHS_KEY: _text([*log, entry])}

    def caps_for(key: SessionKey) -> Mapping[str, Fraction] | None:
        scope = ScopeKey.parse(key)
        if scope is None:
            return interface.caps  # a `dpmem run` session of the same database
        if scope.epoch != epoch:
            return None  # an earlier epoch: kept as recorded
        if scope.app is None:
            return user_caps  # a per-user session of a database written before shares
        if shares is None:
            return interface.caps
        return shares.get(scope.app)  # an application without a share now: kept as recorded

    ledger_store.rebind(stored, fingerprint, meta, caps_for=caps_for)
    return epoch, changes
