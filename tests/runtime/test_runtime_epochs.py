"""Epochs are records, not labels: they start at 0 and only move forward, one meta edit does
not give fresh scopes, and a new epoch over an unchanged interface needs --fresh-budget,
which the owner's report shows beside the total guarantee over epochs."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Mapping
from fractions import Fraction
from pathlib import Path

import pytest

from dpmem_ref.config.load import load_interface_file
from dpmem_ref.core.errors import InputError
from dpmem_ref.interface import Interface
from dpmem_ref.ledger import MemoryLedgerStore
from dpmem_ref.ledger.contract import LedgerStore, LedgerStoreError
from dpmem_ref.ledger.epochs import (
    EPOCH_KEY,
    EPOCHS_KEY,
    MAX_REASON,
    RECORD_KEY,
    bind,
    check_reason,
    current_epoch,
    epoch_log,
    interface_record,
)
from dpmem_ref.ledger.evolution import Change
from dpmem_ref.ledger.fingerprint import interface_fingerprint
from dpmem_ref.ledger.urls import open_ledger_store
from tests.runtime_fixtures import INTERFACE, ROOT, copy_example, ledger_table, open_runtime, store_url

DINNER = "What should I cook for dinner tonight?"


def _meta(database: Path, key: str, value: str | None) -> None:
    with sqlite3.connect(database) as connection:
        if value is None:
            connection.execute("DELETE FROM meta WHERE key = ?", (key,))
        else:
            connection.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))
    connection.close()


def _read_meta(database: Path, key: str) -> str:
    with sqlite3.connect(database) as connection:
        (value,) = connection.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    connection.close()
    return str(value)


def _started(tmp_path: Path, epochs: int = 0) -> tuple[Path, Path, str, Path]:
    agent, memory = copy_example(tmp_path)
    database = tmp_path / "l.db"
    url = f"sqlite:///{database}"
    runtime = open_runtime(agent, memory, url)
    runtime.turn("alice", "recipes", "i", DINNER)
    runtime.close()
    interface = tmp_path / "interface.toml"
    for n in range(epochs):  # each epoch starts with an unsafe change (a raised cap), as intended
        text = interface.read_text()
        cap = re.search(r"group = \[1, 2, 3, 4, 5, 6\]\ncap = (\d+)", text)
        assert cap is not None
        interface.write_text(text.replace(cap.group(0), f"group = [1, 2, 3, 4, 5, 6]\ncap = {int(cap.group(1)) + 1}"))
        runtime = open_runtime(agent, memory, url, new_epoch=f"raise the diabetes cap {n}")
        runtime.turn("alice", "recipes", "i", DINNER)
        runtime.close()
    return agent, memory, url, database


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("runtime.epoch", "-1"),  # a negative epoch, hidden from the owner's listing before
        ("runtime.epoch", "7"),  # a fresh epoch with no logged start
        ("runtime.epoch", "0"),  # back to an earlier epoch (its scopes are spent... or not)
        ("runtime.epoch", "x"),
        ("runtime.epoch", None),
        ("runtime.epochs", "not json"),
        ("runtime.epochs", "{}"),
        ("runtime.epochs", json.dumps([{"epoch": 0}, {"epoch": 2}])),  # a jump
        ("runtime.epochs", json.dumps([{"epoch": 0}, {"epoch": 1}, {"epoch": 0}])),  # backwards
        ("runtime.epochs", json.dumps([{"epoch": -1}])),
        ("runtime.epochs", json.dumps([{"epoch": 0}, {"epoch": True}])),
    ],
)
def test_an_edited_epoch_row_is_refused_not_served(key: str, value: str | None, tmp_path: Path) -> None:
    agent, memory, url, database = _started(tmp_path, epochs=1)
    _meta(database, key, value)
    before = database.read_bytes()
    # Refused on open: by the ledger's verification (the epoch rows are bound into the chain),
    # or, where the chain agrees, by the runtime's own epoch rules.
    with pytest.raises((InputError, LedgerStoreError)) as caught:
        open_runtime(agent, memory, url)
    message = str(caught.value)
    assert "\n" not in message and "runtime.epoch" in message
    assert database.read_bytes() == before  # nothing served, nothing written


@pytest.mark.parametrize("row", [None, "0"])
def test_a_store_whose_binding_log_is_empty_is_in_epoch_0(row: str | None) -> None:
    """A database the runtime never bound (`dpmem run` sessions only) has no binding log: it
    is in epoch 0, with no epoch row or with the row saying 0."""
    ledger_store = MemoryLedgerStore()
    if row is not None:
        ledger_store.rebind(None, "f" * 64, {EPOCH_KEY: row})
    assert current_epoch(ledger_store) == 0


def test_an_epoch_row_past_0_without_a_binding_log_is_refused_in_one_line() -> None:
    ledger_store = MemoryLedgerStore()
    ledger_store.rebind(None, "f" * 64, {EPOCH_KEY: "3"})  # written through the store, so only the rules refuse it
    with pytest.raises(InputError) as caught:
        current_epoch(ledger_store)
    assert str(caught.value) == (
        "runtime.epoch: expected epoch 0 (the binding log records no epoch start), "
        "found 'another value (an edited row)'"
    )


def _logged(epochs: list[object], row: str) -> MemoryLedgerStore:
    """A store whose binding log starts the given epochs, in order, and whose epoch row says
    `row`: written through the store, so only the epoch rules judge them."""
    ledger_store = MemoryLedgerStore()
    log = [{"epoch": epoch, "reason": "r"} for epoch in epochs]
    ledger_store.rebind(None, "f" * 64, {EPOCHS_KEY: json.dumps(log), EPOCH_KEY: row})
    return ledger_store


@pytest.mark.parametrize(
    ("epochs", "row"),
    [([0], "0"), ([0, 0, 1], "1"), ([0, 1, 1, 2], "2"), ([0, 0, 1, 2, 3], "3")],
)
def test_the_current_epoch_is_the_last_one_the_binding_log_started(epochs: list[int], row: str) -> None:
    """Carried-over entries repeat an epoch; each new epoch is one more than the last."""
    assert current_epoch(_logged(epochs, row)) == epochs[-1]


def test_a_store_never_bound_has_an_empty_binding_log() -> None:
    assert epoch_log(MemoryLedgerStore()) == []


def test_the_binding_log_lists_every_entry_as_bound_in_order() -> None:
    """Each binding change is one entry, every field as written: the fingerprint, the caps
    (and per-user caps), the clock time, the epoch, the reason and the changes; a new epoch
    over an unchanged interface is marked fresh_budget."""
    interface = load_interface_file(INTERFACE).interface
    user_caps = {"debt": Fraction(3), "diabetes": Fraction(5, 2)}
    ledger_store = MemoryLedgerStore()
    assert bind(ledger_store, interface, user_caps, None, now=100) == (0, [])
    assert bind(ledger_store, interface, user_caps, "a reset on purpose", fresh_budget=True) == (1, [])
    common = {
        "fingerprint": interface_fingerprint(interface),
        "caps": {"debt": "2/1", "diabetes": "2/1"},
        "user_caps": {"debt": "3/1", "diabetes": "5/2"},
    }
    assert epoch_log(ledger_store) == [
        {**common, "at": 100, "epoch": 0, "reason": "created", "changes": []},
        {**common, "epoch": 1, "reason": "a reset on purpose", "changes": [], "fresh_budget": True},
    ]


def _compact_json(value: object) -> str:
    """The value as the runtime writes its JSON meta rows: sorted keys, no spaces."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def test_the_binding_rows_are_written_as_canonical_json() -> None:
    """The interface record and the binding log are stored as compact JSON with sorted keys:
    the same binding always writes the same bytes, whatever order the record was built in."""
    interface = load_interface_file(INTERFACE).interface
    user_caps = {"diabetes": Fraction(5, 2), "debt": Fraction(3)}
    shares = {"recipes": {"diabetes": Fraction(2), "debt": Fraction(1)}}
    ledger_store = MemoryLedgerStore()
    bind(ledger_store, interface, user_caps, None, shares, now=100)
    log = ledger_store.read_meta(EPOCHS_KEY)
    fingerprint = interface_fingerprint(interface)
    assert log == (
        '[{"at":100,"caps":{"debt":"2/1","diabetes":"2/1"},"changes":[],"epoch":0,'
        f'"fingerprint":"{fingerprint}","reason":"created","user_caps":{{"debt":"3/1","diabetes":"5/2"}}}}]'
    )
    assert ledger_store.read_meta(RECORD_KEY) == _compact_json(interface_record(interface, user_caps, shares))
    record = json.loads(ledger_store.read_meta(RECORD_KEY) or "null")
    assert list(record) == ["interface", "shares", "user_caps"]  # built as interface, user_caps, shares


UNREADABLE = "runtime.epochs: expected the binding log the runtime wrote (JSON), found 'an edited row'"
NOT_ENTRIES = "runtime.epochs: expected the binding log the runtime wrote (a list of entries), found 'an edited row'"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("not json", UNREADABLE),
        ('[{"epoch": 0}', UNREADABLE),  # cut short
        ("", UNREADABLE),
        ("{}", NOT_ENTRIES),
        ('"a log"', NOT_ENTRIES),
        ("null", NOT_ENTRIES),
        ("[0]", NOT_ENTRIES),
        ('[{"epoch": 0}, [1]]', NOT_ENTRIES),  # one entry that is not an object
    ],
)
def test_an_unreadable_binding_log_row_is_refused_in_one_line(row: str, message: str) -> None:
    ledger_store = MemoryLedgerStore()
    ledger_store.rebind(None, "f" * 64, {EPOCHS_KEY: row})  # written through the store: only the log's reader judges it
    with pytest.raises(InputError) as caught:
        epoch_log(ledger_store)
    assert str(caught.value) == message
    assert (caught.value.field, caught.value.found) == (EPOCHS_KEY, "an edited row")


FROM_0 = "runtime.epochs: expected a binding log of epochs from 0 up, found 'an edited log'"
FORWARD = "runtime.epochs: expected epochs that only move forward, one at a time, found 'an edited log'"


@pytest.mark.parametrize(
    ("epochs", "row", "message"),
    [
        ([1], "1", FROM_0),  # a log that does not start at epoch 0
        ([1, 2], "2", FROM_0),
        ([0, -1], "0", FROM_0),  # an entry with no usable epoch, after a valid start
        ([0, "1"], "1", FROM_0),
        ([0, 2], "2", FORWARD),  # a skipped epoch
        ([0, 1, 3], "3", FORWARD),
        ([0, 1, 0], "0", FORWARD),  # back to an earlier epoch
        (
            [0, 1],
            "0",
            "runtime.epoch: expected the epoch the binding log last started (1), found 'another value (an edited row)'",
        ),
        (
            [0, 1, 2],
            "3",
            "runtime.epoch: expected the epoch the binding log last started (2), found 'another value (an edited row)'",
        ),
    ],
)
def test_a_binding_log_or_epoch_row_off_the_epoch_rules_is_refused_in_one_line(
    epochs: list[object], row: str, message: str
) -> None:
    with pytest.raises(InputError) as caught:
        current_epoch(_logged(epochs, row))
    assert str(caught.value) == message


@pytest.mark.parametrize(
    "reason",
    [
        "",
        "   ",  # blank: nothing an owner could read later
        "x" * (MAX_REASON + 1),
        "raise\nthe cap",  # one line per log entry
        "tab\there",
        7,
        None,
    ],
)
def test_an_unusable_epoch_reason_is_refused_in_one_line(reason: object) -> None:
    with pytest.raises(InputError) as caught:
        check_reason(reason)
    assert (caught.value.field, caught.value.found) == ("--new-epoch", "an unusable reason")
    assert (
        str(caught.value) == "--new-epoch: expected a printable reason of 1..200 characters, found 'an unusable reason'"
    )


@pytest.mark.parametrize("reason", ["r", " padded ", "x" * MAX_REASON, "raise the diabetes cap (ticket 42)"])
def test_a_printable_epoch_reason_up_to_the_limit_is_kept_as_given(reason: str) -> None:
    assert MAX_REASON == 200
    assert check_reason(reason) == reason


def test_a_new_epoch_over_an_unchanged_interface_needs_fresh_budget(tmp_path: Path) -> None:
    agent, memory, url, database = _started(tmp_path)
    before = database.read_bytes()
    for _ in range(3):  # every run asking for a new epoch: refused each time, nothing reset
        with pytest.raises(InputError, match="--fresh-budget") as caught:
            open_runtime(agent, memory, url, new_epoch="again")
        assert "\n" not in str(caught.value)
    assert database.read_bytes() == before
    with pytest.raises(InputError, match="--fresh-budget"):
        open_runtime(agent, memory, url, fresh_budget=True)  # without --new-epoch
    runtime = open_runtime(agent, memory, url, new_epoch="a reset on purpose", fresh_budget=True)
    assert runtime.epoch == 1 and runtime.epochs()[-1]["fresh_budget"] is True
    report = runtime.guarantee()
    assert report == {
        "epochs": 2,
        "fresh_budget_epochs": [1],
        "per_application": {"debt": "4/1", "diabetes": "4/1"},
        "per_user": {"debt": "6/1", "diabetes": "6/1"},
    }
    assert ledger_table(runtime, "alice")[(0, "recipes")]  # epoch 0's scopes stay as evidence
    runtime.turn("alice", "recipes", "i", DINNER)
    (total,) = [row for row in runtime.ledgers("alice") if row["scope"]["app"] is None]
    assert total["scope"]["over_epochs"] == report  # the owner's listing shows it beside the totals
    runtime.close()
    assert _read_meta(database, "runtime.epoch") == "1"


def test_chat_reports_the_total_over_epochs(tmp_path: Path) -> None:
    agent, memory, url, _ = _started(tmp_path)
    env = {"PYTHONPATH": f"{ROOT}:{ROOT / 'eval'}", "PATH": "/usr/bin:/bin", "DPMEM_LEDGER_DEV_KEY": "1"}
    common = [sys.executable, "-m", "dpmem_ref.cli", "chat", str(agent), "--memory", str(memory)]
    common += ["--user", "alice", "--app", "recipes", "--store-url", url, "--new-epoch", "again"]
    refused = subprocess.run(common, input="dinner?\n", capture_output=True, text=True, env=env, timeout=120)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "--fresh-budget" in refused.stderr
    done = subprocess.run(
        [*common, "--fresh-budget"], input="dinner?\n", capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "budget epoch 1 (2 epochs, 1 over an unchanged interface)" in done.stderr
    assert "debt <= 4/1" in done.stderr


# `bind` itself, on each durable backend: every row it writes (the interface record, the epoch
# row, the binding log as stored text) and every refusal in its whole line, with the rows it
# leaves as they were.
SOURCE = INTERFACE.read_text()
DEBT_CAP, DIABETES_CAP = "group = [4, 5, 6, 7, 8, 9]\ncap = 2", "group = [1, 2, 3, 4, 5, 6]\ncap = 2"
LOWERED = SOURCE.replace(DEBT_CAP, DEBT_CAP[:-1] + "1")  # cap-lowered: safe, the ledgers carry over
RAISED = SOURCE.replace(DIABETES_CAP, DIABETES_CAP[:-1] + "3")  # cap-raised: unsafe
PERIODIC = SOURCE.replace("K = 4\n", 'K = 4\nperiod = "30 days"\n', 1)
ROWS = ("runtime.interface", EPOCH_KEY, EPOCHS_KEY)


def _interface(tmp_path: Path, text: str) -> Interface:
    path = tmp_path / f"interface-{len(list(tmp_path.glob('interface-*')))}.toml"
    path.write_text(text)
    return load_interface_file(path).interface


def _rows(ledger_store: LedgerStore) -> tuple[str | None, ...]:
    return (ledger_store.fingerprint, *(ledger_store.read_meta(key) for key in ROWS))


def _record_row(
    interface: Interface,
    user_caps: Mapping[str, Fraction] | None,
    shares: Mapping[str, Mapping[str, Fraction]] | None = None,
) -> str:
    return _compact_json(interface_record(interface, user_caps, shares))


DURABLE = ["sqlite", "postgres"]


@pytest.mark.parametrize("kind", DURABLE)
@pytest.mark.parametrize(
    ("new_epoch", "user_caps", "now", "written"),
    [
        (None, None, None, {"reason": "created"}),
        (
            None,
            {"diabetes": Fraction(5, 2), "debt": Fraction(3)},
            100,
            {"user_caps": {"debt": "3/1", "diabetes": "5/2"}, "at": 100, "reason": "created"},
        ),
        ("imported from the old server", None, 0, {"at": 0, "reason": "imported from the old server"}),
    ],
)
def test_a_first_binding_writes_the_record_epoch_0_and_one_entry(
    kind: str,
    new_epoch: str | None,
    user_caps: dict[str, Fraction] | None,
    now: int | None,
    written: dict[str, object],
    tmp_path: Path,
) -> None:
    """The first binding binds the fingerprint and writes three rows: the interface record, the
    epoch row "0" and a one-entry log, both JSON rows canonical (sorted keys, no spaces).
    An unchanged interface opened again writes nothing."""
    interface = _interface(tmp_path, SOURCE)
    fingerprint = interface_fingerprint(interface)
    ledger_store = open_ledger_store(store_url(kind, tmp_path))
    assert bind(ledger_store, interface, user_caps, new_epoch, now=now) == (0, [])
    entry = {
        "fingerprint": fingerprint,
        "caps": {"debt": "2/1", "diabetes": "2/1"},
        **written,
        "epoch": 0,
        "changes": [],
    }
    assert _rows(ledger_store) == (fingerprint, _record_row(interface, user_caps), "0", _compact_json([entry]))
    assert epoch_log(ledger_store) == [entry]
    first = _rows(ledger_store)
    assert bind(ledger_store, interface, user_caps, None, now=200) == (0, [])
    assert _rows(ledger_store) == first
    ledger_store.close()


def test_the_binding_log_row_is_stored_as_canonical_text() -> None:
    interface = load_interface_file(INTERFACE).interface
    ledger_store = MemoryLedgerStore()
    bind(ledger_store, interface, {"diabetes": Fraction(3), "debt": Fraction(3)}, None, now=5)
    assert ledger_store.read_meta(EPOCHS_KEY) == (
        '[{"at":5,"caps":{"debt":"2/1","diabetes":"2/1"},"changes":[],"epoch":0,'
        f'"fingerprint":"{interface_fingerprint(interface)}","reason":"created",'
        '"user_caps":{"debt":"3/1","diabetes":"3/1"}}]'
    )


@pytest.mark.parametrize("kind", DURABLE)
def test_each_binding_change_is_one_whole_entry_and_the_epoch_row_follows(kind: str, tmp_path: Path) -> None:
    """created -> a safe change carried over (same epoch) -> an unsafe change refused in one
    line, nothing written -> the same change as a new epoch -> a fresh budget over it, then
    an unchanged interface: nothing written."""
    base, lowered, raised = (_interface(tmp_path, text) for text in (SOURCE, LOWERED, RAISED))
    user_caps = {"diabetes": Fraction(3), "debt": Fraction(3)}
    shares = {"recipes": {"diabetes": Fraction(2), "debt": Fraction(1)}}
    ledger_store = open_ledger_store(store_url(kind, tmp_path))
    bind(ledger_store, base, user_caps, None, shares, now=10)
    caps_lowered = {"debt": "1/1", "diabetes": "2/1"}
    lowered_change = Change("cap-lowered", "debt: 2/1 -> 1/1")
    assert bind(ledger_store, lowered, user_caps, None, shares, now=20) == (0, [lowered_change])
    assert ledger_store.fingerprint == interface_fingerprint(lowered)
    assert ledger_store.read_meta(EPOCH_KEY) == "0"
    assert ledger_store.read_meta("runtime.interface") == _record_row(lowered, user_caps, shares)
    before = _rows(ledger_store)
    with pytest.raises(InputError) as caught:
        bind(ledger_store, raised, user_caps, None, shares, now=30)
    assert str(caught.value) == (
        "interface: expected a change that carries the ledgers over, or a new budget epoch (--new-epoch REASON), "
        "found 'unsafe change cap-raised (debt: 1/1 -> 2/1; 2 unsafe)'"
    )
    assert _rows(ledger_store) == before
    raised_changes = [Change("cap-raised", "debt: 1/1 -> 2/1"), Change("cap-raised", "diabetes: 2/1 -> 3/1")]
    assert bind(ledger_store, raised, user_caps, "raise the caps (ticket 7)", shares, now=40) == (1, raised_changes)
    assert ledger_store.read_meta(EPOCH_KEY) == "1"
    assert bind(ledger_store, raised, user_caps, "a reset on purpose", shares, fresh_budget=True) == (2, [])
    assert ledger_store.read_meta(EPOCH_KEY) == "2"
    common = {"user_caps": {"debt": "3/1", "diabetes": "3/1"}}
    caps_raised = {"debt": "2/1", "diabetes": "3/1"}
    assert epoch_log(ledger_store) == [
        {
            "fingerprint": interface_fingerprint(base),
            "caps": {"debt": "2/1", "diabetes": "2/1"},
            **common,
            "at": 10,
            "epoch": 0,
            "reason": "created",
            "changes": [],
        },
        {
            "fingerprint": interface_fingerprint(lowered),
            "caps": caps_lowered,
            **common,
            "at": 20,
            "epoch": 0,
            "reason": "carried over",
            "changes": [lowered_change.to_json()],
        },
        {
            "fingerprint": interface_fingerprint(raised),
            "caps": caps_raised,
            **common,
            "at": 40,
            "epoch": 1,
            "reason": "raise the caps (ticket 7)",
            "changes": [c.to_json() for c in raised_changes],
        },
        {
            "fingerprint": interface_fingerprint(raised),
            "caps": caps_raised,
            **common,
            "epoch": 2,
            "reason": "a reset on purpose",
            "changes": [],
            "fresh_budget": True,
        },
    ]
    after = _rows(ledger_store)
    assert bind(ledger_store, raised, user_caps, None, shares, now=50) == (2, [])
    assert _rows(ledger_store) == after
    ledger_store.close()


def test_every_new_epoch_of_a_periodic_interface_records_its_own_origin_and_the_record(tmp_path: Path) -> None:
    """Each new epoch starts its budget period at the clock's time, the earlier epochs'
    origins notwithstanding, and writes the interface record it was bound to."""
    periodic = _interface(tmp_path, PERIODIC)
    raised = _interface(tmp_path, PERIODIC.replace(DIABETES_CAP, DIABETES_CAP[:-1] + "3"))
    ledger_store = MemoryLedgerStore()
    bind(ledger_store, periodic, None, None, now=10)
    assert bind(ledger_store, periodic, None, "a reset on purpose", fresh_budget=True, now=20) == (1, [])
    raised_change = [Change("cap-raised", "diabetes: 2/1 -> 3/1")]
    assert bind(ledger_store, raised, None, "raise the diabetes cap", now=30) == (2, raised_change)
    assert ledger_store.read_meta(RECORD_KEY) == _record_row(raised, None)
    assert ledger_store.read_meta(EPOCH_KEY) == "2"
    assert [(e["epoch"], e.get("period"), e.get("origin")) for e in epoch_log(ledger_store)] == [
        (0, "30 days", 10),
        (1, "30 days", 20),
        (2, "30 days", 30),
    ]
    ledger_store.close()


FRESH_ALONE = (
    "--fresh-budget: expected --new-epoch REASON with it (a new epoch over an unchanged interface), "
    "found 'no --new-epoch'"
)
NO_CHANGE = (
    "--new-epoch: expected an interface change to start a new epoch for "
    "(or --fresh-budget: reset every budget on purpose), found 'an unchanged interface'"
)
NO_CLOCK = "clock: expected the runtime's clock (a period origin to record), found 'none'"


@pytest.mark.parametrize("bound", [False, True])
def test_a_refused_binding_is_one_line_and_writes_nothing(bound: bool, tmp_path: Path) -> None:
    """--fresh-budget without --new-epoch, a new epoch over an unchanged interface, and a
    budget period with no clock to record its origin: each refused in its line, on a new
    database as on a bound one, the rows left as they were."""
    base, periodic = _interface(tmp_path, SOURCE), _interface(tmp_path, PERIODIC)
    ledger_store = open_ledger_store(store_url("sqlite", tmp_path))
    if bound:
        bind(ledger_store, periodic, None, None, now=7)
    before = _rows(ledger_store)
    attempts: list[tuple[Callable[[], object], str]] = [
        (lambda: bind(ledger_store, base, None, None, fresh_budget=True), FRESH_ALONE),
        (lambda: bind(ledger_store, periodic, None, None, fresh_budget=True), FRESH_ALONE),
    ]
    if bound:
        attempts.append((lambda: bind(ledger_store, periodic, None, "again", now=8), NO_CHANGE))
    else:
        attempts.append((lambda: bind(ledger_store, periodic, None, None), NO_CLOCK))
    for attempt, message in attempts:
        with pytest.raises(InputError) as caught:
            attempt()
        assert str(caught.value) == message
        assert _rows(ledger_store) == before
    ledger_store.close()


@pytest.mark.parametrize("kind", DURABLE)
def test_a_database_of_run_sessions_gets_its_record_and_its_period_origin(kind: str, tmp_path: Path) -> None:
    """A database bound by `dpmem run` sessions only (the fingerprint, no interface record):
    the same interface binds with no change; the record is written, and, where the interface
    declares a budget period, one "period origin" entry of epoch 0 at the clock's time. Opened
    again, nothing more is written."""
    for text, now in ((SOURCE, None), (PERIODIC, 500)):
        interface = _interface(tmp_path, text)
        fingerprint = interface_fingerprint(interface)
        folder = tmp_path / ("periodic" if now else "plain")
        folder.mkdir()
        ledger_store = open_ledger_store(store_url(kind, folder))
        ledger_store.open_session("alice", "dinner", interface.caps, fingerprint=fingerprint)
        assert _rows(ledger_store) == (fingerprint, None, None, None)
        assert bind(ledger_store, interface, None, None, now=now) == (0, [])
        record = _record_row(interface, None)
        if now is None:
            assert _rows(ledger_store) == (fingerprint, record, None, None)
        else:
            entry = {
                "fingerprint": fingerprint,
                "caps": {"debt": "2/1", "diabetes": "2/1"},
                "at": 500,
                "period": "30 days",
                "origin": 500,
                "epoch": 0,
                "reason": "period origin",
                "changes": [],
            }
            assert _rows(ledger_store) == (fingerprint, record, "0", _compact_json([entry]))
        written = _rows(ledger_store)
        assert bind(ledger_store, interface, None, None, now=900) == (0, [])
        assert _rows(ledger_store) == written
        ledger_store.close()


def test_a_database_bound_to_another_interface_without_its_record_is_refused(tmp_path: Path) -> None:
    """No record to compare with: an unknown change, unsafe, refused; the binding stays."""
    interface = _interface(tmp_path, SOURCE)
    ledger_store = open_ledger_store(store_url("sqlite", tmp_path))
    ledger_store.open_session("alice", "dinner", interface.caps, fingerprint="f" * 64)
    with pytest.raises(InputError) as caught:
        bind(ledger_store, interface, None, None, now=1)
    assert str(caught.value) == (
        "interface: expected a change that carries the ledgers over, or a new budget epoch (--new-epoch REASON), "
        "found 'unsafe change unknown-record (no comparable interface re..."  # the found part cut at 60
    )
    assert caught.value.found == "unsafe change unknown-record (no comparable interface record; 1 unsafe)"
    assert _rows(ledger_store) == ("f" * 64, None, None, None)
    ledger_store.close()
