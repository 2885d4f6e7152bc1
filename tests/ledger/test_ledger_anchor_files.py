"""An anchor path that holds no regular file (a directory, a FIFO, a symbolic link) is refused
in one line that names what was found there, without blocking on a FIFO and without following
a link (an attacker who can write the folder could point the anchor at another file)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dpmem_ref.ledger import chain
from dpmem_ref.ledger.anchor import read_anchor
from dpmem_ref.ledger.contract import LedgerStoreError

KEY = chain.ChainKey(secret=b"k" * 32, keyed=True)


def _make(kind: str, path: Path) -> None:
    if kind == "directory":
        path.mkdir()
    elif kind == "FIFO":
        os.mkfifo(path)
    else:
        target = path.with_name("elsewhere")
        target.write_bytes(b"")
        path.symlink_to(target)


@pytest.mark.parametrize(("kind", "found"), [
    ("directory", "expected a regular anchor file, found a directory: {path}"),
    ("FIFO", "expected a regular anchor file, found a FIFO: {path}"),
    ("link", "expected a regular file, found a link or another kind"),
])
def test_an_anchor_that_is_not_a_regular_file_is_named_and_refused(kind: str, found: str, tmp_path: Path) -> None:
    path = tmp_path / "ledgers.db.hwm"
    _make(kind, path)
    with pytest.raises(LedgerStoreError) as refused:
        read_anchor(path, KEY, "0" * 32)
    assert str(refused.value) == f"anchor {path}: cannot be read ({found.format(path=path)})"


def test_a_missing_anchor_reads_as_none(tmp_path: Path) -> None:
    assert read_anchor(tmp_path / "none.hwm", KEY, "0" * 32) is None
