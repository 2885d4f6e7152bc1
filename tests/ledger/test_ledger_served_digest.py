"""The digest of the rows a scope was served (`checkpoint.served_rows`): a hash chain over each
row in its canonical compact JSON, stored in every checkpoint. An open compares the rows it
serves with the digest a checkpoint written by an earlier version holds, so its text is part of
the stored format: any change to it would refuse every existing ledger. An unreadable row is
refused in one line naming its table and seq."""

from __future__ import annotations

import hashlib

import pytest

from dpmem_ref.ledger import LedgerStoreError
from dpmem_ref.ledger.checkpoint import NO_ROWS, served_rows
from dpmem_ref.ledger.facts import SessionKey

KEY = SessionKey("u", "i")
RELEASE = (7, "r1", "t1", 0, "food", "low", 1, '["debt", "diabetes"]', "1/3")
TURN = (9, "t1", '{"a": 1}')


def _chained(previous: str, text: str) -> str:
    return hashlib.sha256(f"{previous}\n{text}".encode()).hexdigest()


def test_the_served_digest_chains_each_row_in_compact_canonical_json() -> None:
    releases, release_digest, turns, turn_digest = served_rows(NO_ROWS, KEY, [RELEASE, RELEASE], [TURN])
    release_text = '["u","i",7,"r1","t1",0,"food","low",true,["debt","diabetes"],"1/3"]'
    assert (releases, release_digest) == (2, _chained(_chained("", release_text), release_text))
    record = hashlib.sha256(b'{"a": 1}').hexdigest()  # a turn's record is chained by its digest
    assert (turns, turn_digest) == (1, _chained("", f'["u","i",9,"t1","{record}"]'))
    # A load extends what the scope was served before.
    assert served_rows((1, _chained("", release_text), 0, ""), KEY, [RELEASE], []) == (
        2,
        release_digest,
        0,
        "",
    )


@pytest.mark.parametrize(
    ("releases", "turns", "line"),
    [
        (
            [(*RELEASE[:7], "not json", RELEASE[8])],
            [],
            "a served row is unreadable: releases seq 7: unreadable charge set",
        ),
        (
            [RELEASE],
            [(9, b"t1", '{"a": 1}')],
            "a served row is unreadable: turns seq 9: bytes where text is expected (corrupted row)",
        ),
        ([RELEASE[:5]], [], "a served row is unreadable (corrupted values)"),  # too few columns
        ([], [(9, "t1", '{"a": 1}', "extra")], "a served row is unreadable (corrupted values)"),
    ],
    ids=["release-charge-set", "turn-bytes", "release-short", "turn-long"],
)
def test_an_unreadable_served_row_is_refused_naming_its_table_and_seq(
    releases: list[tuple[object, ...]], turns: list[tuple[object, ...]], line: str
) -> None:
    with pytest.raises(LedgerStoreError) as refused:
        served_rows(NO_ROWS, KEY, releases, turns)
    assert str(refused.value) == line
