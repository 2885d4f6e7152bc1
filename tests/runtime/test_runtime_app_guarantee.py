"""The per-application guarantee under a per-user cap, checked EXACTLY (docs/agent.md,
"Budget scopes", Theorem 1 per application scope).

Two applications of one subject: A (fixed strategy) and B (adaptive: the number of its
charged queries depends on the views it received). Vocabulary: the finance slot's two
views (generic `finance-generic`, specific `strict-budget`), charging `debt` with
eps = 1/2. Every EM draw is enumerated (the draws are scripted, each with its exact
probability from the kernel's own description `ExponentialWeights.log_probability`),
once with the memory M and once with its debt-neighbour M' (the debt group emptied), so
the probability of each transcript A observes (views, control, remaining, response) is
an exact sum over B's hidden draws. The checks:

- with precommitted shares (the runtime): A's observation distribution is the SAME
  whatever B's strategy, and for every transcript tau of A, |log P_M(tau)/P_M'(tau)| is at
  most A's own pathwise ledger L_A(tau) <= its share (Theorem 1 for A's scope alone);
- with the dynamic shared per-user cap (the design before shares, modelled below over
  the same stores): A's transcript distribution depends on B's strategy, and a transcript
  after ONE charged release of A (ledger 1/2) has a loss above 1/2: B's adaptive spending
  is written into A's `remaining`, so A's scope is not L_A-DP on its own (a C6 breach).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs
import mpmath
import pytest

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.transcript import TurnRecord
from dpmem_ref.ledger.contract import LedgerSession
from dpmem_ref.ledger.facts import ReleaseOutcome, ReleaseRequest, SessionKey, SessionSnapshot
from dpmem_ref.ledger.fingerprint import interface_fingerprint
from dpmem_ref.ledger.scopes import ScopeKey
from dpmem_ref.mechanism import em
from dpmem_ref.runtime.agent import AgentRuntime
from dpmem_ref.runtime.settings import load_agent_file
from dpmem_ref.turn.durable import DurableSession
from tests.runtime_fixtures import copy_example

BUDGET = "Budget tips please"  # budget-review: the finance slot, charges debt, eps = 1/2
NO_MATCH = "tell me a joke"  # generic views, no charge: A reads its `remaining`
EPS = Fraction(1, 2)
DEBT_ITEMS = ("m3", "m4", "m5")  # the example items at positions of the debt group (4..9)
SHARES = {"A": {"diabetes": Fraction(1), "debt": Fraction(1)}, "B": {"diabetes": Fraction(1), "debt": Fraction(2)}}
USER_CAPS = {"diabetes": Fraction(3), "debt": Fraction(3)}


@attrs.frozen
class SharedCapLedgers:
    """The design before shares (main before this change), kept here as the counter-model:
    admission needs room in the (user, app) scope AND in a per-user ledger that every
    application moves; `load` and `remaining` read L'_a = B_a - min(B_a - L_a, U_a - L^u_a)."""

    scope: ScopeKey
    app: LedgerSession
    user: LedgerSession
    caps: Mapping[str, Fraction]
    user_caps: Mapping[str, Fraction]

    @property
    def key(self) -> SessionKey:
        return self.app.key

    @property
    def share(self) -> Mapping[str, Fraction]:
        return self.caps

    def _effective(self, app: Mapping[str, Fraction], user: Mapping[str, Fraction]) -> dict[str, Fraction]:
        return {a: self.caps[a] - min(self.caps[a] - app[a], self.user_caps[a] - user[a]) for a in app}

    def load(self) -> SessionSnapshot:
        snapshot = self.app.load()
        ledgers = self._effective(snapshot.ledger_map(), self.user.load().ledger_map())
        return attrs.evolve(snapshot, ledgers=tuple(sorted(ledgers.items())))

    def charge_and_record(self, request: ReleaseRequest, also: tuple[SessionKey, ...] = ()) -> ReleaseOutcome:
        outcome = self.app.charge_and_record(request, also=(self.user.key,))
        ledgers = self._effective(dict(outcome.ledgers), dict(outcome.scopes[0]))
        return attrs.evolve(outcome, ledgers=tuple(sorted(ledgers.items())))

    def record_turn(self, turn_id: str, record: TurnRecord) -> None:
        self.app.record_turn(turn_id, record)

    @contextmanager
    def turn_id(self, turn_id: str | None) -> Iterator[None]:
        yield  # the kernel's own turn ids (the strategies here send none)


def _install_shared_cap(runtime: AgentRuntime, user: str, apps: tuple[str, ...]) -> None:
    """Serve `apps` through the dynamic shared per-user cap (the counter-model)."""
    interface = runtime.interface
    store = runtime.ledger_store
    fingerprint = interface_fingerprint(interface)
    user_session = store.open_session(user, ScopeKey.of_user(user, runtime.epoch).interaction, USER_CAPS)
    for app in apps:
        scope = ScopeKey.of_app(user, app, runtime.epoch)
        app_session = store.open_session(user, scope.interaction, interface.caps, fingerprint=fingerprint)
        scoped = SharedCapLedgers(scope, app_session, user_session, interface.caps, USER_CAPS)
        session = DurableSession.on_session(interface, scoped, runtime.memory.store(user), runtime.source, turn_deadline_s=None)
        runtime._sessions[(user, app)] = (scoped, session)  # type: ignore[assignment]  # noqa: SLF001


@contextmanager
def scripted_draws(script: tuple[str, ...], trace: list[tuple[str, tuple[str, ...], Any]]) -> Iterator[None]:
    """Every EM draw takes the next scripted view (then the first of its support), and its
    exact log-probability is recorded: the enumeration drives the real runtime."""
    original = em.ExponentialWeights.sample

    def sample(self: em.ExponentialWeights, source: object) -> str:
        index = len(trace)
        view = script[index] if index < len(script) else self.support()[0]
        trace.append((view, self.support(), self.log_probability(view)))
        return view

    em.ExponentialWeights.sample = sample  # type: ignore[method-assign]
    try:
        yield
    finally:
        em.ExponentialWeights.sample = original  # type: ignore[method-assign]


Strategy = Callable[[AgentRuntime], list[str]]


def _observe(turn: Any) -> str:
    seen = turn.to_json()
    del seen["interaction"]
    return json.dumps(seen, sort_keys=True)


def play(b_rule: str, a_charges: bool = True) -> Strategy:
    """A: a turn, then (after B) a no-match turn reading its `remaining`, then a turn; A's
    turns are charged (budget-review) when `a_charges`, else no-match (A spends nothing).
    B, between them: up to 4 charged turns, continuing while its view is `b_rule`
    ("specific": strict-budget, "generic": finance-generic), or none ("idle")."""
    query = BUDGET if a_charges else NO_MATCH

    def run(runtime: AgentRuntime) -> list[str]:
        seen = [_observe(runtime.turn("alice", "A", "a", query))]
        for n in range(4 if b_rule != "idle" else 0):
            view = runtime.turn("alice", "B", f"b{n}", BUDGET).views["finance"]
            if (view == "strict-budget") != (b_rule == "specific"):
                break
        seen.append(_observe(runtime.turn("alice", "A", "a", NO_MATCH)))
        seen.append(_observe(runtime.turn("alice", "A", "a", query)))
        return seen

    return run


def _memories(tmp_path: Path) -> tuple[Path, Path, Path]:
    agent, memory = copy_example(tmp_path)
    neighbour = tmp_path / "neighbour.jsonl"
    lines = [line for line in memory.read_text().splitlines() if line.strip()]
    neighbour.write_text("".join(line + "\n" for line in lines if json.loads(line)["id"] not in DEBT_ITEMS))
    return agent, memory, neighbour


def transcript_law(
    agent: Path, memory: Path, strategy: Strategy, shared_cap: bool
) -> dict[tuple[str, ...], tuple[Any, Fraction]]:
    """A's observation sequence -> (exact probability, A's own debt ledger) under `memory`,
    summing over every scripted path (B's draws hidden)."""
    loaded = load_agent_file(agent)
    law: dict[tuple[str, ...], tuple[Any, Fraction]] = {}
    pending: list[tuple[str, ...]] = [()]
    while pending:
        script = pending.pop()
        trace: list[tuple[str, tuple[str, ...], Any]] = []
        options: dict[str, Any] = {"user_caps": False} if shared_cap else {"user_caps": USER_CAPS, "shares": SHARES}
        runtime = AgentRuntime.open(loaded, memory=memory, store_url="memory:", seed=0, turn_deadline_s=None, **options)
        try:
            if shared_cap:
                _install_shared_cap(runtime, "alice", ("A", "B"))
            with scripted_draws(script, trace):
                seen = tuple(strategy(runtime))
            spent = runtime._sessions[("alice", "A")][0].app.load().ledger_map()["debt"]  # noqa: SLF001
        finally:
            runtime.close()
        for index in range(len(script), len(trace)):
            taken = tuple(view for view, _, _ in trace[:index])
            pending += [(*taken, other) for other in trace[index][1] if other != trace[index][0]]
        probability = mpmath.exp(mpmath.fsum(log for _, _, log in trace))
        before = law.get(seen)
        if before is not None:
            assert before[1] == spent  # A's ledger is a function of what A observed
            probability += before[0]
        law[seen] = (probability, spent)
    return law


def losses(agent: Path, memory: Path, neighbour: Path, strategy: Strategy, shared_cap: bool) -> list[tuple[Any, Fraction]]:
    """(|log P_M(tau) / P_M'(tau)|, L_A(tau)) for every transcript tau of A."""
    with mpmath.workdps(60):
        law = transcript_law(agent, memory, strategy, shared_cap)
        other = transcript_law(agent, neighbour, strategy, shared_cap)
        assert set(law) == set(other)  # the same support: every view has positive probability
        assert mpmath.fsum(p for p, _ in law.values()) == pytest.approx(1, abs=1e-40)
        return [(abs(mpmath.log(law[tau][0] / other[tau][0])), law[tau][1]) for tau in law]


def _mpf(value: Fraction) -> Any:
    return mpmath.mpf(value.numerator) / value.denominator


def marginal(agent: Path, memory: Path, strategy: Strategy, shared_cap: bool) -> dict[tuple[str, ...], Any]:
    with mpmath.workdps(60):
        return {tau: p for tau, (p, _) in transcript_law(agent, memory, strategy, shared_cap).items()}


@pytest.mark.parametrize("a_charges", [True, False])
def test_with_shares_each_application_is_bounded_by_its_own_ledger(a_charges: bool, tmp_path: Path) -> None:
    agent, memory, neighbour = _memories(tmp_path)
    for rule in ("specific", "generic"):
        found = losses(agent, memory, neighbour, play(rule, a_charges), shared_cap=False)
        for loss, ledger in found:
            assert ledger <= SHARES["A"]["debt"]
            assert loss <= _mpf(ledger) + mpmath.mpf("1e-40")  # Theorem 1 for A's scope alone
        if a_charges:  # the check is live: A's own draws do carry information
            assert len(found) > 1 and any(loss > mpmath.mpf("1e-3") for loss, _ in found)


@pytest.mark.parametrize("a_charges", [True, False])
def test_with_shares_what_a_sees_does_not_depend_on_the_other_application(a_charges: bool, tmp_path: Path) -> None:
    agent, memory, _ = _memories(tmp_path)
    laws = [marginal(agent, memory, play(rule, a_charges), shared_cap=False) for rule in ("specific", "generic", "idle")]
    assert laws[0].keys() == laws[1].keys() == laws[2].keys()
    for tau in laws[0]:
        assert abs(laws[0][tau] - laws[1][tau]) < mpmath.mpf("1e-50")
        assert abs(laws[0][tau] - laws[2][tau]) < mpmath.mpf("1e-50")


def test_the_dynamic_shared_cap_breaks_the_per_application_bound(tmp_path: Path) -> None:
    """The counter-model (the design before shares) fails both checks above: an A that
    spends NOTHING (no-match turns only, ledger 0) learns about the debt attribute from
    its `remaining`, which B's adaptive spending moves; and A's transcript law with a
    charging A depends on B's strategy."""
    agent, memory, neighbour = _memories(tmp_path)
    found = losses(agent, memory, neighbour, play("specific", a_charges=False), shared_cap=True)
    assert all(ledger == 0 for _, ledger in found)
    assert max(loss for loss, _ in found) > mpmath.mpf("0.1")  # loss > 0 = A's own ledger
    laws = [marginal(agent, memory, play(rule), shared_cap=True) for rule in ("specific", "idle")]
    assert laws[0] != laws[1]  # what A observes depends on B's strategy


def test_an_application_without_a_share_is_refused(tmp_path: Path) -> None:
    agent, memory, _ = _memories(tmp_path)
    runtime = AgentRuntime.open(agent, memory=memory, store_url="memory:", seed=0, user_caps=USER_CAPS, shares=SHARES)
    with pytest.raises(InputError, match="declared share") as caught:
        runtime.turn("alice", "C", "i", BUDGET)
    assert "\n" not in str(caught.value)
    runtime.close()


@pytest.mark.parametrize(
    ("shares", "message"),
    [
        ({"A": {"diabetes": 2, "debt": 2}, "B": {"diabetes": 1, "debt": 2}}, "summing to at most the per-user cap"),
        ({"A": {"diabetes": 3, "debt": 1}}, "at most the interface's caps"),
        ({"A": {"diabetes": 1}}, "a share for each of"),
        ({"A": {"diabetes": 1, "debt": 0}}, "debt"),
        ({"bad app": {"diabetes": 1, "debt": 1}}, "scopes.shares"),
        ({}, "at least one application"),
    ],
)
def test_bad_shares_are_refused_in_one_line(shares: dict[str, Any], message: str, tmp_path: Path) -> None:
    agent, memory, _ = _memories(tmp_path)
    with pytest.raises(InputError, match=message) as caught:
        AgentRuntime.open(agent, memory=memory, store_url="memory:", user_caps=USER_CAPS, shares=shares)
    assert "\n" not in str(caught.value)
