"""Proof-suite settings. Profiles `ci` and `thorough` come from the root conftest.

Under tools/mutation/semantic_check.py (DPMEM_MUTATION_RUN=1) the ci profile runs without the
shrink phase: a mutant only needs to be killed, not minimised, and shrinking a failing
exact enumeration can take a minute.
"""

import os

from hypothesis import Phase, settings

if os.environ.get("DPMEM_MUTATION_RUN") == "1":
    # Under mutmut (tools/mutation/run.sh, DPMEM_MUTMUT=1) every surviving mutant reruns the
    # property tests that reach it: 4 examples each keep a run of ~1000 mutants bounded
    # on a shared 2-core machine (the hard-case generators make each example count).
    parent = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
    settings.register_profile(
        "mutation",
        parent=parent,
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
        print_blob=False,
        max_examples=4 if os.environ.get("DPMEM_MUTMUT") == "1" else parent.max_examples,
    )
    settings.load_profile("mutation")
