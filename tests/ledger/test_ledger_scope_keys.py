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


BAD: list[tuple[str, dict[str, Any]]] = [
    ("user", {"user": "", "app": "a", "epoch": 0}),
    ("user", {"user": "line\nbreak", "app": "a", "epoch": 0}),
    ("app", {"user": "u", "app": "a:b", "epoch": 0}),
    ("app", {"user": "u", "app": "", "epoch": 0}),
    ("app", {"user": "u", "app": 7, "epoch": 0}),
    ("epoch", {"user": "u", "app": "a", "epoch": -1}),
    ("epoch", {"user": "u", "app": "a", "epoch": True}),
    ("epoch", {"user": "u", "app": "a", "epoch": "0"}),
    ("period", {"user": "u", "app": "a", "epoch": 0, "period": -2}),
    ("period", {"user": "u", "app": "a", "epoch": 0, "period": 1.0}),
    ("period", {"user": "u", "app": None, "epoch": 0, "period": 1}),  # the per-user scope has none
]


@pytest.mark.parametrize(("field", "arguments"), BAD, ids=[f"{f}-{i}" for i, (f, _) in enumerate(BAD)])
def test_a_bad_part_is_refused_naming_it(field: str, arguments: dict[str, Any]) -> None:
    with pytest.raises(InputError) as refused:
        ScopeKey(**arguments)
    assert str(refused.value).startswith(f"{field}:")


def test_an_application_scope_names_its_application() -> None:
    with pytest.raises(InputError, match="^app:"):
        ScopeKey.of_app("u", None, 0)  # type: ignore[arg-type]
