"""An SQLite store URL that is not a documented form is refused in one exact line.

`open_ledger_store` (and so `dpmem run --store-url`) names the documented forms and, in
parentheses, which rule the URL broke: `sqlite:` without three slashes, or a path that is
empty, holds '=', starts with a scheme (`word:`) or holds "://". Each rule is refused on
its own (a URL that breaks only that one), and nothing is created in the working folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dpmem_ref.core.errors import InputError
from dpmem_ref.ledger import open_ledger_store
from tests.kernel_fixtures import run_cli

ROOT = Path(__file__).resolve().parents[2]
FORMS = "memory:, sqlite:///PATH, a file path without '=' or postgresql://USER:PASSWORD@HOST:PORT/DATABASE"
THREE_SLASHES = "sqlite:///PATH (three slashes)"
A_PLAIN_PATH = "an SQLite file path without '=' and without a scheme"
WITH_EQUALS = "\"(a libpq keyword DSN or a path with '=', not shown: it m..."


@pytest.mark.parametrize(
    ("url", "rule", "found"),
    [
        ("sqlite:ledger.db", THREE_SLASHES, "'sqlite:(not shown)'"),
        ("sqlite://ledger.db", THREE_SLASHES, "'sqlite:(not shown)'"),
        ("sqlite:", THREE_SLASHES, "'sqlite:(not shown)'"),
        ("sqlite:///", A_PLAIN_PATH, "'sqlite:///'"),  # an empty path
        ("ledger=1.db", A_PLAIN_PATH, WITH_EQUALS),  # '=' alone: no scheme, no "://"
        ("sqlite:///ledger=1.db", A_PLAIN_PATH, WITH_EQUALS),
        ("c:ledger.db", A_PLAIN_PATH, "'c:(not shown)'"),  # a scheme alone: no '=', no "://"
        ("sqlite:///postgresql:ledger.db", A_PLAIN_PATH, "'sqlite:///postgresql:ledger.db'"),
        ("SQLITE:ledger.db", A_PLAIN_PATH, "'SQLITE:(not shown)'"),  # schemes are not case-folded: a path with a scheme
        ("folder/x://ledger.db", A_PLAIN_PATH, "'folder/x://ledger.db'"),  # "://" alone: no '=', no scheme at the start
        ("sqlite:///folder/x://ledger.db", A_PLAIN_PATH, "'sqlite:///folder/x://ledger.db'"),
    ],
)
def test_a_url_that_breaks_one_rule_is_refused_naming_it(
    url: str, rule: str, found: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`sqlite:` without three slashes; a path that is empty, holds '=', starts with a scheme or
    holds "://": each URL breaks one rule only."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as refused:
        open_ledger_store(url)
    assert str(refused.value) == f"--store-url: expected {FORMS} ({rule}), found {found}"
    assert not any(tmp_path.iterdir())


def test_dpmem_run_prints_the_refusal_as_its_one_error_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    queries = tmp_path.parent / f"{tmp_path.name}-queries.txt"
    queries.write_text("affordable-dinner\n")
    figure2 = str(ROOT / "examples" / "figure2.toml")
    for url, rule, found in (
        ("sqlite://ledger.db", THREE_SLASHES, "'sqlite:(not shown)'"),
        ("folder/x://ledger.db", A_PLAIN_PATH, "'folder/x://ledger.db'"),
    ):
        code, out, err = run_cli(["run", figure2, "--store", "M", "--queries", str(queries), "--store-url", url])
        assert (code, out, err) == (2, "", f"dpmem: error: --store-url: expected {FORMS} ({rule}), found {found}\n")
    assert not any(tmp_path.iterdir())
