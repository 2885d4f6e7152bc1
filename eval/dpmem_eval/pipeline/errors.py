"""What counts as a user's error in the pipeline: a bad input (a file, an argument, a
configuration value) is printed by `cli.py` as one line with exit status 2, never a traceback."""

from __future__ import annotations


class UserError(Exception):
    """A bad input: printed as one line, exit status 2."""


def input_errors() -> tuple[type[BaseException], ...]:
    """Errors that mean a bad input (a file, an argument, a configuration value): one line, exit 2."""
    from dpmem_eval.data.export import DataError
    from dpmem_eval.pipeline.cache import CacheError
    from dpmem_eval.pipeline.config import ConfigError
    from dpmem_eval.pipeline.models import ModelNotFound
    from dpmem_eval.readers import InputFileError

    return (UserError, ConfigError, ModelNotFound, InputFileError, DataError, CacheError, FileNotFoundError, OSError)


def is_data_error(exc: BaseException) -> bool:
    """The data package's input errors (e.g. a missing corpus file) are user errors too."""
    return type(exc).__name__ in ("CorpusError", "DataError")
