"""Text encodings of the public records a ledger store persists (turns, charge sets).

Exact values only: fractions as "p/q" text, tagged JSON for tuples and frozensets. The
same encoding and validation run for every backend, the in-memory one included.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Hashable, Sequence
from fractions import Fraction
from typing import Any

import attrs

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.ledger.contract import LedgerStoreError
from dpmem_ref.ledger.facts import SessionKey, SessionSnapshot, SlotRelease

MAX_RECORD_BYTES = 1 << 20
MAX_FRACTION_TEXT = 401  # "p/q" of at most 200 digits each: bounded work on a corrupted row
_FRACTION_TEXT = re.compile(r"^(0|[1-9][0-9]*)/([1-9][0-9]*)$")


def fraction_to_text(value: Fraction) -> str:
    """Exact ledger text "p/q" (denominator always written)."""
    return f"{value.numerator}/{value.denominator}"


def fraction_from_text(text: object, where: str) -> Fraction:
    if not isinstance(text, str):
        raise LedgerStoreError(f"{where}: expected exact 'p/q' text, found {type(text).__name__}")
    if len(text) > MAX_FRACTION_TEXT:
        raise LedgerStoreError(f"{where}: a 'p/q' value of more than {MAX_FRACTION_TEXT} characters")
    match = _FRACTION_TEXT.fullmatch(text)
    if match is None:
        raise LedgerStoreError(f"{where}: expected exact non-negative 'p/q' text")
    return Fraction(int(match.group(1)), int(match.group(2)))


def _encode_public(value: object, field: str) -> Any:
    """JSON for public values (controls): tagged tuples, frozensets and fractions."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, Fraction):
        return {"q": fraction_to_text(value)} if value >= 0 else {"q-": fraction_to_text(-value)}
    if isinstance(value, tuple):
        return {"t": [_encode_public(v, field) for v in value]}
    if isinstance(value, frozenset):
        return {"s": sorted((_encode_public(v, field) for v in value), key=json.dumps)}
    raise InputError(
        field, "a public value built from None, bool, int, str, Fraction, tuple, frozenset", type(value).__name__
    )


def _decode_public(value: Any, field: str) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((tag, inner),) = value.items()
        if tag == "q":
            return fraction_from_text(inner, field)
        if tag == "q-":
            return -fraction_from_text(inner, field)
        if tag == "t" and isinstance(inner, list):
            return tuple(_decode_public(v, field) for v in inner)
        if tag == "s" and isinstance(inner, list):
            return frozenset(_decode_public(v, field) for v in inner)
    raise LedgerStoreError(f"{field}: unreadable public value")


def encode_turn(record: TurnRecord) -> str:
    data = {
        "query": record.query,
        "views": [[slot, view] for slot, view in record.views],
        "control": _encode_public(record.control, "control"),
        "response": record.response,
        "admitted": list(record.admitted),
        "charges": [[slot, sorted(charge), fraction_to_text(eps)] for slot, charge, eps in record.charges],
    }
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    if len(text) > MAX_RECORD_BYTES:
        raise InputError("turn record", f"at most {MAX_RECORD_BYTES} bytes", len(text))
    return text


def decode_turn(text: str) -> TurnRecord:
    try:
        data = json.loads(text)
        control: Hashable = _decode_public(data["control"], "turns.control")
        return TurnRecord(
            query=str(data["query"]),
            views=tuple((str(s), str(v)) for s, v in data["views"]),
            control=control,
            response=str(data["response"]),
            admitted=tuple(bool(a) for a in data["admitted"]),
            charges=tuple(
                (str(s), frozenset(str(a) for a in c), fraction_from_text(e, "turns.charges"))
                for s, c, e in data["charges"]
            ),
        )
    except LedgerStoreError:
        raise
    except (ValueError, KeyError, TypeError, RecursionError) as error:
        raise LedgerStoreError(f"turns.record: unreadable turn record ({type(error).__name__})") from None


def encode_charge_set(charge_set: frozenset[str]) -> str:
    return json.dumps(sorted(charge_set))


def release_values(key: SessionKey, row: SlotRelease) -> tuple[Any, ...]:
    """The bound values of a `releases` INSERT (user, interaction, then the row's fields in
    `decode_release`'s order after seq); both SQL stores bind `admitted` as a bool."""
    return (
        key.user,
        key.interaction,
        row.release_id,
        row.turn_id,
        row.index,
        row.slot,
        row.view,
        row.admitted,
        encode_charge_set(row.charge_set),
        fraction_to_text(row.epsilon),
    )


def decode_release(row: Sequence[Any]) -> SlotRelease:
    """A `releases` row (seq, release_id, turn_id, index, slot, view, admitted, charge_set, eps)."""
    try:
        seq, release_id, turn_id, index, slot, view, admitted, charge_set, epsilon = row
        charges = json.loads(charge_set)
    except (ValueError, TypeError):
        raise LedgerStoreError("releases: unreadable release row") from None
    if not isinstance(charges, list) or not all(isinstance(a, str) for a in charges):
        raise LedgerStoreError("releases.charge_set: expected a list of attribute names")
    return SlotRelease(
        seq=int(seq),
        release_id=str(release_id),
        turn_id=str(turn_id),
        index=int(index),
        slot=str(slot),
        view=str(view),
        admitted=bool(admitted),
        charge_set=frozenset(charges),
        epsilon=fraction_from_text(epsilon, "releases.epsilon"),
    )


@attrs.define
class LoadCache:
    """Release and turn rows a session object has already decoded: the tables are
    append-only, so each load reads only the rows past `release_seq` / `turn_seq`."""

    release_seq: int = 0
    turn_seq: int = 0
    served: tuple[int, str, int, str] = (0, "", 0, "")  # row counts and digests (`checkpoint.served_rows`)
    releases: list[SlotRelease] = attrs.field(factory=list)
    history: list[TurnRecord] = attrs.field(factory=list)
    lock: threading.Lock = attrs.field(factory=threading.Lock)

    def snapshot(
        self,
        release_rows: Sequence[Sequence[Any]],
        turn_rows: Sequence[Sequence[Any]],
        spent: dict[str, Fraction],
        caps: dict[str, Fraction],
    ) -> SessionSnapshot:
        """Decode the new rows (release columns as `decode_release` reads them; turns as
        (seq, turn_id, record)), append them, and return the session's whole snapshot."""
        new_releases = [decode_release(row) for row in release_rows]
        new_turns = [decode_turn(str(row[-1])) for row in turn_rows]
        self.releases.extend(new_releases)
        self.history.extend(new_turns)
        if new_releases:
            self.release_seq = new_releases[-1].seq
        if turn_rows:
            self.turn_seq = int(turn_rows[-1][0])
        return SessionSnapshot(
            ledgers=tuple(sorted(spent.items())),
            caps=tuple(sorted(caps.items())),
            history=tuple(self.history),
            releases=tuple(self.releases),
        )
