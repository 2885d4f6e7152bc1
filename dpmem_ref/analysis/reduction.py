"""The ledger programme's states (`analysis.ledger`): which ledgers a state keeps, in which
integer units, which queries the programme follows, and the admission test on them.

- Slicing. A release can differ between the stores only if its read set meets the
  differing positions D. Let R be the smallest attribute set holding the charge set of
  every such read and closed under "a read charging an attribute of R charges only R".
  A read charging outside R charges nothing in R and reads no position of D, so its step
  is exactly 0 and it moves no ledger of R: the ledgers outside R are dropped from the
  state. States are integer counts over R in units of one common denominator. Without
  a cap (NoCap) no ledger decides anything and R is empty.
- Implied caps. Let S_a be the slots that charge a with eps > 0 among the queries the
  programme follows (the whole catalogue; under the dominance pruning below, the queries
  whose release can differ and one pass, which charges nothing in R: no other query is
  ever played on the programme's paths). If S_a is a subset of S_b and B_a >= B_b, then
  on every path L_a <= L_b (both start at 0, and every charge to a is a charge of the
  same eps to b), so wherever a slot charging a has room under b's cap it has room under
  a's: L_a + eps <= L_b + eps <= B_b <= B_a.
  Then a never decides an admission and its ledger is dropped from the state too. The
  rule is applied in attribute order, each dropped attribute implied by one still kept;
  implication is transitive (subset and >=), so at the end every dropped attribute is
  implied by a kept one and the admission test over the kept ledgers is the full test.
  An attribute charged only with eps = 0 never moves and is never refused (L_a <= B_a):
  dropped as well. States that differ only in dropped ledgers have the same moves, the
  same summaries and isomorphic futures, so their values (rounding included: the same
  operations on the same operands) are the ones the unmerged programme computes.
- Dominated moves. When every query has one slot, the control is public (fallback or
  none) and some query is a pass (it charges no attribute of R and its release is the
  same under both stores), V_r is non-increasing in the ledgers: from lower ledgers a
  strategy can mimic any move (an admission at higher ledgers is an admission at lower
  ones, with the same release law; a refusal is mimicked by the pass). A move whose step
  is exactly 0 both ways and that only raises ledgers is then never better than the
  pass, so it is not followed: the states are those reached by releases that differ, and
  only the queries whose release can differ (and one pass query) are tried at a state.
"""

from __future__ import annotations

from fractions import Fraction
from math import lcm

from dpmem_ref.analysis.bounds import turn_reads
from dpmem_ref.analysis.steps import SearchProblem, StepTable
from dpmem_ref.interface import Interface
from dpmem_ref.turn.planner import begin_turn
from dpmem_ref.turn.state import InterfaceState


def public_control(interface: Interface) -> bool:
    """The control reads only public per-turn inputs (declared on the part, C6)."""
    control = interface.control
    return not (control.reads_private or control.reads_views or control.reads_history)


class Slot:
    """One slot of a query's turn: charge set over R (None if it charges outside R)."""

    __slots__ = ("charge", "units")

    def __init__(self, charge: tuple[int, ...] | None, units: int) -> None:
        self.charge, self.units = charge, units


class LedgerReduction(SearchProblem):
    """The reduced ledger states of a search problem (module docstring): R (`sliced`), the
    kept ledgers (`relevant`), their caps in integer units, each query's slots, the
    followed and the moving queries, and the admission test (`pattern`)."""

    def setup(self) -> None:
        self.steps = StepTable()
        self.capped = self.interface.cap_rule.prospective
        self._layout()

    # ---- slicing and integer units

    def _layout(self) -> None:
        interface = self.interface
        names = interface.policy.attribute_names
        reads = self.reads = turn_reads(interface, self.queries, self.store_a, self.store_b, self.strict)
        relevant: set[str] = set()
        for turn in reads:
            for charge, _, differs in turn:
                if differs:
                    relevant |= charge
        grown = True
        while grown:
            grown = False
            for turn in reads:
                for charge, _, _ in turn:
                    if charge & relevant and not charge <= relevant:
                        relevant |= charge
                        grown = True
        if not self.capped:
            relevant = set()  # every selection is admitted: no ledger decides anything
        # Dominance pruning (module docstring): one slot per query, a public control and a
        # pass query (every slot charges outside R, or nothing, and reads no position of D).
        self.prune = (
            all(len(turn) <= 1 for turn in reads)
            and public_control(interface)
            and any(all(not differs and not charge & relevant for charge, _, differs in turn) for turn in reads)
        )
        # Under pruning a query whose release never differs adds nothing: admitted it only
        # raises ledgers at step 0 (dominated), refused or charging outside R it is a
        # step-0 self-loop, as the pass is. So the states follow the differing queries and
        # one pass query.
        passes = [q for q, turn in enumerate(reads) if all(not d and not c & relevant for c, _, d in turn)]
        self.followed = (
            [q for q, turn in enumerate(reads) if any(d for _, _, d in turn)] + passes[:1]
            if self.prune
            else list(range(len(reads)))
        )
        caps = interface.policy.caps
        # The queries whose moves raise ledgers on the programme's paths: every followed
        # one; under pruning only those admitted somewhere (at the start: ledgers only
        # grow) whose admitted release differs and does not end the transcript (a one-slot
        # query has one admitted summary, the same at every state: a step-0 admission is
        # dominated and never followed, a terminal one reaches no state).
        self.moving = list(self.followed)
        if self.prune:
            start = InterfaceState.initial(interface)
            self.moving = []
            for q in self.followed:
                if not any(c & relevant and eps > 0 for c, eps, _ in reads[q]):
                    continue
                cursor_a = begin_turn(interface, start, self.queries[q], self.store_a, strict=self.strict)
                cursor_b = begin_turn(interface, start, self.queries[q], self.store_b, strict=self.strict)
                plan_a, plan_b = cursor_a.plan(), cursor_b.plan()
                if not plan_a.admitted:
                    continue
                best = self.steps.best(plan_a, plan_b)
                if best.ab.is_zero and best.ba.is_zero:
                    continue
                if cursor_a.release(best.ab_at).control() != cursor_b.release(best.ab_at).control():
                    continue
                self.moving.append(q)
        # Implied caps (module docstring): an attribute a whose positive charges on those
        # moves all come with a charge to some b (the same slots, so the same eps) with
        # B_a >= B_b never decides an admission; it is dropped from the state. Each
        # dropped attribute has a kept one implying it (implication is transitive), so
        # every admission test over the kept attributes equals the full one.
        charged_by = {
            a: frozenset((q, i) for q in self.moving for i, (c, eps, _) in enumerate(reads[q]) if a in c and eps > 0)
            for a in relevant
        }
        kept = [a for a in names if a in relevant]
        for a in list(kept):
            if not charged_by[a] or any(b != a and charged_by[a] <= charged_by[b] and caps[a] >= caps[b] for b in kept):
                kept.remove(a)
        self.sliced = tuple(a for a in names if a in relevant)  # R, before the implied caps are dropped
        self.relevant = tuple(kept)
        index = {a: i for i, a in enumerate(self.relevant)}
        unit = lcm(
            1,
            *(caps[a].denominator for a in self.relevant),
            *(eps.denominator for turn in reads for charge, eps, _ in turn if charge <= relevant),
        )
        self.unit = unit
        self.caps = tuple(int(caps[a] * unit) for a in self.relevant)
        self.slots = [
            [
                Slot(tuple(index[a] for a in sorted(charge) if a in index), int(eps * unit))
                if charge <= relevant
                else Slot(() if not self.capped else None, 0)
                for charge, eps, _ in turn
            ]
            for turn in reads
        ]

    def ledgers_of(self, counts: tuple[int, ...]) -> tuple[Fraction, ...]:
        """A full ledger vector showing `counts` on R (0 elsewhere): a representative."""
        by_name = dict(zip(self.relevant, counts, strict=True))
        return tuple(Fraction(by_name.get(a, 0), self.unit) for a in self.interface.policy.attribute_names)

    # ---- one query at one state

    def pattern(self, q: int, counts: tuple[int, ...]) -> tuple[tuple[bool | None, ...], tuple[int, ...]]:
        """Admission of each slot (Algorithm 1, line 9, in integer units; None for slots
        charging outside R) and the counts after the turn."""
        current = list(counts)
        bits: list[bool | None] = []
        caps = self.caps
        for slot in self.slots[q]:
            charge = slot.charge
            if charge is None:
                bits.append(None)
                continue
            units = slot.units
            admitted = not self.capped or all(current[i] + units <= caps[i] for i in charge)
            bits.append(admitted)
            if admitted:
                for i in charge:
                    current[i] += units
        return tuple(bits), tuple(current)
