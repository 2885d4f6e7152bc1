"""Exact integer tables for weights m_i * exp(-x_i): the score-adaptive proposal of Eq. (7).

The uniform-proposal sampler (`mechanism.ExponentialWeights.sample` for small gaps) needs
about n / sum_v exp(-gap_v) rounds: ~1,000 rounds for one dominant view among 1,024 at
eps = 12. This module samples a discrete law with weights m_i * exp(-x_i) (m_i >= 1 an
integer, x_i >= 0 rational) in about one round, still exactly and on integers only.

Construction (`build_table`). Pick an integer scale s and let T_i = s * m_i * exp(-x_i).
Each outcome i owns a_i = floor(T_i) "sure" slots and, when T_i is not an integer (x_i > 0:
exp(-x) is irrational for rational x != 0, Lindemann 1882), one "residual" slot, laid out
consecutively in [0, used); s is chosen so that used <= capacity < 2**TABLE_BITS. The floors
are exact: `exp_neg_bounds` brackets exp(-x) by integers at growing precision until the
bracket of T_i contains no integer boundary.

One round (`ExactTable.round`). Draw J uniform in [0, bound) with bound >= used. J in a sure
slot of i: outcome i. J in the residual slot of i: outcome i with probability
f_i = T_i - a_i, decided by `residual_accept` against a lazily drawn uniform U in [0, 1)
(accept iff a_i + U < T_i; more bits of U and a sharper bracket of T_i are drawn until the
dyadic interval holding U lies on one side of T_i). Otherwise: no outcome. Hence
Pr[round yields i] = (a_i + f_i) / bound = s * m_i * exp(-x_i) / bound, proportional to
m_i * exp(-x_i); rounds are independent, so repeating until one yields an outcome draws
Pr[i] = m_i exp(-x_i) / sum_j m_j exp(-x_j) exactly. A round fails with probability at
most (n + 1) / 2**(TABLE_BITS - 1) for n outcomes, about 1e-16 at 1,024.

Every decision compares integers; the randomness is `RandomSource.randbelow` only.
"""

from __future__ import annotations

import importlib
import struct
from bisect import bisect_right
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache
from typing import Any

import attrs

from dpmem_ref.core.errors import InputError
from dpmem_ref.core.validate import check_int
from dpmem_ref.mechanism.randomness import RandomSource

TABLE_BITS = 64
_GUARD = 16
CHUNK_BITS = 32
_BLOCK = 8192  # draws decoded per big uniform integer in `draw_many`

# numpy only speeds up the batch search; the pure-Python path gives the same draws. It is
# imported on the first batch (`_numpy`), not with the kernel: a turn never needs it.
_NOT_LOADED: Any = object()
_np: Any = _NOT_LOADED  # the numpy module once loaded; None: switched off (a test), the pure path


def _numpy() -> Any:
    global _np
    if _np is _NOT_LOADED:  # no local names the module (a test traces this file's frames for arrays)
        _np = importlib.import_module("numpy")  # a kernel dependency (pyproject): no fallback needed
    return _np


def _series_bounds(p: int, q: int, bits: int) -> tuple[int, int]:
    """Integers lo <= 2**bits * exp(-p/q) <= hi for 0 <= p/q <= 1.

    Partial sums S_k = sum_{j<=k} (-r)^j / j! alternate around exp(-r) with terms of
    non-increasing size (r <= 1), so exp(-r) lies between S_{k-1} and S_k. S_k is exact:
    A_k / (q^k k!) with A_k = A_{k-1} * q * k + (-p)^k.
    """
    numerator, denominator, power = 1, 1, 1
    k = 0
    while True:
        k += 1
        previous = numerator * q * k
        power *= -p
        numerator = previous + power
        denominator *= q * k
        if (abs(power) << bits) <= denominator:  # the last term is below 2**-bits
            low, high = sorted((previous, numerator))
            return (low << bits) // denominator, -((-high << bits) // denominator)


@lru_cache(maxsize=1 << 16)
def exp_neg_bounds(x: Fraction, bits: int) -> tuple[int, int]:
    """Integers (lo, hi) with lo <= 2**bits * exp(-x) <= hi, for rational x >= 0.

    exp(-x) = exp(-1)**w * exp(-r), w = floor(x), r = x - w; each factor is bracketed by
    exact alternating series at bits + guard precision and multiplied with floor/ceil
    rounding. hi - lo shrinks like 2**-guard * (w + 1) + 3 units.
    """
    if not isinstance(x, Fraction) or x < 0:
        raise InputError("exponent", "a non-negative rational", x)
    one = 1 << bits
    if x == 0:
        return one, one
    whole = x.numerator // x.denominator
    if whole >= bits:  # exp(-w) < 2**-w <= 2**-bits
        return 0, 1
    precision = bits + _GUARD + whole.bit_length()
    rest = x - whole
    low, high = _series_bounds(rest.numerator, rest.denominator, precision)
    if whole:
        e_low, e_high = _series_bounds(1, 1, precision)
        shift = precision * whole
        low = low * e_low**whole >> shift
        high = -((-high * e_high**whole) >> shift)
    drop = precision - bits
    return low >> drop, -((-high) >> drop)


@attrs.frozen
class ExactTable:
    """Slots for Pr[i] proportional to multiplicities[i] * exp(-exponents[i]) (see module doc)."""

    multiplicities: tuple[int, ...]
    exponents: tuple[Fraction, ...]
    scale: int
    sure: tuple[int, ...]  # a_i = floor(T_i)
    ends: tuple[int, ...]  # end of outcome i's slots (its sure slots, then its residual slot)
    bound: int  # a round draws its slot below this (>= ends[-1])
    chunk_bits: int = CHUNK_BITS  # bits of U drawn per step of a residual Bernoulli

    def round(self, source: RandomSource) -> int | None:
        """One round: an outcome index, or None (draw another round)."""
        return self.resolve(source.randbelow(self.bound), source)

    def resolve(self, slot: int, source: RandomSource) -> int | None:
        """The outcome of slot J of a round (residual slots draw their Bernoulli from source)."""
        index = bisect_right(self.ends, slot)
        if index == len(self.ends):
            return None
        offset = slot - (self.ends[index - 1] if index else 0)
        if offset < self.sure[index] or residual_accept(self, index, source, self.chunk_bits):
            return index
        return None

    def draw(self, source: RandomSource) -> int:
        """Repeat rounds until one yields an outcome: Pr[i] = m_i exp(-x_i) / sum_j m_j exp(-x_j)."""
        while True:
            outcome = self.round(source)
            if outcome is not None:
                return outcome

    def draw_many(self, count: int, source: RandomSource, use_numpy: bool = True) -> list[int]:
        """`count` independent draws. Each block of draws takes its round slots from ONE
        uniform integer below 2**(64 * block), whose 64-bit digits are independent uniform
        slots; rare non-sure slots are resolved in order, then redrawn with `draw`."""
        check_int(count, "count", low=0)
        result: list[int] = []
        while len(result) < count:
            block = min(_BLOCK, count - len(result))
            data = source.randbelow(1 << (TABLE_BITS * block)).to_bytes(8 * block, "little")
            if use_numpy and _numpy() is not None:
                slots = _np.frombuffer(data, dtype="<u8")
                ends = _np.array(self.ends, dtype=_np.uint64)
                starts = _np.concatenate((_np.zeros(1, dtype=_np.uint64), ends[:-1]))
                sure_ends = _np.append(starts + _np.array(self.sure, dtype=_np.uint64), _np.uint64(0))
                indices = _np.searchsorted(ends, slots, side="right")
                decided = slots < sure_ends[indices]  # uint64 against uint64: exact
                found = indices.tolist()
                pending = _np.flatnonzero(~decided).tolist()
                slot_list = slots.tolist() if pending else []
            else:
                slot_list = list(struct.unpack(f"<{block}Q", data))
                found = [bisect_right(self.ends, slot) for slot in slot_list]
                pending = [
                    position for position, (slot, index) in enumerate(zip(slot_list, found, strict=True))
                    if index == len(self.ends) or slot - (self.ends[index - 1] if index else 0) >= self.sure[index]
                ]
            for position in pending:
                outcome = self.resolve(slot_list[position], source)
                found[position] = self.draw(source) if outcome is None else outcome
            result.extend(found)
        return result


def build_table(
    multiplicities: Sequence[int], exponents: Sequence[Fraction], table_bits: int = TABLE_BITS, chunk_bits: int = CHUNK_BITS
) -> ExactTable:
    """The exact table for weights m_i * exp(-x_i); at least one x_i must be 0.

    Smaller table_bits and chunk_bits (tests) make residual and empty slots frequent and
    every draw's bound small, so that a round's law can be enumerated exactly.
    """
    if not exponents or len(multiplicities) != len(exponents) or min(exponents) != 0:
        raise InputError("exact table", "one exponent per outcome, the smallest 0", len(exponents))
    if not 2 * len(exponents) < 1 << table_bits <= 1 << TABLE_BITS:
        raise InputError("table_bits", f"room for 2 slots per outcome, at most {TABLE_BITS}", table_bits)
    if not 1 <= chunk_bits <= 64:
        raise InputError("chunk_bits", "1..64", chunk_bits)
    bound = (1 << table_bits) - 1
    capacity = bound - 1 - len(exponents)
    bits = table_bits + _GUARD
    upper = sum(m * exp_neg_bounds(x, bits)[1] for m, x in zip(multiplicities, exponents, strict=True))
    scale = (capacity << bits) // upper  # sum_i T_i <= scale * upper / 2**bits <= capacity
    if scale < 1:
        raise InputError("table_bits", "a table with room for every multiplicity", table_bits)
    sure: list[int] = []
    ends: list[int] = []
    used = 0
    for m, x in zip(multiplicities, exponents, strict=True):
        floor_t = _exact_floor(scale * m, x)
        used += floor_t + (x != 0)
        sure.append(floor_t)
        ends.append(used)
    return ExactTable(tuple(multiplicities), tuple(exponents), scale, tuple(sure), tuple(ends), bound, chunk_bits)


def _exact_floor(factor: int, x: Fraction) -> int:
    """floor(factor * exp(-x)), refined until the bracket holds no integer boundary."""
    if x == 0:
        return factor
    bits = factor.bit_length() + _GUARD
    while True:
        low, high = exp_neg_bounds(x, bits)
        floor_low, floor_high = (factor * low) >> bits, (factor * high) >> bits
        if floor_low == floor_high:
            return floor_low
        bits *= 2


def residual_accept(table: ExactTable, index: int, source: RandomSource, chunk_bits: int = CHUNK_BITS) -> bool:
    """Bernoulli(T_i - a_i): accept iff a_i + U < T_i for a lazily drawn uniform U in [0, 1).

    U's first k bits u place it in [u / 2**k, (u + 1) / 2**k). With T_i bracketed in
    [low, high] / 2**b: accept when a_i + (u + 1) / 2**k <= low / 2**b (every U in the
    interval is below T_i), reject when a_i + u / 2**k >= high / 2**b, else draw
    chunk_bits more bits. T_i is irrational, so a decision comes with probability 1.
    """
    factor = table.scale * table.multiplicities[index]
    x, sure = table.exponents[index], table.sure[index]
    u = k = 0
    while True:
        u = (u << chunk_bits) | source.randbelow(1 << chunk_bits)
        k += chunk_bits
        bits = k + factor.bit_length() + _GUARD
        low, high = exp_neg_bounds(x, bits)
        left = ((sure << k) + u) << bits  # (a_i + u / 2**k), scaled by 2**(k + bits)
        if left + (1 << bits) <= (factor * low) << k:
            return True
        if left >= (factor * high) << k:
            return False
