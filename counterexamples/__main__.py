"""`python -m counterexamples [--json] [--only NAME ...]` and `python -m counterexamples table4`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from counterexamples import registry, table4
from counterexamples.report import finding_json, finding_table, table4_text, witness_text
from counterexamples.runner import evaluate


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m counterexamples",
        description="Proposition 1 (Appendix B.5), the Table 4 ablations and a mutant zoo, "
        "each evaluated by the kernel's exact engine.",
        epilog="examples:\n  python -m counterexamples\n  python -m counterexamples --json\n"
        "  python -m counterexamples table4 [--adaptive]",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("command", nargs="?", choices=["list", "table4"], default="list")
    parser.add_argument("--json", action="store_true", help="a JSON list (or object for table4)")
    parser.add_argument("--only", action="append", metavar="NAME", help=f"one of {', '.join(registry.names())}")
    parser.add_argument(
        "--witness", action="store_true", help="after the table, each construction's witness (as `dpmem audit` shows it)"
    )
    parser.add_argument(
        "--adaptive", action="store_true", help="table4: add the worst case over all adaptive strategies (slow, ~45 s)"
    )
    args = parser.parse_args(argv)
    if args.command == "table4":
        rows = table4.rows(adaptive=args.adaptive)
        if args.json:
            print(json.dumps([_row_json(row) for row in rows], indent=2))
        else:
            print(table4_text(rows))
        return 0
    names = args.only or list(registry.names())
    unknown = [n for n in names if n not in registry.BUILDERS]
    if unknown:
        parser.error(f"unknown construction {unknown[0]!r}; expected one of {', '.join(registry.names())}")
    findings = [evaluate(registry.build(name)) for name in names]
    if args.json:
        print(json.dumps([finding_json(f) for f in findings], indent=2))
    else:
        print(finding_table(findings))
        if args.witness:
            for finding in findings:
                print()
                print(witness_text(finding))
    return 0


def _row_json(row: table4.Row) -> dict[str, object]:
    from counterexamples.report import _loss
    from dpmem_ref.schemas import envelope

    trace = row.trace
    return {
        **envelope("table4"),
        "variant": row.variant,
        "violates": row.violates,
        "ledger_reports": str(trace.ledger_reports),
        "reconstructed_charge": str(trace.reconstructed),
        "dp_bound": "inf" if trace.dp_bound is None else f"{float(trace.dp_bound):.2f}",
        "paper_dp_bound": table4.PAPER_DP_BOUND[row.variant],
        "exact_loss_trajectory": _loss(row.trajectory.worst_case.worst),
        "exact_loss_adaptive": None if row.adaptive is None else _loss(row.adaptive.worst_case.worst),
    }


if __name__ == "__main__":
    sys.exit(main())
