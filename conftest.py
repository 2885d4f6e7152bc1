"""Hypothesis profiles shared by every test suite.

ci: derandomized (reproducible on every commit), bounded; selected when CI=true or by
default. thorough: 20x the examples, random seeds, for deep runs
(`HYPOTHESIS_PROFILE=thorough`).
"""

import os

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
