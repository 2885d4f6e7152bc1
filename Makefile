.PHONY: run test bootstrap bench clean mutation docs identity

# Set up (.venv, pinned installs) and run the main job on embedded defaults.
run:
	scripts/run_main.sh

# Set up and run the whole test suite (what CI runs).
test:
	scripts/run_tests.sh

bootstrap:
	scripts/bootstrap.sh

# The API reference from docstrings (pdoc; warnings are errors) in docs/api/.
docs: bootstrap
	$${DPMEM_VENV:-.venv}/bin/python scripts/build_docs.py --out docs/api

bench: bootstrap
	$${DPMEM_VENV:-.venv}/bin/python benchmarks/bench_kernel.py
	$${DPMEM_VENV:-.venv}/bin/python benchmarks/bench_audit.py

# Mutation testing of the kernel's core modules (mutmut; modules: [tool.mutmut] in
# pyproject.toml), then tools/mutation/REPORT.md. CPU-heavy, nice'd, time-bounded.
mutation: bootstrap
	tools/mutation/run.sh

# The shipped examples' outputs under BASE (a checkout) and this tree, byte for byte.
identity: bootstrap
	tools/identity/compare.sh $(BASE)

clean:
	rm -rf .venv runs docs/api .pytest_cache .mypy_cache .ruff_cache .hypothesis mutants
