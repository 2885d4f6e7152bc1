"""The CPU checklist judge (`--judge checklist`): its development set comes from gold and
train/validation pairs only, its calibration finds a behaviour that is there, it reports its
agreement on held-out labels, and `judge_model` gives bootstrap CIs over pairs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from conftest import Item, make_pair
from dpmem_eval.pipeline.checklist import (
    ChecklistJudge,
    Example,
    Features,
    calibrate,
    development_set,
    lexical,
    memory_control,
)
from dpmem_eval.pipeline.config import PRESETS, ConfigError
from dpmem_eval.pipeline.errors import UserError
from dpmem_eval.pipeline.judge import JudgeItem
from dpmem_eval.pipeline.runner import bootstrap_mean_ci, judge_model

EVIDENCE = "I take metformin every morning."  # STORE_M[0]: at I_target, absent from M'


class BagOfWords:
    """A deterministic stand-in encoder: hashed bag of words (no model to load)."""

    name = "bag-of-words"

    def encode(self, texts):
        out = np.zeros((len(texts), 128))
        for i, text in enumerate(texts):
            for word in text.lower().replace(";", " ").replace(".", " ").replace(",", " ").split():
                out[i, sum(map(ord, word)) % 128] += 1.0
        return out


def _row(pair, method, side, split, conditioning, responses):
    return {"method": method, "pair_id": pair.pair_id, "split": split, "side": side, "seed": 0,
            "queries": [q.text for q in pair.queries], "conditioning": conditioning, "responses": responses}


def test_development_set_labels_supported_turns_from_gold_and_uses_only_raw_read_set():
    pair = make_pair("t1", split="train")
    cond_m = [[EVIDENCE, "I like trying new recipes."], ["Money is fine."], ["I like trying new recipes."], [EVIDENCE]]
    rows = [_row(pair, "raw_read_set", "M", "train", cond_m, ["a", "b", "c", "d"]),
            _row(pair, "raw_read_set", "M'", "train", [["x"]] * 4, ["e", "f", "g", "h"]),
            _row(pair, "generic_only", "M", "train", cond_m, ["i", "j", "k", "l"])]
    examples = development_set(rows, {pair.pair_id: pair}, "train")
    # target turns are 1 and 3 (one gold behaviour each); distractor/neutral turns list none
    assert [(e.response, e.label) for e in examples] == [("a", 1), ("c", 0), ("e", 0), ("g", 0)]
    assert {e.behaviour for e in examples} == {"suggests low-glycemic dinners", "mentions blood-sugar readings"}


def test_development_set_never_uses_test_pairs():
    with pytest.raises(ValueError, match="test pairs are never used"):
        development_set([], {}, "test")


def _examples(n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        shown = int(rng.random() < 0.5)
        reply = "Try lentil soup" + (" with low glycemic beans and steady carbohydrates" if shown else " with bread") + f" {i}"
        out.append(Example(reply, "suggests low glycemic dinners with steady carbohydrates", "Suggest a dinner.", shown))
    return out


def test_calibration_finds_a_behaviour_that_is_shown_and_reports_held_out_agreement():
    calibration = calibrate(_examples(60, 0), _examples(40, 1), Features(BagOfWords()))
    assert calibration.agreement["n_validation"] == 40
    assert calibration.agreement["validation_kappa"] > 0.9 and calibration.agreement["validation_accuracy"] > 0.95
    judge = ChecklistJudge(BagOfWords())
    judge.calibration = calibration
    item = JudgeItem((("Suggest a dinner.", "Lentils with low glycemic beans and steady carbohydrates."),
                      ("Suggest a dinner.", "Pasta with bread.")),
                     ((0, "suggests low glycemic dinners with steady carbohydrates"),
                      (1, "suggests low glycemic dinners with steady carbohydrates")))
    (verdict,) = judge.judge([item])
    assert verdict.behaviours == (1.0, 0.0)
    assert set(verdict.holistic) == {"relevance", "correctness", "actionability", "personalization"}


def test_calibration_refuses_a_development_set_without_both_labels():
    one_label = [dataclasses.replace(e, label=1) for e in _examples(10, 0)]
    with pytest.raises(UserError, match="not both labels"):
        calibrate(one_label, _examples(10, 1), Features(BagOfWords()))


def test_lexical_counts_only_the_behaviours_own_words():
    assert lexical("cheap staples tonight", "suggests cheap staples for dinner", "What for dinner?") == pytest.approx(2 / 3)
    assert lexical("anything", "dinner", "dinner?") == 0.0


def test_judge_model_reports_per_pair_values_and_a_bootstrap_ci_over_pairs():
    pairs = {f"p{i}": make_pair(f"p{i}") for i in range(6)}
    rows = []
    for i, pair in enumerate(pairs.values()):
        reply = "Low-glycemic dinners; note blood-sugar readings." if i % 2 else "Pasta with bread."
        for side in ("M", "M'"):
            rows.append(_row(pair, "raw_read_set", side, "test", [[]] * 4, [reply] * 4))
    judge = ChecklistJudge(BagOfWords())
    fixture_gold = [("suggests low-glycemic dinners", "Low-glycemic dinners"), ("mentions blood-sugar readings", "note blood-sugar readings")]
    train = [Example(f"{shown_text if e.label else 'Pasta with bread'} {i}.", behaviour, "Suggest a dinner.", e.label)
             for i, e in enumerate(_examples(80, 2)) for behaviour, shown_text in fixture_gold[i % 2:i % 2 + 1]]
    judge.calibration = calibrate(train, train[:40], judge.features)
    out = judge_model(rows, pairs, judge, n_boot=200)["raw_read_set"]["pairedmem"]
    assert sorted(out["per_pair"]["tRec"]) == sorted(pairs) and out["tRec"] == pytest.approx(0.5)
    low, high = out["ci"]["tRec"]
    assert low < out["tRec"] < high  # half the pairs show it, half do not: a CI of real width


def test_bootstrap_ci_is_a_point_only_for_constant_values():
    assert bootstrap_mean_ci([0.5] * 10) == [0.5, 0.5]
    low, high = bootstrap_mean_ci([0.0, 1.0] * 20)
    assert 0.3 < low < 0.5 < high < 0.7
    assert all(np.isnan(bootstrap_mean_ci([])))


def test_config_accepts_the_checklist_judge_and_names_it_in_errors():
    smoke = PRESETS["smoke"]
    assert dataclasses.replace(smoke, judge="checklist").validate().judge == "checklist"
    with pytest.raises(ConfigError, match="checklist"):
        dataclasses.replace(smoke, judge="nonsense").validate()


def test_memory_control_sees_target_content_in_the_memory_text():
    """The positive control: with the memory text in place of the reply, a rule fitted on train
    pairs agrees with the held-out labels (target evidence that shares the behaviour's words)."""
    evidence = "My low-glycemic dinners follow my blood-sugar readings."
    rows, pairs = [], {}
    for i in range(12):
        split = "train" if i < 8 else "validation"
        base = make_pair(f"c{i}", split=split)
        pair = dataclasses.replace(base, store_m=(Item(("blood-sugar",), evidence), *base.store_m[1:]))
        pairs[pair.pair_id] = pair
        rows.append(_row(pair, "raw_read_set", "M", split, [[evidence], [], [evidence], []], ["x"] * 4))
        rows.append(_row(pair, "raw_read_set", "M'", split, [["I take a vitamin every morning."], [],
                                                             ["I like trying new recipes."], []], ["x"] * 4))
    control = memory_control(rows, pairs, Features(BagOfWords()))
    assert control["validation_kappa"] > 0.9 and control["validation_auc"] > 0.95
