"""Budget scopes, exact with Fractions on every ledger backend.

- N interactions of one application never spend more than B_a in total: the ledger of the
  (user, app) scope equals the exact sum of the eps charged by its committed releases,
  whatever the interaction ids, and it reaches B_a exactly (tight), then every charged
  slot falls back.
- Two applications together never exceed the per-user cap U_a: each spends its own
  precommitted share (exactly, tight), and the shares sum to U_a.
- One charge debits every scope in one transaction, or none (C5 per scope).
- Which caps a runtime serves: the file's per-user caps and shares unless `user_caps`
  or `shares` say otherwise, none without a per-user cap, and shares without a per-user
  cap refused in one line.
"""

from __future__ import annotations

import secrets
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.ledger import ReleaseRequest, open_ledger_store
from dpmem_ref.ledger.scopes import ScopeKey
from dpmem_ref.runtime.scopes import ScopedLedgers, durable_turn_id, recorded_turn
from dpmem_ref.runtime.turns import RecordedTurn
from tests.runtime_fixtures import (
    BACKENDS,
    as_fractions,
    charged,
    copy_example,
    ledger_table,
    open_runtime,
    store_url,
)

QUERIES = ["What should I cook for dinner tonight?", "Any advice before my doctor check-up?", "Budget tips please"]
B = Fraction(2)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_interactions_of_one_app_share_the_lifetime_cap(backend: str, tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    url = store_url(backend, tmp_path)
    runtime = open_runtime(agent, memory, url, user_caps=False)
    fallbacks = 0
    for n in range(12):  # 12 interactions x 3 turns: far more than B_a = 2 allows
        if backend != "memory" and n % 4 == 3:  # a restart continues the same scope
            runtime.close()
            runtime = open_runtime(agent, memory, url, user_caps=False, seed=n)
        for query in QUERIES:
            turn = runtime.turn("alice", "recipes", f"chat-{n}", query)
            fallbacks += sum(1 for _, state in turn.control if state == "fallback")
    ledgers = ledger_table(runtime, "alice")[(0, "recipes")]
    assert ledgers == charged(runtime, "alice", "recipes")  # the ledger is the exact sum
    assert all(value <= B for value in ledgers.values())
    assert ledgers == {"diabetes": B, "debt": B}  # tight: the cap is reached exactly
    assert as_fractions(runtime.remaining("alice", "recipes")) == {"diabetes": 0, "debt": 0}
    assert fallbacks > 0
    runtime.close()


def test_two_apps_together_never_exceed_the_user_cap(backend: str, tmp_path: Path) -> None:
    agent, memory = copy_example(tmp_path)
    runtime = open_runtime(agent, memory, store_url(backend, tmp_path))  # user caps 3, shares (the file)
    shares = {"recipes": {"diabetes": B, "debt": Fraction(1)}, "finance": {"diabetes": Fraction(1), "debt": B}}
    for n in range(6):
        for app in ("recipes", "finance"):
            for query in QUERIES:
                runtime.turn("alice", app, f"i{n}", query)
    table = ledger_table(runtime, "alice")
    user, recipes, finance = table[(0, None)], table[(0, "recipes")], table[(0, "finance")]
    assert user == {a: recipes[a] + finance[a] for a in user}  # the per-user total is the sum
    assert recipes == charged(runtime, "alice", "recipes") and finance == charged(runtime, "alice", "finance")
    assert recipes == shares["recipes"] and finance == shares["finance"]  # each tight at its own share
    assert user == {"diabetes": Fraction(3), "debt": Fraction(3)}  # tight at U_a = 3 < 2 B_a
    for app in ("recipes", "finance"):
        assert as_fractions(runtime.remaining("alice", app)) == {"diabetes": 0, "debt": 0}
    # Another user's scopes are untouched.
    assert as_fractions(runtime.remaining("bob", "recipes")) == shares["recipes"]
    with pytest.raises(InputError, match="declared share"):  # no share: refused, nothing opened
        runtime.turn("alice", "bank", "i", QUERIES[0])
    assert (0, "bank") not in ledger_table(runtime, "alice")
    runtime.close()


def _request(eps: Fraction) -> ReleaseRequest:
    return ReleaseRequest(
        release_id=secrets.token_hex(8),
        turn_id=secrets.token_hex(8),
        index=0,
        slot="food",
        view="low-glycemic",
        fallback_view="balanced-meals",
        charge_set=frozenset({"diabetes"}),
        epsilon=eps,
    )


def test_a_charge_debits_every_scope_or_none(backend: str, tmp_path: Path) -> None:
    ledger_store = open_ledger_store(store_url(backend, tmp_path))
    app = ledger_store.open_session("u", "e0:app:a", {"diabetes": Fraction(2)})
    user = ledger_store.open_session("u", "e0:user", {"diabetes": Fraction(1)})
    first = app.charge_and_record(_request(Fraction(2, 3)), also=(user.key,))
    assert first.admitted and first.ledger_map() == {"diabetes": Fraction(2, 3)}
    assert dict(first.scopes[0]) == {"diabetes": Fraction(2, 3)}
    second = app.charge_and_record(_request(Fraction(2, 3)), also=(user.key,))  # 4/3 > U = 1
    assert not second.admitted and second.view == "balanced-meals"
    assert app.load().ledger_map() == user.load().ledger_map() == {"diabetes": Fraction(2, 3)}
    third = app.charge_and_record(_request(Fraction(1, 3)), also=(user.key,))  # exactly U = 1: tight
    assert third.admitted and user.load().ledger_map() == {"diabetes": Fraction(1)}
    with pytest.raises(InputError, match="also"):
        app.charge_and_record(_request(Fraction(1, 3)), also=(app.key,))
    ledger_store.close()


CAPS = {"diabetes": B, "debt": B}
SHARE = {"diabetes": Fraction(1), "debt": Fraction(1)}


def test_a_scope_reads_its_own_session_only() -> None:
    """A scope's ledgers are the stored session of that scope, and a charge debits that
    scope alone: another scope's session, or extra scopes to debit, are refused."""
    ledger_store = open_ledger_store("memory:")
    recipes, finance = ScopeKey.of_app("alice", "recipes", 0), ScopeKey.of_app("alice", "finance", 0)
    other = ledger_store.open_session("alice", finance.interaction, SHARE)
    with pytest.raises(InputError) as refused:
        ScopedLedgers(recipes, other, CAPS, SHARE)
    assert str(refused.value) == "app: expected the session of scope e0:app:recipes, found 'e0:app:finance'"
    scoped = ScopedLedgers(recipes, ledger_store.open_session("alice", recipes.interaction, SHARE), CAPS, SHARE)
    with pytest.raises(InputError) as refused:
        scoped.charge_and_record(_request(Fraction(1, 2)), also=(other.key,))
    message = "also: expected no extra scopes (a scope's admissions read its own ledger only), found 1"
    assert str(refused.value) == message
    assert scoped.spent() == other.load().ledger_map() == {"diabetes": 0, "debt": 0}  # nothing charged
    ledger_store.close()


def test_a_turn_is_recorded_once_its_record_follows_its_rows() -> None:
    """A retry finds a turn by its durable id only when its record is committed after its
    release rows; rows without a record (the process stopped in between) are no recorded turn."""
    ledger_store = open_ledger_store("memory:")
    scope = ScopeKey.of_app("alice", "recipes", 0)
    scoped = ScopedLedgers(scope, ledger_store.open_session("alice", scope.interaction, SHARE), CAPS, SHARE)
    first, second = durable_turn_id(scope, "t-1"), durable_turn_id(scope, "t-2")
    with scoped.turn_id(first):
        request = _request(Fraction(1, 2))
        scoped.charge_and_record(request)
        charges = (("food", frozenset({"diabetes"}), Fraction(1, 2)),)
        record = TurnRecord("affordable-dinner", (("food", "low-glycemic"),), ("admit",), "", (True,), charges)
        scoped.record_turn(request.turn_id, record)
    with scoped.turn_id(second):
        scoped.charge_and_record(_request(Fraction(1, 4)))  # no record follows
    snapshot = scoped.load()
    assert len(snapshot.history) == 1 and len(snapshot.releases) == 2
    expected = RecordedTurn(
        query="dinner?", route="affordable-dinner", released=(("food", "low-glycemic"),), control=["admit"]
    )
    assert recorded_turn(snapshot, first, "dinner?") == expected
    assert recorded_turn(snapshot, second, "dinner?") is None
    assert recorded_turn(snapshot, durable_turn_id(scope, "t-3"), "dinner?") is None
    ledger_store.close()


def test_interface_change_carries_or_refuses_on_every_backend(backend: str, tmp_path: Path) -> None:
    """The store primitives behind interface evolution (rebind, meta rows, carried caps)."""
    if backend == "memory":
        pytest.skip("an in-process store does not outlive its runtime")
    agent, memory = copy_example(tmp_path)
    url = store_url(backend, tmp_path)
    runtime = open_runtime(agent, memory, url)
    for query in QUERIES:
        runtime.turn("alice", "recipes", "i", query)
    spent = ledger_table(runtime, "alice")
    runtime.close()
    interface = tmp_path / "interface.toml"
    original = interface.read_text()
    interface.write_text(
        original.replace("group = [1, 2, 3, 4, 5, 6]\ncap = 2", 'group = [1, 2, 3, 4, 5, 6]\ncap = "3/2"')
    )
    with pytest.raises(InputError, match="at most the interface's caps"):  # recipes' share is 2 > 3/2
        open_runtime(agent, memory, url)
    agent.write_text(agent.read_text().replace("recipes = { diabetes = 2,", 'recipes = { diabetes = "3/2",'))
    runtime = open_runtime(agent, memory, url)  # cap and share lowered: safe, carried over
    assert ledger_table(runtime, "alice") == spent and runtime.epochs()[-1]["reason"] == "carried over"
    caps = {row["scope"]["app"]: row["caps"] for row in runtime.ledgers("alice")}
    assert caps["recipes"]["diabetes"] == "3/2" and caps[None]["diabetes"] == "3/1"
    assert {c["kind"] for c in runtime.epochs()[-1]["changes"]} == {"cap-lowered", "share-lowered"}
    runtime.close()
    interface.write_text(original.replace("group = [1, 2, 3, 4, 5, 6]\ncap = 2", "group = [1, 2, 3, 4, 5, 6]\ncap = 3"))
    with pytest.raises(InputError, match="cap-raised"):
        open_runtime(agent, memory, url)
    runtime = open_runtime(agent, memory, url, new_epoch="raise the diabetes cap")
    apps = {k: v for k, v in spent.items() if k[1] is not None}
    assert runtime.epoch == 1 and ledger_table(runtime, "alice") == apps  # epoch 0's scopes kept as recorded
    runtime.close()


USER_CAPS_LINE = "user_caps = { diabetes = 3, debt = 3 }\n"
SHARES_TABLE = "[scopes.shares]\nrecipes = { diabetes = 2, debt = 1 }\nfinance = { diabetes = 1, debt = 2 }\n"
FILE_CAPS = {"diabetes": Fraction(3), "debt": Fraction(3)}
FILE_SHARES = {"recipes": {"diabetes": B, "debt": Fraction(1)}, "finance": {"diabetes": Fraction(1), "debt": B}}
INTERFACE_CAPS = {"diabetes": B, "debt": B}
NO_CAP = "scopes.shares: expected shares of a per-user cap (scopes.user_caps), found 'no per-user cap'"


@pytest.mark.parametrize(
    ("scopes", "options", "served"),
    [
        ("caps and shares", {}, (FILE_CAPS, FILE_SHARES)),
        ("caps and shares", {"user_caps": True}, (FILE_CAPS, FILE_SHARES)),
        ("caps and shares", {"user_caps": False}, (None, None)),
        ("caps and shares", {"user_caps": False, "shares": {"recipes": {"debt": 1}}}, NO_CAP),
        ("caps and shares", {"user_caps": {"diabetes": 4, "debt": 4}}, ({"diabetes": 4, "debt": 4}, FILE_SHARES)),
        ("none", {}, (None, None)),
        ("none", {"user_caps": True}, (None, None)),
        ("none", {"user_caps": False}, (None, None)),
        ("none", {"shares": {"recipes": {"debt": 1}}}, NO_CAP),
        ("shares only", {}, NO_CAP),
        ("shares only", {"user_caps": True}, NO_CAP),
        ("shares only", {"user_caps": False}, (None, None)),
    ],
)
def test_open_serves_the_caps_it_is_given(
    scopes: str, options: dict[str, object], served: object, tmp_path: Path
) -> None:
    """(user caps, shares) served, or the one-line refusal: without a per-user cap every
    application's scope has the interface's caps B_a, and shares (the file's or given)
    are refused, unless `user_caps=False` drops the file's per-user cap and shares both."""
    agent, memory = copy_example(tmp_path)
    text = agent.read_text()
    assert USER_CAPS_LINE in text and SHARES_TABLE in text
    if scopes != "caps and shares":
        text = text.replace(USER_CAPS_LINE, "")
    if scopes == "none":
        text = text.replace(SHARES_TABLE, "")
    agent.write_text(text)
    url = f"sqlite:///{tmp_path / 'l.db'}"
    if isinstance(served, str):
        with pytest.raises(InputError) as caught:
            open_runtime(agent, memory, url, **options)
        assert str(caught.value) == served
        assert not (tmp_path / "l.db").exists()  # refused before the ledger database was touched
        return
    runtime = open_runtime(agent, memory, url, **options)
    assert (runtime.user_caps, runtime.shares) == served
    room = as_fractions(runtime.remaining("alice", "recipes"))
    assert room == (INTERFACE_CAPS if runtime.shares is None else FILE_SHARES["recipes"])
    runtime.close()


_QUERY = st.sampled_from([*QUERIES, "Plan my weeknight evenings", "tell me a joke"])


@settings(max_examples=25)
@given(
    turns=st.lists(st.tuples(st.sampled_from(["a1", "a2", "a3"]), st.sampled_from(["x", "y"]), _QUERY), max_size=40),
    user_cap=st.sampled_from([Fraction(1), Fraction(5, 2), Fraction(3), Fraction(6)]),
    seed=st.integers(0, 2**16),
)
def test_property_every_scope_within_its_cap(
    turns: list[tuple[str, str, str]], user_cap: Fraction, seed: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Any sequence of turns of several applications and interactions: every scope's
    ledger equals the exact sum of its charges and stays within its cap; the per-user
    ledger is the sum over the applications and stays within U_a."""
    folder = tmp_path_factory.mktemp("prop")
    agent, memory = copy_example(folder)
    caps = {"diabetes": user_cap, "debt": user_cap}
    share = {a: min(B, cap / 3) for a, cap in caps.items()}  # three applications, equal shares
    shares = {app: share for app in ("a1", "a2", "a3")}
    runtime = open_runtime(agent, memory, "memory:", user_caps=caps, shares=shares, seed=seed)
    for app, interaction, query in turns:
        turn = runtime.turn("alice", app, interaction, query)
        assert all(Fraction(v) >= 0 for v in turn.remaining.values())
    table = ledger_table(runtime, "alice")
    apps = {app for app, _, _ in turns}
    for app in apps:
        assert table[(0, app)] == charged(runtime, "alice", app)
        assert all(table[(0, app)][a] <= share[a] for a in share)
    if apps:
        user = table[(0, None)]
        assert user == {a: sum((table[(0, app)][a] for app in apps), Fraction(0)) for a in user}
        assert all(value <= user_cap for value in user.values())
    runtime.close()


def test_runtime_databases_verify(backend: str, tmp_path: Path) -> None:
    """The tamper-evident chain records charges and rebinds: a database the
    runtime wrote (two apps with shares, a carried-over interface change and a new
    epoch) passes `dpmem ledger verify`'s replay."""
    if backend == "memory":
        pytest.skip("no chain in an in-process store")
    from dpmem_ref.ledger.backup import verify_sqlite
    from dpmem_ref.ledger.postgres.verify import verify_postgres

    agent, memory = copy_example(tmp_path)
    url = store_url(backend, tmp_path)
    runtime = open_runtime(agent, memory, url)
    for app in ("recipes", "finance"):
        for query in QUERIES * 2:
            runtime.turn("alice", app, "i", query)
    runtime.close()
    interface = tmp_path / "interface.toml"
    original = interface.read_text()
    interface.write_text(original.replace("K = 4", "K = 5"))  # safe: carried over
    runtime = open_runtime(agent, memory, url)
    runtime.turn("alice", "recipes", "j", QUERIES[0])
    runtime.close()
    interface.write_text(original.replace("K = 4", "K = 5").replace("cap = 2", "cap = 3", 1))  # unsafe
    runtime = open_runtime(agent, memory, url, new_epoch="a bigger cap")
    runtime.turn("alice", "recipes", "k", QUERIES[0])
    runtime.close()
    report = verify_sqlite(tmp_path / "ledgers.db") if backend == "sqlite" else verify_postgres(url)
    assert report.problem is None, report.problem
