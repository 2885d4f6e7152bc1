"""The one user-error type of `dpmem-eval`.

A bad input (a file, an argument, a configuration value, a missing model or corpus) raises a
`UserError`: one line that says where and what, never a file's contents. The command line
(`dpmem_eval.cli.errors`) prints it as `dpmem-eval: error: <line>` with exit status 2, never a
traceback. The subclasses only say which boundary refused the input:

- `ConfigError` (pipeline/config.py): a configuration value; `field: expected X, found Y`,
  the kernel's `InputError` form;
- `InputFileError` (readers.py): a file the pipeline reads; `<file>[:line]: <field>: <problem>`;
- `DataError` (data/export.py): a data directory `data build` did not write;
- `CorpusError` (data/corpora.py): a missing or unreadable public corpus file;
- `CacheError` (pipeline/cache.py): an unusable response cache;
- `ModelNotFound` (pipeline/models.py): a model package that is not installed.

Callers that turn bad input into exit status 2 catch `UserError` (pipeline/errors.py adds the
operating system's errors), never the subclasses one by one.
"""

from __future__ import annotations


def one_line(text: str, limit: int = 500) -> str:
    """Collapse control characters (a newline in a file name or argument) and cap the length."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")  # undecodable file-name bytes
    flat = "".join(ch if ch.isprintable() else " " for ch in text)
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def short(value: object, limit: int = 80) -> str:
    """`repr(value)`, bounded: a value can be as long as the file it came from."""
    shown = repr(value)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


class UserError(ValueError):
    """A bad input the user can fix: one line (printed by the command line, exit status 2)."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))
