"""One contract suite for every LedgerStore backend (memory, SQLite, PostgreSQL).

The transaction `charge_and_record` is Algorithm 1, line 15, against committed state: the
plan (the kernel's cap rule) requested the charge; the store commits it to every charged a,
all or none, iff L_a <= B_a still holds after it (C5 re-checked), and records the release
row with it. Ledgers are exact: 2/3 + 2/3 + 2/3 == 2 is admitted, the 4th refused.
"""

from __future__ import annotations

import math
import secrets
import sqlite3
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path

import attrs
import pytest

import tests.postgres_server as postgres_server
from dpmem_ref.core.errors import ContractViolation, InputError
from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.ledger import (
    LedgerStore,
    LedgerStoreError,
    ReleaseRequest,
    SessionKey,
    SQLiteLedgerStore,
    decode_turn,
    encode_turn,
    open_ledger_store,
)
from dpmem_ref.ledger.codecs import MAX_RECORD_BYTES
from dpmem_ref.ledger.contract import LedgerSession
from dpmem_ref.ledger.session import LedgerBackend, TemplateSession
from dpmem_ref.ledger.urls import SCHEMES

CAPS = {"diabetes": Fraction(2), "debt": Fraction(2)}
EPS = Fraction(2, 3)


# Every row of the store-URL scheme table runs this suite: a URL of a fresh store per scheme.
TEST_URLS: dict[str, Callable[[Path], str]] = {
    "memory": lambda _: "memory:",
    "sqlite": lambda tmp_path: f"sqlite:///{tmp_path / 'l.db'}",
    "postgresql": lambda _: postgres_server.new_database(),  # a real server (skips if none starts)
}


def make_store(kind: str, tmp_path: Path) -> LedgerStore:
    assert kind in TEST_URLS, f"backend {kind!r} is in urls.SCHEMES but has no test URL in TEST_URLS"
    return open_ledger_store(TEST_URLS[kind](tmp_path))


@pytest.fixture(params=[scheme.name for scheme in SCHEMES])
def ledger_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LedgerStore]:
    backend = make_store(request.param, tmp_path)
    yield backend
    backend.close()


def test_every_registered_backend_runs_this_suite() -> None:
    """A backend added to `urls.SCHEMES` runs the suite above (the `ledger_store` fixture iterates the
    table); it needs a test URL here, and every test URL names a registered scheme."""
    assert sorted(TEST_URLS) == sorted(scheme.name for scheme in SCHEMES)


@pytest.mark.parametrize("name", [scheme.name for scheme in SCHEMES])
def test_each_test_url_opens_its_own_scheme(name: str, tmp_path: Path) -> None:
    url = TEST_URLS[name](tmp_path) if name != "postgresql" else "postgresql://u:p@h/d"
    assert [scheme.name for scheme in SCHEMES if scheme.claims(url)][0] == name


def test_every_backend_is_built_on_the_session_template(ledger_store: LedgerStore) -> None:
    """open-session and the commit are written once (dpmem_ref.ledger.session)."""
    assert isinstance(ledger_store, LedgerBackend)
    assert isinstance(ledger_store.open_session("u", "i", CAPS), TemplateSession)


def test_a_backend_that_declares_a_chain_it_does_not_keep_fails_naming_itself() -> None:
    """`CHAINED` says whether a backend appends chain events: one that says so without writing
    `_append_chain` fails at its first write, naming the backend (not a silent, unchained ledger)."""
    from dpmem_ref.ledger.memory import MemoryLedgerStore

    class ForgotTheChain(MemoryLedgerStore):
        CHAINED = True

    with pytest.raises(NotImplementedError, match="^ForgotTheChain keeps no chain$"):
        ForgotTheChain().open_session("u", "i", CAPS)


def test_a_file_store_is_shown_by_its_path(tmp_path: Path) -> None:
    path = tmp_path / "ledger's.db"
    ledger_store = SQLiteLedgerStore(path)
    try:
        assert repr(ledger_store) == f"SQLiteLedgerStore(path={str(path)!r})"
    finally:
        ledger_store.close()


def req(
    charge: frozenset[str] = frozenset({"diabetes"}),
    eps: Fraction = EPS,
    requested: bool = True,
    view: str = "low-glycemic",
    release_id: str | None = None,
) -> ReleaseRequest:
    return ReleaseRequest(
        release_id=release_id or secrets.token_hex(8),
        turn_id=secrets.token_hex(8),
        index=0,
        slot="food",
        view=view,
        fallback_view="balanced-meals",
        charge_set=charge,
        epsilon=eps,
        requested=requested,
    )


def test_open_starts_at_zero(ledger_store: LedgerStore) -> None:
    snapshot = ledger_store.open_session("u", "i", CAPS).load()
    assert snapshot.ledger_map() == {"diabetes": 0, "debt": 0}
    assert dict(snapshot.caps) == CAPS
    assert snapshot.history == () and snapshot.releases == ()


def test_releases_are_numbered_in_one_sequence_across_the_stores_sessions(ledger_store: LedgerStore) -> None:
    """Every backend numbers committed releases store-wide (the databases' `seq`): two
    sessions' interleaved releases never share a number."""
    first = ledger_store.open_session("u", "a", CAPS)
    second = ledger_store.open_session("v", "b", CAPS)
    for session in (first, second, first):
        session.charge_and_record(req())
    assert [release.seq for release in first.load().releases] == [1, 3]
    assert [release.seq for release in second.load().releases] == [2]


def test_exact_thirds_fill_the_cap_and_the_fourth_falls_back(ledger_store: LedgerStore) -> None:
    session = ledger_store.open_session("u", "i", CAPS)
    outcomes = [session.charge_and_record(req()) for _ in range(5)]
    assert [o.admitted for o in outcomes] == [True, True, True, False, False]
    assert [o.view for o in outcomes] == ["low-glycemic"] * 3 + ["balanced-meals"] * 2
    assert session.load().ledger_map()["diabetes"] == Fraction(2)  # exactly, not 2 + rounding
    assert isinstance(session.load().ledger_map()["diabetes"], Fraction)
    refused = session.load().releases[-1]
    assert refused.charge_set == frozenset() and refused.epsilon == 0


def test_charge_is_all_or_none(ledger_store: LedgerStore) -> None:
    session = ledger_store.open_session("u", "i", CAPS)
    for _ in range(3):
        assert session.charge_and_record(req(frozenset({"debt"}))).admitted
    outcome = session.charge_and_record(req(frozenset({"diabetes", "debt"})))
    assert not outcome.admitted
    assert session.load().ledger_map() == {"diabetes": 0, "debt": 2}


def test_joint_charge_charges_every_attribute(ledger_store: LedgerStore) -> None:
    session = ledger_store.open_session("u", "i", CAPS)
    outcome = session.charge_and_record(req(frozenset({"diabetes", "debt"})))
    assert outcome.admitted
    assert outcome.ledger_map() == {"diabetes": EPS, "debt": EPS} == session.load().ledger_map()


def test_unrequested_selection_records_the_fallback_without_charge(ledger_store: LedgerStore) -> None:
    session = ledger_store.open_session("u", "i", CAPS)
    outcome = session.charge_and_record(req(requested=False))
    assert not outcome.admitted and outcome.view == "balanced-meals"
    assert session.load().ledger_map()["diabetes"] == 0


def test_uncharged_selection_costs_nothing(ledger_store: LedgerStore) -> None:
    session = ledger_store.open_session("u", "i", CAPS)
    outcome = session.charge_and_record(req(frozenset(), eps=Fraction(1)))
    assert outcome.admitted and outcome.view == "low-glycemic"
    assert session.load().ledger_map() == {"diabetes": 0, "debt": 0}


def test_sessions_are_keyed_by_user_and_interaction(ledger_store: LedgerStore) -> None:
    a = ledger_store.open_session("u", "i", CAPS)
    b = ledger_store.open_session("u", "j", CAPS)
    c = ledger_store.open_session("v", "i", CAPS)
    a.charge_and_record(req())
    assert b.load().ledger_map()["diabetes"] == 0 == c.load().ledger_map()["diabetes"]
    assert ledger_store.open_session("u", "i", CAPS).load().ledger_map()["diabetes"] == EPS


def test_history_round_trip(ledger_store: LedgerStore) -> None:
    session = ledger_store.open_session("u", "i", CAPS)
    record = TurnRecord(
        query="affordable-dinner",
        views=(("food", "low-glycemic"), ("finance", "finance-generic")),
        control=(("food", "released"), ("finance", "fallback"), None, 3, Fraction(-1, 3), frozenset({"x"})),
        response="Answer",
        admitted=(True, False),
        charges=(("food", frozenset({"diabetes", "debt"}), EPS), ("finance", frozenset(), Fraction(0))),
    )
    session.record_turn(secrets.token_hex(8), record)
    assert session.load().history == (record,)
    assert decode_turn(encode_turn(record)) == record


def test_a_turns_public_fractions_are_stored_as_exact_text_tagged_by_sign() -> None:
    """A Fraction in a turn's public control is stored as exact "p/q" text: tagged "q" when
    it is zero or positive, "q-" with its magnitude when negative (the stored text is never
    signed, so the ledger's non-negative "p/q" reader reads it back)."""
    record = TurnRecord(
        query="q",
        views=(),
        control=(Fraction(1, 3), Fraction(0), Fraction(7), Fraction(-2, 5)),
        response="",
        admitted=(),
        charges=(),
    )
    text = encode_turn(record)
    assert text == (
        '{"admitted":[],"charges":[],'
        '"control":{"t":[{"q":"1/3"},{"q":"0/1"},{"q":"7/1"},{"q-":"2/5"}]},'
        '"query":"q","response":"","views":[]}'
    )
    assert decode_turn(text) == record


def test_a_turns_public_set_is_stored_in_one_order_whatever_its_members() -> None:
    """A frozenset in the control is stored as its members' encodings sorted by their JSON text:
    one order for members of any types (a plain sort would refuse to compare a str with an int,
    or two encoded fractions), so equal sets give equal text."""
    control = frozenset({Fraction(1, 2), "x", 3, (None, True)})
    record = TurnRecord(query="q", views=(), control=control, response="", admitted=(), charges=())
    text = encode_turn(record)
    assert text == (
        '{"admitted":[],"charges":[],"control":{"s":["x",3,{"q":"1/2"},{"t":[null,true]}]},'
        '"query":"q","response":"","views":[]}'
    )
    assert decode_turn(text) == record


def test_a_turn_record_of_at_most_max_record_bytes_is_stored_one_byte_more_is_refused() -> None:
    """The bound is inclusive: a record whose encoding is exactly MAX_RECORD_BYTES long is
    stored; one byte more is refused, naming the bound and the length found."""
    empty = encode_turn(TurnRecord(query="", views=(), control=None, response="", admitted=(), charges=()))
    at_bound = TurnRecord(
        query="q" * (MAX_RECORD_BYTES - len(empty)), views=(), control=None, response="", admitted=(), charges=()
    )
    assert len(encode_turn(at_bound)) == MAX_RECORD_BYTES
    with pytest.raises(InputError) as refused:
        encode_turn(attrs.evolve(at_bound, response="r"))
    assert str(refused.value) == (
        f"turn record: expected at most {MAX_RECORD_BYTES} bytes, found {MAX_RECORD_BYTES + 1}"
    )


@pytest.mark.parametrize("control", [(1.5,), frozenset({b"bytes"}), {"a": 1}])
def test_a_turn_whose_control_is_not_a_public_value_is_refused_naming_the_field(control: object) -> None:
    record = TurnRecord(query="q", views=(), control=control, response="", admitted=(), charges=())
    with pytest.raises(InputError) as refused:
        encode_turn(record)
    found = {tuple: "float", frozenset: "bytes", dict: "dict"}[type(control)]
    assert str(refused.value) == (
        f"control: expected a public value built from None, bool, int, str, Fraction, tuple, frozenset, found '{found}'"
    )


@pytest.mark.parametrize(
    ("turn_id", "found"),
    [
        ("Turn-1", "'Turn-1' (starts with 'T')"),
        ("", "an empty string"),
        ("a" * 65, "a string of 65 characters"),
        (7, "7"),
    ],
)
def test_a_turn_id_that_is_not_lowercase_hex_is_refused_and_nothing_is_recorded(
    ledger_store: LedgerStore, turn_id: object, found: str
) -> None:
    session = ledger_store.open_session("u", "i", CAPS)
    turn = TurnRecord(query="q", views=(), control=None, response="", admitted=(), charges=())
    with pytest.raises(InputError) as caught:
        session.record_turn(turn_id, turn)  # type: ignore[arg-type]  # a caller's bad value
    assert str(caught.value) == f"turn_id: expected 1..64 lowercase hex digits, found {found}"
    assert session.load().history == ()


def test_duplicate_ids_are_refused_and_nothing_is_charged(ledger_store: LedgerStore) -> None:
    session = ledger_store.open_session("u", "i", CAPS)
    session.charge_and_record(req(release_id="abc"))
    with pytest.raises(InputError) as caught:
        session.charge_and_record(req(release_id="abc"))
    assert str(caught.value) == "release_id: expected an id not used before, found 'abc'"
    assert session.load().ledger_map()["diabetes"] == EPS
    assert len(session.load().releases) == 1
    turn = TurnRecord(query="q", views=(), control=None, response="", admitted=(), charges=())
    session.record_turn("aa", turn)
    with pytest.raises(InputError) as caught:
        session.record_turn("aa", turn)
    assert str(caught.value) == "turn_id: expected an id not used before, found 'aa'"


def test_the_memory_store_refuses_a_charge_to_a_scope_it_never_opened() -> None:
    """The other scopes of a charge (`also`) must be sessions opened on the same store: one
    line naming the scope, and nothing charged to the session either."""
    store = open_ledger_store("memory:")
    session = store.open_session("u", "i", CAPS)
    other = open_ledger_store("memory:")
    other.open_session("u", "elsewhere", CAPS)  # opened, but on another store
    for missing in ("never", "elsewhere"):
        with pytest.raises(InputError) as caught:
            session.charge_and_record(req(), also=(SessionKey("u", missing),))
        assert str(caught.value) == f"also: expected sessions opened on this store, found 'u/{missing}'"
    assert session.load().ledger_map() == {"diabetes": 0, "debt": 0}
    assert session.load().releases == ()
    store.close()
    other.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_sql_store_refuses_a_charge_to_a_scope_it_never_opened(kind: str, tmp_path: Path) -> None:
    """As the memory store above: a scope of `also` without ledger rows is refused in one line,
    and the transaction writes nothing (no charge to the session, no release row)."""
    store = make_store(kind, tmp_path)
    session = store.open_session("u", "i", CAPS)
    with pytest.raises(LedgerStoreError) as caught:
        session.charge_and_record(req(), also=(SessionKey("u", "never"),))
    assert str(caught.value) == "ledgers: no ledger rows for this session (open_session first)"
    assert session.load().ledger_map() == {"diabetes": 0, "debt": 0}
    assert session.load().releases == ()
    store.close()


def test_unknown_attribute_is_refused_atomically(ledger_store: LedgerStore) -> None:
    session = ledger_store.open_session("u", "i", CAPS)
    with pytest.raises(InputError) as refused:
        session.charge_and_record(req(frozenset({"diabetes", "pregnancy"})))
    assert str(refused.value) == "charge_set: expected attributes among ['debt', 'diabetes'], found ['pregnancy']"
    assert session.load().releases == ()
    assert session.load().ledger_map()["diabetes"] == 0


@pytest.mark.parametrize(("caps", "found"), [([1], "'list'"), ({}, "'dict'"), ("debt", "'str'")])
def test_caps_that_are_no_mapping_or_empty_are_refused_naming_what_came(
    ledger_store: LedgerStore, caps: object, found: str
) -> None:
    with pytest.raises(InputError) as refused:
        ledger_store.open_session("u", "i", caps)  # type: ignore[arg-type]
    assert str(refused.value) == f"caps: expected a non-empty mapping attribute -> cap, found {found}"


def test_a_malformed_fingerprint_is_refused_by_name(ledger_store: LedgerStore) -> None:
    with pytest.raises(InputError) as refused:
        ledger_store.open_session("u", "i", CAPS, fingerprint="xyz")
    assert str(refused.value) == (
        "fingerprint: expected 64 lowercase hex digits (sha256 of the interface), found 'xyz' (3 characters)"
    )


def test_caps_are_precommitted(ledger_store: LedgerStore) -> None:
    ledger_store.open_session("u", "i", CAPS)
    with pytest.raises(InputError) as refused:
        ledger_store.open_session("u", "i", {"diabetes": Fraction(4), "debt": Fraction(2)})
    assert str(refused.value) == (
        "caps: expected the caps this interaction was opened with (precommitted), found 'different caps'"
    )


def test_a_release_request_names_its_malformed_field() -> None:
    with pytest.raises(InputError) as refused:
        attrs.evolve(req(), fallback_view="")
    assert str(refused.value) == "fallback_view: expected a name of 1..256 characters, found an empty string"
    with pytest.raises(InputError) as refused:
        attrs.evolve(req(), charge_set={"diabetes"})
    assert str(refused.value) == "charge_set: expected a frozenset of attribute names, found 'set'"
    with pytest.raises(InputError) as refused:
        attrs.evolve(req(), requested=1)
    assert str(refused.value) == "requested: expected true or false, found 1"


BAD_CAPS = [
    ({"a": float("nan")}, "caps.a"),
    ({"a": math.inf}, "caps.a"),
    ({"a": 0.5}, "caps.a"),
    ({"a": Fraction(0)}, "caps.a"),
    ({"a": Fraction(-1)}, "caps.a"),
    ({"a": True}, "caps.a"),
    ({"a": "2"}, "caps.a"),
    ({}, "caps"),
    ({"": Fraction(1)}, "caps"),
]


@pytest.mark.parametrize(("caps", "field"), BAD_CAPS)
def test_bad_caps_are_refused(ledger_store: LedgerStore, caps: dict[str, object], field: str) -> None:
    with pytest.raises(InputError) as info:
        ledger_store.open_session("u", "i", caps)  # type: ignore[arg-type]
    assert str(info.value).startswith(field + ": ") and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("user", "interaction", "field"),
    [("", "i", "user"), ("u", "", "interaction"), ("u\n", "i", "user"), ("u" * 257, "i", "user"), (3, "i", "user")],
)
def test_bad_keys_are_refused(ledger_store: LedgerStore, user: object, interaction: object, field: str) -> None:
    with pytest.raises(InputError, match=f"^{field}: "):
        ledger_store.open_session(user, interaction, CAPS)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"epsilon": float("nan")}, "epsilon"),
        ({"epsilon": math.inf}, "epsilon"),
        ({"epsilon": 0.25}, "epsilon"),
        ({"epsilon": Fraction(0)}, "epsilon"),
        ({"epsilon": Fraction(-2, 3)}, "epsilon"),
        ({"epsilon": True}, "epsilon"),
        ({"release_id": "XYZ"}, "release_id"),
        ({"turn_id": ""}, "turn_id"),
        ({"index": -1}, "index"),
        ({"slot": ""}, "slot"),
        ({"view": "v" * 300}, "view"),
        ({"charge_set": {"diabetes"}}, "charge_set"),
        ({"requested": 1}, "requested"),
    ],
)
def test_bad_release_requests_are_refused(changes: dict[str, object], field: str) -> None:
    fields: dict[str, object] = {
        "release_id": "ab",
        "turn_id": "cd",
        "index": 0,
        "slot": "food",
        "view": "v",
        "fallback_view": "g",
        "charge_set": frozenset({"diabetes"}),
        "epsilon": EPS,
        "requested": True,
    }
    fields.update(changes)
    with pytest.raises(InputError, match=f"^{field}: "):
        ReleaseRequest(**fields)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- SQLite specifics


def test_sqlite_settings_and_exact_text(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    ledger_store = SQLiteLedgerStore(path)
    session = ledger_store.open_session("u", "i", CAPS)
    session.charge_and_record(req())
    ledger_store.close()
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    rows = dict(raw.execute("SELECT attribute, spent FROM ledgers").fetchall())
    assert rows == {"diabetes": "2/3", "debt": "0/1"}
    assert raw.execute("SELECT typeof(spent) FROM ledgers").fetchone()[0] == "text"
    raw.close()
    again = SQLiteLedgerStore(path)
    connection = again.connect()
    assert connection.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert again.integrity_check() == "ok"
    assert again.open_session("u", "i", CAPS).load().ledger_map()["diabetes"] == EPS


@pytest.mark.parametrize("spent", ["0.6666", "nan", "2/0", "-1/3", "1e3", ""])
def test_sqlite_refuses_corrupt_ledger_text(tmp_path: Path, spent: str) -> None:
    path = tmp_path / "l.db"
    session = SQLiteLedgerStore(path).open_session("u", "i", CAPS)  # opened (and verified) before the edit
    raw = sqlite3.connect(path)
    raw.execute("UPDATE ledgers SET spent = ? WHERE attribute = 'diabetes'", (spent,))
    raw.commit()
    raw.close()
    with pytest.raises(LedgerStoreError, match="^ledgers.spent: "):
        session.load()
    with pytest.raises(LedgerStoreError):
        session.charge_and_record(req())
    with pytest.raises(LedgerStoreError, match="verification on open failed: ledgers row"):
        SQLiteLedgerStore(path)  # a later open refuses the edited ledger before serving it


def test_sqlite_refuses_a_stored_ledger_above_its_cap(tmp_path: Path) -> None:
    path = tmp_path / "l.db"
    session = SQLiteLedgerStore(path).open_session("u", "i", CAPS)
    raw = sqlite3.connect(path)
    raw.execute("UPDATE ledgers SET spent = '7/3' WHERE attribute = 'diabetes'")
    raw.commit()
    raw.close()
    with pytest.raises(ContractViolation, match="^C5: "):
        session.load()
    with pytest.raises(LedgerStoreError, match="verification on open failed: ledgers row"):
        SQLiteLedgerStore(path)


def _load_and_charge_refused(session: LedgerSession, error: type[Exception], message: str) -> None:
    """The session's next load and next charge (its locked read) each refuse by `message`."""
    with pytest.raises(error) as loading:
        session.load()
    assert str(loading.value) == message
    with pytest.raises(error) as charging:
        session.charge_and_record(req())
    assert str(charging.value) == message


@pytest.mark.parametrize(
    ("edit", "error", "message"),
    [
        (
            "UPDATE dpmem_ledgers SET spent = '0.6666' WHERE attribute = 'diabetes'",
            LedgerStoreError,
            "ledgers.spent: expected exact non-negative 'p/q' text",
        ),
        (
            "UPDATE dpmem_ledgers SET cap = 'two' WHERE attribute = 'debt'",
            LedgerStoreError,
            "ledgers.cap: expected exact non-negative 'p/q' text",
        ),
        (
            "UPDATE dpmem_ledgers SET spent = '7/3' WHERE attribute = 'diabetes'",
            ContractViolation,
            "C5: attribute diabetes: stored ledger exceeds its cap",
        ),
        (
            "DELETE FROM dpmem_ledgers",
            LedgerStoreError,
            "ledgers: no ledger rows for this session (open_session first)",
        ),
    ],
    ids=["unreadable-spent", "unreadable-cap", "above-its-cap", "rows-gone"],
)
def test_postgres_refuses_a_ledger_row_edited_after_open(edit: str, error: type[Exception], message: str) -> None:
    """An open session's ledger rows edited on the server: its next load and its next charge (the
    locked read) each refuse with the one exact line naming the column or condition, and charge nothing."""
    import psycopg

    url = postgres_server.new_database()
    ledger_store = open_ledger_store(url)
    try:
        session = ledger_store.open_session("u", "i", CAPS)
        with psycopg.connect(url, autocommit=True) as raw:
            raw.execute(edit)
        _load_and_charge_refused(session, error, message)
        with psycopg.connect(url, autocommit=True) as raw:
            assert raw.execute("SELECT count(*) FROM dpmem_releases").fetchone() == (0,)
    finally:
        ledger_store.close()


@pytest.mark.parametrize(
    ("edit", "error", "message"),
    [
        (
            "UPDATE ledgers SET cap = 'two' WHERE attribute = 'debt'",
            LedgerStoreError,
            "ledgers.cap: expected exact non-negative 'p/q' text",
        ),
        (
            "UPDATE ledgers SET spent = '7/3' WHERE attribute = 'diabetes'",
            ContractViolation,
            "C5: attribute diabetes: stored ledger exceeds its cap",
        ),
        (
            "DELETE FROM ledgers",
            LedgerStoreError,
            "ledgers: no ledger rows for this session (open_session first)",
        ),
    ],
    ids=["unreadable-cap", "above-its-cap", "rows-gone"],
)
def test_sqlite_refuses_a_ledger_row_edited_after_open(
    tmp_path: Path, edit: str, error: type[Exception], message: str
) -> None:
    """The SQLite twin of the PostgreSQL test above: the next load and the next charge each
    refuse with the one exact line, and charge nothing; opening the session again reads the
    stored caps, so an unreadable cap refuses that too, by the same line."""
    path = tmp_path / "l.db"
    ledger_store = SQLiteLedgerStore(path)
    try:
        session = ledger_store.open_session("u", "i", CAPS)
        raw = sqlite3.connect(path)
        raw.execute(edit)
        raw.commit()
        raw.close()
        _load_and_charge_refused(session, error, message)
        if "cap = 'two'" in edit:
            with pytest.raises(LedgerStoreError) as reopening:
                ledger_store.open_session("u", "i", CAPS)
            assert str(reopening.value) == message
        with sqlite3.connect(path) as raw_again:
            assert raw_again.execute("SELECT count(*) FROM releases").fetchone() == (0,)
    finally:
        ledger_store.close()


def test_sqlite_fault_inside_the_transaction_rolls_back(tmp_path: Path) -> None:
    path = tmp_path / "l.db"

    def fail(point: str) -> None:
        if point == "charge:inside":
            raise RuntimeError("injected")

    session = SQLiteLedgerStore(path, fault_hook=fail).open_session("u", "i", CAPS)
    with pytest.raises(RuntimeError):
        session.charge_and_record(req())
    snapshot = SQLiteLedgerStore(path).open_session("u", "i", CAPS).load()
    assert snapshot.ledger_map()["diabetes"] == 0 and snapshot.releases == ()


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), math.inf, True, "5"])
def test_sqlite_refuses_bad_busy_timeouts(tmp_path: Path, timeout: object) -> None:
    with pytest.raises(InputError, match="^busy_timeout_s: "):
        SQLiteLedgerStore(tmp_path / "l.db", busy_timeout_s=timeout)  # type: ignore[arg-type]


FP_A, FP_B = "a" * 64, "b" * 64


def test_fingerprint_binds_the_database_to_one_interface(ledger_store: LedgerStore) -> None:
    first = ledger_store.open_session("u", "i", CAPS, fingerprint=FP_A)
    first.charge_and_record(req())
    ledger_store.open_session("u", "other", CAPS, fingerprint=FP_A)  # same interface: any session
    for key in (("u", "i"), ("v", "j")):  # an existing and a new session alike
        with pytest.raises(InputError) as refused:
            ledger_store.open_session(*key, CAPS, fingerprint=FP_B)
        message = str(refused.value)
        assert "\n" not in message and "ledger database" in message and "different interface" in message
    # Nothing was half-written by the refusals: the refused new session has no ledgers.
    assert first.load().ledger_map()["diabetes"] == EPS
    assert ledger_store.open_session("v", "j", CAPS, fingerprint=FP_A).load().ledger_map() == {a: 0 for a in CAPS}


@pytest.mark.parametrize("fingerprint", ["", "A" * 64, "a" * 63, "g" * 64, 7, b"a" * 64])
def test_bad_fingerprints_are_refused(ledger_store: LedgerStore, fingerprint: object) -> None:
    with pytest.raises(InputError, match="fingerprint"):
        ledger_store.open_session("u", "i", CAPS, fingerprint=fingerprint)  # type: ignore[arg-type]


def test_sqlite_fingerprint_survives_reopening(tmp_path: Path) -> None:
    SQLiteLedgerStore(tmp_path / "l.db").open_session("u", "i", CAPS, fingerprint=FP_A)
    again = SQLiteLedgerStore(tmp_path / "l.db")
    assert again.fingerprint == FP_A
    with pytest.raises(InputError, match=r"ledger database .*l\.db.*different interface"):
        again.open_session("u", "i", CAPS, fingerprint=FP_B)
