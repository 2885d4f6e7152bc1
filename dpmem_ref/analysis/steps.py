"""The loss of one slot-level release: per view, both directions, from two exact plans.

Two plans that describe the same release (equal public shape and equal exact release
distribution: same views, eps and exponents) contribute exactly 0 for every view of their
support; no enclosure is computed. Otherwise each view's step is the difference of the two
log-probability enclosures (`ReleaseDistribution.log_probability_interval`). Steps are
functions of the two frozen distributions and the view names only, so they are cached
across ledger states, turns and searches.
"""

from __future__ import annotations

from collections.abc import Hashable

import attrs

from dpmem_ref.analysis.direction import Best
from dpmem_ref.analysis.loss import IMPOSSIBLE, IV_DPS, ZERO, Loss, step_losses
from dpmem_ref.core.policy import Store
from dpmem_ref.core.transcript import Query
from dpmem_ref.interface import Interface
from dpmem_ref.mechanism.em import iv_precision
from dpmem_ref.turn.plan import SlotPlan

Step = tuple[str, Loss, Loss]  # (view, log Pr_A - log Pr_B, log Pr_B - log Pr_A)


def same_release(pa: SlotPlan, pb: SlotPlan) -> bool:
    """Exactly the same release law under both stores (compared on rationals, no numerics)."""
    return pa.public_shape == pb.public_shape and pa.distribution == pb.distribution


class StepTable:
    """Cached per-view steps and best steps of plan pairs."""

    def __init__(self) -> None:
        self._steps: dict[Hashable, tuple[Step, ...]] = {}
        self._best: dict[Hashable, Best[str]] = {}

    def steps(self, pa: SlotPlan, pb: SlotPlan) -> tuple[Step, ...]:
        """Every view possible under either store, with its step in both directions."""
        views = (
            pa.vocabulary.names
            if pa.vocabulary.names == pb.vocabulary.names
            else tuple(dict.fromkeys(pa.vocabulary.names + pb.vocabulary.names))
        )
        same = same_release(pa, pb)
        key = (same, pa.distribution, pb.distribution, views)
        found = self._steps.get(key)
        if found is None:
            if same:
                found = tuple((view, ZERO, ZERO) for view in pa.distribution.support())
            else:
                out = []
                with iv_precision(IV_DPS):
                    for view in views:
                        ab, ba = step_losses(
                            pa.distribution.log_probability_interval(view),
                            pb.distribution.log_probability_interval(view),
                        )
                        if not (ab.is_impossible and ba.is_impossible):
                            out.append((view, ab, ba))
                found = tuple(out)
            self._steps[key] = found
        return found

    def best(self, pa: SlotPlan, pb: SlotPlan) -> Best[str]:
        """max over released views of the step, each direction, with the view (first on ties)."""
        key = (pa.distribution, pb.distribution, pa.public_shape, pb.public_shape)
        found = self._best.get(key)
        if found is None:
            ab, ba = IMPOSSIBLE, IMPOSSIBLE
            ab_view = ba_view = pa.vocabulary.generic
            for view, step_ab, step_ba in self.steps(pa, pb):
                if step_ab.ranks_above(ab):
                    ab_view = view
                if step_ba.ranks_above(ba):
                    ba_view = view
                ab = ab.join(step_ab)
                ba = ba.join(step_ba)
            found = Best(ab, ab_view, ba, ba_view)
            self._best[key] = found
        return found


@attrs.define(slots=False)
class SearchProblem:
    """What a worst-case search is asked: the interface, the two stores, the horizon, the
    strategy's query catalogue, strictness and the state limit (shared by both searches)."""

    interface: Interface
    store_a: Store
    store_b: Store
    horizon: int
    queries: tuple[Query, ...]
    strict: bool
    max_states: int

    def __attrs_post_init__(self) -> None:
        self.setup()

    def setup(self) -> None:
        """The search's own tables (subclasses)."""
