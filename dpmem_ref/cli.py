"""`dpmem`: run, check and audit DP-MemView interfaces described in TOML files.

Exit codes: 0 ok, 1 contract violations / bound broken, 2 bad input (one-line message,
no traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, NoReturn

from dpmem_ref.config import load_interface_file
from dpmem_ref.errors import ContractViolation, InputError
from dpmem_ref.ledger.cli import add_ledger_commands, add_store_url_arguments, durable_turns
from dpmem_ref.randomness import RandomSource, SeededRandomSource, SystemRandomSource
from dpmem_ref.turn import InterfaceState, TemplateChannel, run_turn

EXIT_OK, EXIT_VIOLATION, EXIT_BAD_INPUT = 0, 1, 2
MAX_QUERY_LINES = 100_000


def fraction_text(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def read_queries(path: str) -> list[str]:
    """One query name per line; blank lines and lines starting with '#' are skipped."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise InputError("--queries", "a readable file of query names", f"{path} ({error.strerror})") from None
    except UnicodeDecodeError:
        raise InputError("--queries", "UTF-8 text", path) from None
    names = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not names:
        raise InputError("--queries", "at least one query name", "an empty file")
    if len(names) > MAX_QUERY_LINES:
        raise InputError("--queries", f"at most {MAX_QUERY_LINES} queries", len(names))
    return names


def command_run(args: argparse.Namespace) -> int:
    loaded = load_interface_file(args.file)
    interface = loaded.interface
    store = loaded.store(args.store)
    names = read_queries(args.queries)
    for name in names:
        interface.query(name)  # validate every name before the first release
    source: RandomSource = SystemRandomSource() if args.seed is None else SeededRandomSource(args.seed)
    channel = TemplateChannel()
    state = InterfaceState.initial(interface)
    turns: list[dict[str, Any]] = []
    durable = durable_turns(args, interface, store, source, channel)  # --store-url: a DurableSession
    for name in names:
        result = (
            durable(name)
            if durable is not None
            else run_turn(interface, state, name, store, source, channel=channel, strict=not args.unsafe)
        )
        state = result.state
        ledgers = {a: fraction_text(v) for a, v in state.ledger_map(interface).items()}
        slots = [
            {
                "slot": plan.slot,
                "view": view,
                "status": "released" if plan.admitted else "fallback",
                "charged": sorted(plan.charge_set) if plan.admitted else [],
                "epsilon": fraction_text(plan.epsilon) if plan.admitted else "0",
            }
            for plan, (_, view) in zip(result.plans, result.record.views, strict=True)
        ]
        turns.append(
            {
                "turn": state.turn,
                "query": name,
                "slots": slots,
                "control": repr(result.record.control),
                "response": result.record.response,
                "ledgers": ledgers,
            }
        )
        if not args.json:
            print(f"turn {state.turn:>3}  {name}")
            for slot in slots:
                charge = (
                    f"charged {slot['epsilon']} to {', '.join(slot['charged'])}"
                    if slot["charged"]
                    else ("fallback, cost 0" if slot["status"] == "fallback" else "uncharged")
                )
                print(f"      {slot['slot']:<10} -> {slot['view']:<24} {charge}")
            ledger_text = ", ".join(f"{a} {v} of {fraction_text(interface.caps[a])}" for a, v in ledgers.items())
            print(f"      ledgers: {ledger_text}")
    if args.json:
        caps = {a: fraction_text(c) for a, c in interface.caps.items()}
        print(json.dumps({"interface": interface.name, "store": args.store, "caps": caps, "turns": turns}, indent=2))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dpmem",
        description="DP-MemView reference kernel: run, check and audit interface descriptions.",
        epilog="examples:\n  dpmem run examples/figure2.toml --store M --queries examples/figure2-queries.txt --seed 0",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the interface turn by turn (Algorithm 1)")
    run.add_argument("file", help="interface description (TOML)")
    run.add_argument("--store", required=True, help="name of a store in the file")
    run.add_argument("--queries", required=True, help="file with one query name per line")
    run.add_argument("--seed", type=int, default=None, help="seed for reproducible EM draws (default: OS entropy)")
    run.add_argument("--json", action="store_true", help="machine-readable output")
    run.add_argument("--unsafe", action="store_true", help="run a contract-breaking file anyway (for demonstrations)")
    add_store_url_arguments(run)
    run.set_defaults(handler=command_run)
    _add_auditor_commands(sub)
    add_ledger_commands(sub)
    return parser


def _add_auditor_commands(sub: Any) -> None:
    """`check` and `audit` live in dpmem_ref.audit when present."""
    try:
        from dpmem_ref.audit import add_auditor_parsers  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return
    add_auditor_parsers(sub)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()

    def usage_error(message: str) -> NoReturn:
        print(f"dpmem: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)

    parser.error = usage_error  # type: ignore[method-assign]  # exit 2 with a one-line message
    for action in parser._subparsers._group_actions if parser._subparsers else []:  # noqa: SLF001
        for subparser in getattr(action, "choices", {}).values():
            subparser.error = usage_error
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except InputError as error:
        print(f"dpmem: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ContractViolation as error:
        print(f"dpmem: contract violation: {error}", file=sys.stderr)
        return EXIT_VIOLATION
    except BrokenPipeError:  # output piped into `head`
        sys.stderr.close()
        return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
