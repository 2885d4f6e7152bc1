"""Hypothesis profiles shared by every test suite.

ci: derandomized (reproducible on every commit), bounded; selected when CI=true or by
default. thorough: 20x the examples, random seeds, for deep runs
(`HYPOTHESIS_PROFILE=thorough`).
"""

import os
from typing import Any

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=50,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough",
    max_examples=1000,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Durable ledgers need an explicit key (docs/durability.md, "Keys are explicit"); tests that do
# not set one run on the public development key, as a developer would, by the explicit flag.
os.environ.setdefault("DPMEM_LEDGER_DEV_KEY", "1")

# Under mutmut's stats run (tools/mutation/run.sh) the trampolines of this process find the
# mode in mutmut's process-local state; a child process a test starts (`dpmem serve`, a crash
# test's writer) would find it in the environment and look for mutmut's configuration in its
# own working directory, and fail. Children run the original code during that run; during a
# mutant's run the mutant's name stays in the environment, so children run the mutant too.
if os.environ.get("MUTANT_UNDER_TEST") == "stats":
    del os.environ["MUTANT_UNDER_TEST"]


def pytest_collection_modifyitems(config: object, items: list[Any]) -> None:
    """Under mutmut (tools/mutation/run.sh), run a mutant's tests cheapest file first.

    mutmut passes the tests that reach a mutated function in set order and stops at the first
    failure (-x); a mutant that a quick test kills then costs that test, not whichever
    multi-process test came first. Files stay together, fastest test first within each. The durations are mutmut's own, from its stats run (the
    working directory is its mutants/ copy). The order of tests changes nothing else: each is
    independent.
    """
    if os.environ.get("DPMEM_MUTMUT") != "1" or not os.path.exists("mutmut-stats.json"):
        return
    import json

    with open("mutmut-stats.json", encoding="utf-8") as stats_file:
        duration_by_test = json.load(stats_file).get("duration_by_test", {})

    def duration(item: Any) -> float:
        return float(duration_by_test.get(item.nodeid, float("inf")))

    # A file's tests stay together: a module-scoped fixture (a served app) is set up once.
    file_cost: dict[str, float] = {}
    for item in items:
        path = item.nodeid.split("::")[0]
        file_cost[path] = file_cost.get(path, 0.0) + duration(item)
    items.sort(key=lambda item: (file_cost[item.nodeid.split("::")[0]], item.nodeid.split("::")[0], duration(item)))


def pytest_unconfigure(config: object) -> None:
    """Stop a PostgreSQL server the session's tests started (tests/postgres_server.py) when the
    session ends rather than at interpreter exit: mutmut's workers leave with os._exit."""
    import sys

    server_module = sys.modules.get("tests.postgres_server")
    if server_module is not None:
        server_module.shutdown()
