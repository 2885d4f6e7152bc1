"""A checkpoint lets an open skip what an earlier open verified, so it must never be trusted
unless this key sealed it for this database: a forged, edited, moved or unreadable checkpoint is
ignored (the open walks from the genesis). Its stored text and seal are pinned (a change would
ignore every stored checkpoint), and verification's one-line refusals name the counts and
scopes exactly."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from dpmem_ref.ledger import LedgerStoreError
from dpmem_ref.ledger.chain import ChainKey
from dpmem_ref.ledger.checkpoint import (
    Checkpoint,
    Tail,
    Verified,
    checkpoint_after,
    checkpoint_text,
    parse_checkpoint,
    verify_tail,
)
from dpmem_ref.ledger.contract import SCHEMA_VERSION
from dpmem_ref.ledger.facts import SessionKey
from dpmem_ref.ledger.verify import _Bad

KEY = ChainKey(secret=b"checkpoint-seal-key-0123456789abcdef", keyed=True)
IDENTITY = "d" * 32
FINGERPRINT = "f" * 64


def _verified() -> Verified:
    """A verified state with something in every field a checkpoint stores."""
    verified = Verified.genesis()
    verified.seq, verified.mac = 7, "a" * 64
    state = verified.state
    state.fingerprint, state.key_id, state.migrated = FINGERPRINT, KEY.key_id, True
    state.meta = {"rebind": "x"}
    state.caps[("u", "i")] = {"debt": Fraction(3), "diabetes": Fraction(2)}
    state.spent[("u", "i")] = {"debt": Fraction(1, 3), "diabetes": Fraction(0)}
    state.rollbacks = ["r1"]
    verified.counts, verified.newest = (3, 5), (11, 13)
    verified.scopes = {("u", "i"): (3, "b" * 64, 5, "c" * 64)}
    return verified


def test_a_checkpoint_is_its_fields_and_a_seal_over_the_database_and_its_data() -> None:
    checkpoint = _verified().checkpoint()
    stored = json.loads(checkpoint_text(KEY, IDENTITY, checkpoint))
    body = json.dumps({"database_id": IDENTITY, "data": checkpoint.data}, sort_keys=True, separators=(",", ":"))
    assert stored == {
        "seq": 7,
        "mac": "a" * 64,
        "data": checkpoint.data,
        "seal": KEY.mac(7, "checkpoint", "a" * 64, body),
    }
    assert checkpoint.data == {
        "fingerprint": FINGERPRINT,
        "key_id": KEY.key_id,
        "migrated": True,
        "meta": {"rebind": "x"},
        "sessions": [["u", "i", {"debt": "3/1", "diabetes": "2/1"}, {"debt": "1/3", "diabetes": "0/1"}]],
        "rollbacks": ["r1"],
        "counts": [3, 5],
        "newest": [11, 13],
        "scopes": [["u", "i", 3, "b" * 64, 5, "c" * 64]],
    }
    assert parse_checkpoint(KEY, IDENTITY, checkpoint_text(KEY, IDENTITY, checkpoint)) == checkpoint
    assert Verified.restore(checkpoint) == _verified()
    assert checkpoint_after(checkpoint) == (7, 11, 13)
    assert checkpoint_after(None) == (0, 0, 0)


def _edited(field: str, value: object) -> str:
    stored = json.loads(checkpoint_text(KEY, IDENTITY, _verified().checkpoint()))
    stored[field] = value
    return json.dumps(stored)


@pytest.mark.parametrize(
    "text",
    [
        checkpoint_text(
            ChainKey(secret=b"another-key-0123456789abcdef0123", keyed=True), IDENTITY, _verified().checkpoint()
        ),
        checkpoint_text(KEY, "e" * 32, _verified().checkpoint()),  # another database's
        _edited("seq", 8),
        _edited("mac", "b" * 64),
        _edited("data", {**_verified().checkpoint().data, "counts": [4, 5]}),
        _edited("seal", "0" * 64),
        _edited("data", "not a mapping"),
        json.dumps({"seq": 7}),
        "not json",
        None,
        b"bytes",
    ],
    ids=[
        "other-key",
        "other-database",
        "seq",
        "mac",
        "data",
        "seal",
        "data-type",
        "no-seal",
        "not-json",
        "none",
        "bytes",
    ],
)
def test_a_checkpoint_not_sealed_by_this_key_for_this_database_is_ignored(text: object) -> None:
    assert parse_checkpoint(KEY, IDENTITY, text) is None


def test_a_sealed_checkpoint_that_cannot_be_restored_is_ignored() -> None:
    data = {**_verified().checkpoint().data, "sessions": [["u", "i", {"debt": "not a fraction"}, {}]]}
    unreadable = Checkpoint(7, "a" * 64, data)
    assert parse_checkpoint(KEY, IDENTITY, checkpoint_text(KEY, IDENTITY, unreadable)) is None


def test_advancing_over_no_events_changes_nothing() -> None:
    verified = _verified()
    verified.advance(KEY, (), (), ())
    assert verified == _verified()


def _tail(counts: tuple[int, int], releases: tuple[tuple[object, ...], ...] = ()) -> Tail:
    meta = (("schema", SCHEMA_VERSION), ("fingerprint", FINGERPRINT), ("rebind", "x"))
    ledgers = (("u", "i", "debt", "1/3", "3/1"), ("u", "i", "diabetes", "0/1", "2/1"))
    return Tail((), meta, ledgers, releases, (), counts)


def test_verification_on_open_refuses_in_one_line() -> None:
    start = _verified().checkpoint()
    assert verify_tail(KEY, start, _tail((3, 5))) == _verified()
    with pytest.raises(LedgerStoreError) as refused:
        verify_tail(KEY, start, _tail((4, 6)))
    assert str(refused.value) == (
        "verification on open failed: releases / turns: 4 / 6 rows, the chain committed 3 / 5"
    )
    with pytest.raises(LedgerStoreError) as refused:
        verify_tail(KEY, start, _tail((3, 5), releases=((12,),)))  # a release row without its columns
    assert str(refused.value) == "verification on open failed: unreadable row (corrupted values)"
    with pytest.raises(LedgerStoreError) as refused:
        verify_tail(KEY, None, Tail((), (("schema", SCHEMA_VERSION),), (), (), (), (0, 0)))
    assert str(refused.value) == "verification on open failed: no chain"


def test_a_scope_is_checked_against_what_the_chain_committed() -> None:
    verified = _verified()
    ledgers = {"debt": Fraction(1, 3), "diabetes": Fraction(0)}
    verified.check_scope(SessionKey("u", "i"), ledgers, None, (3, "b" * 64, 5, "c" * 64))
    for served, line in [
        ((2, "b" * 64, 5, "c" * 64), "its release rows (2 served, 3 committed)"),
        ((3, "x" * 64, 5, "c" * 64), "its release rows (3 served, 3 committed)"),
        ((3, "b" * 64, 4, "c" * 64), "its turn rows (4 served, 5 committed)"),
        ((3, "b" * 64, 5, "x" * 64), "its turn rows (5 served, 5 committed)"),
    ]:
        with pytest.raises(_Bad) as refused:
            verified.check_scope(SessionKey("u", "i"), ledgers, None, served)
        assert (
            str(refused.value) == f"scope (u, i): {line} differ from their chain events (edited, inserted or deleted)"
        )
    with pytest.raises(_Bad) as refused:
        verified.check_scope(SessionKey("u", "other"), ledgers, None)
    assert str(refused.value) == "scope (u, other): its ledgers are not in the chain (inserted)"
