"""The tagger a [tagger] spec builds (its keyword rules, descriptions, threshold, encoder), and
the exact one-line refusal of a bad spec, which names the field at fault."""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpmem_ref.core.errors import InputError
from dpmem_ref.runtime.similarity import keyword_pattern
from dpmem_ref.runtime.tagger import Tagger

KNOWN = frozenset({"blood-sugar", "dairy-free"})


class _Encoder:
    def similarities(self, text: str, targets: list[str]) -> list[Fraction]:
        return [Fraction(0) for _ in targets]


def test_the_spec_builds_the_tagger_it_declares() -> None:
    encoder = _Encoder()
    tagger = Tagger.from_spec(
        {
            "rules": {"blood-sugar": ["glucose", "insulin"]},
            "descriptions": {"dairy-free": "no milk"},
            "threshold": "3/4",
        },
        KNOWN,
        encoder,
    )
    assert tagger.rules == {
        "blood-sugar": (keyword_pattern("glucose", "rule"), keyword_pattern("insulin", "rule")),
    }
    assert tagger.descriptions == {"blood-sugar": "blood sugar", "dairy-free": "no milk"}
    assert tagger.threshold == Fraction(3, 4) and tagger.embedder is encoder
    empty = Tagger.from_spec({}, KNOWN, None)  # no rules, no descriptions, the default threshold
    assert empty.rules == {} and empty.threshold == Fraction(3, 5) and empty.embedder is None
    assert empty.descriptions == {"blood-sugar": "blood sugar", "dairy-free": "dairy free"}
    assert empty.tag("insulin at noon", KNOWN) == frozenset()
    assert tagger.tag("insulin at noon", KNOWN) == frozenset({"blood-sugar"})


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"rules": ["glucose"]}, "tagger.rules: expected a table tag -> [keywords], found 'list'"),
        (
            {"rules": {"lactose": ["milk"]}},
            "tagger.rules.lactose: expected a tag some view of the interface reads, found 'an unknown tag'",
        ),
        (
            {"rules": {"blood-sugar": []}},
            "tagger.rules.blood-sugar: expected a non-empty list of keywords, found 'list'",
        ),
        (
            {"rules": {"blood-sugar": "glucose"}},
            "tagger.rules.blood-sugar: expected a non-empty list of keywords, found 'str'",
        ),
        ({"descriptions": "milk"}, "tagger.descriptions: expected a table tag -> text, found 'str'"),
        (
            {"descriptions": {"dairy-free": ""}},
            "tagger.descriptions.dairy-free: expected a known tag with a non-empty text, found 'dairy-free'",
        ),
        (
            {"descriptions": {"lactose": "no milk"}},
            "tagger.descriptions.lactose: expected a known tag with a non-empty text, found 'lactose'",
        ),
        (
            {"descriptions": {"dairy-free": 3}},
            "tagger.descriptions.dairy-free: expected a known tag with a non-empty text, found 'dairy-free'",
        ),
        ({"threshold": "3/2"}, "tagger.threshold: expected a number in [0, 1], found '3/2'"),
    ],
)
def test_a_bad_tagger_spec_is_refused_in_one_line_naming_its_field(spec: dict[str, object], message: str) -> None:
    with pytest.raises(InputError) as refused:
        Tagger.from_spec(spec, KNOWN, None)
    assert str(refused.value) == message
