"""The prospective cap rule (Algorithm 1, line 9; C5)."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import ClassVar

import attrs


@attrs.frozen
class ProspectiveCap:
    """Admit only if L_a + eps <= B_a for every charged a (Algorithm 1, line 9)."""

    name: str = "prospective"
    violates: str | None = None
    prospective: ClassVar[bool] = True

    def admits(
        self,
        ledgers: Mapping[str, Fraction],
        caps: Mapping[str, Fraction],
        charge_set: frozenset[str],
        epsilon: Fraction,
    ) -> bool:
        return all(ledgers[a] + epsilon <= caps[a] for a in charge_set)
