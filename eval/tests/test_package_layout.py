"""Issue 25 (eval's part): no import circle among `dpmem_eval`'s modules, function-local
imports included (an AST walk of every import statement), and no module in eval over 350
lines. The walk is checked against a planted circle so that it can fail."""

from __future__ import annotations

import ast
from pathlib import Path

EVAL = Path(__file__).resolve().parents[1]
PACKAGE = EVAL / "dpmem_eval"
MAX_LINES = 350


def modules(root: Path) -> dict[str, Path]:
    found = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def import_graph(found: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its body (relative imports resolved)."""
    graph: dict[str, set[str]] = {}
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges |= {alias.name for alias in node.names if alias.name in found}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([base] if base else []))
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    edges.add(target if target in found else base)
        graph[name] = {e for e in edges if e in found and e != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_import_circle_among_the_packages_modules():
    graph = import_graph(modules(PACKAGE))
    assert "dpmem_eval.pipeline.backends.hf" in graph and "dpmem_eval.pipeline.stages" in graph
    assert circles(graph) == []


def test_the_walk_finds_a_planted_circle(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from pkg import b\n")
    (package / "b.py").write_text("from .a import f\n")
    (package / "c.py").write_text("import pkg.a\n")
    assert circles(import_graph(modules(package))) == [["pkg.a", "pkg.b"]]


def test_no_module_in_eval_over_350_lines():
    long = {str(p.relative_to(EVAL)): n for p in EVAL.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}
