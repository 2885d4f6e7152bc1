.PHONY: run test bootstrap bench clean mutation

# Set up (.venv, pinned installs) and run the main job on embedded defaults.
run:
	scripts/run_main.sh

# Set up and run the whole test suite (what CI runs).
test:
	scripts/run_tests.sh

bootstrap:
	scripts/bootstrap.sh

bench: bootstrap
	.venv/bin/python benchmarks/bench_kernel.py
	.venv/bin/python benchmarks/bench_audit.py

# Mutation testing of the kernel's core modules (mutmut; modules: [tool.mutmut] in
# pyproject.toml), then docs/mutation-report.md. CPU-heavy, nice'd, time-bounded.
mutation: bootstrap
	scripts/mutation.sh

clean:
	rm -rf .venv runs .pytest_cache .mypy_cache .ruff_cache .hypothesis mutants
