"""The mutation run's map of what child processes reach (tools/mutation/subprocess_reach.py)
names functions the way mutmut does (`x_f`, `xǁClassǁm`, nested functions belong to the function
around them) and keeps only the mutated modules' lines."""

from __future__ import annotations

import json
from pathlib import Path

from tests.mutation_tools import load_tool

ROOT = Path(__file__).resolve().parents[2]
reach = load_tool("subprocess_reach")

SOURCE = """\
import os


def outer(x):
    def inner(y):
        return y
    return inner(x)


class Keys:
    size = 3

    def load(self):
        return 1

    async def reload(self):
        return 2
"""


def test_function_spans_are_mutmuts_names_with_nested_functions_inside_their_outer_function() -> None:
    spans = reach.function_spans(SOURCE)
    assert spans == [("x_outer", 4, 7), ("xǁKeysǁload", 13, 14), ("xǁKeysǁreload", 16, 17)]


def test_only_lines_inside_functions_of_mutated_modules_count() -> None:
    module = "dpmem_ref/serve/keys.py"
    source = (ROOT / module).read_text(encoding="utf-8")
    (name, first, _last), *_ = reach.function_spans(source)
    lines = {
        str(ROOT / module): {first},  # inside the first function
        str(Path("/elsewhere/site-packages/dpmem_ref/serve/keys.py")): {1},  # module level: no function
        str(ROOT / "dpmem_ref" / "cli.py"): {1, 2, 3},  # not mutated
        "/usr/lib/python3.11/json/__init__.py": {1},
    }
    assert reach.functions_run(lines, {module}) == {f"dpmem_ref.serve.keys.{name}"}
    assert reach.functions_run(lines, set()) == set()


def test_the_edges_added_are_kept_beside_the_stats_with_those_recorded_before(tmp_path: Path) -> None:
    path = tmp_path / reach.EDGES
    assert reach.record_edges(path, {"pkg.x_f": {"t::b", "t::a"}, "pkg.x_g": set()}) == {"pkg.x_f": ["t::a", "t::b"]}
    assert reach.record_edges(path, {"pkg.x_f": ["t::c"], "pkg.x_h": ["u::a"]}) == {
        "pkg.x_f": ["t::a", "t::b", "t::c"],
        "pkg.x_h": ["u::a"],
    }
    assert json.loads(path.read_text()) == {"pkg.x_f": ["t::a", "t::b", "t::c"], "pkg.x_h": ["u::a"]}
