"""Documented bounds on the work any input can cause (docs/config-format.md, "Limits").

Every command either finishes within these bounds or refuses with exit 2 (InputError):
- input files are opened without blocking, must be regular files, and are read only up to
  their limit (plus one byte, to tell "at the limit" from "over it"): a FIFO, a device
  (`/dev/zero`), a directory or an oversized file is refused before anything is parsed;
- TOML files are pre-scanned in linear time before parsing (dpmem_ref.config.toml_bounds):
  nesting depth, key count, dotted parts per key and header length (the parser's work is
  quadratic in the dotted parts of one header);
- exact ledgers stay exact: an interface whose ledger arithmetic could need more than
  `MAX_LEDGER_DIGITS` decimal digits (C5 sums of exact epsilons) is refused statically,
  at load, before any turn (`ledger_digit_bound`; `dpmem_ref.interface.check_ledger_size`
  applies it to an interface);
- the z3 cross-check of the sensitivity proof (Eq. 6) has a wall-clock budget per check
  (`Z3_BUDGET_S`); when it runs out the verdict is "unproved" (the exact argument still
  decides), never a hang and never "proved".
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from fractions import Fraction
from math import lcm
from pathlib import Path

from dpmem_ref.core.errors import InputError

MAX_CONFIG_BYTES = 1_048_576
"""Largest interface description (TOML) accepted, in bytes (1 MiB)."""
MAX_QUERIES_BYTES = 8_388_608
"""Largest `--queries` file accepted, in bytes (8 MiB)."""
MAX_QUERY_LINES = 100_000
"""Most query names in one `--queries` file (turns of one `dpmem run`)."""
MAX_KEY_CHARS = 200
"""Longest table key (store key, view, slot, attribute or query name) accepted."""
MAX_TOML_DEPTH = 32
"""Deepest nesting of arrays and inline tables in a TOML file (pre-scan, dpmem_ref.config.toml_bounds)."""
MAX_TOML_KEYS = 200_000
"""Most keys (key/value pairs and table headers) in one TOML file (pre-scan)."""
MAX_KEY_PARTS = 16
"""Most dotted parts of one TOML key or table header (pre-scan; tomllib's work is quadratic in it)."""
MAX_HEADER_CHARS = 16_384
"""Longest TOML table header, or key up to its `=`, in characters of the file (pre-scan)."""
MAX_LEDGER_DIGITS = 1_000
"""Most decimal digits any exact ledger value (numerator or denominator) may need."""
DEFAULT_MAX_STATES = 1_000_000
"""Memoized states before an audit is refused with exit 2 (`dpmem audit --max-states`;
re-exported as dpmem_ref.analysis.DEFAULT_MAX_STATES, whose comment says what is counted)."""
Z3_BUDGET_S = 5.0
"""Wall-clock seconds the z3 cross-check of one `dpmem check` may take in total."""
Z3_MEMORY_MB = 256
"""Memory z3 may allocate per query (MB); past it the cross-check is "unproved"."""


def read_bounded(path: str | Path, limit: int, field: str, what: str = "file") -> bytes:
    """The bytes of a regular file of at most `limit` bytes, or InputError.

    Opened with O_NONBLOCK so that a FIFO cannot block the open; the type and size are
    checked on the open descriptor (no race with a swapped path), and at most limit + 1
    bytes are read, so a file that grows after the check is still refused.
    """
    shown = os.fsdecode(path) if isinstance(path, bytes) else str(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        raise InputError(field, f"a readable {what}", f"{shown} ({error.strerror})") from None
    except ValueError:  # an embedded NUL byte in the name
        raise InputError(field, "a file name without NUL bytes", shown) from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(field, f"a regular {what}", f"a {_kind(info.st_mode)}: {shown}")
        if info.st_size > limit:
            raise InputError(field, f"a {what} of at most {limit} bytes", f"{info.st_size} bytes: {shown}")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(descriptor, min(1 << 16, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise InputError(field, f"a {what} of at most {limit} bytes", f"a file that grew past the limit: {shown}")
        return b"".join(chunks)
    except OSError as error:
        raise InputError(field, f"a readable {what}", f"{shown} ({error.strerror})") from None
    finally:
        os.close(descriptor)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "directory"),
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISSOCK, "socket"),
    ):
        if test(mode):
            return name
    return "special file"


def digits(value: int) -> int:
    """Decimal digits of |value| without int -> str (which Python refuses past 4300 digits)."""
    value = abs(value)
    if value == 0:
        return 1
    estimate = max(1, int(value.bit_length() * 0.30102999566398120))  # log10(2)
    return estimate + 1 if value >= 10**estimate else estimate


def ledger_digit_bound(epsilons: Iterable[Fraction], caps: Iterable[Fraction], charges: int) -> int:
    """Decimal digits that suffice for every exact ledger value and every sum C5 forms.

    Every ledger L_a is a sum of at most `charges` epsilons from `epsilons`, so its
    denominator divides D = lcm of their denominators, and the prospective check compares
    L_a + eps with a cap B_a. All of these are n / d with d | lcm(D, cap denominators) and
    |n| <= d * max(charges * max eps, max cap) + d; the bound returned is the digits of
    that d plus those of the numerator bound.
    """
    epsilon_list = list(epsilons)
    cap_list = list(caps)
    denominator = lcm(*(e.denominator for e in epsilon_list), *(c.denominator for c in cap_list), 1)
    largest_epsilon = max(epsilon_list, default=Fraction(0))
    largest = max([charges * largest_epsilon + 1, *(c + 1 for c in cap_list)])
    numerator = denominator * (largest.numerator // largest.denominator + 1)
    return max(digits(denominator), digits(numerator))


def check_ledger_digits(epsilons: Iterable[Fraction], caps: Iterable[Fraction], charges: int, field: str) -> None:
    bound = ledger_digit_bound(epsilons, caps, charges)
    if bound > MAX_LEDGER_DIGITS:
        raise InputError(
            field,
            f"caps and epsilons whose exact ledgers need at most {MAX_LEDGER_DIGITS} digits",
            f"up to {bound} digits (coprime denominators)",
        )
