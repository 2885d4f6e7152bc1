"""`dpmem`: run, check and audit DP-MemView interfaces described in TOML files.

Exit codes: 0 ok, 1 contract violations / bound broken, 2 bad input (one-line message,
no traceback: any unexpected exception reaching `main` is also reported on one line, exit 2),
3 `dpmem audit` of a pair no guarantee applies to (dpmem_ref.audit).
Every input is bounded before it is read (dpmem_ref.core.limits, docs/config-format.md "Limits").

`dpmem run` releases turn k at a fixed time, start + k x deadline (timing side channel,
dpmem_ref.mechanism.timing): the output line of a turn is written only once its time has come,
whatever the store. `--no-release-deadline` opts out.
"""

from __future__ import annotations

import argparse
import sys

from dpmem_ref.cli.audit import add_auditor_parsers
from dpmem_ref.cli.errors import say, usage_error
from dpmem_ref.cli.ledger import add_ledger_commands, add_store_url_arguments
from dpmem_ref.cli.serve import add_serve_parser
from dpmem_ref.core.errors import ContractViolation, InputError, error_origin
from dpmem_ref.core.exits import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_VIOLATION
from dpmem_ref.core.limits import MAX_QUERIES_BYTES, MAX_QUERY_LINES, read_bounded
from dpmem_ref.mechanism.timing import DEFAULT_DURABLE_TURN_DEADLINE_S, DEFAULT_TURN_DEADLINE_S

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads it as True)
if TYPE_CHECKING:  # `command_run` imports the kernel: `dpmem --help` loads none of it
    from collections.abc import Callable, Sequence
    from fractions import Fraction
    from typing import Any

    from dpmem_ref.interface import Interface

DEBUG_FLAG = "--debug-print-private-scores"
DEBUG_WARNING = (
    f"dpmem: WARNING: {DEBUG_FLAG} breaks the DP guarantee: contract-breaking parts run and private "
    "scores or memory may be printed; never use it on real memory"
)


def read_query_lines(path: str) -> list[tuple[int, str]]:
    """(line number, query name) per line; blank lines and lines starting with '#' are skipped.
    A regular file of at most MAX_QUERIES_BYTES bytes and MAX_QUERY_LINES names."""
    raw = read_bounded(path, MAX_QUERIES_BYTES, "--queries", "file of query names")
    try:
        lines = raw.decode("utf-8").splitlines()
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise InputError(f"--queries line {line}", "UTF-8 text", "undecodable bytes") from None
    named = [(n, line.strip()) for n, line in enumerate(lines, 1) if line.strip() and not line.lstrip().startswith("#")]
    if not named:
        raise InputError("--queries", "at least one query name", "an empty file")
    if len(named) > MAX_QUERY_LINES:
        raise InputError("--queries", f"at most {MAX_QUERY_LINES} queries", len(named))
    return named


def read_queries(path: str) -> list[str]:
    """The query names of `read_query_lines`, in file order."""
    return [name for _, name in read_query_lines(path)]


def _history_is_unread(interface: Interface) -> bool:
    """True when no part of the interface reads the completed history: a router and a
    control that declare reads_history=False, and no private hooks. Then `dpmem run` need not keep the history, and a run
    is linear in its number of turns (each turn would otherwise copy the whole history)."""
    from dpmem_ref.parts.broken import PrivateHooks

    return (
        not interface.router.reads_history
        and not interface.control.reads_history
        and interface.hooks == PrivateHooks()
        and not interface.reuse.rules  # reuse re-serves views of earlier turns
    )


def _deadline_ms(args: argparse.Namespace) -> float:
    """--release-deadline-ms, else the default of the path taken (durable turns commit first)."""
    if args.release_deadline_ms is not None:
        return float(args.release_deadline_ms)
    default = DEFAULT_DURABLE_TURN_DEADLINE_S if getattr(args, "store_url", None) else DEFAULT_TURN_DEADLINE_S
    return default * 1000


def command_run(args: argparse.Namespace) -> int:
    import json
    import time

    import attrs

    from dpmem_ref.channel.standin import TemplateChannel
    from dpmem_ref.cli.ledger import durable_turns
    from dpmem_ref.config.load import load_interface_file
    from dpmem_ref.contract import require_contract
    from dpmem_ref.core.rational import fraction_text
    from dpmem_ref.mechanism.randomness import RandomSource, SeededRandomSource, SystemRandomSource
    from dpmem_ref.mechanism.timing import check_deadline, wait_until
    from dpmem_ref.schemas import envelope
    from dpmem_ref.turn.runner import run_turn
    from dpmem_ref.turn.state import InterfaceState

    if args.debug_print_private_scores:
        print(DEBUG_WARNING, file=sys.stderr)
    deadline_s = (
        None
        if args.no_release_deadline
        else check_deadline(_deadline_ms(args) / 1000, "--release-deadline-ms")
    )
    loaded = load_interface_file(args.file)
    interface = loaded.interface
    store = loaded.store(args.store)
    named = read_query_lines(args.queries)
    for line, name in named:  # validate every name before the first release
        try:
            interface.query(name)
        except InputError as error:
            raise InputError(f"--queries line {line}: {error.field}", error.expected, error.found) from None
    names = [name for _, name in named]
    if not args.debug_print_private_scores:
        require_contract(interface)
    forget_history = _history_is_unread(interface)
    source: RandomSource = SystemRandomSource() if args.seed is None else SeededRandomSource(args.seed)
    channel = TemplateChannel()
    state = InterfaceState.initial(interface)
    caps = {a: fraction_text(c) for a, c in interface.caps.items()}
    turns: list[dict[str, Any]] = []
    overruns = 0
    # With --store-url a DurableSession runs each turn (charge committed before release);
    # the release grid below is this command's deadline for both paths.
    durable = durable_turns(
        args.store_url, args.user, args.interaction, interface, store, source, channel, turn_deadline_s=None
    )
    # Turn k is released at run_start + k * deadline: a fixed public grid, so neither the
    # turn's own work nor any work after an earlier release shifts when a line appears.
    run_start = time.perf_counter_ns()
    for name in names:
        result = (
            durable(name)
            if durable is not None
            else run_turn(
                interface, state, name, store, source, channel=channel, strict=not args.debug_print_private_scores
            )
        )
        state = attrs.evolve(result.state, history=()) if forget_history else result.state
        turn = _turn_json(state.turn, name, result, state.ledger_map(interface))
        lines = [] if args.json else _turn_lines(turn, caps)
        if deadline_s is not None:  # nothing of this turn is observable before its deadline
            overruns += wait_until(run_start + state.turn * int(deadline_s * 1e9))
        if args.json:
            turns.append(turn)
        else:
            print("\n".join(lines), flush=True)
    if args.json:
        document = {**envelope("run"), "interface": interface.name, "store": args.store, "caps": caps, "turns": turns}
        print(json.dumps(document, indent=2))
    if overruns:
        print(
            f"dpmem: warning: {overruns} turn(s) overran the release deadline (raise --release-deadline-ms)",
            file=sys.stderr,
        )
    return EXIT_OK


def _turn_json(turn: int, name: str, result: Any, ledgers: dict[str, Fraction]) -> dict[str, Any]:
    from dpmem_ref.core.rational import fraction_text
    from dpmem_ref.schemas import json_value

    slots = [
        {
            "slot": plan.slot,
            "view": view,
            "status": "reused" if plan.reused else "released" if plan.admitted else "fallback",
            "charged": sorted(plan.charge_set) if plan.admitted else [],
            "epsilon": fraction_text(plan.epsilon) if plan.admitted else "0",
        }
        for plan, (_, view) in zip(result.plans, result.record.views, strict=True)
    ]
    return {
        "turn": turn,
        "query": name,
        "slots": slots,
        "control": json_value(result.record.control),  # plain JSON (schema "run", dpmem_ref/schemas)
        "control_repr": repr(result.record.control),
        "response": result.record.response,
        "ledgers": {a: fraction_text(v) for a, v in ledgers.items()},
    }


def _turn_lines(turn: dict[str, Any], caps: dict[str, str]) -> list[str]:
    lines = [f"turn {turn['turn']:>3}  {turn['query']}"]
    for slot in turn["slots"]:
        charge = (
            f"charged {slot['epsilon']} to {', '.join(slot['charged'])}"
            if slot["charged"]
            else (f"{slot['status']}, cost 0" if slot["status"] in ("fallback", "reused") else "uncharged")
        )
        lines.append(f"      {slot['slot']:<10} -> {slot['view']:<24} {charge}")
    ledger_text = ", ".join(f"{a} {v} of {caps[a]}" for a, v in turn["ledgers"].items())
    lines.append(f"      ledgers: {ledger_text}")
    return lines


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dpmem",
        description="DP-MemView reference kernel: run, check and audit interface descriptions.",
        epilog="examples:\n  dpmem run examples/figure2.toml --store M --queries examples/figure2-queries.txt --seed 0",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_Version)
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default=None,
        help="log records of the kernel (e.g. durable sessions) to stderr at this level (default: none)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the interface turn by turn (Algorithm 1)")
    run.add_argument("file", help="interface description (TOML)")
    run.add_argument("--store", required=True, help="name of a store in the file")
    run.add_argument("--queries", required=True, help="file with one query name per line")
    run.add_argument("--seed", type=int, default=None, help="seed for reproducible EM draws (default: OS entropy)")
    run.add_argument("--json", action="store_true", help="machine-readable output")
    run.add_argument(
        "--release-deadline-ms",
        type=float,
        default=None,
        help=(
            f"release each turn this long after it starts (default {DEFAULT_TURN_DEADLINE_S * 1000:g} ms; "
            f"{DEFAULT_DURABLE_TURN_DEADLINE_S * 1000:g} ms with --store-url)"
        ),
    )
    run.add_argument(
        "--no-release-deadline",
        action="store_true",
        help="release each turn as soon as it is computed (exposes the sampler's timing side channel)",
    )
    run.add_argument(
        DEBUG_FLAG,
        action="store_true",
        help="DEBUG ONLY, BREAKS THE DP GUARANTEE: run a contract-breaking file; may print private scores",
    )
    add_store_url_arguments(run)
    run.set_defaults(handler=command_run)
    add_auditor_parsers(sub)
    add_ledger_commands(sub)
    from dpmem_ref.cli.chat import add_chat_command  # `dpmem chat` (docs/agent.md)

    add_chat_command(sub)
    add_serve_parser(sub)
    return parser


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _version() -> str:
    """The installed distribution's version (the package's own when run from a checkout)."""
    import importlib.metadata

    from dpmem_ref.core.version import __version__

    try:
        return importlib.metadata.version("dpmem-ref")
    except importlib.metadata.PackageNotFoundError:
        return __version__


class _Version(argparse._VersionAction):  # noqa: SLF001
    """`--version`, the installed version looked up only when asked (importlib.metadata is
    slow to import: `dpmem --help` and every command would pay for it)."""

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        self.version = f"dpmem {_version()}"
        super().__call__(parser, *args, **kwargs)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    parser.error = usage_error  # type: ignore[method-assign]  # exit 2 with a one-line message
    for action in parser._subparsers._group_actions if parser._subparsers else []:  # noqa: SLF001
        for subparser in getattr(action, "choices", {}).values():
            subparser.error = usage_error
    if not (sys.argv[1:] if argv is None else argv):  # a bare `dpmem`: the help, not a usage error
        parser.print_help()
        return EXIT_OK
    args = parser.parse_args(argv)
    if args.log_level is not None:
        import logging

        logging.basicConfig(level=args.log_level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    handler: Callable[[argparse.Namespace], int] = args.handler
    from dpmem_ref.ledger.contract import LedgerStoreError  # a command's machinery, once it runs

    try:
        return handler(args)
    except (InputError, LedgerStoreError) as error:  # a LedgerStoreError: an unusable --store-url ledger
        say(f"dpmem: error: {error}")
        return EXIT_BAD_INPUT
    except ContractViolation as error:
        say(f"dpmem: contract violation: {error}")
        return EXIT_VIOLATION
    except BrokenPipeError:  # output piped into `head`
        sys.stderr.close()
        return EXIT_OK
    except KeyboardInterrupt:
        say("dpmem: interrupted")
        return EXIT_INTERRUPTED
    except OSError as error:  # e.g. a path too long for the file system: bad input, one line
        # strerror only: the path itself may be huge or hold a secret (a store URL), so it is not echoed.
        say(f"dpmem: error: a path given on the command line cannot be used: {error.strerror or type(error).__name__}")
        return EXIT_BAD_INPUT
    except (Exception, RecursionError) as error:  # noqa: BLE001  # never a traceback
        # The type and where it was raised, never its message: a message may quote a value.
        say(f"dpmem: error: internal error {type(error).__name__} at {error_origin(error)}; please report it")
        return EXIT_BAD_INPUT
