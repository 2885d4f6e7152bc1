"""The compared interfaces pick their kernel parts through the kernel's registry of parts
(dpmem_ref.config.registry), by the names an interface file uses."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dpmem_eval.pipeline import kernel_runs as K
from dpmem_eval.pipeline import methods as M
from dpmem_ref.config.registry import BUDGET_RULES, CAP_RULES, CONTROLS, SCORERS, SELECTORS
from dpmem_ref.core.errors import InputError

DP_METHODS = [m for m in M.all_methods() if m.kind == "dp"]
PARTS = (("budget", BUDGET_RULES), ("scorer", SCORERS), ("selector", SELECTORS), ("cap_rule", CAP_RULES),
         ("control", CONTROLS))


@pytest.mark.parametrize("method", DP_METHODS, ids=lambda m: m.key)
def test_every_dp_method_names_registered_parts_and_gets_them(method, pair, policy):
    interface = K.kernel_interface(method, pair, policy, 4)
    for attribute, table in PARTS:
        name = getattr(method, attribute)
        assert name in table.names
        if table is not SCORERS:  # the linear scorer carries no name
            assert getattr(interface, attribute).name == name


def test_the_methods_reach_the_parts_tables_4_and_the_diagnostic_need():
    used = {attribute: {getattr(m, attribute) for m in DP_METHODS} for attribute, _ in PARTS}
    assert used == {"budget": {"online", "preallocated"}, "scorer": {"linear"}, "selector": {"em", "argmax"},
                    "cap_rule": {"prospective", "none"}, "control": {"fallback", "top-score"}}


@pytest.mark.parametrize(("attribute", "table"), PARTS, ids=[a for a, _ in PARTS])
def test_an_unknown_part_name_in_a_method_names_the_method_and_lists_every_valid_name(attribute, table, pair, policy):
    method = replace(M.method_by_key(M.all_methods(), "dp_on"), **{attribute: "no-such-part"})
    with pytest.raises(InputError) as caught:
        K.kernel_interface(method, pair, policy, 4)
    assert str(caught.value) == f"method dp_on.{attribute}: expected {table.expected}, found 'no-such-part'"
    assert all(name in caught.value.expected for name in table.names)
