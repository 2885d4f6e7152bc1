"""What `replay` (the chain verifier behind `dpmem ledger verify`) reports, line for line.

An auditor reads one problem line: what is wrong and where (the chain row, the event's seq
and kind, the table row), for the walk (shape, seq, MAC), every event kind (genesis, bind,
open, charge with its C3/C5 checks and scopes, turn, rebind, recoveries), every table compared
with the chain, and the high-water mark. Each chain here is written by a key holder and sealed with the right key (an explicit non-default
key, so a MAC or key-id mistake cannot hide behind the development key): only the semantic
check of the event can catch it. The rebind cases are the evidence rule of an interface
change: the ledgers are carried over unchanged, no counted attribute is dropped and no new cap
falls below what was spent (C5), so a rebind that lowers a cap or drops an attribute fails
verification even when every table agrees with it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import attrs
import pytest

from dpmem_ref.ledger.chain import (
    GENESIS_MAC,
    MAX_BODY_BYTES,
    ChainKey,
    HighWater,
    bind_body,
    canonical,
    charge_body,
    genesis_body,
    open_body,
    rows_identity,
    turn_body,
)
from dpmem_ref.ledger.contract import SCHEMA_VERSION
from dpmem_ref.ledger.facts import SessionKey, SlotRelease
from dpmem_ref.ledger.verify import LedgerRows, Replay, replay

KEY = ChainKey(secret=b"verify-problem-lines-key-0123456789", keyed=True)
FP_A, FP_B, FP_C = "a" * 64, "b" * 64, "c" * 64
SESSION = SessionKey("alice", "chat")
CAPS = {"debt": Fraction(3), "diabetes": Fraction(2)}
RELEASE = SlotRelease(seq=1, release_id="r1", turn_id="t1", index=0, slot="food", view="low", admitted=True,
                      charge_set=frozenset({"diabetes"}), epsilon=Fraction(2, 3))  # fmt: skip
EVENTS = (
    ("genesis", genesis_body(KEY, SCHEMA_VERSION, "0123456789abcdef" * 2)),
    ("bind", bind_body(FP_A)),
    ("open", open_body(SESSION, CAPS)),
    ("charge", charge_body(SESSION, RELEASE, {"debt": Fraction(0), "diabetes": Fraction(2, 3)})),
)
RELEASE_ROW = ("alice", "chat", 1, "r1", "t1", 0, "food", "low", 1, '["diabetes"]', "2/3")
REBIND = "chain seq 5 (rebind)"


def sealed(events: tuple[tuple[str, str], ...], key: ChainKey = KEY) -> tuple[tuple[Any, ...], ...]:
    """The chain rows (seq, kind, body, mac) of `events`, each MAC over its predecessor's."""
    rows, previous = [], GENESIS_MAC
    for seq, (kind, body) in enumerate(events, start=1):
        previous = key.mac(seq, kind, previous, body)
        rows.append((seq, kind, body, previous))
    return tuple(rows)


def ledger_rows(
    events: tuple[tuple[str, str], ...] = EVENTS,
    fingerprint: str = FP_A,
    meta: tuple[tuple[str, str], ...] = (),
    ledgers: dict[str, tuple[str, str]] | None = None,
    releases: tuple[tuple[Any, ...], ...] = (RELEASE_ROW,),
    turns: tuple[tuple[Any, ...], ...] = (),
) -> LedgerRows:
    """Every table as the chain derives it (the one release charged 2/3 to diabetes)."""
    spent_caps = {"debt": ("0/1", "3/1"), "diabetes": ("2/3", "2/1")} if ledgers is None else ledgers
    return LedgerRows(
        meta=(("schema", SCHEMA_VERSION), ("fingerprint", fingerprint), *meta),
        chain=sealed(events),
        ledgers=tuple(("alice", "chat", a, spent, cap) for a, (spent, cap) in spent_caps.items()),
        releases=releases,
        turns=turns,
    )


def with_row(rows: LedgerRows, position: int, row: Sequence[Any]) -> LedgerRows:
    """`rows` with chain row `position` (0-based) replaced by `row` (the others keep their seals)."""
    chain = (*rows.chain[:position], row, *rows.chain[position + 1 :])
    return LedgerRows(rows.meta, chain, rows.ledgers, rows.releases, rows.turns)


def problem(rows: LedgerRows, mark: HighWater | None = None) -> str | None:
    return replay(rows, KEY, mark).problem


def test_an_intact_chain_replays_to_its_counts_and_key() -> None:
    rows = ledger_rows()
    assert replay(rows, KEY, HighWater(4, rows.chain[-1][3])) == Replay(
        fingerprint=FP_A, key_id=KEY.key_id, events=4, sessions=1, releases=1, turns=0, rollbacks=(),
        migrated=False, problem=None, identity=rows_identity(rows.chain),
    )  # fmt: skip


def test_an_emptied_chain_names_the_restore() -> None:
    rows = LedgerRows(meta=(("schema", SCHEMA_VERSION),), chain=(), ledgers=(), releases=(), turns=())
    assert problem(rows) == (
        "no chain events (emptied: tampered); put the newest verified backup back with dpmem ledger restore"
    )


def test_another_key_is_named_by_its_key_id_before_the_mac_walk() -> None:
    other = ChainKey(secret=b"another-key-of-this-operator-0123", keyed=True)
    assert replay(ledger_rows(), other, None).problem == (
        f"chained with key id {KEY.key_id}, but the configured key (DPMEM_LEDGER_KEY / DPMEM_LEDGER_KEY_FILE) "
        f"has key id {other.key_id}"
    )


def test_a_long_stored_key_id_is_cut_to_sixteen_characters() -> None:
    genesis = canonical({"key_id": "0123456789abcdefXYZ", "schema": SCHEMA_VERSION, "database_id": "0" * 32})
    assert problem(ledger_rows((("genesis", genesis), *EVENTS[1:]))) == (
        "chained with key id 0123456789abcdef, but the configured key (DPMEM_LEDGER_KEY / DPMEM_LEDGER_KEY_FILE) "
        f"has key id {KEY.key_id}"
    )


@pytest.mark.parametrize("shape", [3, 5])
def test_a_misshapen_first_row_has_no_key_id(shape: int) -> None:
    rows = ledger_rows()
    first = (*rows.chain[0], "extra") if shape == 5 else rows.chain[0][:3]
    assert problem(with_row(rows, 0, first)) == (
        "chained with key id None, but the configured key (DPMEM_LEDGER_KEY / DPMEM_LEDGER_KEY_FILE) "
        f"has key id {KEY.key_id}"
    )


def test_an_unreadable_genesis_body_is_named_at_seq_1() -> None:
    assert problem(ledger_rows((("genesis", "not json"), *EVENTS[1:]))) == "chain seq 1: unreadable event body"


def test_a_genesis_body_that_is_no_text_is_named_at_seq_1() -> None:
    rows = ledger_rows()
    assert problem(with_row(rows, 0, (1, "genesis", 5, rows.chain[0][3]))) == "chain seq 1: unreadable text"


def test_a_chain_short_of_its_anchor_names_its_head_seq() -> None:
    assert problem(ledger_rows(), HighWater(9, "f" * 64)) == (
        "the chain (head seq 4) does not reach its high-water mark seq 9: rolled back "
        "or truncated without a recorded rollback"
    )


def test_a_release_row_of_another_shape_is_an_unreadable_row() -> None:
    assert problem(ledger_rows(releases=(RELEASE_ROW[:-1],))) == "unreadable row (corrupted values)"


TURN_ROW = ("alice", "chat", 1, "t1", '{"query":"q"}')
TURN = ("turn", turn_body(SESSION, 1, "t1", '{"query":"q"}'))
WITH_TURN = (*EVENTS, TURN)


def test_a_recorded_turn_replays_and_its_row_is_read_as_text() -> None:
    assert replay(ledger_rows(WITH_TURN, turns=(TURN_ROW,)), KEY, None).turns == 1
    for column, value, words in (
        (0, b"alice", "bytes where text is expected (corrupted row)"),
        (1, 5, "unreadable text"),
        (3, "t\x001", "unreadable text"),
        (4, None, "unreadable text"),
    ):
        row = (*TURN_ROW[:column], value, *TURN_ROW[column + 1 :])
        assert problem(ledger_rows(WITH_TURN, turns=(row,))) == f"turns seq 1: {words}"


# ------------------------------------------------------------------ the walk and the events


def event(kind: str, **data: Any) -> tuple[str, str]:
    return kind, json.dumps(data, sort_keys=True)


def charge(release: dict[str, Any] | None = None, **fields: Any) -> tuple[str, str]:
    """The base charge event (2/3 on diabetes, release seq 1) with `release` fields and
    top-level `fields` replaced (None removes one)."""
    data: dict[str, Any] = json.loads(EVENTS[3][1])
    data["release"].update(release or {})
    data.update(fields)
    return "charge", json.dumps({k: v for k, v in data.items() if v is not None}, sort_keys=True)


def release_row(**columns: Any) -> tuple[Any, ...]:
    names = ("user", "interaction", "seq", "release_id", "turn_id", "index", "slot", "view", "admitted", "set", "eps")
    return tuple(columns.get(name, value) for name, value in zip(names, RELEASE_ROW, strict=True))


INTACT = ledger_rows()
OPENED = ledger_rows(EVENTS[:3], ledgers={"debt": ("0/1", "3/1"), "diabetes": ("0/1", "2/1")}, releases=())
GENESIS = EVENTS[0]
CHARGE = "chain seq 4 (charge)"
WALK_PROBLEMS: dict[str, tuple[LedgerRows, str]] = {
    "a row of another shape": (
        with_row(INTACT, 1, INTACT.chain[1][:3]), "chain row 2: wrong shape",
    ),
    "a seq that is no integer": (with_row(INTACT, 1, ("2", *INTACT.chain[1][1:])), "chain row 2: not a positive integer seq"),
    "a seq that is a bool": (with_row(INTACT, 0, (True, *INTACT.chain[0][1:])), "chain row 1: not a positive integer seq"),
    "a seq skipped": (
        with_row(INTACT, 1, (3, *INTACT.chain[1][1:])),
        "chain seq 3: expected seq 2 (a chain row was deleted or inserted)",
    ),
    "a kind that is no text": (with_row(INTACT, 1, (2, 2, *INTACT.chain[1][2:])), "chain seq 2: unreadable text"),
    "a mac that is bytes": (
        with_row(INTACT, 1, (*INTACT.chain[1][:3], b"0")), "chain seq 2: bytes where text is expected (corrupted row)",
    ),
    "an edited body": (
        with_row(INTACT, 1, (2, "bind", bind_body(FP_B), INTACT.chain[1][3])),
        "chain seq 2: MAC does not match (this row or its predecessor was edited, reordered or forged)",
    ),
    "an event body too long": (
        ledger_rows((GENESIS, ("bind", "x" * (MAX_BODY_BYTES + 1)))), "chain seq 2 (bind): event body too long",
    ),
    "an event body that is no JSON": (ledger_rows((GENESIS, ("bind", "{"))), "chain seq 2 (bind): unreadable event body"),
    "an event body that is no object": (ledger_rows((GENESIS, ("bind", "[1]"))), "chain seq 2 (bind): unreadable event body"),
    "an event body nested too deep": (
        ledger_rows((GENESIS, ("bind", "[" * 30000 + "]" * 30000))), "chain seq 2 (bind): unreadable event body",
    ),
    "a genesis of another kind": (
        ledger_rows((("origin", GENESIS[1]), *EVENTS[1:])),
        f"chain seq 1 (origin): the chain does not start with a genesis event of schema {SCHEMA_VERSION}",
    ),
    "a genesis of another schema": (
        ledger_rows((("genesis", canonical({"key_id": KEY.key_id, "schema": "1"})), *EVENTS[1:])),
        f"chain seq 1 (genesis): the chain does not start with a genesis event of schema {SCHEMA_VERSION}",
    ),
    "a second binding": (ledger_rows((*EVENTS, ("migrate", bind_body(FP_B)))), "chain seq 5 (migrate): a second interface binding"),
    "a fingerprint that is no text": (ledger_rows((GENESIS, event("bind", fingerprint=None))), "chain seq 2 (bind): unreadable text"),
    "a session opened twice": (
        ledger_rows((*EVENTS[:3], EVENTS[2])), "chain seq 4 (open): a session opened twice or without caps",
    ),
    "a session opened without caps": (
        ledger_rows((*EVENTS[:2], event("open", user="alice", interaction="chat", caps={}))),
        "chain seq 3 (open): a session opened twice or without caps",
    ),
    "a session opened with caps that are no object": (
        ledger_rows((*EVENTS[:2], event("open", user="alice", interaction="chat", caps=["2/1"]))),
        "chain seq 3 (open): a session opened twice or without caps",
    ),
    "a session whose user is no text": (
        ledger_rows((*EVENTS[:2], event("open", user=1, interaction="chat", caps={"debt": "1/1"}))),
        "chain seq 3 (open): unreadable text",
    ),
    "a session whose interaction is no text": (
        ledger_rows((*EVENTS[:2], event("open", user="alice", interaction=None, caps={"debt": "1/1"}))),
        "chain seq 3 (open): unreadable text",
    ),
    "an opened attribute that is no text": (
        ledger_rows((*EVENTS[:2], event("open", user="alice", interaction="chat", caps={"\t": "1/1"}))),
        "chain seq 3 (open): unreadable text",
    ),
    "an opened cap that is unreadable": (
        ledger_rows((*EVENTS[:2], event("open", user="alice", interaction="chat", caps={"debt": "-1/1"}))),
        "chain seq 3 (open): expected exact non-negative 'p/q' text",
    ),
    "a turn of a session never opened": (
        ledger_rows((*EVENTS, event("turn", user="bob", interaction="chat", seq=1, turn_id="t1", record_sha256="0"))),
        "chain seq 5 (turn): a session that was never opened",
    ),
    "a turn whose seq is no integer": (
        ledger_rows((*EVENTS, event("turn", user="alice", interaction="chat", seq="1", turn_id="t1"))),
        "chain seq 5 (turn): not a positive integer seq",
    ),
    "a turn committed twice": (ledger_rows((*WITH_TURN, TURN)), "chain seq 6 (turn): turn seq 1 committed twice"),
    "an unknown event kind": (ledger_rows((*EVENTS, event("grant", user="alice"))), "chain seq 5 (grant): unknown event kind"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(WALK_PROBLEMS))
def test_a_bad_chain_row_or_event_is_named_at_its_seq(case: str) -> None:
    rows, words = WALK_PROBLEMS[case]
    assert problem(rows) == words


CHARGE_PROBLEMS: dict[str, tuple[tuple[str, str], str]] = {
    "no release": (event("charge", user="alice", interaction="chat"), "no release"),
    "a session never opened": (charge(user="bob"), "a session that was never opened"),
    "a user that is no text": (charge(user=1), "unreadable text"),
    "an interaction that is no text": (charge(interaction=["chat"]), "unreadable text"),
    "a release seq that is no integer": (charge({"seq": 0}), "not a positive integer seq"),
    "a charge set that is no list": (charge({"charge_set": "diabetes"}), "unreadable charge set"),
    "a charge set holding no text": (charge({"charge_set": ["diabetes", 1]}), "unreadable charge set"),
    "an unreadable eps": (charge({"epsilon": "2/0"}), "expected exact non-negative 'p/q' text"),
    "an admission that is no bool": (charge({"admitted": 1}), "unreadable admission"),
    "a fallback with a charge set": (charge({"admitted": False, "epsilon": "0/1"}), "a fallback with a charge"),
    "a fallback with an eps": (charge({"admitted": False, "charge_set": []}, ledgers={"debt": "0/1", "diabetes": "0/1"}),
                               "a fallback with a charge"),
    "a charged release with eps 0": (charge({"epsilon": "0/1"}, ledgers={"debt": "0/1", "diabetes": "0/1"}),
                                     "a charged release with eps 0 (C3)"),
    "a scope that is no object": (charge(scopes=["all"]), "unreadable scope"),
    "a scope of a session never opened": (charge(scopes=[{"user": "alice", "interaction": "all", "ledgers": {}}]),
                                          "a session that was never opened"),
    "the session debited twice": (charge(scopes=[{"user": "alice", "interaction": "chat", "ledgers": {}}]),
                                  "a scope debited twice"),
    "an attribute without a ledger": (charge({"charge_set": ["pregnancy"]}), "charged to an attribute without a ledger"),
    "a charge past the cap": (charge({"epsilon": "7/3"}, ledgers={"debt": "0/1", "diabetes": "7/3"}),
                              "C5: the committed charges exceed the cap of diabetes"),
    "ledgers that are not the sum": (charge(ledgers={"debt": "0/1", "diabetes": "1/3"}),
                                     "its ledgers differ from the sum of the committed charges"),
    "no ledgers": (charge(ledgers=None), "its ledgers differ from the sum of the committed charges"),
    "an unreadable ledger": (charge(ledgers={"debt": "0/1", "diabetes": 1}), "expected exact 'p/q' text, found int"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CHARGE_PROBLEMS))
def test_a_bad_charge_event_is_named_at_its_seq(case: str) -> None:
    bad, words = CHARGE_PROBLEMS[case]
    assert problem(ledger_rows((*EVENTS[:3], bad))) == f"{CHARGE}: {words}"


def test_a_release_seq_charged_twice_is_named() -> None:
    again = charge({"release_id": "r2"}, ledgers={"debt": "0/1", "diabetes": "4/3"})
    assert problem(ledger_rows((*EVENTS, again))) == "chain seq 5 (charge): release seq 1 committed twice"


def test_a_charge_may_reach_the_cap_and_no_further() -> None:
    full = charge({"epsilon": "2/1"}, ledgers={"debt": "0/1", "diabetes": "2/1"})
    tables = {"debt": ("0/1", "3/1"), "diabetes": ("2/1", "2/1")}
    assert problem(ledger_rows((*EVENTS[:3], full), ledgers=tables, releases=(release_row(eps="2/1"),))) is None


def test_a_fallback_and_an_uncharged_release_are_no_charge() -> None:
    """A fallback (not admitted: no charge set, eps 0) and an admitted view charged to no
    attribute (a public slot: eps 0 allowed) leave every ledger at 0."""
    zero = {"debt": "0/1", "diabetes": "0/1"}
    for admitted in (False, True):
        release: dict[str, Any] = {"admitted": admitted, "charge_set": [], "epsilon": "0/1"}
        row = release_row(admitted=int(admitted), set="[]", eps="0/1")
        tables = {"debt": ("0/1", "3/1"), "diabetes": ("0/1", "2/1")}
        assert (
            problem(ledger_rows((*EVENTS[:3], charge(release, ledgers=zero)), ledgers=tables, releases=(row,))) is None
        )


SCOPED = (
    *EVENTS[:3],
    ("open", open_body(SessionKey("alice", "all"), {"diabetes": Fraction(1)})),
    charge({"epsilon": "1/3"}, ledgers={"debt": "0/1", "diabetes": "1/3"},
           scopes=[{"user": "alice", "interaction": "all", "ledgers": {"diabetes": "1/3"}}]),
)  # fmt: skip


def scoped_rows(events: tuple[tuple[str, str], ...] = SCOPED) -> LedgerRows:
    rows = ledger_rows(
        events, ledgers={"debt": ("0/1", "3/1"), "diabetes": ("1/3", "2/1")}, releases=(release_row(eps="1/3"),)
    )
    scope = (("alice", "all", "diabetes", "1/3", "1/1"),)
    return LedgerRows(rows.meta, rows.chain, rows.ledgers + scope, rows.releases, rows.turns)


def test_a_multi_scope_charge_debits_every_scope() -> None:
    assert replay(scoped_rows(), KEY, None).sessions == 2
    assert problem(scoped_rows()) is None
    wrong = charge({"epsilon": "1/3"}, ledgers={"debt": "0/1", "diabetes": "1/3"},
                   scopes=[{"user": "alice", "interaction": "all", "ledgers": {"diabetes": "0/1"}}])  # fmt: skip
    assert problem(scoped_rows((*SCOPED[:4], wrong))) == (
        "chain seq 5 (charge): its ledgers differ from the sum of the committed charges"
    )
    past = charge({"epsilon": "4/3"}, ledgers={"debt": "0/1", "diabetes": "4/3"},
                  scopes=[{"user": "alice", "interaction": "all", "ledgers": {"diabetes": "4/3"}}])  # fmt: skip
    assert problem(scoped_rows((*SCOPED[:4], past))) == (
        "chain seq 5 (charge): C5: the committed charges exceed the cap of diabetes"
    )


def test_a_migrated_chain_and_its_recorded_recoveries_are_reported() -> None:
    recoveries = (
        ("rollback", canonical({"from_seq": 9, "from_mac": "bb", "to_seq": 4, "to_mac": "cc"})),
        ("reanchor", canonical({"previous": "3:aa", "to_seq": 7, "to_mac": "dd"})),
    )
    found = replay(ledger_rows((GENESIS, ("migrate", bind_body(FP_A)), *EVENTS[2:], *recoveries)), KEY, None)
    assert (found.problem, found.migrated, found.events) == (None, True, 6)
    assert found.rollbacks == (
        "seq 5: restored back to chain seq 4 from seq 9",
        "seq 6: re-anchored at chain seq 7 (the anchor was 3:aa)",
    )


def test_an_event_body_of_the_largest_size_is_read() -> None:
    padding = MAX_BODY_BYTES - len(canonical({"previous": "", "to_seq": 1, "to_mac": ""}))
    body = canonical({"previous": "p" * padding, "to_seq": 1, "to_mac": ""})
    assert len(body) == MAX_BODY_BYTES
    assert replay(ledger_rows((*EVENTS, ("reanchor", body))), KEY, None).rollbacks == (
        f"seq 5: re-anchored at chain seq 1 (the anchor was {'p' * padding})",
    )


# ------------------------------------------------------------------ the tables against the chain


def tables(**changes: Any) -> LedgerRows:
    """The intact rows with a turn, one table replaced."""
    rows = ledger_rows(WITH_TURN, turns=(TURN_ROW,))
    return attrs.evolve(rows, **changes)


TABLE_PROBLEMS: dict[str, tuple[LedgerRows, str]] = {
    "no schema row": (tables(meta=(("fingerprint", FP_A),)), f"meta.schema is not version {SCHEMA_VERSION}"),
    "another schema": (tables(meta=(("schema", "1"), ("fingerprint", FP_A))), f"meta.schema is not version {SCHEMA_VERSION}"),
    "another fingerprint": (
        tables(meta=(("schema", SCHEMA_VERSION), ("fingerprint", FP_B))),
        "meta.fingerprint differs from the fingerprint the chain bound",
    ),
    "no fingerprint": (tables(meta=(("schema", SCHEMA_VERSION),)), "meta.fingerprint differs from the fingerprint the chain bound"),
    "an inserted meta row": (
        tables(meta=(("schema", SCHEMA_VERSION), ("fingerprint", FP_A), ("runtime.z", "1"), ("runtime.y", "2"))),
        "meta row runtime.y: differs from the chain (edited, inserted or deleted)",
    ),
    "a ledger row with bytes": (
        tables(ledgers=((b"alice", "chat", "debt", "0/1", "3/1"),)), "ledgers row: bytes where text is expected (corrupted row)",
    ),
    "a ledger row with another spent": (
        tables(ledgers=(("alice", "chat", "debt", "0/1", "3/1"), ("alice", "chat", "diabetes", "1/3", "2/1"))),
        "ledgers row (alice, chat, diabetes): differs from the chain (L_a = sum of committed charges, B_a as opened)",
    ),
    "a ledger row with another cap": (
        tables(ledgers=(("alice", "chat", "debt", "0/1", "4/1"),)),
        "ledgers row (alice, chat, debt): differs from the chain (L_a = sum of committed charges, B_a as opened)",
    ),
    "a ledger row in another spelling": (
        tables(ledgers=(("alice", "chat", "debt", "0/1", "6/2"),)),
        "ledgers row (alice, chat, debt): differs from the chain (not the canonical 'p/q' text)",
    ),
    "a spent ledger in another spelling": (
        tables(ledgers=(("alice", "chat", "diabetes", "4/6", "2/1"),)),
        "ledgers row (alice, chat, diabetes): differs from the chain (not the canonical 'p/q' text)",
    ),
    "a ledger row that is unreadable": (
        tables(ledgers=(("alice", "chat", "debt", "0/1", "3"),)),
        "ledgers row (alice, chat, debt): expected exact non-negative 'p/q' text",
    ),
    "an inserted ledger row": (
        tables(ledgers=(*INTACT.ledgers, ("alice", "chat", "pregnancy", "0/1", "1/1"))),
        "ledgers row (alice, chat, pregnancy): differs from the chain (L_a = sum of committed charges, B_a as opened)",
    ),
    "deleted ledger rows": (tables(ledgers=()), "ledgers row ('alice', 'chat', 'debt'): deleted (the chain opened it)"),
    "an inserted release row": (
        tables(releases=(RELEASE_ROW, release_row(seq=2))), "releases seq 2: not in the chain (inserted)",
    ),
    "a deleted release row": (tables(releases=()), "releases seq 1: deleted (its chain event remains)"),
    "a deleted turn row": (tables(turns=()), "turns seq 1: deleted (its chain event remains)"),
    "an edited turn row": (
        tables(turns=(("alice", "chat", 1, "t2", TURN_ROW[4]),)), "turns seq 1: differs from its chain event (edited)",
    ),
    "a release row seq that is no integer": (tables(releases=(release_row(seq="1"),)), "releases row: not a positive integer seq"),
    "a release row seq out of range": (
        tables(releases=(release_row(seq=1 << 62),)), "releases row: not a positive integer seq",
    ),
    "a release row seq at the range's end": (
        tables(releases=(release_row(seq=(1 << 62) - 1),)), f"releases seq {(1 << 62) - 1}: not in the chain (inserted)",
    ),
    "an edited release view": (tables(releases=(release_row(view="high"),)), "releases seq 1: differs from its chain event (edited)"),
    "an edited release index": (tables(releases=(release_row(index=1),)), "releases seq 1: differs from its chain event (edited)"),
    "an edited admission": (tables(releases=(release_row(admitted=0),)), "releases seq 1: differs from its chain event (edited)"),
    "an admission that is no 0/1": (
        tables(releases=(release_row(admitted=2),)), "releases seq 1: unreadable row (or not the canonical charge set text)",
    ),
    "a charge set that is no JSON": (tables(releases=(release_row(set="[diabetes"),)), "releases seq 1: unreadable charge set"),
    "a charge set that is no list": (
        tables(releases=(release_row(set='{"diabetes": 1}'),)),
        "releases seq 1: unreadable row (or not the canonical charge set text)",
    ),
    "a charge set in another spelling": (
        tables(releases=(release_row(set='["diabetes" ]'),)),
        "releases seq 1: unreadable row (or not the canonical charge set text)",
    ),
    "an edited charge set": (
        tables(releases=(release_row(set='["debt"]'),)), "releases seq 1: differs from its chain event (edited)",
    ),
    "a charge set that is bytes": (
        tables(releases=(release_row(set=b'["diabetes"]'),)), "releases seq 1: bytes where text is expected (corrupted row)",
    ),
    "an eps in another spelling": (
        tables(releases=(release_row(eps="4/6"),)), "releases seq 1: differs from the chain (not the canonical 'p/q' text)",
    ),
    "an edited eps": (tables(releases=(release_row(eps="1/3"),)), "releases seq 1: differs from its chain event (edited)"),
}  # fmt: skip
for _column in ("user", "interaction", "release_id", "turn_id", "slot", "view"):
    TABLE_PROBLEMS[f"a release {_column} that is no text"] = (
        tables(releases=(release_row(**{_column: 3}),)),
        "releases seq 1: unreadable text",
    )


@pytest.mark.parametrize("case", sorted(TABLE_PROBLEMS))
def test_a_table_row_that_differs_from_the_chain_is_named(case: str) -> None:
    rows, words = TABLE_PROBLEMS[case]
    assert problem(rows) == words


def test_the_intact_tables_with_a_turn_verify_against_their_anchor() -> None:
    rows = tables()
    assert problem(rows) is None
    for seq in (1, 5):
        assert problem(rows, HighWater(seq, rows.chain[seq - 1][3])) is None
    # seq 0 is no committed head, whatever MAC it carries (the genesis's, or the head's: the row
    # a Python index -1 would find)
    marks = (
        HighWater(0, GENESIS_MAC),
        HighWater(0, rows.chain[-1][3]),
        HighWater(6, "f" * 64),
        HighWater(5, rows.chain[3][3]),
    )
    for mark in marks:
        assert problem(rows, mark) == (
            f"the chain (head seq 5) does not reach its high-water mark seq {mark.seq}: rolled back "
            "or truncated without a recorded rollback"
        )


# ------------------------------------------------------------------ rebind events


def rebind(**fields: Any) -> tuple[tuple[str, str], ...]:
    """The chain with a rebind event (seq 5) from FP_A to FP_B: `fields` replace its defaults
    (the one session carried with its caps and ledgers unchanged)."""
    data: dict[str, Any] = {
        "expected": FP_A,
        "fingerprint": FP_B,
        "meta": {"runtime.epoch": "1"},
        "sessions": [
            {"user": "alice", "interaction": "chat", "caps": {"debt": "3/1", "diabetes": "2/1"},
             "ledgers": {"debt": "0/1", "diabetes": "2/3"}},
        ],
    }  # fmt: skip
    data.update(fields)
    return (*EVENTS, ("rebind", json.dumps(data, sort_keys=True)))


def session(**fields: Any) -> dict[str, Any]:
    entry = {"user": "alice", "interaction": "chat", "caps": {"debt": "3/1", "diabetes": "2/1"},
             "ledgers": {"debt": "0/1", "diabetes": "2/3"}}  # fmt: skip
    entry.update(fields)
    return {k: v for k, v in entry.items() if v is not None}


def rebound(events: tuple[tuple[str, str], ...], ledgers: dict[str, tuple[str, str]] | None = None) -> str | None:
    """The problem of the chain `events` with every table as a faithful store would write it."""
    return problem(ledger_rows(events, FP_B, (("runtime.epoch", "1"),), ledgers))


def test_a_faithful_rebind_verifies() -> None:
    assert rebound(rebind()) is None


REBIND_PROBLEMS: dict[str, tuple[dict[str, Any], str]] = {
    "from another fingerprint": ({"expected": FP_C}, "rebinds from another fingerprint than the bound one"),
    "a fingerprint that is no text": ({"fingerprint": 7}, "unreadable text"),
    "meta that is no object": ({"meta": [], "sessions": []}, "unreadable rebind"),
    "sessions that are no list": ({"sessions": {}}, "unreadable rebind"),
    "an unprintable meta key": ({"meta": {"runtime.\n": "1"}}, "unreadable text"),
    "a meta value that is no text": ({"meta": {"runtime.epoch": 1}}, "unreadable text"),
    "a session that is no object": ({"sessions": [5]}, "unreadable session"),
    "a session without caps": ({"sessions": [session(caps=None)]}, "unreadable session"),
    "a session never opened": ({"sessions": [session(user="bob")]}, "a session that was never opened"),
    "an unprintable attribute": (
        {"sessions": [session(caps={"debt": "3/1", "diabetes": "2/1", "\n": "1/1"})]}, "unreadable text",
    ),
    "an unreadable cap": (
        {"sessions": [session(caps={"debt": "3/1", "diabetes": "two"})]}, "expected exact non-negative 'p/q' text",
    ),
    "a session without its ledgers": (
        {"sessions": [session(ledgers=None)]}, "its ledgers differ from the sum of the committed charges",
    ),
    "ledgers that are no object": (
        {"sessions": [session(ledgers=["2/3"])]}, "its ledgers differ from the sum of the committed charges",
    ),
    "an unreadable carried ledger": (
        {"sessions": [session(ledgers={"debt": "0/1", "diabetes": 0.66})]}, "expected exact 'p/q' text, found float",
    ),
    "a carried ledger that was reset": (
        {"sessions": [session(ledgers={"debt": "0/1", "diabetes": "0/1"})]},
        "its ledgers differ from the sum of the committed charges",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(REBIND_PROBLEMS))
def test_a_bad_rebind_event_is_named_at_its_seq(case: str) -> None:
    fields, words = REBIND_PROBLEMS[case]
    assert rebound(rebind(**fields)) == f"{REBIND}: {words}"


C5_REBINDS: dict[str, tuple[dict[str, str], dict[str, str], dict[str, tuple[str, str]]]] = {
    "a cap below the spent ledger": (
        {"debt": "3/1", "diabetes": "1/2"}, {"debt": "0/1", "diabetes": "2/3"},
        {"debt": ("0/1", "3/1"), "diabetes": ("2/3", "1/2")},
    ),
    "an unspent attribute dropped": ({"diabetes": "2/1"}, {"diabetes": "2/3"}, {"diabetes": ("2/3", "2/1")}),
    "a spent attribute dropped": ({"debt": "3/1"}, {"debt": "0/1"}, {"debt": ("0/1", "3/1")}),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(C5_REBINDS))
def test_a_rebind_below_the_spent_ledgers_fails_c5_though_the_tables_agree(case: str) -> None:
    """The tables agree with the event (a key holder wrote both): only C5 at the rebind catches it."""
    caps, ledgers, tables = C5_REBINDS[case]
    assert rebound(rebind(sessions=[session(caps=caps, ledgers=ledgers)]), tables) == (
        f"{REBIND}: C5: new caps below the spent ledgers (or an attribute dropped)"
    )


def test_a_cap_may_fall_to_the_spent_ledger() -> None:
    caps, tables = {"debt": "3/1", "diabetes": "2/3"}, {"debt": ("0/1", "3/1"), "diabetes": ("2/3", "2/3")}
    assert rebound(rebind(sessions=[session(caps=caps)]), tables) is None
