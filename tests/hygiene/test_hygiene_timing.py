"""Timing side channel: the public round bound, the deadline release, the KS statistic."""

from __future__ import annotations

import contextlib
import io
import logging
import math
import random
import time
from fractions import Fraction
from pathlib import Path

import pytest

from dpmem_ref.cli import main
from dpmem_ref.config.load import load_interface_file
from dpmem_ref.core.errors import InputError
from dpmem_ref.ledger import MemoryLedgerStore, SlotRelease
from dpmem_ref.mechanism.construction import exponential_mechanism
from dpmem_ref.mechanism.randomness import SeededRandomSource
from dpmem_ref.mechanism.timing import (
    DEFAULT_TURN_DEADLINE_S,
    DeadlineRelease,
    calibrate_deadline,
    ks_statistic,
    plain_release,
    public_round_bound,
    slowest_case_distributions,
    worst_case_distribution,
)
from dpmem_ref.turn.durable import DurableSession

VIEWS = tuple(f"v{i}" for i in range(16))
HIGH = exponential_mechanism(VIEWS, [Fraction(1)] + [Fraction(0)] * 15, Fraction(2), Fraction(3, 5))
FLAT = exponential_mechanism(VIEWS, [Fraction(0)] * 16, Fraction(2), Fraction(3, 5))


def test_public_round_bound() -> None:
    # g = eps / (2 Delta) = 5/9; (1 - e^{-5/9})^R <= 1e-9 first at R = 25.
    assert public_round_bound(Fraction(2, 3), Fraction(3, 5), 1e-9) == 25
    g = 5 / 9
    assert (1 - math.exp(-g)) ** 25 <= 1e-9 < (1 - math.exp(-g)) ** 24
    assert public_round_bound(Fraction(2), Fraction(3, 5), 1e-9) == 99


def test_the_bound_covers_the_worst_case_store() -> None:
    # The worst-case distribution accepts each proposal with probability >= e^{-g}.
    worst = worst_case_distribution(16, Fraction(2), Fraction(3, 5))
    acceptance = sum(math.exp(-float(max(worst.exponents) - x)) for x in worst.exponents) / 16
    assert acceptance >= math.exp(-float(Fraction(2) / (2 * Fraction(3, 5))))


@pytest.mark.parametrize("views", [4, 16, 1024])
@pytest.mark.parametrize("epsilon", [Fraction(2, 3), Fraction(2), Fraction(12)])
def test_calibration_times_every_proposal_the_sampler_can_take(views: int, epsilon: Fraction) -> None:
    """The deadline is calibrated on a public slowest case of each sampler proposal: with a
    gap above 1 and more than 8 views a one-hot store takes the (fast) bucketed proposal, so
    the uniform proposal's slowest case (every gap at 1) must be timed too."""
    candidates = slowest_case_distributions(views, epsilon, Fraction(3, 5))
    paths = {candidate._bucketed for candidate in candidates}
    gap = epsilon / (2 * Fraction(3, 5))
    sampler_can_bucket = views > 8 and gap > 1
    assert paths == ({True, False} if sampler_can_bucket else {False})
    # The uniform candidate is the slowest uniform case: one top view, every other gap min(gap, 1).
    uniform = candidates[-1]
    assert not uniform._bucketed
    assert sorted(max(uniform.exponents) - x for x in uniform.exponents)[1:] == [min(gap, 1)] * (views - 1)
    # The calibration times them all (a fake clock: each draw costs the same, 1 us).
    ticks = iter(range(0, 10**15, 1_000))
    calibrate_deadline(views, epsilon, Fraction(3, 5), SeededRandomSource(0), trials=5, clock=lambda: next(ticks))
    assert next(ticks) == 2 * 5 * len(candidates) * 1_000


def test_deadline_release_draws_the_same_view_and_waits() -> None:
    # A fake clock advancing 10 us per read: deterministic on a loaded machine (no timed test).
    ticks = iter(range(0, 10**15, 10_000))
    release = DeadlineRelease(deadline_s=0.0005, clock=lambda: next(ticks))
    for seed in range(20):
        expected = HIGH.sample(SeededRandomSource(seed))
        timed = release.sample(HIGH, SeededRandomSource(seed))
        assert timed.view == expected  # the exact distribution is untouched
        assert timed.elapsed_ns >= 500_000 and not timed.overran


def test_overrun_is_reported() -> None:
    ticks = iter(range(0, 10**12, 10**9))  # each clock read advances 1 s
    release = DeadlineRelease(deadline_s=0.5, clock=lambda: next(ticks))
    assert release.sample(FLAT, SeededRandomSource(0)).overran


@pytest.mark.parametrize("deadline", [0, -1, float("nan"), math.inf, 11, True, "1"])
def test_bad_deadlines_are_refused(deadline: object) -> None:
    with pytest.raises(InputError, match="^deadline_s: "):
        DeadlineRelease(deadline_s=deadline)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"epsilon": Fraction(0)}, "epsilon"),
        ({"epsilon": 0.5}, "epsilon"),
        ({"sensitivity": Fraction(-1)}, "sensitivity"),
        ({"views": 0}, "views"),
        ({"views": 5000}, "views"),
        ({"trials": 0}, "trials"),
        ({"quantile": float("nan")}, "quantile"),
        ({"margin": 0.5}, "margin"),
    ],
)
def test_bad_calibration_arguments_are_refused(kwargs: dict[str, object], field: str) -> None:
    arguments: dict[str, object] = {
        "views": 4,
        "epsilon": Fraction(2, 3),
        "sensitivity": Fraction(3, 5),
        "source": SeededRandomSource(0),
        "trials": 10,
    }
    arguments.update(kwargs)
    with pytest.raises(InputError, match=f"^{field}: "):
        calibrate_deadline(**arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize("delta", [0, 1, float("nan"), -0.5, True])
def test_bad_failure_probabilities_are_refused(delta: object) -> None:
    with pytest.raises(InputError, match="^failure_probability: "):
        public_round_bound(Fraction(1), Fraction(1), delta)  # type: ignore[arg-type]


def test_ks_statistic_matches_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = random.Random(0)
    for _ in range(30):
        a = [rng.randint(0, 20) for _ in range(rng.randint(1, 60))]
        b = [rng.randint(0, 25) for _ in range(rng.randint(1, 60))]
        assert ks_statistic(a, b) == pytest.approx(stats.ks_2samp(a, b).statistic, abs=1e-12)
    assert ks_statistic([1, 2, 3], [1, 2, 3]) == 0
    assert ks_statistic([1], [2]) == 1


@pytest.mark.slow
def test_deadline_closes_the_side_channel() -> None:
    """High-contrast pair: KS near 1 without mitigation, small with the deadline."""
    source_a, source_b = SeededRandomSource(1), SeededRandomSource(2)
    plain_a = [plain_release(HIGH, source_a).elapsed_ns for _ in range(1000)]
    plain_b = [plain_release(FLAT, source_b).elapsed_ns for _ in range(1000)]
    deadline = calibrate_deadline(16, Fraction(2), Fraction(3, 5), SeededRandomSource(3), trials=1000)
    release = DeadlineRelease(deadline_s=deadline)
    fixed_a = [release.sample(HIGH, source_a).elapsed_ns for _ in range(1000)]
    fixed_b = [release.sample(FLAT, source_b).elapsed_ns for _ in range(1000)]
    assert ks_statistic(plain_a, plain_b) > 0.5
    assert ks_statistic(fixed_a, fixed_b) < 0.15


def test_durable_callbacks_and_log_records_wait_for_the_deadline(caplog: pytest.LogCaptureFixture) -> None:
    """Nothing observable about a turn (callback, DEBUG record, return) happens
    before its deadline; the deadline is on by default."""

    loaded = load_interface_file(Path(__file__).resolve().parents[2] / "examples" / "figure2.toml")
    seen: list[int] = []

    def on_release(release: SlotRelease) -> None:
        seen.append(time.perf_counter_ns())

    class Stamp(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(time.perf_counter_ns())

    default = DurableSession.open(
        loaded.interface, MemoryLedgerStore(), "u", "d", loaded.store("M"), SeededRandomSource(0)
    )
    assert default.turn_deadline_s == DEFAULT_TURN_DEADLINE_S
    deadline = 0.05
    session = DurableSession.open(
        loaded.interface,
        MemoryLedgerStore(),
        "u",
        "i",
        loaded.store("M"),
        SeededRandomSource(0),
        on_release=on_release,
        turn_deadline_s=deadline,
    )
    handler = Stamp(level=logging.DEBUG)
    logger = logging.getLogger("dpmem_ref.durable")
    logger.addHandler(handler)
    caplog.set_level(logging.DEBUG, logger="dpmem_ref.durable")
    try:
        for query in ("affordable-dinner", "checkup-reminder"):
            seen.clear()
            start = time.perf_counter_ns()
            turn = session.run_turn(query)
            returned = time.perf_counter_ns()
            assert len(seen) == 2 * len(turn.releases) + 1  # a callback and a record per slot, one per turn
            assert min([*seen, returned]) >= start + int(deadline * 1e9)
    finally:
        logger.removeHandler(handler)


def test_cli_lines_appear_on_the_public_schedule(tmp_path: Path) -> None:
    """`dpmem run` writes turn k no earlier than its start + k x deadline."""

    class Stamps(io.StringIO):
        def __init__(self) -> None:
            super().__init__()
            self.stamps: list[int] = []

        def write(self, text: str) -> int:
            if text.startswith("turn "):
                self.stamps.append(time.perf_counter_ns())
            return super().write(text)

    queries = Path(tmp_path) / "q.txt"
    queries.write_text("affordable-dinner\ncheckup-reminder\n" * 3)
    figure2 = Path(__file__).resolve().parents[2] / "examples" / "figure2.toml"
    out = Stamps()
    start = time.perf_counter_ns()
    with contextlib.redirect_stdout(out):
        code = main(["run", str(figure2), "--store", "M", "--queries", str(queries), "--release-deadline-ms", "20"])
    assert code == 0 and len(out.stamps) == 6
    for k, stamp in enumerate(out.stamps, start=1):
        assert stamp >= start + k * 20_000_000
