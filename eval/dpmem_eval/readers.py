"""Bounded, typed reading of every file `dpmem-eval` reads (JSON, JSONL, TOML, their gzip siblings).

One place for the rules every input file obeys, so that a bad file is refused with one line
naming the file and the field, never a traceback, and never by quoting the file's contents:
PairedMem stores hold memory text, transcripts hold conditioning built from it, so an error
says what type or shape was expected and found, not which value.

- only regular files are read (a directory, FIFO, socket or device such as /dev/zero is
  refused before reading: a FIFO would block, /dev/zero never ends), opened non-blocking;
- at most `limit` bytes are read (decompressed bytes for a `.gz` sibling); a larger file is
  refused;
- text is strict UTF-8; JSON refuses NaN/Infinity (except where a metric may be undefined),
  integers beyond Python's int-to-str limit, and nesting deep enough to exhaust the stack;
- `Record` gives typed access to one JSON object's fields: each accessor names the field.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import stat
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from dpmem_eval.errors import UserError
from dpmem_eval.errors import one_line as one_line  # re-exported: the readers' callers import it from here

MiB = 1024 * 1024
MAX_JSON_BYTES = 64 * MiB
"""run.json, audit.json, judge.json, datacard.json, a --config TOML."""
MAX_JSONL_BYTES = 4096 * MiB
"""A JSONL file (data files, transcripts; decompressed size for a .gz sibling)."""
MAX_LINE_BYTES = 64 * MiB
"""One JSONL line."""


class InputFileError(UserError):
    """A file the pipeline reads is unusable: one line, `<file>[:line]: <field>: <problem>`."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")


def display(path: str | Path) -> str:
    """A path as it may appear in a message: printable, bounded (file names can hold anything)."""
    return one_line(os.fsdecode(path).encode("utf-8", "backslashreplace").decode("utf-8"), 200)


def kind_of(value: object) -> str:
    """The JSON type of a value, as a message names it (never the value itself)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


# --- bytes --------------------------------------------------------------------------------


def open_regular(path: str | Path) -> IO[bytes]:
    """Open `path` for reading only if it is a regular file (checked on the open descriptor)."""
    where = display(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputFileError(where, "no such file") from None
    except IsADirectoryError:
        raise InputFileError(where, "is a directory, expected a file") from None
    except OSError as exc:
        raise InputFileError(where, f"cannot open ({exc.strerror or type(exc).__name__})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file"
        raise InputFileError(where, f"is {kind}, expected a regular file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def _read_limited(handle: IO[bytes], where: str, limit: int) -> bytes:
    try:
        data = handle.read(limit + 1)
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise InputFileError(where, f"unreadable ({_reason(exc)})") from None
    if len(data) > limit:
        raise InputFileError(where, f"larger than the {limit // MiB} MiB limit")
    return data


def _reason(exc: BaseException) -> str:
    if isinstance(exc, (gzip.BadGzipFile, zlib.error, EOFError)):
        return "corrupt or truncated gzip data"
    return getattr(exc, "strerror", None) or type(exc).__name__


def read_bytes(path: str | Path, *, limit: int = MAX_JSON_BYTES) -> bytes:
    with open_regular(path) as handle:
        return _read_limited(handle, display(path), limit)


def decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(where, f"not UTF-8 text (byte {exc.start})") from None


def read_text(path: str | Path, *, limit: int = MAX_JSON_BYTES) -> str:
    return decode(read_bytes(path, limit=limit), display(path))


# --- JSON ---------------------------------------------------------------------------------


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _nonfinite(name: str) -> float:
    return float(name.replace("Infinity", "inf"))


def loads(text: str | bytes, where: str, *, nonfinite: bool = False) -> Any:
    """Strict JSON: no NaN/Infinity unless `nonfinite` (files the pipeline writes itself, where
    a metric may be undefined or a bound infinite; `Record.number` then decides per field),
    no integers past the int-to-str limit, bounded nesting."""
    try:
        return json.loads(text, parse_constant=_nonfinite if nonfinite else _no_constant)
    except json.JSONDecodeError as exc:
        raise InputFileError(where, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise InputFileError(where, "JSON nested too deeply") from None
    except ValueError as exc:  # NaN/Infinity, or an integer with more digits than Python converts
        reason = str(exc) if "JSON number" in str(exc) else "integer too large"
        raise InputFileError(where, f"invalid JSON: {reason}") from None


def read_json(path: str | Path, *, limit: int = MAX_JSON_BYTES, nonfinite: bool = False) -> Any:
    where = display(path)
    return loads(decode(read_bytes(path, limit=limit), where), where, nonfinite=nonfinite)


def jsonl_source(path: str | Path) -> Path:
    """`path`, or its gzip sibling `<name>.gz` when `path` is absent (committed result dirs)."""
    path = Path(path)
    packed = path.with_name(path.name + ".gz")
    return packed if not os.path.lexists(path) and os.path.lexists(packed) else path


def iter_jsonl(path: str | Path, *, limit: int = MAX_JSONL_BYTES, gzip_sibling: bool = False,
               nonfinite: bool = False) -> Iterator[tuple[str, Any]]:
    """(where, value) for each non-blank line; `where` is `file:line`. Reads at most `limit`
    bytes (after decompression); with `gzip_sibling`, reads `<name>.gz` when `path` is absent."""
    source = jsonl_source(path) if gzip_sibling else Path(path)
    name = display(source)
    raw = open_regular(source)
    handle: IO[bytes] | gzip.GzipFile = gzip.GzipFile(fileobj=raw, mode="rb") if source.name.endswith(".gz") else raw
    total = 0
    with raw, handle:
        lineno = 0
        while True:
            where = f"{name}:{lineno + 1}"
            try:
                line = handle.readline(MAX_LINE_BYTES + 1)
            except (OSError, EOFError, zlib.error) as exc:
                raise InputFileError(where, f"unreadable ({_reason(exc)})") from None
            if not line:
                return
            lineno += 1
            total += len(line)
            if total > limit:
                raise InputFileError(name, f"larger than the {limit // MiB} MiB limit")
            if len(line) > MAX_LINE_BYTES:
                raise InputFileError(where, f"line longer than the {MAX_LINE_BYTES // MiB} MiB limit")
            if line.strip():
                yield where, loads(decode(line, where), where, nonfinite=nonfinite)


# --- typed fields -------------------------------------------------------------------------


_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")


class Record:
    """One JSON object from a file: typed accessors that name `file: field` on failure.

    Call `done()` after reading to refuse fields the reader does not know (a foreign format)."""

    def __init__(self, value: object, file: str, path: str = "") -> None:
        self.file, self.path = file, path
        if not isinstance(value, dict):
            raise InputFileError(self.file, f"{path or 'record'}: expected an object, found {kind_of(value)}")
        self.data: dict[str, Any] = value
        self._seen: set[str] = set()

    def _field(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def fail(self, key: str, problem: str) -> InputFileError:
        return InputFileError(self.file, f"{self._field(key)}: {problem}")

    def raw(self, key: str, *, optional: bool = False, default: Any = None) -> Any:
        self._seen.add(key)
        if key not in self.data:
            if optional:
                return default
            raise self.fail(key, "missing")
        return self.data[key]

    def _typed(self, key: str, types: tuple[type, ...], expected: str, optional: bool, default: Any, nullable: bool) -> Any:
        value = self.raw(key, optional=optional, default=default)
        if value is default and key not in self.data:
            return value
        if value is None and nullable:
            return None
        if isinstance(value, bool) and bool not in types or not isinstance(value, types):
            raise self.fail(key, f"expected {expected}, found {kind_of(value)}")
        return value

    def text(self, key: str, *, optional: bool = False, default: Any = None, nullable: bool = False) -> Any:
        return self._typed(key, (str,), "a string", optional, default, nullable)

    def flag(self, key: str, *, optional: bool = False, default: Any = None) -> Any:
        return self._typed(key, (bool,), "true or false", optional, default, False)

    def integer(self, key: str, lo: int | None = None, hi: int | None = None, *, optional: bool = False,
            default: Any = None, nullable: bool = False) -> Any:
        value = self._typed(key, (int,), "an integer", optional, default, nullable)
        if isinstance(value, int) and not in_range(value, lo, hi):
            raise self.fail(key, f"expected an integer in {describe_range(lo, hi)}")
        return value

    def number(self, key: str, *, optional: bool = False, default: Any = None, allow_nan: bool = False,
               allow_inf: bool = False) -> Any:
        value = self._typed(key, (int, float), "a number", optional, default, False)
        if isinstance(value, float) and math.isnan(value) and not allow_nan:
            raise self.fail(key, "expected a number, found NaN")
        if isinstance(value, float) and math.isinf(value) and not allow_inf:
            raise self.fail(key, "expected a finite number")
        return value

    def array(self, key: str, *, optional: bool = False, default: Any = None) -> Any:
        return self._typed(key, (list,), "an array", optional, default, False)

    def obj(self, key: str, *, optional: bool = False) -> Record | None:
        value = self._typed(key, (dict,), "an object", optional, None, False)
        return None if value is None else Record(value, self.file, self._field(key))

    def strs(self, key: str) -> tuple[str, ...]:
        items = self.array(key)
        for i, item in enumerate(items):
            if not isinstance(item, str):
                raise self.fail(f"{key}[{i}]", f"expected a string, found {kind_of(item)}")
        return tuple(items)

    def ints(self, key: str, lo: int | None = None, hi: int | None = None) -> tuple[int, ...]:
        items = self.array(key)
        for i, item in enumerate(items):
            if isinstance(item, bool) or not isinstance(item, int):
                raise self.fail(f"{key}[{i}]", f"expected an integer, found {kind_of(item)}")
            if not in_range(item, lo, hi):
                raise self.fail(f"{key}[{i}]", f"expected an integer in {describe_range(lo, hi)}")
        return tuple(items)

    def records(self, key: str) -> list[Record]:
        return [Record(item, self.file, f"{self._field(key)}[{i}]") for i, item in enumerate(self.array(key))]

    def done(self) -> None:
        """Refuse fields this record's reader did not read (a foreign or newer format)."""
        extra = sorted(set(self.data) - self._seen)
        if extra:
            # A key could be anything the file holds: name it only when it looks like a field name.
            named = [k for k in extra if _FIELD_NAME.fullmatch(k)][:3]
            rest = len(extra) - len(named)
            shown = ", ".join(named) + (f" and {rest} more" if named and rest else str(rest) if rest else "")
            raise InputFileError(self.file, f"{self.path or 'record'}: unexpected field(s) {shown}")


def in_range(value: int, lo: int | None, hi: int | None) -> bool:
    return (lo is None or value >= lo) and (hi is None or value <= hi)


def describe_range(lo: int | None, hi: int | None) -> str:
    if lo is not None and hi is not None:
        return f"{lo}..{hi}"
    return f">= {lo}" if lo is not None else f"<= {hi}"


# --- writing -------------------------------------------------------------------------------


def write_atomic(path: str | Path, text: str) -> None:
    """Write `text` to `path` through a temporary sibling and a rename: readers never see half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp's 0600 would make shared result files private
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
