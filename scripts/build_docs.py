"""The API reference, generated from docstrings by pdoc (`make docs`; CI runs it too).

    python scripts/build_docs.py [--out docs/api]

Every warning pdoc raises is an error (exit 1), with one documented exception: pdoc cannot
resolve the string annotations of a NamedTuple's generated `__init__` (it evaluates them in
the `collections` namespace, where the kernel's names do not exist), so `SlotPlan.__init__`'s
"Error parsing type annotation" warnings are ignored; the same annotations are checked by
`mypy --strict dpmem_ref`. Any other warning fails the build.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULES = (
    "dpmem_ref",
    # The face's __all__ hides its subpackages from pdoc: every public package is named here.
    "dpmem_ref.channel",
    "dpmem_ref.ledger",
    "dpmem_ref.turn",
    "dpmem_ref.analysis",
    "dpmem_ref.audit",
    "dpmem_ref.config",
    "dpmem_ref.runtime",
    "dpmem_ref.serve",
    "counterexamples",
    "dpmem_eval",
)
NAMEDTUPLE_INIT = r"Error parsing type annotation .* for dpmem_ref\.(turn\.(plan\.)?)?SlotPlan\.__init__\b"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "api"), help="output folder (default docs/api)")
    args = parser.parse_args(argv)
    sys.path[:0] = [str(ROOT), str(ROOT / "eval")]
    import pdoc

    warnings.simplefilter("error")
    warnings.filterwarnings("ignore", message=NAMEDTUPLE_INIT)
    try:
        pdoc.pdoc(*MODULES, output_directory=Path(args.out))
    except Warning as warning:
        print(f"build_docs: error: pdoc warning: {warning}", file=sys.stderr)
        return 1
    print(f"build_docs: API reference of {', '.join(MODULES)} written to {args.out}/index.html")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
