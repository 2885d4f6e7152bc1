"""What counts as a user's error in the pipeline: a bad input (a file, an argument, a
configuration value) is printed by the command line (`dpmem_eval.cli`) as one line with exit
status 2, never a traceback.

`UserError` is dpmem-eval's one user-error type (dpmem_eval/errors.py); every boundary's
refusal (ConfigError, InputFileError, DataError, CorpusError, CacheError, ModelNotFound) is one."""

from __future__ import annotations

from dpmem_eval.errors import UserError

__all__ = ["UserError", "input_errors"]


def input_errors() -> tuple[type[BaseException], ...]:
    """Errors that mean a bad input (a file, an argument, a configuration value): one line, exit 2.
    Besides `UserError`, the operating system's refusals (a missing or unwritable path)."""
    return (UserError, FileNotFoundError, OSError)
