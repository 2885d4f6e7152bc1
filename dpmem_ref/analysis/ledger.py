"""The ledger programme: the worst case when a turn's plans depend on the prefix only
through the ledgers (fixed routing, a control that reads neither history nor views, no
private hooks, a cap rule that reads only the charged ledgers: every file interface).

Then V_r(L) = max_q [step(q, L) + V_{r-1}(L + delta(q, L))] with r the remaining turns,
and these facts bring the cost down from (queries + T) x (K+1)^A (in the pruned one-slot
shape `analysis.lattice` then solves the longest path as one vectorised integer programme,
or `analysis.frontier` as the same programme by variable elimination):

- Slicing, implied caps, dominated moves. The state is integer counts over the ledgers
  that can decide an admission, and only the queries that can matter are tried at a state
  (`analysis.reduction`, derivations there).
- One plan per (query, admission pattern). Read set, charge set and eps of a slot do not
  depend on the ledgers; the ledgers only decide, slot by slot, whether the cap rule
  admits (Algorithm 1, line 9). A query's turn is summarised once per pattern, by walking
  the kernel's turn planner (`begin_turn`, one cursor per store) at the first state that
  shows the pattern; at every other state only the admission test runs, on integers.
  This is the only place the engine decides admissions without `plan_slot`, so each new
  summary re-checks the cursor's admissions against the integer test.
- One pass. When the state graph is closed within the horizon, every self-loop has step 0
  and the longest chain of ledger increases fits in T, V_T is a longest path in a DAG,
  computed once (`analysis.longest`, derivation there); else:
- Early stop. V_r is computed bottom-up for r = 1, 2, ... over the states within depth
  T - r of the start, and stops at the first r with V_r = V_{r-1} at every one of them
  (exact comparison of the loss values): V_{r+1} at depth <= T - r - 1 reads V_r only at
  depth <= T - r, where it equals V_{r-1}, so V_{r+1} = V_r there, and by induction
  V_T = V_r at the start. This is a statement about this horizon T only: the state graph
  is built to depth T - 1, so states first reached later are never valued, and a longer
  horizon may have a larger loss (`WorstCase.stopped_after`; it claims nothing beyond T).

The witness is replayed forward with real cursors (full ledgers, both stores) along the
chosen queries, choosing each slot's view by the exact step, so it is a real transcript.
"""

from __future__ import annotations

from dpmem_ref.analysis import frontier, lattice
from dpmem_ref.analysis.bounds import combinations_within, ledger_levels, state_limit
from dpmem_ref.analysis.direction import Best, LossDirection
from dpmem_ref.analysis.longest import longest_paths
from dpmem_ref.analysis.loss import IMPOSSIBLE, INFINITE, ZERO, Loss
from dpmem_ref.analysis.reduction import LedgerReduction
from dpmem_ref.analysis.replay import witness_chain
from dpmem_ref.analysis.witness import Node
from dpmem_ref.core.transcript import Query
from dpmem_ref.interface import Interface
from dpmem_ref.parts.broken import NoCap
from dpmem_ref.turn.planner import begin_turn
from dpmem_ref.turn.state import InterfaceState


def applies(interface: Interface, strict: bool) -> bool:
    """Whether the ledger programme is exact for this interface (module docstring)."""
    router = interface.router
    hooks = interface.hooks
    return (
        not router.reads_released_views
        and not router.reads_history
        and not interface.control.reads_views
        and not interface.control.reads_history
        and hooks.routing is None
        and hooks.fallback is None
        and hooks.vocabulary is None
        and not interface.reuse.rules  # reuse reads the released history: the general search
        # Strict NoCap must raise C5 at the state that overflows: the general search does.
        and (interface.cap_rule.prospective or (isinstance(interface.cap_rule, NoCap) and not strict))
    )


class _Summary:
    """A query's turn under one admission pattern: best steps, views, ledger move."""

    __slots__ = ("ab", "ba", "delta", "terminal")

    def __init__(self, ab: Loss, ba: Loss, delta: tuple[int, ...], terminal: bool) -> None:
        self.ab, self.ba, self.delta, self.terminal = ab, ba, delta, terminal


class LedgerSearch(LedgerReduction):
    """The ledger programme over the reduced states (`analysis.reduction`)."""

    def setup(self) -> None:
        super().setup()
        self.summaries: dict[tuple[int, tuple[bool | None, ...]], _Summary] = {}
        self.iterations = 0
        self.all_horizons = False  # True: V_r at the start for every r (components need it), no one-pass shortcut
        self.longest = False  # the one-pass longest path replaced the value iteration
        # "auto": the lattice (`analysis.lattice`) or frontier (`analysis.frontier`)
        # programme where one applies and the sparse estimate reaches LATTICE_FROM (the
        # lattice where its box fits the limit and costs at most 8 times the frontier's
        # work); "always": the lattice wherever it applies; "frontier": the frontier
        # programme wherever it applies; "never". Decided by `estimate` (the run without an
        # estimate is the sparse programme).
        self.lattice_mode = "auto"
        self.lattice_plan: lattice.Plan | None = None
        self.frontier_plan: tuple[lattice.Shape, frontier.Plan] | None = None

    def estimate(self) -> int:
        """A bound on the ledger states the programme builds, before it builds any
        (`analysis.bounds`), over the kept attributes (implied caps dropped). With
        dominance pruning only the moving queries' admissions (a release that differs, not
        terminal, `analysis.reduction`) raise ledgers, so only their charges count. Also
        chooses the engine (`lattice_mode`)."""
        moving = set(self.moving)
        reads = [turn if q in moving else [] for q, turn in enumerate(self.reads)] if self.prune else self.reads
        sparse = ledger_levels(self.interface, reads, self.relevant, self.horizon)
        self.lattice_plan = None
        self.frontier_plan = None
        mode = self.lattice_mode
        if mode == "never" or (mode == "auto" and sparse < lattice.LATTICE_FROM):
            return sparse
        found = lattice.shape(self)
        if found is None:
            return sparse
        boxed = lattice.plan(self, self.max_states, found) if mode != "frontier" else None
        eliminated = frontier.plan(found, self.horizon) if mode != "always" else None
        if boxed is not None and (eliminated is None or boxed.cells <= 8 * eliminated.work):
            self.lattice_plan = boxed  # it values every cell of its box: the box is the estimate
            return boxed.cells
        if eliminated is not None:
            self.frontier_plan = (found, eliminated)  # past the limit the sparse programme runs
            return max(eliminated.work, sparse)
        return sparse

    def least_states(self) -> tuple[int, bool]:
        """A lower bound on the ledger states the sparse programme builds (`analysis.bounds`),
        and whether the horizon cuts it. Under dominance pruning a moving query q (one slot,
        charging kept ledgers C_q with u_q units, admitted with a differing, non-terminal
        release: the same summary wherever it is admitted) is followed at every state. Take
        moving queries with pairwise disjoint C_q (greedily, the most admissions first): at
        the state reached by n_q admissions of each, ledger i in C_q holds n_q u_q, so q is
        admitted while n_q < c_q = min_i B_i // u_q, and distinct n give distinct states
        (disjoint supports, u_q > 0) within depth sum n. Every n with n_q <= c_q and sum n
        <= T - 1 is thus a state the programme builds. Without pruning: 1 (no bound)."""
        if self.lattice_plan is not None:
            return self.lattice_plan.cells, False  # the lattice values its box, which fits the limit
        if self.frontier_plan is not None:
            return 0, False  # the frontier programme stops at the limit itself
        if not self.prune or not self.capped:
            return 1, False
        candidates = []
        for q in self.moving:
            slot = self.slots[q][0]
            if slot.charge and slot.units > 0:
                candidates.append((min(self.caps[i] // slot.units for i in slot.charge), q, frozenset(slot.charge)))
        candidates.sort(key=lambda c: (-c[0], c[1]))
        used: set[int] = set()
        counts = []
        for most, _, charge in candidates:
            if most and not charge & used:
                used |= charge
                counts.append(most)
        within = combinations_within(counts, self.horizon - 1)
        return within, within < combinations_within(counts, sum(counts))

    # ---- one query at one state

    def summary(self, q: int, bits: tuple[bool | None, ...], counts: tuple[int, ...]) -> _Summary:
        key = (q, bits)
        found = self.summaries.get(key)
        if found is not None:
            return found
        query = self.queries[q]
        state = InterfaceState(turn=0, ledgers=self.ledgers_of(counts), history=())
        cursor_a = begin_turn(self.interface, state, query, self.store_a, strict=self.strict)
        cursor_b = begin_turn(self.interface, state, query, self.store_b, strict=self.strict)
        ab: Loss = ZERO
        ba: Loss = ZERO
        for bit in bits:
            plan_a, plan_b = cursor_a.plan(), cursor_b.plan()
            if bit is not None and plan_a.admitted != bit:
                raise AssertionError(f"ledger programme: admission of slot {plan_a.slot} disagrees with plan_slot")
            best = self.steps.best(plan_a, plan_b)
            if bit is None and not (best.ab.is_zero and best.ba.is_zero):
                raise AssertionError(f"ledger programme: sliced slot {plan_a.slot} differs between the stores")
            ab, ba = best.ab.add(ab), best.ba.add(ba)
            cursor_a, cursor_b = cursor_a.release(best.ab_at), cursor_b.release(best.ab_at)
        terminal = cursor_a.control() != cursor_b.control()
        if terminal:
            ab = ab if ab.is_impossible else INFINITE
            ba = ba if ba.is_impossible else INFINITE
        _, after = self.pattern(q, counts)
        found = _Summary(ab, ba, tuple(x - y for x, y in zip(after, counts, strict=True)), terminal)
        self.summaries[key] = found
        return found

    # ---- the programme

    def run(self) -> Best[Node]:
        if self.lattice_plan is not None:
            return lattice.solve(self, self.lattice_plan)
        if self.frontier_plan is not None:
            try:
                return frontier.solve(self, *self.frontier_plan)
            except frontier.FrontierFull:
                self.frontier_plan = None  # its table passed the limit: the sparse programme's turn
                least, _ = self.least_states()
                if least > self.max_states:
                    raise state_limit(
                        self.max_states,
                        f"more than {self.max_states} frontier table entries and at least {least} sparse ledger states",
                        "raise it",
                    ) from None
        start: tuple[int, ...] = tuple(0 for _ in self.relevant)
        index = {start: 0}
        states = [start]
        depth = [0]
        # moves[s]: per distinct target (next state, or terminal per query): the best query
        # index and step each direction.
        moves: list[list[tuple[int, Loss, int, Loss, int]]] = []
        s = 0
        while s < len(states):
            counts = states[s]
            groups: dict[int, list[object]] = {}
            for q in self.followed:
                bits, after = self.pattern(q, counts)
                summary = self.summary(q, bits, counts)
                if summary.terminal:
                    target = -1 - q
                else:
                    if self.prune and after != counts and summary.ab.is_zero and summary.ba.is_zero:
                        continue  # dominated by the pass (`analysis.reduction`)
                    target = index.get(after, -1)
                    if target < 0:
                        if depth[s] + 1 >= self.horizon:
                            target = -(10**9) - q  # beyond the horizon: its value is never read
                        else:
                            if len(states) >= self.max_states:
                                # Breadth first: every state within depth[s] turns is built
                                # (at most the limit), so a horizon of depth[s] + 1 fits.
                                raise state_limit(
                                    self.max_states,
                                    f"more than {self.max_states} ledger states",
                                    f"raise it, or lower --horizon to at most {depth[s] + 1}"
                                    f" (the {len(states)} ledger states within {depth[s]} turns fit)",
                                )
                            target = index[after] = len(states)
                            states.append(after)
                            depth.append(depth[s] + 1)
                group = groups.get(target)
                if group is None:
                    groups[target] = [q, summary.ab, q, summary.ba]
                    continue
                if summary.ab.ranks_above(group[1]):  # type: ignore[arg-type]
                    group[0], group[1] = q, summary.ab
                if summary.ba.ranks_above(group[3]):  # type: ignore[arg-type]
                    group[2], group[3] = q, summary.ba
            moves.append([(t, g[1], g[0], g[3], g[2]) for t, g in groups.items()])  # type: ignore[misc]
            s += 1
        self.state_count = len(states)
        values_ab = [ZERO] * len(states)
        values_ba = [ZERO] * len(states)
        choices: list[tuple[list[int], list[int]]] = []
        # V_r at the start for r = 0, 1, ...: the worst case at every shorter horizon too
        # (the start has depth 0 <= T - r), which `components` combines across components.
        self.start_values: list[tuple[Loss, Loss]] = [(ZERO, ZERO)]
        found = None if self.all_horizons else longest_paths(moves, states, self.horizon)
        if found is not None:  # one pass: a longest path (`analysis.longest`)
            values_ab, values_ba, pick_ab, pick_ba = found
            choices.append((pick_ab, pick_ba))
            self.iterations, self.longest = 1, True
            self.start_values.append((values_ab[0], values_ba[0]))
        for r in range(1, self.horizon + 1 if found is None else 1):
            new_ab = list(values_ab)
            new_ba = list(values_ba)
            pick_ab = [-1] * len(states)
            pick_ba = [-1] * len(states)
            for s, state_moves in enumerate(moves):
                if depth[s] > self.horizon - r:
                    continue
                best_ab, best_ba = IMPOSSIBLE, IMPOSSIBLE
                choice_ab = choice_ba = -1
                for target, step_ab, q_ab, step_ba, q_ba in state_moves:
                    future_ab = values_ab[target] if target >= 0 else ZERO
                    future_ba = values_ba[target] if target >= 0 else ZERO
                    total_ab = step_ab.add(future_ab)
                    total_ba = step_ba.add(future_ba)
                    if choice_ab < 0 or total_ab.ranks_above(best_ab):
                        choice_ab = q_ab
                    if choice_ba < 0 or total_ba.ranks_above(best_ba):
                        choice_ba = q_ba
                    best_ab = best_ab.join(total_ab)
                    best_ba = best_ba.join(total_ba)
                new_ab[s], new_ba[s] = best_ab, best_ba
                pick_ab[s], pick_ba[s] = choice_ab, choice_ba
            choices.append((pick_ab, pick_ba))
            self.iterations = r
            still = [s for s in range(len(states)) if depth[s] <= self.horizon - r]
            stable = all(new_ab[s] == values_ab[s] and new_ba[s] == values_ba[s] for s in still)
            values_ab, values_ba = new_ab, new_ba
            self.start_values.append((values_ab[0], values_ba[0]))
            if stable:
                break
        self.fixed_point = self.iterations if self.iterations < self.horizon and not self.longest else None
        self.choices, self.states, self.index = choices, states, index
        return Best(
            values_ab[0],
            self.witness(choices, LossDirection.A_OVER_B, states, index),
            values_ba[0],
            self.witness(choices, LossDirection.B_OVER_A, states, index),
        )

    @property
    def states_explored(self) -> int:
        """Ledger states times value iterations, plus (query, admission pattern) summaries."""
        return self.state_count * self.iterations + len(self.summaries)

    def value_at(self, turns: int) -> tuple[Loss, Loss]:
        """V_turns at the start, both directions (turns <= T; constant after the early stop)."""
        return self.start_values[min(turns, len(self.start_values) - 1)]

    def witness(
        self,
        choices: list[tuple[list[int], list[int]]],
        direction: LossDirection,
        states: list[tuple[int, ...]],
        index: dict[tuple[int, ...], int],
    ) -> Node:
        """The chosen queries from the start (on ledger counts), replayed with real cursors."""
        chosen = self.chosen_queries(choices, direction, states, index, self.horizon)
        return witness_chain(self.interface, self.store_a, self.store_b, chosen, direction, self.steps, self.strict)

    def chosen_queries(
        self,
        choices: list[tuple[list[int], list[int]]],
        direction: LossDirection,
        states: list[tuple[int, ...]],
        index: dict[tuple[int, ...], int],
        turns: int,
    ) -> list[Query]:
        """The queries of the worst strategy over `turns` <= T turns from the start."""
        chosen: list[Query] = []
        s = 0
        for t in range(turns):
            q = direction.pick(*choices[min(turns - t, len(choices)) - 1])[s]
            if q < 0:
                break
            chosen.append(self.queries[q])
            _, after = self.pattern(q, states[s])
            s = index.get(after, -1)  # a terminal move ends the replay (its controls differ)
            if s < 0:
                break
        return chosen
