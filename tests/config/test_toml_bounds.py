"""Interface files are pre-scanned before parsing: bounded work on any TOML.

Generated pathological TOML, as an attacker would write it: table headers, array-of-tables
headers, dotted keys and inline-table keys with more dotted parts than MAX_KEY_PARTS (bare,
quoted, spaced), arrays and inline tables nested past MAX_TOML_DEPTH, more keys than
MAX_TOML_KEYS, headers past MAX_HEADER_CHARS. Each is refused by the pre-scan (the message
names the limit and the line), through the loader and `dpmem check` / `dpmem run` (exit 2,
one line). The twin: the same characters inside strings and comments are not structure, and
any valid TOML within the limits passes the pre-scan and parses to the same data. No timing
here: benchmarks/adversarial_inputs.py prints how long the refusals take.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpmem_ref.config.toml_bounds import load_toml, prescan
from dpmem_ref.core.errors import InputError
from dpmem_ref.core.limits import MAX_HEADER_CHARS, MAX_KEY_PARTS, MAX_TOML_DEPTH, MAX_TOML_KEYS
from tests.kernel_fixtures import FIGURE2, run_cli

LIMITS = "expected TOML within the documented limits"

PART = st.one_of(
    st.from_regex(r"[A-Za-z0-9_-]{1,6}", fullmatch=True),
    st.from_regex(r'"[a-z.\[\] =#]{0,6}"', fullmatch=True),  # quoted parts may hold dots and brackets
    st.from_regex(r"'[a-z.\[\] =#]{0,6}'", fullmatch=True),
)
DOT = st.sampled_from([".", " . ", ".\t", " ."])


@st.composite
def dotted(draw: st.DrawFn, minimum: int, maximum: int) -> str:
    count = draw(st.integers(minimum, maximum))
    part = draw(PART)
    dot = draw(DOT)
    return dot.join([part] * count)


@st.composite
def too_many_parts(draw: st.DrawFn) -> tuple[str, int]:
    """A document whose one key or header has more than MAX_KEY_PARTS parts, and its line."""
    key = draw(dotted(MAX_KEY_PARTS + 1, 4 * MAX_KEY_PARTS))
    prefix_lines = draw(st.integers(0, 3))
    prefix = "".join(f"k{i} = {i}\n" for i in range(prefix_lines))
    form = draw(st.sampled_from(["header", "array-of-tables", "key", "inline", "inline-in-array"]))
    body = {
        "header": f"[{key}]\n",
        "array-of-tables": f"[[{key}]]\n",
        "key": f"{key} = 1\n",
        "inline": f"x = {{ a = 1, {key} = 2 }}\n",
        "inline-in-array": f"x = [\n  {{ {key} = 2 }},\n]\n",
    }[form]
    line = prefix_lines + (2 if form == "inline-in-array" else 1)
    return prefix + body, line


@st.composite
def too_deep(draw: st.DrawFn) -> str:
    depth = draw(st.integers(MAX_TOML_DEPTH + 1, 4 * MAX_TOML_DEPTH))
    openers = draw(st.lists(st.sampled_from(["[", "{ a = ", "[ 1, "]), min_size=depth, max_size=depth))
    closers = "".join("]" if o.startswith("[") else "}" for o in reversed(openers))
    return "x = " + "".join(openers) + "1" + closers + "\n"


def refusal(text: str) -> str:
    with pytest.raises(InputError) as info:
        load_toml(text.encode(), "file f.toml")
    message = str(info.value)
    assert message.startswith(f"file f.toml: {LIMITS}") and "\n" not in message, message
    return message


@given(case=too_many_parts())
def test_keys_and_headers_with_too_many_dotted_parts_are_refused(case: tuple[str, int]) -> None:
    text, line = case
    assert f"more than {MAX_KEY_PARTS} dotted parts at line {line}" in refusal(text)


@given(text=too_deep())
def test_nesting_past_the_depth_limit_is_refused(text: str) -> None:
    assert f"nested more than {MAX_TOML_DEPTH} deep at line 1" in refusal(text)


@given(length=st.integers(MAX_HEADER_CHARS + 1, 4 * MAX_HEADER_CHARS), quoted=st.booleans())
def test_headers_past_the_length_limit_are_refused(length: int, quoted: bool) -> None:
    key = f'"{"h" * (length - 2)}"' if quoted else "h" * length
    assert f"a table header longer than {MAX_HEADER_CHARS} characters" in refusal(f"[{key}]\n")


def test_more_keys_than_the_limit_are_refused_before_parsing() -> None:
    text = "a = 1\n" * (MAX_TOML_KEYS + 1)  # also invalid (duplicates): the pre-scan answers first
    assert f"more than {MAX_TOML_KEYS} keys at line {MAX_TOML_KEYS + 1}" in refusal(text)


def test_the_issue_21_header_is_refused_by_the_pre_scan() -> None:
    """A 200 KB file whose table header has 100,000 dotted parts (over 60 s to parse)."""
    text = "[" + ".".join(["a"] * 100_000) + "]\n"
    assert len(text) > 199_000
    with pytest.raises(InputError, match=f"more than {MAX_KEY_PARTS} dotted parts at line 1"):
        prescan(text, "file f.toml")


def test_at_the_limits_is_accepted() -> None:
    """The tightness twin of every refusal above: exactly at each limit parses."""
    parts = ".".join(f"p{i}" for i in range(MAX_KEY_PARTS))
    assert load_toml(f"[{parts}]\n".encode(), "f")
    assert load_toml(f"x.{'.'.join(['y'] * (MAX_KEY_PARTS - 1))} = 1\n".encode(), "f")
    deep = "x = " + "[" * MAX_TOML_DEPTH + "]" * MAX_TOML_DEPTH + "\n"
    assert load_toml(deep.encode(), "f")["x"]
    header = "[" + "h" * (MAX_HEADER_CHARS - 1) + "]\n"
    assert load_toml(header.encode(), "f")
    keys = "".join(f"k{i} = 1\n" for i in range(MAX_TOML_KEYS // 4))
    assert len(load_toml(keys.encode(), "f")) == MAX_TOML_KEYS // 4


STRUCTURE = "[" + ".".join(["a"] * 200) + "]" + "[" * 100 + "{" * 100 + " = , #"


@pytest.mark.parametrize(
    "text",
    [
        f'text = "{STRUCTURE}"\n',
        f"text = '{STRUCTURE}'\n",
        f'text = """\n{STRUCTURE}\n[{STRUCTURE}]\n"""\n',
        f"text = '''\n{STRUCTURE}\n'''\n",
        f'text = """a"b""{STRUCTURE}\\"""\n"""""\n',
        f"# {STRUCTURE}\nx = 1 # {STRUCTURE}\n",
        f'"{".".join(["q"] * 50)}" = 1\n',  # one quoted key part holding 49 dots
        f'x = [ "{STRUCTURE}", # {STRUCTURE}\n  "b" ]\n',
    ],
)
def test_strings_and_comments_are_not_structure(text: str) -> None:
    assert load_toml(text.encode(), "f") == tomllib.loads(text)


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")) | st.sampled_from("\n\t\"'\\[]{}=.,#"), max_size=12)
SCALAR = st.one_of(st.integers(-(10**6), 10**6), st.booleans(), TEXT, st.floats(allow_nan=False, allow_infinity=False))
KEY = st.one_of(st.from_regex(r"[A-Za-z0-9_-]{1,8}", fullmatch=True), TEXT)
VALUE = st.recursive(
    SCALAR,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEY, inner, max_size=4),
    max_leaves=12,
)


def _key(key: str) -> str:
    return key if key and all(c.isascii() and (c.isalnum() or c in "_-") for c in key) else json.dumps(key, ensure_ascii=False)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"


@given(document=st.dictionaries(KEY, st.dictionaries(KEY, VALUE, max_size=4), max_size=4), scalars=st.dictionaries(KEY, VALUE, max_size=4))
def test_valid_toml_within_the_limits_passes_and_parses_unchanged(
    document: dict[str, dict[str, Any]], scalars: dict[str, Any]
) -> None:
    """The pre-scan never refuses a valid document within the limits, whatever its strings
    hold, and the data is what the parser alone gives."""
    lines = [f"{_key(k)} = {_value(v)}" for k, v in scalars.items() if k not in document]
    for name, table in document.items():
        lines.append(f"[{_key(name)}]")
        lines += [f"{_key(k)} = {_value(v)}" for k, v in table.items()]
    text = "\n".join(lines) + "\n"
    assert load_toml(text.encode(), "f") == tomllib.loads(text)


def test_the_command_line_refuses_with_one_line_and_exit_2(tmp_path: Path) -> None:
    figure2 = FIGURE2.read_text()
    queries = tmp_path / "q.txt"
    queries.write_text("affordable-dinner\n")
    cases = {
        "header": figure2 + "[" + ".".join(["a"] * 5_000) + "]\n",
        "dotted key": ".".join(["a"] * 5_000) + " = 1\n" + figure2,
        "nesting": "x = " + "[" * 5_000 + "]" * 5_000 + "\n" + figure2,
        "inline nesting": "x = " + "{a = " * 300 + "1" + "}" * 300 + "\n" + figure2,
    }
    for name, text in cases.items():
        path = tmp_path / "case.toml"
        path.write_text(text)
        for argv in (
            ["check", str(path)],
            ["check", str(path), "--json"],
            ["audit", str(path), "--store-a", "M", "--store-b", "M", "--horizon", "1"],
            ["run", str(path), "--store", "M", "--queries", str(queries)],
        ):
            code, out, err = run_cli(argv)
            assert code == 2, (name, argv, err)
            lines = err.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith(f"dpmem: error: file {path}: {LIMITS}"), (name, err)
            assert "Traceback" not in err and len(err) < 400
