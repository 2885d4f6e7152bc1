"""`dpmem-eval`: data generation, benchmark runs, audits, judging and tables (the parser and
`main`; each subcommand group's arguments and handlers in its own module of this package)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn, Protocol

from dpmem_eval.cli.errors import PROG, say
from dpmem_ref.core.exits import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line (an argument may hold a newline or undecodable bytes), exit 2."""

    def error(self, message: str) -> NoReturn:
        from dpmem_eval.errors import one_line

        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


class Subcommands(Protocol):
    """What a subcommand module needs of `add_subparsers()`'s result: `add_parser`. (Typeshed's
    `argparse._SubParsersAction[...]` is generic only for type checkers; the API reference
    evaluates annotations at run time, where it is not subscriptable.)"""

    def add_parser(self, name: str, **kwargs: Any) -> OneLineParser: ...


def version() -> str:
    """The installed distribution's version (the package's own when run from a checkout)."""
    import importlib.metadata

    from dpmem_eval import __version__

    try:
        return importlib.metadata.version("dpmem-eval")
    except importlib.metadata.PackageNotFoundError:
        return __version__


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog=PROG,
        description="DP-MemView evaluation: PairedMem data, runs, auditors, judge, tables.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    from dpmem_eval.cli.data import add_data_parser
    from dpmem_eval.cli.horizon import add_horizon_parser
    from dpmem_eval.cli.pipeline import add_pipeline_parsers

    add_data_parser(sub)
    add_pipeline_parsers(sub)
    add_horizon_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    if not (sys.argv[1:] if argv is None else argv):  # a bare `dpmem-eval`: the help, not a usage error
        parser.print_help()
        return EXIT_OK
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command line, for run.json
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        say("interrupted; rerun the same command to resume from the cache")
        return EXIT_INTERRUPTED

