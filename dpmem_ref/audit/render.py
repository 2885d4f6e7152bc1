"""Text and JSON renderings of `check` and `audit` verdicts.

Numbers are printed as `dpmem_ref.audit.numbers` says (only proved digits of a loss,
exact fractions elsewhere); the witness is rendered from its records
(`dpmem_ref.audit.witness_render`, shared with `python -m counterexamples`). Every JSON
output opens with the envelope of `dpmem_ref.schemas` (`schema`, `schema_version`,
`tool`, `tool_version`) and validates against the shipped JSON Schema.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dpmem_ref.analysis.direction import LossDirection
from dpmem_ref.audit.numbers import (
    LOSS_DIGITS,
    bound_decimal,
    bound_text,
    interval_text,
    loss_text,
    replayed_text,
)
from dpmem_ref.audit.witness_render import rows_json, rows_text
from dpmem_ref.core.rational import fraction_text
from dpmem_ref.schemas import envelope

if TYPE_CHECKING:
    from dpmem_ref.audit.check import CheckReport
    from dpmem_ref.audit.verdict import AuditReport
    from dpmem_ref.config.load import InterfaceFile

__all__ = ["LOSS_DIGITS", "audit_json", "audit_text", "bound_decimal", "bound_text", "check_text", "interval_text"]

Z3_METHOD = {
    "proved": "exact argument and z3",
    "refuted": "exact argument and z3",
    "unproved": "exact argument; z3 ran out of time",
    "unavailable": "exact argument",
}


# ---------------------------------------------------------------- check


def check_text(loaded: InterfaceFile, report: CheckReport) -> str:
    name = loaded.path or loaded.interface.name
    count = len(report.violations)
    lines = [f"check {name}: " + ("ok, the contract C1-C6 holds" if report.ok else f"{count} violation(s)")]
    for violation in report.violations:
        lines.append(f"  {violation.condition}  {violation.message}")
    for proof in report.sensitivity:
        verdict = "holds" if proof.holds else "too small"
        lines.append(
            f"  sensitivity, slot {proof.slot}: declared {fraction_text(proof.declared)}, "
            f"true {fraction_text(proof.exact)}: {verdict} ({Z3_METHOD.get(proof.z3, proof.z3)})"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------- audit


def audit_json(report: AuditReport) -> dict[str, Any]:
    from dpmem_ref.audit.check import violation_json

    result = report.result
    worst = result.worst
    adjacency = report.adjacency
    final = dict(report.rows[-1].ledgers_after) if report.rows else {}
    return {
        **envelope("audit"),
        "file": report.file,
        "store_a": report.store_a,
        "store_b": report.store_b,
        "horizon": report.horizon,
        "adjacency": adjacency.kind,
        "differing_positions": list(adjacency.differing),
        "uncovered_positions": list(adjacency.uncovered),
        "attribute": adjacency.attribute,
        "cover": None if adjacency.cover is None else list(adjacency.cover),
        "bound": bound_text(adjacency.bound),
        "bound_decimal": bound_decimal(adjacency.bound),
        "covers": [
            {
                "attributes": list(c.attributes),
                "bound": bound_text(c.bound),
                "holds": c.holds,
                "certified": c.certified,
                "tightest": c.bound == adjacency.bound,
            }
            for c in report.covers
        ],
        "worst_case_loss": loss_text(worst.value),
        "interval": interval_text(worst.value),
        "direction": result.direction.value,
        "holds": report.holds,
        "certified": report.certified,
        "contract": "ok" if report.contract_ok else "violated",
        "verdict": report.verdict,
        "guarantee": report.guarantee,
        "exit_code": report.exit_code,
        **{
            d.value: {"loss": loss_text(result.along(d).value), "interval": interval_text(result.along(d).value)}
            for d in LossDirection
        },
        "witness": rows_json(report.rows, report.controls_private),
        "witness_replayed_loss": replayed_text(report.replayed_loss, worst.value),
        "pathwise_ledgers": {a: fraction_text(v) for a, v in final.items()},
        "contract_violations": [violation_json(v) for v in report.contract],
        "uncharged_epsilon": fraction_text(report.uncharged_epsilon),
        "states_explored": result.states_explored,
        "fixed_point": result.fixed_point,
        "enclosure_digits": report.dps,
        "seconds": round(result.seconds, 6),
    }


def _verdict(holds: bool | None, certified: bool | None) -> str:
    if holds is None:
        return "no guarantee applies (kappa = inf): nothing to hold"
    if holds:
        return "yes: the interval's upper end is <= the bound (certified)"
    if certified:
        return "NO: the loss exceeds the bound (certified)"
    return "not certified: the interval straddles the bound"


def _bound_row(adjacency_bound: Any) -> str:
    bound = bound_text(adjacency_bound)
    decimal = bound_decimal(adjacency_bound)
    if decimal == bound:
        return bound
    return f"{bound} (= {decimal[:22]}...)" if len(decimal) > 22 else f"{bound} (= {decimal})"


def audit_text(report: AuditReport) -> str:
    result = report.result
    adjacency = report.adjacency
    worst = result.worst
    a, b = report.store_a, report.store_b
    direction = result.direction
    numerator, denominator = direction.numerator(a, b), direction.denominator(a, b)
    other = result.along(direction.other)
    interval = interval_text(worst.value)
    rows = [
        ("stores", f"{a} vs {b}, horizon T = {report.horizon}"),
        ("differing positions", ", ".join(map(str, adjacency.differing)) or "none"),
        ("adjacency", adjacency.describe(a, b)),
        ("bound", _bound_row(adjacency.bound)),
        ("worst-case loss", f"{loss_text(worst.value)}  (log Pr[w | {numerator}] / Pr[w | {denominator}])"),
        ("interval", f"[{interval[0]}, {interval[1]}]"),
        ("other direction", loss_text(other.value)),
        ("holds", _verdict(report.holds, report.certified)),
        ("contract", "ok (C1-C6)" if report.contract_ok else f"VIOLATED ({len(report.contract)} violation(s), below)"),
        ("verdict", f"{report.verdict} (exit {report.exit_code}): {report.guarantee}"),
    ]
    for cover in report.covers:
        if cover.bound != adjacency.bound:
            rows.append(
                (
                    f"  vs {{{', '.join(cover.attributes)}}}",
                    f"bound {bound_text(cover.bound)}: {_verdict(cover.holds, cover.certified)}",
                )
            )
    stop = (
        f", value iteration stopped after {result.fixed_point} turns (the loss at T equals the loss at "
        f"T = {result.fixed_point}; nothing is claimed beyond T)"
        if result.fixed_point is not None
        else ""
    )
    rows.append(("states explored", f"{result.states_explored} in {result.seconds:.3f} s{stop}"))
    lines = [f"audit {report.file}"]
    lines += [f"  {label:<20} {value}" for label, value in rows]
    if report.contract:
        lines.append("  contract violations:")
        lines += [f"    {v.condition}  {v.message}" for v in report.contract]
    replayed = replayed_text(report.replayed_loss, worst.value)
    lines.append(f"  witness ({numerator} over {denominator}; replayed loss {replayed}):")
    lines += rows_text(report.rows, report.controls_private, numerator=direction)
    return "\n".join(lines)
