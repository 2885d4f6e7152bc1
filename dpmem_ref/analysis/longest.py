"""One pass instead of T: the ledger programme's worst case as a longest path in a DAG.

The ledger programme's moves (`ledger.LedgerSearch.run`) go from a ledger state to a state
with strictly larger counts (an admitted charge adds eps > 0), to itself (every slot falls
back, or charges nothing in R), or end the transcript (a terminal move, controls differ).
Suppose

(a) no move was cut at the horizon (the state graph built to depth T - 1 is closed);
(b) every self-loop has the exact zero step in both directions;
(c) the longest chain of strict moves from the start, L, is at most T.

Every step is >= 0 (the largest log ratio max_v log p_A(v) / p_B(v) of two distributions
is >= 0, and a dominated move is dropped only where the pass does as well). So a path of
k <= L strict moves extends to exactly T turns without losing anything, and a path of T
turns holds at most L strict moves and zero self-loops: V_T = V_inf, the largest loss over
all finite paths, which on a DAG with zero self-loops is

    V(s) = max( 0 if s has a self-loop, max over other moves (step + V(target)) )

computed once in decreasing order of total counts (every strict move raises it). Each
value is the same `add` / `join` of outward-rounded enclosures the value iteration uses,
so the result is an enclosure of the same exact value. When (a), (b) or (c) fails, None:
the caller iterates over r = 1..T as before.
"""

from __future__ import annotations

from dpmem_ref.analysis.loss import IMPOSSIBLE, ZERO, Loss

Move = tuple[int, Loss, int, Loss, int]  # (target, step ab, query ab, step ba, query ba)
BEYOND = -(10**9)  # targets at or below this were cut at the horizon


def longest_paths(
    moves: list[list[Move]], states: list[tuple[int, ...]], horizon: int
) -> tuple[list[Loss], list[Loss], list[int], list[int]] | None:
    """(V_ab, V_ba, best query ab, best query ba) per state, or None (module docstring)."""
    totals = [sum(counts) for counts in states]
    for s, state_moves in enumerate(moves):
        for target, step_ab, _, step_ba, _ in state_moves:
            if target <= BEYOND:
                return None  # (a)
            if target == s and not (step_ab.is_zero and step_ba.is_zero):
                return None  # (b)
            if 0 <= target != s and totals[target] <= totals[s]:
                return None  # not a strict move: no order to solve in
    order = sorted(range(len(states)), key=lambda s: -totals[s])
    chain = [0] * len(states)
    values_ab: list[Loss] = [ZERO] * len(states)
    values_ba: list[Loss] = [ZERO] * len(states)
    pick_ab = [-1] * len(states)
    pick_ba = [-1] * len(states)
    for s in order:
        best_ab, best_ba = IMPOSSIBLE, IMPOSSIBLE
        for target, step_ab, q_ab, step_ba, q_ba in moves[s]:
            if target == s:
                total_ab = total_ba = ZERO
            else:
                future_ab = values_ab[target] if target >= 0 else ZERO
                future_ba = values_ba[target] if target >= 0 else ZERO
                total_ab, total_ba = step_ab.add(future_ab), step_ba.add(future_ba)
                if target >= 0:
                    chain[s] = max(chain[s], chain[target] + 1)
            if pick_ab[s] < 0 or total_ab.ranks_above(best_ab):
                pick_ab[s] = q_ab
            if pick_ba[s] < 0 or total_ba.ranks_above(best_ba):
                pick_ba[s] = q_ba
            best_ab, best_ba = best_ab.join(total_ab), best_ba.join(total_ba)
        values_ab[s], values_ba[s] = best_ab, best_ba
    if chain[0] > horizon:
        return None  # (c)
    return values_ab, values_ba, pick_ab, pick_ba
