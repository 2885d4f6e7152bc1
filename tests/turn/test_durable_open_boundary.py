"""DurableSession.open (and on_session, with the same checks): one validated boundary, nothing
half-written.

Every argument of `DurableSession.open` is checked before the ledger store is touched: a
wrong type or range raises `InputError` naming the argument (one line), and the database
holds no session afterwards. On the old main a bad `turn_deadline_s` was refused only
after the session's ledger rows were written, and a non-callable hook, a channel without
`respond`, a non-store or a non-string user reached the store or failed later with a raw
AttributeError / TypeError.
"""

from __future__ import annotations

import math
import sqlite3
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from dpmem_ref.config.load import load_interface_file
from dpmem_ref.core.errors import InputError
from dpmem_ref.ledger import SQLiteLedgerStore
from dpmem_ref.ledger.fingerprint import interface_fingerprint
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.turn.durable import DurableSession

FIGURE2 = Path(__file__).resolve().parents[2] / "examples" / "figure2.toml"

BAD: list[tuple[str, Any]] = [
    ("ledger_store", None),
    ("ledger_store", "sqlite:///l.db"),
    ("ledger_store", SQLiteLedgerStore),
    ("user", 7),
    ("user", ""),
    ("user", "x" * 257),
    ("user", "line\nbreak"),
    ("user", b"bytes"),
    ("interaction", None),
    ("interaction", "tab\there"),
    ("source", 42),
    ("memory", {}),
    ("channel", "echo"),
    ("channel", object()),
    ("checkpoint", "not callable"),
    ("on_release", 3),
    ("turn_deadline_s", 0),
    ("turn_deadline_s", -1.0),
    ("turn_deadline_s", math.nan),
    ("turn_deadline_s", math.inf),
    ("turn_deadline_s", True),
    ("turn_deadline_s", "5"),
    ("turn_deadline_s", Decimal("0.005")),
    ("turn_deadline_s", Fraction(1, 200)),
    ("interface", "figure2.toml"),
]


def _case_id(field: str, value: Any) -> str:
    """A stable test id: an object's repr with its address would name another test each run,
    and an escape (the tab's backslash) matched no test when a second pytest run in the same
    process (mutmut runs each mutant's tests so) looked the id up: it shows as '/'."""
    shown = repr(value) if " at 0x" not in repr(value) else f"<{type(value).__name__}>"
    return f"{field}={shown}".replace("\\", "/")[:40]


@pytest.mark.parametrize(("field", "value"), BAD, ids=[_case_id(f, v) for f, v in BAD])
def test_every_bad_argument_is_refused_before_anything_is_written(field: str, value: Any, tmp_path: Path) -> None:
    loaded = load_interface_file(FIGURE2)
    path = tmp_path / "l.db"
    ledger_store = SQLiteLedgerStore(path)
    arguments: dict[str, Any] = {
        "interface": loaded.interface,
        "ledger_store": ledger_store,
        "user": "u",
        "interaction": "i",
        "memory": loaded.store("M"),
        "source": SeededRandomSource(0),
        field: value,
    }
    with pytest.raises(InputError) as refused:
        DurableSession.open(**arguments)
    message = str(refused.value)
    assert message.startswith(f"{field}:") and "\n" not in message, message
    raw = sqlite3.connect(path)
    try:
        assert raw.execute("SELECT count(*) FROM ledgers").fetchone() == (0,)  # nothing half-written
    finally:
        raw.close()
    ledger_store.close()


def test_the_good_arguments_still_open(tmp_path: Path) -> None:
    loaded = load_interface_file(FIGURE2)
    ledger_store = SQLiteLedgerStore(tmp_path / "l.db")
    session = DurableSession.open(
        loaded.interface, ledger_store, "u", "i", loaded.store("M"), SeededRandomSource(0),
        checkpoint=lambda _: None, on_release=lambda _: None, turn_deadline_s=0.001,
    )  # fmt: skip
    assert session.run_turn("affordable-dinner").record.query == "affordable-dinner"
    ledger_store.close()


ON_SESSION_BAD: list[tuple[str, Any]] = [
    ("session", None),
    ("session", "sqlite:///l.db"),
    ("session", SQLiteLedgerStore),
    ("session", "the store"),  # a ledger store is not an opened session
    ("source", 42),
    ("memory", {}),
    ("channel", "echo"),
    ("checkpoint", "not callable"),
    ("on_release", 3),
    ("turn_deadline_s", 0),
    ("turn_deadline_s", True),
    ("interface", "figure2.toml"),
]


@pytest.mark.parametrize(("field", "value"), ON_SESSION_BAD, ids=[_case_id(f, v) for f, v in ON_SESSION_BAD])
def test_on_session_refuses_every_bad_argument_as_open_does(field: str, value: Any, tmp_path: Path) -> None:
    loaded = load_interface_file(FIGURE2)
    ledger_store = SQLiteLedgerStore(tmp_path / "l.db")
    arguments: dict[str, Any] = {
        "interface": loaded.interface,
        "session": ledger_store.open_session("u", "i", loaded.interface.caps),
        "memory": loaded.store("M"),
        "source": SeededRandomSource(0),
        field: ledger_store if value == "the store" else value,
    }
    with pytest.raises(InputError) as refused:
        DurableSession.on_session(**arguments)
    message = str(refused.value)
    assert message.startswith(f"{field}:") and "\n" not in message, message
    ledger_store.close()


def test_on_session_serves_the_session_it_is_given(tmp_path: Path) -> None:
    """The turn runs on the opener's session (which binds the database to the interface, as
    `open` does): `open` on the same (user, interaction) resumes it."""
    loaded = load_interface_file(FIGURE2)
    ledger_store = SQLiteLedgerStore(tmp_path / "l.db")
    fingerprint = interface_fingerprint(loaded.interface)
    opened = ledger_store.open_session("u", "i", loaded.interface.caps, fingerprint=fingerprint)
    session = DurableSession.on_session(loaded.interface, opened, loaded.store("M"), SeededRandomSource(0), turn_deadline_s=None)
    assert session.ledgers is opened
    done = session.run_turn("affordable-dinner")
    resumed = DurableSession.open(loaded.interface, ledger_store, "u", "i", loaded.store("M"), SeededRandomSource(0))
    assert resumed.state() == done.state
    ledger_store.close()
