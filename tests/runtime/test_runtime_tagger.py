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
        (
            {"rules": {"blood-sugar": ["glucose", 3]}},
            "tagger.rules.blood-sugar[1]: expected a keyword or phrase of 1..200 characters, found 'int'",
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


def test_the_threshold_is_an_exact_rational_in_zero_excluded_to_one() -> None:
    for threshold in (Fraction(1), Fraction(1, 1000), Fraction(3, 5)):
        assert Tagger(threshold=threshold).threshold == threshold
    refused_thresholds: list[tuple[object, str]] = [
        (Fraction(0), "'0'"),
        (Fraction(-1, 2), "'-1/2'"),
        (Fraction(3, 2), "'3/2'"),
        (Fraction(2), "'2'"),
        (0.5, "'float'"),  # a float, even in range, is not exact
        (1, "'int'"),
    ]
    for bad, found in refused_thresholds:
        with pytest.raises(InputError) as refused:
            Tagger(threshold=bad)  # type: ignore[arg-type]
        assert str(refused.value) == f"tagger.threshold: expected an exact rational in (0, 1], found {found}"


def test_a_spec_threshold_of_zero_is_refused() -> None:
    """0 is in [0, 1], as a spec number must be, but would tag every text with every tag."""
    with pytest.raises(InputError) as refused:
        Tagger.from_spec({"threshold": "0"}, KNOWN, None)
    assert str(refused.value) == "tagger.threshold: expected an exact rational in (0, 1], found '0'"
