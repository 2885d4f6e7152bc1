"""An agent file that cannot be read as UTF-8 TOML is refused in one exact line naming the
file (`dpmem_ref.runtime.settings.load_agent_file`): a missing file, a directory and a file
over the configuration limit under the field `file`, undecodable bytes under `file <path>`."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.limits import MAX_CONFIG_BYTES
from dpmem_ref.runtime.settings import load_agent_file


def test_an_agent_file_that_cannot_be_read_is_refused_in_one_exact_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # relative names keep each message short enough to quote whole
    (tmp_path / "folder").mkdir()
    with open(tmp_path / "big.toml", "wb") as big:
        big.truncate(MAX_CONFIG_BYTES + 1)
    refusals = {
        "absent.toml": f"file: expected a readable TOML file, found 'absent.toml ({os.strerror(errno.ENOENT)})'",
        "folder": "file: expected a regular TOML file, found 'a directory: folder'",
        "big.toml": (
            f"file: expected a TOML file of at most {MAX_CONFIG_BYTES} bytes, found '{MAX_CONFIG_BYTES + 1} bytes: big.toml'"
        ),
    }
    for name, message in refusals.items():
        with pytest.raises(InputError) as refused:
            load_agent_file(name)
        assert str(refused.value) == message


def test_an_agent_file_that_is_not_utf8_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes('interface = "café.toml"\n'.encode("latin-1"))
    with pytest.raises(InputError) as refused:
        load_agent_file(path)
    assert str(refused.value) == f"file {path}: expected UTF-8 text, found 'undecodable bytes'"
