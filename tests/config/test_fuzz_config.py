"""Fuzzing the TOML loader and the CLI with malformed interface descriptions.

Every example is malformed by construction (one invalid field in the Figure 2
description, a broken TOML text, random bytes, or bad command-line arguments). The CLI
must answer with exit code 2 and ONE line "dpmem: error: <field>: ..." naming the field,
never a traceback. Example counts: the `ci` profile runs ~10 x 50 + 8 x 50 examples; the
`thorough` profile (HYPOTHESIS_PROFILE=thorough) runs >= 10,000 (printed at the end).
"""

from __future__ import annotations

import copy
import math
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmem_ref.core.errors import one_line
from tests.kernel_fixtures import run_cli

ROOT = Path(__file__).resolve().parents[2]
BASE: dict[str, Any] = tomllib.loads((ROOT / "examples" / "figure2.toml").read_text())
COUNTS: Counter[str] = Counter()
MAIN_FACTOR = 8  # the mutation test runs 8x the profile's max_examples


# ----------------------------------------------------------------------------- TOML writer


def _string(text: str) -> str:
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_string(str(k))} = {_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value).__name__)


def to_toml(data: dict[str, Any]) -> str:
    return "".join(f"{_string(k)} = {_value(v)}\n" for k, v in data.items())


# ----------------------------------------------------------------------------- running the CLI


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fuzz")
    (path / "queries.txt").write_text("affordable-dinner\ncheckup-reminder\n")
    return path


def assert_refused(code: int, err: str, field: str | None, kind: str) -> None:
    COUNTS[kind] += 1
    assert "Traceback" not in err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("dpmem: error: "), err
    if field is not None:
        assert one_line(field) in lines[0], (field, lines[0])


def run_config(workdir: Path, text: str | bytes, field: str | None, kind: str, store: str = "M") -> None:
    path = workdir / "config.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    code, _, err = run_cli(
        ["run", str(path), "--store", store, "--queries", str(workdir / "queries.txt"), "--seed", "0"]
    )
    assert_refused(code, err, field, kind)


# ----------------------------------------------------------------------------- mutations

junk_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
floats = st.floats(allow_nan=True, allow_infinity=True)
containers = st.one_of(
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)
)
not_a_number = st.one_of(floats, st.booleans(), containers, junk_text.filter(lambda s: not _is_rational(s)))
long_rational = st.integers(201, 5000).map(lambda n: "1" * n)


def _is_rational(text: str) -> bool:
    from dpmem_ref.core.errors import InputError
    from dpmem_ref.core.rational import to_fraction

    try:
        to_fraction(text, "x")
    except InputError:
        return False
    return True


def nonpositive_rational() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.integers(max_value=0),
        st.tuples(st.integers(max_value=0), st.integers(1, 10**6)).map(lambda t: f"{t[0]}/{t[1]}"),
    )


def outside_unit() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.integers(min_value=2),
        st.integers(max_value=-1),
        st.tuples(st.integers(1, 10**6), st.integers(1, 10**6))
        .filter(lambda t: t[0] > t[1])
        .map(lambda t: f"{t[0]}/{t[1]}"),
        st.integers(1, 10**6).map(lambda d: f"-1/{d}"),
    )


positive_bad = st.one_of(not_a_number, nonpositive_rational(), long_rational, st.just("1/0"))

READS = [(0, 0), (0, 1), (1, 0), (2, 0)]
ATTRIBUTES = ["diabetes", "debt"]
SLOTS = ["health", "food", "finance", "schedule"]


@st.composite
def mutation(draw: st.DrawFn) -> tuple[dict[str, Any], str, str]:
    """(data, field the message must name, kind): exactly one malformed field."""
    data = copy.deepcopy(BASE)
    kind = draw(
        st.sampled_from(
            [
                "cap",
                "K",
                "sensitivity",
                "weight",
                "relevance",
                "unknown-key",
                "unknown-name",
                "wrong-type",
                "missing",
                "position",
                "oversized",
            ]
        )
    )
    if kind == "cap":
        attribute = draw(st.sampled_from(ATTRIBUTES))
        data["attributes"][attribute]["cap"] = draw(positive_bad)
        return data, f"attributes.{attribute}.cap", kind
    if kind == "K":
        data["budget"]["K"] = draw(st.one_of(not_a_number, st.integers(max_value=0), st.just("3")))
        return data, "budget.K", kind
    if kind == "sensitivity":
        data["scorer"]["sensitivity"] = draw(positive_bad)
        return data, "scorer.sensitivity", kind
    if kind == "weight":
        key = draw(st.sampled_from(["r", "c", "s"]))
        data["scorer"]["weights"][key] = draw(
            st.one_of(not_a_number, st.integers(max_value=-1), st.integers(min_value=2), long_rational)
        )
        return data, "scorer.weights", kind
    if kind == "relevance":
        q, r = draw(st.sampled_from(READS))
        read = data["queries"][q]["reads"][r]
        view = draw(st.sampled_from(sorted(read["relevance"])))
        read["relevance"][view] = draw(st.one_of(not_a_number, outside_unit(), long_rational))
        return data, f"queries.{data['queries'][q]['name']}.reads[{r}].relevance.{view}", kind
    if kind == "unknown-key":
        key = "x" + draw(junk_text)
        target = draw(
            st.sampled_from(
                [
                    "top",
                    "attribute",
                    "budget",
                    "scorer",
                    "weights",
                    "slot",
                    "view",
                    "query",
                    "read",
                    "item",
                    "deployment",
                ]
            )
        )
        if target == "top":
            data[key] = 1
            return data, "top level", kind
        if target == "attribute":
            attribute = draw(st.sampled_from(ATTRIBUTES))
            data["attributes"][attribute][key] = 1
            return data, f"attributes.{attribute}", kind
        if target == "budget":
            data["budget"][key] = 1
            return data, "budget", kind
        if target == "scorer":
            data["scorer"][key] = 1
            return data, "scorer", kind
        if target == "weights":
            data["scorer"]["weights"][key] = 1
            return data, "scorer.weights", kind
        if target == "slot":
            slot = draw(st.sampled_from(SLOTS))
            data["slots"][slot][key] = 1
            return data, f"slots.{slot}", kind
        if target == "view":
            slot = draw(st.sampled_from(SLOTS))
            view = draw(st.sampled_from(sorted(data["slots"][slot]["views"])))
            data["slots"][slot]["views"][view][key] = 1
            return data, f"slots.{slot}.views.{view}", kind
        if target == "query":
            q = draw(st.integers(0, 2))
            data["queries"][q][key] = 1
            return data, f"queries.{data['queries'][q]['name']}", kind
        if target == "read":
            q, r = draw(st.sampled_from(READS))
            data["queries"][q]["reads"][r][key] = 1
            return data, f"queries.{data['queries'][q]['name']}.reads[{r}]", kind
        if target == "item":
            store = draw(st.sampled_from(sorted(data["stores"])))
            data["stores"][store]["1"][key] = 1
            return data, f"stores.{store}.1", kind
        data["deployment"][key] = 1
        return data, "deployment", kind
    if kind == "unknown-name":
        name = "zz" + draw(junk_text)
        target = draw(
            st.sampled_from(
                [
                    "read-slot",
                    "generic",
                    "relevance-view",
                    "charge",
                    "rule",
                    "kind",
                    "selector",
                    "control",
                    "slot-order",
                ]
            )
        )
        if target == "read-slot":
            q, r = draw(st.sampled_from(READS))
            data["queries"][q]["reads"][r]["slot"] = name
            return data, f"queries.{data['queries'][q]['name']}.reads[{r}].slot", kind
        if target == "generic":
            slot = draw(st.sampled_from(SLOTS))
            data["slots"][slot]["generic"] = name
            return data, f"slots.{slot}.generic", kind
        if target == "relevance-view":
            q, r = draw(st.sampled_from(READS))
            data["queries"][q]["reads"][r]["relevance"][name] = "1/2"
            return data, f"queries.{data['queries'][q]['name']}.reads[{r}].relevance.{name}", kind
        if target == "charge":
            q, r = draw(st.sampled_from(READS))
            data["queries"][q]["reads"][r]["charge"] = ["diabetes", "debt", name]
            return data, f"queries.{data['queries'][q]['name']}.reads[{r}].charge", kind
        if target == "rule":
            data["budget"]["rule"] = name
            return data, "budget.rule", kind
        if target == "kind":
            data["scorer"]["kind"] = name
            return data, "scorer.kind", kind
        if target == "selector":
            data["deployment"]["selector"] = name
            return data, "deployment.selector", kind
        if target == "control":
            data["deployment"]["control"] = name
            return data, "deployment.control", kind
        data["slot_order"] = ["food", name]
        return data, "slot_order", kind
    if kind == "wrong-type":
        scalar = draw(st.one_of(st.integers(), st.booleans(), junk_text, floats))
        target = draw(
            st.sampled_from(
                [
                    "positions",
                    "attributes",
                    "budget",
                    "slots",
                    "queries",
                    "stores",
                    "store",
                    "reads",
                    "group",
                    "tags",
                    "name",
                ]
            )
        )
        if target == "store":
            data["stores"]["M"] = scalar
            return data, "stores.M", kind
        if target == "reads":
            data["queries"][0]["reads"] = scalar
            return data, "queries.affordable-dinner.reads", kind
        if target == "group":
            data["attributes"]["debt"]["group"] = scalar
            return data, "attributes.debt.group", kind
        if target == "tags":
            data["slots"]["food"]["views"]["low-glycemic"]["compatible"] = scalar
            return data, "slots.food.views.low-glycemic.compatible", kind
        if target == "name":
            data["name"] = draw(st.one_of(st.integers(), st.booleans(), floats, containers, st.just("")))
            return data, "name", kind
        data[target] = scalar
        return data, target, kind
    if kind == "missing":
        target = draw(
            st.sampled_from(
                [
                    "positions",
                    "attributes",
                    "budget",
                    "slots",
                    "queries",
                    "cap",
                    "group",
                    "reads",
                    "generic",
                    "query-name",
                    "views",
                ]
            )
        )
        if target == "cap":
            del data["attributes"]["diabetes"]["cap"]
            return data, "attributes.diabetes.cap", kind
        if target == "group":
            del data["attributes"]["diabetes"]["group"]
            return data, "attributes.diabetes.group", kind
        if target == "reads":
            del data["queries"][1]["reads"]
            return data, "queries.checkup-reminder.reads", kind
        if target == "generic":
            del data["slots"]["finance"]["generic"]
            return data, "slots.finance.generic", kind
        if target == "query-name":
            del data["queries"][2]["name"]
            return data, "queries[2].name", kind
        if target == "views":
            del data["slots"]["schedule"]
            return data, "slots", kind
        del data[target]
        return data, target, kind
    if kind == "position":
        bad = draw(st.one_of(st.integers(max_value=0), st.integers(min_value=7), st.booleans(), floats, junk_text))
        target = draw(st.sampled_from(["group", "read", "store-key"]))
        if target == "group":
            attribute = draw(st.sampled_from(ATTRIBUTES))
            data["attributes"][attribute]["group"] = [1, bad]
            return data, f"attributes.{attribute}.group", kind
        if target == "read":
            q, r = draw(st.sampled_from(READS))
            data["queries"][q]["reads"][r]["positions"] = [bad]
            return data, f"queries.{data['queries'][q]['name']}.reads[{r}].positions", kind
        key = str(bad) if isinstance(bad, int) and not isinstance(bad, bool) else "p" + str(bad)
        data["stores"]["M"][key] = ["blood-sugar"]
        return data, "stores.M", kind  # the key itself is withheld (it may be memory text)
    # oversized
    target = draw(st.sampled_from(["views", "positions", "tags"]))
    if target == "views":
        count = draw(st.integers(257, 400))
        views = data["slots"]["food"]["views"]
        views.update({f"extra{i}": {} for i in range(count - len(views))})
        return data, "slots.food.views", kind
    if target == "positions":
        data["positions"] = data["positions"] + ["food"] * draw(st.integers(4091, 4200))
        return data, "positions", kind
    data["stores"]["M"]["2"]["tags"] = [f"t{i}" for i in range(draw(st.integers(1001, 1100)))]
    return data, "stores.M.2.tags", kind


@settings(max_examples=MAIN_FACTOR * settings.default.max_examples)
@given(mutation())
def test_malformed_fields_are_refused_by_name(workdir: Path, case: tuple[dict[str, Any], str, str]) -> None:
    data, field, kind = case
    run_config(workdir, to_toml(data), field, kind)


@given(st.text(max_size=40), st.integers(0, 4000))
def test_broken_toml_is_refused(workdir: Path, junk: str, cut: int) -> None:
    text = to_toml(BASE)
    cut = min(cut, len(text))
    # An unterminated array after arbitrary text: never valid TOML.
    broken = text[:cut] + "\n" + junk.replace("\n", " ") + " = [\n"
    run_config(workdir, broken, "file", "toml-syntax")


@given(st.binary(max_size=200))
def test_random_bytes_are_refused(workdir: Path, blob: bytes) -> None:
    run_config(workdir, blob, None, "bytes")


@given(st.sampled_from(["1", "x", "zz-no-store", ""]).flatmap(lambda s: st.just(s) | junk_text.map(lambda j: "zz" + j)))
def test_unknown_store_is_refused(workdir: Path, store: str) -> None:
    run_config(workdir, to_toml(BASE), "store", "store-name", store=store)


@given(
    st.lists(
        st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Zl", "Zp", "Cc"]), min_size=1, max_size=10).map(
            lambda s: "zz" + s.strip()
        ),
        min_size=1,
        max_size=5,
    )
)
def test_unknown_query_names_are_refused(workdir: Path, names: list[str]) -> None:
    config = workdir / "valid.toml"
    config.write_text(to_toml(BASE))
    queries = workdir / "bad-queries.txt"
    queries.write_text("affordable-dinner\n" + "\n".join(names) + "\n", encoding="utf-8")
    code, out, err = run_cli(["run", str(config), "--store", "M", "--queries", str(queries)])
    assert_refused(code, err, "query", "query-name")
    assert out == ""  # validated before the first release


@given(
    st.one_of(
        junk_text.filter(lambda s: not s.strip().lstrip("+-").isdigit()).map(lambda s: ["--seed", s]),
        st.just(["--bogus"]),
        st.just(["--store"]),
    )
)
def test_bad_arguments_are_refused(workdir: Path, extra: list[str]) -> None:
    config = workdir / "valid.toml"
    config.write_text(to_toml(BASE))
    argv = ["run", str(config), "--queries", str(workdir / "queries.txt"), "--store", "M", *extra]
    code, _, err = run_cli(argv)
    assert_refused(code, err, None, "argv")


def test_fixed_malformed_inputs(workdir: Path) -> None:
    """The classic cases, one each, with the exact field named."""
    huge = "a = " + "9" * 5000 + "\n"
    nested = "a = " + "[" * 3000 + "]" * 3000 + "\n"
    (workdir / "valid.toml").write_text(to_toml(BASE))
    run_config(workdir, huge, "file", "fixed")
    run_config(workdir, nested, "file", "fixed")
    run_config(workdir, b"\xff\xfe\x00", "file", "fixed")
    data = copy.deepcopy(BASE)
    data["queries"] = [{"name": f"q{i}", "reads": [{"slot": "health", "positions": [1]}]} for i in range(10_001)]
    run_config(workdir, to_toml(data), "queries", "fixed")
    code, _, err = run_cli(
        ["run", str(workdir / "missing.toml"), "--store", "M", "--queries", str(workdir / "queries.txt")]
    )
    assert_refused(code, err, "file", "fixed")
    code, _, err = run_cli(
        ["run", str(workdir / "valid.toml"), "--store", "M", "--queries", str(workdir / "none.txt")]
    )
    assert_refused(code, err, "--queries", "fixed")
    long_queries = workdir / "long-queries.txt"
    long_queries.write_text("affordable-dinner\n" * 100_001)
    code, _, err = run_cli(["run", str(workdir / "valid.toml"), "--store", "M", "--queries", str(long_queries)])
    assert_refused(code, err, "--queries", "fixed")


def test_zz_report_counts() -> None:
    """Runs last in this module: prints how many malformed inputs were driven."""
    total = sum(COUNTS.values())
    print(f"\nfuzz: {total} malformed inputs, by kind {dict(sorted(COUNTS.items()))}")
    if total:
        assert total >= 8 * settings.default.max_examples
