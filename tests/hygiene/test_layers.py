"""The floors (DESIGN.md, "Round 3: the floors"), held by an AST walk over every .py file of
the repository: no import runs here, so the test is fast and sees lazy imports too.

- each kernel layer imports only the layers below it (`KERNEL_LAYERS`, bottom first);
- no import cycle anywhere (module-level imports: kernel, eval, counterexamples, proofs,
  tests, benchmarks, scripts);
- nothing imports the command line (`dpmem_ref.cli`) but the entry points, and only the command
  line parses arguments or exits the process;
- no shim module (a module whose body is only re-exports; a package's `__init__.py`, the
  package's face, may re-export);
- kernel modules never import the face (`dpmem_ref` itself);
- the kernel names no forbidden package in a string either (`importlib.import_module("dpmem_eval...")`,
  `__import__`): a lazy import by string is still an import;
- only `ledger/` implements the ledger store protocol (no second, fake store elsewhere);
- module size follows cohesion, not a cap: a module past ~500 lines is reported (a warning)
  so that a reviewer looks at whether it holds one job.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import attrs
import pytest

ROOT = Path(__file__).resolve().parents[2]

KERNEL_LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),  # errors, rational, transcript, ledgers, policy, views, memo, limits, exits, version
    ("channel",),  # Eq. 2: the channel and backend protocols, the prompt, stand-ins, the registry
    ("mechanism",),  # the EM and its exact tables, randomness, timing
    ("parts",),  # every part behind its protocol: budget rules and scorers too
    ("interface",),  # the Interface record (never imports contract.py)
    ("contract",),  # the static check of Definition 1, over an Interface
    ("ledger",),  # durable ledgers: protocol, backends, chain, backup
    ("turn",),  # plan, planner, runner, channel, state, durable session
    ("analysis",),  # exact losses and the worst case over adaptive strategies
    ("config",),  # interface descriptions (TOML) -> kernel objects
    ("schemas",),  # the JSON Schemas of every JSON output
    ("audit",),  # check, sensitivity, adjacency, cover, verdict, render
    ("runtime",),  # the agent runtime over the kernel
    ("serve",),  # the HTTP boundary
    ("cli",),  # the only place that parses arguments, prints errors and exits
)
"""The kernel's floors, bottom first: `dpmem_ref.<name>` (a package or a module) sits on the floor
of its tuple and may import its own floor and the floors below. Modules of one floor may import
each other (the no-cycle rule still holds there). `dpmem_ref/__init__.py`, the face, is above all."""

SOURCES = (
    "dpmem_ref",
    "eval/dpmem_eval",
    "eval/tests",
    "counterexamples",
    "proofs_as_tests",
    "tests",
    "benchmarks",
    "scripts",
    "tools",
)
"""Every folder of .py files in the repository (`eval/` is its own distribution, import name dpmem_eval)."""

KNOWN_CYCLES: dict[frozenset[str], str] = {}
"""Cycles through lazy (function-local) imports, known and owned by eval's restructuring: each
is an expected failure of its own test below (strict: once the cycle is gone that test passes
unexpectedly and fails, so its entry is deleted here), and only that exact set of modules is
excused from `test_no_cycles_through_lazy_imports`. No cycle of module-level imports is excused."""

CLI = "dpmem_ref.cli"
CLI_ENTRY_NAMES = frozenset({"main"})
"""What an entry point takes from the command line: `dpmem_ref.cli.main`, the function the console
script `dpmem` runs (pyproject.toml). Tests and benchmarks drive the program through it."""


@attrs.frozen
class Import:
    importer: str
    target: str  # a module of the repository, or an outside name
    names: tuple[str, ...]  # the names of a `from target import ...`; () for `import target`
    line: int
    module_level: bool  # run when the importer is imported (not inside a function, not TYPE_CHECKING)
    type_checking: bool


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] == "eval" and parts[1] == "dpmem_eval":
        parts = parts[1:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for source in SOURCES:
        for path in sorted((ROOT / source).rglob("*.py")):
            if not any(part.startswith(".") or part == "__pycache__" for part in path.relative_to(ROOT).parts):
                found[module_name(path)] = path
    return found


def _resolve(name: str, importer: str) -> str:
    """The repository module `name` denotes from `importer` (absolute, or a sibling of a test
    folder on sys.path such as `kernel_fixtures`), else `name` itself."""
    known = modules()
    if name in known:
        return name
    package = importer.rpartition(".")[0] if not modules()[importer].name == "__init__.py" else importer
    while package:
        candidate = f"{package}.{name}"
        if candidate in known:
            return candidate
        package = package.rpartition(".")[0]
    return name


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(body: list[ast.stmt], module_level: bool, type_checking: bool) -> Iterator[tuple[ast.stmt, bool, bool]]:
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, module_level, type_checking
        elif isinstance(node, ast.If):
            checking = type_checking or _is_type_checking(node.test)
            yield from _walk(node.body, module_level and not checking, checking)
            yield from _walk(node.orelse, module_level, type_checking)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _walk(block, module_level, type_checking)
        elif isinstance(node, ast.With):
            yield from _walk(node.body, module_level, type_checking)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            # a class body runs at import time; a function body does not
            inner = module_level and isinstance(node, ast.ClassDef)
            yield from _walk(node.body, inner, type_checking)
        else:
            for field in ("body", "orelse", "finalbody"):
                block = getattr(node, field, None)
                if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                    yield from _walk(block, False, type_checking)


@cache
def imports_of(module: str) -> tuple[Import, ...]:
    path = modules()[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found = []
    for node, module_level, type_checking in _walk(tree.body, True, False):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(alias.name, module)
                found.append(Import(module, target, (), node.lineno, module_level, type_checking))
            continue
        assert isinstance(node, ast.ImportFrom)
        base = node.module or ""
        if node.level:
            anchor = module.split(".") if is_package else module.split(".")[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        base = _resolve(base, module) if base else base
        plain = []
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            if submodule in modules():  # `from package import submodule`
                found.append(Import(module, submodule, (), node.lineno, module_level, type_checking))
            else:
                plain.append(alias.name)
        if plain:
            found.append(Import(module, base, tuple(plain), node.lineno, module_level, type_checking))
    return tuple(found)


def kernel_floor(module: str) -> int | None:
    """The floor of a kernel module (None for the face and for modules outside the kernel)."""
    parts = module.split(".")
    if parts[0] != "dpmem_ref" or len(parts) == 1:
        return None
    for index, floor in enumerate(KERNEL_LAYERS):
        if parts[1] in floor:
            return index
    raise AssertionError(f"{module}: dpmem_ref.{parts[1]} is on no floor of KERNEL_LAYERS; give it one")


def kernel_modules() -> list[str]:
    return [m for m in modules() if m.startswith("dpmem_ref.")]


# ------------------------------------------------------------------ the floors


def test_every_kernel_module_is_on_a_floor() -> None:
    for module in kernel_modules():
        kernel_floor(module)  # raises naming the module


def test_each_kernel_layer_imports_only_layers_below_it() -> None:
    """Every import counts here, lazy and TYPE_CHECKING ones too: a floor never reaches up."""
    upward = []
    for module in kernel_modules():
        floor = kernel_floor(module)
        assert floor is not None
        for found in imports_of(module):
            target_floor = kernel_floor(found.target) if found.target.startswith("dpmem_ref.") else None
            if target_floor is not None and target_floor > floor:
                upward.append(
                    f"{module} (floor {KERNEL_LAYERS[floor]}) line {found.line} imports {found.target} "
                    f"(floor {KERNEL_LAYERS[target_floor]})"
                )
    assert not upward, "imports that reach a higher floor:\n" + "\n".join(upward)


def test_kernel_modules_never_import_the_face() -> None:
    """`dpmem_ref/__init__.py` is the one public face; kernel modules import defining modules."""
    found = [
        f"{i.importer} line {i.line}: {'from dpmem_ref import ' + ', '.join(i.names) if i.names else 'import dpmem_ref'}"
        for module in kernel_modules()
        for i in imports_of(module)
        if i.target == "dpmem_ref"
    ]
    assert not found, "kernel modules importing the face:\n" + "\n".join(found)


def test_the_kernel_never_imports_eval_or_heavy_packages() -> None:
    found = [
        f"{i.importer} line {i.line}: {i.target}"
        for module in kernel_modules()
        for i in imports_of(module)
        if i.target.split(".")[0] in FORBIDDEN_IN_KERNEL
    ]
    assert not found, "\n".join(found)


# ------------------------------------------------------------------ cycles


def import_graph(lazy: bool = False) -> dict[str, set[str]]:
    """Imports between modules of the repository: module-level ones (what runs at import time),
    or with `lazy` every import but TYPE_CHECKING ones (a function-local import that only hides a
    circle from the interpreter is still a circle in the design)."""
    known = modules()
    graph: dict[str, set[str]] = {m: set() for m in known}
    for module in known:
        for found in imports_of(module):
            counts = found.module_level or (lazy and not found.type_checking)
            if counts and found.target in known and found.target != module:
                graph[module].add(found.target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[frozenset[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def _describe(component: frozenset[str], graph: dict[str, set[str]]) -> str:
    edges = sorted(f"{a} -> {b}" for a in component for b in graph[a] if b in component)
    return f"cycle among {sorted(component)}: " + "; ".join(edges)


def test_no_import_cycles() -> None:
    """Module-level imports: no cycle anywhere in the repository, none excused."""
    graph = import_graph()
    found = cycles(graph)
    assert not found, "import cycles (module-level imports):\n" + "\n".join(_describe(c, graph) for c in found)


def test_no_cycles_through_lazy_imports() -> None:
    graph = import_graph(lazy=True)
    found = [c for c in cycles(graph) if c not in KNOWN_CYCLES]
    assert not found, "import cycles (lazy imports included):\n" + "\n".join(_describe(c, graph) for c in found)


@pytest.mark.parametrize(
    "cycle",
    [
        pytest.param(c, id=" <-> ".join(sorted(c)), marks=pytest.mark.xfail(reason=why, strict=True))
        for c, why in KNOWN_CYCLES.items()
    ],
)
def test_known_cycle_is_gone(cycle: frozenset[str]) -> None:
    """Expected to fail while the cycle lasts (see KNOWN_CYCLES); delete its entry once it passes."""
    graph = import_graph(lazy=True)
    assert cycle not in cycles(graph), _describe(cycle, graph)


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [frozenset({"a", "b", "c"})]


# ------------------------------------------------------------------ the command line


def test_nothing_imports_the_command_line_but_its_entry_points() -> None:
    """Only the command line's own modules import `dpmem_ref.cli.*`; anything else (tests,
    benchmarks, eval's tests) may take only `main` from `dpmem_ref.cli`, the console script's
    entry point, and never from the kernel or the eval package."""
    found = []
    for module in modules():
        if module == CLI or module.startswith(CLI + "."):
            continue
        library = module.startswith(("dpmem_ref", "dpmem_eval.", "counterexamples")) or module == "dpmem_eval"
        for i in imports_of(module):
            if not (i.target == CLI or i.target.startswith(CLI + ".")):
                continue
            entry_point = i.target == CLI and i.names and set(i.names) <= CLI_ENTRY_NAMES
            if library or not entry_point:
                found.append(f"{module} line {i.line}: {i.target} {list(i.names)}")
    assert not found, "imports of the command line:\n" + "\n".join(found)


def test_only_the_command_line_parses_arguments_and_exits() -> None:
    """Library code (every kernel module outside `dpmem_ref.cli`) neither imports argparse nor
    exits the process (`sys.exit`, `os._exit`, `raise SystemExit`, `exit()`, `quit()`)."""
    found = []
    for module in kernel_modules():
        if module == CLI or module.startswith(CLI + "."):
            continue
        found += [f"{module} line {i.line}: imports argparse" for i in imports_of(module) if i.target == "argparse"]
        for node in ast.walk(ast.parse(modules()[module].read_text(encoding="utf-8"))):
            exits = (
                isinstance(node, ast.Raise)
                and node.exc is not None
                and "SystemExit" in ast.unparse(node.exc).split("(")[0]
            ) or (isinstance(node, ast.Call) and ast.unparse(node.func) in ("sys.exit", "os._exit", "exit", "quit"))
            if exits:
                found.append(f"{module} line {getattr(node, 'lineno', '?')}: {ast.unparse(node)[:60]}")
    assert not found, "library code that parses arguments or exits:\n" + "\n".join(found)


MODULE_LINES_REVIEW = 500
"""Past this many lines a module is reported for review (cohesion decides where code is cut, not a cap)."""
SIZED = ("dpmem_ref", "counterexamples", "proofs_as_tests/strategies", "eval/dpmem_eval", "eval/tests")


def _lines(relative: str) -> int:
    return len((ROOT / relative).read_text(encoding="utf-8").splitlines())


def test_long_modules_are_reported_for_review() -> None:
    """A warning, not a failure: a long module may well hold one job (a class and its helpers)."""
    import warnings

    long = [
        f"{path.relative_to(ROOT)}: {_lines(str(path.relative_to(ROOT)))} lines"
        for folder in SIZED
        for path in sorted((ROOT / folder).rglob("*.py"))
        if _lines(str(path.relative_to(ROOT))) > MODULE_LINES_REVIEW
    ]
    if long:
        warnings.warn(f"modules over {MODULE_LINES_REVIEW} lines (review their cohesion): " + "; ".join(long), stacklevel=1)


# ------------------------------------------------------------------ imports by string

FORBIDDEN_IN_KERNEL = ("dpmem_eval", "torch", "transformers", "sklearn", "counterexamples", "tests", "proofs_as_tests")


def string_imports(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, module name) of every `importlib.import_module("...")`, `import_module("...")` and
    `__import__("...")` call with a literal first argument."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        called = ast.unparse(node.func)
        first = node.args[0]
        if called.split(".")[-1] in ("import_module", "__import__") and isinstance(first, ast.Constant):
            if isinstance(first.value, str):
                yield node.lineno, first.value


def test_the_kernel_imports_no_forbidden_package_by_string() -> None:
    found = [
        f"{module} line {line}: {name}"
        for module in kernel_modules()
        for line, name in string_imports(ast.parse(modules()[module].read_text(encoding="utf-8")))
        if name.split(".")[0] in FORBIDDEN_IN_KERNEL
    ]
    assert not found, "kernel modules importing a forbidden package by string:\n" + "\n".join(found)


def test_the_string_import_finder_finds_each_form() -> None:
    source = (
        'import importlib\nfrom importlib import import_module\n'
        'def f():\n    importlib.import_module("dpmem_eval.pipeline.prompts")\n'
        '    import_module("dpmem_eval.pipeline.generation")\n    __import__("dpmem_eval")\n'
        '    importlib.import_module(name)\n'
    )
    assert [name for _, name in string_imports(ast.parse(source))] == [
        "dpmem_eval.pipeline.prompts",
        "dpmem_eval.pipeline.generation",
        "dpmem_eval",
    ]


# ------------------------------------------------------------------ the store protocol

STORE_METHODS = frozenset({"open_session", "fingerprint", "rebind", "user_ledgers"})
"""Methods that make a class a `LedgerStore` (dpmem_ref.ledger.contract): a class defining at least
two of them implements (or fakes) the protocol."""


def store_classes(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            methods = {b.name for b in node.body if isinstance(b, ast.FunctionDef | ast.AsyncFunctionDef)}
            if len(methods & STORE_METHODS) >= 2:
                yield node.name


def test_only_the_ledger_implements_the_store_protocol() -> None:
    found = [
        f"{module}.{name}"
        for module in kernel_modules()
        if not module.startswith("dpmem_ref.ledger")
        for name in store_classes(ast.parse(modules()[module].read_text(encoding="utf-8")))
    ]
    assert not found, "ledger store protocol implemented outside dpmem_ref/ledger:\n" + "\n".join(found)


def test_the_store_finder_finds_a_store() -> None:
    source = "class S:\n    def open_session(self): ...\n    def fingerprint(self): ...\n"
    assert list(store_classes(ast.parse(source))) == ["S"]
    assert not list(store_classes(ast.parse("class T:\n    def open_session(self): ...\n")))


# ------------------------------------------------------------------ shims


def _only_reexports(tree: ast.Module) -> bool:
    body = list(tree.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    body = [
        node
        for node in body
        if not (isinstance(node, ast.ImportFrom) and node.module == "__future__")
        and not (
            isinstance(node, ast.Assign | ast.AnnAssign)
            and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in (getattr(node, "targets", None) or [node.target])
            )
        )
    ]
    return bool(body) and all(isinstance(node, ast.Import | ast.ImportFrom) for node in body)


def test_no_shim_modules() -> None:
    """A module whose body is only imports (and `__all__`) re-exports names defined elsewhere:
    importers should import the defining modules. A package's `__init__.py` is its face and may."""
    shims = [
        module
        for module, path in modules().items()
        if path.name != "__init__.py" and _only_reexports(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert not shims, f"shim modules: {shims}"


def test_the_shim_finder_finds_a_shim() -> None:
    assert _only_reexports(ast.parse('"""Compatibility."""\nfrom a import b\n__all__ = ["b"]\n'))
    assert not _only_reexports(ast.parse("from a import b\n\ndef f() -> None: ...\n"))
