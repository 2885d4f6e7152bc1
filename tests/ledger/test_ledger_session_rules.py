"""The session template's own rules (`dpmem_ref.ledger.session`, `scopes.check_scope_keys`), on
the in-process store and SQLite:

- binding a fingerprint to a database that already holds charges of an unknown interface is
  refused by `open_session` in one line naming the database and the migration;
- every commit that appends chain events raises the anchor to the newest one;
- a charge calls the fault points "charge:inside" then "charge:committed", the second after
  COMMIT (what the crash tests kill at);
- the scopes of one charge are distinct SessionKeys other than the session's own, refused in
  one line naming `also` and every key given.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from dpmem_ref.core.errors import InputError
from dpmem_ref.ledger import LedgerStoreError, MemoryLedgerStore, SessionKey, SQLiteLedgerStore
from dpmem_ref.ledger.anchor import read_anchor
from dpmem_ref.ledger.chain import HighWater
from tests.ledger_fixtures import chain_key_fixture, charge_request, sqlite_chain_head

KEY = "session-rules-key-0123456789abcdef0123"
CAPS = {"diabetes": Fraction(2), "debt": Fraction(2)}
FINGERPRINT = "f" * 64

_chain_key = chain_key_fixture(KEY)


def _anchor(store: SQLiteLedgerStore) -> HighWater | None:
    return read_anchor(store.high_water_path, store.key, store.identity)


def test_open_session_refuses_to_bind_a_fingerprint_to_charges_of_an_unknown_interface(tmp_path: Path) -> None:
    """Charges written without a fingerprint: `open_session` with one is refused in one line that
    names the database and `dpmem ledger migrate`, and binds nothing."""
    path = tmp_path / "l.db"
    store = SQLiteLedgerStore(path)
    store.open_session("u", "i", CAPS).charge_and_record(charge_request())
    head = sqlite_chain_head(path)
    with pytest.raises(LedgerStoreError) as refused:
        store.open_session("u", "j", CAPS, fingerprint=FINGERPRINT)
    assert str(refused.value) == (
        f"ledger database {path}: charges without an interface fingerprint; bind it once to the interface "
        f"that wrote it: dpmem ledger migrate {path} --interface FILE"
    )
    assert store.fingerprint is None and sqlite_chain_head(path) == head
    store.close()


def test_open_session_raises_the_anchor_to_its_newest_event(tmp_path: Path) -> None:
    """Opening a new session commits its "bind" and "open" events and raises the anchor to the
    newest ("open"); reopening it commits no event and leaves the anchor where it is."""
    path = tmp_path / "l.db"
    store = SQLiteLedgerStore(path)
    genesis = sqlite_chain_head(path)
    assert _anchor(store) == genesis
    store.open_session("u", "i", CAPS, fingerprint=FINGERPRINT)
    opened = sqlite_chain_head(path)
    assert opened.seq == genesis.seq + 2
    assert _anchor(store) == opened
    store.open_session("u", "i", CAPS, fingerprint=FINGERPRINT)
    assert sqlite_chain_head(path) == opened and _anchor(store) == opened
    store.close()


def test_a_charge_calls_its_fault_points_inside_then_after_the_commit(tmp_path: Path) -> None:
    """ "charge:inside" before COMMIT, "charge:committed" right after it: a hook that fails at the
    second point finds the charge and its release row already committed."""
    path = tmp_path / "l.db"
    points: list[str] = []
    store = SQLiteLedgerStore(path, fault_hook=points.append)
    session = store.open_session("u", "i", CAPS)
    session.charge_and_record(charge_request())
    assert points == ["charge:inside", "charge:committed"]
    store.close()

    def fail_after_commit(point: str) -> None:
        if point == "charge:committed":
            raise RuntimeError("killed after COMMIT")

    store = SQLiteLedgerStore(path, fault_hook=fail_after_commit)
    session = store.open_session("u", "i", CAPS)
    request = charge_request()
    with pytest.raises(RuntimeError, match="killed after COMMIT"):
        session.charge_and_record(request)
    store.close()
    store = SQLiteLedgerStore(path)
    snapshot = store.open_session("u", "i", CAPS).load()
    assert [r.release_id for r in snapshot.releases][-1] == request.release_id
    assert snapshot.ledger_map()["diabetes"] == Fraction(2, 3)
    store.close()


@pytest.mark.parametrize(
    ("also", "found"),
    [
        ((SessionKey("u", "i"),), "[\"SessionKey(user='u', interaction='i')\"]"),  # this session's own
        (
            (SessionKey("u", "j"), SessionKey("u", "j")),
            "[\"SessionKey(user='u', interaction='j')\", \"SessionKey(use...",
        ),  # two keys: cut to one short line
        (("u/j",), "['u/j']"),  # not a SessionKey
    ],
    ids=["own-scope", "twice", "not-a-key"],
)
def test_the_scopes_of_a_charge_are_distinct_session_keys_other_than_its_own(
    also: tuple[object, ...], found: str
) -> None:
    """`also` must hold SessionKeys, each once, none the charged session's: refused in one line
    naming `also`, what is expected and every key given; nothing is charged."""
    store = MemoryLedgerStore()
    session = store.open_session("u", "i", CAPS)
    store.open_session("u", "j", CAPS)
    with pytest.raises(InputError) as refused:
        session.charge_and_record(charge_request(), also=also)  # type: ignore[arg-type]
    assert str(refused.value) == f"also: expected distinct SessionKeys other than this session's, found {found}"
    assert session.load().ledger_map() == {"diabetes": 0, "debt": 0} and session.load().releases == ()
