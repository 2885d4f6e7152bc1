"""Proof-suite settings. Profiles `ci` and `thorough` come from the root conftest.

Under scripts/mutation_check.py (DPMEM_MUTATION_RUN=1) the ci profile runs without the
shrink phase: a mutant only needs to be killed, not minimised, and shrinking a failing
exact enumeration can take a minute.
"""

import os

from hypothesis import Phase, settings

if os.environ.get("DPMEM_MUTATION_RUN") == "1":
    settings.register_profile(
        "mutation",
        parent=settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci")),
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
        print_blob=False,
    )
    settings.load_profile("mutation")
