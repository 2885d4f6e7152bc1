"""Text and JSON renderings of `check` and `audit` verdicts.

Numbers: exact fractions where the value is rational (bounds, ledgers); interval ends as
the engine's exact endpoints, rounded outward to LOSS_DIGITS significant digits (the
lower end toward -inf, the upper toward +inf, signs kept), so the printed interval still
encloses the loss; an exact zero prints as 0.
"""

from __future__ import annotations

from collections.abc import Hashable
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import mpmath

from dpmem_ref.analysis.loss import Loss
from dpmem_ref.core.fmt import fraction_text, significant_text

if TYPE_CHECKING:
    from dpmem_ref.audit.check import CheckReport
    from dpmem_ref.audit.verdict import AuditReport
    from dpmem_ref.config import InterfaceFile

LOSS_DIGITS = 50  # significant digits of reported losses (the engine works at IV_DPS = 70)


def bound_text(bound: Fraction | None) -> str:
    """The bound exactly: an integer or a fraction ("4/3"), or "inf"."""
    return "inf" if bound is None else fraction_text(bound)


def bound_decimal(bound: Fraction | None) -> str:
    """The bound as a decimal (exact when it terminates, else LOSS_DIGITS digits rounded up)."""
    if bound is None:
        return "inf"
    text = significant_text(bound, LOSS_DIGITS, up=True)
    return text.rstrip("0").rstrip(".") if "." in text else text


def loss_text(value: Loss) -> str:
    if value.is_infinite:
        return "inf"
    if value.is_impossible:
        return "-inf"
    if value.is_zero:
        return "0"
    return str(mpmath.nstr(value.midpoint, LOSS_DIGITS, strip_zeros=False))


def interval_text(value: Loss) -> list[str]:
    if value.is_infinite:
        return ["inf", "inf"]
    if value.is_impossible:
        return ["-inf", "-inf"]
    lo, hi = value.ends()
    return [significant_text(lo, LOSS_DIGITS, up=False), significant_text(hi, LOSS_DIGITS, up=True)]


def replayed_text(value: mpmath.mpf | None) -> str:
    return "inf" if value is None else str(mpmath.nstr(value, LOSS_DIGITS))


# ---------------------------------------------------------------- check


def check_text(loaded: InterfaceFile, report: CheckReport) -> str:
    name = loaded.path or loaded.interface.name
    count = len(report.violations)
    lines = [f"check {name}: " + ("ok, the contract C1-C6 holds" if report.ok else f"{count} violation(s)")]
    for violation in report.violations:
        lines.append(f"  {violation.condition}  {violation.message}")
    method = {"proved": "exact argument and z3", "refuted": "exact argument and z3", "unavailable": "exact argument"}
    for proof in report.sensitivity:
        verdict = "holds" if proof.holds else "too small"
        lines.append(
            f"  sensitivity, slot {proof.slot}: declared {fraction_text(proof.declared)}, "
            f"true {fraction_text(proof.exact)}: {verdict} ({method[proof.z3]})"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------- audit


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
                "ledgers_after": {a: fraction_text(v) for a, v in ledgers.items()},
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
        "direction": result.direction,
        "holds": report.holds,
        "certified": report.certified,
        "a_over_b": {"loss": loss_text(result.a_over_b.value), "interval": interval_text(result.a_over_b.value)},
        "b_over_a": {"loss": loss_text(result.b_over_a.value), "interval": interval_text(result.b_over_a.value)},
        "witness": _witness_json(report),
        "witness_replayed_loss": replayed_text(report.replayed_loss),
        "pathwise_ledgers": {a: fraction_text(v) for a, v in final.items()},
        "contract_violations": [{"condition": v.condition, "code": v.code, "message": v.message} for v in report.contract],
        "uncharged_epsilon": fraction_text(report.uncharged_epsilon),
        "states_explored": result.states_explored,
        "fixed_point": result.fixed_point,
        "seconds": round(result.seconds, 6),
    }


def _verdict(holds: bool, certified: bool) -> str:
    if holds:
        return "yes: the interval's upper end is <= the bound (certified)"
    if certified:
        return "NO: the loss exceeds the bound (certified)"
    return "not certified: the interval straddles the bound"


def audit_text(report: AuditReport) -> str:
    result = report.result
    adjacency = report.adjacency
    worst = result.worst
    a, b = report.store_a, report.store_b
    numerator, denominator = (a, b) if result.direction == "a_over_b" else (b, a)
    other = result.b_over_a if result.direction == "a_over_b" else result.a_over_b
    interval = interval_text(worst.value)
    bound = bound_text(adjacency.bound)
    decimal = bound_decimal(adjacency.bound)
    rows = [
        ("stores", f"{a} vs {b}, horizon T = {report.horizon}"),
        ("differing positions", ", ".join(map(str, adjacency.differing)) or "none"),
        ("adjacency", adjacency.describe(a, b)),
        (
            "bound",
            bound
            if decimal == bound
            else f"{bound} (= {decimal[:22]}...)"
            if len(decimal) > 22
            else f"{bound} (= {decimal})",
        ),
        ("worst-case loss", f"{loss_text(worst.value)}  (log Pr[w | {numerator}] / Pr[w | {denominator}])"),
        ("interval", f"[{interval[0]}, {interval[1]}]"),
        ("other direction", loss_text(other.value)),
        ("holds", _verdict(report.holds, report.certified)),
    ]
    for cover in report.covers:
        if cover.bound != adjacency.bound:
            rows.append(
                (
                    f"  vs {{{', '.join(cover.attributes)}}}",
                    f"bound {bound_text(cover.bound)}: {_verdict(cover.holds, cover.certified)}",
                )
            )
    fixed = f", fixed point after {result.fixed_point} turns" if result.fixed_point is not None else ""
    rows.append(("states explored", f"{result.states_explored} in {result.seconds:.3f} s{fixed}"))
    lines = [f"audit {report.file}"]
    lines += [f"  {label:<20} {value}" for label, value in rows]
    if report.contract:
        lines.append("  contract violations:")
        lines += [f"    {v.condition}  {v.message}" for v in report.contract]
    replayed = replayed_text(report.replayed_loss)
    lines.append(f"  witness ({numerator} over {denominator}; replayed loss {replayed[:22]}):")
    lines.append(f"    {'turn':>7}  {'query':<24} {'views':<48} ledgers after")
    rows_out: list[tuple[int, int, str]] = []  # runs of identical turns with unchanged ledgers
    for index, turn in enumerate(worst.witness):
        views = ", ".join(f"{slot}={view}" for slot, view in turn.views) or "-"
        ledgers = report.witness_ledgers[index] if index < len(report.witness_ledgers) else ()
        ledger_text = " ".join(f"{name}={fraction_text(value)}" for name, value in ledgers)
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
