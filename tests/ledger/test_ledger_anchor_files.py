"""An anchor file: its exact bytes, who may read it, and what is refused at its path.

Written: the sealed JSON text (keys sorted; the seal recomputed here from the documented
layout, not with the chain's code) padded with spaces to one 512-byte sector, created readable
and writable by its owner only whatever the umask. An anchor path that holds no regular file
(a directory, a FIFO, a symbolic link) is refused in one line that names the path, without
blocking on a FIFO and without following a link (an attacker who can write the folder could
point the anchor at another file): when read, naming what was found there; when written,
leaving whatever is there untouched."""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
from pathlib import Path

import pytest

from dpmem_ref.ledger import chain
from dpmem_ref.ledger.anchor import read_anchor, write_anchor
from dpmem_ref.ledger.contract import LedgerStoreError

SECRET = b"k" * 32
KEY = chain.ChainKey(secret=SECRET, keyed=True)
IDENTITY = "0123456789abcdef" * 2
MARK = chain.HighWater(seq=7, mac="ab" * 32)


def _make(kind: str, path: Path) -> None:
    if kind == "directory":
        path.mkdir()
    elif kind == "FIFO":
        os.mkfifo(path)
    else:
        target = path.with_name("elsewhere")
        target.write_bytes(b"")
        path.symlink_to(target)


@pytest.mark.parametrize(
    ("kind", "found"),
    [
        ("directory", "expected a regular anchor file, found a directory: {path}"),
        ("FIFO", "expected a regular anchor file, found a FIFO: {path}"),
        ("link", "expected a regular file, found a link or another kind"),
    ],
)
def test_an_anchor_that_is_not_a_regular_file_is_named_and_refused(kind: str, found: str, tmp_path: Path) -> None:
    path = tmp_path / "ledgers.db.hwm"
    _make(kind, path)
    with pytest.raises(LedgerStoreError) as refused:
        read_anchor(path, KEY, "0" * 32)
    assert str(refused.value) == f"anchor {path}: cannot be read ({found.format(path=path)})"


def test_a_missing_anchor_reads_as_none(tmp_path: Path) -> None:
    assert read_anchor(tmp_path / "none.hwm", KEY, "0" * 32) is None


def test_a_written_anchor_is_its_sorted_sealed_text_padded_to_one_sector(tmp_path: Path) -> None:
    path = tmp_path / "l.db.hwm"
    write_anchor(path, KEY, IDENTITY, MARK)
    sealed = f'{{"database_id":"{IDENTITY}","key_id":"{KEY.key_id}","mac":"{MARK.mac}","role":"live","seq":7}}'
    message = b"|".join((b"dpmem-chain-v1", b"7", b"anchor", MARK.mac.encode(), sealed.encode()))
    seal = hmac.new(SECRET, message, hashlib.sha256).hexdigest()
    text = (
        f'{{"database_id": "{IDENTITY}", "key_id": "{KEY.key_id}", "mac": "{MARK.mac}", "role": "live", '
        f'"seal": "{seal}", "seq": 7}}'
    )
    assert path.read_bytes() == text.encode().ljust(512)
    assert read_anchor(path, KEY, IDENTITY) == MARK


def test_a_new_anchor_file_is_readable_and_writable_by_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "l.db.hwm"
    permissive = os.umask(0)  # nothing masked: the mode is the one write_anchor asks for
    try:
        write_anchor(path, KEY, IDENTITY, MARK)
    finally:
        os.umask(permissive)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("kind", "why"),
    [
        ("directory", "cannot be written"),
        ("FIFO", "not a regular file"),
        ("link", "cannot be written"),
    ],
)
def test_an_anchor_is_never_written_through_what_is_not_a_regular_file(kind: str, why: str, tmp_path: Path) -> None:
    path = tmp_path / "ledgers.db.hwm"
    _make(kind, path)
    with pytest.raises(LedgerStoreError) as refused:
        write_anchor(path, KEY, IDENTITY, MARK, force=True)
    assert str(refused.value) == f"anchor {path}: {why}"
    still = {"directory": stat.S_ISDIR, "FIFO": stat.S_ISFIFO, "link": stat.S_ISLNK}[kind]
    assert still(path.lstat().st_mode)
    if kind == "link":  # not followed: the file it points at stays empty
        assert path.with_name("elsewhere").read_bytes() == b""


def test_the_anchor_folder_is_read_from_the_environment_given_not_the_process_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`anchor_path(..., environ)` reads DPMEM_LEDGER_ANCHOR_DIR from the mapping it is given (a
    caller's explicit environment), never from the process's own."""
    from dpmem_ref.ledger.anchor import ENV_ANCHOR_DIR, anchor_path, high_water_path

    database = tmp_path / "l.db"
    monkeypatch.setenv(ENV_ANCHOR_DIR, str(tmp_path / "process"))
    given = {ENV_ANCHOR_DIR: str(tmp_path / "given")}
    assert anchor_path(database, IDENTITY, given) == tmp_path / "given" / f"{IDENTITY}.anchor"
    assert anchor_path(database, IDENTITY, {}) == high_water_path(database)  # none given: beside the file
    assert anchor_path(None, IDENTITY, {}) is None  # PostgreSQL: its anchor row
    assert anchor_path(database, IDENTITY) == tmp_path / "process" / f"{IDENTITY}.anchor"  # no mapping: the process's


def test_an_anchor_with_a_byte_edited_inside_a_value_is_a_seal_mismatch(tmp_path: Path) -> None:
    """A byte of the sealed text changed, even to one that is no text (0xff inside the role), is
    read as an edit the seal catches, not as an unreadable file."""
    path = tmp_path / "l.db.hwm"
    write_anchor(path, KEY, IDENTITY, MARK)
    path.write_bytes(path.read_bytes().replace(b'"live"', b'"l\xffve"'))
    with pytest.raises(LedgerStoreError) as refused:
        read_anchor(path, KEY, IDENTITY)
    assert str(refused.value) == f"anchor {path}: its seal does not match the key (edited, or sealed with another key)"


def test_an_anchor_of_another_role_names_its_role_and_every_role_expected(tmp_path: Path) -> None:
    from dpmem_ref.ledger.anchor import BACKUP, LIVE, parse_anchor

    path = tmp_path / "l.db.hwm"
    write_anchor(path, KEY, IDENTITY, MARK)  # a live anchor
    text = path.read_text()
    assert parse_anchor(KEY, text, "here", IDENTITY, (BACKUP, LIVE)) == MARK
    with pytest.raises(LedgerStoreError) as refused:
        parse_anchor(KEY, text, "here", IDENTITY, (BACKUP, "archive"))
    assert str(refused.value) == "anchor here: a live anchor, expected a backup or archive anchor"
    with pytest.raises(LedgerStoreError) as refused:
        parse_anchor(KEY, text, "here", IDENTITY, (BACKUP,))
    assert str(refused.value) == "anchor here: a live anchor, expected a backup anchor"


def test_an_anchor_is_raised_never_replaced_at_the_same_height(tmp_path: Path) -> None:
    """A mark at the anchor's own seq with another MAC (a fork at the same height) leaves the
    anchor as it was; only a higher seq raises it (or a forced, recorded replace)."""
    path = tmp_path / "l.db.hwm"
    write_anchor(path, KEY, IDENTITY, MARK)
    fork = chain.HighWater(seq=MARK.seq, mac="cd" * 32)
    write_anchor(path, KEY, IDENTITY, fork)
    assert read_anchor(path, KEY, IDENTITY) == MARK
    write_anchor(path, KEY, IDENTITY, chain.HighWater(seq=MARK.seq - 1, mac="ef" * 32))
    assert read_anchor(path, KEY, IDENTITY) == MARK  # never lowered
    write_anchor(path, KEY, IDENTITY, fork, force=True)
    assert read_anchor(path, KEY, IDENTITY) == fork


def test_an_anchor_file_longer_than_one_sector_is_refused_unless_replaced(tmp_path: Path) -> None:
    """A file past one sector is no anchor: a read refuses it, and a commit does not write over it
    (refused, the file untouched); a forced replace (restore, re-anchor) leaves one sector."""
    path = tmp_path / "l.db.hwm"
    write_anchor(path, KEY, IDENTITY, MARK)
    assert len(path.read_bytes()) == 512 and read_anchor(path, KEY, IDENTITY) == MARK  # exactly one sector
    longer = path.read_bytes() + b" "
    path.write_bytes(longer)
    past_one_sector = f"anchor {path}: cannot be read (expected at most 512 bytes, found more)"
    with pytest.raises(LedgerStoreError) as refused:
        read_anchor(path, KEY, IDENTITY)
    assert str(refused.value) == past_one_sector
    with pytest.raises(LedgerStoreError) as refused:
        write_anchor(path, KEY, IDENTITY, chain.HighWater(seq=8, mac="cd" * 32))
    assert str(refused.value) == past_one_sector
    assert path.read_bytes() == longer
    write_anchor(path, KEY, IDENTITY, MARK, force=True)
    assert len(path.read_bytes()) == 512 and read_anchor(path, KEY, IDENTITY) == MARK


def test_a_write_over_an_anchor_of_another_key_names_the_anchor(tmp_path: Path) -> None:
    path = tmp_path / "l.db.hwm"
    write_anchor(path, chain.ChainKey(secret=b"o" * 32, keyed=True), IDENTITY, MARK)
    with pytest.raises(LedgerStoreError) as refused:
        write_anchor(path, KEY, IDENTITY, chain.HighWater(seq=8, mac="cd" * 32))
    assert str(refused.value) == f"anchor {path}: its seal does not match the key (edited, or sealed with another key)"


@pytest.mark.parametrize(
    ("failing", "why"), [("pread", "cannot be read"), ("pwrite", "cannot be written")], ids=["read", "write"]
)
def test_an_io_error_on_an_anchor_is_one_line_naming_it(
    failing: str, why: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failing disk (EIO on a read, ENOSPC on a write) is one line naming the anchor file."""
    import dpmem_ref.ledger.anchor as anchor_module

    path = tmp_path / "l.db.hwm"
    write_anchor(path, KEY, IDENTITY, MARK)

    def fails(*_: object) -> int:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(anchor_module.os, failing, fails)
    with pytest.raises(LedgerStoreError) as refused:
        if failing == "pread":
            read_anchor(path, KEY, IDENTITY)
        else:
            write_anchor(path, KEY, IDENTITY, chain.HighWater(seq=8, mac="cd" * 32))
    assert str(refused.value) == f"anchor {path}: {why}"
