"""`open_ledger_store`'s own refusals (dpmem_ref.ledger.urls), before any backend opens:

- a URL that is no text, is empty, is longer than MAX_URL_LENGTH or holds a character that
  does not print is refused in one line that names `--store-url`, the documented forms and
  "an unusable URL" (never the URL itself); one of exactly MAX_URL_LENGTH characters is read;
- a postgresql:// URL without the PostgreSQL extra installed is refused in one line naming the
  extra to install.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dpmem_ref.core.errors import InputError
from dpmem_ref.ledger import open_ledger_store
from dpmem_ref.ledger.url_forms import FORMS, MAX_URL_LENGTH

UNUSABLE = f"--store-url: expected {FORMS}, found 'an unusable URL'"


@pytest.mark.parametrize(
    "url",
    [
        None,
        5,
        b"memory:",
        "",
        "sqlite:///" + "l" * (MAX_URL_LENGTH - len("sqlite:///")) + "x",  # one character too long
        "l" * (MAX_URL_LENGTH + 1),
        "ledger\n.db",
        "ledger\x00.db",
    ],
    ids=["None", "an int", "bytes", "empty", "too long, a URL", "too long, a path", "a newline", "a NUL"],
)
def test_an_unusable_url_is_refused_in_one_line_without_it(url: object, tmp_path: Path, monkeypatch) -> None:
    """Each unusable URL is refused by its own rule (not by a backend that tries it as a path),
    with the same line: `--store-url`, the forms, and no part of the URL. No file is made."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as refused:
        open_ledger_store(url)  # type: ignore[arg-type]
    assert str(refused.value) == UNUSABLE
    assert (refused.value.field, refused.value.expected) == ("--store-url", FORMS)
    assert list(tmp_path.iterdir()) == []


def test_a_url_of_exactly_the_length_limit_is_read_by_its_backend() -> None:
    """MAX_URL_LENGTH characters are allowed: such a postgresql:// URL is parsed (and refused
    here for its query, a rule of the form) rather than refused as unusable."""
    url = "postgresql://h/db?"
    url += "x" * (MAX_URL_LENGTH - len(url))
    assert len(url) == MAX_URL_LENGTH
    with pytest.raises(InputError) as refused:
        open_ledger_store(url)
    assert str(refused.value).startswith(
        f"--store-url: expected {FORMS} (a query parameter name=value of a libpq URL parameter, percent-encoded), "
    )


def test_a_postgresql_url_without_the_extra_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the PostgreSQL backend not importable (psycopg missing), a documented postgresql://
    URL is refused in one line naming psycopg and `pip install 'dpmem-ref[postgres]'`."""
    monkeypatch.setitem(sys.modules, "dpmem_ref.ledger.postgres", None)  # its import raises ImportError
    with pytest.raises(InputError) as refused:
        open_ledger_store("postgresql://alice:secret@localhost:5432/ledger")
    assert str(refused.value) == (
        "--store-url: expected psycopg 3 for postgresql:// (pip install 'dpmem-ref[postgres]'), found 'it missing'"
    )
    assert "secret" not in str(refused.value)
