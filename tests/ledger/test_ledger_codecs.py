"""A stored turn record or release row that cannot be decoded is refused in one line naming the
column it came from, at any depth of a public value (tagged fractions, tuples, sets), and a row
of the wrong shape is named as such; an exact fraction's text is bounded (401 characters: 200
digits each side) and a value at the bound is read."""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

import pytest

from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.ledger import LedgerStoreError
from dpmem_ref.ledger.codecs import MAX_FRACTION_TEXT, decode_release, decode_turn, encode_turn, fraction_from_text

RECORD = TurnRecord(
    query="q",
    views=(("food", "low-glycemic"),),
    control=(("food", "released"), frozenset({Fraction(1, 3), -Fraction(2)})),
    response="r",
    admitted=(True,),
    charges=(("food", frozenset({"diabetes"}), Fraction(1, 3)),),
)
NOT_A_FRACTION = "expected exact non-negative 'p/q' text"


def _edited(**fields: Any) -> str:
    data = json.loads(encode_turn(RECORD))
    data.update(fields)
    return json.dumps(data)


def test_a_stored_record_reads_back_as_it_was_written() -> None:
    assert decode_turn(encode_turn(RECORD)) == RECORD


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"control": {"q": "x"}}, f"turns.control: {NOT_A_FRACTION}"),
        ({"control": {"q-": "x"}}, f"turns.control: {NOT_A_FRACTION}"),
        ({"control": {"t": ["a", {"q": "x"}]}}, f"turns.control: {NOT_A_FRACTION}"),
        ({"control": {"s": [{"t": [{"q": "x"}]}]}}, f"turns.control: {NOT_A_FRACTION}"),
        ({"control": {"z": 1}}, "turns.control: unreadable public value"),
        ({"control": {"s": 5}}, "turns.control: unreadable public value"),
        ({"control": {"t": "ab"}}, "turns.control: unreadable public value"),
        ({"control": [1]}, "turns.control: unreadable public value"),
        ({"control": {"t": [], "s": []}}, "turns.control: unreadable public value"),
        ({"charges": [["food", ["diabetes"], "x"]]}, f"turns.charges: {NOT_A_FRACTION}"),
        ({"query": None, "views": 5}, "turns.record: unreadable turn record (TypeError)"),
    ],
)
def test_an_unreadable_record_is_named_by_its_column(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(LedgerStoreError) as refused:
        decode_turn(_edited(**fields))
    assert str(refused.value) == message


def test_a_record_without_a_field_or_not_json_is_named_by_the_error_kind() -> None:
    data = json.loads(encode_turn(RECORD))
    del data["query"]
    for text, kind in ((json.dumps(data), "KeyError"), ("{", "JSONDecodeError")):
        with pytest.raises(LedgerStoreError) as refused:
            decode_turn(text)
        assert str(refused.value) == f"turns.record: unreadable turn record ({kind})"


@pytest.mark.parametrize("row", [(1, "r", "t", 0, "food"), (1, "r", "t", 0, "food", "v", True, "[", "1/3")])
def test_a_release_row_of_the_wrong_shape_or_set_is_one_line(row: tuple[Any, ...]) -> None:
    with pytest.raises(LedgerStoreError) as refused:
        decode_release(row)
    assert str(refused.value) == "releases: unreadable release row"


@pytest.mark.parametrize("charge_set", ['{"diabetes": 1}', '["diabetes", 2]', '"diabetes"'])
def test_a_release_charge_set_that_is_no_list_of_names_is_named(charge_set: str) -> None:
    with pytest.raises(LedgerStoreError) as refused:
        decode_release((1, "r", "t", 0, "food", "v", True, charge_set, "1/3"))
    assert str(refused.value) == "releases.charge_set: expected a list of attribute names"


def test_a_fraction_text_is_read_up_to_its_bound() -> None:
    at_bound = "9" * 200 + "/" + "1" * 200
    assert len(at_bound) == MAX_FRACTION_TEXT
    assert fraction_from_text(at_bound, "x") == Fraction(int("9" * 200), int("1" * 200))
    with pytest.raises(LedgerStoreError) as refused:
        fraction_from_text(at_bound + "1", "ledgers.spent")
    assert str(refused.value) == f"ledgers.spent: a 'p/q' value of more than {MAX_FRACTION_TEXT} characters"
