"""The exact engine: transcript likelihoods and the worst case over adaptive strategies.

For a finite interface (finite query catalogue, vocabularies, controls) and two stores,
every augmented transcript has an exact probability under each store. Queries and
responses cancel in the likelihood ratio (proof of Theorem 1: the strategy and the LLM
channel see only public inputs), so the privacy loss of a transcript is the sum, over
slot-level releases, of log Pr[v | h, M] - log Pr[v | h, M'], plus an infinite term
wherever a store-dependent part (route, control) makes the two sides disagree.

Modules, one job each:
- `loss`: the one loss type (impossible / exact finite interval / infinite);
- `direction`: the one direction type (A over B, B over A) and the best of both ways;
- `steps`: the loss of one release from two plans (exactly 0 for identical releases);
- `ledger`: the ledger programme (sliced, one plan per admission pattern, early stop);
- `reduction`: the ledger programme's states (slicing, implied caps, dominated moves);
- `lattice`: the ledger programme's longest path as one exact integer programme over the
  box of kept ledger values, vectorised, where the pruned shape allows it;
- `frontier`: the same integer programme by variable elimination over the classes of
  moves, with the horizon as a constraint (no box, any T);
- `components`: the ledger programme split into independent components (a knapsack over
  turns), where queries charge disjoint classes of attributes;
- `bounds`: the work bounds: the upper bound choosing the engine, the lower bound an
  audit is refused on before any work, the one-line refusal;
- `general`: the general memoized search (any router, control or hook);
- `witness`: results and witness transcripts;
- `replay`: one transcript's exact likelihood, and the naive enumeration;
Every probability comes from `plan_slot`, the description the sampler draws from.

May import: every floor up to `turn/` (never `config/`, `audit/`, the runtime or the command line).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from dpmem_ref.analysis import ledger
from dpmem_ref.analysis.bounds import floor_limit
from dpmem_ref.analysis.components import ComponentSearch
from dpmem_ref.analysis.direction import LossDirection
from dpmem_ref.analysis.general import GeneralSearch
from dpmem_ref.analysis.ledger import LedgerSearch
from dpmem_ref.analysis.loss import IMPOSSIBLE, INFINITE, IV_DPS, ZERO, Loss
from dpmem_ref.analysis.replay import Replay, enumerate_transcripts, replay_transcript
from dpmem_ref.analysis.witness import Direction, WitnessTurn, WorstCase, flatten
from dpmem_ref.core.errors import InputError
from dpmem_ref.core.limits import DEFAULT_MAX_STATES as _DEFAULT_MAX_STATES
from dpmem_ref.core.policy import Store
from dpmem_ref.core.transcript import Query
from dpmem_ref.core.validate import check_int
from dpmem_ref.interface import Interface
from dpmem_ref.mechanism.em import iv_precision

MAX_HORIZON = 256
# Memoized states before an audit is refused with exit 2 (`dpmem audit --max-states`):
# ledger states for the ledger programme, cells or table entries for the lattice and
# frontier programmes, (turn, ledgers) and slot nodes for the general search, counted as
# they are built (`analysis.bounds`). Every shipped example needs under 20,000.
DEFAULT_MAX_STATES = _DEFAULT_MAX_STATES  # defined with the other input bounds (dpmem_ref.core.limits)
MAX_DPS = 2000  # the most digits an enclosure is ever computed at (a loss near 1e-300 needs about 400)

__all__ = [
    "DEFAULT_MAX_STATES",
    "IMPOSSIBLE",
    "INFINITE",
    "IV_DPS",
    "MAX_DPS",
    "MAX_HORIZON",
    "ZERO",
    "Direction",
    "Loss",
    "LossDirection",
    "Replay",
    "WitnessTurn",
    "WorstCase",
    "enumerate_transcripts",
    "replay_transcript",
    "worst_case_loss",
]


def worst_case_loss(
    interface: Interface,
    store_a: Store,
    store_b: Store,
    horizon: int,
    queries: Sequence[Query] | None = None,
    strict: bool = True,
    max_states: int = DEFAULT_MAX_STATES,
    search: str = "auto",
    dps: int = IV_DPS,
    components: bool = True,
) -> WorstCase:
    """max over adaptive strategies and transcripts of |log Pr[w | A] / Pr[w | B]|, both ways.

    `queries` restricts the strategy's choices (default: the whole catalogue, every turn).
    strict=True refuses a contract-breaking interface (ContractViolation, as `run_turn`);
    strict=False audits it as deployed, so the loss shows how far a broken part breaks
    the bound (the auditor's mode). More than `max_states` memoized states raise
    InputError naming `--max-states`. `search`: "auto" (the ledger programme where it
    applies, as the lattice programme where that applies and the sparse estimate reaches
    `lattice.LATTICE_FROM`), "general" to force the general search, "ledger" (the sparse
    ledger programme, never the lattice) or "lattice" (the lattice wherever it applies,
    whatever the size) or "frontier" (the frontier programme wherever it applies,
    `analysis.frontier`), the last four for cross-checks; where the ledger programme does
    not apply, every choice is the general search. `dps`: decimal
    digits of every log-probability enclosure (at least IV_DPS; the auditor raises it when
    a tiny loss needs more, `dpmem_ref.audit.verdict`). `components`: split the ledger
    programme into independent components where it can (`analysis.components`); False
    runs it undivided (cross-checks).

    The work is bounded as it is built (`analysis.bounds`): every engine stops at the
    first state past `max_states` (`WorstCase.states_built` counts them), and an audit
    whose lower bound on the states already exceeds it is refused at once.
    """
    check_int(horizon, "horizon", 1, MAX_HORIZON)
    check_int(max_states, "--max-states", low=1)
    if search not in ("auto", "general", "ledger", "lattice", "frontier"):
        raise InputError("search", '"auto", "general", "ledger", "lattice" or "frontier"', search)
    check_int(dps, "dps", IV_DPS, MAX_DPS)
    start = time.perf_counter()
    catalogue = tuple(queries if queries is not None else interface.queries)
    fixed_point = None
    with iv_precision(dps):
        if search != "general" and ledger.applies(interface, strict):
            split = ComponentSearch(interface, store_a, store_b, horizon, catalogue, strict, max_states)
            programme: ComponentSearch | LedgerSearch = split if split.splits and components else split.whole
            if isinstance(programme, LedgerSearch):
                programme.lattice_mode = {"auto": "auto", "ledger": "never", "lattice": "always", "frontier": "frontier"}[
                    search
                ]
            programme.estimate()  # chooses the lattice where it applies (`analysis.lattice`)
            least, cut = programme.least_states()
            if least > max_states:
                raise floor_limit(max_states, least, cut, horizon)
            best = programme.run()
            states = programme.states_explored
            built = programme.state_count
            fixed_point = programme.fixed_point if isinstance(programme, LedgerSearch) else None
        else:
            general = GeneralSearch(interface, store_a, store_b, horizon, catalogue, strict, max_states)
            best = general.run()
            states = built = general.states_explored
    return WorstCase(
        a_over_b=Direction(best.ab, flatten(best.ab_at)),
        b_over_a=Direction(best.ba, flatten(best.ba_at)),
        horizon=horizon,
        states_explored=states,
        states_built=built,
        seconds=time.perf_counter() - start,
        fixed_point=fixed_point,
        dps=dps,
    )
