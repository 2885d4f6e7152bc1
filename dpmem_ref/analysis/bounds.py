"""Work bounds of an audit (`dpmem audit --max-states`): refused only when the work is real.

`--max-states` bounds the states an engine builds: ledger states for the sparse ledger
programme, cells for the lattice programme, widened table keys (or (turns, value) pairs)
for the frontier programme,
(turn, ledgers) and slot nodes for the general search. Every engine counts them as it
builds them and stops, with one line, at the first state past the limit (a bounded trial
build: an audit that fits is never refused, and one that does not costs at most the limit's
worth of building). Two facts decided before any work:

- An upper bound on the ledger vectors (`ledger_levels`, used to choose between the sparse
  and the lattice programme): a slot's read set, charge set and eps do not depend on the
  ledgers (only admission does, Algorithm 1 line 9), so ledger a only ever holds sums of
  the eps of slots charging a, i.e. multiples of g_a = gcd of those eps, at most B_a (C5)
  and at most (T - 1) x (slots charging a per turn) x max eps after T - 1 turns. Hence at
  most levels_a = min(B_a / g_a, (T - 1) x n_a) + 1 values per attribute (n_a: the most
  admissions to a in one turn, times max eps / g_a), and at most prod_a levels_a vectors.
- A lower bound on the states the sparse ledger programme builds (`LedgerSearch.least_states`,
  counted by `combinations_within`): queries with pairwise disjoint charge sets move
  independently, so every combination of their admission counts within T - 1 turns is a
  distinct state it must build. An audit whose lower bound exceeds the limit is refused at
  once (the refusal costs no search), naming the bound.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from math import gcd, lcm, prod

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.policy import Store
from dpmem_ref.core.transcript import Query
from dpmem_ref.interface import Interface
from dpmem_ref.turn.planner import begin_turn
from dpmem_ref.turn.state import InterfaceState

# One read of a turn: (charge set, eps, whether its read set meets the differing positions).
Read = tuple[frozenset[str], Fraction, bool]


def turn_reads(
    interface: Interface, queries: Iterable[Query], store_a: Store, store_b: Store, strict: bool
) -> list[list[Read]]:
    """Per query, per slot of its turn at the initial state: charge set, eps, differs."""
    initial = InterfaceState.initial(interface)
    reads: list[list[Read]] = []
    for query in queries:
        cursor = begin_turn(interface, initial, query, store_a, strict=strict)
        turn = []
        while not cursor.done:
            plan = cursor.plan()
            differs = store_a.read(plan.read.positions) != store_b.read(plan.read.positions)
            turn.append((plan.charge_set, plan.epsilon, differs))
            cursor = cursor.release(plan.distribution.support()[0])
        reads.append(turn)
    return reads


def ledger_levels(
    interface: Interface, reads: list[list[Read]], attributes: Iterable[str], horizon: int, capped: bool = True
) -> int:
    """An upper bound on the ledger vectors over `attributes` within T - 1 turns (module
    docstring); capped=False (a cap rule that does not refuse, NoCap) drops the B_a bound."""
    caps = interface.policy.caps
    chosen = tuple(attributes)
    # Per slot kind (charge set within `attributes`, eps): the most admissions of that kind
    # in T - 1 turns. A ledger vector is sum_k n_k x (eps_k on charge_k), 0 <= n_k <= that.
    kinds: dict[tuple[frozenset[str], Fraction], int] = {}
    for turn in reads:
        counts: dict[tuple[frozenset[str], Fraction], int] = {}
        for charge, eps, _ in turn:
            mine = charge.intersection(chosen)
            if mine and eps > 0:
                counts[(mine, eps)] = counts.get((mine, eps), 0) + 1
        for kind, count in counts.items():
            kinds[kind] = max(kinds.get(kind, 0), count)
    most: dict[tuple[frozenset[str], Fraction], int] = {}
    for (charge, eps), per_turn in kinds.items():
        count = (horizon - 1) * per_turn
        if capped:
            count = min(count, min(int(caps[a] // eps) for a in charge))
        most[(charge, eps)] = count
    by_kind = prod(count + 1 for count in most.values())
    # Per attribute: its ledger is a multiple of g_a up to min(B_a, T - 1 turns of charges).
    by_attribute = 1
    for attribute in chosen:
        charging = {kind: count for kind, count in most.items() if attribute in kind[0]}
        if not charging:
            continue
        epsilons = [eps for _, eps in charging]
        unit = lcm(*(e.denominator for e in epsilons), caps[attribute].denominator)
        step = gcd(*(int(e * unit) for e in epsilons))
        top = sum(count * int(eps * unit) for (_, eps), count in charging.items())
        if capped:
            top = min(top, int(caps[attribute] * unit))
        by_sums = prod(count + 1 for count in charging.values())
        by_attribute *= min(top // step + 1, by_sums)
    return min(by_kind, by_attribute)


def combinations_within(counts: Iterable[int], turns: int) -> int:
    """#{n : 0 <= n_i <= counts_i, sum n <= turns}: the coefficients of prod_i (1 + z + ... +
    z^counts_i) up to degree `turns`, summed (a truncated polynomial product, exact)."""
    poly = [1]
    for count in counts:
        width = min(len(poly) + count, turns + 1)
        prefix = [0]
        for c in poly:
            prefix.append(prefix[-1] + c)
        # new[d] = sum_{j = max(0, d - count)}^{d} poly[j]
        poly = [prefix[min(d, len(poly) - 1) + 1] - prefix[max(0, d - count)] for d in range(width)]
    return sum(poly)


def state_limit(max_states: int, need: str | None = None, change: str = "raise it") -> InputError:
    """The one-line refusal of an audit past `--max-states` (exit 2 in the CLI): what the
    audit needs and a change that lowers the work or lets it run (`change`)."""
    error = InputError("--max-states", f"at most {max_states} memoized states", "more")
    what = need if need is not None else f"more than {max_states} memoized states"
    error.args = (f"--max-states: this audit needs {what}, over --max-states {max_states}; {change}",)
    return error


def floor_limit(max_states: int, least: int, cut: bool, horizon: int) -> InputError:
    """The refusal on the lower bound `least` (`LedgerSearch.least_states`); `cut`: the
    horizon cuts the bound, so a lower --horizon lowers the work."""
    change = f"raise it to at least {least}"
    if cut:
        change += f", or lower --horizon (the bound counts the states within {horizon - 1} turns)"
    return state_limit(max_states, f"at least {least} ledger states (a lower bound)", change)
