"""Budget periods: which period's scope a turn charges, from a public clock only.

When the served interface declares `[budget] period = "30 days"` (`parts.period`), each
(subject, application) scope has one ledger per period: period k covers calendar time
[origin + k P, origin + (k + 1) P), P the period's length in seconds. The origin is the
clock's time when the epoch first bound the period; it is written once, in the epoch's
entry of the binding log (`epochs`), and only a new recorded epoch starts another. The
period index is therefore a function of the clock and the recorded origin ONLY: never of
memory, of a ledger or of a released history. A period that ended early because its budget
ran out would be a data-dependent reset (its boundary would reveal the spending); here no
boundary can move, so the periods' losses simply add (basic composition): after k periods
an application's scope is (k x share)-DP per attribute and a subject is (k x U_a)-DP; the
kernel's `ComposedGuarantee` states it, with the caveat (`parts.period.CAVEAT`).

The clock is injectable (`AgentRuntime.open(clock=...)`, default `time.time`): tests cross
period boundaries with a fake clock.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.validate import check_real
from dpmem_ref.parts.period import BudgetPeriod

Clock = Callable[[], float]

SECONDS = {"hours": 3_600, "days": 86_400, "weeks": 604_800}


def period_seconds(period: BudgetPeriod) -> int:
    """P: the period's length in seconds (calendar time, public)."""
    return period.length * SECONDS[period.unit]


def read_clock(clock: Clock) -> Fraction:
    """The clock's time in seconds, exact (a finite, non-negative real)."""
    value = check_real(clock(), "clock", low=0, expected="a finite, non-negative time in seconds (time.time)")
    return Fraction(value)


def period_index(origin: int, now: Fraction, period: BudgetPeriod) -> int:
    """k with origin + k P <= now < origin + (k + 1) P. Its only inputs are the recorded
    origin, the clock's time and the declared period: public, so a boundary cannot depend
    on memory or on the ledgers. A time before the origin is refused (a clock set back)."""
    if now < origin:
        raise InputError("clock", "a time at or after the recorded period origin", "an earlier time")
    return math.floor((now - origin) / period_seconds(period))


def epoch_origins(log: list[dict[str, Any]]) -> dict[int, tuple[int, str]]:
    """Epoch -> (origin, period label): the first logged origin of each epoch. Later entries
    of the same epoch (carried-over changes) never move it."""
    out: dict[int, tuple[int, str]] = {}
    for entry in log:
        origin, label = entry.get("origin"), entry.get("period")
        if origin is None:
            continue
        if type(origin) is not int or origin < 0 or not isinstance(label, str):
            raise InputError("runtime.epochs", "a period origin the runtime wrote (whole seconds)", "an edited log")
        out.setdefault(int(entry["epoch"]), (origin, label))
    return out


def epoch_ends(log: list[dict[str, Any]]) -> dict[int, int]:
    """Epoch -> the clock time the next epoch started at (logged as "at"), where logged."""
    starts: dict[int, int] = {}
    for entry in log:
        at = entry.get("at")
        if type(at) is int and at >= 0:
            starts.setdefault(int(entry["epoch"]), at)
    return {epoch - 1: at for epoch, at in starts.items() if epoch > 0}


__all__ = ["SECONDS", "Clock", "epoch_ends", "epoch_origins", "period_index", "period_seconds", "read_clock"]
