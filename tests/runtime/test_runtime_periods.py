"""Budget periods in the runtime: each (subject, application) scope has fresh ledgers per
public calendar period, never within one; the period index is a function of the injected
clock and the origin recorded at first binding only (never of memory or of the ledgers);
the origin survives restarts; and the guarantee composed over the k periods elapsed is
printed as k x share (k x U_a), exactly, through the kernel's ComposedGuarantee."""

from __future__ import annotations

import inspect
import json
import math
import re
import sqlite3
import subprocess
import sys
from collections import defaultdict
from fractions import Fraction
from pathlib import Path

import pytest

from dpmem_ref.config.load import load_interface_file
from dpmem_ref.core.errors import InputError
from dpmem_ref.ledger.contract import LedgerStoreError
from dpmem_ref.ledger.epochs import EPOCHS_KEY, bind, epoch_guarantee
from dpmem_ref.ledger.periods import epoch_ends, epoch_origins, period_index, read_clock
from dpmem_ref.ledger.urls import open_ledger_store
from dpmem_ref.parts.period import CAVEAT, BudgetPeriod, ComposedGuarantee
from dpmem_ref.runtime.agent import AgentRuntime
from dpmem_ref.runtime.settings import load_agent_file
from tests.runtime_fixtures import ROOT, copy_example, open_runtime

DAY = 86_400
P = 30 * DAY  # the period below: "30 days"
T0 = 1_700_000_000.75  # the first binding's clock time; the origin is floor(T0)
ORIGIN = math.floor(T0)
DINNER = "What should I cook for dinner tonight?"
QUERIES = [DINNER, "Budget tips please", "Any advice before my doctor check-up?"]
SHARES = {
    "recipes": {"diabetes": Fraction(2), "debt": Fraction(1)},
    "finance": {"diabetes": Fraction(1), "debt": Fraction(2)},
}
USER_CAPS = {"diabetes": Fraction(3), "debt": Fraction(3)}
# The SQL check below parses the interaction ids itself (no runtime code).
PERIOD_SCOPE = re.compile(r"^e(0|[1-9][0-9]*):p(0|[1-9][0-9]*):app:([A-Za-z0-9][A-Za-z0-9._-]*)$")


class FakeClock:
    """A public clock the test moves by hand (seconds since the epoch, like time.time)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _with_period(tmp_path: Path, period: str | None = "30 days") -> tuple[Path, Path]:
    agent, memory = copy_example(tmp_path)
    if period is not None:
        interface = tmp_path / "interface.toml"
        text = interface.read_text()
        assert "K = 4\n" in text
        interface.write_text(text.replace("K = 4\n", f'K = 4\nperiod = "{period}"\n', 1))
    return agent, memory


def _open(tmp_path: Path, clock: FakeClock, **options: object) -> AgentRuntime:
    agent, memory = tmp_path / "assistant.toml", tmp_path / "memory.jsonl"
    return open_runtime(agent, memory, f"sqlite:///{tmp_path / 'ledgers.db'}", clock=clock, **options)


def _room(runtime: AgentRuntime, app: str = "recipes") -> dict[str, Fraction]:
    return {a: Fraction(v) for a, v in runtime.remaining("alice", app).items()}


def _spend(
    runtime: AgentRuntime, clock: FakeClock, turns: int, step: float, app: str = "recipes"
) -> list[dict[str, Fraction]]:
    """`turns` rounds of the three queries, the clock moving `step` seconds before each
    round; the room after each turn."""
    rooms = []
    for n in range(turns):
        clock.now += step
        for query in QUERIES:
            turn = runtime.turn("alice", app, f"i{n}", query)
            rooms.append({a: Fraction(v) for a, v in turn.remaining.items()})
    return rooms


def test_each_period_has_fresh_budget_and_never_within_one(tmp_path: Path) -> None:
    _with_period(tmp_path)
    clock = FakeClock(T0)
    runtime = _open(tmp_path, clock)
    share = SHARES["recipes"]
    start = _room(runtime)
    assert start == share  # the room of a fresh scope: its share
    # Period 0: ten turns spread over the whole period (the last one second before its end).
    rooms = _spend(runtime, clock, 9, (P - 2) / 9)
    clock.now = ORIGIN + P - 1
    rooms += _spend(runtime, clock, 1, 0)
    assert runtime.period() == 0
    spent = {a: start[a] - rooms[-1][a] for a in start}
    assert spent == share  # the share is reached exactly, within the period...
    assert all(
        rooms[k][a] <= rooms[k - 1][a] for k in range(1, len(rooms)) for a in start
    )  # ...and never renewed in it
    assert all(spent[a] <= share[a] for a in share)
    # The boundary is origin + P, exactly: fresh ledgers from there, whatever was spent.
    clock.now = ORIGIN + P - 0.25
    assert runtime.period() == 0 and _room(runtime) == rooms[-1]
    clock.now = ORIGIN + P
    assert runtime.period() == 1 and _room(runtime) == start
    rooms = _spend(runtime, clock, 9, DAY)
    assert {a: start[a] - rooms[-1][a] for a in start} == share
    clock.now = ORIGIN + 2 * P + DAY  # period 2: fresh again
    assert runtime.period() == 2 and _room(runtime) == start
    runtime.close()


def test_origin_is_fixed_at_first_bind_and_survives_restarts(tmp_path: Path) -> None:
    _with_period(tmp_path)
    clock = FakeClock(T0)
    runtime = _open(tmp_path, clock)
    assert runtime.period_origin == ORIGIN and runtime.period() == 0
    spent = _spend(runtime, clock, 3, DAY)[-1]
    runtime.close()
    for later in (T0 + 2 * DAY, T0 + 3 * P + 5, T0 + 7 * P):  # restarts at later times
        clock = FakeClock(later)
        runtime = _open(tmp_path, clock)
        assert runtime.period_origin == ORIGIN  # recorded once; a restart never moves it
        assert runtime.period() == (later - ORIGIN) // P
        if runtime.period() == 0:
            assert _room(runtime) == spent  # the same period's ledger: no fresh budget on restart
        runtime.close()
    # The origin is in the binding log (an epoch entry), not a function of the restart's time.
    with sqlite3.connect(tmp_path / "ledgers.db") as connection:
        (log,) = connection.execute("SELECT value FROM meta WHERE key = 'runtime.epochs'").fetchone()
    connection.close()
    assert f'"origin":{ORIGIN}' in log and '"period":"30 days"' in log


def test_only_a_new_recorded_epoch_starts_another_origin(tmp_path: Path) -> None:
    _with_period(tmp_path)
    clock = FakeClock(T0)
    _open(tmp_path, clock).close()
    clock.now = T0 + P + 10 * DAY
    runtime = _open(tmp_path, clock, new_epoch="renew on purpose", fresh_budget=True)
    assert runtime.epoch == 1 and runtime.period_origin == math.floor(clock.now) and runtime.period() == 0
    report = runtime.guarantee()
    # Epoch 0 lived 2 periods (up to epoch 1's logged start), epoch 1 one so far: 3 x B_a in all.
    assert report["periods_per_epoch"] == {"0": 2, "1": 1}
    for a, cap in runtime.interface.caps.items():
        assert Fraction(report["per_application"][a]) == 3 * cap
        assert Fraction(report["per_user"][a]) == 3 * USER_CAPS[a]
    runtime.close()


@pytest.mark.parametrize("periods", [1, 2, 5])
def test_the_composed_guarantee_is_k_times_the_share_exactly(periods: int, tmp_path: Path) -> None:
    _with_period(tmp_path)
    clock = FakeClock(T0)
    runtime = _open(tmp_path, clock)
    runtime.turn("alice", "recipes", "i", DINNER)
    clock.now = ORIGIN + (periods - 1) * P + 12 * DAY  # inside period k - 1: k periods elapsed
    runtime.turn("alice", "recipes", "i", DINNER)
    report = runtime.guarantee()
    current = report["current_epoch"]
    period = BudgetPeriod.parse("30 days")
    assert current["periods"] == periods and current["period_index"] == periods - 1 and current["period"] == "30 days"
    for app, share in SHARES.items():
        for a, cap in share.items():
            assert (
                Fraction(current["per_share"][app][a])
                == periods * cap
                == ComposedGuarantee(periods, period, cap).composed
            )
            assert any(
                line.startswith(f"application {app}, {a}: ")
                and ComposedGuarantee(periods, period, cap).line(f"share({app}, {a})") in line
                for line in current["lines"]
            )
    for a, cap in USER_CAPS.items():
        assert Fraction(current["per_user"][a]) == periods * cap == Fraction(report["per_user"][a])
    for a, cap in runtime.interface.caps.items():
        assert Fraction(current["per_application"][a]) == periods * cap == Fraction(report["per_application"][a])
    assert report["caveat"] == CAVEAT and all(line.endswith(f"({CAVEAT})") for line in current["lines"])
    # The owner's listing: the current period's scope carries k x share, the per-user row k x U_a.
    rows = runtime.ledgers("alice")
    (mine,) = [r for r in rows if r["scope"]["app"] == "recipes" and r["scope"].get("period") == periods - 1]
    assert {a: Fraction(v) for a, v in mine["scope"]["over_periods"]["composed"].items()} == {
        a: periods * c for a, c in SHARES["recipes"].items()
    }
    assert mine["scope"]["over_periods"]["caveat"] == CAVEAT
    (total,) = [r for r in rows if r["scope"]["app"] is None]
    assert total["scope"]["period"] == periods - 1 and total["scope"]["over_epochs"] == report
    runtime.close()


def test_sql_sums_per_period_stay_within_the_share(tmp_path: Path) -> None:
    """An independent check straight from the database: per (subject, application, period),
    the committed charges (summed exactly from the release rows) are within the share; over
    the periods they exceed one share (fresh budget per period) and stay within k x share."""
    _with_period(tmp_path)
    clock = FakeClock(T0)
    runtime = _open(tmp_path, clock)
    for k in range(3):
        for n in range(6):
            clock.now = ORIGIN + k * P + n * 4 * DAY + 1
            for user in ("alice", "bob"):
                for app in SHARES:
                    for q, query in enumerate(QUERIES):
                        runtime.turn(user, app, f"i{k}", query, turn_id=f"t{k}-{n}-{q}")
    runtime.close()
    with sqlite3.connect(tmp_path / "ledgers.db") as connection:
        rows = connection.execute(
            "SELECT user, interaction, charge_set, epsilon FROM releases WHERE admitted = 1"
        ).fetchall()
    connection.close()
    per_period: dict[tuple[str, str, int], dict[str, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
    for user, interaction, charge_set, epsilon in rows:
        match = PERIOD_SCOPE.fullmatch(str(interaction))
        assert match is not None, "every runtime release row is in a period's scope"
        for attribute in re.findall(r"[A-Za-z0-9_.-]+", str(charge_set)):
            per_period[(str(user), match.group(3), int(match.group(2)))][attribute] += Fraction(str(epsilon))
    assert {k for (_, _, k) in per_period} == {0, 1, 2}
    lifetime: dict[tuple[str, str], dict[str, Fraction]] = defaultdict(lambda: defaultdict(Fraction))
    for (user, app, _), spent in per_period.items():
        for a, v in spent.items():
            assert v <= SHARES[app][a], (user, app, a, v)
            lifetime[(user, app)][a] += v
    for (_, app), spent in lifetime.items():
        for a, v in spent.items():
            assert v <= 3 * SHARES[app][a]
    assert any(v > SHARES[app][a] for (_, app), spent in lifetime.items() for a, v in spent.items())


def test_the_period_is_a_function_of_the_clock_only(tmp_path: Path) -> None:
    """The index's inputs are the recorded origin, the clock's time and the declared period:
    spending a scope to exhaustion, or changing the memory, moves no boundary (an early reset
    when the budget runs out would be a data-dependent reset)."""
    assert list(inspect.signature(period_index).parameters) == ["origin", "now", "period"]
    _with_period(tmp_path)
    clock = FakeClock(T0 + 3 * DAY)
    runtime = _open(tmp_path, clock)
    before = runtime.period()
    _spend(runtime, clock, 12, 0)  # far past the share: the ledger is exhausted
    assert _room(runtime) == {"diabetes": 0, "debt": 0}
    item = runtime.add_memory("alice", "health", "metformin twice a day, blood sugar checks")
    runtime.delete_memory("alice", item)
    assert runtime.period() == before == 0
    origin = runtime.period_origin
    assert origin == math.floor(T0 + 3 * DAY)  # the first binding's time
    clock.now = origin + P - 1
    assert runtime.period() == 0 and _room(runtime) == {"diabetes": 0, "debt": 0}  # exhausted: still period 0
    clock.now = origin + P
    assert runtime.period() == 1
    runtime.close()
    # A runtime over another ledger and memory, same origin and clock: the same period.
    other = tmp_path / "other"
    other.mkdir()
    _with_period(other)
    twin = _open(other, FakeClock(T0))
    twin.clock = clock
    assert twin.period_origin == ORIGIN
    assert twin.period() == period_index(ORIGIN, Fraction(clock.now), BudgetPeriod.parse("30 days")) == 1
    twin.close()


@pytest.mark.parametrize(("first", "second"), [(None, "30 days"), ("30 days", "7 days"), ("30 days", None)])
def test_a_period_change_needs_a_new_epoch(first: str | None, second: str | None, tmp_path: Path) -> None:
    _with_period(tmp_path, first)
    clock = FakeClock(T0)
    runtime = _open(tmp_path, clock)
    runtime.turn("alice", "recipes", "i", DINNER)
    runtime.close()
    _with_period(tmp_path, second)  # the interface file rewritten with another period
    with pytest.raises(InputError) as caught:
        _open(tmp_path, clock)
    assert "budget-period-changed" in str(caught.value) and "\n" not in str(caught.value)
    clock.now = T0 + P + DAY  # epoch 0 ends in its second period (if it had one)
    runtime = _open(tmp_path, clock, new_epoch="renew the caps per period")
    assert runtime.epoch == 1
    assert runtime.period_origin == (None if second is None else math.floor(clock.now))
    # The total over epochs and periods: epoch 0 counts 2 periods with a period, else 1;
    # epoch 1 counts 1 (its first period, or its lifetime caps).
    report = runtime.guarantee()
    first_epoch = 1 if first is None else 2
    for a, cap in runtime.interface.caps.items():
        assert Fraction(report["per_application"][a]) == (first_epoch + 1) * cap
    assert ("current_epoch" in report) == (second is not None)
    runtime.close()


CLOCK_RULE = "clock: expected a finite, non-negative time in seconds (time.time), found {found}"
SET_BACK = "clock: expected a time at or after the recorded period origin, found 'an earlier time'"
# An unusable clock value and the `found` of its refusal: never a time, whatever the origin.
UNUSABLE_CLOCKS = [
    (-1.0, "-1.0"),
    (-1, "-1"),
    (-0.25, "-0.25"),
    (float("nan"), "nan"),
    (float("inf"), "inf"),
    (float("-inf"), "-inf"),
    ("now", "'str'"),
    (True, "True"),
    (None, "None"),
]


@pytest.mark.parametrize(
    ("value", "line"),
    [(T0 - 1, SET_BACK), *((value, CLOCK_RULE.format(found=found)) for value, found in UNUSABLE_CLOCKS)],
)
def test_an_unusable_clock_is_refused_in_one_line(value: object, line: str, tmp_path: Path) -> None:
    """At a turn, a clock that is no time is refused as such, before any period is computed;
    a real time before the origin is a clock set back."""
    _with_period(tmp_path)
    clock = FakeClock(T0)
    runtime = _open(tmp_path, clock)
    clock.now = value  # type: ignore[assignment]
    with pytest.raises(InputError) as caught:
        runtime.turn("alice", "recipes", "i", DINNER)
    assert str(caught.value) == line and caught.value.field == "clock"
    runtime.close()


@pytest.mark.parametrize(("value", "found"), UNUSABLE_CLOCKS)
@pytest.mark.parametrize("period", ["30 days", None])
def test_an_unusable_clock_is_refused_at_open_in_its_line(
    value: object, found: str, period: str | None, tmp_path: Path
) -> None:
    """`open` reads the clock to bind the epoch, with or without a declared period: a clock
    that is no finite, non-negative time is refused there, in the one line naming the clock."""
    _with_period(tmp_path, period)
    with pytest.raises(InputError) as caught:
        _open(tmp_path, FakeClock(value))  # type: ignore[arg-type]
    assert str(caught.value) == CLOCK_RULE.format(found=found)
    assert caught.value.field == "clock"


@pytest.mark.parametrize(
    ("value", "exact"),
    [
        (0, Fraction(0)),
        (-0.0, Fraction(0)),
        (0.5, Fraction(1, 2)),
        (0.75, Fraction(3, 4)),
        (T0, Fraction(6_800_000_003, 4)),
        (ORIGIN, Fraction(ORIGIN)),
    ],
)
def test_the_clock_is_read_as_its_exact_time(value: float, exact: Fraction, tmp_path: Path) -> None:
    """Any finite time from zero on is read exactly (a float's own binary value, no
    rounding): the epoch's origin is its whole second and the turn's period follows."""
    assert read_clock(FakeClock(value)) == exact and type(read_clock(FakeClock(value))) is Fraction
    _with_period(tmp_path)
    runtime = _open(tmp_path, FakeClock(value))
    assert runtime.period_origin == math.floor(exact) and runtime.period() == 0
    runtime.close()


def test_a_clock_set_back_before_the_origin_is_refused_in_its_line(tmp_path: Path) -> None:
    _with_period(tmp_path)
    clock = FakeClock(T0)
    runtime = _open(tmp_path, clock)
    clock.now = ORIGIN - 1
    with pytest.raises(InputError) as caught:
        runtime.turn("alice", "recipes", "i", DINNER)
    assert str(caught.value) == "clock: expected a time at or after the recorded period origin, found 'an earlier time'"
    runtime.close()


ORIGIN_RULE = "budget.period: expected a recorded period origin exactly when the interface declares a period"


@pytest.mark.parametrize(("period", "origin"), [(None, ORIGIN), ("30 days", None)])
def test_a_runtime_built_with_a_mismatched_period_origin_is_refused_in_its_line(
    period: str | None, origin: int | None, tmp_path: Path
) -> None:
    """The constructor takes the origin `open` read from the binding log: one is required
    exactly when the interface declares a period (none without one)."""
    _with_period(tmp_path, period)
    opened = _open(tmp_path, FakeClock(T0))
    with pytest.raises(InputError) as caught:
        AgentRuntime(
            *(opened.agent, opened.memory, opened.ledger_store, opened.channel, opened.source, opened.router),
            *(opened.user_caps, opened.epoch, None, opened.shares, opened.clock, origin),
        )
    assert str(caught.value) == f"{ORIGIN_RULE}, found {origin!r}"
    assert (caught.value.field, caught.value.found) == ("budget.period", origin)
    opened.close()


def test_an_origin_recorded_for_another_period_is_refused_at_open_in_its_line(tmp_path: Path) -> None:
    """The epoch's origin counts periods of the length it was recorded with: a log whose
    origin names another period than the interface's (only an edit of the log can write
    one: a period change needs a new epoch) is refused when the runtime opens."""
    _with_period(tmp_path)
    _open(tmp_path, FakeClock(T0)).close()
    ledger_store = open_ledger_store(f"sqlite:///{tmp_path / 'ledgers.db'}")
    log = json.loads(ledger_store.read_meta(EPOCHS_KEY) or "null")
    assert [(entry["epoch"], entry["period"], entry["origin"]) for entry in log] == [(0, "30 days", ORIGIN)]
    log[0]["period"] = "7 days"
    fingerprint = ledger_store.fingerprint
    assert fingerprint is not None
    ledger_store.rebind(fingerprint, fingerprint, {EPOCHS_KEY: json.dumps(log)})  # the log edited, nothing else
    ledger_store.close()
    with pytest.raises(InputError) as caught:
        _open(tmp_path, FakeClock(T0))
    assert str(caught.value) == "budget.period: expected the period epoch 0 recorded (7 days), found '30 days'"
    assert (caught.value.field, caught.value.found) == ("budget.period", "30 days")


def test_the_origin_itself_is_in_the_first_period(tmp_path: Path) -> None:
    """The first period covers [origin, origin + P): a clock on a whole second binds the
    origin at that very time, and a turn then is served in period 0."""
    assert period_index(ORIGIN, Fraction(ORIGIN), BudgetPeriod.parse("30 days")) == 0
    _with_period(tmp_path)
    clock = FakeClock(float(ORIGIN))
    runtime = _open(tmp_path, clock)
    assert runtime.period_origin == ORIGIN and runtime.period() == 0
    runtime.turn("alice", "recipes", "i", DINNER)
    assert runtime.period() == 0 and _room(runtime) != SHARES["recipes"]
    runtime.close()


def test_chat_prints_the_guarantee_composed_over_the_periods(tmp_path: Path) -> None:
    agent, memory = _with_period(tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dpmem_ref.cli",
            "chat",
            str(agent),
            "--memory",
            str(memory),
            "--user",
            "alice",
            "--app",
            "recipes",
            "--ephemeral",
            "--seed",
            "0",
        ],
        input=DINNER + "\n",
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "budget period 0 of 30 days" in done.stderr
    period = BudgetPeriod.parse("30 days")
    for a, cap in SHARES["recipes"].items():
        assert ComposedGuarantee(1, period, cap).line(f"share(recipes, {a})") in done.stderr
    for a, cap in USER_CAPS.items():
        assert ComposedGuarantee(1, period, cap).line(f"U_{a}") in done.stderr
    assert "share(finance" not in done.stderr  # the other application's share is not this chat's


def test_an_edited_origin_is_refused_not_served(tmp_path: Path) -> None:
    """Moving the recorded origin back one period would hand every scope a fresh period:
    the edited binding log is refused when the runtime opens (the meta rows are bound into
    the ledger's chain), in one line, and nothing is served."""
    _with_period(tmp_path)
    clock = FakeClock(T0)
    runtime = _open(tmp_path, clock)
    _spend(runtime, clock, 6, 0)
    runtime.close()
    database = tmp_path / "ledgers.db"
    with sqlite3.connect(database) as connection:
        (log,) = connection.execute("SELECT value FROM meta WHERE key = 'runtime.epochs'").fetchone()
        edited = str(log).replace(f'"origin":{ORIGIN}', f'"origin":{ORIGIN - P}')
        assert edited != log
        connection.execute("UPDATE meta SET value = ? WHERE key = 'runtime.epochs'", (edited,))
    connection.close()
    with pytest.raises((InputError, LedgerStoreError)) as caught:
        _open(tmp_path, clock)

    assert "runtime.epochs" in str(caught.value) and "\n" not in str(caught.value)


def test_without_user_caps_the_current_periods_row_carries_k_times_b_a(tmp_path: Path) -> None:
    _with_period(tmp_path)
    clock = FakeClock(T0)
    runtime = _open(tmp_path, clock, user_caps=False)
    runtime.turn("alice", "recipes", "i", DINNER)
    clock.now = ORIGIN + P + DAY  # period 1: two periods elapsed
    runtime.turn("alice", "recipes", "i", DINNER)
    spent = {"ledgers": {"debt": "1/1", "diabetes": "1/2"}, "caps": {"debt": "2/1", "diabetes": "2/1"}}
    over_periods = {"periods": 2, "composed": {"debt": "4/1", "diabetes": "4/1"}, "caveat": CAVEAT}
    assert runtime.ledgers("alice") == [
        {"scope": {"user": "alice", "app": "recipes", "epoch": 0, "period": 0}, **spent},
        {"scope": {"user": "alice", "app": "recipes", "epoch": 0, "period": 1, "over_periods": over_periods}, **spent},
    ]
    runtime.close()


def test_without_a_period_the_guarantee_reads_no_clock(tmp_path: Path) -> None:
    """The clock selects budget periods only: with none declared, a clock gone wrong after
    opening changes neither the guarantee over epochs nor the owner's listing."""
    _with_period(tmp_path, None)
    clock = FakeClock(T0)
    runtime = _open(tmp_path, clock)
    runtime.turn("alice", "recipes", "i", DINNER)
    clock.now = -1.0  # unusable, were it read
    report = {
        "epochs": 1,
        "fresh_budget_epochs": [],
        "per_application": {"debt": "2/1", "diabetes": "2/1"},
        "per_user": {"debt": "3/1", "diabetes": "3/1"},
    }
    assert runtime.guarantee() == report
    (total,) = [row for row in runtime.ledgers("alice") if row["scope"]["app"] is None]
    assert total["scope"] == {"user": "alice", "app": None, "epoch": 0, "over_epochs": report}
    runtime.close()


def test_the_listing_without_caps_or_period_composes_no_guarantee(tmp_path: Path) -> None:
    """An earlier period epoch whose end the binding log lacks (the next epoch bound by
    `bind` without a clock time) leaves the guarantee over epochs without its count of
    periods; a runtime with neither per-user caps nor a period lists its scopes all the same."""
    _with_period(tmp_path)
    clock = FakeClock(T0)
    runtime = _open(tmp_path, clock, user_caps=False)
    runtime.turn("alice", "recipes", "i", DINNER)
    runtime.close()
    _with_period(tmp_path, None)
    store = open_ledger_store(f"sqlite:///{tmp_path / 'ledgers.db'}")
    bind(store, load_agent_file(tmp_path / "assistant.toml").loaded.interface, None, "drop the period")  # no "at"
    store.close()
    runtime = _open(tmp_path, clock, user_caps=False)
    assert runtime.epoch == 1
    assert runtime.ledgers("alice") == [
        {
            "scope": {"user": "alice", "app": "recipes", "epoch": 0, "period": 0},
            "ledgers": {"debt": "1/1", "diabetes": "1/2"},
            "caps": {"debt": "2/1", "diabetes": "2/1"},
        }
    ]
    runtime.close()


def test_the_current_epoch_states_each_composed_bound_once(tmp_path: Path) -> None:
    """The current epoch's k periods, one line per bound: with application shares, k x share per
    application and k x U_a per subject (the shares stand in for the per-application B_a lines);
    without shares, k x B_a per attribute, and nothing for subjects without user caps."""
    _with_period(tmp_path)
    interface = load_interface_file(tmp_path / "interface.toml").interface
    second = ORIGIN + 4 * P  # epoch 1 started (and set its origin) 4 periods after epoch 0's
    log = [
        {"epoch": 0, "reason": "created", "period": "30 days", "origin": ORIGIN, "at": ORIGIN},
        {"epoch": 1, "reason": "renew", "period": "30 days", "origin": second, "at": second},
    ]
    now = Fraction(second + 2 * P + DAY)  # inside epoch 1's period 2: 3 periods elapsed

    plain = epoch_guarantee(log, interface, None, now)["current_epoch"]
    assert plain == {
        "epoch": 1,
        "period": "30 days",
        "origin": second,
        "period_index": 2,
        "periods": 3,
        "per_share": None,
        "per_application": {"debt": "6/1", "diabetes": "6/1"},
        "per_user": None,
        "lines": [
            f"each application, debt: 3 periods of 30 days: 3 x B_debt = 3 x 2 = 6 ({CAVEAT})",
            f"each application, diabetes: 3 periods of 30 days: 3 x B_diabetes = 3 x 2 = 6 ({CAVEAT})",
        ],
        "caveat": CAVEAT,
    }
    shared = epoch_guarantee(log, interface, USER_CAPS, now, SHARES)["current_epoch"]
    assert shared["per_share"] == {
        "finance": {"debt": "6/1", "diabetes": "3/1"},
        "recipes": {"debt": "3/1", "diabetes": "6/1"},
    }
    assert shared["per_user"] == {"debt": "9/1", "diabetes": "9/1"}
    assert shared["lines"] == [
        f"application finance, debt: 3 periods of 30 days: 3 x share(finance, debt) = 3 x 2 = 6 ({CAVEAT})",
        f"application finance, diabetes: 3 periods of 30 days: 3 x share(finance, diabetes) = 3 x 1 = 3 ({CAVEAT})",
        f"application recipes, debt: 3 periods of 30 days: 3 x share(recipes, debt) = 3 x 1 = 3 ({CAVEAT})",
        f"application recipes, diabetes: 3 periods of 30 days: 3 x share(recipes, diabetes) = 3 x 2 = 6 ({CAVEAT})",
        f"each subject (all applications), debt: 3 periods of 30 days: 3 x U_debt = 3 x 3 = 9 ({CAVEAT})",
        f"each subject (all applications), diabetes: 3 periods of 30 days: 3 x U_diabetes = 3 x 3 = 9 ({CAVEAT})",
    ]


def test_an_epoch_ends_at_the_first_clock_time_the_next_epoch_logged() -> None:
    """Epoch e ends where epoch e + 1's first entry with a usable "at" (whole seconds, 0 included)
    says; epoch 0's own start ends nothing, and unusable times are skipped."""
    log = [
        {"epoch": 0, "at": 0},
        {"epoch": 0, "at": 5},  # a carried-over entry: not a start
        {"epoch": 1, "at": -1},
        {"epoch": 1, "at": True},
        {"epoch": 1, "at": 3.0},
        {"epoch": 1, "at": 0},  # the clock's first instant is a time like any other
        {"epoch": 1, "at": 9},
        {"epoch": 2},  # started without a clock time: epoch 1's end is unknown
        {"epoch": 3, "at": 7},
    ]
    assert epoch_ends(log) == {0: 0, 2: 7}
    assert epoch_ends([{"epoch": 0, "at": ORIGIN}]) == {}


def test_each_epoch_keeps_the_first_period_origin_its_entries_logged() -> None:
    """Epoch -> (origin, label) from the epoch's first entry with an origin (whole seconds, 0
    included): entries without one are skipped, later ones of the same epoch never move it."""
    log = [
        {"epoch": 0, "reason": "created"},  # no period yet
        {"epoch": 0, "period": "30 days", "origin": 0, "at": 0},  # the clock's first instant
        {"epoch": 0, "period": "7 days", "origin": 50},  # carried over: not a new origin
        {"epoch": 1, "reason": "drop the period"},
        {"epoch": 2, "period": "1 day", "origin": ORIGIN, "at": ORIGIN},
        {"epoch": 2, "period": "30 days", "origin": ORIGIN + P},
    ]
    assert epoch_origins(log) == {0: (0, "30 days"), 2: (ORIGIN, "1 day")}
    assert epoch_origins([{"epoch": 0, "period": "30 days"}]) == {}  # a label without an origin sets none
    assert epoch_origins([]) == {}


@pytest.mark.parametrize(
    "entry",
    [
        {"origin": -1, "period": "30 days"},
        {"origin": 1.5, "period": "30 days"},
        {"origin": 5.0, "period": "30 days"},
        {"origin": True, "period": "30 days"},
        {"origin": "5", "period": "30 days"},
        {"origin": 5},  # an origin without its period's label
        {"origin": 5, "period": 30},
    ],
)
def test_an_unusable_period_origin_is_refused_in_one_line(entry: dict[str, object]) -> None:
    """Even after a usable first origin of the same epoch: every logged origin is checked."""
    log = [{"epoch": 0, "period": "30 days", "origin": ORIGIN}, {"epoch": 0, **entry}]
    for edited in (log[1:], log):
        with pytest.raises(InputError) as caught:
            epoch_origins(edited)
        assert str(caught.value) == (
            "runtime.epochs: expected a period origin the runtime wrote (whole seconds), found 'an edited log'"
        )


@pytest.mark.parametrize(
    ("end", "periods"),
    [(ORIGIN, 1), (ORIGIN + P - 1, 1), (ORIGIN + P, 2), (ORIGIN + 2 * P - 1, 2), (ORIGIN + 2 * P, 3)],
)
def test_an_ended_epoch_counts_the_periods_up_to_the_next_epochs_start(end: int, periods: int, tmp_path: Path) -> None:
    """Period k starts at origin + k P exactly: an epoch ended at that instant counts k + 1
    periods, one second earlier k. Each epoch counts with the caps its first entry logged
    (an attribute it did not log, and an epoch logged before caps were, with the current
    ones); the ended epoch's periods multiply its caps, the current epoch without a period
    counts once."""
    _with_period(tmp_path, None)
    interface = load_interface_file(tmp_path / "interface.toml").interface  # B_a = 2, no period
    log = [
        {"epoch": 0, "period": "30 days", "origin": ORIGIN, "caps": {"debt": "1/2"}, "user_caps": {"diabetes": "1"}},
        {"epoch": 0, "caps": {"debt": "5", "diabetes": "5"}, "user_caps": {"debt": "5"}},  # carried over
        {
            "epoch": 1,
            "at": end,
            "caps": {"debt": "1", "diabetes": "3/2"},
            "user_caps": {"debt": "2", "diabetes": "1/2"},
        },
        {"epoch": 2, "fresh_budget": True},  # logged before the caps were
    ]
    per_app = {"debt": Fraction(1, 2) * periods + 1 + 2, "diabetes": 2 * periods + Fraction(3, 2) + 2}
    per_user = {"debt": 3 * periods + 2 + 3, "diabetes": 1 * periods + Fraction(1, 2) + 3}
    assert epoch_guarantee(log, interface, USER_CAPS) == {
        "epochs": 3,
        "fresh_budget_epochs": [2],
        "per_application": {a: f"{v.numerator}/{v.denominator}" for a, v in per_app.items()},
        "per_user": {a: f"{v.numerator}/{v.denominator}" for a, v in per_user.items()},
        "periods_per_epoch": {"0": periods},
        "caveat": CAVEAT,
    }


def test_the_current_epochs_periods_are_stated_only_for_an_interface_with_a_period(tmp_path: Path) -> None:
    """An epoch whose log records a period origin, read with an interface that declares no
    period, composes its periods in the total but states no current-epoch bound."""
    _with_period(tmp_path, None)
    interface = load_interface_file(tmp_path / "interface.toml").interface
    log = [{"epoch": 0, "period": "30 days", "origin": ORIGIN}]
    assert epoch_guarantee(log, interface, None, Fraction(ORIGIN + P)) == {
        "epochs": 1,
        "fresh_budget_epochs": [],
        "per_application": {"debt": "4/1", "diabetes": "4/1"},
        "per_user": None,
        "periods_per_epoch": {"0": 2},
        "caveat": CAVEAT,
    }


def test_an_empty_binding_log_guarantees_nothing_yet(tmp_path: Path) -> None:
    """No epoch started: zero per attribute, and no current epoch even with a period declared."""
    _with_period(tmp_path)
    interface = load_interface_file(tmp_path / "interface.toml").interface
    assert epoch_guarantee([], interface, USER_CAPS, Fraction(T0)) == {
        "epochs": 0,
        "fresh_budget_epochs": [],
        "per_application": {"debt": "0/1", "diabetes": "0/1"},
        "per_user": {"debt": "0/1", "diabetes": "0/1"},
    }


def test_periods_elapsed_in_an_open_epoch_need_the_clock(tmp_path: Path) -> None:
    """An epoch with a period and no logged end counts its periods up to now: without a
    clock time the guarantee is refused in one line, not computed without those periods."""
    _with_period(tmp_path)
    interface = load_interface_file(tmp_path / "interface.toml").interface
    log = [{"epoch": 0, "period": "30 days", "origin": ORIGIN}]
    with pytest.raises(InputError) as caught:
        epoch_guarantee(log, interface, None)
    assert str(caught.value) == "clock: expected the runtime's clock (periods elapsed), found 'none'"
