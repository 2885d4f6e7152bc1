"""The rows of `dpmem audit` an auditor signs off on: the bound (exact, with its decimal cut at
22 characters), the verdict when the loss sits exactly on the bound, the verdict against
every other adjacent attribute's bound, and the JSON's rounded timing and empty witness."""

from __future__ import annotations

from typing import Any

import attrs

from dpmem_ref.audit.render import audit_json, audit_text
from dpmem_ref.audit.verdict import AuditReport, audit
from dpmem_ref.config.load import interface_from_dict


def _one_position(cap_a: str, cap_b: str, selector: str = "em", sensitivity: str = "3/5") -> dict[str, Any]:
    """One position guarded by a and b; store A holds the tag of view v1, store B that of v2.
    Under the linear scorer the two stores' scores are v1 and v2 swapped (g is untagged), so
    releasing v1 has exactly the log ratio eps * (3/5) / (2 * sensitivity): exactly eps when
    the declared sensitivity is 3/10, half the true 3/5."""
    return {
        "positions": ["s"],
        "attributes": {"a": {"group": [1], "cap": cap_a}, "b": {"group": [1], "cap": cap_b}},
        "budget": {"rule": "online", "K": 2},
        "scorer": {"kind": "linear", "weights": {"r": "2/5", "c": "2/5", "s": "1/5"}, "sensitivity": sensitivity},
        "slots": {
            "s": {
                "generic": "g",
                "views": {
                    "g": {},
                    "v1": {"compatible": ["t1"], "specific": ["t1"]},
                    "v2": {"compatible": ["t2"], "specific": ["t2"]},
                },
            }
        },
        "queries": [{"name": "q", "reads": [{"slot": "s", "positions": [1]}]}],
        "stores": {"A": {"1": {"tags": ["t1"]}}, "B": {"1": {"tags": ["t2"]}}},
        "deployment": {"selector": selector},
    }


def _audit(data: dict[str, Any]) -> AuditReport:
    return audit(interface_from_dict(data, path="one-position.toml"), "A", "B", 3)


def _rows(report: AuditReport) -> dict[str, str]:
    """The labelled rows of the text, by label (the witness table left out)."""
    rows = {}
    for line in audit_text(report).splitlines()[1:]:
        if line.startswith("  contract violations") or line.startswith("  witness"):
            break
        rows[line[:23].strip()] = line[23:]
    return rows


def test_loss_exactly_at_the_bound_is_not_certified() -> None:
    """Two releases of v1 at eps = 5/4 spend B_a = 5/2 with a loss of exactly 5/2: the interval
    straddles the bound, so the audit certifies neither way (exit 1); b's larger bound holds."""
    report = _audit(_one_position("5/2", "4", sensitivity="3/10"))
    rows = _rows(report)
    assert rows["bound"] == "5/2 (= 2.5)"
    assert rows["worst-case loss"] == "2.5000000000000000000000000000000000000000000000000  (log Pr[w | A] / Pr[w | B])"
    assert rows["interval"] == (
        "[2.4999999999999999999999999999999999999999999999999, 2.5000000000000000000000000000000000000000000000001]"
    )
    assert rows["holds"] == "not certified: the interval straddles the bound"
    assert rows["verdict"] == (
        "not certified (exit 1): the bound is not guaranteed beyond the audited horizon T = 3 (contract violated)"
    )
    assert rows["vs {b}"] == "bound 4: yes: the interval's upper end is <= the bound (certified)"


def test_broken_selector_fails_every_adjacent_bound() -> None:
    """An argmax selector makes the loss infinite: NO against B_a and against B_b, the other
    attribute the pair is adjacent for; a bound whose decimal runs past 22 characters is cut
    there."""
    bound = "308641972530864197253/250000000000000000000"  # 1.234567890123456789012: 23 characters
    rows = _rows(_audit(_one_position(bound, "3", selector="argmax")))
    assert rows["bound"] == f"{bound} (= 1.23456789012345678901...)"
    assert rows["holds"] == "NO: the loss exceeds the bound (certified)"
    assert rows["vs {b}"] == "bound 3: NO: the loss exceeds the bound (certified)"


def test_bound_decimal_of_22_characters_is_printed_whole() -> None:
    bound = "123456789012345678901/100000000000000000000"  # 1.23456789012345678901: 22 characters
    rows = _rows(_audit(_one_position(bound, "3", selector="argmax")))
    assert rows["bound"] == f"{bound} (= 1.23456789012345678901)"


def test_json_seconds_are_rounded_to_microseconds_and_a_report_without_rows_has_no_ledgers() -> None:
    report = _audit(_one_position("5/2", "4", sensitivity="3/10"))
    assert audit_json(report)["pathwise_ledgers"] == {"a": "5/2", "b": "5/2"}
    timed = attrs.evolve(report, result=attrs.evolve(report.result, seconds=0.123456789), rows=())
    rendered = audit_json(timed)
    assert rendered["seconds"] == 0.123457 and isinstance(rendered["seconds"], float)
    assert rendered["witness"] == [] and rendered["pathwise_ledgers"] == {}
