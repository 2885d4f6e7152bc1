"""Text and JSON renderings of evaluated constructions and of Table 4."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mpmath

from counterexamples import table4
from counterexamples.base import DIGITS
from counterexamples.runner import Finding, bound_text
from dpmem_ref.audit.witness_render import rows_json, rows_text
from dpmem_ref.schemas import envelope


def refused_by(finding: Finding) -> str:
    if finding.refusal is not None:
        return finding.refusal.describe()
    reason = finding.construction.unrefusable_because
    return f"not refused ({reason})" if reason else "not refused"


def _probability(value: mpmath.mpf | None) -> str | None:
    return None if value is None else mpmath.nstr(value, 30)


def finding_json(finding: Finding) -> dict[str, Any]:
    construction = finding.construction
    lower, upper = finding.interval
    with mpmath.workdps(DIGITS):
        closed = construction.closed_form()
        closed_text = "inf" if mpmath.isinf(closed) else mpmath.nstr(closed, 45)
    record: dict[str, Any] = {
        **envelope("counterexample"),
        "name": construction.name,
        "violates": construction.violates,
        "log_ratio": finding.log_ratio_text(),
        "bound": bound_text(construction.bound),
        "breaks_bound": finding.breaks_bound,
        "refused_by": refused_by(finding),
        "kind": construction.kind,
        "title": construction.title,
        "attribute": construction.attribute,
        "holds": list(finding.kept_conditions),
        "violated_by_checker": list(finding.violated_conditions),
        "closed_form": closed_text,
        "log_ratio_interval": None if finding.is_infinite else [mpmath.nstr(lower, 50), mpmath.nstr(upper, 50)],
        "event": construction.event,
        "probability_a": _probability(finding.probability_a),
        "probability_b": _probability(finding.probability_b),
        "horizon": construction.horizon,
        "engine": finding.engine.engine,
        "strict_engine_refusal": finding.engine.strict_engine_refusal,
        "states_explored": finding.engine.worst_case.states_explored,
        "direction": finding.engine.worst_case.direction,
        "witness": rows_json(finding.rows, construction.interface.control.reads_private),
    }
    if construction.notes:
        record["notes"] = construction.notes
    if construction.toml:
        record["toml"] = construction.toml
    if construction.extra is not None:
        record.update(construction.extra())
    return record


def finding_table(findings: list[Finding]) -> str:
    header = ("name", "violates", "holds", "log ratio", "bound", "breaks", "refused by")
    rows = [
        (
            f.construction.name,
            f.construction.violates,
            ",".join(f.kept_conditions),
            f.log_ratio_text(12),
            f"B_a = {bound_text(f.construction.bound)}",
            "yes" if f.breaks_bound else "no",
            refused_by(f),
        )
        for f in findings
    ]
    return _render(header, rows)


def witness_text(finding: Finding) -> str:
    """One construction's witness as `dpmem audit` prints it (the same records and table)."""
    worst_case = finding.engine.worst_case
    side = "a" if worst_case.direction == "a_over_b" else "b"
    numerator, denominator = ("M", "M'") if side == "a" else ("M'", "M")
    title = f"{finding.construction.name}: witness ({numerator} over {denominator}, T = {finding.construction.horizon})"
    return "\n".join([title, *rows_text(finding.rows, finding.construction.interface.control.reads_private, side)])


def table4_text(rows: list[table4.Row]) -> str:
    header: tuple[str, ...] = (
        "variant",
        "violated",
        "ledger reports",
        "reconstructed charge",
        "DP bound",
        "paper DP bound",
        "exact loss (trajectory)",
    )
    body: list[tuple[str, ...]] = []
    adaptive = any(row.adaptive is not None for row in rows)
    if adaptive:
        header = header + ("exact loss (adaptive, T=16)",)
    for row in rows:
        trace = row.trace
        line: tuple[str, ...] = (
            row.variant,
            row.violates,
            f"{float(trace.ledger_reports):.2f}",
            f"{float(trace.reconstructed):.2f}",
            "inf" if trace.dp_bound is None else f"{float(trace.dp_bound):.2f}",
            table4.PAPER_DP_BOUND[row.variant],
            _loss(row.trajectory.worst_case.worst),
        )
        if adaptive:
            line = line + (_loss(row.adaptive.worst_case.worst) if row.adaptive is not None else "-",)
        body.append(line)
    title = (
        "Table 4 (B_a = 2, K = 3, T = 16, 8 target-relevant turns): DP bound reconstructed from the kernel's "
        "charge trace (admitted selections touching I_debt, Gamma*), beside the paper's column and the exact loss"
    )
    return title + "\n" + _render(header, body)


def _loss(direction: Any) -> str:
    return "inf" if direction.is_infinite else mpmath.nstr(direction.midpoint, 12)


def _render(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)
