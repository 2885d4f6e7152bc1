"""The embedding auditor's metrics and fitting protocol against scikit-learn references (C.5)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import CalibratedClassifierCV
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score, roc_curve

from dpmem_eval.pipeline.auditor import (
    Sample,
    ScoredPair,
    auc,
    audit,
    bootstrap_ci,
    control_features,
    macro_metrics,
    prefix_features,
    tpr_at_fpr,
)


@pytest.mark.parametrize("seed", range(40))
def test_auc_and_tpr_match_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 80))
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    scores = np.round(rng.random(n), 1) if seed % 2 else rng.random(n) + y * rng.random(n)
    assert auc(y, scores) == pytest.approx(roc_auc_score(y, scores), abs=1e-12)
    # Every threshold's ROC point (sklearn's default also drops collinear intermediate points,
    # which can hide an achievable operating point).
    fpr, tpr, _ = roc_curve(y, scores, drop_intermediate=False)
    for level in (0.0, 0.05, 0.1, 0.5):
        assert tpr_at_fpr(y, scores, level) == pytest.approx(tpr[fpr <= level].max(), abs=1e-12)


def test_ties_everywhere_give_chance_auc():
    assert auc([0, 1, 0, 1], [0.3] * 4) == 0.5


def test_prefix_features_are_l2_normalised_running_means():
    turns = np.array([[3.0, 0.0], [0.0, 4.0], [1.0, 1.0]])
    feats = prefix_features(turns)
    assert np.allclose(np.linalg.norm(feats, axis=1), 1.0)
    assert np.allclose(feats[0], [1.0, 0.0])
    mean2 = np.array([1.5, 2.0])
    assert np.allclose(feats[1], mean2 / np.linalg.norm(mean2))


def test_macro_metrics_average_per_attribute():
    pairs = [ScoredPair("a1", "x", 0.9, 0.1), ScoredPair("a2", "x", 0.8, 0.2),
             ScoredPair("b1", "y", 0.2, 0.8), ScoredPair("b2", "y", 0.3, 0.7)]
    a, t = macro_metrics(pairs)
    assert a == pytest.approx((1.0 + 0.0) / 2)
    assert t == pytest.approx((1.0 + 0.0) / 2)
    ci = bootstrap_ci(pairs, n_boot=200, seed=0)
    assert ci["auc"][0] <= a <= ci["auc"][1]


def _samples(rng, shift: float, per_split: dict[str, int], attributes=("debt", "diabetes"), horizon=3, seeds=(0,)):
    out = []
    for attribute in attributes:
        for split, n in per_split.items():
            for i in range(n):
                for seed in seeds:
                    for side, sign in (("M", 1), ("M'", -1)):
                        turns = rng.normal(size=(horizon, 8))
                        turns[:, 0] += sign * shift
                        out.append(Sample(f"{attribute}-{split}-{i}", attribute, split, side, seed, prefix_features(turns)))
    return out


def test_separable_transcripts_are_detected_and_identical_ones_are_not():
    rng = np.random.default_rng(0)
    split = {"train": 20, "validation": 10, "test": 10, "transfer": 5}
    strong = audit(_samples(rng, 3.0, split), ("debt", "diabetes"), 3, n_boot=50)
    assert strong.at("test")["auc"] > 0.95
    assert strong.at("transfer")["auc"] > 0.9
    assert len(strong.by_prefix["test"]) == 3
    null = []
    for s in _samples(rng, 0.0, split):
        null.append(Sample(s.pair_id, s.attribute, s.split, s.side, s.seed, np.ones_like(s.features)))
    flat = audit(null, ("debt", "diabetes"), 3, n_boot=50)
    assert flat.at("test")["auc"] == 0.5


def test_fit_on_train_calibrate_on_validation_matches_sklearn_reference():
    rng = np.random.default_rng(1)
    samples = _samples(rng, 1.0, {"train": 15, "validation": 8, "test": 8}, attributes=("debt",), horizon=2)
    result = audit(samples, ("debt",), 2, seed=0, n_boot=10)

    def xy(split, t):
        rows = [s for s in samples if s.split == split]
        return np.array([s.features[t] for s in rows]), np.array([1 if s.side == "M" else 0 for s in rows]), rows

    x_tr, y_tr, _ = xy("train", 1)
    x_va, y_va, _ = xy("validation", 1)
    x_te, y_te, rows = xy("test", 1)
    reference = CalibratedClassifierCV(FrozenEstimator(LogisticRegression(max_iter=2000, random_state=0).fit(x_tr, y_tr)),
                                       method="sigmoid", cv=[(np.arange(len(y_va)), np.arange(len(y_va)))]).fit(x_va, y_va)
    probs = reference.predict_proba(x_te)[:, 1]
    assert result.at("test")["auc"] == pytest.approx(roc_auc_score(y_te, probs))
    by_pair = {(s.pair_id, s.side): p for s, p in zip(rows, probs, strict=True)}
    for scored in result.scored["test"]:
        assert scored.score_m == pytest.approx(by_pair[(scored.pair_id, "M")])


def test_stochastic_methods_average_scores_over_seeds_within_a_pair():
    rng = np.random.default_rng(2)
    samples = _samples(rng, 1.0, {"train": 10, "validation": 6, "test": 4}, attributes=("debt",), horizon=1, seeds=(0, 1, 2))
    result = audit(samples, ("debt",), 1, n_boot=10)
    assert len(result.scored["test"]) == 4  # one score per pair side, not per seed


def test_control_features_pad_the_exposed_scores():
    feats = control_features([[0.4], [1.0], [0.6]])
    assert np.allclose(feats, [[0.4, 0, 0], [0.4, 1.0, 0], [0.4, 1.0, 0.6]])
