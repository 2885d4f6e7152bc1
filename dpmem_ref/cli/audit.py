"""`dpmem check` and `dpmem audit`: the auditor's commands (the engine: `dpmem_ref.audit`).

Exit codes (dpmem_ref.core.exits): see `dpmem_ref.audit`.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from dpmem_ref.core.exits import EXIT_OK, EXIT_VIOLATION
from dpmem_ref.core.limits import DEFAULT_MAX_STATES

# The commands import the auditor when they run: `dpmem --help` loads none of it.


def command_check(args: argparse.Namespace) -> int:
    from dpmem_ref.audit.check import check_interface
    from dpmem_ref.audit.render import check_text
    from dpmem_ref.config.load import load_interface_file

    loaded = load_interface_file(args.file)
    report = check_interface(loaded.interface)
    print(json.dumps(report.to_json(), indent=2) if args.json else check_text(loaded, report))
    return EXIT_OK if report.ok else EXIT_VIOLATION


def command_audit(args: argparse.Namespace) -> int:
    from dpmem_ref.audit.render import audit_json, audit_text
    from dpmem_ref.audit.verdict import audit
    from dpmem_ref.config.load import load_interface_file
    from dpmem_ref.parts.period import require_periods

    periods = None if args.periods is None else require_periods(args.periods)
    loaded = load_interface_file(args.file)
    report = audit(loaded, args.store_a, args.store_b, args.horizon, max_states=args.max_states)
    composed = None if periods is None else _composed(loaded.interface.period, report.adjacency.bound, periods)
    if args.json:
        data = audit_json(report)
        if periods is not None:
            data["periods"] = None if composed is None else composed.to_json()
        print(json.dumps(data, indent=2))
    else:
        text = audit_text(report)
        if periods is not None:  # after the verdict rows: the composed guarantee over k periods
            line = "no finite bound to compose" if composed is None else composed.line("kappa")
            text = _after_verdict(text, f"  {'periods':<20} {line}")
        print(text)
    return report.exit_code


def _composed(period: Any, bound: Any, periods: int) -> Any:
    """k x kappa (docs/reuse.md, "Budget periods"); None when kappa is infinite."""
    from dpmem_ref.parts.period import ComposedGuarantee

    return None if bound is None else ComposedGuarantee(periods, period, bound)


def _after_verdict(text: str, row: str) -> str:
    lines = text.splitlines()
    at = next((i + 1 for i, line in enumerate(lines) if line.lstrip().startswith("verdict ")), len(lines))
    return "\n".join(lines[:at] + [row] + lines[at:])


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
        description="Exit 0 if the loss is certified within the bound and the contract holds; 1 if the bound is "
        "broken or not certified, or a contract violation leaves it unguaranteed beyond T; 2 for malformed input; "
        "3 when no guarantee applies (the stores differ outside every protected group).",
    )
    audit_parser.add_argument("file", help="interface description (TOML)")
    audit_parser.add_argument("--store-a", required=True, help="name of the first store (M)")
    audit_parser.add_argument("--store-b", required=True, help="name of the second store (M')")
    audit_parser.add_argument("--horizon", required=True, type=int, help="number of turns T")
    audit_parser.add_argument(
        "--max-states",
        type=int,
        default=DEFAULT_MAX_STATES,
        help=f"stop with exit 2 past this many memoized states (default {DEFAULT_MAX_STATES})",
    )
    audit_parser.add_argument(
        "--periods",
        type=int,
        default=None,
        help="also print the guarantee composed over K budget periods: K x the bound (basic composition)",
    )
    audit_parser.add_argument("--json", action="store_true", help="machine-readable output")
    audit_parser.set_defaults(handler=command_audit)
