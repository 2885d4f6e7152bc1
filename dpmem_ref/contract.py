"""The static contract check of Definition 1 (C1-C6) on an interface's declared parts.

Each finding is a `Violation` with a stable code (`dpmem_ref.core.errors.VIOLATION_CODES`):
callers branch on `code`, `condition` or `part_level`, never on the message.
`contract_violations(interface)` is the memoized check; `require_contract(interface)` raises the first finding as a
`ContractViolation` (the strict kernel).
"""

from __future__ import annotations

from dpmem_ref.core.errors import ContractViolation, Violation
from dpmem_ref.core.transcript import SlotRead
from dpmem_ref.interface import Interface


def contract_violations(interface: Interface) -> list[Violation]:
    """Static check of Definition 1 on the declared parts and routes, memoized on the interface."""
    memo = interface._memo
    if memo.violations is None:
        memo.violations = tuple(find_violations(interface))
    return list(memo.violations)


def require_contract(interface: Interface) -> None:
    """Raise the first violation (strict kernel)."""
    if interface._memo.violations == ():
        return
    violations = contract_violations(interface)
    if violations:
        first = violations[0]
        raise ContractViolation(first.code, first.message)


def find_violations(interface: Interface, eq6: bool = True) -> list[Violation]:
    """Definition 1 on the declared parts and routes, in the order found. `eq6=False` leaves
    out the comparison of each declared sensitivity with the scorer's exact bound (Eq. 6),
    for a caller that proves Eq. 6 itself (the audit, `dpmem_ref.audit.check`)."""
    found = [Violation.of(code, message) for code, message in interface.hooks.violations()]
    found.extend(_part_violations(interface))
    policy = interface.policy
    slots = set(policy.layout.slots)
    for vocabulary in interface.vocabularies:
        if vocabulary.slot not in slots:
            found.append(
                Violation.of(
                    "C1.vocabulary_without_slot", f"slot {vocabulary.slot}: vocabulary for a slot with no positions"
                )
            )
    for query in interface.queries:
        for read in query.reads:
            found.extend(_read_violations(interface, query.name, read, eq6))
    return found


def _part_violations(interface: Interface) -> list[Violation]:
    found = []
    if interface.selector.violates:
        message = f"selector {interface.selector.name!r} is not the exponential mechanism (Eq. 7)"
        found.append(Violation(interface.selector.violates, message, "selector_not_em"))
    if interface.cap_rule.violates:
        message = f"cap rule {interface.cap_rule.name!r} does not keep L_a <= B_a on every path"
        found.append(Violation(interface.cap_rule.violates, message, "cap_rule"))
    if interface.control.violates:
        message = f"observable control {interface.control.name!r} reads raw memory or internal scores"
        found.append(Violation(interface.control.violates, message, "control_reads_private"))
    for rule in interface.reuse.reads_memory:
        # Reuse is post-processing only when the decision to reuse reads public inputs and
        # the released history (dpmem_ref.parts.reuse); a refresh on an undeclared memory
        # change makes the pattern of charged selections a function of memory.
        message = (
            f"reuse rule of slot {rule.slot}: refresh on a memory change reads memory; "
            "declare the change a public event (memory_change_public, refresh_on) or drop it"
        )
        found.append(Violation.of("C4.reuse_reads_memory", message, None, rule.slot))
    return found


def _read_violations(interface: Interface, query: str, read: SlotRead, eq6: bool = True) -> list[Violation]:
    where = f"query {query}, slot {read.slot}"
    policy = interface.policy
    positions = tuple(sorted(read.positions))

    def at(code: str, message: str, attribute: str | None = None, at_positions: tuple[int, ...] = positions) -> Violation:
        return Violation.of(code, message, query, read.slot, attribute, at_positions)

    vocabulary = interface.vocabulary_or_none(read.slot)
    if vocabulary is None:
        return [at("C1.no_vocabulary", f"{where}: no fixed public vocabulary")]
    found = []
    unknown_views = sorted(set(read.relevance_map) - set(vocabulary.names))
    if unknown_views:
        message = f"{where}: relevance names views outside the vocabulary: {unknown_views}"
        found.append(at("C1.unknown_relevance_view", message))
    outside = sorted(p for p in read.positions if policy.layout.slot_of(p) != read.slot)
    if outside:
        message = f"{where}: read set includes positions of other slots {outside}"
        found.append(at("C4.read_outside_slot", message, at_positions=tuple(outside)))
    if read.charge is not None:
        unknown = sorted(read.charge - set(policy.attribute_names))
        if unknown:
            message = f"{where}: charge names unknown attributes {unknown}"
            found.append(at("C2.unknown_charge_attribute", message))
        for attribute in sorted(policy.gamma_star(read.positions) - read.charge):
            message = f"{where}, attribute {attribute}: read touches I_{attribute} but the declared charge set omits it"
            touched = tuple(p for p in positions if p in policy.attribute(attribute).group)
            found.append(at("C2.charge_omits_attribute", message, attribute, touched))
    if policy.gamma_star(read.positions):
        declared = interface.scorer.sensitivity(vocabulary)
        if declared <= 0:
            found.append(at("C3.nonpositive_sensitivity", f"{where}: sensitivity bound must be positive"))
        # Eq. (6): where the scorer's form gives the exact sup, a smaller declared bound is
        # refused rather than trusted.
        exact = interface.scorer.exact_sensitivity(vocabulary) if eq6 else None
        if exact is not None and declared < exact:
            message = f"{where}: declared sensitivity {declared} is below the scorer's bound {exact} (Eq. 6)"
            found.append(at("C3.sensitivity_below_bound", message))
    return found
