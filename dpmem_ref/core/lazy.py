"""Package faces that import their public names on first use (PEP 562).

A face lists each defining module with the names it gives (`modules`); `attach` returns the
face's module `__getattr__` and `__dir__`. `import dpmem_ref` (or one of its packages) then
loads none of the modules behind it: a command pays only for the parts it touches
(`import dpmem_ref` and `dpmem --help` stay fast). The face keeps the same imports under
`if TYPE_CHECKING:` for type checkers, and tests/test_lazy_imports.py holds the two equal.
"""

from __future__ import annotations

import importlib
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads it as True)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence


def attach(
    package: str, modules: Mapping[str, Sequence[str]], public: Sequence[str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for the face `package`: name -> its defining module."""
    exports = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> object:  # noqa: N807
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # later lookups are plain attribute reads
        return value

    def __dir__() -> list[str]:  # noqa: N807
        return sorted(set(vars(sys.modules[package])) | set(public))

    return __getattr__, __dir__
