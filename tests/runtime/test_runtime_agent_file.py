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


INTERFACE = Path(__file__).resolve().parents[2] / "examples" / "agent" / "interface.toml"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("interface = \n", "file agent.toml: expected valid TOML, found 'Invalid value (at line 1, column 13)'"),
        (
            "x = " + "[" * 2000 + "]" * 2000 + "\n",
            "file: expected TOML within the parser's limits, found 'agent.toml: an oversized number or nesting'",
        ),
        (
            'interface = "interface.toml"\nextra = 1\n',
            "agent file: expected only the keys ['description', 'interface', 'router', 'scopes', 'tagger'], "
            "found \"unknown key 'extra'\"",
        ),
        ('description = "no interface"\n', "interface: expected the path of a kernel interface file, found 'NoneType'"),
        ("interface = 3\n", "interface: expected the path of a kernel interface file, found 'int'"),
        ('interface = ""\n', "interface: expected the path of a kernel interface file, found 'str'"),
        ('interface = "interface.toml"\nscopes = 3\n', "scopes: expected a table, found 3"),
        (
            'interface = "interface.toml"\n[scopes]\nfoo = 1\n',
            "scopes: expected only the keys ['shares', 'user_caps'], found \"unknown key 'foo'\"",
        ),
        ('interface = "interface.toml"\nrouter = 3\n', "router: expected a table, found 3"),
        (
            'interface = "interface.toml"\n[router]\nfoo = 1\n',
            "router: expected only the keys ['encoder', 'examples', 'keywords', 'threshold'], found \"unknown key 'foo'\"",
        ),
        ('interface = "interface.toml"\ntagger = 3\n', "tagger: expected a table, found 3"),
        ('interface = "interface.toml"\n[scopes]\nuser_caps = 3\n', "scopes.user_caps: expected a table, found 3"),
        ('interface = "interface.toml"\n[scopes]\nshares = "all"\n', "scopes.shares: expected a table, found 'all'"),
        (
            'interface = "interface.toml"\n[tagger]\nfoo = 1\n',
            "tagger: expected only the keys ['descriptions', 'encoder', 'rules', 'threshold'], found \"unknown key 'foo'\"",
        ),
    ],
)
def test_a_malformed_agent_file_is_refused_in_one_exact_line(
    text: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "interface.toml").write_bytes(INTERFACE.read_bytes())
    (tmp_path / "agent.toml").write_text(text)
    with pytest.raises(InputError) as refused:
        load_agent_file("agent.toml")
    assert str(refused.value) == message


def test_an_agent_file_naming_only_its_interface_has_no_router_tagger_or_scopes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "interface.toml").write_bytes(INTERFACE.read_bytes())
    (tmp_path / "agent.toml").write_text('interface = "interface.toml"\n')
    agent = load_agent_file("agent.toml")
    assert (agent.router, agent.tagger, agent.user_caps, agent.shares, agent.path) == ({}, {}, None, None, "agent.toml")
