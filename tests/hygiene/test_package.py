"""The kernel stays light and keeps private data out of public reprs."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

from dpmem_ref import InterfaceState, SeededRandomSource, plan_slot, run_turn
from dpmem_ref.core.transcript import PublicPrefix
from dpmem_ref.turn import zero_ledgers
from tests.kernel_fixtures import ROOT, figure2

HEAVY = ("torch", "transformers", "scikit-learn", "sklearn", "sentence-transformers")


def test_distribution_requires_no_heavy_dependencies() -> None:
    requirements = importlib.metadata.requires("dpmem-ref") or []
    core = [r for r in requirements if "extra ==" not in r]
    assert core, "dpmem-ref declares its core dependencies"
    assert not [r for r in core if any(h in r.lower() for h in HEAVY)]
    # Heavy packages only in the optional `agent` extra (the runtime's MiniLM/SmolLM2 parts, imported lazily).
    heavy = [r for r in requirements if any(h in r.lower() for h in HEAVY)]
    assert all('extra == "agent"' in r for r in heavy), heavy


def test_importing_the_kernel_imports_no_heavy_module() -> None:
    code = ("import sys, dpmem_ref, dpmem_ref.cli, dpmem_ref.analysis; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers', 'sklearn', 'dpmem_eval')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_private_contents_never_in_reprs() -> None:
    loaded = figure2()
    interface = loaded.interface
    store = loaded.store("M")
    query = interface.query("affordable-dinner")
    plan = plan_slot(interface, zero_ledgers(interface), PublicPrefix(history=(), query=query), "food", store)
    result = run_turn(interface, InterfaceState.initial(interface), query, store, SeededRandomSource(0))
    for text in (repr(store), repr(store.items[0]), repr(plan), repr(plan.distribution), repr(result), repr(result.state)):
        assert "metformin" not in text and "carb-counting" not in text and "4/5" not in text
