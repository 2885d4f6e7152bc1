"""`interface_from_dict` (public) takes a description built in code, not only parsed TOML.

An attacker's dict: any node of the Figure 2 description replaced by a Python value TOML
cannot produce (None, NaN, Decimal, Fraction, tuples, sets, bytes, non-string keys, objects)
or by one past every bound (a 5000-digit integer, a 100,000-character string, deep lists).
Every such input is refused with one-line InputError or ContractViolation; before, non-string
keys raised TypeError / AttributeError, an unhashable selector name TypeError, and a
5000-digit integer a ValueError from int -> str inside the error message itself.
"""

from __future__ import annotations

import copy
import math
import tomllib
from decimal import Decimal
from fractions import Fraction
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from dpmem_ref.config.load import interface_from_dict
from dpmem_ref.core.errors import ContractViolation, InputError
from tests.kernel_fixtures import FIGURE2

BASE = tomllib.loads(FIGURE2.read_text())


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path] if path else []
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, path + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, path + (index,))
    return found


PATHS = _paths(BASE)
WEIRD = st.one_of(
    st.sampled_from(
        [None, math.nan, math.inf, -math.inf, Decimal("1"), Fraction(1, 3), (1, 2), frozenset({1}), b"x", True, 1e308]
    ),
    st.builds(object),
    st.integers(10**300, 10**300 + 5).map(lambda n: n**16),  # ~4800 digits
    st.integers(-(10**6), 10**6),
    st.text(max_size=5) | st.just("x" * 100_000),
    st.dictionaries(st.one_of(st.integers(), st.tuples(st.text(max_size=2)), st.none()), st.integers(), min_size=1, max_size=2),
    st.recursive(st.none() | st.integers(), lambda inner: st.lists(inner, max_size=2), max_leaves=4),
)


@given(index=st.integers(0, len(PATHS) - 1), value=WEIRD)
def test_any_node_replaced_by_any_python_value_is_refused_in_one_line(index: int, value: object) -> None:
    data = copy.deepcopy(BASE)
    path = PATHS[index]
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    try:
        interface_from_dict(data, "f.toml")
    except (InputError, ContractViolation) as error:
        message = str(error)
        assert "\n" not in message and len(message) < 1_000, message


@given(key=st.one_of(st.integers(), st.tuples(st.integers()), st.none(), st.frozensets(st.integers(), max_size=1)))
def test_non_string_keys_are_refused_wherever_a_table_is_read(key: object) -> None:
    for table in ("attributes", "slots", "stores"):
        data = copy.deepcopy(BASE)
        data[table][key] = data[table][next(iter(data[table]))]
        try:
            interface_from_dict(data, "f.toml")
        except InputError as error:
            assert "string keys" in str(error) or "position numbers" in str(error), str(error)
        else:
            raise AssertionError(f"{table}: a {type(key).__name__} key was accepted")


def test_a_huge_integer_is_refused_without_printing_it() -> None:
    data = copy.deepcopy(BASE)
    data["scorer"]["weights"] = {"r": 10**5000}
    try:
        interface_from_dict(data, "f.toml")
    except InputError as error:
        assert "at most 200 digits" in str(error) and len(str(error)) < 200
    else:
        raise AssertionError("accepted")
