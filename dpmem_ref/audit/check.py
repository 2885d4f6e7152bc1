"""`dpmem check`: the static interface contract (Definition 1, C1-C6) of a described
deployment, with the declared sensitivity bound of the linear scorer proved by the exact
argument and by z3 (Eq. 6, Appendix C.5)."""

from __future__ import annotations

from typing import Any

import attrs

from dpmem_ref.audit.sensitivity import SensitivityProof, prove_linear_sensitivity, z3_deadline
from dpmem_ref.contract import find_violations
from dpmem_ref.core.errors import Violation
from dpmem_ref.core.rational import fraction_text
from dpmem_ref.interface import Interface
from dpmem_ref.parts.scoring import LinearTagScorer

CONDITION_ORDER = ("C1", "C2", "C3", "C4", "C5", "C6")


@attrs.frozen
class CheckReport:
    """The static verdict: every violation (condition, message) and the sensitivity proofs."""

    violations: tuple[Violation, ...]
    sensitivity: tuple[SensitivityProof, ...]

    @property
    def ok(self) -> bool:
        return not self.violations

    def to_json(self) -> dict[str, Any]:
        from dpmem_ref.schemas import envelope

        return {
            **envelope("check"),
            "ok": self.ok,
            "violations": [violation_json(v) for v in self.violations],
            "sensitivity": [proof_json(p) for p in self.sensitivity],
        }


def violation_json(violation: Violation) -> dict[str, Any]:
    """A finding as structured JSON: condition, code, where (query, slot, attribute,
    positions; null / [] when it concerns a whole part) and the human message."""
    return {
        "condition": violation.condition,
        "code": violation.code,
        "query": violation.query,
        "slot": violation.slot,
        "attribute": violation.attribute,
        "positions": list(violation.positions),
        "message": violation.message,
    }


def proof_json(proof: SensitivityProof) -> dict[str, Any]:
    """One slot's Eq. (6) verdict, as the text prints it, with its counterexample pair."""
    example = proof.counterexample
    return {
        "slot": proof.slot,
        "declared": fraction_text(proof.declared),
        "exact": fraction_text(proof.exact),
        "holds": proof.holds,
        "z3": proof.z3,
        "counterexample": None
        if example is None
        else {
            "view": example.view,
            "tags_in_m": list(example.tags_in_m),
            "tags_in_m_prime": list(example.tags_in_m_prime),
            "gap": fraction_text(example.gap),
        },
    }


def charged_reads(interface: Interface) -> dict[str, list[tuple[str, frozenset[str]]]]:
    """Per slot: (query, attributes) of every read whose selection is charged, i.e. whose
    read set touches a protected group (Gamma*, Eq. 4) or that declares a charge."""
    reads: dict[str, list[tuple[str, frozenset[str]]]] = {}
    for query in interface.queries:
        for read in query.reads:
            touched = interface.policy.gamma_star(read.positions) | (read.charge or frozenset())
            if touched:
                reads.setdefault(read.slot, []).append((query.name, touched))
    return reads


def _where(slot: str, reads: list[tuple[str, frozenset[str]]]) -> str:
    """ "query Q[ and n more queries], slot S, attribute a[, b]" for a charged slot."""
    query = reads[0][0]
    attributes: frozenset[str] = frozenset().union(*(touched for _, touched in reads))
    more = f" and {len(reads) - 1} more quer{'y' if len(reads) == 2 else 'ies'}" if len(reads) > 1 else ""
    return f"query {query}{more}, slot {slot}, attribute {', '.join(sorted(attributes))}"


def sensitivity_violations(interface: Interface, use_z3: bool = True) -> tuple[list[Violation], list[SensitivityProof]]:
    """C3 via Eq. (6): the declared Delta u of every charged slot against its true supremum."""
    scorer = interface.scorer
    if not isinstance(scorer, LinearTagScorer):
        return [], []
    violations = []
    proofs = []
    deadline = z3_deadline()  # one z3 budget for the whole check (docs/config-format.md, "Limits")
    for slot, reads in charged_reads(interface).items():
        proof = prove_linear_sensitivity(scorer, interface.vocabulary(slot), use_z3=use_z3, z3_deadline_ns=deadline)
        proofs.append(proof)
        if proof.counterexample is not None:
            example = proof.counterexample
            touched = sorted(frozenset().union(*(attributes for _, attributes in reads)))
            violations.append(
                Violation.of(
                    "C3.sensitivity_below_bound",
                    f"{_where(slot, reads)}: declared sensitivity {fraction_text(proof.declared)} is below "
                    f"the true bound {fraction_text(proof.exact)} (Eq. 6); counterexample for view {example.view}: a "
                    f"read position in I_a holding tags [{', '.join(example.tags_in_m)}] under M and "
                    f"[{', '.join(example.tags_in_m_prime)}] under M' moves its score by {fraction_text(example.gap)}",
                    query=reads[0][0],
                    slot=slot,
                    attribute=touched[0] if len(touched) == 1 else None,
                )
            )
    return violations, proofs


def _global_scope(interface: Interface) -> str:
    slots = sorted(charged_reads(interface))
    return f" (every charged selection: slots {', '.join(slots)})" if slots else ""


def check_interface(interface: Interface, use_z3: bool = True) -> CheckReport:
    """Definition 1 on the declared parts (`dpmem_ref.contract.find_violations`) plus Eq. (6).
    Where Eq. 6 is proved here (a linear scorer with charged selections), it is checked once,
    here, with its counterexample pair: the kernel's own Eq. 6 comparison is not run."""
    scope = _global_scope(interface)
    violations = []
    found, proofs = sensitivity_violations(interface, use_z3=use_z3)
    for violation in find_violations(interface, eq6=not proofs):
        # A part-level finding (from its code, never its prose) concerns every charged selection.
        violations.append(attrs.evolve(violation, message=violation.message + (scope if violation.part_level else "")))
    violations.extend(found)
    order = {c: i for i, c in enumerate(CONDITION_ORDER)}
    violations.sort(key=lambda v: order.get(v.condition, 99))
    return CheckReport(violations=tuple(violations), sensitivity=tuple(proofs))
