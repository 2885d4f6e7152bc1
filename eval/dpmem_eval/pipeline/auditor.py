"""The embedding privacy auditor (Appendix C.5) and its metrics.

For one response model and method: embed every assistant response with a frozen sentence
encoder; the feature of a transcript prefix of length t is the mean of its first t turn
embeddings, L2-normalised. For each protected attribute a and prefix length t, one
logistic regression is fitted on PairedMem *train* pairs (label 1 = store M, 0 = M'),
sigmoid-calibrated on *validation* pairs (CalibratedClassifierCV over a FrozenEstimator),
and evaluated on *test* pairs; the same fitted auditors score the transfer track without
refitting or recalibration. Stochastic methods: the calibrated scores of a pair side are
averaged over EM seeds before metrics. Metrics: macro-AUC over attributes and TPR at 5% FPR,
each with a percentile bootstrap CI over pairs (resampled within attribute).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

CHANCE_AUC = 0.5
CHANCE_TPR = 0.05


def prefix_features(turn_embeddings: np.ndarray) -> np.ndarray:
    """(T, d) turn embeddings -> (T, d) prefix features: mean of turns 1..t, L2-normalised."""
    cumulative = np.cumsum(turn_embeddings, axis=0) / np.arange(1, len(turn_embeddings) + 1)[:, None]
    norms = np.linalg.norm(cumulative, axis=1, keepdims=True)
    return cumulative / np.where(norms == 0, 1.0, norms)


def tpr_at_fpr(labels: Sequence[int], scores: Sequence[float], fpr_level: float = 0.05) -> float:
    """The largest TPR among ROC points with FPR <= fpr_level: the points of
    sklearn.metrics.roc_curve(drop_intermediate=False) (one per distinct score, plus the origin), in numpy (the
    bootstrap calls this thousands of times; tests check it against sklearn)."""
    y = np.asarray(labels, dtype=int)
    s = np.asarray(scores, dtype=float)
    n_pos, n_neg = int(y.sum()), int(len(y) - y.sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    order = np.argsort(-s, kind="mergesort")
    s, y = s[order], y[order]
    last = np.r_[np.nonzero(np.diff(s))[0], len(s) - 1]  # last index of each distinct score
    tpr = np.r_[0.0, np.cumsum(y)[last] / n_pos]
    fpr = np.r_[0.0, np.cumsum(1 - y)[last] / n_neg]
    return float(tpr[fpr <= fpr_level + 1e-12].max())


def auc(labels: Sequence[int], scores: Sequence[float]) -> float:
    """ROC AUC by the rank-sum (Mann-Whitney) identity, ties counted 1/2 (= roc_auc_score)."""
    from scipy.stats import rankdata

    y = np.asarray(labels, dtype=int)
    n_pos, n_neg = int(y.sum()), int(len(y) - y.sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = rankdata(np.asarray(scores, dtype=float))
    return float((ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


@dataclass(frozen=True)
class ScoredPair:
    """Calibrated scores of one test pair: p(M | transcript) for the M side and the M' side."""

    pair_id: str
    attribute: str
    score_m: float
    score_m_prime: float


def macro_metrics(pairs: Sequence[ScoredPair]) -> tuple[float, float]:
    """Macro-AUC and macro TPR@5%FPR over the attributes present."""
    by_attribute: dict[str, list[ScoredPair]] = {}
    for p in pairs:
        by_attribute.setdefault(p.attribute, []).append(p)
    aucs, tprs = [], []
    for group in by_attribute.values():
        labels = [1] * len(group) + [0] * len(group)
        scores = [p.score_m for p in group] + [p.score_m_prime for p in group]
        aucs.append(auc(labels, scores))
        tprs.append(tpr_at_fpr(labels, scores))
    return float(np.nanmean(aucs)) if aucs else float("nan"), float(np.mean(tprs)) if tprs else float("nan")


def bootstrap_ci(pairs: Sequence[ScoredPair], n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> dict[str, tuple[float, float]]:
    """Percentile CIs of macro-AUC and TPR@5 from resampling pairs within each attribute."""
    rng = np.random.default_rng(seed)
    by_attribute: dict[str, list[ScoredPair]] = {}
    for p in pairs:
        by_attribute.setdefault(p.attribute, []).append(p)
    aucs, tprs = [], []
    for _ in range(n_boot):
        sample: list[ScoredPair] = []
        for group in by_attribute.values():
            idx = rng.integers(0, len(group), len(group))
            sample.extend(group[i] for i in idx)
        a, t = macro_metrics(sample)
        aucs.append(a)
        tprs.append(t)
    lo, hi = (1 - level) / 2 * 100, (1 + level) / 2 * 100
    return {
        "auc": (float(np.nanpercentile(aucs, lo)), float(np.nanpercentile(aucs, hi))),
        "tpr5": (float(np.nanpercentile(tprs, lo)), float(np.nanpercentile(tprs, hi))),
    }


@dataclass(frozen=True)
class Sample:
    """One transcript's prefix features for the auditor."""

    pair_id: str
    attribute: str
    split: str  # train | validation | test | transfer
    side: str  # M | M'
    seed: int
    features: np.ndarray = field(repr=False)  # (T, d)


def _fit_one(x_train: np.ndarray, y_train: np.ndarray, x_val: np.ndarray, y_val: np.ndarray, seed: int) -> Any:
    """LogisticRegression on train, sigmoid calibration on validation (prefit model frozen)."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.frozen import FrozenEstimator
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(max_iter=2000, random_state=seed)
    if len(set(y_train)) < 2:
        return None
    model.fit(x_train, y_train)
    if len(set(y_val)) < 2:
        return model
    # The frozen model is not refitted, so every validation sample is used for calibration;
    # one split (test = all of it) keeps sklearn's fold-size check out of small runs.
    everything = np.arange(len(y_val))
    calibrated = CalibratedClassifierCV(FrozenEstimator(model), method="sigmoid", cv=[(everything, everything)])
    calibrated.fit(x_val, y_val)
    return calibrated


def _design(rows: Sequence[Sample], split: str, t: int) -> tuple[np.ndarray, np.ndarray]:
    """Features at prefix length t and labels (1 = M) of one split."""
    chosen = [s for s in rows if s.split == split]
    x = np.array([s.features[t - 1] for s in chosen]) if chosen else np.zeros((0, 1))
    y = np.array([1 if s.side == "M" else 0 for s in chosen])
    return x, y


@dataclass
class AuditResult:
    """Per track: prefix length -> metrics; plus the scored pairs at the full horizon."""

    by_prefix: dict[str, list[dict[str, float]]]
    scored: dict[str, list[ScoredPair]]
    ci: dict[str, dict[str, tuple[float, float]]]
    identical_sides: bool

    def at(self, track: str, prefix: int | None = None) -> dict[str, float]:
        rows = self.by_prefix.get(track, [])
        if not rows:
            return {"auc": float("nan"), "tpr5": float("nan")}
        return rows[-1] if prefix is None else rows[prefix - 1]


PREFIX_BOOT = 200
"""Resamples for the per-prefix AUC band of the plots (`auc_lo`, `auc_hi` in each by_prefix
row); the tables' CI at the full horizon uses the run's n_boot."""


def audit(samples: Sequence[Sample], attributes: Sequence[str], horizon: int, seed: int = 0, n_boot: int = 1000,
          identical_sides: bool = False) -> AuditResult:
    """Fit per (attribute, prefix) auditors and evaluate on test and transfer (C.5)."""
    by_prefix: dict[str, list[dict[str, float]]] = {"test": [], "transfer": []}
    scored_full: dict[str, list[ScoredPair]] = {"test": [], "transfer": []}
    for t in range(1, horizon + 1):
        scored: dict[str, list[ScoredPair]] = {"test": [], "transfer": []}
        for attribute in attributes:
            rows = [s for s in samples if s.attribute == attribute]

            x_tr, y_tr = _design(rows, "train", t)
            x_va, y_va = _design(rows, "validation", t)
            model = _fit_one(x_tr, y_tr, x_va, y_va, seed) if len(x_tr) else None
            for track in ("test", "transfer"):
                chosen = [s for s in rows if s.split == track]
                if not chosen:
                    continue
                if model is None:
                    probs = np.full(len(chosen), 0.5)
                else:
                    probs = model.predict_proba(np.array([s.features[t - 1] for s in chosen]))[:, 1]
                # Stochastic methods: average the pair side's scores over seeds.
                acc: dict[tuple[str, str], list[float]] = {}
                for s, p in zip(chosen, probs, strict=True):
                    acc.setdefault((s.pair_id, s.side), []).append(float(p))
                for pair_id in sorted({s.pair_id for s in chosen}):
                    if (pair_id, "M") in acc and (pair_id, "M'") in acc:
                        scored[track].append(ScoredPair(pair_id, attribute, float(np.mean(acc[(pair_id, "M")])),
                                                        float(np.mean(acc[(pair_id, "M'")]))))
        for track in ("test", "transfer"):
            if scored[track]:
                a, r = macro_metrics(scored[track])
                band = bootstrap_ci(scored[track], n_boot=min(n_boot, PREFIX_BOOT), seed=seed)["auc"]
                by_prefix[track].append({"prefix": t, "auc": a, "tpr5": r, "auc_lo": band[0], "auc_hi": band[1]})
        scored_full = scored
    ci = {track: bootstrap_ci(scored_full[track], n_boot=n_boot, seed=seed) for track in scored_full if scored_full[track]}
    return AuditResult(by_prefix=by_prefix, scored=scored_full, ci=ci, identical_sides=identical_sides)


class Encoder:
    """A frozen sentence-transformers encoder; embeddings memoised per text."""

    def __init__(self, ref: str, cache_dir: str | None = None, device: str | None = None) -> None:
        self.ref = ref
        self.cache_dir = cache_dir
        self.device = device
        self._model: SentenceTransformer | None = None
        self._memo: dict[str, np.ndarray] = {}
        self.load_seconds = 0.0

    @property
    def name(self) -> str:
        return self.ref

    def _load(self) -> SentenceTransformer:
        import time
        from pathlib import Path

        from dpmem_eval.pipeline.models import resolve_encoder, set_offline, set_thread_waiting

        set_offline()
        set_thread_waiting()  # before sentence-transformers first imports torch (whoever loads it)
        start = time.perf_counter()
        from sentence_transformers import SentenceTransformer

        path = resolve_encoder(self.ref, Path(self.cache_dir) if self.cache_dir else None)
        self._model = SentenceTransformer(path, device=self.device)
        self.load_seconds = time.perf_counter() - start
        return self._model

    def close(self) -> None:
        """Drop the encoder model (the memoised embeddings stay) and free device memory."""
        from dpmem_eval.pipeline.batching import free_accelerator_memory

        self._model = None
        free_accelerator_memory()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            model = self._model or self._load()
            vectors = model.encode(list(missing), batch_size=64, convert_to_numpy=True, show_progress_bar=False)
            for text, vector in zip(missing, vectors, strict=True):
                self._memo[text] = np.asarray(vector, dtype=np.float64)
        dim = next(iter(self._memo.values())).shape[0] if self._memo else 1
        return np.array([self._memo[t] for t in texts]) if texts else np.zeros((0, dim))


def cpu_encoder(ref: str) -> Encoder:
    """The encoder `ref` on the CPU (entry point `dpmem.encoders`: the agent runtime's router and
    tagger similarity)."""
    return Encoder(ref, device="cpu")


def control_features(values: Sequence[Sequence[float]]) -> np.ndarray:
    """Score-channel diagnostic: the feature of prefix t is the vector of exposed top scores
    of turns 1..t (zero-padded to T)."""
    arr = np.array(values, dtype=float)
    horizon = arr.shape[0]
    out = np.zeros((horizon, horizon))
    for t in range(1, horizon + 1):
        out[t - 1, :t] = arr[:t].reshape(-1)[:t]
    return out


def summarize(result: AuditResult, track: str) -> Mapping[str, float]:
    row = result.at(track)
    ci = result.ci.get(track, {})
    return {"auc": row["auc"], "tpr5": row["tpr5"], "auc_lo": ci.get("auc", (np.nan, np.nan))[0],
            "auc_hi": ci.get("auc", (np.nan, np.nan))[1]}
