"""`dpmem check` and `dpmem audit`: the auditor's commands (DESIGN.md, "Command line").

check: the static interface contract (Definition 1, C1-C6) of a described deployment,
with the declared sensitivity bound of the linear scorer proved by the exact argument
and by z3 (Eq. 6, Appendix C.5).

audit: for two named stores, decide their adjacency (one attribute a with D within I_a,
bound B_a, Theorem 1; or the cheapest cover kappa of Eq. 8, Corollary 1; or "not
coverable"), then compute exactly the worst-case privacy loss of the augmented transcript
over every adaptive query strategy of length T, both directions, with the witness
transcript, its pathwise ledgers L_a(omega) (proof of Theorem 1) and an interval
certificate for `holds`. The deployment is audited as declared (strict=False), so a broken
file shows how far its guarantee breaks.

Exit codes: 0 ok / holds, 1 violations / bound broken, 2 malformed input.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Hashable
from fractions import Fraction
from typing import Any

import attrs
import mpmath

from dpmem_ref.analysis import IV_DPS, Direction, WorstCase, replay_transcript, worst_case_loss
from dpmem_ref.config import InterfaceFile, load_interface_file
from dpmem_ref.cover import minimum_cover
from dpmem_ref.interface import Interface, Violation
from dpmem_ref.policy import adjacent_attributes, differing_positions
from dpmem_ref.scoring import LinearTagScorer
from dpmem_ref.sensitivity import SensitivityProof, prove_linear_sensitivity, z3_deadline

EXIT_OK, EXIT_VIOLATION, EXIT_BAD_INPUT = 0, 1, 2
LOSS_DIGITS = 50  # significant digits of reported losses (the engine works at IV_DPS = 70)


# ---------------------------------------------------------------- check


@attrs.frozen
class CheckReport:
    """The static verdict: every violation (condition, message) and the sensitivity proofs."""

    violations: tuple[Violation, ...]
    sensitivity: tuple[SensitivityProof, ...]

    @property
    def ok(self) -> bool:
        return not self.violations

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "violations": [{"condition": v.condition, "message": v.message} for v in self.violations],
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
            violations.append(
                Violation(
                    "C3",
                    f"{_where(slot, reads)}: declared sensitivity {_fraction(proof.declared)} is below "
                    f"the true bound {_fraction(proof.exact)} (Eq. 6); counterexample for view {example.view}: a "
                    f"read position in I_a holding tags [{', '.join(example.tags_in_m)}] under M and "
                    f"[{', '.join(example.tags_in_m_prime)}] under M' moves its score by {_fraction(example.gap)}",
                )
            )
    return violations, proofs


def _global_scope(interface: Interface) -> str:
    slots = sorted(charged_reads(interface))
    return f" (every charged selection: slots {', '.join(slots)})" if slots else ""


def check_interface(interface: Interface, use_z3: bool = True) -> CheckReport:
    """Definition 1 on the declared parts (`Interface.contract_violations`) plus Eq. (6)."""
    scope = _global_scope(interface)
    violations = []
    found, proofs = sensitivity_violations(interface, use_z3=use_z3)
    for violation in interface.contract_violations():
        if proofs and "is below the scorer's bound" in violation.message:
            continue  # the kernel's Eq. 6 finding; reported below with its counterexample pair
        global_part = violation.message.startswith(("selector ", "cap rule ", "observable control "))
        violations.append(Violation(violation.condition, violation.message + (scope if global_part else "")))
    violations.extend(found)
    order = {c: i for i, c in enumerate(("C1", "C2", "C3", "C4", "C5", "C6"))}
    violations.sort(key=lambda v: order.get(v.condition, 99))
    return CheckReport(violations=tuple(violations), sensitivity=tuple(proofs))


def command_check(args: argparse.Namespace) -> int:
    loaded = load_interface_file(args.file)
    report = check_interface(loaded.interface)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        print(_check_text(loaded, report))
    return EXIT_OK if report.ok else EXIT_VIOLATION


def _check_text(loaded: InterfaceFile, report: CheckReport) -> str:
    name = loaded.path or loaded.interface.name
    count = len(report.violations)
    lines = [f"check {name}: " + ("ok, the contract C1-C6 holds" if report.ok else f"{count} violation(s)")]
    for violation in report.violations:
        lines.append(f"  {violation.condition}  {violation.message}")
    for proof in report.sensitivity:
        method = {
            "proved": "exact argument and z3",
            "refuted": "exact argument and z3",
            "unavailable": "exact argument",
            "unproved": "exact argument; z3 cross-check unproved within its time budget",
        }
        verdict = "holds" if proof.holds else "too small"
        lines.append(
            f"  sensitivity, slot {proof.slot}: declared {_fraction(proof.declared)}, "
            f"true {_fraction(proof.exact)}: {verdict} ({method[proof.z3]})"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------- audit


@attrs.frozen
class Adjacency:
    """How two stores relate (Theorem 1 / Corollary 1) and the bound that follows."""

    kind: str  # "identical" | "attribute" | "cover" | "not coverable"
    differing: tuple[int, ...]
    attribute: str | None
    cover: tuple[str, ...] | None
    bound: Fraction | None  # None = no finite bound (kappa = inf)
    also_adjacent: tuple[str, ...] = ()

    def describe(self, name_a: str, name_b: str) -> str:
        if self.kind == "identical":
            return f"{name_a} and {name_b} are identical: bound 0"
        if self.kind == "attribute":
            also = f" (also adjacent for {', '.join(self.also_adjacent)})" if self.also_adjacent else ""
            return f"{name_a} ~_{self.attribute} {name_b}: D lies in I_{self.attribute}, bound B_{self.attribute}{also}"
        if self.kind == "cover":
            assert self.cover is not None
            return (
                f"{name_a} and {name_b} differ across several groups: cheapest cover {{{', '.join(self.cover)}}}, "
                f"bound kappa = {' + '.join('B_' + a for a in self.cover)} (Eq. 8)"
            )
        return (
            f"{name_a} and {name_b} differ outside every protected group: not coverable, "
            "kappa = inf (Eq. 8), no DP guarantee is claimed for this pair"
        )


def decide_adjacency(loaded: InterfaceFile, name_a: str, name_b: str) -> Adjacency:
    """Single attribute if D lies in some I_a (the smallest B_a if several), else the
    minimum-cost cover kappa (Eq. 8), else not coverable."""
    policy = loaded.interface.policy
    store_a, store_b = loaded.store(name_a), loaded.store(name_b)
    differing = differing_positions(store_a, store_b)
    positions = tuple(sorted(differing))
    if not differing:
        return Adjacency("identical", positions, None, None, Fraction(0))
    candidates = adjacent_attributes(policy, store_a, store_b)
    if candidates:
        caps = policy.caps
        best = min(candidates, key=lambda a: (caps[a], candidates.index(a)))
        also = tuple(a for a in candidates if a != best)
        return Adjacency("attribute", positions, best, None, caps[best], also)
    cover = minimum_cover(policy, differing)
    if cover is None:
        return Adjacency("not coverable", positions, None, None, None)
    return Adjacency("cover", positions, None, cover.attributes, cover.cost)


@attrs.frozen
class AuditReport:
    file: str
    store_a: str
    store_b: str
    horizon: int
    adjacency: Adjacency
    result: WorstCase
    holds: bool
    certified: bool
    witness_ledgers: tuple[tuple[tuple[str, Fraction], ...], ...]
    replayed_loss: str
    controls_private: bool
    contract: tuple[Violation, ...]
    attribute_names: tuple[str, ...]


def audit(loaded: InterfaceFile, name_a: str, name_b: str, horizon: int) -> AuditReport:
    """Adjacency, exact worst case over adaptive strategies, certificate, witness replay."""
    interface = loaded.interface
    adjacency = decide_adjacency(loaded, name_a, name_b)
    store_a, store_b = loaded.store(name_a), loaded.store(name_b)
    result = worst_case_loss(interface, store_a, store_b, horizon, strict=False)
    holds, certified = certify(result, adjacency.bound)
    worst = result.worst
    names = interface.policy.attribute_names
    # The witness replayed under its own numerator store: pathwise ledgers L_a(omega) and
    # an independent evaluation of its log ratio from the same plans.
    numerator, denominator = (store_a, store_b) if result.direction == "a_over_b" else (store_b, store_a)
    side = "a" if result.direction == "a_over_b" else "b"
    other = "b" if side == "a" else "a"
    replay_num = replay_transcript(interface, numerator, worst.witness, control_side=side, strict=False)
    replay_den = replay_transcript(interface, denominator, worst.witness, control_side=other, strict=False)
    with mpmath.workdps(IV_DPS):
        if replay_den.log_probability == mpmath.mpf("-inf"):
            replayed = "inf"
        else:
            replayed = str(mpmath.nstr(replay_num.log_probability - replay_den.log_probability, LOSS_DIGITS))
    ledgers = tuple(tuple(zip(names, turn, strict=True)) for turn in replay_num.turn_ledgers)
    return AuditReport(
        file=loaded.path or interface.name,
        store_a=name_a,
        store_b=name_b,
        horizon=horizon,
        adjacency=adjacency,
        result=result,
        holds=holds,
        certified=certified,
        witness_ledgers=ledgers,
        replayed_loss=replayed,
        controls_private=interface.control.reads_private,
        contract=check_interface(interface, use_z3=False).violations,
        attribute_names=names,
    )


def certify(result: WorstCase, bound: Fraction | None) -> tuple[bool, bool]:
    """(holds, certified). holds: the interval's upper end is <= the bound (a proof);
    certified: the interval decides the comparison either way (lower end > bound proves
    it broken). With no finite bound (kappa = inf) every loss is within it."""
    worst = result.worst
    if bound is None:
        return True, True
    if worst.is_infinite:
        return False, True
    holds = result.holds(bound)
    if holds:
        return True, True
    with mpmath.workdps(IV_DPS):
        broken = worst.lower > mpmath.mpf(bound.numerator) / bound.denominator
    return False, bool(broken)


def command_audit(args: argparse.Namespace) -> int:
    loaded = load_interface_file(args.file)
    report = audit(loaded, args.store_a, args.store_b, args.horizon)
    if args.json:
        print(json.dumps(audit_json(report), indent=2))
    else:
        print(audit_text(report))
    return EXIT_OK if report.holds else EXIT_VIOLATION


# ---------------------------------------------------------------- rendering


def _fraction(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def _bound_text(bound: Fraction | None) -> str:
    """The bound as a decimal string (exact when it terminates), or "inf"."""
    if bound is None:
        return "inf"
    text = _directed_decimal(bound, LOSS_DIGITS, up=True)
    return text.rstrip("0").rstrip(".") if "." in text else text


def _mpf_fraction(value: mpmath.mpf) -> Fraction:
    man, exp = value.man_exp
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def _directed_decimal(value: Fraction, digits: int, up: bool) -> str:
    """`value` to `digits` significant digits, rounded toward +inf (up) or -inf: printed
    interval ends still enclose the true value."""
    if value == 0:
        return "0"
    magnitude = abs(value)
    exponent = len(str(magnitude.numerator // magnitude.denominator)) - 1 if magnitude >= 1 else 0
    if magnitude < 1:
        exponent = -1
        while magnitude * Fraction(10) ** (-exponent) < 1:
            exponent -= 1
    scale = Fraction(10) ** (digits - 1 - exponent)
    scaled = value * scale
    integer = -((-scaled.numerator) // scaled.denominator) if up else scaled.numerator // scaled.denominator
    sign = "-" if integer < 0 else ""
    text = str(abs(integer))
    point = len(text) - (digits - 1 - exponent)
    if point <= 0:
        text = "0." + "0" * (-point) + text
    elif point < len(text):
        text = text[:point] + "." + text[point:]
    else:
        text = text + "0" * (point - len(text))
    return sign + text


def _loss_text(direction: Direction) -> str:
    if direction.is_infinite:
        return "inf"
    if direction.value is None:
        return "-inf"
    with mpmath.workdps(IV_DPS):
        return str(mpmath.nstr(direction.midpoint, LOSS_DIGITS, strip_zeros=False))


def _interval(direction: Direction) -> list[str]:
    if direction.is_infinite:
        return ["inf", "inf"]
    if direction.value is None:
        return ["-inf", "-inf"]
    return [
        _directed_decimal(_mpf_fraction(direction.lower), LOSS_DIGITS, up=False),
        _directed_decimal(_mpf_fraction(direction.upper), LOSS_DIGITS, up=True),
    ]


def _control(value: Hashable, private: bool) -> Any:
    if private:
        # A broken control derived from raw memory or scores: its value stays withheld.
        return "<withheld: derived from raw memory or scores>"
    return None if value is None else repr(value)


def _witness_json(report: AuditReport) -> list[dict[str, Any]]:
    turns = []
    for index, turn in enumerate(report.result.worst.witness):
        ledgers = dict(report.witness_ledgers[index]) if index < len(report.witness_ledgers) else {}
        turns.append(
            {
                "turn": index + 1,
                "query": turn.query,
                "views": [{"slot": slot, "view": view} for slot, view in turn.views],
                "control": _control(turn.control_a, report.controls_private),
                "controls_differ": turn.control_a != turn.control_b,
                "note": turn.note,
                "ledgers_after": {a: _fraction(v) for a, v in ledgers.items()},
            }
        )
    return turns


def audit_json(report: AuditReport) -> dict[str, Any]:
    result = report.result
    worst = result.worst
    adjacency = report.adjacency
    final = dict(report.witness_ledgers[-1]) if report.witness_ledgers else {}
    return {
        "file": report.file,
        "store_a": report.store_a,
        "store_b": report.store_b,
        "horizon": report.horizon,
        "adjacency": adjacency.kind,
        "differing_positions": list(adjacency.differing),
        "attribute": adjacency.attribute,
        "cover": None if adjacency.cover is None else list(adjacency.cover),
        "bound": _bound_text(adjacency.bound),
        "worst_case_loss": _loss_text(worst),
        "interval": _interval(worst),
        "direction": result.direction,
        "holds": report.holds,
        "certified": report.certified,
        "a_over_b": {"loss": _loss_text(result.a_over_b), "interval": _interval(result.a_over_b)},
        "b_over_a": {"loss": _loss_text(result.b_over_a), "interval": _interval(result.b_over_a)},
        "witness": _witness_json(report),
        "witness_replayed_loss": report.replayed_loss,
        "pathwise_ledgers": {a: _fraction(v) for a, v in final.items()},
        "contract_violations": [{"condition": v.condition, "message": v.message} for v in report.contract],
        "states_explored": result.states_explored,
        "seconds": round(result.seconds, 6),
    }


def audit_text(report: AuditReport) -> str:
    result = report.result
    adjacency = report.adjacency
    worst = result.worst
    a, b = report.store_a, report.store_b
    numerator, denominator = (a, b) if result.direction == "a_over_b" else (b, a)
    other = result.b_over_a if result.direction == "a_over_b" else result.a_over_b
    interval = _interval(worst)
    if report.holds:
        verdict = "yes: the interval's upper end is <= the bound (certified)"
    elif report.certified:
        verdict = "NO: the loss exceeds the bound (certified)"
    else:
        verdict = "not certified: the interval straddles the bound"
    rows = [
        ("stores", f"{a} vs {b}, horizon T = {report.horizon}"),
        ("differing positions", ", ".join(map(str, adjacency.differing)) or "none"),
        ("adjacency", adjacency.describe(a, b)),
        ("bound", _bound_text(adjacency.bound)),
        ("worst-case loss", f"{_loss_text(worst)}  (log Pr[w | {numerator}] / Pr[w | {denominator}])"),
        ("interval", f"[{interval[0]}, {interval[1]}]"),
        ("other direction", _loss_text(other)),
        ("holds", verdict),
        ("states explored", f"{result.states_explored} in {result.seconds:.3f} s"),
    ]
    lines = [f"audit {report.file}"]
    lines += [f"  {label:<20} {value}" for label, value in rows]
    if report.contract:
        lines.append("  contract violations:")
        lines += [f"    {v.condition}  {v.message}" for v in report.contract]
    lines.append(f"  witness ({numerator} over {denominator}; replayed loss {report.replayed_loss[:22]}):")
    lines.append(f"    {'turn':>7}  {'query':<24} {'views':<48} ledgers after")
    rows_out: list[tuple[int, int, str]] = []  # runs of identical turns with unchanged ledgers
    for index, turn in enumerate(worst.witness):
        views = ", ".join(f"{slot}={view}" for slot, view in turn.views) or "-"
        ledgers = report.witness_ledgers[index] if index < len(report.witness_ledgers) else ()
        ledger_text = " ".join(f"{name}={_fraction(value)}" for name, value in ledgers)
        note = f"  [{turn.note}]" if turn.note else ""
        row = f"{turn.query:<24} {views:<48} {ledger_text}{note}"
        if rows_out and rows_out[-1][2] == row:
            rows_out[-1] = (rows_out[-1][0], index + 1, row)
        else:
            rows_out.append((index + 1, index + 1, row))
    for first, last, row in rows_out:
        label = str(first) if first == last else f"{first}-{last}"
        lines.append(f"    {label:>7}  {row}")
    return "\n".join(lines)


# ---------------------------------------------------------------- argparse


def add_auditor_parsers(sub: Any) -> None:
    """Register `check` and `audit` on the `dpmem` sub-command parser."""
    check = sub.add_parser(
        "check",
        help="static contract check (C1-C6) with the sensitivity bound proved",
        description="Exit 0 if the contract holds, 1 with every violation named, 2 for a malformed file.",
    )
    check.add_argument("file", help="interface description (TOML)")
    check.add_argument("--json", action="store_true", help='machine-readable: {"ok": ..., "violations": [...]}')
    check.set_defaults(handler=command_check)
    audit_parser = sub.add_parser(
        "audit",
        help="exact worst-case privacy loss over all adaptive strategies for two stores",
        description="Exit 0 if the loss is certified within the bound, 1 if not, 2 for malformed input.",
    )
    audit_parser.add_argument("file", help="interface description (TOML)")
    audit_parser.add_argument("--store-a", required=True, help="name of the first store (M)")
    audit_parser.add_argument("--store-b", required=True, help="name of the second store (M')")
    audit_parser.add_argument("--horizon", required=True, type=int, help="number of turns T")
    audit_parser.add_argument("--json", action="store_true", help="machine-readable output")
    audit_parser.set_defaults(handler=command_audit)
