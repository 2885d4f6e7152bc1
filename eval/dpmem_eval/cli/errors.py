"""The one error printer of `dpmem-eval`: a user's error (a `UserError`, dpmem_eval/errors.py,
or the operating system refusing a path) is one line `dpmem-eval: error: <line>` on stderr and
exit status EXIT_BAD_INPUT, never a traceback; the exit codes are the kernel's
(`dpmem_ref.core.exits`)."""

from __future__ import annotations

import sys

from dpmem_eval.errors import one_line
from dpmem_ref.core.exits import EXIT_BAD_INPUT

PROG = "dpmem-eval"


def say(line: str) -> None:
    """`line` on stderr, whatever the stream's encoding (a name may hold any character)."""
    stream = sys.stderr
    encoding = getattr(stream, "encoding", None) or "utf-8"
    stream.write((line + "\n").encode(encoding, "backslashreplace").decode(encoding))
    stream.flush()


def fail(message: str) -> int:
    """Print `message` as the one error line; the exit status of a user's error."""
    say(f"{PROG}: error: {one_line(message)}")
    return EXIT_BAD_INPUT


def warn(message: str) -> None:
    say(f"{PROG}: warning: {one_line(message)}")
