"""The keys file of `dpmem serve`: hashes only, every entry compared in constant time, and
errors that name the field but never the value found there."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from pathlib import Path

import pytest

from dpmem_ref.core.errors import InputError
from dpmem_ref.serve.keys import MAX_TOKEN_CHARS, OWNER, Keys, check_shares_cover, load_keys, parse_keys, token_hash

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "agent"

OWNER_TOKEN, CAL_TOKEN, MAIL_TOKEN = "owner-secret-1", "calendar-secret-2", "mail-secret-3"


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "keys.toml"
    path.write_text(text)
    return path


def keys_text() -> str:
    return (
        f'[owner]\ntoken_sha256 = "{token_hash(OWNER_TOKEN)}"\n'
        f'[apps.calendar]\ntoken_sha256 = "{token_hash(CAL_TOKEN)}"\nusers = ["alice", "bob"]\n'
        f'[apps.mail]\ntoken_sha256 = "{token_hash(MAIL_TOKEN)}"\nusers = []\n'
    )


def test_token_hash_is_hex_sha256_of_the_utf8_bytes() -> None:
    assert token_hash("é") == hashlib.sha256("é".encode()).hexdigest()


def test_each_token_authenticates_as_its_principal_and_nothing_else_does(tmp_path: Path) -> None:
    keys = load_keys(_file(tmp_path, keys_text()))
    assert keys.authenticate(OWNER_TOKEN) == OWNER
    calendar = keys.authenticate(CAL_TOKEN)
    assert calendar is not None and (calendar.kind, calendar.name) == ("app", "calendar")
    assert calendar.may_query("alice") and calendar.may_query("bob") and not calendar.may_query("carol")
    mail = keys.authenticate(MAIL_TOKEN)
    assert mail is not None and mail.name == "mail" and not mail.may_query("alice")
    assert not OWNER.may_query("alice")  # the owner is no application: it has no turn scope
    for other in (None, "", CAL_TOKEN + " ", token_hash(CAL_TOKEN), "x" * (MAX_TOKEN_CHARS + 1)):
        assert keys.authenticate(other) is None
    assert keys.app_names == ("calendar", "mail")


def test_the_hashes_stay_out_of_the_repr(tmp_path: Path) -> None:
    keys = load_keys(_file(tmp_path, keys_text()))
    assert token_hash(OWNER_TOKEN) not in repr(keys) and token_hash(CAL_TOKEN) not in repr(keys)
    assert repr(keys) == "Keys(owner, apps=['calendar', 'mail'])"


@pytest.mark.parametrize("token", [OWNER_TOKEN, CAL_TOKEN, MAIL_TOKEN, "unknown"])
def test_every_entry_is_compared_whichever_matches(tmp_path: Path, token: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """No early exit: the owner and every application hash go through compare_digest."""
    keys = load_keys(_file(tmp_path, keys_text()))
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", counting)
    keys.authenticate(token)
    assert len(calls) == 3
    assert {b for _, b in calls} == {keys.owner_sha256, *(h for h, _ in keys.apps)}


BAD = [
    ("", "--keys: owner: expected an [owner] table with token_sha256, found 'none'"),
    (
        "[owner]\n",
        "--keys: owner.token_sha256: expected 64 lowercase hex digits (sha256 of the token), found 'NoneType'",
    ),
    (
        f'[owner]\ntoken_sha256 = "{token_hash("a").upper()}"\n',
        "--keys: owner.token_sha256: expected 64 lowercase hex digits (sha256 of the token), found 'a string of 64 characters'",
    ),
    (
        '[owner]\ntoken_sha256 = "owner-secret-1"\n',
        "--keys: owner.token_sha256: expected 64 lowercase hex digits (sha256 of the token), found 'a string of 14 characters'",
    ),
    (
        f'[owner]\ntoken_sha256 = "{token_hash("a")}"\ntoken = "owner-secret-1"\n',
        "--keys: owner.token: expected only the keys token_sha256 and users, found 'an unknown key'",
    ),
    (
        f'[owner]\ntoken_sha256 = "{token_hash("a")}"\nusers = ["alice"]\n',
        "--keys: owner.users: expected no users list (the owner manages every user), found 'a users key'",
    ),
    (
        f'[owner]\ntoken_sha256 = "{token_hash("a")}"\n[apps.cal]\ntoken_sha256 = "{token_hash("a")}"\nusers = []\n',
        "--keys: apps.cal.token_sha256: expected a hash no other entry uses, found 'a repeated hash'",
    ),
    (
        f'[owner]\ntoken_sha256 = "{token_hash("a")}"\n[apps.cal]\ntoken_sha256 = "{token_hash("b")}"\n',
        "--keys: apps.cal.users: expected a list of user names, found 'NoneType'",
    ),
    (
        f'[owner]\ntoken_sha256 = "{token_hash("a")}"\n[apps.cal]\ntoken_sha256 = "{token_hash("b")}"\nusers = ["a b"]\n',
        "--keys: apps.cal.users[0]: expected 1..128 characters of [A-Za-z0-9._-], starting with a letter or digit,"
        " found 'a b' (a space at character 2)",
    ),
    (
        f'[owner]\ntoken_sha256 = "{token_hash("a")}"\n[apps."c a l"]\ntoken_sha256 = "{token_hash("b")}"\nusers = []\n',
        "--keys: apps: expected 1..128 characters of [A-Za-z0-9._-], starting with a letter or digit,"
        " found 'c a l' (a space at character 2)",
    ),
    (
        f'[owner]\ntoken_sha256 = "{token_hash("a")}"\n[admins]\n',
        "--keys: admins: expected only the tables [owner] and [apps.NAME], found 'an unknown table'",
    ),
    ("owner = 5\n", "--keys: owner: expected a table, found 'int'"),
    (
        f'[owner]\ntoken_sha256 = "{token_hash("a")}"\n[apps.cal]\ntoken_sha256 = "{token_hash("b")}"\nusers = []\n'
        f'[apps.mail]\ntoken_sha256 = "{token_hash("b")}"\nusers = []\n',
        "--keys: apps.mail.token_sha256: expected a hash no other entry uses, found 'a repeated hash'",
    ),
    (
        f'[owner]\ntoken_sha256 = "{token_hash("a")}"\n[apps.cal]\ntoken_sha256 = "{token_hash("b")}"\nusers = "alice"\n',
        "--keys: apps.cal.users: expected a list of user names, found 'str'",
    ),
    (
        f'apps = 5\n[owner]\ntoken_sha256 = "{token_hash("a")}"\n',
        "--keys: apps: expected tables [apps.NAME], found 'int'",
    ),
    (
        "[owner]\ntoken_sha256 = 5\n",
        "--keys: owner.token_sha256: expected 64 lowercase hex digits (sha256 of the token), found 'int'",
    ),
    (
        f'[owner]\ntoken_sha256 = "{token_hash("a")}"\n[apps]\ncal = ["x"]\n',
        "--keys: apps.cal: expected a table, found 'list'",
    ),
    (
        '[owner]\ntoken_sha256 = "owner-secret-1',
        "--keys: expected valid TOML, found 'an error at the end of the document'",
    ),
    ("[owner]\ntoken_sha256 = ", "--keys: expected valid TOML, found 'an error at the end of the document'"),
    (
        "x = " + "9" * 5000 + "\n",
        "--keys: expected TOML within the parser's limits, found 'an oversized number or nesting'",
    ),
    ('[owner\ntoken_sha256 = "owner-secret-1"\n', "--keys: expected valid TOML, found 'an error at line 1, column 7'"),
    ("[owner]\ntoken_sha256 = owner-secret-1\n", "--keys: expected valid TOML, found 'an error at line 2, column 16'"),
]


@pytest.mark.parametrize(("text", "message"), BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_a_bad_keys_file_names_the_field_never_the_value(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        load_keys(_file(tmp_path, text))
    assert str(caught.value) == message
    assert "owner-secret-1" not in str(caught.value) and token_hash("a") not in str(caught.value)


def test_a_keys_file_that_is_not_utf8_is_one_line_without_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "keys.toml"
    path.write_bytes(b'[owner]\ntoken_sha256 = "owner-secret-1\xff"\n')
    with pytest.raises(InputError) as caught:
        load_keys(path)
    assert str(caught.value) == "--keys: expected UTF-8 TOML, found 'undecodable bytes'"


def test_a_missing_or_oversized_keys_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^--keys: expected a readable keys file"):
        load_keys(tmp_path / "absent.toml")
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * 1_048_577)
    with pytest.raises(InputError, match=r"^--keys: expected a keys file of at most 1048576 bytes"):
        load_keys(big)


def test_parse_keys_takes_parsed_toml() -> None:
    keys = parse_keys({"owner": {"token_sha256": token_hash("o")}})
    assert isinstance(keys, Keys) and keys.apps == () and keys.authenticate("o") == OWNER
    with pytest.raises(InputError) as caught:
        parse_keys({})
    assert str(caught.value) == "keys file: owner: expected an [owner] table with token_sha256, found 'none'"


def test_an_empty_or_overlong_token_is_refused_before_it_is_hashed_even_if_an_entry_matches_it() -> None:
    """A keys file may hold any hash, even that of "" or of a token past MAX_TOKEN_CHARS: such a
    token is still refused, unhashed; a token of exactly MAX_TOKEN_CHARS is hashed and matched."""
    longest, overlong = "t" * MAX_TOKEN_CHARS, "t" * (MAX_TOKEN_CHARS + 1)
    apps = {
        "empty": {"token_sha256": token_hash(""), "users": []},
        "longest": {"token_sha256": token_hash(longest), "users": []},
        "overlong": {"token_sha256": token_hash(overlong), "users": []},
    }
    keys = parse_keys({"owner": {"token_sha256": token_hash("o")}, "apps": apps})
    assert keys.authenticate("") is None and keys.authenticate(overlong) is None and keys.authenticate(None) is None
    found = keys.authenticate(longest)
    assert found is not None and found.name == "longest"


def test_a_token_with_a_lone_surrogate_is_hashed_from_its_surrogatepass_bytes_not_refused_by_a_crash() -> None:
    """A str from a Python caller may hold a lone surrogate (no HTTP header does): it hashes as its
    'surrogatepass' UTF-8 bytes, and authenticating it matches that hash or nothing, never raises."""
    odd = "cal\ud800endar"
    assert token_hash(odd) == hashlib.sha256(b"cal\xed\xa0\x80endar").hexdigest()
    apps = {"calendar": {"token_sha256": token_hash(odd), "users": ["alice"]}}
    keys = parse_keys({"owner": {"token_sha256": token_hash("o")}, "apps": apps})
    found = keys.authenticate(odd)
    assert found is not None and found.name == "calendar"
    assert keys.authenticate("\udfff") is None


def test_the_shipped_example_keys_file_parses_and_matches_its_demo_tokens() -> None:
    keys = load_keys(EXAMPLES / "keys.example.toml")
    assert keys.authenticate("demo-owner-token-change-me") == OWNER
    recipes = keys.authenticate("demo-recipes-token-change-me")
    assert recipes is not None and recipes.name == "recipes" and recipes.users == {"alice"}
    finance = keys.authenticate("demo-finance-token-change-me")
    assert finance is not None and finance.name == "finance" and finance.users == {"alice"}
    # each application lists only the owner of the example memory's items, and has a share
    owners = {json.loads(line)["user"] for line in (EXAMPLES / "memory.jsonl").read_text().splitlines() if line.strip()}
    assert owners == {"alice"} and recipes.users | finance.users == owners
    check_shares_cover(keys, EXAMPLES / "assistant.toml")


def test_an_application_without_a_share_of_the_per_user_caps_is_refused_naming_it(tmp_path: Path) -> None:
    keys = parse_keys({"owner": {"token_sha256": token_hash("o")}, "apps": {
        "recipes": {"token_sha256": token_hash("r"), "users": ["alice"]},
        "calendar": {"token_sha256": token_hash("c"), "users": ["alice"]},
    }})  # fmt: skip
    with pytest.raises(InputError) as refused:
        check_shares_cover(keys, EXAMPLES / "assistant.toml")
    assert (
        str(refused.value)
        == "--keys: apps.calendar: expected an application with a share in the agent file's [scopes.shares], found 'none'"
    )
    uncapped = tmp_path / "agent.toml"  # no per-user cap: every scope has the interface's caps
    text = (
        (EXAMPLES / "assistant.toml")
        .read_text()
        .replace('interface = "interface.toml"', f"interface = {json.dumps(str(EXAMPLES / 'interface.toml'))}")
    )
    head, rest = text.split("[scopes]", 1)
    uncapped.write_text(head + "[router]" + rest.split("[router]", 1)[1])
    check_shares_cover(keys, uncapped)


def test_a_keys_file_is_pre_scanned_before_it_is_parsed(tmp_path: Path) -> None:
    dotted = "[" + ".".join(["a"] * 100_000) + "]\n"  # tomllib's work is quadratic in the parts
    started = time.monotonic()
    with pytest.raises(InputError) as refused:
        load_keys(_file(tmp_path, keys_text() + dotted))
    assert time.monotonic() - started < 5
    assert str(refused.value).startswith("--keys: expected TOML within the documented limits")
    assert str(refused.value).endswith("dotted parts at line 9'") and "a.a" not in str(refused.value)
