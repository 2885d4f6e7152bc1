"""The precision schedule of `dpmem audit` (dpmem_ref.audit.verdict.exact_worst_case) ends at
MAX_DPS: a loss exactly on a rounding tie at the 50th digit, which no enclosure of positive
width can round, is reported with the digits proved there instead of searching forever."""

from __future__ import annotations

from fractions import Fraction

from dpmem_ref.analysis import MAX_DPS
from dpmem_ref.audit.numbers import loss_text
from dpmem_ref.audit.verdict import exact_worst_case, proved_digits
from dpmem_ref.config.load import interface_from_dict

# Two views whose scores swap between the stores: equal normalizers, so the worst loss is
# exactly eps / (2 Delta u) = 1 + 5e-50, a tie at 50 significant digits.
TIE = {
    "positions": ["x"],
    "attributes": {"a": {"group": [1], "cap": str(Fraction(2) + Fraction(1, 10**49))}},
    "budget": {"rule": "online", "K": 1},
    "scorer": {"kind": "linear", "weights": {"r": "0", "c": "1", "s": "0"}, "sensitivity": "1"},
    "slots": {"x": {"generic": "x-u", "views": {"x-u": {"compatible": ["u"]}, "x-t": {"compatible": ["t"]}}}},
    "queries": [{"name": "q", "reads": [{"slot": "x", "positions": [1]}]}],
    "stores": {"A": {"1": {"tags": ["t"]}}, "B": {"1": {"tags": ["u"]}}},
}


def test_a_loss_on_a_rounding_tie_stops_at_max_dps_with_its_proved_digits() -> None:
    result = exact_worst_case(interface_from_dict(TIE), "A", "B", 1)
    assert result.dps == MAX_DPS
    lo, hi = result.worst.value.ends()
    assert lo < 1 + Fraction(5, 10**50) < hi
    assert proved_digits(result.worst.value) == 49
    assert loss_text(result.worst.value) == "1." + "0" * 48
