"""The timing side channel of the exact EM sampler, and a fixed-deadline mitigation.

The exact sampler (`ExponentialWeights.sample`) proposes a view uniformly and accepts it
with probability exp(-gap_v), gap_v = x_max - x_v. The number of proposals is geometric
with success probability p = (1/n) sum_v exp(-gap_v), which depends on the internal
scores: a store with one strongly supported view (large gaps) needs more rounds than a
neutral one (all gaps 0, one round). If release latency is observable, the running time
is a side channel outside the DP accounting (measured in benchmarks/timing_side_channel.py).

Mitigation: release at a fixed deadline after the selection starts. The deadline is a
function of public parameters only (eps, Delta, vocabulary size): scores lie in [0, 1],
so every gap is at most g = eps / (2 Delta) and p >= exp(-g) whatever the store. Hence
Pr[more than R proposals] <= (1 - exp(-g))^R, and `public_round_bound` gives the R that
makes an overrun rarer than a chosen failure probability. `calibrate_deadline` times the
sampler on the public worst-case distribution (every non-top view at gap g) and returns a
deadline; `DeadlineRelease` waits until start + deadline before handing the view out (an
overrun, which the bound makes rare, is reported and releases late).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from fractions import Fraction
from typing import TYPE_CHECKING

import attrs

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.rational import require_positive_rational
from dpmem_ref.core.validate import check_int, check_real, check_seconds

if TYPE_CHECKING:  # the deadline constants below are read by `dpmem --help`: no sampler imported for them
    from dpmem_ref.mechanism.em import ExponentialWeights, ReleaseDistribution
    from dpmem_ref.mechanism.randomness import RandomSource

MAX_DEADLINE_S = 10.0
DEFAULT_TURN_DEADLINE_S = 0.005
"""Default release deadline of one turn (seconds) in `DurableSession` and `dpmem run`: a
public constant, several times the slowest turn of the shipped examples on a loaded
2-core host (benchmarks/timing_side_channel.py prints overruns). Opt out with None /
`--no-release-deadline`; a turn that overruns is released late and reported."""
DEFAULT_DURABLE_TURN_DEADLINE_S = 0.05
"""Default release deadline of `dpmem run --store-url`: a durable turn commits every charge
(SQLite synchronous=FULL, or a PostgreSQL round trip) before its release, ~10-15 ms per
turn of the Figure 2 example on SQLite here, so the 5 ms default would be overrun."""
_SPIN_NS = 1_000_000  # busy-wait the last 1 ms: sleep() wake-ups jitter by tens to hundreds of microseconds

Clock = Callable[[], int]


MAX_PUBLIC_GAP = Fraction(700)
"""Largest eps / (2 Delta) the timing bounds accept: past it exp(-gap) underflows a float
(exp(-745) is 0), the round bound has no finite floating-point value (it grows like
exp(gap)), and no deadline could cover the worst case anyway."""


def _public_gap(epsilon: object, sensitivity: object) -> Fraction:
    """g = eps / (2 Delta) from exact positive eps and Delta, at most MAX_PUBLIC_GAP."""
    gap = require_positive_rational(epsilon, "epsilon") / (2 * require_positive_rational(sensitivity, "sensitivity"))
    if gap > MAX_PUBLIC_GAP:
        raise InputError(
            "epsilon",
            f"eps / (2 sensitivity) of at most {MAX_PUBLIC_GAP} (no finite round bound past it)",
            "a larger ratio",
        )
    return gap


def _probability(value: object, field: str) -> float:
    """A probability strictly inside (0, 1), compared exactly before it becomes a float (a
    huge int or Fraction overflows float(); one within 1e-308 of 0 or 1 rounds onto them)."""
    if isinstance(value, bool) or not isinstance(value, int | float | Fraction) or not 0 < value < 1:
        raise InputError(field, "a probability in (0, 1)", value if isinstance(value, float) else type(value).__name__)
    number = float(value)
    if not 0 < number < 1:
        raise InputError(field, "a probability in (0, 1) that a float can hold", "one that rounds to 0 or 1")
    return number


def public_round_bound(epsilon: Fraction, sensitivity: Fraction, failure_probability: float) -> int:
    """R with Pr[more than R proposals] <= failure_probability for ANY scores in [0, 1].

    Each proposal is accepted with probability p >= exp(-eps / (2 Delta)), so
    Pr[> R proposals] = (1 - p)^R <= (1 - exp(-eps / (2 Delta)))^R.
    """
    gap = _public_gap(epsilon, sensitivity)  # exp(-gap) >= exp(-700) > 0: the division below is finite
    delta = _probability(failure_probability, "failure_probability")
    worst_acceptance = math.exp(-float(gap))
    if worst_acceptance >= 1.0:
        return 1
    return max(1, math.ceil(math.log(delta) / math.log1p(-worst_acceptance)))


def worst_case_distribution(views: int, epsilon: Fraction, sensitivity: Fraction) -> ExponentialWeights:
    """The public slowest case: one view at score 1, all others at score 0 (gap eps/(2 Delta))."""
    check_int(views, "views", 1, 4096, expected="a vocabulary size in 1..4096")
    from dpmem_ref.mechanism.em import ExponentialWeights

    top = _public_gap(epsilon, sensitivity)
    names = tuple(f"v{i}" for i in range(views))
    return ExponentialWeights(views=names, exponents=(top,) + (Fraction(0),) * (views - 1))


def slowest_case_distributions(views: int, epsilon: Fraction, sensitivity: Fraction) -> tuple[ExponentialWeights, ...]:
    """Public candidates for the slowest draw, one per proposal the sampler can take
    (dpmem_ref.mechanism.em): the one-hot case above (the bucketed proposal when there are
    more than UNIFORM_PROPOSAL_MAX_VIEWS views and a gap above 1), and one view on top with
    every other gap at min(eps/(2 Delta), 1) (the uniform proposal's slowest: each round
    accepts with probability about exp(-1)). Both depend on eps, Delta and the size only."""
    from dpmem_ref.mechanism.em import UNIFORM_PROPOSAL_MAX_SPREAD, ExponentialWeights

    one_hot = worst_case_distribution(views, epsilon, sensitivity)
    spread = min(one_hot.exponents[0], UNIFORM_PROPOSAL_MAX_SPREAD)
    flat = ExponentialWeights(views=one_hot.views, exponents=(spread,) + (Fraction(0),) * (views - 1))
    return (one_hot,) if flat == one_hot else (one_hot, flat)


def calibrate_deadline(
    views: int,
    epsilon: Fraction,
    sensitivity: Fraction,
    source: RandomSource,
    trials: int = 2000,
    quantile: float = 0.99,
    margin: float = 3.0,
    clock: Clock = time.perf_counter_ns,
) -> float:
    """A release deadline (seconds) from public parameters only.

    Times `trials` draws from each public slowest-case distribution (one per sampler
    proposal, `slowest_case_distributions`) and returns `margin` times the largest of their
    `quantile`s (a quantile, not the maximum: one scheduler stall would otherwise set the
    deadline). The result depends on eps, Delta, the vocabulary size
    and the machine, never on a store.
    """
    check_int(trials, "trials", 1, 1_000_000)
    check_real(quantile, "quantile", 0.5, 1)
    check_real(margin, "margin", 1, 1000)
    chosen = 0
    for distribution in slowest_case_distributions(views, epsilon, sensitivity):
        latencies = []
        for _ in range(trials):
            start = clock()
            distribution.sample(source)
            latencies.append(clock() - start)
        latencies.sort()
        chosen = max(chosen, latencies[min(len(latencies) - 1, math.ceil(quantile * len(latencies)) - 1)])
    return min(MAX_DEADLINE_S, margin * chosen / 1e9)


@attrs.frozen
class TimedRelease:
    """A view released at a fixed deadline: `elapsed_ns` runs from start to release."""

    view: str
    elapsed_ns: int
    overran: bool


def _check_deadline(instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    check_deadline(value)


@attrs.frozen
class DeadlineRelease:
    """Draw exactly (the kernel's sampler, unchanged), then release at start + deadline."""

    deadline_s: float = attrs.field(validator=_check_deadline)
    clock: Clock = attrs.field(default=time.perf_counter_ns, repr=False)

    def sample(self, distribution: ReleaseDistribution, source: RandomSource) -> TimedRelease:
        start = self.clock()
        view = distribution.sample(source)
        overran = wait_until(start + int(self.deadline_s * 1e9), self.clock)
        return TimedRelease(view=view, elapsed_ns=self.clock() - start, overran=overran)


def wait_until(target_ns: int, clock: Clock = time.perf_counter_ns) -> bool:
    """Block until clock() >= target_ns (sleep, then spin the last stretch); True if already past."""
    now = clock()
    if now > target_ns:
        return True
    remaining = target_ns - now
    if remaining > _SPIN_NS:
        time.sleep((remaining - _SPIN_NS) / 1e9)
    while clock() < target_ns:
        pass
    return False


def check_deadline(value: object, field: str = "deadline_s") -> float:
    return float(check_seconds(value, field, MAX_DEADLINE_S))


def plain_release(
    distribution: ReleaseDistribution, source: RandomSource, clock: Clock = time.perf_counter_ns
) -> TimedRelease:
    """The unmitigated release: as soon as the sampler returns."""
    start = clock()
    view = distribution.sample(source)
    return TimedRelease(view=view, elapsed_ns=clock() - start, overran=False)


def ks_statistic(sample_a: list[int] | list[float], sample_b: list[int] | list[float]) -> float:
    """Two-sample Kolmogorov-Smirnov statistic sup_x |F_a(x) - F_b(x)|, exact (ties handled)."""
    for field, sample in (("sample_a", sample_a), ("sample_b", sample_b)):
        if not isinstance(sample, list | tuple) or not sample:
            raise InputError(field, "a non-empty list of latencies", type(sample).__name__)
        for value in sample:  # a NaN never equals itself: the tie loop below would never end
            check_real(value, field, expected="finite numbers (int or float)")
    a, b = sorted(sample_a), sorted(sample_b)
    i = j = 0
    best = Fraction(0)
    while i < len(a) and j < len(b):
        x = min(a[i], b[j])
        while i < len(a) and a[i] == x:
            i += 1
        while j < len(b) and b[j] == x:
            j += 1
        best = max(best, abs(Fraction(i, len(a)) - Fraction(j, len(b))))
    return float(best)
