"""The exponential mechanism selector (Eq. 7), the only selector satisfying C3."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import ClassVar

import attrs

from dpmem_ref.mechanism.construction import exponential_mechanism
from dpmem_ref.mechanism.em import ReleaseDistribution


@attrs.frozen
class ExponentialMechanismSelector:
    """Eq. (7)."""

    name: str = "em"
    violates: str | None = None
    exponential_mechanism: ClassVar[bool] = True

    def distribution(
        self, views: tuple[str, ...], scores: Sequence[Fraction], epsilon: Fraction, sensitivity: Fraction
    ) -> ReleaseDistribution:
        return exponential_mechanism(views, scores, epsilon, sensitivity)
