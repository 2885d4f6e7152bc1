"""One loss type for the exact engine, the auditor, the counterexamples and the proofs.

A privacy-loss value (a log likelihood ratio, or the worst case of one) is one of:

- impossible: no transcript on the numerator's side has positive probability (the
  identity of `join`, and absorbing under `add`: a path through it is not a transcript);
- finite: an outward-rounded interval [lo, hi] enclosing an exact real, at `IV_DPS`
  decimal digits. The exact zero [0, 0] is produced only where the two release
  distributions are identical (no enclosure is subtracted), so identical stores give
  exactly 0, not [-w, w];
- infinite: a transcript with positive probability under the numerator store only.

`add` is the loss of a step followed by a rest, `join` encloses max(x, y), `rank` is the
witness order (impossible < finite by upper end < infinite), and the endpoints convert
exactly to Fractions for certificates (`le`, `gt`). Endpoints are mpmath's raw mpf tuples
(the representation mpmath.iv uses underneath) rounded with libmp's directed modes.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import mpmath
from mpmath import libmp

from dpmem_ref.mechanism.em import IV_DPS as IV_DPS  # one precision for every enclosure: the kernel's and the engine's

PREC = libmp.dps_to_prec(IV_DPS)

_IMPOSSIBLE, _FINITE, _INFINITE = 0, 1, 2
_ZERO = libmp.fzero

Raw = tuple[Any, ...]  # an mpmath raw mpf (sign, mantissa, exponent, bitcount)


def _fraction(raw: Raw) -> Fraction:
    p, q = libmp.to_rational(raw)
    return Fraction(int(p), int(q))


class Loss:
    """An exact privacy-loss value: impossible, a finite interval, or +infinity."""

    __slots__ = ("_floats", "hi", "kind", "lo")

    def __init__(self, kind: int, lo: Raw = _ZERO, hi: Raw = _ZERO) -> None:
        self.kind = kind
        self.lo = lo
        self.hi = hi
        self._floats: tuple[float, float] | None = None  # the ends as floats, for fast comparisons (`_ends_f`)

    def _ends_f(self) -> tuple[float, float]:
        """Both ends rounded to the nearest float. Rounding is monotone, so a strict float
        inequality proves the exact one; equal floats fall back to exact comparison."""
        floats = self._floats
        if floats is None:
            floats = self._floats = (libmp.to_float(self.lo), libmp.to_float(self.hi))
        return floats

    # ---- constructors

    @staticmethod
    def interval(value: Any) -> Loss:
        """From an mpmath interval (`mpmath.iv.mpf`) enclosing a finite log ratio."""
        lo, hi = value._mpi_
        if lo in (libmp.fninf, libmp.fnan) or hi in (libmp.finf, libmp.fnan):
            raise ValueError("a finite loss needs finite interval ends")
        return Loss(_FINITE, lo, hi)

    @staticmethod
    def of_fractions(lo: Fraction, hi: Fraction) -> Loss:
        """[lo, hi] rounded outward to the working precision."""
        return Loss(
            _FINITE,
            libmp.from_rational(lo.numerator, lo.denominator, PREC, libmp.round_floor),
            libmp.from_rational(hi.numerator, hi.denominator, PREC, libmp.round_ceiling),
        )

    # ---- predicates

    @property
    def is_impossible(self) -> bool:
        return self.kind == _IMPOSSIBLE

    @property
    def is_infinite(self) -> bool:
        return self.kind == _INFINITE

    @property
    def is_finite(self) -> bool:
        return self.kind == _FINITE

    @property
    def is_zero(self) -> bool:
        """Exactly 0 (identical release distributions), not an enclosure of it."""
        return self.kind == _FINITE and self.lo == _ZERO and self.hi == _ZERO

    # ---- arithmetic

    def add(self, other: Loss) -> Loss:
        """The loss of this step followed by `other` (log ratios add along a transcript)."""
        if self.kind == _IMPOSSIBLE or other.kind == _IMPOSSIBLE:
            return IMPOSSIBLE
        if self.kind == _INFINITE or other.kind == _INFINITE:
            return INFINITE
        if other.lo == _ZERO and other.hi == _ZERO:
            return self
        if self.lo == _ZERO and self.hi == _ZERO:
            return other
        return Loss(
            _FINITE,
            libmp.mpf_add(self.lo, other.lo, PREC, libmp.round_floor),
            libmp.mpf_add(self.hi, other.hi, PREC, libmp.round_ceiling),
        )

    def join(self, other: Loss) -> Loss:
        """Encloses max(x, y) for x in self, y in other (impossible is the identity)."""
        if self.kind == _IMPOSSIBLE:
            return other
        if other.kind == _IMPOSSIBLE:
            return self
        if self.kind == _INFINITE:
            return self
        if other.kind == _INFINITE:
            return other
        (flo, fhi), (olo, ohi) = self._ends_f(), other._ends_f()
        lo = self.lo if (flo > olo or (flo == olo and libmp.mpf_ge(self.lo, other.lo))) else other.lo
        hi = self.hi if (fhi > ohi or (fhi == ohi and libmp.mpf_ge(self.hi, other.hi))) else other.hi
        if lo is self.lo and hi is self.hi:
            return self
        if lo is other.lo and hi is other.hi:
            return other
        return Loss(_FINITE, lo, hi)

    def neg(self) -> Loss:
        """-x for a finite loss (the other direction of one step)."""
        if self.kind != _FINITE:
            raise ValueError("only a finite loss has a negation")
        return Loss(_FINITE, libmp.mpf_neg(self.hi), libmp.mpf_neg(self.lo))

    def ranks_above(self, other: Loss) -> bool:
        """The witness order: impossible < finite (by upper end) < infinite."""
        if self.kind != other.kind or self.kind != _FINITE:
            return self.kind > other.kind
        mine, theirs = self._ends_f()[1], other._ends_f()[1]
        if mine != theirs:
            return mine > theirs
        return bool(libmp.mpf_gt(self.hi, other.hi))

    # ---- reading it

    @property
    def lower(self) -> mpmath.mpf:
        """The lower end as an mpf (-inf when impossible, +inf when infinite)."""
        if self.kind != _FINITE:
            return mpmath.mpf("-inf") if self.kind == _IMPOSSIBLE else mpmath.mpf("inf")
        return mpmath.mp.make_mpf(self.lo)  # exact: no rounding to the context precision

    @property
    def upper(self) -> mpmath.mpf:
        if self.kind != _FINITE:
            return mpmath.mpf("-inf") if self.kind == _IMPOSSIBLE else mpmath.mpf("inf")
        return mpmath.mp.make_mpf(self.hi)

    @property
    def midpoint(self) -> mpmath.mpf:
        if self.kind != _FINITE:
            return self.upper
        with mpmath.workprec(PREC + 4):
            return (mpmath.mp.make_mpf(self.lo) + mpmath.mp.make_mpf(self.hi)) / 2

    def ends(self) -> tuple[Fraction, Fraction]:
        """Both ends exactly (finite losses only)."""
        if self.kind != _FINITE:
            raise ValueError("only a finite loss has exact ends")
        return _fraction(self.lo), _fraction(self.hi)

    def within(self, bound: Fraction) -> bool:
        """Certified loss <= bound: the upper end, compared exactly on rationals."""
        if self.kind != _FINITE:
            return self.kind == _IMPOSSIBLE
        return _fraction(self.hi) <= bound

    def exceeds(self, bound: Fraction) -> bool:
        """Certified loss > bound: the lower end exceeds it (or the loss is infinite)."""
        if self.kind != _FINITE:
            return self.kind == _INFINITE
        return _fraction(self.lo) > bound

    def to_interval(self) -> Any:
        """As an mpmath interval (finite losses only)."""
        if self.kind != _FINITE:
            raise ValueError("only a finite loss is an interval")
        return mpmath.iv.make_mpf((self.lo, self.hi))

    # ---- identity (the fixed-point test compares values exactly)

    def _key(self) -> tuple[int, Raw, Raw]:
        return (self.kind, self.lo, self.hi)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Loss) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        if self.kind == _IMPOSSIBLE:
            return "Loss(impossible)"
        if self.kind == _INFINITE:
            return "Loss(inf)"
        if self.is_zero:
            return "Loss(0)"
        return f"Loss([{mpmath.nstr(mpmath.mpf(self.lo), 12)}, {mpmath.nstr(mpmath.mpf(self.hi), 12)}])"


IMPOSSIBLE = Loss(_IMPOSSIBLE)
ZERO = Loss(_FINITE)
INFINITE = Loss(_INFINITE)


def step_losses(log_a: Any, log_b: Any) -> tuple[Loss, Loss]:
    """(log Pr_A - log Pr_B, log Pr_B - log Pr_A) of one release from the two enclosures
    of its log probabilities (mpmath intervals; None outside a side's support)."""
    if log_a is None and log_b is None:
        return IMPOSSIBLE, IMPOSSIBLE
    if log_b is None:
        return INFINITE, IMPOSSIBLE
    if log_a is None:
        return IMPOSSIBLE, INFINITE
    ab = Loss.interval(log_a - log_b)
    return ab, ab.neg()
