"""Bad input to `dpmem-eval` (continued from test_bad_input.py): a damaged response cache, bad
arguments and a bad --config file are refused with one line and exit 2, before any write."""

from __future__ import annotations

import os
import random
import sqlite3
from pathlib import Path

import pytest
from bad_input_support import marked_pairs, refused, run_args, write_data


@pytest.fixture(scope="module")
def pairs():
    return marked_pairs()


@pytest.fixture
def data(tmp_path, pairs) -> Path:
    return write_data(tmp_path, pairs)


# --- the response cache ----------------------------------------------------------------------


def _foreign(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE ledger (attribute TEXT, spent TEXT)")
    db.commit()
    db.close()


def _other_schema(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE responses (key TEXT, value TEXT)")
    db.commit()
    db.close()


CACHE_DAMAGE = {
    "random bytes": lambda p: p.write_bytes(random.Random(1).randbytes(8192)),
    "truncated header": lambda p: p.write_bytes(b"SQLite format 3\x00" + b"\x00" * 40),
    "directory": lambda p: p.mkdir(),
    "FIFO": lambda p: os.mkfifo(p),
    "foreign database": _foreign,
    "other schema": _other_schema,
}


@pytest.mark.parametrize("damage", sorted(CACHE_DAMAGE))
def test_bad_response_cache_is_refused_before_any_write(capsys, tmp_path, data, damage):
    cache = tmp_path / "cache" / "responses.sqlite"
    cache.parent.mkdir()
    CACHE_DAMAGE[damage](cache)
    refused(capsys, run_args(data, tmp_path), tmp_path, "response cache", "responses.sqlite")
    assert not (tmp_path / "new-out").exists()


# --- arguments and --config ------------------------------------------------------------------


@pytest.mark.parametrize(("extra", "field"), [
    (["--seed", "-1"], "seed"),
    (["--seed", str(2**40)], "seed"),
    (["--seed", "9" * 5000], "--seed"),
    (["--seed", "1\n2"], "--seed"),
    (["--seeds", "-1"], "seeds"),
    (["--caps", "0,2"], "caps"),
    (["--ks", "0,3"], "ks"),
    (["--models", ""], "models"),
    (["--bogus\nargument"], "unrecognized"),
    (["--preset", "bogus\nx"], "--preset"),
    (["--config", "/dev/zero"], "--config"),
    (["--config", "/nonexistent/\udcff.toml"], "--config"),
])
def test_bad_argument_is_one_line(capsys, tmp_path, data, extra, field):
    refused(capsys, run_args(data, tmp_path, *extra), tmp_path, field)


@pytest.mark.parametrize(("text", "field"), [
    (b"\xff\xfe[run]", "UTF-8"),
    (b"run = 5", "[run]"),
    (b"[run]\nmodels = 5", "models"),
    (b"[run]\nmethods = 5", "methods"),
    (b"[run]\nencoder = { a = 1 }", "encoder"),
    (b"[run]\nseed = 99999999999999999999", "seed"),
    (b"[run]\ntemperature = nan", "temperature"),
    (b"[run]\nseeds = [[1]]", "seeds"),
    (b"[run\n", "TOML"),
])
def test_bad_config_file_is_one_line(capsys, tmp_path, data, text, field):
    config = tmp_path / "config.toml"
    config.write_bytes(text)
    refused(capsys, run_args(data, tmp_path, "--config", str(config)), tmp_path, field)
