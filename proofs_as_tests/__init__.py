"""Proofs as tests: each claim of the DP-MemView paper re-proved on every commit.

One module per claim (test_lemma1, test_em_step_bound, test_theorem1, test_corollary1,
test_posterior_odds, test_record_replay, test_sampler, test_ledger_exact) drawing its cases
from `strategies`, with exact likelihoods from `transcripts` (the kernel's own plans,
mpmath intervals, exact rational ledgers); z3 proofs in test_z3_*.

    .venv/bin/pytest proofs_as_tests                               # ci profile (~1 min)
    HYPOTHESIS_PROFILE=thorough .venv/bin/pytest proofs_as_tests   # 20x the examples
    .venv/bin/python tools/mutation/semantic_check.py [--matrix]          # every kernel mutant must die
"""
