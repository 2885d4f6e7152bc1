"""A checklist judge that runs on a CPU (`--judge checklist`), calibrated on PairedMem's gold.

The paper's judge (C.5) scores each gold behaviour of a pair side 0-4; tRec is the mean over
target-required behaviours on M, Unsup the mean over unsupported target-specific behaviours
on M'. This judge decides, per (response, behaviour) of the side's checklist, *shown* or *not
shown* (1.0 / 0.0), from three features of the shipped encoder and the words:

- cos(response, behaviour): how close the answer is to the behaviour's description;
- cos(response, query): how close it is to the question alone (a generic answer is close to
  the question and to any behaviour about the same topic);
- lexical: the share of the behaviour's own content words (those not already in the
  question, compared on their first five letters) that the answer uses.

A logistic regression on these features, with a threshold (Youden's J), is fitted on a
*development set* built from the run's own RawReadSet transcripts of **train** pairs and the
gold annotations: a target turn's response is labelled 1 (behaviour required and supported)
when the turn's conditioning holds target evidence (an M item at I_target that M' does not
have), and 0 on M' (the same behaviour is unsupported there, gold `unsupported_target_specific`).
Agreement with those labels is measured on the **validation** pairs (held out); test and
transfer pairs are never used to fit anything. Only RawReadSet enters the development set,
so the judge never sees the style of the methods it is later compared on (GenericOnly,
DP-MemView). Holistic scores (U) are the proxy judge's (`judge.ProxyJudge`).

Not the paper's Claude Sonnet 4.6 judge: its labels are silver (evidence present / absent),
not a human's reading of the answer, and every table produced with it says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from dpmem_eval.pipeline.errors import UserError
from dpmem_eval.pipeline.judge import JudgeItem, Judgement, ProxyJudge

if TYPE_CHECKING:
    from dpmem_eval.pipeline.auditor import Encoder

FEATURES = ("cos_behaviour", "cos_query", "lexical")
DEV_METHOD = "raw_read_set"
STOP = frozenset(
    "a an the and or of to in on for with from at by as is are be it its that this any very under first instead not no "
    "without into new i my me you your can could should how what which do does".split()
)


def content_words(text: str) -> set[str]:
    return {w[:5] for w in re.findall(r"[a-z]+", text.lower()) if w not in STOP and len(w) > 2}


def lexical(response: str, behaviour: str, query: str) -> float:
    """Share of the behaviour's own content words (not in the question) that the answer uses."""
    own = content_words(behaviour) - content_words(query)
    return len(own & content_words(response)) / len(own) if own else 0.0


@dataclass(frozen=True)
class Example:
    """One labelled (response, behaviour) of the development set."""

    response: str
    behaviour: str
    query: str
    label: int


def target_evidence(pair: Any) -> set[str]:
    """Texts of M's items at I_target that M' does not share: what makes the behaviour supported."""
    m, m_prime = pair.store_m, pair.store_m_prime
    return {m[i - 1].text for i in pair.target_positions if m[i - 1].text != m_prime[i - 1].text}


def development_set(rows: Sequence[dict[str, Any]], pairs_by_id: dict[str, Any], split: str) -> list[Example]:
    """Labelled turns from RawReadSet transcripts of `split` pairs (train or validation only)."""
    if split not in ("train", "validation"):
        raise ValueError(f"development set: split {split!r} is not train or validation (test pairs are never used)")
    out: list[Example] = []
    for row in rows:
        if row["method"] != DEV_METHOD or row["split"] != split or not row["responses"]:
            continue
        pair = pairs_by_id[row["pair_id"]]
        evidence = target_evidence(pair) if row["side"] == "M" else set()
        gold_by_id = {g.query_id: g for g in pair.gold}
        for index, query in enumerate(pair.queries[: len(row["responses"])]):
            gold = gold_by_id[query.query_id]
            listed = gold.target_required if row["side"] == "M" else gold.unsupported_target_specific
            label = int(any(line in evidence for line in row["conditioning"][index]))
            out.extend(Example(row["responses"][index], b, query.text, label) for b in listed)
    return out


class Features:
    """Unit embeddings of every text once; the three features of a (response, behaviour, query)."""

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder
        self.unit: dict[str, np.ndarray] = {}

    def add(self, texts: Sequence[str]) -> None:
        missing = [t for t in dict.fromkeys(texts) if t not in self.unit]
        if missing:
            vectors = np.asarray(self.encoder.encode(missing), dtype=float)
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            for text, vector, norm in zip(missing, vectors, norms, strict=True):
                self.unit[text] = vector / (norm[0] if norm[0] else 1.0)

    def __call__(self, response: str, behaviour: str, query: str) -> list[float]:
        self.add([response, behaviour, query])
        r = self.unit[response]
        return [float(r @ self.unit[behaviour]), float(r @ self.unit[query]), lexical(response, behaviour, query)]


def _kappa(truth: np.ndarray, guess: np.ndarray) -> float:
    observed = float(np.mean(truth == guess))
    p_t, p_g = float(np.mean(truth)), float(np.mean(guess))
    expected = p_t * p_g + (1 - p_t) * (1 - p_g)
    return (observed - expected) / (1 - expected) if expected < 1 else 0.0


def _auc(truth: np.ndarray, score: np.ndarray) -> float:
    pos, neg = score[truth == 1], score[truth == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).mean()
    ties = (pos[:, None] == neg[None, :]).mean()
    return float(greater + ties / 2)


@dataclass(frozen=True)
class Calibration:
    """The fitted checklist rule and its agreement with the held-out labels."""

    weights: tuple[float, ...]
    intercept: float
    threshold: float
    agreement: dict[str, float]

    def probability(self, features: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        logits: npt.NDArray[np.float64] = features @ np.array(self.weights, dtype=np.float64) + self.intercept
        return 1.0 / (1.0 + np.exp(-logits))

    def to_json(self) -> dict[str, Any]:
        return {"features": list(FEATURES), "weights": list(self.weights), "intercept": self.intercept,
                "threshold": self.threshold, "development_method": DEV_METHOD, **self.agreement}


def calibrate(train: Sequence[Example], validation: Sequence[Example], features: Features) -> Calibration:
    """Fit on train examples, threshold by Youden's J on train, agreement on validation."""
    from sklearn.linear_model import LogisticRegression

    for name, examples in (("train", train), ("validation", validation)):
        labels = {e.label for e in examples}
        if labels != {0, 1}:
            raise UserError(f"--judge checklist: the {name} development set (RawReadSet on {name} pairs) has "
                             f"{len(examples)} labelled turns and not both labels; run more pairs or a longer horizon")
    features.add([t for e in (*train, *validation) for t in (e.response, e.behaviour, e.query)])
    x_train = np.array([features(e.response, e.behaviour, e.query) for e in train])
    y_train = np.array([e.label for e in train])
    model = LogisticRegression().fit(x_train, y_train)
    fitted = Calibration(tuple(float(w) for w in model.coef_[0]), float(model.intercept_[0]), 0.5, {})
    p_train = fitted.probability(x_train)
    candidates = np.unique(p_train)
    youden = [np.mean(p_train[y_train == 1] >= c) - np.mean(p_train[y_train == 0] >= c) for c in candidates]
    threshold = float(candidates[int(np.argmax(youden))])
    x_val = np.array([features(e.response, e.behaviour, e.query) for e in validation])
    y_val = np.array([e.label for e in validation])
    p_val = fitted.probability(x_val)
    shown = (p_val >= threshold).astype(int)
    agreement = {"n_train": len(train), "n_validation": len(validation), "validation_accuracy": float(np.mean(shown == y_val)),
                 "validation_kappa": _kappa(y_val, shown), "validation_auc": _auc(y_val, p_val),
                 "validation_positive_rate": float(np.mean(y_val)), "validation_shown_rate": float(np.mean(shown))}
    return Calibration(fitted.weights, fitted.intercept, threshold, agreement)


def memory_control(rows: Sequence[dict[str, Any]], pairs_by_id: dict[str, Any], features: Features) -> dict[str, float]:
    """Positive control: the same fit and agreement with each turn's conditioning (the memory
    text the model read) standing in for its reply. High agreement here and chance on the
    replies means the replies lost the target content, not that the features cannot see it."""
    memory = [{**row, "responses": [" ".join(lines) or "(none)" for lines in row["conditioning"]]}
              for row in rows if row["method"] == DEV_METHOD and row["split"] in ("train", "validation")]
    control = calibrate(development_set(memory, pairs_by_id, "train"), development_set(memory, pairs_by_id, "validation"),
                        features)
    return {k: control.agreement[k] for k in ("validation_accuracy", "validation_kappa", "validation_auc")}


class ChecklistJudge:
    """Shown / not shown per checklist behaviour (calibrated above); U from the proxy's rules."""

    name = "checklist-judge"

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder
        self.features = Features(encoder)
        self.proxy = ProxyJudge(encoder)
        self.calibration: Calibration | None = None

    @property
    def label(self) -> str:
        return (f"{self.name} ({self.encoder.name}; behaviours calibrated on RawReadSet train pairs, U from the proxy); "
                "NOT the paper's Claude Sonnet 4.6 judge")

    def close(self) -> None:
        """Nothing to unload besides the shared encoder (freed by its owner)."""

    def calibrate(self, rows: Sequence[dict[str, Any]], pairs_by_id: dict[str, Any]) -> dict[str, Any]:
        self.calibration = calibrate(development_set(rows, pairs_by_id, "train"),
                                     development_set(rows, pairs_by_id, "validation"), self.features)
        return {**self.calibration.to_json(), "control_memory_as_reply": memory_control(rows, pairs_by_id, self.features)}

    def judge(self, items: Sequence[JudgeItem]) -> list[Judgement]:
        if self.calibration is None:
            raise RuntimeError("checklist judge: calibrate() before judge()")
        holistic = self.proxy.judge([JudgeItem(i.turns, ()) for i in items])
        out = []
        for item, verdict in zip(items, holistic, strict=True):
            if item.behaviours:
                x = np.array([self.features(item.turns[turn][1], text, item.turns[turn][0]) for turn, text in item.behaviours])
                shown = tuple(float(v) for v in (self.calibration.probability(x) >= self.calibration.threshold))
            else:
                shown = ()
            out.append(Judgement(verdict.holistic, shown))
        return out
