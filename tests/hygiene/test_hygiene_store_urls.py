"""A store URL's secrets are never echoed; the URL grammar is strict.

Written as an attacker (or a careless operator) would: a password in every place libpq
reads one (userinfo, the `password` / `sslpassword` / `passfile` query parameters, a
keyword DSN), holding every character that breaks a naive parser (unencoded `/`, `@`,
`:`, `#`, `?`, spaces, quotes), with upper-case schemes, duplicated parameters. For each:
the error, `redact_url`, the store's repr, every log record and the file names left in
the working folder hold no trace of the secret; a keyword DSN never becomes an SQLite
file; anything that is not a documented form is refused with one line, exit 2.
On the old main a query-parameter password or one holding '/' or '@' was echoed, and a
keyword DSN became a file named after the whole string.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from dpmem_ref.core.errors import InputError
from dpmem_ref.ledger import LedgerStoreError, open_ledger_store
from dpmem_ref.ledger.url_forms import SecretURL, redact_url
from tests.kernel_fixtures import run_cli

ROOT = Path(__file__).resolve().parents[2]
SECRET = "Zq9SECRETpw"
# The secret as a naive parser would cut it: any 6-character piece must not be shown.
PIECES = {SECRET[i : i + 6] for i in range(len(SECRET) - 5)}
HOST = "127.0.0.1:1"  # nothing listens: a connection attempt fails at once

SECRET_URLS = [
    f"postgresql://user:{SECRET}@{HOST}/db",
    f"postgres://user:{SECRET}@{HOST}/db",
    f"POSTGRESQL://user:{SECRET}@{HOST}/db",
    f"postgresql://{HOST}/db?password={SECRET}",
    f"postgresql://{HOST}/db?sslmode=require&password={SECRET}",
    f"postgresql://user@{HOST}/db?sslpassword={SECRET}",
    f"postgresql://user@{HOST}/db?passfile=/home/{SECRET}/.pgpass",
    f"postgresql://user:{SECRET}@{HOST}/db?password={SECRET}",
    f"postgresql://user:a/{SECRET}@{HOST}/db",  # unencoded '/'
    f"postgresql://user:a@{SECRET}@{HOST}/db",  # unencoded '@'
    f"postgresql://user:{SECRET}@b@{HOST}/db",
    f"postgresql://user:a:{SECRET}@{HOST}/db",  # unencoded ':'
    f"postgresql://user:a#{SECRET}@{HOST}/db",  # unencoded '#'
    f"postgresql://user:a?{SECRET}@{HOST}/db",  # unencoded '?'
    f"postgresql://user:a {SECRET}@{HOST}/db",  # a space
    f"postgresql://{HOST}/db?password={SECRET}&password=other",
    f"postgresql://{HOST}/db?password=a@{SECRET}",
    f"postgresql://{HOST}/db?PASSWORD={SECRET}",
    f"dbname=db user=u password={SECRET}",
    f"host=localhost password='{SECRET}' dbname=db",
    f"password={SECRET}",
    f"sqlite:///dbname=db password={SECRET}",
    f"mysql://user:{SECRET}@{HOST}/db",
    f"postgresql:user:{SECRET}@{HOST}/db",
    f"postgresql:/user:{SECRET}@{HOST}/db",
]


def no_secret(*texts: str) -> None:
    for text in texts:
        for piece in PIECES:
            assert piece not in text, text


@pytest.mark.parametrize("url", SECRET_URLS)
def test_no_message_repr_log_or_file_name_holds_the_password(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    caplog.set_level(logging.DEBUG)
    no_secret(redact_url(url))
    try:
        ledger_store = open_ledger_store(url)
    except (InputError, LedgerStoreError) as error:
        no_secret(str(error), repr(error))
        assert "\n" not in str(error)
    else:  # only a URL of the documented form gets this far, and it cannot connect
        no_secret(repr(ledger_store), str(vars(ledger_store)))
        ledger_store.close()
    no_secret(*(record.getMessage() for record in caplog.records))
    for path in tmp_path.rglob("*"):
        no_secret(path.name)
    assert not any(tmp_path.iterdir()), "a store URL became a file"


@pytest.mark.parametrize("url", SECRET_URLS)
def test_the_cli_refuses_in_one_line_without_the_password(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    queries = tmp_path.parent / f"{tmp_path.name}-q.txt"
    queries.write_text("affordable-dinner\n")
    code, out, err = run_cli(
        ["run", str(ROOT / "examples" / "figure2.toml"), "--store", "M", "--queries", str(queries), "--store-url", url]
    )
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("dpmem: error:"), (code, out, err)
    no_secret(out, err)
    assert not any(tmp_path.iterdir())


UNDOCUMENTED = [
    "sqlite://relative.db",
    "sqlite:relative.db",
    "sqlite:",
    "sqlite:///",
    "file:ledger.db",
    "file:///tmp/ledger.db",
    "memory:extra",
    "Memory:",
    "ledger=1.db",
    "c:ledger.db",
    "https://example.org/ledger",
    "postgresql://host/db#fragment",
    "postgresql://host/db?unknown=1",
    "postgresql://host/db?sslmode",
    "postgresql://host/db?sslmode=require&sslmode=disable",
    "postgresql://host:99999999/db",
    "postgresql://host:port/db",
    "postgresql://ho st/db",
    "postgresql://host/d/b",
    "postgresql://host/db?options=a b",
    "postgresql://user:p%zz@host/db",
    "postgresql://[::1/db",
]


@pytest.mark.parametrize("url", UNDOCUMENTED)
def test_anything_not_a_documented_form_is_refused_in_one_line(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as refused:
        open_ledger_store(url)
    assert "\n" not in str(refused.value) and "--store-url" in str(refused.value)
    assert not any(tmp_path.iterdir())


def test_the_documented_forms_still_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for url, name in (
        ("memory:", None),
        ("sqlite:///rel.db", "rel.db"),
        (f"sqlite:///{tmp_path}/abs.db", "abs.db"),
        ("plain.db", "plain.db"),
        ("sub dir.db", "sub dir.db"),
    ):
        open_ledger_store(url).close()
        if name is not None:
            assert (tmp_path / name).exists()
    assert redact_url("postgresql://u:p%40ss@h:5432/db?sslmode=require&password=x") == (
        "postgresql://u:***@h:5432/db?sslmode=require&password=***"
    )


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://db.example/ledgers", "postgresql://db.example/ledgers"),
        ("postgresql://alice@db.example:6543/ledgers", "postgresql://alice@db.example:6543/ledgers"),
        (f"postgresql://alice:{SECRET}@db.example/ledgers", "postgresql://alice:***@db.example/ledgers"),
        ("postgres://db.example", "postgres://db.example"),
    ],
)
def test_a_documented_postgres_url_is_shown_with_exactly_its_parts_and_no_password(url: str, shown: str) -> None:
    """No user, a user without a password, no port, no database: nothing is added in their place."""
    assert redact_url(url) == shown


def test_redact_url_shows_memory_and_plain_paths_and_nothing_unusable() -> None:
    from dpmem_ref.ledger.url_forms import MAX_URL_LENGTH

    longest = "sqlite:///" + "a" * (MAX_URL_LENGTH - len("sqlite:///"))
    assert redact_url("memory:") == "memory:" and redact_url(longest) == longest
    for unusable in (longest + "a", "sqlite:///l\n.db", "", None, b"sqlite:///l.db"):
        assert redact_url(unusable) == "(an unusable store URL, not shown)", unusable
    assert redact_url(f"postgresql://alice:pa@{SECRET}@h/db") == (
        "postgresql://(not a documented URL form, not shown: it may hold a password)"
    )


@pytest.mark.parametrize(
    ("url", "rule"),
    [
        ("postgresql://h/db?sslmode=require&sslmode=disable", "each query parameter once"),
        ("postgresql://h/db?nosuch=1", "a query parameter name=value of a libpq URL parameter, percent-encoded"),
        (
            f"postgresql://alice:pa@{SECRET}@h/db",
            "a postgresql:// URL of the documented form (percent-encode '@', '/', ':' in passwords)",
        ),
        ("postgresql://h/db\n", "a printable URL"),
        ("postgresql://h/" + "d" * 5000, "a printable URL"),
    ],
    ids=["repeated-parameter", "unknown-parameter", "unencoded-at", "control-character", "overlong"],
)
def test_a_postgres_url_off_the_documented_form_is_refused_naming_the_rule_it_breaks(url: str, rule: str) -> None:
    from dpmem_ref.ledger.url_forms import FORMS, check_postgres_url

    with pytest.raises(InputError) as refused:
        check_postgres_url(url)
    shown = redact_url(url)  # found: the redaction (cut to the error's length)
    assert shown.startswith(("postgresql://(not a documented URL form", "(an unusable store URL"))
    assert str(refused.value).startswith(f"--store-url: expected {FORMS} ({rule}), found '{shown[:40]}")
    no_secret(str(refused.value))


def test_check_postgres_url_takes_a_url_of_exactly_the_length_limit_and_refuses_what_is_no_text() -> None:
    from dpmem_ref.ledger.url_forms import FORMS, MAX_URL_LENGTH, check_postgres_url

    longest = "postgresql://h/" + "d" * (MAX_URL_LENGTH - len("postgresql://h/"))
    assert check_postgres_url(longest) == longest
    for not_text in (None, 5, b"postgresql://h/db"):
        with pytest.raises(InputError) as refused:
            check_postgres_url(not_text)
        assert str(refused.value) == (
            f"--store-url: expected {FORMS} (a printable URL), found '(an unusable store URL, not shown)'"
        )


def test_a_secret_url_prints_as_its_redaction_and_reveals_the_url_to_the_driver() -> None:
    url = f"postgresql://alice:{SECRET}@db.example:5432/ledgers?sslmode=require"
    secret = SecretURL(url)
    assert repr(secret) == str(secret) == "SecretURL('postgresql://alice:***@db.example:5432/ledgers?sslmode=require')"
    assert f"{secret}" == str(secret) and secret.reveal() == url
    assert repr(SecretURL("sqlite:///ledgers.db")) == "SecretURL('sqlite:///ledgers.db')"
    assert repr(SecretURL("")) == "SecretURL('(an unusable store URL, not shown)')"


def test_postgres_errors_and_repr_never_hold_the_password(caplog: pytest.LogCaptureFixture) -> None:
    """A real server: wrong password in a query parameter, another interface's fingerprint."""
    import tests.postgres_server as postgres_server
    from dpmem_ref.ledger.postgres import PostgresLedgerStore

    caplog.set_level(logging.DEBUG)
    url = postgres_server.new_database()
    good = postgres_server.PASSWORD
    as_query = url.replace(f":{good}@", "@") + f"&password={good}"
    ledger_store = open_ledger_store(as_query)
    assert (
        isinstance(ledger_store, PostgresLedgerStore)
        and good not in repr(ledger_store)
        and good not in str(vars(ledger_store))
    )
    ledger_store.open_session("u", "i", {"a": 1}, fingerprint="a" * 64)  # type: ignore[dict-item]
    with pytest.raises(InputError) as mismatch:
        ledger_store.open_session("u", "j", {"a": 1}, fingerprint="b" * 64)  # type: ignore[dict-item]
    assert good not in str(mismatch.value) and "password=***" in str(mismatch.value)
    ledger_store.close()
    wrong = url.replace(f":{good}@", "@") + f"&password={SECRET}"
    with pytest.raises(LedgerStoreError) as refused:
        open_ledger_store(wrong)
    assert "authentication failed" in str(refused.value)
    no_secret(str(refused.value), *(r.getMessage() for r in caplog.records))
    assert good not in " ".join(r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("url", [u for u in SECRET_URLS if "=" in u or u.lower().startswith("postgres")][:8])
@pytest.mark.parametrize("command", ["verify", "backup", "restore", "migrate"])
def test_the_ledger_commands_never_echo_a_dsn_given_as_a_path(
    command: str, url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    extra = {"verify": [], "backup": [str(tmp_path / "b.db")], "restore": [str(tmp_path / "r.db")],
             "migrate": ["--interface", str(ROOT / "examples" / "figure2.toml")]}[command]  # fmt: skip
    code, out, err = run_cli(["ledger", command, url, *extra])
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (code, out, err)
    no_secret(out, err)
    assert not any(tmp_path.iterdir())
