"""Inputs of benchmarks/adversarial_inputs.py, by class: malformed stores (hygiene), z3-heavy
sensitivity proofs (bounds), and pathological TOML for the pre-scan (toml, issue 21 class 8)
with its in-process timings beside tomllib's own quadratic growth on dotted headers."""

from __future__ import annotations

import time

MARK = "SECRETMARK-7f3a"


def hygiene_cases() -> list[tuple[str, str]]:
    m = MARK
    values = [
        f'"{m} has type-2 diabetes"',
        f'["{m}", 5]',
        f'[["{m}"]]',
        f'{{ text = "{m}", tags = ["x"], extra = "{m}" }}',
        f'{{ text = ["{m}"] }}',
        f'{{ text = 5, tags = ["{m}"] }}',
        f'{{ tags = {{ x = "{m}" }} }}',
        f'{{ tags = ["{m}", ""] }}',
        f'{{ tags = "{m}" }}',
        f"{{ tags = [{', '.join(f'{chr(34)}{m}{i}{chr(34)}' for i in range(1001))}] }}",
        f'{{ text = "{m}" , tags = [[[[["{m}"]]]]] }}',
        "true",
        "1979-05-27T07:32:00Z",
        f'{{ text = """{m}\nline two""", tags = [] }}',
        f'{{ text = "{m * 20000}" }}',
        f'{{ "{m}" = 1 }}',
        "inf",
        "-0.0",
    ]
    cases = [(f"stores.M.1 = {v[:30]}", f'[stores.M]\n"1" = {v}\n') for v in values]
    cases += [
        ("stores.M = string", f'stores.M = "{m} diabetic"\n'),
        ("stores = string", f'stores = "{m}"\n'),
        ("stores = array", f'stores = ["{m}"]\n'),
        ("stores.M = array", f'stores.M = ["{m}"]\n'),
        ("stores.M = inline table of junk", f'stores.M = {{ "{m}" = "{m}" }}\n'),
        ("store key is memory text", f'[stores.M]\n"{m} note" = ["x"]\n'),
        ("store key 5000 digits", f'[stores.M]\n"{"9" * 5000}" = ["{m}"]\n'),
        ("store key 99999", f'[stores.M]\n"99999" = ["{m}"]\n'),
        ("store key -1", f'[stores.M]\n"-1" = ["{m}"]\n'),
        ("store key 01 and 1", f'[stores.M]\n"1" = ["{m}"]\n"01" = ["{m}"]\n'),
        ("broken TOML: missing comma", f'[stores.M]\n"1" = {{ text = "{m}" tags = [] }}\n'),
        ("broken TOML: unterminated", f'[stores.M]\n"1" = {{ text = "{m}\n'),
        ("broken TOML: bad escape", f'[stores.M]\n"1" = {{ text = "{m}\\q" }}\n'),
        ("broken TOML: duplicate key", f'[stores.M]\n"1" = ["{m}"]\n"1" = ["{m}"]\n'),
        ("broken TOML: bad value", f'[stores.M]\n"1" = {m}\n'),
        ("broken TOML: control char", f'[stores.M]\n"1" = {{ text = "{m}\x01" }}\n'),
    ]
    return cases


def heavy_sensitivity(slots: int, views: int, tags: int, sensitivity: str) -> str:
    names = [f"s{i}" for i in range(slots)]
    out = ["positions = [" + ", ".join(f'"{n}"' for n in names) + "]"]
    out.append(f'[attributes.a]\ngroup = {list(range(1, slots + 1))}\ncap = 2\n[budget]\nrule = "online"\nK = 3')
    out.append(f'[scorer]\nkind = "linear"\nsensitivity = "{sensitivity}"')
    for name in names:
        out.append(f'[slots.{name}]\ngeneric = "g"\n[slots.{name}.views.g]')
        for v in range(views):
            compatible = ", ".join(f'"c{v}_{k}"' for k in range(tags))
            specific = ", ".join(f'"p{v}_{k}"' for k in range(tags))
            out.append(f"[slots.{name}.views.v{v}]\ncompatible = [{compatible}]\nspecific = [{specific}]")
    for i, name in enumerate(names):
        out.append(f'[[queries]]\nname = "q{i}"\n[[queries.reads]]\nslot = "{name}"\npositions = [{i + 1}]')
    return "\n".join(out) + "\n"



def toml_cases() -> list[tuple[str, str]]:
    """Pathological TOML for the pre-scan (dpmem_ref.config.toml_bounds), by the limit it passes."""
    return [
        ("header of 100,000 dotted parts (200 KB)", "[" + ".".join(["a"] * 100_000) + "]\n"),
        ("array-of-tables header of 50,000 parts", "[[" + ".".join(["a"] * 50_000) + "]]\n"),
        ("dotted key of 100,000 parts", ".".join(["a"] * 100_000) + " = 1\n"),
        ("inline-table key of 100,000 parts", "x = { " + ".".join(["a"] * 100_000) + " = 1 }\n"),
        ("quoted parts with spaces, 60,000", " . ".join(['"a"'] * 60_000) + " = 1\n"),
        ("arrays nested 200,000 deep", "x = " + "[" * 200_000 + "]" * 200_000 + "\n"),
        ("inline tables nested 5,000 deep", "x = " + "{a = " * 5_000 + "1" + "}" * 5_000 + "\n"),
        ("200,001 keys (800 KB)", "a=1\n" * 200_001),
        ("header of 500,000 characters", "[" + "h" * 500_000 + "]\n"),
    ]


def toml_timings(cases: list[tuple[str, str]]) -> list[str]:
    """In-process pre-scan time of each case, and the parser's time on the same text where it
    finishes in reasonable time (timed on a prefix for the quadratic cases: the figure shows
    the growth the pre-scan prevents)."""
    import tomllib

    from dpmem_ref.config.toml_bounds import prescan
    from dpmem_ref.core.errors import InputError

    lines = []
    for label, text in cases:
        started = time.perf_counter()
        try:
            prescan(text, "file")
            verdict = "passed"
        except InputError as error:
            verdict = "refused (" + str(error).split("found ")[-1].strip("'") + ")"
        scan = time.perf_counter() - started
        lines.append(f"   pre-scan {scan * 1e3:8.2f} ms  {label}: {verdict}")
    for parts in (2_000, 4_000, 8_000):
        text = "[" + ".".join(["a"] * parts) + "]\n"
        started = time.perf_counter()
        tomllib.loads(text)
        lines.append(f"   tomllib alone on a header of {parts:>6,} dotted parts: {time.perf_counter() - started:7.3f} s")
    lines.append("   (quadratic: x4 per doubling; 100,000 parts is about 150x the 8,000-part time, over a minute)")
    return lines
