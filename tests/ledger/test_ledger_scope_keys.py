"""The typed key of a runtime budget scope (`dpmem_ref.ledger.scopes.ScopeKey`): the one encoder
of the stored session names, byte for byte as databases hold them, and the one parser back."""

from __future__ import annotations

from typing import Any

import pytest

from dpmem_ref.core.errors import InputError
from dpmem_ref.ledger.facts import SessionKey
from dpmem_ref.ledger.scopes import ScopeKey

# (the key, the stored interaction text): the layout every database written so far holds
NAMES = [
    (ScopeKey.of_app("alice", "recipes", 0), "e0:app:recipes"),
    (ScopeKey.of_app("alice", "my.app-2_x", 12), "e12:app:my.app-2_x"),
    (ScopeKey.of_app("alice", "recipes", 3, period=0), "e3:p0:app:recipes"),
    (ScopeKey.of_app("alice", "recipes", 0, period=41), "e0:p41:app:recipes"),
    (ScopeKey.of_user("alice", 7), "e7:user"),
]


@pytest.mark.parametrize(("scope", "interaction"), NAMES, ids=[text for _, text in NAMES])
def test_each_scope_is_stored_under_its_name_and_parsed_back(scope: ScopeKey, interaction: str) -> None:
    assert scope.interaction == interaction
    assert scope.session_key == SessionKey("alice", interaction)
    assert ScopeKey.parse(scope.session_key) == scope


@pytest.mark.parametrize(
    "interaction",
    ["chat", "i1", "e0", "e0:app:", "e01:app:a", "e-1:app:a", "e0:p01:app:a", "e0:app:a:b", "e0:app:.a",
     "e0:p1:user", "e0:user:x", "E0:app:a", " e0:app:a", "e0:app:a ", "e0:pp:app:a"],
)  # fmt: skip
def test_a_session_that_is_not_a_runtime_scope_parses_to_none(interaction: str) -> None:
    assert ScopeKey.parse(SessionKey("alice", interaction)) is None


USER_ID = "a printable ASCII id of 1..256 characters"
APP_ID = "None or an id of [A-Za-z0-9._-] starting with a letter or digit"
COUNT = "a non-negative integer"

# (the part refused, the arguments, the whole one-line refusal)
BAD: list[tuple[str, dict[str, Any], str]] = [
    ("user", {"user": "", "app": "a", "epoch": 0}, f"user: expected {USER_ID}, found an empty string"),
    ("user", {"user": "line\nbreak", "app": "a", "epoch": 0},
     f"user: expected {USER_ID}, found 'line\\nbreak' ('\\n' at character 5)"),
    ("app", {"user": "u", "app": "a:b", "epoch": 0}, f"app: expected {APP_ID}, found 'a:b'"),
    ("app", {"user": "u", "app": "", "epoch": 0}, f"app: expected {APP_ID}, found ''"),
    ("app", {"user": "u", "app": 7, "epoch": 0}, f"app: expected {APP_ID}, found 7"),
    ("epoch", {"user": "u", "app": "a", "epoch": -1}, f"epoch: expected {COUNT}, found -1"),
    ("epoch", {"user": "u", "app": "a", "epoch": True}, f"epoch: expected {COUNT}, found True"),
    ("epoch", {"user": "u", "app": "a", "epoch": "0"}, f"epoch: expected {COUNT}, found '0'"),
    ("period", {"user": "u", "app": "a", "epoch": 0, "period": -2}, f"period: expected {COUNT}, found -2"),
    ("period", {"user": "u", "app": "a", "epoch": 0, "period": 1.0}, f"period: expected {COUNT}, found 1.0"),
    ("period", {"user": "u", "app": None, "epoch": 0, "period": 1},  # the per-user scope has none
     "period: expected None for the per-user scope (periods are per application), found 1"),
]  # fmt: skip


@pytest.mark.parametrize(("field", "arguments", "message"), BAD, ids=[f"{f}-{i}" for i, (f, _, _) in enumerate(BAD)])
def test_a_bad_part_is_refused_in_one_line_naming_it(field: str, arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as refused:
        ScopeKey(**arguments)
    assert str(refused.value) == message
    assert refused.value.field == field


@pytest.mark.parametrize(("app", "found"), [(None, "NoneType"), (7, "int"), (b"recipes", "bytes")])
def test_an_application_scope_refuses_an_application_that_is_no_text_naming_its_type(app: object, found: str) -> None:
    with pytest.raises(InputError) as refused:
        ScopeKey.of_app("u", app, 0)  # type: ignore[arg-type]
    assert str(refused.value) == f"app: expected an application id, found {found!r}"
