"""One bounded, non-blocking reader for every file the tools read (stdlib only).

Keys, anchors, keys files, memories, interfaces and backups are read through `read_file`
(bytes) or `read_text` (strict UTF-8): the file is opened with O_NONBLOCK (a FIFO never
blocks the open), its type and size are checked on the open descriptor before a byte is
read (a FIFO, a device, a directory or a file over the limit is refused), and at most
limit + 1 bytes are read. Every failure is one `InputError` line naming the field and the
file; undecodable bytes are an input error, never a `UnicodeDecodeError`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.limits import read_bounded


def read_file(path: str | Path, limit: int, field: str, what: str = "file", missing_ok: bool = False) -> bytes | None:
    """The bytes of a regular file of at most `limit` bytes (None if it is missing and
    `missing_ok`); otherwise one InputError line."""
    if missing_ok:
        try:
            os.lstat(path)
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            pass  # read_bounded names the problem
    return read_bounded(path, limit, field, what)


def read_text(path: str | Path, limit: int, field: str, what: str = "file") -> str:
    """A regular file of at most `limit` bytes as strict UTF-8 text (one InputError line otherwise)."""
    raw = read_bounded(path, limit, field, what)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(field, f"a UTF-8 {what}", f"undecodable bytes at offset {error.start}: {path}") from None


def is_regular_or_missing(path: str | Path) -> bool:
    """True when `path` is a regular file or does not exist (never follows into a FIFO)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        return True
    except (OSError, ValueError):
        return False
