"""The command line's one error printer: every `dpmem` command reports an error as one line on
stderr (`say`), and a usage error exits with EXIT_BAD_INPUT (`usage_error`)."""

from __future__ import annotations

import sys
from typing import NoReturn

from dpmem_ref.core.errors import one_line
from dpmem_ref.core.exits import EXIT_BAD_INPUT


def say(message: str) -> None:
    """One line on stderr, whatever the encoding (file names may hold undecodable bytes)."""
    line = one_line(message) + "\n"
    stream = sys.stderr
    encoding = getattr(stream, "encoding", None) or "utf-8"
    stream.write(line.encode(encoding, "backslashreplace").decode(encoding))
    stream.flush()


def usage_error(message: str) -> NoReturn:
    """argparse's `error` for every `dpmem` parser: one line, exit 2."""
    say(f"dpmem: error: {message}")  # one line, even for an argument holding a newline
    raise SystemExit(EXIT_BAD_INPUT)
