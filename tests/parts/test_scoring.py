"""Scorers (dpmem_ref.parts.scoring): a function scorer passes relevance through; the linear
tag scorer's exact sensitivity per vocabulary and its weights, each bad weight named whole.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpmem_ref import (
    FunctionScorer,
    InputError,
    View,
    Vocabulary,
)


def test_function_scorer_passes_relevance_through():
    vocabulary = Vocabulary("g", (View("g.gen"), View("g.v1")), "g.gen")
    scorer = FunctionScorer(lambda relevance, vocab, items: (Fraction(0), relevance["g.v1"]), Fraction(1))
    assert scorer.scores({"g.v1": Fraction(1, 3)}, vocabulary, ()) == (Fraction(0), Fraction(1, 3))
    assert scorer.sensitivity(vocabulary) == Fraction(1)


def test_linear_scorer_bounds_and_fields():
    from dpmem_ref import LinearTagScorer, LinearWeights

    compatible_only = Vocabulary("g", (View("g.gen"), View("g.v1", compatible=frozenset({"t"}))), "g.gen")
    specific_only = Vocabulary("g", (View("g.gen"), View("g.v1", specific=frozenset({"t"}))), "g.gen")
    scorer = LinearTagScorer()  # 0.4 r + 0.4 c + 0.2 s
    assert scorer.exact_sensitivity(compatible_only) == Fraction(2, 5)
    assert scorer.exact_sensitivity(specific_only) == Fraction(1, 5)
    with pytest.raises(InputError) as error:
        LinearTagScorer(declared_sensitivity=Fraction(0))
    assert error.value.field == "scorer.sensitivity"
    for name, weights in (("r", (-1, 0, 0)), ("c", (0, -1, 0)), ("s", (0, 0, -1))):
        with pytest.raises(InputError) as error:
            LinearWeights(*(Fraction(w) for w in weights))
        assert error.value.field == f"scorer.weights.{name}"
    for weights in ((1, 1, 1), (0, 2, 2), (2, 0, 2), (2, 2, 0)):  # sums 3/2 and 4/3: above 1
        with pytest.raises(InputError) as error:
            LinearWeights(*(Fraction(w, 3 if sum(weights) == 4 else 2) for w in weights))
        assert error.value.field == "scorer.weights"
    assert LinearWeights(Fraction(1, 2), Fraction(1, 4), Fraction(1, 4)).specificity == Fraction(1, 4)


def test_weights_above_one_are_named_with_their_sum():
    from dpmem_ref import LinearWeights

    with pytest.raises(InputError) as error:
        LinearWeights(Fraction(1, 2), Fraction(1, 2), Fraction(1, 2))
    assert str(error.value) == "scorer.weights: expected non-negative weights summing to at most 1, found '3/2'"
