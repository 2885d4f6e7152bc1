"""The kernel mutants of tools/mutation/semantic_check.py (data only: one Mutation per bug).

Each mutation is a set of regex replacements in the kernel source (dpmem_ref/), each of
which must match exactly once (so a refactored kernel stops the script, never silently
disarms a mutant).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutation:
    name: str
    description: str
    patches: tuple[tuple[str, str, str], ...]  # (file under dpmem_ref/, regex, replacement)


# Patterns are regular expressions (re.MULTILINE) so that reformatting the kernel does not
# silently disarm a mutant: each must match exactly once, or the script stops.
# The kernel decides admission on exact integer ledgers when the cap rule declares itself
# `prospective` (dpmem_ref/turn/plan.py); ProspectiveCap.admits is the same test on
# Fractions (held to it by tests/parts/test_parts_contract.py). Cap mutants patch both.
CAP = r"return all\(ledgers\[a\] \+ epsilon <= caps\[a\] for a in charge_set\)"
CAP_UNITS = r"if units\[i\] \+ step > caps\[i\]:"
C5_ASSERTION = r"if strict and after\[i\] > caps\[i\]:"
CHARGE = r"for i in indices:\n(\s*)after\[i\] \+= step"

MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "drop-cap-check",
        "the prospective cap admits every selection (no L_a + eps <= B_a test)",
        (("parts/caps.py", CAP, "return True"), ("turn/plan.py", CAP_UNITS, "if False:")),
    ),
    Mutation(
        "drop-cap-check-and-assertion",
        "no prospective check and no post-update C5 assertion",
        (
            ("parts/caps.py", CAP, "return True"),
            ("turn/plan.py", CAP_UNITS, "if False:"),
            ("turn/plan.py", C5_ASSERTION, "if False:"),
        ),
    ),
    Mutation(
        "charge-one-attribute-gamma",
        "Gamma*(R) keeps only one of the touched attributes (incomplete charge set, C2)",
        (
            (
                "core/policy.py",
                r"frozenset\(a\.name for a in self\.attributes if a\.group & reads\)",
                "frozenset(sorted(a.name for a in self.attributes if a.group & reads)[-1:])",
            ),
        ),
    ),
    Mutation(
        "charge-one-attribute-ledger",
        "the ledger update charges only one attribute of the charge set",
        (("turn/plan.py", CHARGE, r"for i in indices[:1]:\n\1after[i] += step"),),
    ),
    Mutation(
        "argmax-instead-of-em",
        "the admitted selection is the highest-score view (C3)",
        (
            (
                "parts/selectors.py",
                r"return exponential_mechanism\(views, scores, epsilon, sensitivity\)",
                "return argmax_view(views, scores)",
            ),
            ("parts/selectors.py", r"^from dpmem_ref\.mechanism\.construction import ", "from dpmem_ref.mechanism.construction import argmax_view, "),
        ),
    ),
    Mutation(
        "cap-retrospective",
        "the cap is checked as L_a < B_a instead of L_a + eps <= B_a",
        (
            ("parts/caps.py", CAP, "return all(ledgers[a] < caps[a] for a in charge_set)"),
            ("turn/plan.py", CAP_UNITS, "if units[i] >= caps[i]:"),
        ),
    ),
    Mutation(
        "cap-strict",
        "a strict L_a + eps < B_a refuses the last admissible charge",
        (
            ("parts/caps.py", CAP, "return all(ledgers[a] + epsilon < caps[a] for a in charge_set)"),
            ("turn/plan.py", CAP_UNITS, "if units[i] + step >= caps[i]:"),
        ),
    ),
    Mutation(
        "eps-over-delta",
        "EM exponents eps * u / Delta instead of eps * u / (2 Delta) (both constructions: the Fraction route and the integer one)",
        (
            ("mechanism/construction.py", r"factor = epsilon / \(2 \* sensitivity\)\n(\s*)return", r"factor = epsilon / sensitivity\n\1return"),
            ("mechanism/construction.py", r"factor = epsilon / \(2 \* sensitivity\)\n(\s*)common = ", r"factor = epsilon / sensitivity\n\1common = "),
        ),
    ),
    Mutation(
        "charge-after-sampling",
        "the plan carries no charge; the cursor adds it only when the drawn view is released",
        (
            ("turn/plan.py", r"return _new_vector\(LedgerVector, \(tuple\(after\), scale\)\)", "return vector"),
            (  # the cursor's release, one slot at a time
                "turn/planner.py",
                r"^        vector = plan\.vector_after$",
                "        vector = type(plan.vector_after)(tuple(u + (plan.epsilon * plan.vector_after.scale).numerator"
                " if plan.admitted and n in plan.charge_set else u for n, u in"
                " zip(self.interface.policy.attribute_names, plan.vector_after.units, strict=True)), plan.vector_after.scale)",
            ),
            (  # the sampler's one-pass loop (release_sampled)
                "turn/planner.py",
                r"^            vector = plan\.vector_after$",
                "            vector = type(plan.vector_after)(tuple(u + (plan.epsilon * plan.vector_after.scale).numerator"
                " if plan.admitted and n in plan.charge_set else u for n, u in"
                " zip(interface.policy.attribute_names, plan.vector_after.units, strict=True)), plan.vector_after.scale)",
            ),
        ),
    ),
    Mutation(
        "fallback-depends-on-scores",
        "an admitted selection falls back when its best internal score is below 1/2 (C4/C5)",
        (
            (
                "turn/plan.py",
                r"if hooks\.fallback is not None and hooks\.fallback\(scores\):",
                "if max(scores) < Fraction(1, 2):",
            ),
        ),
    ),
    Mutation(
        "ledger-in-floats",
        "ledger values in binary floating point (units / scale as a float)",
        (("core/ledgers.py", r"\[Fraction\(count, scale\) for count in units\]", "[Fraction(count / scale) for count in units]"),),
    ),
    Mutation(
        "scorer-reads-whole-slot",
        "the scorer reads every position of the slot, not just the read set (Lemma 1)",
        (
            (
                "turn/caches.py",
                r"found = \(store, charges\.items\(store\), \{\}\)",
                "found = (store, store.read(self.interface.policy.layout.positions_of(read.slot)), {})",
            ),
        ),
    ),
    Mutation(
        "sampler-parity-flip",
        "Bernoulli(exp(-gamma)) accepts on even K (the exact sampler draws the wrong law)",
        (("mechanism/bernoulli.py", r"return k % 2 == 1", "return k % 2 == 0"),),
    ),
    # One mutant per consumer of the turn planner: each loop that drives the cursor.
    Mutation(
        "cursor-release-before-charge",
        "the turn planner releases a view without moving the ledgers to the plan's charged values",
        (
            ("turn/planner.py", r"^        vector = plan\.vector_after$", "        vector = self.vector"),
            ("turn/planner.py", r"^            vector = plan\.vector_after$", "            vector = vector"),
        ),
    ),
    Mutation(
        "cursor-finish-drops-history",
        "the turn planner's finish does not append the turn to the history routing and controls read",
        (("turn/planner.py", r"frame\.history \+ \(record,\), self\.vector", "frame.history, self.vector"),),
    ),
    Mutation(
        "durable-ignores-committed-ledgers",
        "the durable session releases on the plan's ledgers, not the ledgers its store committed",
        (("turn/durable.py", r"cursor = cursor\.release\(release\.view, ledgers=committed\)", "cursor = cursor.release(release.view)"),),
    ),
    # Issue 27: one mutant per class of path the suite used not to reach, each a plausible
    # privacy or audit bug, each killed by the tests that now take that path (noted).
    # (1) a helper fixed a parameter the code branches on
    Mutation(
        "c5-recheck-first-attribute",
        "the store's C5 re-check at commit looks at the first charged attribute only"
        " (tests/ledger/test_ledger_request_sequences.py: joint charges whose later attribute is full)",
        (
            (
                "ledger/contract.py",
                r"if any\(after\[a\] > caps\[a\] for a in request\.charge_set\):",
                "if any(after[a] > caps[a] for a in sorted(request.charge_set)[:1]):",
            ),
        ),
    ),
    Mutation(
        "release-row-first-slot",
        "the committed release row records every slot as the turn's first (slot index 0)"
        " (tests/ledger/test_ledger_request_sequences.py: later slots of a turn)",
        (("ledger/facts.py", r"index=request\.index,", "index=0,"),),
    ),
    # (2) a seeded test whose seed drew the outcome that hides the bug
    Mutation(
        "lost-race-releases-candidate",
        "after a lost race (the store refused the charge) the privately drawn candidate is released"
        " (tests/turn/test_durable_race_and_retry.py: eps large enough that every admitted draw is specific)",
        (
            (
                "turn/durable.py",
                r"cursor = cursor\.release\(release\.view, ledgers=committed\)",
                "cursor = cursor.release(request.view, ledgers=committed)",
            ),
        ),
    ),
    # (3) a cross-check between two engines on hand-written examples only
    Mutation(
        "ledger-programme-prunes-multislot",
        "the audit's dominance pruning is applied to multi-slot turns too"
        " (tests/analysis/test_differential_audit.py)",
        (("analysis/reduction.py", r"all\(len\(turn\) <= 1 for turn in reads\)", "True"),),
    ),
    Mutation(
        "ledger-programme-fixed-point-at-start",
        "the audit stops at the first r with V_r = V_(r-1) at the start state only (a later state may still grow)"
        " (tests/analysis/test_differential_audit.py: the fixed-point-trap example)",
        (
            (
                "analysis/ledger.py",
                r"still = \[s for s in range\(len\(states\)\) if depth\[s\] <= self\.horizon - r\]",
                "still = [0]",
            ),
        ),
    ),
    Mutation(
        "ledger-programme-no-slice-closure",
        "the audit's attribute slice R is not closed under shared charge sets"
        " (tests/analysis/test_differential_audit.py)",
        (("analysis/reduction.py", r"^        grown = True$", "        grown = False"),),
    ),
    # (4) a hand-written variant table missing fields of the record it guards
    Mutation(
        "fingerprint-ignores-generic",
        "the ledger fingerprint leaves out each slot's generic view (two interfaces share a ledger)"
        " (tests/ledger/test_fingerprint_variant_table.py)",
        (("ledger/fingerprint.py", r'^\s*"generic": vocabulary\.generic,\n', ""),),
    ),
    Mutation(
        "fingerprint-ignores-uncharged-epsilon",
        "the ledger fingerprint leaves out the eps of uncharged reads"
        " (tests/ledger/test_fingerprint_variant_table.py)",
        (("ledger/fingerprint.py", r'^\s*"uncharged_epsilon": _canonical\(interface\.uncharged_epsilon\),\n', ""),),
    ),
    # (5) paths only non-strict (contract-breaking) interfaces reach
    Mutation(
        "ledger-programme-ignores-differing-control",
        "the audit's ledger programme scores a control that differs between the stores as no loss"
        " (private-reading controls, strict off: tests/analysis/test_differential_audit.py)",
        (("analysis/ledger.py", r"terminal = cursor_a\.control\(\) != cursor_b\.control\(\)", "terminal = False"),),
    ),
    # (6) derandomized examples that never reach the shape the property is about
    Mutation(
        "retry-resolve-releases-candidate",
        "PostgreSQL's retry after a lost COMMIT answer releases the request's candidate, not the committed row"
        " (tests/turn/test_durable_race_and_retry.py: lost answer on a refused commit)",
        (
            (  # the session template's resolve_charge, which PostgreSQL's retry runs
                "ledger/session.py",
                r"return ReleaseOutcome\.of\(found, ",
                "return ReleaseOutcome.of(__import__('attrs').evolve(found, view=request.view), ",
            ),
        ),
    ),
)
