"""`dpmem-eval`: data generation, benchmark runs, audits, judging and tables.

Heavy imports (torch, transformers, scikit-learn) are deferred into the subcommand
that needs them, so `dpmem-eval --help` and `dpmem-eval data ...` stay fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn, Protocol


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line (an argument may hold a newline or undecodable bytes), exit 2."""

    def error(self, message: str) -> NoReturn:
        from dpmem_eval.readers import one_line

        self.exit(2, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


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
        prog="dpmem-eval",
        description="DP-MemView evaluation: PairedMem data, runs, auditors, judge, tables.",
    )
    parser.add_argument("--version", action="version", version=f"dpmem-eval {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    from dpmem_eval.data.commands import add_data_parser

    add_data_parser(sub)
    from dpmem_eval.pipeline.arguments import add_pipeline_parsers

    add_pipeline_parsers(sub)
    from dpmem_eval.pipeline.horizon import add_horizon_parser

    add_horizon_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    if not (sys.argv[1:] if argv is None else argv):  # a bare `dpmem-eval`: the help, not a usage error
        parser.print_help()
        return 0
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command line, for run.json
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        print("interrupted; rerun the same command to resume from the cache", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
