"""The interface state (dpmem_ref.turn.state): one ledger per attribute, in policy order."""

from __future__ import annotations

from fractions import Fraction

import pytest

from dpmem_ref import (
    InterfaceState,
)
from tests.kernel_fixtures import (
    interface_reading_1,
)


def test_ledger_map_needs_one_ledger_per_attribute():
    interface = interface_reading_1()
    with pytest.raises(ValueError):
        InterfaceState(turn=0, ledgers=(Fraction(0),), history=()).ledger_map(interface)
