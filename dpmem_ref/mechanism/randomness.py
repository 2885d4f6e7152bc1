"""Integer random sources for the exact sampler.

The exact EM sampler only ever asks for uniform integers in [0, n). A seeded source
serves experiments (reproducible); the OS-entropy source serves deployments. A
recording source and a tape source let two runs share one random tape (record/replay).
"""

from __future__ import annotations

import random
import secrets
from typing import Protocol, runtime_checkable


@runtime_checkable
class RandomSource(Protocol):
    def randbelow(self, bound: int) -> int:
        """A uniform integer in [0, bound); bound >= 1."""


class SeededRandomSource:
    """Reproducible integers from a seeded Mersenne Twister (experiments, tests)."""

    def __init__(self, seed: int) -> None:
        self._bits = random.Random(seed).getrandbits

    def randbelow(self, bound: int) -> int:
        # Rejection sampling on getrandbits: exact uniformity, no floats.
        width = bound.bit_length()
        value = self._bits(width)
        while value >= bound:
            value = self._bits(width)
        return value

    def __repr__(self) -> str:
        return "SeededRandomSource(<state>)"


class SystemRandomSource:
    """OS entropy (`secrets`): the source for deployments."""

    def randbelow(self, bound: int) -> int:
        return secrets.randbelow(bound)


class RecordingSource:
    """Wraps a source and records every draw as (bound, value) on `tape`."""

    def __init__(self, inner: RandomSource) -> None:
        self.inner = inner
        self.tape: list[tuple[int, int]] = []

    def randbelow(self, bound: int) -> int:
        value = self.inner.randbelow(bound)
        self.tape.append((bound, value))
        return value


class TapeExhausted(RuntimeError):
    pass


class TapeSource:
    """Replays a fixed tape of integers; value v answers a draw below `bound` as v % bound."""

    def __init__(self, tape: list[int]) -> None:
        self._tape = list(tape)
        self._index = 0

    @property
    def consumed(self) -> int:
        return self._index

    def randbelow(self, bound: int) -> int:
        if self._index >= len(self._tape):
            raise TapeExhausted(f"random tape of length {len(self._tape)} exhausted")
        value = self._tape[self._index] % bound
        self._index += 1
        return value
