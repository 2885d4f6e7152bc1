"""Seeded G-tests of the exact EM sampler at scale, and the batch API `sample_many`.

Deterministic: every source is seeded, so each test is one fixed computation. Cells whose
expected count is below 5 are pooled. A test fails below p = 1e-6; a wrong law (a
uniform sampler, an off-by-one table) is rejected far below that (checked below).
"""

from __future__ import annotations

import random
import sys
from collections import Counter
from fractions import Fraction

import mpmath
import pytest

from dpmem_ref import SeededRandomSource, TapeSource, exponential_mechanism
from dpmem_ref.core.errors import InputError
from dpmem_ref.mechanism.em import ExponentialWeights
from dpmem_ref.mechanism.em_sampler import ExactTable, build_table
from dpmem_ref.mechanism.randomness import RandomSource

P_MIN = 1e-6


def g_test_p_value(observed: list[int], probabilities: list[mpmath.mpf]) -> float:
    """G-test of counts against a law, pooling cells expected below 5."""
    total = sum(observed)
    cells: list[tuple[int, mpmath.mpf]] = []
    pooled_o, pooled_p = 0, mpmath.mpf(0)
    for o, p in zip(observed, probabilities, strict=True):
        if total * p >= 5:
            cells.append((o, p))
        else:
            pooled_o, pooled_p = pooled_o + o, pooled_p + p
    if total * pooled_p >= 5 or pooled_o:
        cells.append((pooled_o, pooled_p))
    if len(cells) < 2:
        return 1.0 if cells[0][0] == total else 0.0
    statistic = 2 * mpmath.fsum(o * mpmath.log(o / (total * p)) for o, p in cells if o)
    degrees = len(cells) - 1
    return float(mpmath.gammainc(mpmath.mpf(degrees) / 2, statistic / 2, mpmath.inf, regularized=True))


def homogeneity_p_value(first: Counter[str], second: Counter[str]) -> float:
    """Two-sample chi-square: the same law behind both samples (cells below 5 pooled)."""
    keys = sorted(set(first) | set(second))
    n1, n2 = sum(first.values()), sum(second.values())
    rows = [(first[k], second[k]) for k in keys if first[k] + second[k] >= 10]
    rest = (n1 - sum(a for a, _ in rows), n2 - sum(b for _, b in rows))
    if sum(rest):
        rows.append(rest)
    statistic = mpmath.mpf(0)
    for a, b in rows:
        expected_a = mpmath.mpf(a + b) * n1 / (n1 + n2)
        expected_b = mpmath.mpf(a + b) * n2 / (n1 + n2)
        statistic += (a - expected_a) ** 2 / expected_a + (b - expected_b) ** 2 / expected_b
    degrees = len(rows) - 1
    return float(mpmath.gammainc(mpmath.mpf(degrees) / 2, statistic / 2, mpmath.inf, regularized=True))


def law(distribution: ExponentialWeights) -> list[mpmath.mpf]:
    with mpmath.workdps(40):
        return list(distribution.probabilities())


def _scores(views: int, kind: str) -> list[Fraction]:
    if kind == "one-hot":
        return [Fraction(1)] + [Fraction(0)] * (views - 1)
    rng = random.Random(views)
    return [Fraction(rng.randrange(101), 100) for _ in range(views)]


CASES = [
    (1024, "one-hot", Fraction(12)),  # the dominant-view case
    (256, "random", Fraction(12)),
    (64, "random", Fraction(4)),
    (16, "one-hot", Fraction(2, 3)),  # spread <= 1: the uniform proposal
    (3, "random", Fraction(30)),
]


@pytest.mark.parametrize("views, kind, epsilon", CASES, ids=[f"{v}-{k}-eps{e}" for v, k, e in CASES])
def test_single_draws_match_eq7(views: int, kind: str, epsilon: Fraction) -> None:
    names = tuple(f"v{i}" for i in range(views))
    distribution = exponential_mechanism(names, _scores(views, kind), epsilon, Fraction(3, 5))
    source = SeededRandomSource(20261201)
    counts = Counter(distribution.sample(source) for _ in range(30_000))
    assert g_test_p_value([counts[v] for v in names], law(distribution)) > P_MIN


@pytest.mark.parametrize("views, kind, epsilon", CASES, ids=[f"{v}-{k}-eps{e}" for v, k, e in CASES])
def test_batch_draws_match_eq7_and_single_draws(views: int, kind: str, epsilon: Fraction) -> None:
    names = tuple(f"v{i}" for i in range(views))
    distribution = exponential_mechanism(names, _scores(views, kind), epsilon, Fraction(3, 5))
    batch = Counter(distribution.sample_many(100_000, SeededRandomSource(7)))
    assert sum(batch.values()) == 100_000
    assert g_test_p_value([batch[v] for v in names], law(distribution)) > P_MIN
    single_source = SeededRandomSource(8)
    single = Counter(distribution.sample(single_source) for _ in range(20_000))
    assert homogeneity_p_value(batch, single) > P_MIN


def test_g_test_rejects_a_wrong_law() -> None:
    """Power: counts drawn uniformly, or from a table whose sure range is off by one (the
    residual slot taken as sure), are rejected."""
    names = tuple(f"v{i}" for i in range(8))
    distribution = exponential_mechanism(names, _scores(8, "random"), Fraction(12), Fraction(3, 5))
    source = SeededRandomSource(1)
    uniform = Counter(names[source.randbelow(8)] for _ in range(30_000))
    assert g_test_p_value([uniform[v] for v in names], law(distribution)) < 1e-12
    good = build_table([1] * 3, [Fraction(0), Fraction(1), Fraction(2)], table_bits=4)
    shifted = ExactTable(good.multiplicities, good.exponents, good.scale, tuple(a + 1 for a in good.sure), good.ends, good.bound)
    counts = Counter(shifted.draw(source) for _ in range(30_000))
    with mpmath.workdps(30):
        weights = [mpmath.exp(-k) for k in range(3)]
        expected = [w / mpmath.fsum(weights) for w in weights]
    assert g_test_p_value([counts[i] for i in range(3)], expected) < 1e-6
    counts = Counter(good.draw(source) for _ in range(30_000))
    assert g_test_p_value([counts[i] for i in range(3)], expected) > P_MIN


def test_sample_many_is_reproducible_and_the_numpy_path_is_the_python_path() -> None:
    names = tuple(f"v{i}" for i in range(100))
    distribution = exponential_mechanism(names, _scores(100, "random"), Fraction(12), Fraction(3, 5))
    assert distribution.sample_many(5_000, SeededRandomSource(3)) == distribution.sample_many(5_000, SeededRandomSource(3))
    assert distribution.sample_many(0, SeededRandomSource(3)) == ()
    assert len(distribution.sample_many(1, SeededRandomSource(3))) == 1
    table = build_table([1] * 100, [max(distribution.exponents) - x for x in distribution.exponents])
    # 9,000 draws span two blocks; 6-bit tables make the rare residual/empty slots common.
    two_blocks = table.draw_many(9_000, SeededRandomSource(4))
    assert len(two_blocks) == 9_000 and two_blocks == table.draw_many(9_000, SeededRandomSource(4), use_numpy=False)
    small = build_table([1, 2, 1], [Fraction(0), Fraction(1, 3), Fraction(3)], table_bits=6)
    assert small.draw_many(500, SeededRandomSource(5)) == small.draw_many(500, SeededRandomSource(5), use_numpy=False)


ASCENDING = (Fraction(0), Fraction(1, 3), Fraction(5, 2), Fraction(7), Fraction(60))


@pytest.mark.parametrize(
    "table_bits, exponents", [(64, ASCENDING), (60, ASCENDING), (6, ASCENDING), (64, ASCENDING[::-1])]
)
def test_batch_resolves_every_kind_of_slot_like_a_single_round(table_bits: int, exponents: tuple[Fraction, ...]) -> None:
    """A crafted tape puts the batch's 64-bit slots on every edge (first and last sure slot,
    residual slot, first empty slot, the top): numpy and pure-Python paths agree with
    `ExactTable.resolve` slot by slot (rare slots are ~1e-16 likely under a real source).
    60-bit tables have ends between 2**53 and 2**63: a float or a signed array anywhere in
    the search would merge neighbouring slots there. In the descending table later
    outcomes own more slots than all earlier ones together (no room for wrap-around)."""
    table = build_table([1] * 5, list(exponents), table_bits=table_bits)
    slots: list[int] = []
    start = 0
    for sure, end in zip(table.sure, table.ends, strict=True):
        slots += [start, start + sure - 1, start + sure, end - 1] if sure else [start]
        start = end
    slots += [table.ends[-1], table.bound - 1, table.bound, (1 << 64) - 1]
    slots *= 3
    block = sum(slot << (64 * position) for position, slot in enumerate(slots))
    follow_ups = [random.Random(11).getrandbits(64) for _ in range(10_000)]
    got = table.draw_many(len(slots), TapeSource([block, *follow_ups]))
    assert got == table.draw_many(len(slots), TapeSource([block, *follow_ups]), use_numpy=False)
    replay = TapeSource(follow_ups)
    expected = []
    for slot in slots:
        outcome = table.resolve(slot, replay) if slot < table.bound else None
        expected.append(table.draw(replay) if outcome is None else outcome)
    assert got == expected
    if exponents == ASCENDING:
        assert got[:2] == [0, 0]
        if table_bits > 6:  # outcome 1's sure slots exist (a 6-bit table may round them away)
            assert got[4:6] == [1, 1]


@pytest.mark.parametrize(
    "scores, epsilon", [((Fraction(0), Fraction(1, 2)), Fraction(1)), (tuple(Fraction(i, 5) for i in range(5)), Fraction(12))]
)
def test_sample_many_reads_its_slots_off_the_table_of_weights_exp_minus_gap(scores: tuple[Fraction, ...], epsilon: Fraction) -> None:
    """A recorded tape replays a batch: its 64-bit digits are the rounds' slots in the exact
    table with weight exp(-gap_v) per view (multiplicity 1, the scale that fills 2**64 slots).
    The tape puts slots on every edge (each view's first and last sure slot, its residual
    slot), where a table of another scale would read another view or another residual."""
    names = tuple(f"v{i}" for i in range(len(scores)))
    distribution = exponential_mechanism(names, list(scores), epsilon, Fraction(1))
    table = build_table([1] * len(names), [max(distribution.exponents) - x for x in distribution.exponents])
    slots: list[int] = []
    start = 0
    for sure, end in zip(table.sure, table.ends, strict=True):
        slots += [start, start + sure - 1, end - 1]
        start = end
    block = sum(slot << (64 * position) for position, slot in enumerate(slots))
    rng = random.Random(12)
    follow_ups = [rng.getrandbits(64) for _ in range(1_000)]
    drawn = distribution.sample_many(len(slots), TapeSource([block, *follow_ups]))
    expected = table.draw_many(len(slots), TapeSource([block, *follow_ups]))
    assert drawn == tuple(names[index] for index in expected)
    assert drawn[:2] == (names[0], names[0])  # view 0's first and last sure slot


@pytest.mark.parametrize("count", [-1, 1.5, True, "3"])
def test_sample_many_rejects_a_bad_count(count: object) -> None:
    distribution = exponential_mechanism(("a", "b"), [Fraction(1), Fraction(0)], Fraction(1), Fraction(1))
    with pytest.raises(InputError) as error:
        distribution.sample_many(count, SeededRandomSource(0))  # type: ignore[arg-type]
    assert str(error.value) == f"count: expected a non-negative integer, found {count!r}"


def test_without_numpy_the_batch_takes_the_pure_path_and_draws_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """numpy only speeds the batch up: with it missing, draw_many (numpy asked for or not)
    gives the draws it gives with numpy."""
    import dpmem_ref.mechanism.em_sampler as em

    table = build_table([1, 2, 1], [Fraction(0), Fraction(1, 3), Fraction(3)])
    with_numpy = table.draw_many(300, SeededRandomSource(6))
    monkeypatch.setattr(em, "_np", None)
    assert table.draw_many(300, SeededRandomSource(6)) == with_numpy
    assert table.draw_many(300, SeededRandomSource(6), use_numpy=False) == with_numpy


def test_new_sampler_paths_use_no_floats() -> None:
    """Trace the bucketed sampler, the table and the batch: no float local, integer arrays only."""
    distribution = exponential_mechanism(tuple(f"v{i}" for i in range(40)), _scores(40, "random"), Fraction(12), Fraction(3, 5))
    small = build_table([1, 2], [Fraction(0), Fraction(1, 3)], table_bits=6)
    import dpmem_ref.mechanism.bernoulli as bernoulli
    import dpmem_ref.mechanism.em as mechanism
    import dpmem_ref.mechanism.em_sampler as em

    # Every frame of em_sampler, and the mechanism's batch and bucketed paths, by file and
    # function name (not code object: a wrapped or re-generated copy is watched as well):
    # the distribution's methods in em.py, the bucketed round in bernoulli.py.
    mechanism_names = ("bucketed_round", "_bucketed_draw", "sample_many")
    mechanism_files = (mechanism.__file__, bernoulli.__file__)

    def watched(code) -> bool:  # type: ignore[no-untyped-def]
        if code.co_filename == em.__file__:
            return True
        return code.co_filename in mechanism_files and any(name in code.co_name for name in mechanism_names)

    problems: list[str] = []
    seen: set[str] = set()

    def tracer(frame, event, arg):  # type: ignore[no-untyped-def]
        if watched(frame.f_code):
            seen.add(frame.f_code.co_name)
            for name, value in frame.f_locals.items():
                if isinstance(value, float) or (hasattr(value, "dtype") and value.dtype.kind not in "uib"):
                    problems.append(f"{frame.f_code.co_name}.{name}")
            return tracer
        return None

    em.exp_neg_bounds.cache_clear()
    source = SeededRandomSource(9)
    previous = sys.gettrace()  # coverage.py's tracer, when the suite runs under it
    sys.settrace(tracer)
    try:
        draws = [distribution.sample(source) for _ in range(300)] + list(distribution.sample_many(3_000, source))
        drawn_small = small.draw_many(200, source)
    finally:
        sys.settrace(previous)  # restored: else branch coverage stops here for the rest of the run
    assert len(draws) == 3_300 and set(drawn_small) == {0, 1}
    assert problems == []
    looked_at = ("draw_many", "resolve", "residual_accept", "exp_neg_bounds", "_series_bounds", *mechanism_names)
    for name in looked_at:
        assert any(name in code_name for code_name in seen), name  # the tracer did look there


# Weights 2 exp(-1/3), 1, exp(-7), exp(-5/2) on a 6-bit table (scale 23): outcome 0 owns sure
# slots 0-31 and residual slot 32; outcome 1 (exponent 0) sure slots 33-55 and no residual;
# outcome 2 no sure slot, only residual slot 56; outcome 3 sure slot 57, residual slot 58;
# slots 59-62 are empty (bound 63) and so is every 64-bit slot above. Each end (33, 56, 57)
# is the first slot of the next outcome, a sure slot (33, 57) or a residual one (56).
EDGY = build_table([2, 1, 1, 1], [Fraction(1, 3), Fraction(0), Fraction(7), Fraction(5, 2)], table_bits=6, chunk_bits=1)


def test_the_edgy_table_has_the_layout_its_comment_describes() -> None:
    assert (EDGY.scale, EDGY.sure, EDGY.ends, EDGY.bound) == (23, (32, 23, 0, 1), (33, 56, 57, 59), 63)


@pytest.mark.parametrize("use_numpy", [True, False], ids=["numpy", "pure"])
def test_a_batch_over_every_slot_draws_and_consumes_what_single_rounds_do(use_numpy: bool) -> None:
    """Every slot of a small table, one by one in a batch (and the 64-bit tops): the batch's
    draws are the single rounds' (`resolve`, then `draw` after an empty or rejected slot), and
    it reads exactly the random tape they read, in the same order."""
    slots = [*range(EDGY.bound + 1), 1 << 63, (1 << 64) - 1]
    block = sum(slot << (64 * position) for position, slot in enumerate(slots))
    follow_ups = [random.Random(13).getrandbits(64) for _ in range(20_000)]
    batch_source = TapeSource([block, *follow_ups])
    got = EDGY.draw_many(len(slots), batch_source, use_numpy=use_numpy)
    replay = TapeSource(follow_ups)
    expected = []
    for slot in slots:
        outcome = EDGY.resolve(slot, replay)
        expected.append(EDGY.draw(replay) if outcome is None else outcome)
    assert got == expected
    assert batch_source.consumed == 1 + replay.consumed
    # Each outcome's first and last sure slot; slots 33 and 57 lie at an end, the next outcome's.
    assert got[0] == got[31] == 0 and got[33] == got[55] == 1 and got[57] == 3


@pytest.mark.parametrize("use_numpy", [True, False], ids=["numpy", "pure"])
def test_a_batch_decides_its_sure_slots_itself_and_resolves_only_residual_slots(
    use_numpy: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch is fast because it decides a sure slot by itself: only the rare residual (or
    empty) slots go one at a time through `resolve`, in order. A tape of zeros makes every
    residual Bernoulli accept (U = 0 < T_i - a_i), so each occupied slot draws its owner."""
    resolved: list[int] = []
    resolve = ExactTable.resolve

    def recording_resolve(table: ExactTable, slot: int, source: RandomSource) -> int | None:
        resolved.append(slot)
        return resolve(table, slot, source)

    monkeypatch.setattr(ExactTable, "resolve", recording_resolve)
    slots = list(range(EDGY.ends[-1]))  # every occupied slot: sure, residual, each at an end
    block = sum(slot << (64 * position) for position, slot in enumerate(slots))
    got = EDGY.draw_many(len(slots), TapeSource([block] + [0] * 100), use_numpy=use_numpy)
    assert got == [0] * 33 + [1] * 23 + [2] + [3] * 2
    assert resolved == [32, 56, 58]  # the residual slots of outcomes 0, 2 and 3
