"""The anchor (high-water mark): the newest chain head a database is known to have committed.

Sealed with the chain key over the head (seq, MAC), the key id, the database identity (the
random id of the genesis event) and a role (`live`, or `backup` for the copy a backup
carries), so an edited anchor, one sealed with another key, another database's, or a
backup's put beside a live file is refused. Where it lives (`anchor_path`): the file
`DPMEM_LEDGER_ANCHOR_DIR/<identity>.anchor` when that folder is set, else `DB.hwm` beside a
SQLite file (PostgreSQL: its `dpmem_anchor` row). docs/durability.md, "Threat model".
"""

from __future__ import annotations

import hmac
import json
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.files import read_file
from dpmem_ref.ledger.chain import ChainKey, HighWater, canonical
from dpmem_ref.ledger.contract import LedgerStoreError

HIGH_WATER_SUFFIX = ".hwm"
ANCHOR_SUFFIX = ".anchor"
ENV_ANCHOR_DIR = "DPMEM_LEDGER_ANCHOR_DIR"
LIVE, BACKUP = "live", "backup"
_HWM_BYTES = 512


def high_water_path(database: Path) -> Path:
    """`DB.hwm`: the anchor beside a SQLite file (and the anchor a backup carries)."""
    return database.with_name(database.name + HIGH_WATER_SUFFIX)


def anchor_path(database: Path | None, identity: str, environ: Mapping[str, str] | None = None) -> Path | None:
    """Where a live database's anchor lives: `DPMEM_LEDGER_ANCHOR_DIR/<identity>.anchor` when
    that folder is set (the defended placement, docs/durability.md), else `DB.hwm` beside a
    SQLite file (`database`), else None (PostgreSQL keeps it in its `dpmem_anchor` row)."""
    env = os.environ if environ is None else environ
    folder = env.get(ENV_ANCHOR_DIR)
    if folder:
        return Path(folder) / (identity + ANCHOR_SUFFIX)
    return None if database is None else high_water_path(database)


def _anchor_data(key: ChainKey, identity: str, role: str, mark: HighWater) -> dict[str, Any]:
    return {"seq": mark.seq, "mac": mark.mac, "key_id": key.key_id, "database_id": identity, "role": role}


def _seal(key: ChainKey, data: Mapping[str, Any]) -> str:
    return key.mac(int(data["seq"]), "anchor", str(data["mac"]), canonical(data))


def anchor_text(key: ChainKey, identity: str, role: str, mark: HighWater) -> str:
    """The sealed anchor: HMAC(key) over seq, head MAC, key id, database identity and role."""
    data = _anchor_data(key, identity, role, mark)
    return json.dumps({**data, "seal": _seal(key, data)}, sort_keys=True)


def parse_anchor(key: ChainKey, raw: bytes | str, where: str, identity: str, roles: Sequence[str]) -> HighWater | None:
    """The anchor in `raw` (None when empty). Refused (one line): unreadable, a seal that does
    not match (edited, or another key), another database's anchor, or the wrong role."""
    text = raw.decode("ascii", "replace") if isinstance(raw, bytes) else raw
    if not text.strip():
        return None
    try:
        stored = json.loads(text)
        data = {name: stored[name] for name in ("seq", "mac", "key_id", "database_id", "role")}
        mark = HighWater(seq=int(data["seq"]), mac=str(data["mac"]))
        seal = str(stored["seal"])
        expected = _seal(key, data)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        raise LedgerStoreError(f"anchor {where}: unreadable") from None
    if not hmac.compare_digest(seal, expected):
        raise LedgerStoreError(f"anchor {where}: its seal does not match the key (edited, or sealed with another key)")
    if data["database_id"] != identity:
        raise LedgerStoreError(
            f"anchor {where}: belongs to another database (id {str(data['database_id'])[:16]}, this one is {identity[:16]})"
        )
    if data["role"] not in roles:
        raise LedgerStoreError(f"anchor {where}: a {data['role']} anchor, expected a {' or '.join(roles)} anchor")
    return mark


def read_anchor(path: Path, key: ChainKey, identity: str, roles: Sequence[str] = (LIVE,)) -> HighWater | None:
    """The anchor in file `path` (None when missing or empty): one bounded, non-blocking read
    under a shared flock (a committer rewrites the anchor in place under its exclusive lock, and
    a read that overlapped that write could see half of each seal)."""
    import fcntl

    try:
        fd: int | None = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError:
        fd = None
    if fd is None or not stat.S_ISREG(os.fstat(fd).st_mode):
        if fd is not None:
            os.close(fd)
        _refuse_unreadable(path)
    assert fd is not None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        raw = _one_sector(fd, path)
    except OSError:
        raise LedgerStoreError(f"anchor {path}: cannot be read") from None
    finally:
        os.close(fd)
    return parse_anchor(key, raw, str(path), identity, roles)


def _one_sector(fd: int, path: Path) -> bytes:
    """The anchor file's bytes, at most one sector: one byte more is read to refuse a longer file
    (no anchor is written past one sector)."""
    raw = os.pread(fd, _HWM_BYTES + 1, 0)
    if len(raw) > _HWM_BYTES:
        raise LedgerStoreError(f"anchor {path}: cannot be read (expected at most {_HWM_BYTES} bytes, found more)")
    return raw


def _refuse_unreadable(path: Path) -> NoReturn:
    """A FIFO, a device, a link or a folder where the anchor should be: the bounded reader's own
    one line (it checks the type without blocking), as a store error."""
    try:
        read_file(path, _HWM_BYTES, "anchor", "anchor file", missing_ok=True)
    except InputError as error:
        raise LedgerStoreError(f"anchor {path}: cannot be read (expected {error.expected}, found {error.found})") from None
    raise LedgerStoreError(f"anchor {path}: cannot be read (expected a regular file, found a link or another kind)")


def write_anchor(
    path: Path, key: ChainKey, identity: str, mark: HighWater, role: str = LIVE, force: bool = False
) -> None:
    """Raise the anchor in file `path` to `mark` (never lower it unless `force`: a recorded
    restore or re-anchor, which also replaces a missing, foreign or unreadable anchor).

    Under an exclusive flock, so concurrent committers keep the maximum (monotone); written
    in place (one sector) after the COMMIT it follows. Not fsync'ed on every commit (that
    doubled the cost of a charge): it survives a crash of the process at once and a power
    loss once the OS has written it back; `force` syncs."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError:
        raise LedgerStoreError(f"anchor {path}: cannot be written") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise LedgerStoreError(f"anchor {path}: not a regular file")
        fcntl.flock(fd, fcntl.LOCK_EX)
        current = None if force else parse_anchor(key, _one_sector(fd, path), str(path), identity, (role,))
        if force or current is None or mark.seq > current.seq:
            os.pwrite(fd, anchor_text(key, identity, role, mark).encode().ljust(_HWM_BYTES), 0)
            if force:
                os.ftruncate(fd, _HWM_BYTES)  # a longer file replaced: one sector, readable again
                os.fdatasync(fd)
    except OSError:
        raise LedgerStoreError(f"anchor {path}: cannot be written") from None
    finally:
        os.close(fd)


def anchor_on_open(path: Path, key: ChainKey, identity: str, database: str, head_seq: int) -> HighWater | None:
    """The anchor a SQLite store opens against, failing closed: an unreadable, edited, foreign or
    backup anchor is refused, and so is a missing one once the chain is past its genesis (a
    truncated or older copy would go unnoticed); each line names the recovery command."""
    try:
        mark = read_anchor(path, key, identity)
    except LedgerStoreError as error:
        raise LedgerStoreError(
            f"ledger database {database}: refused, {error}; a backup goes in place with dpmem ledger restore "
            f"BACKUP DB; a live database whose anchor was replaced: dpmem ledger reanchor {database}"
        ) from None
    if mark is None and head_seq > 1:
        raise LedgerStoreError(
            f"ledger database {database}: its anchor {path} is missing, so a truncated or older copy would go "
            f"unnoticed; if this is the live database, re-anchor it (recorded in its chain): dpmem ledger reanchor {database}"
        )
    return mark
