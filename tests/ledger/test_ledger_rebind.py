"""`rebind` (the session template's `LedgerBackend.rebind`) on every row of `urls.SCHEMES`.

An interface change that carries the ledgers over is ONE transaction: the fingerprint
compare-and-set, the meta rows, every named session's new caps (new attributes at 0, a cap
below what was spent refused: C5) and the "rebind" chain event commit together, and a
refused rebind writes nothing, on the in-process store (no rollback) as on the databases.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.ledger import LedgerStore, LedgerStoreError, SessionKey, SQLiteLedgerStore
from dpmem_ref.ledger.anchor import read_anchor
from dpmem_ref.ledger.chain import rebind_body
from dpmem_ref.ledger.urls import SCHEMES
from tests.ledger.test_ledger_contract import CAPS, make_store, req

FP_A, FP_B, FP_C = "a" * 64, "b" * 64, "c" * 64
NEW_CAPS = {"diabetes": Fraction(3, 2), "debt": Fraction(2), "pregnancy": Fraction(1)}


@pytest.fixture(params=[scheme.name for scheme in SCHEMES])
def ledger_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LedgerStore]:
    opened = make_store(request.param, tmp_path)
    yield opened
    opened.close()


def chain(ledger_store: LedgerStore) -> list[tuple[Any, ...]]:
    """The chain events (seq, kind, body) of a database; [] for the in-process store."""
    query = "SELECT seq, kind, body FROM {} ORDER BY seq"
    if isinstance(ledger_store, SQLiteLedgerStore):
        with ledger_store.reading() as connection:
            return connection.execute(query.format("chain")).fetchall()
    run = getattr(ledger_store, "run", None)  # PostgresLedgerStore (psycopg is an optional extra)
    if run is None:
        return []
    return [tuple(row) for row in run(lambda c: c.execute(query.format("dpmem_chain")).fetchall())]


def state(ledger_store: LedgerStore) -> tuple[object, ...]:
    """Everything a rebind may write: the binding, the meta rows, every ledger and cap, the chain."""
    ledgers = [ledger_store.user_ledgers(user) for user in ("u", "v")]
    return ledger_store.fingerprint, ledger_store.read_meta("runtime.epoch"), ledgers, chain(ledger_store)


def three_sessions(ledger_store: LedgerStore) -> None:
    """(u, i) and (v, i) charged 2/3 on diabetes, (u, j) untouched; bound to FP_A."""
    for user, interaction in (("u", "i"), ("u", "j"), ("v", "i")):
        opened = ledger_store.open_session(user, interaction, CAPS, fingerprint=FP_A)
        if interaction == "i":
            assert opened.charge_and_record(req()).admitted


def test_rebind_carries_the_named_sessions_and_records_it(ledger_store: LedgerStore) -> None:
    three_sessions(ledger_store)
    ledger_store.rebind(FP_A, FP_B, {"runtime.epoch": "1"}, caps_for=lambda k: None if k.user == "v" else NEW_CAPS)
    assert ledger_store.fingerprint == FP_B and ledger_store.read_meta("runtime.epoch") == "1"
    two_thirds, zero = Fraction(2, 3), Fraction(0)
    assert ledger_store.user_ledgers("u") == [
        ("i", {"diabetes": two_thirds, "debt": zero, "pregnancy": zero}, NEW_CAPS),
        ("j", {"diabetes": zero, "debt": zero, "pregnancy": zero}, NEW_CAPS),
    ]
    assert ledger_store.user_ledgers("v") == [("i", {"diabetes": two_thirds, "debt": zero}, CAPS)]  # None: kept
    with pytest.raises(InputError, match="^caps: "):
        ledger_store.open_session("u", "i", CAPS, fingerprint=FP_B)  # the new caps are the precommitted ones
    session = ledger_store.open_session("u", "i", NEW_CAPS, fingerprint=FP_B)
    assert session.charge_and_record(req(frozenset({"pregnancy"}))).admitted
    events = chain(ledger_store)
    if events:
        carried = [
            (SessionKey("u", "i"), {"diabetes": two_thirds, "debt": zero, "pregnancy": zero}, NEW_CAPS),
            (SessionKey("u", "j"), {"diabetes": zero, "debt": zero, "pregnancy": zero}, NEW_CAPS),
        ]
        assert events[-2][1:] == ("rebind", rebind_body(FP_A, FP_B, {"runtime.epoch": "1"}, carried))
        assert json.loads(events[-2][2])["expected"] == FP_A


def test_a_cap_may_fall_to_what_was_spent_and_not_below(ledger_store: LedgerStore) -> None:
    """Tight (C5, L_a <= B_a): the cap equal to the spent 2/3 carries; 2/3 - 1/10^9 is refused."""
    three_sessions(ledger_store)
    below = {"diabetes": Fraction(2, 3) - Fraction(1, 10**9), "debt": Fraction(2)}
    with pytest.raises(InputError, match=r"^session u/i\.caps: expected caps at least the spent ledgers \(C5\)"):
        ledger_store.rebind(FP_A, FP_B, {}, caps_for=lambda k: below if k == SessionKey("u", "i") else None)
    exact = {"diabetes": Fraction(2, 3), "debt": Fraction(2)}
    ledger_store.rebind(FP_A, FP_B, {}, caps_for=lambda k: exact if k == SessionKey("u", "i") else None)
    assert ledger_store.user_ledgers("u")[0] == ("i", {"diabetes": Fraction(2, 3), "debt": Fraction(0)}, exact)


def test_a_session_left_out_of_a_rebind_keeps_its_caps_and_the_later_ones_carry(ledger_store: LedgerStore) -> None:
    """`caps_for` None for the first session (in key order) leaves only that one as it was."""
    three_sessions(ledger_store)
    ledger_store.rebind(FP_A, FP_B, {}, caps_for=lambda k: None if k == SessionKey("u", "i") else NEW_CAPS)
    two_thirds, zero = Fraction(2, 3), Fraction(0)
    assert ledger_store.user_ledgers("u") == [
        ("i", {"diabetes": two_thirds, "debt": zero}, CAPS),
        ("j", {"diabetes": zero, "debt": zero, "pregnancy": zero}, NEW_CAPS),
    ]
    assert ledger_store.user_ledgers("v") == [
        ("i", {"diabetes": two_thirds, "debt": zero, "pregnancy": zero}, NEW_CAPS)
    ]


def _raises(key: SessionKey) -> Mapping[str, Fraction] | None:
    if key.user == "v":
        raise RuntimeError("caps_for failed")
    return NEW_CAPS


def _last_session(caps: Mapping[str, Any]) -> Callable[[SessionKey], Mapping[str, Any] | None]:
    """New caps for every session, `caps` for (v, i): the one carried last on every backend."""
    return lambda key: caps if key.user == "v" else NEW_CAPS


REFUSED: dict[str, tuple[Callable[[LedgerStore], None], type[Exception], str]] = {
    "another interface": (lambda s: s.rebind(FP_C, FP_B, {"runtime.epoch": "1"}), InputError, "different interface"),
    "a cap below the spent ledger": (
        lambda s: s.rebind(FP_A, FP_B, {"runtime.epoch": "1"}, _last_session({"diabetes": Fraction(1, 2), "debt": 2})),
        InputError, r"^session v/i\.caps: .*below the ledger for \['diabetes'\]",
    ),
    "a counted attribute dropped": (
        lambda s: s.rebind(FP_A, FP_B, {"runtime.epoch": "1"}, _last_session({"diabetes": Fraction(2)})),
        InputError, re.escape("session v/i.caps: expected every attribute the ledgers already count, "
                              "found \"no cap for ['debt']\"") + "$",
    ),
    "a bad cap": (
        lambda s: s.rebind(FP_A, FP_B, {"runtime.epoch": "1"}, _last_session({**CAPS, "debt": Fraction(0)})),
        InputError, r"^caps\.debt: ",
    ),
    "caps_for raises": (lambda s: s.rebind(FP_A, FP_B, {"runtime.epoch": "1"}, _raises), RuntimeError, "caps_for"),
    "a meta key outside runtime.": (lambda s: s.rebind(FP_A, FP_B, {"epoch": "1"}), InputError, "^meta key: "),
    "a bad fingerprint": (lambda s: s.rebind(FP_A, "B" * 64, {"runtime.epoch": "1"}), InputError, "fingerprint"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_refused_rebind_writes_nothing(ledger_store: LedgerStore, case: str) -> None:
    three_sessions(ledger_store)
    before = state(ledger_store)
    action, error, words = REFUSED[case]
    with pytest.raises(error, match=words):
        action(ledger_store)
    assert state(ledger_store) == before
    ledger_store.rebind(FP_A, FP_B, {"runtime.epoch": "1"}, caps_for=lambda k: NEW_CAPS)  # then a good one commits
    assert ledger_store.fingerprint == FP_B and ledger_store.user_ledgers("v")[0][2] == NEW_CAPS


@pytest.mark.parametrize("history", ["a charge", "a turn"])
def test_binding_history_of_an_unknown_interface_needs_the_migration(ledger_store: LedgerStore, history: str) -> None:
    """Releases or turns written without a fingerprint are never bound by a rebind
    (the databases; an in-process store cannot hold rows from before its binding)."""
    session = ledger_store.open_session("u", "i", CAPS)
    if history == "a charge":
        session.charge_and_record(req())
    else:
        session.record_turn("01", TurnRecord(query="q", views=(), control=None, response="", admitted=(), charges=()))
    before = state(ledger_store)
    if not chain(ledger_store):
        ledger_store.rebind(None, FP_A, {})
        assert ledger_store.fingerprint == FP_A
        return
    with pytest.raises(LedgerStoreError, match="charges without an interface fingerprint; .*dpmem ledger migrate"):
        ledger_store.rebind(None, FP_A, {"runtime.epoch": "1"}, caps_for=lambda k: NEW_CAPS)
    assert state(ledger_store) == before


def test_a_rebind_expecting_another_binding_is_refused_in_one_line(ledger_store: LedgerStore) -> None:
    """The compare-and-set refusal names the stored fingerprint's first 12 digits (none when
    the database is unbound) and the given one's."""

    def refusal(expected: str | None) -> InputError:
        with pytest.raises(InputError) as refused:
            ledger_store.rebind(expected, FP_B, {"runtime.epoch": "1"})
        assert refused.value.field.startswith("ledger database ")
        return refused.value

    unbound = refusal(FP_C)
    assert str(unbound) == (
        f"{unbound.field}: expected the interface it was created with (fingerprint ), "
        f"found 'a different interface (fingerprint {'b' * 12})'"
    )
    ledger_store.rebind(None, FP_A, {})
    bound = refusal(FP_C)
    assert str(bound) == (
        f"{bound.field}: expected the interface it was created with (fingerprint {'a' * 12}), "
        f"found 'a different interface (fingerprint {'b' * 12})'"
    )


def test_a_committed_rebind_raises_the_sqlite_anchor_to_its_event(tmp_path: Path) -> None:
    """The rebind event is the chain head the anchor file records once it commits."""
    store = SQLiteLedgerStore(tmp_path / "ledger.db")
    three_sessions(store)
    store.rebind(FP_A, FP_B, {"runtime.epoch": "1"}, caps_for=lambda k: NEW_CAPS)
    head = chain(store)[-1]
    assert head[1] == "rebind"
    mark = read_anchor(store.high_water_path, store.key, store.identity)
    assert mark is not None and mark.seq == head[0]
    store.close()


@pytest.mark.parametrize("key", ["epoch", "runtime.\n", 7])
def test_a_meta_key_outside_the_runtime_prefix_is_refused_naming_it(ledger_store: LedgerStore, key: object) -> None:
    with pytest.raises(InputError) as refused:
        ledger_store.rebind(None, FP_A, {key: "1"})  # type: ignore[dict-item]
    assert str(refused.value) == f"meta key: expected printable ASCII text starting with 'runtime.', found {key!r}"
    assert ledger_store.fingerprint is None  # refused before any write
